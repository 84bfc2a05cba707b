"""Amazon Kinesis Data Streams as a streaming source: a Spark Python data source over
boto3, with Glue's connection option names.

Open-source Spark has no Kinesis source. This one keeps, per shard, the sequence number
of the last record a batch ends with (the offset Spark writes in its checkpoint, so a
replayed batch reads the same records). Kinesis tells no shard's newest sequence number,
so planning a batch reads ahead from where the last one ended, up to
``maxFetchRecordsPerShard`` records per shard; the batch then reads that range. A shard
closed by a split or a merge is read to its end (``GetRecords`` returns no next iterator)
before its children are read, so each key's records stay in order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .. import spark_lines
from ..errors import SourceError, aws_error
from .base import ReadContext, SourceOutcome
from .streams import ORIGIN_COLUMN, StreamSource, parse_values

log = logging.getLogger("sparkmark.sources")

FORMAT = "sparkmark_kinesis"
SCHEMA = (
    "data binary, streamName string, partitionKey string, sequenceNumber string, "
    "approximateArrivalTimestamp timestamp, shardId string"
)
READER_OPTIONS = (
    "start",
    "region",
    "maxFetchRecordsPerShard",
    "streamARN",
    "streamName",
    "endpointUrl",
    "aws.accessKeyId",
    "aws.secretAccessKey",
    "aws.sessionToken",
)
DEFAULT_MAX_PER_SHARD = 100_000  # Glue's maxFetchRecordsPerShard
PAGE = 10_000  # GetRecords' largest page
POSITIONS = ("TRIM_HORIZON", "EARLIEST", "LATEST")
_OWN = {
    "streamARN",
    "streamName",
    "endpointUrl",
    "startingPosition",
    "startingTimestamp",
    "maxFetchRecordsPerShard",
    "classification",
    "format",
    "inferSchema",
    "schema",
    "delimiter",
    "avroSchema",
    "sparkmark.schemaRegistry",  # the decoding of registry-encoded records (sources.registry_records)
    "regionName",
    "addRecordTimestamp",
    "awsSTSRoleARN",
    "awsSTSSessionName",
    "emitConsumerLagMetrics",
    "typeOfData",
}


def accepts(name: str) -> bool:
    """Whether ``name`` is a Kinesis connection option this source takes."""
    return name in _OWN or name.startswith("kinesis.")


# ---------------------------------------------------------------- offsets (pure logic)


def starting_spec(position: str, now_ms: int | None = None) -> str:
    """Glue's startingPosition as where a shard found in a fresh query starts:
    ``TRIM_HORIZON``, or ``AT_TIMESTAMP:<ms>`` (LATEST is the time the query started,
    so a replay reads the same records)."""
    value = str(position or "LATEST").strip()
    upper = value.upper()
    if upper in ("TRIM_HORIZON", "EARLIEST"):
        return "TRIM_HORIZON"
    if upper == "LATEST":
        return f"AT_TIMESTAMP:{now_ms if now_ms is not None else int(time.time() * 1000)}"
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(
            f"startingPosition must be TRIM_HORIZON, LATEST, EARLIEST or an ISO timestamp, got {position!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return f"AT_TIMESTAMP:{int(moment.timestamp() * 1000)}"


def merge_shards(
    offsets: Mapping[str, Any], shards: list[dict[str, Any]], fresh_start: str
) -> dict[str, Any]:
    """The offsets with every listed shard in them. A shard first seen in a running query
    is a child of a split or merge, or was added: it is read from its beginning. In a
    fresh query (no offsets yet) shards start at ``fresh_start``; a shard already closed
    then, when starting from now, has nothing to give."""
    known = dict(offsets.get("shards") or {})
    fresh = not known
    for shard in shards:
        sid = shard["ShardId"]
        if sid in known:
            continue
        parents = [p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId")) if p]
        closed = "EndingSequenceNumber" in (shard.get("SequenceNumberRange") or {})
        start = fresh_start if fresh else "TRIM_HORIZON"
        known[sid] = {
            "after": None,
            "start": start,
            "done": fresh and closed and start.startswith("AT_TIMESTAMP"),
            "parents": parents,
        }
    return {"shards": dict(sorted(known.items()))}


def readable(offsets: Mapping[str, Any], shard_id: str) -> bool:
    """A shard is read once every parent it has in the offsets is read to its end."""
    shards = offsets.get("shards") or {}
    entry = shards.get(shard_id) or {}
    if entry.get("done"):
        return False
    return all(shards[p].get("done") for p in entry.get("parents") or [] if p in shards)


def behind(start: Mapping[str, Any], end: Mapping[str, Any]) -> bool:
    """Whether a shard's range from ``start`` to ``end`` holds records."""
    return end.get("after") is not None and end.get("after") != start.get("after")


