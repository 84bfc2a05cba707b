"""SIGKILL a job that writes a DynamoDB table at each point where the write can die,
and check that every input record's item is in the table once, with its final value.

The job (dynamodb_crash_job.py, a Glue script under `sparkmark run`) reads new JSON files
with a bookmark and writes them to moto's DynamoDB (a server process, over HTTP) with a
transformation_ctx. Before each run two files arrive: new ids, and new versions of ids
an earlier run wrote, so a write put again out of order would leave a stale version.
Each run is killed at the next point (``SPARKMARK_CRASH_AT``); a last run without a
crash prints the table. The points:

- ``staged``, ``commit``: the items staged, at and inside the bookmark commit;
- ``committed``: the bookmark committed, nothing put yet;
- ``applying``: the first batch of 25 put, the rest not;
- ``applied``: every item put, the write not yet marked published.

CI runs one chain through the three points where the table and the bookmark disagree
(``committed``, ``applying``, ``applied``); ``make soak`` (SPARKMARK_CRASH_TRIALS=20)
runs every point 20 times.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest

from sparkmark.engine.models import OutputState
from sparkmark.engine.store import StateStore

from .conftest import TALLY

TRIALS = int(os.environ.get("SPARKMARK_CRASH_TRIALS", "2"))
SOAK = TRIALS > 2
POINTS = (
    ("staged", "commit", "committed", "applying", "applied") if SOAK else ("committed", "applying", "applied")
)
JOB = Path(__file__).with_name("dynamodb_crash_job.py")
SPARKMARK = Path(sys.executable).with_name("sparkmark")
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}

pytestmark = pytest.mark.slow


def test_a_dynamodb_write_killed_anywhere_leaves_each_item_once_with_its_final_value(tmp_path, s3_server):
    endpoint = s3_server.endpoint_url
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    table = f"crash_{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST",
    )
    home, inbox = tmp_path / "home", tmp_path / "in"
    inbox.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "AWS_", "SPARKMARK_CRASH"))}
    env.update(ENV, SPARKMARK_HOME=str(home), SPARKMARK_SPARK_MASTER="local[2]",
               AWS_ENDPOINT_URL_DYNAMODB=endpoint, AWS_ENDPOINT_URL_DYNAMODB_STREAMS=endpoint)  # fmt: skip
    expected: dict[int, int] = {}
    batch = 0

    def arrive() -> None:
        nonlocal batch
        fresh = [{"id": batch * 100 + i, "version": batch} for i in range(40)]  # more than a batch of 25
        again = [{"id": i, "version": batch} for i in list(expected)[:10]]  # newer versions of older ids
        for n, records in enumerate((fresh, again)):
            (inbox / f"b{batch:04d}-{n}.json").write_text("".join(json.dumps(r) + "\n" for r in records))
            expected.update({r["id"]: r["version"] for r in records})
        batch += 1

    def run(crash: str | None, show: bool) -> subprocess.CompletedProcess:
        args = [str(SPARKMARK), "run", str(JOB), "--JOB_NAME", "dynamodb_crash", "--job-bookmark-option",
                "job-bookmark-enable", "--input", str(inbox), "--table", table, "--show", "yes" if show else "no"]  # fmt: skip
        return subprocess.run(args, env={**env, **({"SPARKMARK_CRASH_AT": crash} if crash else {})},
                              capture_output=True, text=True, timeout=600)  # fmt: skip

    chain = [point for _ in range(max(1, TRIALS if SOAK else 1)) for point in POINTS]
    for point in chain:
        arrive()
        crashed = run(point, show=False)
        assert crashed.returncode == -signal.SIGKILL, (
            f"the job was not killed at {point!r} (exit {crashed.returncode}):\n{crashed.stderr[-4000:]}"
        )
    arrive()
    last = run(None, show=True)
    assert last.returncode == 0, last.stderr[-6000:]
    line = next((x for x in last.stdout.splitlines() if x.startswith("ITEMS ")), None)
    assert line, last.stdout[-2000:] + last.stderr[-3000:]
    items = json.loads(line[6:])
    found = {i["id"]: i["version"] for i in items}
    lost = set(expected) - set(found)
    extra = len(items) - len(set(expected) & set(found))  # items no input record made
    stale = {k for k in set(expected) & set(found) if found[k] != expected[k]}
    TALLY["lost"] += len(lost)
    TALLY["duplicated"] += extra
    assert not lost and not extra and not stale, (
        f"after crashes at {chain}: lost {sorted(lost)[:10]}, {extra} extra, stale {sorted(stale)[:10]}"
    )
    store = StateStore(f"sqlite:///{home / 'state.db'}")
    try:
        outputs = store.outputs("dynamodb_crash")
        assert outputs and all(o.state in (OutputState.PUBLISHED, OutputState.DISCARDED) for o in outputs)
    finally:
        store.close()
    assert not list(home.rglob("sparkmark-staging/dynamodb/*")), "staged items were left behind"
