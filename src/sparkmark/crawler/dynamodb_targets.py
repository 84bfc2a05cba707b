"""Crawling DynamoDB targets (``DynamoDBTargets``): one catalog table per DynamoDB
table, of classification ``dynamodb``, its location the table's ARN, its columns
inferred from the items (all of them with ``scanAll``, the default; a first page
otherwise), read at ``scanRate`` of the table's read capacity (Glue's default: half a
provisioned table's, a quarter of an on-demand table's). The table's parameters say its
keys (``hashKey``, ``rangeKey``), as Glue's do. No Spark is needed: a crawl reads the
items with boto3, and a job reads the table through the DynamoDB source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from ..catalog.models import Column, Table
from ..catalog.store import CatalogStore
from ..errors import SourceError
from ..sources import dynamodb_access as ddb

SAMPLE_ITEMS = 1000  # what a crawl with scanAll false reads: the first page, at most this


def catalog_type(value: Any) -> str | None:
    """The catalog type of one DynamoDB value (as boto3 deserializes it); None for NULL."""
    from boto3.dynamodb.types import Binary

    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Decimal):
        return "bigint" if value == value.to_integral_value() else "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (Binary, bytes, bytearray)):
        return "binary"
    if isinstance(value, (set, frozenset, list)):
        return f"array<{merged(catalog_type(v) for v in value) or 'string'}>"
    if isinstance(value, dict):
        fields = merged_fields([value])
        return "struct<" + ",".join(f"{k}:{t}" for k, t in fields.items()) + ">"
    return "string"


def merge(a: str | None, b: str | None) -> str | None:
    """The type that holds values of both types: a number type widens to double, arrays
    and structs merge inside, anything else that disagrees is a string."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} == {"bigint", "double"}:
        return "double"
    if a.startswith("array<") and b.startswith("array<"):
        return f"array<{merge(a[6:-1], b[6:-1])}>"
    if a.startswith("struct<") and b.startswith("struct<"):
        fields = dict(_struct_fields(a))
        for name, kind in _struct_fields(b):
            fields[name] = merge(fields.get(name), kind) or "string"
        return "struct<" + ",".join(f"{k}:{t}" for k, t in fields.items()) + ">"
    return "string"


def _struct_fields(kind: str) -> list[tuple[str, str]]:
    """The fields of ``struct<a:bigint,b:struct<c:string>>``, nesting respected."""
    body, fields, depth, start = kind[7:-1], [], 0, 0
    for i, ch in enumerate(body + ","):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            name, _, inner = body[start:i].partition(":")
            if name:
                fields.append((name, inner))
            start = i + 1
    return fields


def merged(kinds: Iterable[str | None]) -> str | None:
    found: str | None = None
    for kind in kinds:
        found = merge(found, kind)
    return found


def merged_fields(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each attribute's type over all ``items``, in the order attributes first appear."""
    fields: dict[str, str | None] = {}
    for item in items:
        for name, value in item.items():
            fields[name] = merge(fields.get(name), catalog_type(value))
    return {name: kind or "string" for name, kind in fields.items()}


def scanned(access: ddb.Access, table: str, scan_all: bool, rate: float) -> Iterable[dict[str, Any]]:
    """The table's items (deserialized), paced to ``rate`` read units a second."""
    from boto3.dynamodb.types import TypeDeserializer

    deserialize = TypeDeserializer().deserialize
    client, pace = access.client(), ddb.Pace(rate)
    request: dict[str, Any] = {"TableName": table, "ReturnConsumedCapacity": "TOTAL"}
    if not scan_all:
        request["Limit"] = SAMPLE_ITEMS
    while True:
        page = client.scan(**request)
        for item in page.get("Items", []):
            yield {k: deserialize(v) for k, v in item.items()}
        last = page.get("LastEvaluatedKey")
        if not last or not scan_all:
            return
        pace.spend(float((page.get("ConsumedCapacity") or {}).get("CapacityUnits") or 0.0))
        request["ExclusiveStartKey"] = last


def crawl_dynamodb_target(
    store: CatalogStore,
    database_name: str,
    prefix: str,
    path: str,
    scan_all: bool,
    scan_rate: float | None,
    crawl_id: str,
) -> tuple[list[str], list[str]]:
    """Returns (tables created, tables updated)."""
    name, region = ddb.table_name(path, "DynamoDBTargets Path")
    access = ddb.resolve_access(region, None)
    described = ddb.describe(access, name)
    rate = scan_rate if scan_rate is not None else (0.25 if ddb.on_demand(described) else 0.5)
    if not 0.1 <= rate <= 1.5:
        raise SourceError(f"scanRate must be from 0.1 to 1.5, not {rate}")
    items = list(scanned(access, name, scan_all, ddb.capacity(described, "Read") * rate))
    fields = merged_fields(items)
    count = len(items)
    size = int(described.get("TableSizeBytes") or 0)
    keys = {k["KeyType"]: k["AttributeName"] for k in described.get("KeySchema") or []}
    table_name = (prefix + name).lower()
    existing = {t.name for t in store.tables(database_name)}
    table = Table(
        database_name,
        table_name,
        str(described.get("TableArn") or name),
        "dynamodb",
        tuple(Column(n, t) for n, t in fields.items()),
        (),
        {
            "hashKey": keys.get("HASH", ""),
            "rangeKey": keys.get("RANGE", ""),
            "typeOfData": "table",
            "recordCount": str(int(described.get("ItemCount") or count)),
            "averageRecordSize": str(size // count if count and size else 0),
            "sizeKey": str(size),
            "compressionType": "none",
            "crawl_id": crawl_id,
        },
    )
    changed = store.put_table(table, crawl_id)
    if table_name not in existing:
        return [table.qualified], []
    return [], [table.qualified] if changed else []
