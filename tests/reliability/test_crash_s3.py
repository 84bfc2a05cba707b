"""SIGKILL a job reading from and writing to S3 at each crash point, run it again, and
check that the output on S3 holds every input row exactly once.

The same job as test_crash.py (crash_job.py), with its input and output on the S3 API
server: publishing there is a server-side copy of each staged object, not a rename.
One trial per point, on SQLite (the state store's part is covered by test_crash.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from collections import Counter

import boto3
import psycopg
import pyarrow.dataset as ds
import pytest
import s3fs

from sparkmark.engine.faults import POINTS
from sparkmark.engine.models import OutputState
from sparkmark.engine.publish import CONTROL, KEY_IN_NAME
from sparkmark.engine.store import StateStore

from ..conftest import PG_DSN
from .conftest import TALLY
from .test_crash import rerun_here, run_job

KEY_ID, SECRET = "AKIACRASHTEST", "crash-test-secret"


def put_inputs(client, bucket: str, first: int, files: int, per_file: int = 5) -> list[int]:
    made = []
    for f in range(files):
        ids = list(range(first + f * per_file, first + (f + 1) * per_file))
        part = f"p{(first // per_file + f) % 2}"
        body = "".join(json.dumps({"id": i, "note": "ü"}) + "\n" for i in ids).encode()
        client.put_object(Bucket=bucket, Key=f"in/part={part}/batch {first + f}.json", Body=body)
        made += ids
    return made


# The points where S3 holds something of the run: its staged objects, its pending
# record, the publish copies. (listing and reading die before anything is written, and
# applying is the JDBC sink's: test_crash.py covers them.)
S3_POINTS = [p for p in POINTS if p not in ("listing", "reading", "applying")]


@pytest.mark.parametrize("point", S3_POINTS)
def test_crash_with_s3_input_and_output(point, tmp_path, s3_server, spark, monkeypatch):
    aws = {
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": s3_server.endpoint_url,
    }
    for name, value in aws.items():
        monkeypatch.setenv(name, value)
    client = boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    bucket = f"crash-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)
    state_url = f"sqlite:///{tmp_path / 'state.db'}"
    env = {
        **os.environ,
        **aws,
        "SPARKMARK_HOME": str(tmp_path / "home"),
        "SPARKMARK_STATE_URL": state_url,
        "SPARKMARK_SPARK_MASTER": "local[2]",
        "PYSPARK_PYTHON": sys.executable,
    }
    job_name = f"crash_s3_{point}"
    inp, out = f"s3://{bucket}/in", f"s3://{bucket}/out"
    table = f"crash_{uuid.uuid4().hex[:10]}"
    expected = put_inputs(client, bucket, 0, 4)
    try:
        crashed = run_job(env, job_name, inp, out, table, point)
        assert crashed.returncode == -signal.SIGKILL, (
            f"the job was not killed at {point!r} (exit {crashed.returncode}):\n" + crashed.stderr[-3000:]
        )
        assert SECRET not in crashed.stderr + crashed.stdout
        expected += put_inputs(client, bucket, 1000, 2)  # data arriving before the next run
        rerun_here(monkeypatch, env, job_name, inp, out, table)

        fs = s3fs.S3FileSystem(
            key=KEY_ID, secret=SECRET, client_kwargs={"endpoint_url": s3_server.endpoint_url}
        )
        data = ds.dataset(
            f"{bucket}/out", format="parquet", partitioning="hive", filesystem=fs, exclude_invalid_files=True
        )
        files_rows = Counter(data.to_table(columns=["id"]).column("id").to_pylist())
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
            listed = {f"s3://{p}" for p in fs.find(f"{bucket}/in")}
            assert committed == listed  # the bookmark covers exactly the input published
            published = {o.key for o in store.outputs(job_name) if o.state is OutputState.PUBLISHED}
            assert all(
                o.state in (OutputState.PUBLISHED, OutputState.DISCARDED) for o in store.outputs(job_name)
            )
        finally:
            store.close()
        objects = fs.find(f"{bucket}/out")
        named = {
            KEY_IN_NAME.search(p).group(0) for p in objects if p.endswith(".parquet") and CONTROL not in p
        }
        assert named <= published  # every visible object belongs to a published write
        assert not [p for p in objects if p.endswith(".pending") or f"{CONTROL}/staging/" in p]
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            if conn.execute("SELECT to_regclass('sm_applied_outputs')").fetchone()[0]:
                conn.execute("DELETE FROM sm_applied_outputs WHERE target = %s", (table,))
