"""Apache Kafka as a streaming source, through Spark's own Kafka source
(``spark-sql-kafka-0-10``), with Glue's connection option names.

The records' values are parsed by ``classification`` (json, csv, avro) into columns.
A value that does not parse is kept aside in a hidden column with its topic, partition
and offset, for the micro-batch runner to quarantine (``runtime/batches.py``); without
a classification the frame has Spark's raw Kafka columns."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine.options import parse_bool
from ..errors import SourceError
from .base import ReadContext, SourceOutcome
from .streams import CORRUPT_COLUMN, ORIGIN_COLUMN, StreamSource, parse_values

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkmark.sources")

# Glue's option name → Spark's Kafka source option.
_RENAMED = {
    "topicName": "subscribe",
    "assign": "assign",
    "subscribePattern": "subscribePattern",
    "startingOffsets": "startingOffsets",
    "startingTimestamp": "startingTimestamp",
    "maxOffsetsPerTrigger": "maxOffsetsPerTrigger",
    "minPartitions": "minPartitions",
    "includeHeaders": "includeHeaders",
    "failOnDataLoss": "failOnDataLoss",
    "pollTimeoutMs": "kafkaConsumer.pollTimeoutMs",
    "numRetries": "fetchOffset.numRetries",
    "retryIntervalMs": "fetchOffset.retryIntervalMs",
    "groupIdPrefix": "groupIdPrefix",
}
# Options of the source itself, not of Spark's reader.
_OWN = {
    "connectionName",
    "connectionType",
    "bootstrap.servers",
    "bootstrapServers",
    "classification",
    "format",
    "inferSchema",
    "schema",
    "delimiter",
    "avroSchema",
    "sparkmark.schemaRegistry",  # the decoding of registry-encoded records (sources.registry_records)
    "addRecordTimestamp",
    "emitConsumerLagMetrics",
    "endingOffsets",
    "typeOfData",
}
# Passed to the Kafka consumer as they are (security, SASL, SSL), with Spark's prefix.
_CONSUMER_PREFIXES = ("security.", "sasl.", "ssl.", "client.")
SAMPLE_RECORDS = 1000  # values sampled from the topic to infer a schema


def accepts(name: str) -> bool:
    """Whether ``name`` is a Kafka connection option this source takes."""
    return name in _RENAMED or name in _OWN or name.startswith(("kafka.", *_CONSUMER_PREFIXES))


def from_glue_options(
    options: dict[str, Any], *, ctx: str | None, connections: Any = None, settings: Any = None
) -> KafkaSource:
    """The registry's factory: Glue's Kafka connection options; a ``connectionName``
    without bootstrap servers of its own is resolved through the job's connections."""
    bootstrap = ""
    name = options.get("connectionName")
    if name and not (options.get("bootstrap.servers") or options.get("bootstrapServers")):
        if connections is None:
            raise SourceError(f"connection {name!r} cannot be resolved outside a job")
        bootstrap = bootstrap_from_url(connections.resolve(str(name)).url)
    return KafkaSource(options=options, ctx=ctx, bootstrap=bootstrap)


def bootstrap_from_url(url: str) -> str:
    """A Kafka connection's url: ``kafka://h1:9092,h2:9092`` or ``h1:9092,h2:9092``."""
    return url.removeprefix("kafka://").removeprefix("kafka+ssl://").strip("/")


