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
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..engine.models import CtxCommit
from ..errors import SourceError
from .base import ReadContext, SourceOutcome
from .dynamodb_stream import Changes, Trimmed, changes_since, stream_of

log = logging.getLogger("sparkmark.sources")

TABLE = "dynamodb.input.tableName"
SPLITS = "dynamodb.splits"
READ_PERCENT = "dynamodb.throughput.read.percent"
ROLE_ARN = "dynamodb.sts.roleArn"
ROLE_SESSION = "dynamodb.sts.roleSessionName"
REGION = "dynamodb.region"
ENDPOINT = "dynamodb.endpoint"
OPTIONS = (TABLE, SPLITS, READ_PERCENT, ROLE_ARN, ROLE_SESSION, REGION, ENDPOINT)
# What Glue takes as an on-demand table's read capacity when it paces a read.
ON_DEMAND_READ_UNITS = 40000
ON_DEMAND_WRITE_UNITS = 40000
TEXT = "__sm_item"
ROWS = f"{TEXT} string, __sm_binary array<string>"


def accepts(name: str) -> bool:
    return name in OPTIONS


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


def table_name(value: str) -> tuple[str, str | None]:
    """A table's name and, for an ARN (``arn:aws:dynamodb:region:account:table/name``),
    its region."""
    if value.startswith("arn:"):
        parts = value.split(":", 5)
        if len(parts) == 6 and parts[5].startswith("table/"):
            return parts[5].split("/", 2)[1], parts[3] or None
        raise SourceError(f"{TABLE} {value!r} is not a DynamoDB table ARN (arn:aws:dynamodb:…:table/NAME)")
    return value, None


@dataclass(frozen=True)
class Access:
    """How the tasks reach the table: region, endpoint and, for an assumed role, its
    temporary credentials (kept in memory only)."""

    region: str | None
    endpoint: str | None
    credentials: dict[str, str] = field(default_factory=dict, repr=False)
    streams_endpoint: str | None = None  # the table's stream (DynamoDB Streams' API)

    def client(self, service: str = "dynamodb") -> Any:
        import boto3

        kwargs: dict[str, Any] = {}
        if self.region:
            kwargs["region_name"] = self.region
        endpoint = {"dynamodb": self.endpoint, "dynamodbstreams": self.streams_endpoint}.get(service)
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        return boto3.client(service, **kwargs, **self.credentials)


def _assume(region: str | None, role_arn: str, session_name: str) -> dict[str, str]:
    import boto3

    sts = boto3.client("sts", **({"region_name": region} if region else {}))
    found = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name)["Credentials"]
    return {
        "aws_access_key_id": found["AccessKeyId"],
        "aws_secret_access_key": found["SecretAccessKey"],
        "aws_session_token": found["SessionToken"],
    }


def resolve_access(region: str | None, endpoint: str | None, role: Any = None, session: Any = None) -> Access:
    """Resolved on the driver, as boto3 resolves them (options, then its environment and
    config): the tasks' Python workers may not share this process's environment, so
    they are given the region, endpoint and credentials. A role (``dynamodb.sts.roleArn``)
    is assumed through STS's API."""
    import boto3

    credentials: dict[str, str] = {}
    if role:
        name = str(session or "glue-dynamodb-sts")
        try:
            credentials = _assume(region, str(role), name)
        except Exception as exc:  # noqa: BLE001 - one line naming the role
            raise SourceError(f"{ROLE_ARN} {role!r} could not be assumed: {aws_error(exc)}") from None
    else:
        found = boto3.session.Session().get_credentials()
        frozen = found.get_frozen_credentials() if found is not None else None
        if frozen is not None:
            credentials = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
            if frozen.token:
                credentials["aws_session_token"] = frozen.token
    given = Access(region, endpoint, credentials, endpoint)
    probe, streams = given.client(), given.client("dynamodbstreams")
    return Access(probe.meta.region_name, probe.meta.endpoint_url, credentials, streams.meta.endpoint_url)