# ---------------------------------------------------------------- AWS calls


def _client(options: Mapping[str, Any]):
    import boto3

    kwargs: dict[str, Any] = {"region_name": options.get("region") or "us-east-1"}
    if options.get("endpointUrl"):
        kwargs["endpoint_url"] = options["endpointUrl"]
    if options.get("aws.accessKeyId"):
        kwargs["aws_access_key_id"] = options["aws.accessKeyId"]
        kwargs["aws_secret_access_key"] = options.get("aws.secretAccessKey")
        if options.get("aws.sessionToken"):
            kwargs["aws_session_token"] = options["aws.sessionToken"]
    return boto3.client("kinesis", **kwargs)


def _stream(options: Mapping[str, Any]) -> dict[str, str]:
    if options.get("streamARN"):
        return {"StreamARN": str(options["streamARN"])}
    return {"StreamName": str(options["streamName"])}


def list_shards(client, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    shards: list[dict[str, Any]] = []
    response = client.list_shards(**_stream(options))
    while True:
        shards.extend(response.get("Shards") or [])
        token = response.get("NextToken")
        if not token:
            return shards
        response = client.list_shards(NextToken=token)


def _iterator(client, options: Mapping[str, Any], shard_id: str, entry: Mapping[str, Any]) -> str:
    args: dict[str, Any] = {**_stream(options), "ShardId": shard_id}
    if entry.get("after") is not None:
        args.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=entry["after"])
    elif str(entry.get("start", "")).startswith("AT_TIMESTAMP:"):
        ms = int(str(entry["start"]).split(":", 1)[1])
        args.update(ShardIteratorType="AT_TIMESTAMP", Timestamp=datetime.fromtimestamp(ms / 1000, tz=UTC))
    else:
        args.update(ShardIteratorType="TRIM_HORIZON")
    return client.get_shard_iterator(**args)["ShardIterator"]


def fetch(
    client,
    options: Mapping[str, Any],
    shard_id: str,
    entry: Mapping[str, Any],
    limit: int,
    until: str | None = None,
) -> Iterator[tuple[dict[str, Any] | None, bool]]:
    """Records of a shard from ``entry``'s position, oldest first, at most ``limit``, up
    to sequence number ``until`` when given. Yields ``(record, False)``; at the shard's
    end (closed and read through) yields ``(None, True)``. An expired iterator is taken
    again from the last record read."""
    iterator = _iterator(client, options, shard_id, entry)
    last = entry.get("after")
    count, empty_pages = 0, 0
    stop = int(until) if until is not None else None
    while count < limit:
        try:
            page = client.get_records(
                ShardIterator=iterator,
                Limit=min(PAGE, limit - count),
                **({"StreamARN": options["streamARN"]} if options.get("streamARN") else {}),
            )
        except client.exceptions.ExpiredIteratorException:
            iterator = _iterator(client, options, shard_id, {**entry, "after": last})
            continue
        for record in page.get("Records") or []:
            if stop is not None and int(record["SequenceNumber"]) > stop:
                return
            last = record["SequenceNumber"]
            count += 1
            yield record, False
            if stop is not None and int(last) >= stop:
                return
        following = page.get("NextShardIterator")
        if following is None:
            yield None, True
            return
        if not page.get("Records"):
            empty_pages += 1
            if page.get("MillisBehindLatest", 0) == 0 or empty_pages >= 5:
                return
        else:
            empty_pages = 0
        iterator = following


# ---------------------------------------------------------------- the Spark data source


try:  # the Python data source API (PySpark 4); imported here so the module loads without it
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
except ImportError:  # pragma: no cover - PySpark without Python data sources
    DataSource = object  # type: ignore[assignment,misc]
    DataSourceStreamReader = object  # type: ignore[assignment,misc]
    InputPartition = object  # type: ignore[assignment,misc]


@dataclass
class ShardRange(InputPartition):
    shard_id: str
    start: dict[str, Any] = field(default_factory=dict)
    until: str = ""


