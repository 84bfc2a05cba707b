"""SIGKILL a job at each crash point, run it again, and check that the output holds
every input row exactly once and the bookmark covers exactly what was published.

The job (crash_job.py) reads JSON files and writes both Parquet files and a
PostgreSQL table through the exactly-once sinks. Its process is killed by the
SPARKMARK_CRASH_AT hook (sparkmark/engine/faults.py). CI runs 2 trials per point,
alternating the state store between SQLite and PostgreSQL; ``make soak`` runs
SPARKMARK_CRASH_TRIALS=20.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pyarrow.dataset as ds
import pytest

from sparkmark.engine.faults import POINTS
from sparkmark.engine.models import OutputState
from sparkmark.engine.publish import CONTROL, KEY_IN_NAME
from sparkmark.engine.store import StateStore

from ..conftest import PG_DSN, pg_url
from .conftest import TALLY

TRIALS = int(os.environ.get("SPARKMARK_CRASH_TRIALS", "2"))
JOB = Path(__file__).with_name("crash_job.py")
JDBC_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres"


def write_inputs(folder: Path, first: int, files: int, per_file: int = 5) -> list[int]:
    made = []
    for f in range(files):
        ids = list(range(first + f * per_file, first + (f + 1) * per_file))
        part = f"p{(first // per_file + f) % 2}"
        target = folder / f"part={part}" / f"batch {first + f}.json"  # a space in the name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps({"id": i, "note": "ü"}) + "\n" for i in ids))
        made += ids
    return made


def run_job(env: dict, job_name: str, inp: Path, out: Path, table: str, crash: str):
    env = {**env, "SPARKMARK_CRASH_AT": crash}
    args = [
        sys.executable,
        str(JOB),
        "--JOB_NAME",
        job_name,
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(inp),
        "--output",
        str(out),
        "--table",
        table,
        "--db",
        JDBC_URL,
    ]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)


def rerun_here(monkeypatch, env: dict, job_name: str, inp: Path, out: Path, table: str) -> None:
    """The run after the crash, in this process and its Spark session (one JVM start
    per trial instead of two)."""
    for name in ("SPARKMARK_HOME", "SPARKMARK_STATE_URL"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setattr(
        sys,
        "argv",
        [
            str(JOB),
            "--JOB_NAME",
            job_name,
            "--job-bookmark-option",
            "job-bookmark-enable",
            "--input",
            str(inp),
            "--output",
            str(out),
            "--table",
            table,
            "--db",
            JDBC_URL,
        ],
    )
    runpy.run_path(str(JOB), run_name="__main__")


@pytest.mark.parametrize("trial", range(TRIALS))
@pytest.mark.parametrize("point", POINTS)
def test_crash_loses_and_duplicates_nothing(point, trial, tmp_path, pg_schemas, spark, monkeypatch):
    backend = "sqlite" if trial % 2 == 0 else "postgresql"
    state_url = f"sqlite:///{tmp_path / 'state.db'}" if backend == "sqlite" else pg_url(pg_schemas())
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(tmp_path / "home"),
        "SPARKMARK_STATE_URL": state_url,
        "SPARKMARK_SPARK_MASTER": "local[2]",
        "PYSPARK_PYTHON": sys.executable,
    }
    job_name = f"crash_{point}_{trial}"
    inp, out = tmp_path / "in", tmp_path / "out"
    table = f"crash_{uuid.uuid4().hex[:10]}"
    expected = write_inputs(inp, 0, 4)

    try:
        crashed = run_job(env, job_name, inp, out, table, point)
        assert crashed.returncode == -signal.SIGKILL, (
            f"the job was not killed at {point!r} (exit {crashed.returncode}):\n" + crashed.stderr[-3000:]
        )
        expected += write_inputs(inp, 1000, 2)  # data arriving before the next run
        rerun_here(monkeypatch, env, job_name, inp, out, table)

        files_rows = Counter(
            ds.dataset(str(out), format="parquet", partitioning="hive")
            .to_table(columns=["id"])
            .column("id")
            .to_pylist()
        )
        with psycopg.connect(PG_DSN) as conn:
            table_rows = Counter(r[0] for r in conn.execute(f"SELECT id FROM {table}"))
        for rows in (files_rows, table_rows):
            lost = set(expected) - set(rows)
            duplicated = sum(n - 1 for n in rows.values() if n > 1)
            TALLY["lost"] += len(lost)
            TALLY["duplicated"] += duplicated
            assert not lost and not duplicated and set(rows) == set(expected), (
                f"after a crash at {point!r}: lost {sorted(lost)[:10]}, {duplicated} duplicated"
            )

        store = StateStore(state_url)
        try:
            committed = {
                f.path for f in store.committed_files(job_name, "src", store.latest_version(job_name))
            }
            listed = {f"file://{p}" for p in map(str, inp.rglob("*.json"))}
            assert committed == listed  # the bookmark covers exactly the input published
            outputs = store.outputs(job_name)
            published = {o.key for o in outputs if o.state is OutputState.PUBLISHED}
            assert all(o.state in (OutputState.PUBLISHED, OutputState.DISCARDED) for o in outputs)
            named = {
                KEY_IN_NAME.search(p.name).group(0) for p in out.rglob("*.parquet") if CONTROL not in p.parts
            }
            assert named <= published  # every visible file belongs to a published write
        finally:
            store.close()
        assert not list((out / CONTROL / "runs").glob("*.pending"))
        assert not any((out / CONTROL / "staging").glob("*/*"))
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            if conn.execute("SELECT to_regclass('sm_applied_outputs')").fetchone()[0]:
                conn.execute("DELETE FROM sm_applied_outputs WHERE target = %s", (table,))
