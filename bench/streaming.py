"""P9: records per second through a Kafka → Parquet streaming job.

A topic of N JSON records (3 partitions) on a real broker (KRaft, from `make jars`) is
read from the start, until caught up, by:

- sparkmark: the guides' Glue script shape, in this process. The script reads with
  create_data_frame.from_options(kafka, inferSchema), calls forEachBatch, and in the
  batch counts, then writes a DynamicFrame as glueparquet. Each batch goes through the
  exactly-once path: persisted, malformed records split off, writes staged, the batch
  committed in the state store, then published.
- plain, the same function: Spark's Structured Streaming, readStream kafka → from_json →
  foreachBatch with the script's batch function (count, then write Parquet). This is P9's
  baseline, "a plain query doing the same".
- plain, Spark's file sink: readStream kafka → from_json → writeStream parquet (no count,
  one pass), reported beside it as the fastest plain query.

All run the available-now trigger with a fresh checkpoint and the same schema. The
ratio is medians of records per second, sparkmark ÷ plain with the same function (goal
≥ 0.9). Kinesis (moto's
server): records per second of the same script shape, and the time of one pass of
GetRecords over the stream. Planning a batch reads ahead once, so a batch costs about
two such passes.

    python bench/streaming.py            # N = 1,000,000 Kafka records, 20,000 Kinesis
    python bench/streaming.py --quick    # N = 100,000 and 5,000
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed

SCHEMA = "id long, name string, amount long"


def produce_kafka(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000})
    for i in range(count):
        value = json.dumps({"id": i, "name": f"customer-{i % 997}", "amount": i % 1000})
        while True:
            try:
                producer.produce(topic, key=str(i), value=value)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10000 == 0:
            producer.poll(0)
    producer.flush(120)


def glue_style(spark, argv: list[str], kind: str, connection: dict) -> int:
    """The guides' script shape, run in this process; returns the records processed."""
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.dynamicframe import DynamicFrame
    from sparkmark.glue.job import Job
    from sparkmark.glue.utils import getResolvedOptions

    args = getResolvedOptions(argv, ["JOB_NAME", "output_path"])
    glue = GlueContext(spark)
    job = Job(glue)
    job.init(args["JOB_NAME"], args)
    frame = glue.create_data_frame.from_options(
        connection_type=kind, connection_options=connection, transformation_ctx="src"
    )

    def process_batch(data_frame, batch_id):
        if data_frame.count() > 0:
            glue.write_dynamic_frame.from_options(
                frame=DynamicFrame.fromDF(data_frame, glue, "batch"),
                connection_type="s3",
                connection_options={"path": args["output_path"]},
                format="glueparquet",
            )

    glue.forEachBatch(
        frame=frame,
        batch_function=process_batch,
        options={
            "windowSize": "1 second",
            "checkpointLocation": args["TempDir"] + "/cp/",
            "trigger": "availableNow",
        },
    )
    job.commit()
    return int(job._native.job_run.metrics["streaming"]["numRecords"])


def parsed_topic(spark, bootstrap: str, topic: str):
    """The topic's records parsed with the schema, as a plain streaming DataFrame."""
    from pyspark.sql import functions as F

    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    return raw.select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("r")).select("r.*")


