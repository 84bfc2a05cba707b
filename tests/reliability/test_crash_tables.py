"""SIGKILL a job that writes an Iceberg or a Delta table at each point where a table
write can die, and check that every input row is in the table exactly once.

The job (table_crash_job.py, a Glue script under `sparkmark run`) reads new JSON files
with a bookmark and writes them to the table with a transformation_ctx. The runs form a
chain: before each run two new files arrive, and each run is killed at the next point
(``SPARKMARK_CRASH_AT``), so a run also finishes or discards what the run killed before it
left (and may itself be killed while doing so). A last run without a crash prints the
table's ids. The points:

- ``reading``: while the write is staged (before the run commits anything; a Delta
  append's files may be left in the table's folder, which no commit names);
- ``staged``, ``commit``: at and inside the bookmark commit;
- ``committed``: the bookmark committed, the table not yet written;
- ``applied``: the table committed, the write not yet marked published.

CI runs one chain per format on local disk through the two points where the table and
the bookmark disagree (``committed``, ``applied``). ``make soak``
(SPARKMARK_CRASH_TRIALS=20) runs every point 20 times per format, on local disk and on
moto's S3.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import boto3
import pytest

from sparkmark.engine.models import OutputState
from sparkmark.engine.store import StateStore

from .conftest import TALLY

TRIALS = int(os.environ.get("SPARKMARK_CRASH_TRIALS", "2"))
SOAK = TRIALS > 2
POINTS = ("reading", "staged", "commit", "committed", "applied") if SOAK else ("committed", "applied")
JOB = Path(__file__).with_name("table_crash_job.py")
SPARKMARK = Path(sys.executable).with_name("sparkmark")
ICEBERG_CONF = (
    "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
    " --conf spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog"
    " --conf spark.sql.catalog.glue_catalog.warehouse={warehouse}"
    " --conf spark.sql.catalog.glue_catalog.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog"
    " --conf spark.sql.catalog.glue_catalog.io-impl={io}"
)
DELTA_CONF = (
    "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension"
    " --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog"
)

pytestmark = pytest.mark.slow


class Place:
    """Where the inputs and the table live: a local folder, or a bucket on moto's S3."""

    def __init__(self, root: Path, s3=None, bucket: str = ""):
        self.root, self.s3, self.bucket = root, s3, bucket
        self.env: dict[str, str] = {}
        if s3 is not None:
            self.client = boto3.client(
                "s3", endpoint_url=s3.endpoint_url, region_name="us-east-1",
                aws_access_key_id="test", aws_secret_access_key="test",
            )  # fmt: skip
            self.client.create_bucket(Bucket=bucket)
            self.env = {
                "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL_S3": s3.endpoint_url,
            }

    def url(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}" if self.s3 is not None else str(self.root / name)

    def put(self, name: str, body: str) -> None:
        if self.s3 is not None:
            self.client.put_object(Bucket=self.bucket, Key=f"in/{name}", Body=body.encode())
        else:
            (self.root / "in").mkdir(parents=True, exist_ok=True)
            (self.root / "in" / name).write_text(body)

    def staged_left(self) -> list[str]:
        if self.s3 is not None:
            found = self.client.list_objects_v2(Bucket=self.bucket).get("Contents", [])
            return [
                o["Key"]
                for o in found
                if "_sparkmark/staging/" in o["Key"] and o["Key"].endswith((".parquet", "actions.json"))
            ]
        staged = self.root.rglob("_sparkmark/staging/*/*")
        return [str(p) for p in staged if p.name.endswith(".parquet") or p.name == "actions.json"]

    def delta_files_not_in_the_log(self) -> list[str]:
        """Data files in the local Delta table's folder that no commit adds (a run killed
        while it wrote leaves such files; one killed later leaves none)."""
        table = self.root / "tables" / "events"
        added = {
            json.loads(line)["add"]["path"]
            for commit in (table / "_delta_log").glob("*.json")
            for line in commit.read_text().splitlines()
            if '"add"' in line
        }
        files = {str(p.relative_to(table)) for p in table.glob("*.parquet")}
        return sorted(files - added)


