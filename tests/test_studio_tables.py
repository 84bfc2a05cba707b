"""Studio's Delta nodes run: a visual job writes JSON files into a Delta table by path
(S3DeltaDirectTarget, exactly-once) and a second visual job reads that table with a
bookmark (S3DeltaSource) into JSON files, each as `sparkmark studio run` with the job's
DefaultArguments (``--datalake-formats delta``). Run twice with new input, the second
job's output holds each order once. The Delta table is read back with no Spark, from its
log's add and remove actions, as the Delta protocol defines them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow

SPARKMARK = Path(sys.executable).with_name("sparkmark")
CORPUS = Path(__file__).parent / "fixtures" / "studio_tables"
DELTA_CONF = (
    "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension"
    " --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog"
)


def studio_run(case: str, root: Path, home: Path) -> subprocess.CompletedProcess:
    job = (CORPUS / f"{case}.json").read_text(encoding="utf-8").replace("{root}", str(root))
    job_file = root / f"{case}.json"
    job_file.write_text(json.dumps(json.loads(job)["job"]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "AWS_"))}
    env.update(SPARKMARK_HOME=str(home), SPARKMARK_SPARK_MASTER="local[2]")
    args = [str(SPARKMARK), "studio", "run", str(job_file), "--job-bookmark-option", "job-bookmark-enable",
            "--conf", DELTA_CONF]  # fmt: skip
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)


def delta_rows(table: Path) -> list[dict]:
    """The rows of the Delta table's current version: its log's added files less the removed."""
    live: dict[str, bool] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = True
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return [row for path in live for row in pq.read_table(table / path).to_pylist()]


def json_rows(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.rglob("*.json")) for line in f.read_text().splitlines()]


def test_studio_delta_jobs_write_and_read_a_table_each_row_once(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "in").mkdir()
    for batch, ids in (("b1", (1, 2)), ("b2", (3,))):
        (tmp_path / "in" / f"{batch}.json").write_text(
            "".join(json.dumps({"id": i, "batch": batch}) + "\n" for i in ids)
        )
        for case in ("delta_writer", "delta_reader"):
            done = studio_run(case, tmp_path, home)
            assert done.returncode == 0, f"{case}:\n{done.stderr[-5000:]}"
    lake = sorted((r["id"], r["batch"]) for r in delta_rows(tmp_path / "lake" / "orders"))
    assert lake == [(1, "b1"), (2, "b1"), (3, "b2")]
    assert sorted((r["id"], r["batch"]) for r in json_rows(tmp_path / "out")) == lake
