"""Glue streaming jobs on a real Kafka broker (KRaft, 127.0.0.1): the guides' script shape
(create_data_frame.from_options kafka → forEachBatch → DynamicFrame writes to Parquet and
PostgreSQL), run until caught up, again after more records, killed in the middle of a
batch; every record in each sink exactly once, malformed records quarantined with their
partition and offset, the committed offsets and lag in the bookmark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from typer.testing import CliRunner

from sparkmark.cli.app import app
from sparkmark.engine.store import StateStore
from sparkmark.errors import SourceError
from sparkmark.settings import Settings

from .conftest import PG_DSN

SCRIPT = Path(__file__).parent / "fixtures" / "streaming" / "kafka_orders.py"
JDBC_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres"
cli = CliRunner()


class Topic:
    """A topic with partitions, and the position of every record sent to it."""

    def __init__(self, bootstrap: str, partitions: int = 3):
        self.bootstrap = bootstrap
        self.name = f"orders_{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics(
            [NewTopic(self.name, num_partitions=partitions, replication_factor=1)]
        ).values():
            future.result(timeout=30)
        self.sent: list[tuple[int | None, int, int]] = []  # (id or None when malformed, partition, offset)

    def send(self, ids, malformed=()) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap})
        delivered: list[tuple[int | None, int, int]] = []

        def done(err, msg, value=None):
            assert err is None, err
            delivered.append((value, msg.partition(), msg.offset()))

        for i in ids:
            bad = i in malformed
            payload = f'{{"id": {i}, "amount": ' if bad else json.dumps({"id": i, "amount": i * 10})
            producer.produce(
                self.name,
                key=str(i),
                value=payload,
                on_delivery=lambda e, m, v=(None if bad else i): done(e, m, v),
            )
        producer.flush(30)
        assert len(delivered) == len(list(ids))
        self.sent.extend(delivered)

    def next_offsets(self) -> dict[str, int]:
        ends: dict[str, int] = {}
        for _, partition, offset in self.sent:
            ends[str(partition)] = max(ends.get(str(partition), 0), offset + 1)
        return ends

    def good_ids(self) -> list[int]:
        return sorted(i for i, _, _ in self.sent if i is not None)


@pytest.fixture
def topic(kafka_broker):
    return Topic(kafka_broker.bootstrap_servers)


@pytest.fixture
def pg_table():
    name = f"orders_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {name} (id bigint, amount bigint)")
    yield name
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {name}")


def table_ids(table: str) -> list[int]:
    with psycopg.connect(PG_DSN) as conn:
        return sorted(r[0] for r in conn.execute(f"SELECT id FROM {table}").fetchall())


def parquet_ids(spark, path: Path) -> list[int]:
    if not path.exists():
        return []
    return sorted(r["id"] for r in spark.read.parquet(str(path)).select("id").collect())


def job_args(job: str, topic: Topic, out: Path, table: str, *extra: str) -> list[str]:
    return [
        str(SCRIPT),
        "--JOB_NAME",
        job,
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--bootstrap_servers",
        topic.bootstrap,
        "--topic",
        topic.name,
        "--output_path",
        str(out),
        "--jdbc_url",
        JDBC_URL,
        "--table",
        table,
        "--window",
        "1 second",
        *extra,
    ]


def sm(*args: str):
    return cli.invoke(app, list(args))


def test_glue_streaming_script_runs_until_caught_up_and_again(
    spark, topic, pg_table, tmp_path, sparkmark_home
):
    job, out = f"stream_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    topic.send(range(0, 30), malformed={7, 19})

    first = sm("run", "--until-caught-up", *job_args(job, topic, out, pg_table))
    assert first.exit_code == 0, first.output
    assert "SUCCEEDED" in first.output
    assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()
    assert len(topic.good_ids()) == 28

    # The malformed records, set aside with their partition and offset.
    store = StateStore.from_settings(Settings.from_env())
    quarantined = list((sparkmark_home / "tmp" / "quarantine" / job).glob("stream-*/batch-*/*.json"))
    records = [json.loads(line) for f in quarantined for line in f.read_text().splitlines()]
    expected = sorted((p, o) for i, p, o in topic.sent if i is None)
    assert sorted((r["partition"], r["offset"]) for r in records) == expected
    assert {r["topic"] for r in records} == {topic.name}
    assert all(r["record"].startswith('{"id": ') for r in records)

    topic.send(range(30, 50), malformed={44})
    second = sm("run", "--until-caught-up", *job_args(job, topic, out, pg_table))
    assert second.exit_code == 0, second.output
    assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()
    assert len(topic.good_ids()) == 47

    # The bookmark shows the committed offsets per partition, and the lag.
    bookmark = json.loads(sm("bookmark", "get", job, "--json").output)
    state = bookmark["JobBookmark"]["orders_src"]
    assert state["type"] == "kafka" and state["offsets"] == {topic.name: topic.next_offsets()}
    assert state["lag"] == 0
    shown = sm("bookmark", "get", job).output
    assert "lag 0" in shown and topic.name in shown

    # The run's streaming metrics: Glue's numRecords, per batch and in all.
    runs = json.loads(sm("runs", "list", job, "--json").output)
    metrics = json.loads(sm("runs", "show", runs[0]["run_id"], "--json").output)["metrics"]["streaming"]
    assert metrics["numRecords"] == 20 and metrics["records_quarantined"] == 1
    assert sum(b["numRecords"] for b in metrics["recent_batches"]) == 20
    # Glue's streaming metric and sparkmark's lag, as the run reported them.
    glue = json.loads(sm("runs", "show", runs[0]["run_id"], "--json").output)["metrics"]["glue"]
    assert glue["glue.driver.streaming.numRecords"] == 20
    assert glue["sparkmark.streaming.lag"] == 0
    assert glue["sparkmark.bookmark.recordsQuarantined"] == 1
    assert "numRecords" in sm("runs", "show", runs[0]["run_id"]).output
    assert len(store.stream_batches(job)) == metrics["batches"] + 1  # and run 1's batch
    store.close()


def test_max_batches_stops_a_run_and_the_next_goes_on(spark, kafka_broker, pg_table, tmp_path):
    topic = Topic(kafka_broker.bootstrap_servers, partitions=1)
    job, out = f"stream_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    topic.send(range(0, 30))
    common = job_args(job, topic, out, pg_table, "--max_offsets", "10")

    first = sm("run", "--max-batches", "2", *common)
    assert first.exit_code == 0, first.output
    assert parquet_ids(spark, out) == table_ids(pg_table) == list(range(0, 20))

    second = sm("run", "--until-caught-up", *common)
    assert second.exit_code == 0, second.output
    assert parquet_ids(spark, out) == table_ids(pg_table) == list(range(0, 30))

    # Fewer batches left than --max-batches asks for: the run ends when nothing is left.
    topic.send(range(30, 40))
    third = sm("run", "--max-batches", "5", *common)
    assert third.exit_code == 0, third.output
    assert parquet_ids(spark, out) == table_ids(pg_table) == list(range(0, 40))


def _run_process(args: list[str], crash_at: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_CRASH_AT"}
    if crash_at:
        env["SPARKMARK_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "sparkmark", "run", "--until-caught-up", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.mark.skipif(
    os.environ.get("SPARKMARK_HEAVY") != "1",
    reason="a streaming job killed mid-batch and run again (162 s in CI): make soak runs it",
)
def test_killed_in_the_middle_of_a_batch_loses_and_repeats_nothing(spark, topic, pg_table, tmp_path):
    """SIGKILL while Spark writes a batch's files, then after a batch committed and
    published but before Spark marked it done: each restart goes on from the checkpoint."""
    job, out = f"stream_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    args = job_args(job, topic, out, pg_table)
    topic.send(range(0, 40), malformed={3})

    killed = _run_process(args, "writing")
    assert killed.returncode in (137, -9), killed.stderr[-3000:]
    assert table_ids(pg_table) == []  # nothing of the killed batch reached the table

    # The restart does the killed batch again (the records Spark planned for it), then
    # catches up with what came since.
    topic.send(range(40, 60))
    caught_up = _run_process(args, None)
    assert caught_up.returncode == 0, caught_up.stderr[-3000:]
    assert "starting the query again from its checkpoint" in caught_up.stderr  # SPARK-55271, worked around
    assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()

    topic.send(range(60, 70))
    published_then_killed = _run_process(args, "batch_committed")
    assert published_then_killed.returncode in (137, -9), published_then_killed.stderr[-3000:]
    assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()

    done = _run_process(args, None)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "its writes are not repeated" in done.stderr
    assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()
    assert len(topic.good_ids()) == 69


# ------------------------------------------------------------------ the native API, failures


def read_orders(job, topic: Topic, **extra):
    return job.read_stream(
        "kafka",
        ctx="orders",
        **{
            "bootstrap.servers": topic.bootstrap,
            "topicName": topic.name,
            "startingOffsets": "earliest",
            "classification": "json",
            "schema": "id long, amount long",
            **extra,
        },
    )


def test_a_failing_batch_is_retried_and_its_writes_discarded(runner, spark, topic, tmp_path):
    out, attempts = tmp_path / "out", []
    topic.send(range(0, 10))

    def flaky(df, batch_id):
        attempts.append(batch_id)
        job.write_files(df, str(out), format="parquet")
        if len(attempts) == 1:
            raise RuntimeError("a flaky sink")

    job = runner.start()
    summary = job.for_each_batch(
        read_orders(job, topic), flaky, checkpoint=str(tmp_path / "cp"), until_caught_up=True
    )
    job.commit()
    assert attempts == [0, 0] and summary["recent_batches"][0]["attempts"] == 2
    assert parquet_ids(spark, out) == list(range(0, 10))  # the first attempt's write was discarded


def test_a_batch_that_keeps_failing_fails_the_run_and_is_done_again_next_time(runner, spark, topic, tmp_path):
    out, cp = tmp_path / "out", str(tmp_path / "cp")
    topic.send(range(0, 10))

    def broken(df, batch_id):
        job.write_files(df, str(out), format="parquet")
        raise ValueError("the batch function is broken")

    job = runner.start()
    frame = read_orders(job, topic)
    with pytest.raises(ValueError, match="the batch function is broken"):
        job.for_each_batch(frame, broken, checkpoint=cp, max_retries=1, until_caught_up=True)
    job.fail(ValueError("the batch function is broken"))
    assert runner.store.get_run(job.run_id).state.value == "FAILED"
    assert not list(out.glob("*.parquet"))  # the staged writes of both attempts were discarded

    topic.send(range(10, 15))
    job = runner.start()
    job.for_each_batch(
        read_orders(job, topic),
        lambda df, batch_id: job.write_files(df, str(out), format="parquet"),
        checkpoint=cp,
        until_caught_up=True,
    )
    job.commit()
    assert parquet_ids(spark, out) == list(range(0, 15))


def test_an_unreachable_broker_is_one_line(runner, tmp_path):
    job = runner.start()
    topic = Topic.__new__(Topic)
    topic.bootstrap, topic.name = "127.0.0.1:1", "nowhere"
    with pytest.raises(
        SourceError,
        match=r"no Kafka broker of 127.0.0.1:1 can be reached \(127.0.0.1:1: Connection refused\)",
    ):
        read_orders(job, topic)
    job.fail("unreachable")


def test_a_deleted_topic_fails_the_next_run_with_the_data_loss_policy(runner, kafka_broker, topic, tmp_path):
    out, cp = tmp_path / "out", str(tmp_path / "cp")
    topic.send(range(0, 5))
    job = runner.start()
    job.for_each_batch(
        read_orders(job, topic),
        lambda df, b: job.write_files(df, str(out), format="json"),
        checkpoint=cp,
        until_caught_up=True,
    )
    job.commit()

    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.delete_topics([topic.name]).values():
        future.result(timeout=30)
    job = runner.start()
    with pytest.raises(SourceError, match="failOnDataLoss|does not exist"):
        job.for_each_batch(
            read_orders(job, topic, failOnDataLoss="true"),
            lambda df, b: job.write_files(df, str(out), format="json"),
            checkpoint=cp,
            until_caught_up=True,
        )
    job.fail("deleted topic")


def test_a_streaming_catalog_table_gives_the_source_and_the_schema(spark, topic, tmp_path, sparkmark_home):
    """Glue keeps a Kafka table's topic and brokers in its parameters (typeOfData kafka)
    and the records' schema in its columns; from_catalog reads the stream with them."""
    from sparkmark.catalog.models import Column, Database, Table
    from sparkmark.catalog.store import CatalogStore
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob

    store = StateStore.from_settings(Settings.from_env())
    catalog = CatalogStore(store)
    catalog.put_database(Database("streams"))
    catalog.put_table(
        Table(
            database="streams",
            name="orders",
            location="",
            classification="json",
            columns=(Column("id", "bigint"), Column("amount", "bigint")),
            parameters={
                "typeOfData": "kafka",
                "topicName": topic.name,
                "bootstrap.servers": topic.bootstrap,
                "startingOffsets": "earliest",
                "EXTERNAL": "TRUE",  # not an option of the source: left out
            },
        )
    )
    topic.send(range(0, 6), malformed={2})
    out = tmp_path / "out"
    glue = GlueContext(spark)
    job = GlueJob(glue)
    job.init("catalog_stream", {"JOB_NAME": "catalog_stream", "job_bookmark_option": "job-bookmark-enable"})
    frame = glue.create_data_frame.from_catalog(
        database="streams", table_name="orders", transformation_ctx="src"
    )
    assert [f.name for f in frame.schema.fields][:2] == ["id", "amount"]

    def process(df, batch_id):
        glue.write_data_frame.from_options(
            frame=df, connection_type="s3", connection_options={"path": str(out)}, format="parquet"
        )

    glue.forEachBatch(frame=frame, batch_function=process, options={"trigger": "availableNow"})
    job.commit()
    assert parquet_ids(spark, out) == [0, 1, 3, 4, 5]
    store.close()