class KinesisDataSource(DataSource):
    """``spark.readStream.format("sparkmark_kinesis")``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema):
        # Spark hands the options over with their names in lower case.
        given = {str(k).lower(): v for k, v in dict(self.options).items()}
        return KinesisStreamReader(
            {name: given[name.lower()] for name in READER_OPTIONS if name.lower() in given}
        )


class KinesisStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, Any]):
        self.options = options
        self.limit = int(options.get("maxFetchRecordsPerShard") or DEFAULT_MAX_PER_SHARD)
        self.position: dict[str, Any] | None = None  # where the next batch starts

    def initialOffset(self) -> dict:
        client = _client(self.options)
        return merge_shards({}, list_shards(client, self.options), str(self.options["start"]))

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """Where the next batch ends: each readable shard read ahead from its position.
        PySpark 4.1 calls this without arguments; later versions pass the batch's start
        (and a read limit), which is used when given."""
        client = _client(self.options)
        base = start if start is not None else (self.position or self.initialOffset())
        offsets = merge_shards(base, list_shards(client, self.options), str(self.options["start"]))
        shards = offsets["shards"]
        # Parents first: a child becomes readable in the same call once its parents end.
        for shard_id in _parents_first(shards):
            if not readable(offsets, shard_id):
                continue
            entry = dict(shards[shard_id])
            for record, ended in fetch(client, self.options, shard_id, entry, self.limit):
                if ended:
                    entry["done"] = True
                else:
                    entry["after"] = record["SequenceNumber"]  # type: ignore[index]
            shards[shard_id] = entry
        self.position = offsets
        return offsets

    def partitions(self, start: dict, end: dict) -> list:
        self.position = end
        begin = start.get("shards") or {}
        ranges = []
        for shard_id, entry in (end.get("shards") or {}).items():
            before = begin.get(shard_id) or {"after": None, "start": entry.get("start", "TRIM_HORIZON")}
            if behind(before, entry):
                ranges.append(ShardRange(shard_id, dict(before), str(entry["after"])))
        return ranges

    def read(self, partition) -> Iterator[tuple]:
        client = _client(self.options)
        stream = str(
            self.options.get("streamName") or str(self.options.get("streamARN", "")).rsplit("/", 1)[-1]
        )
        for record, ended in fetch(
            client, self.options, partition.shard_id, partition.start, 1 << 62, partition.until
        ):
            if ended or record is None:
                return
            yield (
                bytes(record["Data"]),
                stream,
                record.get("PartitionKey"),
                record["SequenceNumber"],
                record.get("ApproximateArrivalTimestamp"),
                partition.shard_id,
            )

    def commit(self, end: dict) -> None:
        self.position = end  # Kinesis keeps no consumer position: the checkpoint is it


def _parents_first(shards: Mapping[str, Any]) -> list[str]:
    order: list[str] = []
    seen: set[str] = set()

    def visit(sid: str) -> None:
        if sid in seen:
            return
        seen.add(sid)
        for parent in shards[sid].get("parents") or []:
            if parent in shards:
                visit(parent)
        order.append(sid)

    for sid in sorted(shards):
        visit(sid)
    return order


# ---------------------------------------------------------------- the source


def _region_of(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[3] if len(parts) > 5 and parts[0] == "arn" and parts[2] == "kinesis" else None


@dataclass
class KinesisSource(StreamSource):
    """Records of a Kinesis data stream, from a checkpointed position onwards."""

    options: dict[str, Any] = field(default_factory=dict)
    ctx: str | None = None
    settings: Any = None

    kind = "kinesis"
    reads_ahead = True

    def __post_init__(self) -> None:
        opts = self.options
        if not opts.get("streamARN") and not opts.get("streamName"):
            raise SourceError("a kinesis source needs 'streamARN' or 'streamName'")
        if opts.get("streamARN") and _region_of(str(opts["streamARN"])) is None:
            raise SourceError(f"streamARN {opts['streamARN']!r} is not a Kinesis stream ARN")
        if opts.get("streamARN") and opts.get("streamName"):  # as AWS's samples give both: they must agree
            named = str(opts["streamARN"]).rsplit("/", 1)[-1]
            if named != str(opts["streamName"]):
                raise SourceError(
                    f"streamARN {opts['streamARN']!r} names stream {named!r}, not streamName {opts['streamName']!r}"
                )
        unknown = sorted(k for k in opts if k not in _OWN and not k.startswith("kinesis."))
        if unknown:
            raise SourceError(f"kinesis connection option(s) {', '.join(unknown)} not known")
        try:
            limit = int(opts.get("maxFetchRecordsPerShard", DEFAULT_MAX_PER_SHARD))
        except (TypeError, ValueError):
            limit = 0
        if limit < 1:
            raise SourceError(
                f"maxFetchRecordsPerShard must be a positive number, got {opts.get('maxFetchRecordsPerShard')!r}"
            )
        position = opts.get("startingTimestamp") or opts.get("startingPosition") or "LATEST"
        self.start = starting_spec(str(position))
        self.classification = str(opts.get("classification") or opts.get("format") or "").lower() or None
        if self.classification not in (None, "json", "csv", "avro"):
            raise SourceError(
                f"classification {self.classification!r} is not supported; use json, csv or avro"
            )

    @property
    def stream(self) -> str:
        return str(self.options.get("streamName") or self.options.get("streamARN"))

    def describe(self) -> str:
        return f"kinesis {self.stream}"

    def reader_options(self) -> dict[str, str]:
        opts = self.options
        settings = self.settings
        region = (
            _region_of(str(opts.get("streamARN") or ""))
            or opts.get("regionName")
            or (settings.aws_region if settings is not None else None)
            or "us-east-1"
        )
        out = {
            "start": self.start,
            "region": str(region),
            "maxFetchRecordsPerShard": str(opts.get("maxFetchRecordsPerShard", DEFAULT_MAX_PER_SHARD)),
        }
        for name in ("streamARN", "streamName", "endpointUrl"):
            if opts.get(name):
                out[name] = str(opts[name])
        if settings is not None and settings.aws_access_key_id and settings.aws_secret_access_key:
            # Named so that Spark redacts them wherever it prints a plan's options.
            out["aws.accessKeyId"] = settings.aws_access_key_id
            out["aws.secretAccessKey"] = settings.aws_secret_access_key.get_secret_value()
            if settings.aws_session_token:
                out["aws.sessionToken"] = settings.aws_session_token.get_secret_value()
        return out

    def _value_schema(self, spark) -> str | None:
        from ..engine.options import parse_bool

        opts = self.options
        if opts.get("schema"):
            return str(opts["schema"])
        if self.classification in ("json", "csv") and parse_bool(
            "inferSchema", opts.get("inferSchema", False)
        ):
            return self._infer(spark)
        if self.classification in ("json", "csv"):
            raise SourceError(
                f"a {self.classification} kinesis source needs 'inferSchema': 'true' or a 'schema' (DDL)"
            )
        return None

    def _infer(self, spark) -> str:
        """Glue's inferSchema: the schema of the records the stream holds now (a sample
        from the start of each shard)."""
        options = self.reader_options()
        client = _client(options)
        sample: list[str] = []
        for shard in list_shards(client, options):
            entry = {"after": None, "start": "TRIM_HORIZON"}
            for record, ended in fetch(client, options, shard["ShardId"], entry, 1000):
                if not ended and record is not None:
                    sample.append(bytes(record["Data"]).decode("utf-8", errors="replace"))
        if not sample:
            raise SourceError(
                f"cannot infer a schema: {self.describe()} holds no records yet; give a 'schema' (DDL)"
            )
        data = spark.createDataFrame([(v,) for v in sample], "value string")
        if self.classification == "json":
            inferred = spark.read.json(data.rdd.map(lambda r: r.value))
        else:
            inferred = spark.read.option("inferSchema", "true").csv(data.rdd.map(lambda r: r.value))
        fields = [f for f in inferred.schema.fields if f.name != "_corrupt_record"]
        if not fields:
            raise SourceError(
                f"cannot infer a schema: no record of {self.describe()} is a {self.classification} record"
            )
        return ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)

    def read(self, context: ReadContext) -> SourceOutcome:
        from pyspark.sql import functions as F

        spark = context.spark
        if not spark_lines.PYTHON_DATA_SOURCES:
            raise SourceError(spark_lines.needs_spark4(f"reading {self.describe()} (a Python data source)"))
        spark.dataSource.register(KinesisDataSource)
        reader = spark.readStream.format(FORMAT)
        options = self.reader_options()
        try:  # fail now, in one line, on a stream that cannot be reached or does not exist
            list_shards(_client(options), options)
        except Exception as exc:  # noqa: BLE001 - botocore's errors, said in one line
            raise SourceError(f"cannot read {self.describe()}: {aws_error(exc)}") from None
        for name, value in options.items():
            reader = reader.option(name, value)
        raw = reader.load()
        origin = F.struct(
            F.col("streamName").alias("stream"),
            F.col("shardId").alias("shard"),
            F.col("sequenceNumber").alias("sequence"),
        ).alias(ORIGIN_COLUMN)
        extra = []
        from ..engine.options import parse_bool

        if parse_bool("addRecordTimestamp", self.options.get("addRecordTimestamp", False)):
            extra.append(F.col("approximateArrivalTimestamp").alias("__src_timestamp"))
        schema = self._value_schema(spark)
        if self.classification is None:
            frame = raw
        else:
            frame = parse_values(
                raw.select(F.col("data").alias("value"), *extra, origin),
                self.classification,
                schema,
                self.options,
            )
        metrics = {"type": "kinesis", "stream": self.stream}
        return SourceOutcome(frame, None, metrics)


__all__ = ["KinesisDataSource", "KinesisSource"]


def from_glue_options(
    options: dict[str, Any], *, ctx: str | None, connections: Any = None, settings: Any = None
) -> KinesisSource:
    """The registry's factory: Glue's Kinesis connection options."""
    return KinesisSource(options=options, ctx=ctx, settings=settings)
