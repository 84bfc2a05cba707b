"""The pure parts of streaming, without Spark: forEachBatch's options, the checkpoint's
offset log, lag, Kafka's option names, Kinesis offsets and shard order, the committed
micro-batches in the state store."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.engine.models import BookmarkOption, OutputKind, OutputState, RunState
from sparkmark.engine.owner import this_process
from sparkmark.errors import RunFinished, SourceError, StateStoreError
from sparkmark.runtime.batches import (
    DEFAULT_RETRIES,
    DEFAULT_WINDOW,
    BatchOptions,
    lag_of,
    pending_batch,
    quarantine_url,
    read_checkpoint_offsets,
)
from sparkmark.sources.kafka import KafkaSource, bootstrap_from_url
from sparkmark.sources.kinesis import KinesisSource, behind, merge_shards, readable, starting_spec
from sparkmark.sources.registry import stream_source

# ------------------------------------------------------------------ forEachBatch options


def test_glue_defaults_and_bounds():
    got = BatchOptions.parse({}, default_checkpoint="/t/job/checkpoint")
    assert (got.window, got.max_retries, got.checkpoint) == (
        DEFAULT_WINDOW,
        DEFAULT_RETRIES,
        "/t/job/checkpoint/",
    )
    assert DEFAULT_WINDOW == "100 seconds" and DEFAULT_RETRIES == 3  # Glue's documented defaults
    assert not got.available_now and got.max_batches is None
    bounded = BatchOptions.parse(
        {"windowSize": "30 seconds", "checkpointLocation": "s3://b/cp", "batchMaxRetries": 0},
        default_checkpoint=None,
        until_caught_up=True,
        max_batches=4,
    )
    assert bounded.checkpoint == "s3://b/cp/" and bounded.max_retries == 0
    assert bounded.available_now and bounded.max_batches == 4
    assert BatchOptions.parse({"trigger": "availableNow"}, default_checkpoint="/c").available_now
    # --max-batches bounds a run: it also ends when nothing is left to read.
    assert BatchOptions.parse({}, default_checkpoint="/c", max_batches=3).available_now


@pytest.mark.parametrize(
    "options,message",
    [
        ({"windowSize": "soon"}, "windowSize must be a duration"),
        ({"batchMaxRetries": "many"}, "batchMaxRetries must be a whole number"),
        ({"batchMaxRetries": -1}, "batchMaxRetries must be a whole number"),
        ({"checkpointlocation": "/x"}, "checkpointlocation not known"),
        ({"trigger": "once"}, "trigger must be"),
    ],
)
def test_bad_batch_options_are_one_line(options, message):
    with pytest.raises(SourceError, match=message):
        BatchOptions.parse(options, default_checkpoint="/c")


def test_a_checkpoint_is_needed():
    with pytest.raises(SourceError, match="checkpointLocation"):
        BatchOptions.parse({}, default_checkpoint=None)


# ------------------------------------------------------------------ the checkpoint


def test_offsets_and_pending_batch_from_the_checkpoint(tmp_path):
    offsets, commits = tmp_path / "offsets", tmp_path / "commits"
    offsets.mkdir()
    assert pending_batch(str(tmp_path)) is None
    (offsets / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"t":{"0":5,"1":7}}\n')
    (offsets / ".0.crc").write_text("crc")
    assert read_checkpoint_offsets(str(tmp_path), 0) == [{"t": {"0": 5, "1": 7}}]
    assert pending_batch(str(tmp_path)) == 0  # planned, not marked done
    commits.mkdir()
    (commits / "0").write_text("v1\n{}\n")
    assert pending_batch(str(tmp_path)) is None
    (offsets / "1").write_text('v1\n{}\n{"t":{"0":9,"1":7}}\n-\n')
    assert read_checkpoint_offsets(str(tmp_path), 1) == [{"t": {"0": 9, "1": 7}}, None]
    assert pending_batch(str(tmp_path)) == 1


def test_lag_counts_records_for_kafka_offsets_only():
    assert lag_of({"t": {"0": 10, "1": 4}}, {"t": {"0": 7, "1": 4}}) == 3
    assert lag_of({"t": {"0": 10}}, {"t": {"0": 12}}) == 0  # never negative
    shards = {"shards": {"s-0": {"after": "49"}}}
    assert lag_of(shards, shards) is None
    assert lag_of(None, {"t": {"0": 1}}) is None


def test_quarantine_folder_names_are_checked():
    url = quarantine_url("/tmp/t", "job", "0f1e2d3c-aaaa-bbbb-cccc-123456789abc", 4)
    assert url == "/tmp/t/quarantine/job/stream-0f1e2d3c-aaaa-bbbb-cccc-123456789abc/batch-4"
    with pytest.raises(SourceError):
        quarantine_url("/tmp/t", "job", "../../etc", 1)


# ------------------------------------------------------------------ Kafka options


def kafka(**options):
    return KafkaSource(options={"bootstrap.servers": "b1:9092", **options})


def test_glue_kafka_options_map_onto_spark_s():
    source = kafka(
        topicName="orders",
        startingOffsets="earliest",
        maxOffsetsPerTrigger=500,
        includeHeaders=True,
        pollTimeoutMs=512,
        numRetries=3,
        retryIntervalMs=10,
        failOnDataLoss="false",
        **{"security.protocol": "SSL", "kafka.ssl.truststore.location": "/t.jks"},
    )
    assert source.spark_options() == {
        "kafka.bootstrap.servers": "b1:9092",
        "subscribe": "orders",
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "500",
        "includeHeaders": "true",
        "kafkaConsumer.pollTimeoutMs": "512",
        "fetchOffset.numRetries": "3",
        "fetchOffset.retryIntervalMs": "10",
        "failOnDataLoss": "false",
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": "/t.jks",
    }
    assert kafka(topicName="o").spark_options()["startingOffsets"] == "latest"  # Glue's default
    assert kafka(assign='{"o":[0,1]}').spark_options()["assign"] == '{"o":[0,1]}'
    assert kafka(subscribePattern="o.*").spark_options()["subscribePattern"] == "o.*"
    assert bootstrap_from_url("kafka://b1:9092,b2:9092/") == "b1:9092,b2:9092"


@pytest.mark.parametrize(
    "options,message",
    [
        ({}, "exactly one of 'topicName', 'assign' or 'subscribePattern'"),
        ({"topicName": "a", "subscribePattern": "b"}, "got topicName, subscribePattern"),
        ({"topicName": "a", "endingOffsets": "{}"}, "endingOffsets applies to batch reads"),
        ({"topicName": "a", "classification": "parquet"}, "classification 'parquet' is not supported"),
        ({"topicName": "a", "colour": "blue"}, "option 'colour' is not known"),
    ],
)
def test_bad_kafka_options_are_one_line(options, message):
    with pytest.raises(SourceError, match=message):
        kafka(**options).spark_options()


def test_kafka_needs_brokers_and_unknown_kinds_are_refused():
    with pytest.raises(SourceError, match="bootstrap.servers"):
        KafkaSource(options={"topicName": "a"})
    with pytest.raises(SourceError, match="streaming connection_type 'rabbitmq' is not supported"):
        stream_source("rabbitmq", {}, ctx=None)


# ------------------------------------------------------------------ Kinesis offsets


def shard(sid, parents=(), closed=False):
    entry = {"ShardId": sid, "SequenceNumberRange": {"StartingSequenceNumber": "1"}}
    if parents:
        entry["ParentShardId"] = parents[0]
    if len(parents) > 1:
        entry["AdjacentParentShardId"] = parents[1]
    if closed:
        entry["SequenceNumberRange"]["EndingSequenceNumber"] = "99"
    return entry


def test_starting_positions():
    assert starting_spec("TRIM_HORIZON") == starting_spec("earliest") == "TRIM_HORIZON"
    assert starting_spec("LATEST", now_ms=1234) == "AT_TIMESTAMP:1234"
    assert starting_spec("2026-01-02T03:04:05Z") == "AT_TIMESTAMP:1767323045000"
    with pytest.raises(SourceError, match="startingPosition"):
        starting_spec("yesterday")


def test_a_split_is_read_parent_first_and_children_from_their_start():
    fresh = merge_shards({}, [shard("s0")], "AT_TIMESTAMP:5")
    assert fresh["shards"]["s0"] == {"after": None, "start": "AT_TIMESTAMP:5", "done": False, "parents": []}
    read = {"shards": {"s0": {**fresh["shards"]["s0"], "after": "40"}}}
    split = merge_shards(
        read, [shard("s0", closed=True), shard("s1", ["s0"]), shard("s2", ["s0"])], "AT_TIMESTAMP:9"
    )
    assert split["shards"]["s0"]["after"] == "40"  # kept
    assert split["shards"]["s1"]["start"] == "TRIM_HORIZON"  # a child: from its first record
    assert readable(split, "s0") and not readable(split, "s1") and not readable(split, "s2")
    split["shards"]["s0"]["done"] = True
    assert not readable(split, "s0") and readable(split, "s1") and readable(split, "s2")


def test_a_merge_waits_for_both_parents():
    offsets = merge_shards({}, [shard("a"), shard("b"), shard("m", ["a", "b"])], "TRIM_HORIZON")
    offsets["shards"]["a"]["done"] = True
    assert not readable(offsets, "m")
    offsets["shards"]["b"]["done"] = True
    assert readable(offsets, "m")


def test_from_now_a_closed_shard_has_nothing_to_give():
    offsets = merge_shards({}, [shard("old", closed=True), shard("new", ["old"])], "AT_TIMESTAMP:1")
    assert offsets["shards"]["old"]["done"] and readable(offsets, "new")


@given(st.lists(st.integers(min_value=1, max_value=10**12), min_size=0, max_size=3))
def test_a_range_holds_records_only_when_the_end_moved(sequences):
    start = {"after": str(sequences[0]) if sequences else None}
    end = {"after": str(sequences[-1]) if sequences else None}
    assert behind(start, end) == (bool(sequences) and sequences[0] != sequences[-1])


@pytest.mark.parametrize(
    "options,message",
    [
        ({}, "needs 'streamARN' or 'streamName'"),
        (
            {"streamName": "t", "streamARN": "arn:aws:kinesis:us-east-1:1:stream/s"},
            "names stream 's', not streamName 't'",
        ),
        ({"streamARN": "arn:aws:sqs:us-east-1:1:q"}, "not a Kinesis stream ARN"),
        ({"streamName": "s", "maxFetchRecordsPerShard": "0"}, "maxFetchRecordsPerShard"),
        ({"streamName": "s", "shardCount": 2}, "option\\(s\\) shardCount not known"),
    ],
)
def test_bad_kinesis_options_are_one_line(options, message):
    with pytest.raises(SourceError, match=message):
        KinesisSource(options=options)


def test_kinesis_takes_stream_arn_and_stream_name_together_as_aws_samples_give_them():
    """AWS's Kinesis connection options name the stream by streamARN or streamName; its
    samples pass both. When they agree the ARN is used (it carries the region)."""
    both = KinesisSource(options={"streamName": "s", "streamARN": "arn:aws:kinesis:eu-west-1:1:stream/s"})
    assert both.reader_options()["region"] == "eu-west-1"


def test_kinesis_region_comes_from_the_arn_and_credentials_stay_out_of_names():
    source = KinesisSource(options={"streamARN": "arn:aws:kinesis:eu-west-1:123:stream/clicks"})
    options = source.reader_options()
    assert options["region"] == "eu-west-1" and options["streamARN"].endswith("stream/clicks")
    assert not any("secret" in k.lower() for k in options)  # no settings: the default chain


# ------------------------------------------------------------------ committed batches


def test_a_batch_commits_its_writes_once(store):
    run = store.start_run(
        job_name="s",
        run_id="jr_" + "a" * 64,
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments={},
        owner=this_process(),
        lease_seconds=60,
    )
    out = store.stage_output(
        run.run_id, ctx="batch_sink_1", kind=OutputKind.FILES, target="/o", plan={"root": "/o"}
    )
    store.set_output(run.run_id, out.seq, OutputState.STAGED)
    assert store.committed_batch("s", "q1", 0) is None
    done = store.commit_batch(
        run.run_id,
        query_id="q1",
        batch_id=0,
        outputs=[out.seq],
        offsets={"0": {"t": {"0": 3}}},
        metrics={"numRecords": 3},
    )
    assert done.outputs == [out.seq] and done.offsets == {"0": {"t": {"0": 3}}}
    assert store.get_output(run.run_id, out.seq).state is OutputState.COMMITTED
    assert store.committed_batch("s", "q1", 0).run_id == run.run_id
    assert store.committed_batch("s", "q2", 0) is None  # another query: another checkpoint
    with pytest.raises(StateStoreError, match="batch 0 of streaming query q1 was already committed by run"):
        store.commit_batch(run.run_id, query_id="q1", batch_id=0, outputs=[], offsets={}, metrics={})
    store.finish_run(run.run_id, RunState.FAILED, error="x")
    with pytest.raises(RunFinished):
        store.commit_batch(run.run_id, query_id="q1", batch_id=1, outputs=[], offsets={}, metrics={})
    assert [b.batch_id for b in store.stream_batches("s")] == [0]