def _registry_record(version_id: str, schema: dict, record: dict, compress: bool = False) -> bytes:
    """A record framed as the Glue Schema Registry's serializers frame it (AWS's
    schema-registry-serde: header version 3, compression 0 or 5 for ZLIB, the schema
    version's 16-byte UUID, then the Avro binary record)."""
    import io
    import zlib

    import fastavro

    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    body = zlib.compress(buffer.getvalue()) if compress else buffer.getvalue()
    return bytes([3, 5 if compress else 0]) + uuid.UUID(version_id).bytes + body


def test_a_streaming_job_reads_registry_encoded_avro_across_schema_versions(
    spark, topic, tmp_path, sparkmark_home
):
    """AWS's Glue Schema Registry with a streaming table (StorageDescriptor's
    SchemaReference): records written with version 1 and with version 2 (a field added
    with a default, as BACKWARD compatibility allows) are read as one frame of the
    latest version, version 1's records taking the default; a ZLIB-compressed record
    decodes; a record whose header is not the registry's is quarantined, not lost; an
    incompatible version 3 is refused by the registry."""
    from sparkmark.catalog.models import GLUE_KEY, Database, Table
    from sparkmark.catalog.schema_compatibility import IncompatibleSchema
    from sparkmark.catalog.schema_registry import SchemaRegistryStore
    from sparkmark.catalog.store import CatalogStore
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob

    state = StateStore.from_settings(Settings.from_env())
    registry = SchemaRegistryStore(state)
    registry.create_registry("streams")
    v1_schema = {
        "type": "record",
        "name": "order",
        "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "long"}],
    }
    v2_schema = {
        **v1_schema,
        "fields": [*v1_schema["fields"], {"name": "channel", "type": "string", "default": "web"}],
    }
    _, v1 = registry.create_schema("streams", topic.name, "AVRO", "BACKWARD", "", json.dumps(v1_schema))
    v2 = registry.register_version("streams", topic.name, json.dumps(v2_schema))
    assert (v1.number, v2.number) == (1, 2)
    v3_schema = {
        **v1_schema,
        "fields": [*v1_schema["fields"], {"name": "region", "type": "string"}],
    }  # no default
    with pytest.raises(IncompatibleSchema, match="not BACKWARD compatible with version 2"):
        registry.register_version("streams", topic.name, json.dumps(v3_schema))

    catalog = CatalogStore(state)
    catalog.put_database(Database("registry_streams"))
    reference = {"SchemaId": {"RegistryName": "streams", "SchemaName": topic.name}}
    catalog.put_table(
        Table(
            database="registry_streams",
            name="orders",
            location="",
            classification="avro",
            columns=(),
            parameters={
                "typeOfData": "kafka",
                "topicName": topic.name,
                "bootstrap.servers": topic.bootstrap,
                "startingOffsets": "earliest",
                GLUE_KEY: json.dumps({"StorageDescriptor": {"SchemaReference": reference}}),
            },
        )
    )
    _send_raw(
        topic,
        [
            _registry_record(v1.version_id, v1_schema, {"id": 1, "amount": 10}),
            _registry_record(v1.version_id, v1_schema, {"id": 2, "amount": 20}, compress=True),
            b"not a registry record",
            _registry_record(v2.version_id, v2_schema, {"id": 3, "amount": 30, "channel": "shop"}),
        ],
    )
    out = tmp_path / "out"
    glue = GlueContext(spark)
    job = GlueJob(glue)
    job.init("registry_stream", {"JOB_NAME": "registry_stream", "job_bookmark_option": "job-bookmark-enable"})
    frame = glue.create_data_frame.from_catalog(
        database="registry_streams", table_name="orders", transformation_ctx="src"
    )

    def process(df, batch_id):
        glue.write_data_frame.from_options(
            frame=df, connection_type="s3", connection_options={"path": str(out)}, format="parquet"
        )

    glue.forEachBatch(frame=frame, batch_function=process, options={"trigger": "availableNow"})
    job.commit()
    rows = sorted(tuple(r) for r in spark.read.parquet(str(out)).select("id", "amount", "channel").collect())
    assert rows == [(1, 10, "web"), (2, 20, "web"), (3, 30, "shop")]
    quarantined = [
        json.loads(line)
        for f in Path(sparkmark_home).rglob("quarantine/**/*.json")
        for line in f.read_text().splitlines()
    ]
    assert [(r["partition"], r["offset"]) for r in quarantined] == [(0, 2)]  # the record without the header
    state.close()


