"""A crawl's schema inference without Spark, for the formats pyarrow reads as Spark does.

A crawl samples a few small files per table; starting a JVM to read them costs more than
the rest of the crawl. pyarrow reads newline-delimited JSON and Parquet in this process,
and the types it finds map onto the ones Spark's readers would infer. Where they might
not (a value of two types across records, a number too large for a long, an empty
object, a type this mapping does not know, a line that is not a JSON object) the answer
is None and the crawl asks Spark, which decides as before.
"""

from __future__ import annotations

import logging

import fsspec
import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

log = logging.getLogger("sparkmark.crawler")

FORMATS = ("json", "parquet")


class Unsure(Exception):
    """The sample holds something Spark might type differently: ask Spark."""


def _json_type(t: pa.DataType) -> str:
    """The type Spark's JSON reader infers for what pyarrow found (Spark keeps
    timestamp-looking strings as strings, types all-null fields string, and sorts the
    fields of an object by name)."""
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_timestamp(t):
        return "string"
    if pa.types.is_null(t):
        return "string"
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            raise Unsure("an empty object")
        fields = sorted((t.field(i) for i in range(t.num_fields)), key=lambda f: f.name)
        return "struct<" + ",".join(f"{f.name}:{_json_type(f.type)}" for f in fields) + ">"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{_json_type(t.value_type)}>"
    raise Unsure(f"JSON values of arrow type {t}")


_PARQUET_TYPES = {
    pa.int8(): "tinyint",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    pa.string(): "string",
    pa.large_string(): "string",
    pa.binary(): "binary",
    pa.date32(): "date",
}


def _parquet_type(t: pa.DataType) -> str:
    """Spark's name for a flat Parquet column's type; nested, unsigned and time types
    (whose Spark mapping depends on session settings) are left to Spark."""
    if t in _PARQUET_TYPES:
        return _PARQUET_TYPES[t]
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t) and t.tz is not None:
        return "timestamp"  # adjusted to UTC: Spark's TIMESTAMP
    raise Unsure(f"Parquet column of arrow type {t}")


def _merge(into: dict[str, str], found: list[tuple[str, str]], *, widen: bool) -> None:
    """Spark's merge of the files' schemas: a field keeps its first place; the same field
    of another type is widened from bigint to double (JSON), or is a conflict."""
    for name, kind in found:
        before = into.get(name)
        if before is None:
            into[name] = kind
        elif before != kind:
            if widen and {before, kind} == {"bigint", "double"}:
                into[name] = "double"
            else:
                raise Unsure(f"field {name!r} is {before} in one file and {kind} in another")


def _json_fields(url: str) -> list[tuple[str, str]]:
    with fsspec.open(url, "rb") as fh:
        table = pa_json.read_json(
            fh,
            parse_options=pa_json.ParseOptions(newlines_in_values=False, unexpected_field_behavior="infer"),
        )
    return [(f.name, _json_type(f.type)) for f in table.schema]


def _parquet_fields(url: str) -> list[tuple[str, str]]:
    with fsspec.open(url, "rb") as fh:
        schema = pq.read_schema(fh)
    return [(f.name, _parquet_type(f.type)) for f in schema]


def infer_columns(kind: str, urls: list[str]) -> list[tuple[str, str]] | None:
    """(name, Spark type) of the sampled files' fields, as Spark's reader of ``kind``
    would infer them, or None when only Spark can say."""
    if kind not in FORMATS:
        return None
    merged: dict[str, str] = {}
    try:
        for url in urls:
            fields = _json_fields(url) if kind == "json" else _parquet_fields(url)
            _merge(merged, fields, widen=kind == "json")
    except (Unsure, pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError) as exc:
        log.info("schema of %s files inferred by Spark: %s", kind, str(exc).splitlines()[0][:200])
        return None
    names = [n.lower() for n in merged]
    if len(set(names)) != len(names):
        return None  # fields that differ only in case: Spark's resolution decides
    return list(merged.items())  # the files' order: a JSON record's fields as written