def describe(access: Access, table: str) -> dict[str, Any]:
    """The table's description, or one line naming the table."""
    try:
        return dict(access.client().describe_table(TableName=table)["Table"])
    except Exception as exc:  # noqa: BLE001 - one line naming the table
        raise SourceError(f"DynamoDB table {table!r} cannot be reached: {aws_error(exc)}") from None


def capacity(access: Access, table: str, which: str) -> float:
    """The table's ``which`` ("Read" or "Write") capacity units per second: provisioned,
    or what Glue takes for an on-demand table."""
    described = describe(access, table)
    provisioned = float((described.get("ProvisionedThroughput") or {}).get(f"{which}CapacityUnits") or 0)
    on_demand = (described.get("BillingModeSummary") or {}).get("BillingMode") == "PAY_PER_REQUEST"
    if on_demand or provisioned <= 0:
        return float(ON_DEMAND_READ_UNITS if which == "Read" else ON_DEMAND_WRITE_UNITS)
    return provisioned


def positive_int(options: Mapping[str, Any], name: str, default: int) -> int:
    raw = options.get(name, default)
    try:
        value = int(str(raw))
    except ValueError:
        value = 0
    if value < 1:
        raise SourceError(f"{name} must be a whole number of at least 1, not {raw!r}")
    return value


def fraction(options: Mapping[str, Any], name: str, default: float) -> float:
    raw = options.get(name, default)
    try:
        value = float(str(raw))
    except ValueError:
        value = 0.0
    if not 0.1 <= value <= 1.5:
        raise SourceError(f"{name} must be a number from 0.1 to 1.5, not {raw!r}")
    return value


def scan_segment(
    access: Access, table: str, segment: int, total: int, units_per_second: float
) -> Iterator[tuple[str, list[str]]]:
    """One Scan segment, page by page: each item's JSON and its binary attributes. The
    pages are paced so the segment consumes at most ``units_per_second``."""
    client = access.client()
    began = time.monotonic()
    consumed = 0.0
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
        consumed += float((page.get("ConsumedCapacity") or {}).get("CapacityUnits") or 0.0)
        ahead = consumed / units_per_second - (time.monotonic() - began)
        if ahead > 0:
            time.sleep(ahead)
        last = page.get("LastEvaluatedKey")
        if not last:
            return
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
        self.read_percent = fraction(self.options, READ_PERCENT, 0.5)
        self.region = str(self.options.get(REGION) or arn_region or "") or None
        self.endpoint = str(self.options.get(ENDPOINT) or "") or None

    def describe(self) -> str:
        return f"DynamoDB table {self.table}"

    def _access(self) -> Access:
        return resolve_access(
            self.region, self.endpoint, self.options.get(ROLE_ARN), self.options.get(ROLE_SESSION)
        )

    def read_units(self, access: Access) -> float:
        """The read capacity the whole read may use, per second."""
        return capacity(access, self.table, "Read") * self.read_percent

    def read(self, context: ReadContext) -> SourceOutcome:
        access = self._access()
        bookmarked = context.bookmark_ctx is not None
        stream = stream_of(describe(access, self.table)) if bookmarked else None
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
            text, items = self._scan(context, access)
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

    def _scan(self, context: ReadContext, access: Access) -> tuple[Any, int]:
        per_segment = self.read_units(access) / self.splits
        table, total = self.table, self.splits

        def scan(segments: Iterable[int]) -> Iterator[tuple[str, list[str]]]:
            for segment in segments:
                yield from scan_segment(access, table, segment, total, per_segment)

        spark = context.spark
        items = spark.sparkContext.parallelize(range(total), total).mapPartitions(scan)
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


def aws_error(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        error = response["Error"]
        return f"{error.get('Code')}: {error.get('Message')}"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def from_glue_options(
    options: dict[str, Any], *, ctx: str | None, connections: Any = None, settings: Any = None
) -> DynamoDBSource:
    """The registry's factory: Glue's DynamoDB connection options (or a catalog table's
    parameters, its ``location`` the table's name or ARN)."""
    return DynamoDBSource(
        {k: v for k, v in options.items() if k.startswith("dynamodb.") or k == "location"}, ctx
    )
