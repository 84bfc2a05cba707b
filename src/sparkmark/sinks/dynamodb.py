"""DynamoDB tables as a write target, with Glue's connection options
(``dynamodb.output.tableName``, ``dynamodb.throughput.write.percent``,
``dynamodb.output.numParallelTasks``, ``dynamodb.output.retry``).

Items are keyed, so a write is a put of each record under its key: putting the same
record twice leaves the table as putting it once. That makes a write repeatable, and
the run's write path makes it exactly-once: with a ctx the records are staged (as
JSON lines, under the run's temporary folder) and put only after the bookmark commits;
a run killed while putting them is finished by the next start, which puts them all
again. A run that never commits puts nothing.

Records are routed to the writer threads by their key, so two records with the same key
in one write are put in the frame's order, by one thread: the last one is the item the
table keeps. A null field is not written (a DynamicFrame's missing field), as Glue's
DynamoDB writer leaves it out. Throttling and unprocessed items are retried with
exponential backoff; a write that runs out of retries fails in one line and stays
committed, so the next start puts it again: no item is dropped.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

from fsspec.core import url_to_fs

from ..engine.faults import crash_point
from ..engine.models import OutputKind, OutputRecord, OutputState
from ..errors import SinkError, SourceError, aws_code, aws_error
from ..sources import dynamodb_access as ddb

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame

    from ..engine.store import StateStore

log = logging.getLogger("sparkmark.sinks")

TABLE = "dynamodb.output.tableName"
WRITE_PERCENT = "dynamodb.throughput.write.percent"
PARALLEL = "dynamodb.output.numParallelTasks"
RETRY = "dynamodb.output.retry"
OPTIONS = (
    TABLE,
    WRITE_PERCENT,
    PARALLEL,
    RETRY,
    ddb.ROLE_ARN,
    ddb.ROLE_SESSION,
    ddb.STS_REGION,
    ddb.ENDPOINT,
)
BATCH = 25  # BatchWriteItem's limit
BACKOFF_S = 0.05
BACKOFF_MAX_S = 5.0
RETRIED = ("ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
           "InternalServerError", "ServiceUnavailable")  # fmt: skip


def accepts(name: str) -> bool:
    return name in OPTIONS


def item_of(line: str, binary: frozenset[str]) -> dict[str, Any]:
    """A staged record (a JSON object, as Spark writes a row) as an item in DynamoDB's wire
    form. Numbers keep their digits; a top-level binary field (base64 in the JSON) is
    binary again; nulls are left out."""
    import base64

    from boto3.dynamodb.types import TypeSerializer

    serialize = TypeSerializer().serialize
    record = json.loads(line, parse_float=Decimal, parse_int=Decimal)
    item: dict[str, Any] = {}
    for name, value in record.items():
        if value is None:
            continue
        given = base64.b64decode(value) if name in binary and isinstance(value, str) else value
        try:
            item[name] = serialize(given)
        except (TypeError, ValueError) as exc:
            raise SinkError(f"field {name!r} cannot be written to DynamoDB: {exc}") from None
    return item


def key_of(item: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    """The item's key as text (routing, and dropping an earlier record of the same key
    from a batch)."""
    return json.dumps([item.get(k) for k in keys], sort_keys=True)


def lane(key: str, lanes: int) -> int:
    return zlib.crc32(key.encode()) % lanes


def _units(response: Mapping[str, Any], items: list[dict[str, Any]]) -> float:
    found = sum(float(c.get("CapacityUnits") or 0) for c in response.get("ConsumedCapacity") or [])
    if found:
        return found
    return float(sum(max(1, -(-len(json.dumps(i)) // 1024)) for i in items))  # 1 unit per KB


def put_batch(client: Any, table: str, items: list[dict[str, Any]], retries: int, pace: ddb.Pace) -> None:
    """Put ``items`` (at most 25, distinct keys), retrying throttling and unprocessed
    items with exponential backoff: ``retries`` tries in a row without progress, then one
    line naming the table."""
    pending = [{"PutRequest": {"Item": i}} for i in items]
    failures, wait = 0, BACKOFF_S
    while pending:
        try:
            response = client.batch_write_item(RequestItems={table: pending}, ReturnConsumedCapacity="TOTAL")
        except Exception as exc:  # noqa: BLE001 - throttling is retried, the rest is one line
            code = aws_code(exc)
            if code not in RETRIED:
                raise SinkError(f"DynamoDB table {table!r} refused a write: {aws_error(exc)}") from None
            response = {"UnprocessedItems": {table: pending}}
        left = list((response.get("UnprocessedItems") or {}).get(table) or [])
        put = [r["PutRequest"]["Item"] for r in pending if r not in left]
        if put:
            pace.spend(_units(response, put))
            failures, wait = 0, BACKOFF_S
        else:
            failures += 1
            if failures > retries:
                raise SinkError(
                    f"DynamoDB table {table!r} took none of {len(pending)} items in {retries} retries "
                    f"({RETRY}); the write is kept and put again by the job's next start"
                )
            time.sleep(wait)
            wait = min(wait * 2, BACKOFF_MAX_S)
        pending = left


def staged_lines(folder: str) -> Iterator[str]:
    """The staged records, file by file in name order."""
    fs, root = url_to_fs(folder)
    for path in sorted(p for p in fs.find(root) if p.rsplit("/", 1)[-1].startswith("part-")):
        with fs.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield line


def put_all(plan: Mapping[str, Any]) -> int:
    """Put every staged record of ``plan`` into its table; how many were put."""
    access = ddb.resolve_access(
        plan.get("region"), plan.get("endpoint"), plan.get("role"), plan.get("session")
    )
    table, keys, lanes = plan["table"], tuple(plan["keys"]), int(plan["parallel"])
    binary = frozenset(plan.get("binary") or ())
    per_lane = ddb.capacity(ddb.describe(access, table), "Write") * float(plan["write_percent"]) / lanes
    queues: list[list[list[dict[str, Any]]]] = [[] for _ in range(lanes)]
    batches: list[dict[str, dict[str, Any]]] = [{} for _ in range(lanes)]
    count = 0
    for line in staged_lines(plan["staging"]):
        item = item_of(line, binary)
        missing = [k for k in keys if k not in item]
        if missing:
            raise SinkError(
                f"a record has no {missing[0]!r}, a key of DynamoDB table {table!r}: {line[:200]}"
            )
        key = key_of(item, keys)
        n = lane(key, lanes)
        batch = batches[n]
        if key in batch or len(batch) == BATCH:  # a later record of a key goes in a later batch
            queues[n].append(list(batch.values()))
            batch.clear()
        batch[key] = item
        count += 1
    for n, batch in enumerate(batches):
        if batch:
            queues[n].append(list(batch.values()))
    first = threading.Event()

    def write(queue: list[list[dict[str, Any]]]) -> None:
        client, pace = access.client(), ddb.Pace(per_lane)
        for items in queue:
            put_batch(client, table, items, int(plan["retry"]), pace)
            if not first.is_set():
                first.set()
                crash_point("applying")  # some items put, the rest not

    with ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="sparkmark-dynamodb") as pool:
        for done in [pool.submit(write, q) for q in queues if q]:
            done.result()
    return count


def apply(plan: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Put a committed write's staged records. Repeatable: a put of the same record
    leaves the same item."""
    put = put_all(plan)
    crash_point("applied")  # put, not yet marked published
    return {"table": plan["table"], "items_written": put}


