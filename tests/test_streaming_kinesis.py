"""Glue streaming jobs on Kinesis: the Kinesis API of moto's server on 127.0.0.1, reached
over HTTP by boto3 in Spark's Python data source. A stream read until caught up, split
into two shards, read again, and read after a kill between a batch's commit and Spark's;
each record once in the Parquet output, malformed records quarantined with shard and
sequence number."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from typer.testing import CliRunner

from sparkmark.cli.app import app

SCRIPT = Path(__file__).parent / "fixtures" / "streaming" / "kinesis_events.py"
cli = CliRunner()


@pytest.fixture
def aws_env(monkeypatch, s3_server):
    """Test credentials and region, as AWS's tools take them; moto accepts any key."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing-key",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-kinesis",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    return s3_server.endpoint_url


class Stream:
    def __init__(self, endpoint: str, shards: int = 1):
        self.client = boto3.client("kinesis", endpoint_url=endpoint, region_name="us-east-1")
        self.name = f"events_{uuid.uuid4().hex[:8]}"
        self.client.create_stream(StreamName=self.name, ShardCount=shards)
        self.sent: list[tuple[int | None, str, str]] = []  # (id or None when malformed, shard, sequence)

    def put(self, ids, malformed=()) -> None:
        for i in ids:
            data = (
                b'{"event_id": ' if i in malformed else json.dumps({"event_id": i, "kind": "click"}).encode()
            )
            got = self.client.put_record(StreamName=self.name, Data=data, PartitionKey=f"user-{i}")
            self.sent.append((None if i in malformed else i, got["ShardId"], got["SequenceNumber"]))

    def split(self) -> None:
        shard = next(
            s
            for s in self.client.list_shards(StreamName=self.name)["Shards"]
            if "EndingSequenceNumber" not in s["SequenceNumberRange"]
        )
        low, high = int(shard["HashKeyRange"]["StartingHashKey"]), int(shard["HashKeyRange"]["EndingHashKey"])
        self.client.split_shard(
            StreamName=self.name, ShardToSplit=shard["ShardId"], NewStartingHashKey=str((low + high) // 2)
        )

    def good_ids(self) -> list[int]:
        return sorted(i for i, _, _ in self.sent if i is not None)


def parquet_ids(spark, path: Path) -> list[int]:
    return sorted(r["event_id"] for r in spark.read.parquet(str(path)).select("event_id").collect())


def args_for(job: str, stream, out: Path, endpoint: str) -> list[str]:
    return [
        str(SCRIPT),
        "--JOB_NAME",
        job,
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--stream_name",
        stream.name,
        "--output_path",
        str(out),
        "--endpoint_url",
        endpoint,
    ]


def test_kinesis_script_reads_each_record_once_across_runs_and_a_split(
    spark, aws_env, tmp_path, sparkmark_home
):
    endpoint = aws_env
    stream = Stream(endpoint, shards=2)
    job, out = f"kin_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    stream.put(range(0, 20), malformed={6})

    first = cli.invoke(app, ["run", "--until-caught-up", *args_for(job, stream, out, endpoint)])
    assert first.exit_code == 0, first.output
    assert parquet_ids(spark, out) == stream.good_ids() and len(stream.good_ids()) == 19

    quarantined = list((sparkmark_home / "tmp" / "quarantine" / job).glob("stream-*/batch-*/*.json"))
    records = [json.loads(line) for f in quarantined for line in f.read_text().splitlines()]
    assert [(r["shard"], r["sequence"]) for r in records] == [(s, q) for i, s, q in stream.sent if i is None]
    assert records[0]["stream"] == stream.name and records[0]["record"] == '{"event_id": '

    # The stream is split between runs: the new shards are found, every record read once.
    stream.split()
    stream.put(range(20, 35))
    second = cli.invoke(app, ["run", "--until-caught-up", *args_for(job, stream, out, endpoint)])
    assert second.exit_code == 0, second.output
    assert parquet_ids(spark, out) == stream.good_ids() and len(stream.good_ids()) == 34

    bookmark = json.loads(cli.invoke(app, ["bookmark", "get", job, "--json"]).output)["JobBookmark"][
        "kinesis_src"
    ]
    shards = bookmark["offsets"]["shards"]
    assert len(shards) == 4  # two shards, and the two children of the one split
    children = [sid for sid, entry in shards.items() if entry["parents"]]
    assert len(children) == 2
    last_sequence = {}
    for _, shard, sequence in stream.sent:
        last_sequence[shard] = max(last_sequence.get(shard, 0), int(sequence))
    assert {sid: int(e["after"]) for sid, e in shards.items() if e["after"]} == last_sequence
    assert bookmark["lag"] is None  # sequence numbers do not count records
    shown = cli.invoke(app, ["bookmark", "get", job]).output
    assert "kinesis" in shown and "shardId-" in shown

    # Nothing new: a run reads nothing and succeeds.
    third = cli.invoke(app, ["run", "--until-caught-up", *args_for(job, stream, out, endpoint)])
    assert third.exit_code == 0, third.output
    assert parquet_ids(spark, out) == stream.good_ids()


def test_kinesis_batch_killed_after_its_commit_is_not_written_twice(spark, aws_env, tmp_path, sparkmark_home):
    endpoint = aws_env
    stream = Stream(endpoint, shards=1)
    job, out = f"kin_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    stream.put(range(0, 12))
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_CRASH_AT"}
    command = [
        sys.executable,
        "-m",
        "sparkmark",
        "run",
        "--until-caught-up",
        *args_for(job, stream, out, endpoint),
    ]

    killed = subprocess.run(
        command,
        env={**env, "SPARKMARK_CRASH_AT": "batch_committed"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode in (137, -9), killed.stderr[-3000:]
    assert parquet_ids(spark, out) == list(range(0, 12))  # published before the kill

    stream.put(range(12, 20))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "its writes are not repeated" in done.stderr
    assert parquet_ids(spark, out) == list(range(0, 20))
    assert "testing-secret-kinesis" not in done.stderr + done.stdout


def test_a_stream_that_does_not_exist_is_one_line(spark, aws_env, tmp_path):
    endpoint = aws_env
    missing = SimpleNamespace(name="no_such_stream")
    result = cli.invoke(
        app, ["run", "--until-caught-up", *args_for("kin_missing", missing, tmp_path / "out", endpoint)]
    )
    assert result.exit_code == 1
    assert (
        "error: cannot read kinesis arn:aws:kinesis:us-east-1:123456789012:stream/no_such_stream: ResourceNotFoundException"
        in result.output
    )
    assert "Traceback" not in result.output


def test_latest_reads_only_records_put_after_the_query_started(runner, spark, aws_env, tmp_path):
    """startingPosition LATEST: a fresh query starts at the time it starts (a fixed point, so
    a replay reads the same records); what the stream held before is not read."""
    endpoint = aws_env
    stream = Stream(endpoint, shards=1)
    stream.put(range(0, 5))
    out, cp = tmp_path / "out", str(tmp_path / "cp")
    options = {
        "streamName": stream.name,
        "endpointUrl": endpoint,
        "startingPosition": "LATEST",
        "classification": "json",
        "schema": "event_id long, kind string",
    }

    def one_run():
        job = runner.start()
        summary = job.for_each_batch(
            job.read_stream("kinesis", ctx="events", **options),
            lambda df, batch_id: job.write_files(df, str(out), format="parquet"),
            checkpoint=cp,
            until_caught_up=True,
        )
        job.commit()
        return summary

    assert one_run()["numRecords"] == 0
    stream.put(range(5, 9))
    assert one_run()["numRecords"] == 4
    assert parquet_ids(spark, out) == [5, 6, 7, 8]


# make soak: 20,001 records, 1,000 a shard per batch; the suite: 1,201 records, 200.
HEAVY = os.environ.get("SPARKMARK_HEAVY") == "1"
CAUGHT_UP = (20_001, 1_000) if HEAVY else (1_201, 200)


def test_until_caught_up_reads_every_record_over_many_batches_and_a_kill(
    spark, aws_env, tmp_path, sparkmark_home
):
    """A run that says it caught up has caught up. Kinesis tells no shard's newest record,
    so each batch is planned by reading ahead at most maxFetchRecordsPerShard records
    (AWS's Kinesis connection options); with 20,001 records and 1,000 per shard (make
    soak) a run takes many batches. The first run is killed after a batch's commit; the
    next reads the rest, each record once, and the bookmark shows the checkpoint's last
    batch."""
    endpoint = aws_env
    stream = Stream(endpoint, shards=2)
    total, per_shard = CAUGHT_UP
    for start in range(0, total, 500):
        batch = range(start, min(start + 500, total))
        stream.client.put_records(
            StreamName=stream.name,
            Records=[
                {"Data": json.dumps({"event_id": i, "kind": "click"}).encode(), "PartitionKey": f"user-{i}"}
                for i in batch
            ],
        )
    job, out = f"kin_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_CRASH_AT"}
    command = [
        sys.executable, "-m", "sparkmark", "run", "--until-caught-up",
        *args_for(job, stream, out, endpoint), "--max_fetch", str(per_shard),
    ]  # fmt: skip
    killed = subprocess.run(
        command,
        env={**env, "SPARKMARK_CRASH_AT": "batch_committed"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode in (137, -9), killed.stderr[-3000:]
    first_batch = parquet_ids(spark, out)
    assert 0 < len(first_batch) <= 2 * per_shard  # one batch: at most per_shard records from each shard

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    ids = parquet_ids(spark, out)
    assert len(ids) == total and ids == list(range(total))  # every record, once
    restarts = done.stderr.count("starting the query again until it finds nothing new")
    assert restarts >= total // (2 * per_shard) - 1, restarts

    bookmark = json.loads(cli.invoke(app, ["bookmark", "get", job, "--json"]).output)["JobBookmark"][
        "kinesis_src"
    ]
    checkpoint = Path(bookmark["checkpoint"].removeprefix("file://"))
    newest = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert bookmark["last_batch"] == newest