def test_a_declared_streaming_job_is_scheduled_bounded(spark, topic, pg_table, tmp_path):
    """A job declared with Streaming = { UntilCaughtUp = true } runs through the scheduler's
    launcher and returns once caught up, so a workflow can go on after it."""
    out = tmp_path / "out"
    config = tmp_path / "sparkmark.toml"
    pairs = job_args("declared", topic, out, pg_table)[1:]
    arguments = dict(zip(pairs[0::2], pairs[1::2], strict=True))
    arguments.pop("--JOB_NAME")
    config.write_text(
        "[jobs.orders_stream]\n"
        f'Script = "{SCRIPT}"\n'
        "Streaming = { UntilCaughtUp = true }\n"
        "DefaultArguments = { " + ", ".join(f'"{k}" = "{v}"' for k, v in arguments.items()) + " }\n",
        encoding="utf-8",
    )
    topic.send(range(0, 8))
    for more in (range(8, 12), ()):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sparkmark",
                "job",
                "run",
                "orders_stream",
                "--config",
                str(config),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
        assert json.loads(done.stdout)["JobRunState"] == "SUCCEEDED"
        assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()
        topic.send(more)


def _send_raw(topic: Topic, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": topic.bootstrap})
    for value in values:
        producer.produce(topic.name, value=value, partition=0)
    producer.flush(30)


@pytest.mark.parametrize("classification", ["csv", "avro"])
def test_csv_and_avro_records_are_parsed_and_bad_ones_set_aside(
    runner, spark, topic, tmp_path, classification
):
    import io

    import fastavro

    avro_schema = {
        "type": "record",
        "name": "order",
        "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "long"}],
    }
    if classification == "csv":
        good = [f"{i},{i * 10}".encode() for i in range(5)]
        bad = b"seven,not-a-number"
        extra = {"schema": "id long, amount long"}
    else:

        def encode(i: int) -> bytes:
            buffer = io.BytesIO()
            fastavro.schemaless_writer(
                buffer, fastavro.parse_schema(avro_schema), {"id": i, "amount": i * 10}
            )
            return buffer.getvalue()

        good = [encode(i) for i in range(5)]
        bad = b"\xff\xff\xff"
        extra = {"avroSchema": json.dumps(avro_schema)}
    _send_raw(topic, [*good[:2], bad, *good[2:]])
    out, seen = tmp_path / "out", []

    job = runner.start()
    frame = job.read_stream(
        "kafka",
        ctx="orders",
        **{
            "bootstrap.servers": topic.bootstrap,
            "topicName": topic.name,
            "startingOffsets": "earliest",
            "classification": classification,
            **extra,
        },
    )

    def process(df, batch_id):
        seen.extend((r["id"], r["amount"]) for r in df.collect())
        job.write_files(df, str(out), format="parquet")

    summary = job.for_each_batch(frame, process, checkpoint=str(tmp_path / "cp"), until_caught_up=True)
    job.commit()
    assert sorted(seen) == [(i, i * 10) for i in range(5)]
    assert summary["records_quarantined"] == 1 and summary["numRecords"] == 6
    quarantined = list((Path(runner.temp_dir) / "quarantine" / runner.name).glob("stream-*/batch-*/*.json"))
    (record,) = [json.loads(line) for f in quarantined for line in f.read_text().splitlines()]
    assert (record["partition"], record["offset"]) == (0, 2)


def test_an_unbounded_job_stopped_by_sigterm_ends_stopped_and_the_next_run_goes_on(
    spark, topic, pg_table, tmp_path
):
    """Without --until-caught-up a streaming job runs as on Glue, a batch every windowSize,
    until it is stopped; SIGTERM ends it STOPPED, its lease freed, nothing written twice."""
    import signal
    import time

    job, out = f"stream_{uuid.uuid4().hex[:6]}", tmp_path / "out"
    topic.send(range(0, 10))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkmark", "run", *job_args(job, topic, out, pg_table)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while len(table_ids(pg_table)) < 9 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)  # waiting for another process's first batch, not for time to pass
    assert table_ids(pg_table) == topic.good_ids(), proc.stderr.read() if proc.poll() is not None else ""
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr[-3000:]
    assert "Traceback" not in stderr and "error: stopped by SIGTERM" in stderr

    store = StateStore.from_settings(Settings.from_env())
    (run,) = store.list_runs(job)
    assert run.state.value == "STOPPED" and store.get_lease(job) is None
    topic.send(range(10, 15))
    again = _run_process(job_args(job, topic, out, pg_table), None)
    assert again.returncode == 0, again.stderr[-3000:]
    assert parquet_ids(spark, out) == table_ids(pg_table) == topic.good_ids()
    store.close()