def missing(plan: Mapping[str, Any]) -> str | None:
    fs, root = url_to_fs(plan["staging"])
    return None if fs.exists(root) else f"its staged items at {plan['staging']} no longer exist"


def finish(plan: Mapping[str, Any]) -> None:
    remove_staging(plan["staging"])


def remove_staging(folder: str) -> None:
    try:
        fs, root = url_to_fs(folder)
        if fs.exists(root):
            fs.rm(root, recursive=True)
    except OSError as exc:
        log.warning("could not remove the staged items at %s: %s", folder, exc)


def discard(store: StateStore, record: OutputRecord) -> bool:
    if not store.set_output(
        record.run_id, record.seq, OutputState.DISCARDED, expect=(OutputState.STAGING, OutputState.STAGED)
    ):
        return False
    remove_staging(record.plan["staging"])
    return True


@dataclass
class DynamoDBSink:
    """A DynamoDB table, written by key."""

    options: dict[str, Any]
    ctx: str | None = None
    temp_dir: str | None = None
    kind: ClassVar[OutputKind] = OutputKind.KEYED
    unit: ClassVar[str] = "items"

    def __post_init__(self) -> None:
        unknown = sorted(k for k in self.options if k.startswith("dynamodb.") and not accepts(k))
        if unknown:
            raise SinkError(f"DynamoDB connection option {unknown[0]!r} is not supported for writing")
        given = self.options.get(TABLE)
        if not given:
            raise SinkError(f"a DynamoDB write needs connection option {TABLE!r}")
        try:
            self.table, arn_region = ddb.table_name(str(given), TABLE)
            self.write_percent = ddb.fraction(self.options, WRITE_PERCENT, 0.5)
            self.parallel = ddb.positive_int(self.options, PARALLEL, 4)
            self.retry = ddb.positive_int(self.options, RETRY, 10)
        except SourceError as exc:
            raise SinkError(str(exc)) from None
        self.region = str(self.options.get(ddb.STS_REGION) or arn_region or "") or None
        self.endpoint = str(self.options.get(ddb.ENDPOINT) or "") or None
        self.keys: tuple[str, ...] = ()
        self.key_types: dict[str, str] = {}

    @property
    def target(self) -> str:
        return f"dynamodb:{self.table}"

    def check(self) -> None:
        """The table must exist: its key names are what the records are put by."""
        try:
            access = ddb.resolve_access(self.region, self.endpoint, *self._role())
            described = ddb.describe(access, self.table)
        except SourceError as exc:
            raise SinkError(str(exc)) from None
        self.region, self.endpoint = access.region, access.endpoint
        self.keys = tuple(k["AttributeName"] for k in described.get("KeySchema") or [])
        types = {a["AttributeName"]: a["AttributeType"] for a in described.get("AttributeDefinitions") or []}
        self.key_types = {k: types.get(k, "S") for k in self.keys}

    def _role(self) -> tuple[Any, Any]:
        return self.options.get(ddb.ROLE_ARN), self.options.get(ddb.ROLE_SESSION) or ddb.WRITE_SESSION

    def join(self, run: Any, staged: bool) -> None:
        self.temp_dir = run.temp_dir

    def guard(self, store: StateStore) -> None:
        """A keyed table takes any run's puts: a put again is the same item."""

    def plan(self) -> dict[str, Any]:
        role, session = self._role()
        return {
            "sink": "dynamodb",
            "table": self.table,
            "keys": list(self.keys),
            "region": self.region,
            "endpoint": self.endpoint,
            "role": role,
            "session": session,
            "write_percent": self.write_percent,
            "parallel": self.parallel,
            "retry": self.retry,
        }

    def _stage(self, df: DataFrame, folder: str) -> tuple[dict[str, Any], int]:
        """The records as JSON lines in ``folder``, written by this process as Spark hands
        them over (``toLocalIterator``): the puts happen here too, so the staged file is
        where they will be read, whether the executors share a disk with it or not (a
        cluster, a TempDir on the driver's machine). Returns the plan and the count."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import BinaryType

        self._check_keys(df)
        binary = [f.name for f in df.schema.fields if isinstance(f.dataType, BinaryType)]
        line = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))
        fs, root = url_to_fs(folder)
        fs.makedirs(root, exist_ok=True)
        count = 0
        with fs.open(f"{root}/part-00000.json", "wt", encoding="utf-8") as out:
            for row in df.select(line.alias("value")).toLocalIterator(prefetchPartitions=True):
                out.write(row[0] + "\n")
                count += 1
        return {**self.plan(), "staging": folder, "binary": binary}, count

    def _check_keys(self, df: DataFrame) -> None:
        """Before anything is staged (so before the bookmark commits): every key field is
        there, of the key's type, and set in every record. A record the table would refuse
        fails the run here, in one line, rather than a committed write later."""
        from functools import reduce

        from pyspark.sql import functions as F
        from pyspark.sql.types import BinaryType, NumericType, StringType

        wanted = {"S": (StringType, "a string"), "N": (NumericType, "a number"), "B": (BinaryType, "binary")}
        for key in self.keys:
            if key not in df.columns:
                raise SinkError(f"the frame has no field {key!r}, a key of DynamoDB table {self.table!r}")
            kind, said = wanted[self.key_types.get(key, "S")]
            given = df.schema[key].dataType
            if not isinstance(given, kind):
                raise SinkError(
                    f"field {key!r} is {given.simpleString()}, but key {key!r} of DynamoDB table "
                    f"{self.table!r} is {said}: cast it before the write"
                )
        missing = reduce(lambda a, b: a | b, [F.col(f"`{k}`").isNull() for k in self.keys])
        bad = df.where(missing).limit(1).collect()
        if bad:
            raise SinkError(
                f"a record has no value for a key of DynamoDB table {self.table!r} "
                f"({', '.join(self.keys)}): {json.dumps(bad[0].asDict(), default=str)[:200]}"
            )

    def write_now(self, df: DataFrame) -> dict[str, Any]:
        folder = tempfile.mkdtemp(prefix="sparkmark-dynamodb-")
        try:
            put = put_all(self._stage(df, f"{folder}/items")[0])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return {"table": self.table, "items_written": put}

    def _staging(self, key: str) -> str:
        """Where write ``key`` is staged: under the run's temporary folder."""
        return f"{(self.temp_dir or tempfile.gettempdir()).rstrip('/')}/sparkmark-staging/dynamodb/{key}"

    def stage(self, df: DataFrame, record: OutputRecord, store: StateStore) -> tuple[dict[str, Any], int]:
        return self._stage(df, self._staging(record.key))

    def discard(self, store: StateStore, record: OutputRecord) -> None:
        remove_staging(self._staging(record.key))

    def result(self, staged: int, ctx: str) -> dict[str, Any]:
        return {"table": self.table, "ctx": ctx, "items_staged": staged}


def from_glue_options(options: dict[str, Any], *, ctx: str | None) -> DynamoDBSink:
    """The sink registry's factory: Glue's DynamoDB write options (the run's temporary
    folder comes with the run, in ``join``)."""
    return DynamoDBSink({k: v for k, v in options.items() if k.startswith("dynamodb.")}, ctx or None)
