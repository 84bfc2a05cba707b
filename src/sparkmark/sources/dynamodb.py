"""DynamoDB tables, read as Glue's DynamoDB connector reads them: a Scan of the whole
table in ``dynamodb.splits`` parallel segments (one Spark task each), paced to
``dynamodb.throughput.read.percent`` of the table's read capacity, with Glue's
connection option names. boto3 does the calls; an endpoint other than AWS's comes
from ``dynamodb.endpoint`` or, as for any boto3 client, ``AWS_ENDPOINT_URL_DYNAMODB``.

Items become records as Glue's DynamicFrame holds them: a number is an integer or a
double, a string set, number set or list an array, a map a struct, a binary value
binary (a binary nested in a map or list: its base64 text), and a field whose items
disagree on its type a choice. Field order is the first item's, then each new field
where it first appears.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..engine.models import CtxCommit
from ..errors import SourceError
from .base import ReadContext, SourceOutcome
from .dynamodb_access import (
    ENDPOINT,
    INPUT_TABLE,
    ROLE_ARN,
    ROLE_SESSION,
    STS_REGION,
    Access,
    Pace,
    capacity,
    describe,
    fraction,
    positive_int,
    resolve_access,
    table_name,
)  # fmt: skip
from .dynamodb_stream import Changes, Trimmed, changes_since, stream_of

log = logging.getLogger("sparkmark.sources")

TABLE = INPUT_TABLE
SPLITS = "dynamodb.splits"
READ_PERCENT = "dynamodb.throughput.read.percent"
OPTIONS = (TABLE, SPLITS, READ_PERCENT, ROLE_ARN, ROLE_SESSION, STS_REGION, ENDPOINT)
TEXT = "__sm_item"
ROWS = f"{TEXT} string, __sm_binary array<string>"
MAX_SPLITS = 1_000_000


def accepts(name: str) -> bool:
    from .dynamodb_export import OPTIONS as EXPORT_OPTIONS

    return name in OPTIONS or name in EXPORT_OPTIONS


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def plain(value: Any) -> Any:
    """A value boto3's deserializer gives, as JSON can hold it."""
    from boto3.dynamodb.types import Binary

    if isinstance(value, Decimal):
        return _number(value)
    if isinstance(value, Binary):
        return base64.b64encode(value.value).decode("ascii")
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=lambda v: (str(type(v)), v))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def item_json(item: Mapping[str, Any]) -> str:
    """One item in DynamoDB's wire form (``{"a": {"N": "1"}}``) as a JSON record."""
    from boto3.dynamodb.types import TypeDeserializer

    deserialize = TypeDeserializer().deserialize
    return json.dumps({name: plain(deserialize(value)) for name, value in item.items()})


def binary_fields(item: Mapping[str, Any]) -> set[str]:
    """The item's top-level attributes that hold a binary value."""
    return {name for name, value in item.items() if "B" in value}


def scan_segment(
    access: Access, table: str, segment: int, total: int, units_per_second: float
) -> Iterator[tuple[str, list[str]]]:
    """One Scan segment, page by page: each item's JSON and its binary attributes. The
    pages are paced so the segment consumes at most ``units_per_second``."""
    client, pace = access.client(), Pace(units_per_second)
    request: dict[str, Any] = {
        "TableName": table,
        "Segment": segment,
        "TotalSegments": total,
        "ReturnConsumedCapacity": "TOTAL",
    }
    while True:
        page = client.scan(**request)
        for item in page.get("Items", []):
            yield item_json(item), sorted(binary_fields(item))
        last = page.get("LastEvaluatedKey")
        if not last:
            return
        pace.spend(
            float((page.get("ConsumedCapacity") or {}).get("CapacityUnits") or 0.0)
        )  # before the next page
        request["ExclusiveStartKey"] = last