@dataclass
class KafkaSource(StreamSource):
    """Records of Kafka topics, from a checkpointed position onwards."""

    options: dict[str, Any] = field(default_factory=dict)
    ctx: str | None = None
    bootstrap: str = ""
    schema: str | None = None  # DDL of the value's fields, from a catalog table

    kind = "kafka"

    def __post_init__(self) -> None:
        opts = self.options
        self.bootstrap = self.bootstrap or str(
            opts.get("bootstrap.servers") or opts.get("bootstrapServers") or ""
        )
        if not self.bootstrap:
            raise SourceError(
                "a kafka source needs connection_options 'bootstrap.servers' or a 'connectionName' "
                "whose url names the brokers"
            )
        chosen = [k for k in ("topicName", "assign", "subscribePattern") if opts.get(k)]
        if len(chosen) != 1:
            raise SourceError(
                "a kafka source needs exactly one of 'topicName', 'assign' or 'subscribePattern'"
                + (f", got {', '.join(chosen)}" if chosen else "")
            )
        if opts.get("endingOffsets") not in (None, "", "latest"):
            raise SourceError(
                "endingOffsets applies to batch reads; a streaming job stops when caught up "
                "with `sparkmark run --until-caught-up`"
            )
        self.classification = str(opts.get("classification") or opts.get("format") or "").lower() or None
        if self.classification not in (None, "json", "csv", "avro"):
            raise SourceError(
                f"classification {self.classification!r} is not supported; use json, csv or avro"
            )

    def describe(self) -> str:
        opts = self.options
        what = opts.get("topicName") or opts.get("subscribePattern") or opts.get("assign")
        return f"kafka {self.bootstrap} {what}"

    @property
    def topics(self) -> str:
        return str(
            self.options.get("topicName")
            or self.options.get("subscribePattern")
            or self.options.get("assign")
        )

    def spark_options(self) -> dict[str, str]:
        opts = self.options
        spark_opts = {"kafka.bootstrap.servers": self.bootstrap, "startingOffsets": "latest"}
        for name, value in opts.items():
            if value is None or name in _OWN:
                continue
            if name in _RENAMED:
                spark_opts[_RENAMED[name]] = _text(value)
            elif name.startswith("kafka."):
                spark_opts[name] = _text(value)
            elif name.startswith(_CONSUMER_PREFIXES):
                spark_opts["kafka." + name] = _text(value)
            else:
                raise SourceError(f"kafka connection option {name!r} is not known")
        if "startingTimestamp" in spark_opts:
            spark_opts.pop("startingOffsets", None)
        return spark_opts

    def _value_schema(self, spark: SparkSession) -> str | None:
        opts = self.options
        given = opts.get("schema") or self.schema
        if given:
            return str(given)
        if self.classification in ("json", "csv") and parse_bool(
            "inferSchema", opts.get("inferSchema", False)
        ):
            return self._infer(spark)
        if self.classification in ("json", "csv"):
            raise SourceError(
                f"a {self.classification} kafka source needs 'inferSchema': 'true', a 'schema' "
                "(DDL), or a catalog table with columns"
            )
        return None

    def _infer(self, spark: SparkSession) -> str:
        """Glue's inferSchema: the schema of a sample of the values already in the topic."""
        reader = spark.read.format("kafka")
        for name, value in {**self.spark_options(), "startingOffsets": "earliest"}.items():
            if name in ("maxOffsetsPerTrigger", "startingTimestamp", "includeHeaders"):
                continue
            reader = reader.option(name, value)
        values = reader.load().selectExpr("CAST(value AS STRING) AS value").limit(SAMPLE_RECORDS)
        sample = [r.value for r in values.collect() if r.value is not None]
        if not sample:
            raise SourceError(
                f"cannot infer a schema: {self.describe()} holds no records yet; give a 'schema' "
                "(DDL) or read a catalog table"
            )
        data = spark.createDataFrame([(v,) for v in sample], "value string")
        if self.classification == "json":
            inferred = spark.read.json(data.rdd.map(lambda r: r.value))
        else:
            inferred = (
                spark.read.option("inferSchema", "true")
                .option("sep", str(self.options.get("delimiter", ",")))
                .csv(data.rdd.map(lambda r: r.value))  # type: ignore[arg-type]  # an RDD of lines is accepted
            )
        fields = [f for f in inferred.schema.fields if f.name != "_corrupt_record"]
        if not fields:
            raise SourceError(
                f"cannot infer a schema: no record of {self.describe()} is a {self.classification} record"
            )
        return ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)

    def check_reachable(self, timeout: float = 5.0) -> None:
        """One line now, rather than Spark's retries for minutes, when no broker of the
        bootstrap list accepts a connection."""
        problems = []
        for server in self.bootstrap.split(","):
            host, _, port = server.strip().rpartition(":")
            try:
                with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                    return
            except (OSError, ValueError) as exc:
                problems.append(f"{server.strip()}: {getattr(exc, 'strerror', None) or exc}")
        raise SourceError(f"no Kafka broker of {self.bootstrap} can be reached ({'; '.join(problems)})")

    def read(self, context: ReadContext) -> SourceOutcome:
        from pyspark.sql import functions as F

        self.check_reachable()
        spark = context.spark
        reader = spark.readStream.format("kafka")
        for name, value in self.spark_options().items():
            reader = reader.option(name, value)
        raw = reader.load()
        origin = F.struct(F.col("topic"), F.col("partition"), F.col("offset")).alias(ORIGIN_COLUMN)
        extra = []
        if parse_bool("addRecordTimestamp", self.options.get("addRecordTimestamp", False)):
            extra.append(F.col("timestamp").alias("__src_timestamp"))
        if parse_bool("includeHeaders", self.options.get("includeHeaders", False)):
            extra.append(F.col("headers"))
        schema = self._value_schema(spark)
        if self.classification is None:
            frame = raw
        else:
            frame = parse_values(
                raw.select(F.col("value"), *extra, origin),
                self.classification,
                schema,
                options=self.options,
            )
        metrics = {"type": "kafka", "bootstrap_servers": self.bootstrap, "topics": self.topics}
        return SourceOutcome(frame, None, metrics)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def options_from_table(parameters: Mapping[str, str]) -> dict[str, Any]:
    """A streaming catalog table's parameters as Kafka connection options."""
    names = {
        "topicName",
        "connectionName",
        "bootstrap.servers",
        "classification",
        "delimiter",
        "startingOffsets",
    }
    return {k: v for k, v in parameters.items() if k in names}


__all__ = ["CORRUPT_COLUMN", "KafkaSource", "bootstrap_from_url", "options_from_table"]