def plain_kafka(spark, bootstrap: str, topic: str, out: Path, checkpoint: Path) -> None:
    parsed = parsed_topic(spark, bootstrap, topic)
    query = (
        parsed.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def plain_kafka_batches(spark, bootstrap: str, topic: str, out: Path, checkpoint: Path) -> None:
    """Plain Structured Streaming with the script's own batch function: count, then write."""
    parsed = parsed_topic(spark, bootstrap, topic)

    def process_batch(data_frame, batch_id):
        if data_frame.count() > 0:
            data_frame.write.mode("append").parquet(str(out))

    query = (
        parsed.writeStream.foreachBatch(process_batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def main() -> None:
    args = arguments(repeats=3)
    kafka_records = 100_000 if args.quick else 1_000_000
    kinesis_records = 5_000 if args.quick else 20_000

    import os

    from sparkmark.devservices.kafka import start_kafka
    from sparkmark.devservices.s3 import start_s3
    from sparkmark.settings import Settings
    from sparkmark.spark import create_session

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["SPARKMARK_HOME"] = str(root / "home")
        settings = Settings.from_env()
        broker = start_kafka(root / "kafka", settings.jars_dir)
        moto = start_s3(root / "moto")
        spark = create_session("streaming-bench", "local[2]", settings)
        try:
            topic = f"bench_{uuid.uuid4().hex[:6]}"
            produce_kafka(broker.bootstrap_servers, topic, kafka_records)
            sm_times, plain_times, same_times = [], [], []
            for repeat in range(args.repeats):
                same_times.append(
                    timed(
                        lambda out=root / f"same-{repeat}", cp=root / f"scp-{repeat}": plain_kafka_batches(
                            spark, broker.bootstrap_servers, topic, out, cp
                        )
                    )
                )
                out = root / f"plain-{repeat}"
                plain_times.append(
                    timed(
                        lambda out=out, cp=root / f"pcp-{repeat}": plain_kafka(
                            spark, broker.bootstrap_servers, topic, out, cp
                        )
                    )
                )
                name = f"p9_{repeat}_{uuid.uuid4().hex[:4]}"
                argv = ["bench.py", "--JOB_NAME", name, "--job-bookmark-option", "job-bookmark-enable",
                        "--output_path", str(root / f"sm-{repeat}"), "--TempDir", str(root / f"tmp-{repeat}")]  # fmt: skip
                connection = {
                    "bootstrap.servers": broker.bootstrap_servers,
                    "topicName": topic,
                    "startingOffsets": "earliest",
                    "classification": "json",
                    "schema": SCHEMA,
                }
                counted: list[int] = []
                sm_times.append(
                    timed(
                        lambda argv=argv, c=connection, counted=counted: counted.append(
                            glue_style(spark, argv, "kafka", c)
                        )
                    )
                )
                assert counted == [kafka_records], counted
                written = spark.read.parquet(str(root / f"sm-{repeat}")).count()
                assert written == kafka_records == spark.read.parquet(str(out)).count()
            sm_rate = kafka_records / statistics.median(sm_times)
            plain_rate = kafka_records / statistics.median(plain_times)
            same_rate = kafka_records / statistics.median(same_times)
            p9 = sm_rate / same_rate

            # Kinesis: the same shape over moto's Kinesis API.
            import boto3

            os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
            os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
            os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
            client = boto3.client("kinesis", endpoint_url=moto.endpoint_url, region_name="us-east-1")
            stream = f"bench_{uuid.uuid4().hex[:6]}"
            client.create_stream(StreamName=stream, ShardCount=2)
            for start in range(0, kinesis_records, 500):
                client.put_records(
                    StreamName=stream,
                    Records=[
                        {
                            "Data": json.dumps({"id": i, "name": "c", "amount": i % 1000}).encode(),
                            "PartitionKey": str(i),
                        }
                        for i in range(start, min(start + 500, kinesis_records))
                    ],
                )
            from sparkmark.sources.kinesis import fetch, list_shards

            options = {"streamName": stream, "endpointUrl": moto.endpoint_url, "region": "us-east-1"}
            began = time.perf_counter()
            passed = sum(
                1
                for s in list_shards(client, options)
                for r, ended in fetch(
                    client, options, s["ShardId"], {"after": None, "start": "TRIM_HORIZON"}, 1 << 40
                )
                if not ended
            )
            one_pass = time.perf_counter() - began
            assert passed == kinesis_records
            argv = ["bench.py", "--JOB_NAME", f"k_{uuid.uuid4().hex[:4]}", "--job-bookmark-option",
                    "job-bookmark-enable", "--output_path", str(root / "k-out"), "--TempDir", str(root / "k-tmp")]  # fmt: skip
            connection = {
                "streamName": stream,
                "endpointUrl": moto.endpoint_url,
                "startingPosition": "TRIM_HORIZON",
                "classification": "json",
                "schema": SCHEMA,
            }
            counted = []
            kinesis_s = timed(lambda: counted.append(glue_style(spark, argv, "kinesis", connection)))
            assert counted == [kinesis_records], counted
        finally:
            spark.stop()
            broker.stop()
            moto.stop()

    summary = {
        "P9": {
            "value": round(p9, 3),
            "goal": ">= 0.9",
            "met": p9 >= 0.9,
            "baseline": "plain foreachBatch with the same batch function (count, then write Parquet)",
            "sparkmark_records_per_s": round(sm_rate),
            "plain_same_function_records_per_s": round(same_rate),
            "sparkmark_s": round(statistics.median(sm_times), 3),
            "plain_same_function_s": round(statistics.median(same_times), 3),
            "vs_spark_file_sink": round(sm_rate / plain_rate, 3),
            "spark_file_sink_records_per_s": round(plain_rate),
            "spark_file_sink_s": round(statistics.median(plain_times), 3),
        },
        "K1": {
            "value": round(kinesis_records / kinesis_s),
            "goal": "none: measured (records/s, Kinesis on moto)",
            "met": None,
            "records_per_s": round(kinesis_records / kinesis_s),
            "run_s": round(kinesis_s, 3),
            "one_getrecords_pass_s": round(one_pass, 3),
            "getrecords_passes_per_run": 2,
        },
    }
    print(json.dumps(summary, indent=2))
    record(summary, {"P9_records": kafka_records, "K1_records": kinesis_records})


if __name__ == "__main__":
    main()