@dataclass
class DynamoDBSource:
    """A DynamoDB table read whole with parallel Scan segments."""

    options: dict[str, Any]
    ctx: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(k for k in self.options if k.startswith("dynamodb.") and not accepts(k))
        if unknown:
            raise SourceError(f"DynamoDB connection option {unknown[0]!r} is not supported")
        given = self.options.get(TABLE) or self.options.get("location")
        if not given:
            raise SourceError(f"a DynamoDB read needs connection option {TABLE!r}")
        self.table, arn_region = table_name(str(given))
        self.splits = positive_int(self.options, SPLITS, 1)
        if self.splits > MAX_SPLITS:
            raise SourceError(
                f"{SPLITS} must be at most {MAX_SPLITS:,} (DynamoDB's TotalSegments), not {self.splits}"
            )
        self.read_percent = fraction(self.options, READ_PERCENT, 0.5)
        self.region = str(self.options.get(STS_REGION) or arn_region or "") or None
        self.endpoint = str(self.options.get(ENDPOINT) or "") or None

    def describe(self) -> str:
        return f"DynamoDB table {self.table}"

    def _access(self) -> Access:
        return resolve_access(
            self.region, self.endpoint, self.options.get(ROLE_ARN), self.options.get(ROLE_SESSION)
        )

    def read_units(self, described: Mapping[str, Any]) -> float:
        """The read capacity the whole read may use, per second."""
        return capacity(described, "Read") * self.read_percent

    def read(self, context: ReadContext) -> SourceOutcome:
        access = self._access()
        bookmarked = context.bookmark_ctx is not None
        described = describe(access, self.table)
        stream = stream_of(described) if bookmarked else None
        changes: Changes | None = None
        positions: dict[str, str] = {}
        if bookmarked and stream is None:
            log.info(
                "%s has no stream with new images: read whole, as Glue reads it (a bookmark that "
                "reads only changes needs the table's stream, StreamViewType NEW_IMAGE or "
                "NEW_AND_OLD_IMAGES)",
                self.describe(),
            )
        elif stream is not None:
            changes, positions = self._from_stream(access, stream, context)
        if changes is None:
            text, items = self._scan(context, access, described)
            deleted = 0
        else:
            found = [(item_json(i), sorted(binary_fields(i))) for i in changes.images.values()]
            text = context.spark.createDataFrame(found, ROWS)
            items, deleted = len(found), len(changes.deleted)
            positions = changes.positions
            if deleted:
                log.warning(
                    "%s: %d items were deleted since the bookmark's last run; they are counted "
                    "(the run's metric 'deleted') and are not in the frame, which holds the "
                    "items added or changed",
                    self.describe(),
                    deleted,
                )
        whole = changes is None
        metrics = {"type": "dynamodb", "table": self.table, "segments": self.splits, "items": items,
                   "deleted": deleted, "whole": whole}  # fmt: skip
        commit = None
        if context.commit_state and bookmarked:
            state = {
                "type": "dynamodb",
                "table": self.table,
                "stream": stream,
                "shards": positions if stream is not None else None,
                "last_run": {"run_id": context.run_id, "items": items, "deleted": deleted, "whole": whole},
            }
            commit = CtxCommit(ctx=self.ctx or str(context.bookmark_ctx), state=state)
        return SourceOutcome(_records(text), commit, metrics)

    def _from_stream(self, access: Access, stream: str, context: ReadContext) -> tuple[Changes | None, dict]:
        """The changes since the bookmark (None: read the table whole) and, for a whole
        read, where the stream ends now, which the next run reads from."""
        client = access.client("dynamodbstreams")
        lower, upper = context.previous, None
        bounds = context.range_states()
        if bounds is not None:
            lower, upper = bounds[0] or {}, (bounds[1] or {}).get("shards") or {}
        if lower.get("stream") == stream and isinstance(lower.get("shards"), dict):
            try:
                return changes_since(client, stream, lower["shards"], upper), {}
            except Trimmed as gone:
                log.warning(
                    "%s: the bookmark's place in the stream (shard %s) is older than the stream "
                    "keeps; the table is read whole, and deletions since the last run cannot be counted",
                    self.describe(),
                    gone,
                )
        elif lower.get("shards"):
            log.warning(
                "%s: its stream is not the one the bookmark read; the table is read whole", self.describe()
            )
        return None, changes_since(client, stream, {}, upper).positions

    def _scan(self, context: ReadContext, access: Access, described: Mapping[str, Any]) -> tuple[Any, int]:
        per_segment = self.read_units(described) / self.splits
        table, total = self.table, self.splits

        def scan(segments: Iterable[int]) -> Iterator[tuple[str, list[str]]]:
            for segment in segments:
                yield from scan_segment(access, table, segment, total, per_segment)

        spark = context.spark
        try:
            tasks = spark.sparkContext
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            raise SourceError(
                f"{self.describe()}: the Scan connector runs its segments as Spark tasks of a classic "
                "session, and this is a Spark Connect session; read the table through the export "
                "connector (dynamodb.export) instead"
            ) from None
        items = tasks.parallelize(range(total), total).mapPartitions(scan)
        # Scanned once: the schema, the binary fields and the records all read this copy,
        # so they agree, and the table is not scanned again by the write.
        text = spark.createDataFrame(items, ROWS).localCheckpoint(eager=True)
        return text, text.count()


def _records(text: Any) -> Any:
    """Items as JSON records, typed as a DynamicFrame holds them; a top-level binary
    attribute is binary again."""
    from pyspark.sql import functions as F

    from .json_records import parse_records

    binary = {r[0] for r in text.select(F.explode("__sm_binary")).distinct().collect()}
    records, _ = parse_records(text, TEXT, [])  # every item is a JSON object: none is bad
    for name in sorted(binary & set(records.columns)):
        column = F.col(f"`{name}`")
        records = records.withColumn(name, F.unbase64(column) if _is_text(records, name) else column)
    return records


def _is_text(frame: Any, name: str) -> bool:
    from pyspark.sql.types import StringType

    return isinstance(frame.schema[name].dataType, StringType)


def from_glue_options(
    options: dict[str, Any], *, ctx: str | None, connections: Any = None, settings: Any = None
) -> Any:
    """The registry's factory: Glue's DynamoDB connection options (or a catalog table's
    parameters, its ``location`` the table's name or ARN): the export connector with
    ``dynamodb.export``, else the Scan connector."""
    from .dynamodb_export import EXPORT, DynamoDBExportSource

    given = {k: v for k, v in options.items() if k.startswith("dynamodb.") or k == "location"}
    if given.get(EXPORT):
        return DynamoDBExportSource(given, ctx)
    return DynamoDBSource(given, ctx)