def run_job(place: Place, home: Path, fmt: str, crash: str | None, show: bool) -> subprocess.CompletedProcess:
    if fmt == "iceberg":
        io = (
            "org.apache.iceberg.aws.s3.S3FileIO"
            if place.s3 is not None
            else "org.apache.iceberg.hadoop.HadoopFileIO"
        )
        conf = ICEBERG_CONF.format(warehouse=place.url("warehouse/"), io=io)
    else:
        conf = DELTA_CONF
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "AWS_", "SPARKMARK_CRASH"))}
    env.update(SPARKMARK_HOME=str(home), SPARKMARK_SPARK_MASTER="local[2]", **place.env)
    if crash:
        env["SPARKMARK_CRASH_AT"] = crash
    args = [
        str(SPARKMARK), "run", str(JOB), "--JOB_NAME", f"table_crash_{fmt}",
        "--job-bookmark-option", "job-bookmark-enable", "--input", place.url("in/"), "--format", fmt,
        "--table", place.url("tables/events"), "--show", "yes" if show else "no",
        "--datalake-formats", fmt, "--conf", conf,
    ]  # fmt: skip
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)


def crash_chain(place: Place, home: Path, fmt: str) -> None:
    expected: list[int] = []
    batch = 0

    def arrive() -> None:
        nonlocal batch
        for _ in range(2):
            ids = [batch * 10 + i for i in range(3)]
            place.put(
                f"batch-{batch:04d}.json", "".join(json.dumps({"id": i, "note": "ü"}) + "\n" for i in ids)
            )
            expected.extend(ids)
            batch += 1

    chain = [point for _ in range(max(1, TRIALS if SOAK else 1)) for point in POINTS]
    for point in chain:
        arrive()
        crashed = run_job(place, home, fmt, point, show=False)
        assert crashed.returncode == -signal.SIGKILL, (
            f"the {fmt} job was not killed at {point!r} (exit {crashed.returncode}):\n{crashed.stderr[-4000:]}"
        )
    arrive()
    last = run_job(place, home, fmt, None, show=True)
    assert last.returncode == 0, last.stderr[-6000:]
    line = next((x for x in last.stdout.splitlines() if x.startswith("IDS ")), None)
    assert line, last.stdout[-2000:] + last.stderr[-3000:]
    rows = Counter(json.loads(line[4:]))
    lost = set(expected) - set(rows)
    duplicated = sum(n - 1 for n in rows.values() if n > 1)
    TALLY["lost"] += len(lost)
    TALLY["duplicated"] += duplicated
    assert not lost and not duplicated and set(rows) == set(expected), (
        f"{fmt} after crashes at {chain}: lost {sorted(lost)[:10]}, {duplicated} duplicated"
    )
    store = StateStore(f"sqlite:///{home / 'state.db'}")
    try:
        outputs = store.outputs(f"table_crash_{fmt}")
        assert outputs and all(o.state in (OutputState.PUBLISHED, OutputState.DISCARDED) for o in outputs)
        if fmt == "delta":  # the appends once the table existed were a Delta transaction's files
            assert any(o.plan.get("delta_actions") for o in outputs), [o.plan for o in outputs]
    finally:
        store.close()
    assert not place.staged_left(), place.staged_left()[:5]
    if fmt == "delta" and place.s3 is None and "reading" not in POINTS:
        assert not place.delta_files_not_in_the_log(), place.delta_files_not_in_the_log()[:5]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_write_killed_anywhere_holds_each_row_once_on_local_disk(fmt, tmp_path):
    crash_chain(Place(tmp_path), tmp_path / "home", fmt)


@pytest.mark.skipif(not SOAK, reason="make soak: the same chains on moto's S3")
@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_write_killed_anywhere_holds_each_row_once_on_s3(fmt, tmp_path, s3_server):
    crash_chain(Place(tmp_path, s3_server, f"crash-{fmt}"), tmp_path / "home", fmt)
