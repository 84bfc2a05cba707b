"""Glue field paths (``a.b.c``, with backticks around names that hold dots) on DataFrames."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from ..errors import TransformError


def split_path(path: str) -> list[str]:
    """``"a.`b.c`.d"`` → ``["a", "b.c", "d"]``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in path:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    if quoted or not all(parts):
        raise TransformError(f"invalid field path {path!r}")
    return parts


def quote(parts: list[str]) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def column(parts: list[str]) -> Column:
    return F.col(quote(parts))


def field_type(schema: StructType, parts: list[str]) -> DataType | None:
    current: DataType = schema
    for part in parts:
        if not isinstance(current, StructType) or part not in current.fieldNames():
            return None
        current = current[part].dataType
    return current


def require(schema: StructType, path: str) -> tuple[list[str], DataType]:
    parts = split_path(path)
    found = field_type(schema, parts)
    if found is None:
        raise TransformError(f"field {path!r} is not in the frame (fields: {', '.join(schema.fieldNames())})")
    return parts, found


def replace(df: DataFrame, parts: list[str], value: Callable[[Column], Column]) -> DataFrame:
    """Set the field at ``parts`` to ``value(current column)``, rebuilding parent structs."""
    if len(parts) == 1:
        return df.withColumn(parts[0], value(column(parts)))
    return df.withColumn(parts[0], F.col(quote(parts[:1])).withField(quote(parts[1:]), value(column(parts))))


def drop(df: DataFrame, parts: list[str]) -> DataFrame:
    if len(parts) == 1:
        return df.drop(parts[0])
    return df.withColumn(parts[0], F.col(quote(parts[:1])).dropFields(quote(parts[1:])))


def leaf_paths(schema: StructType, prefix: list[str] | None = None) -> list[list[str]]:
    """Every non-struct field, by path."""
    out = []
    for f in schema.fields:
        path = (prefix or []) + [f.name]
        if isinstance(f.dataType, StructType):
            out.extend(leaf_paths(f.dataType, path))
        else:
            out.append(path)
    return out


def build(leaves: list[tuple[list[str], Column]]) -> list[Column]:
    """Columns for (target path, value) pairs, nesting dotted targets into structs."""
    grouped: dict[str, list[tuple[list[str], Column]]] = {}
    order: list[str] = []
    for parts, value in leaves:
        if parts[0] not in grouped:
            order.append(parts[0])
            grouped[parts[0]] = []
        grouped[parts[0]].append((parts[1:], value))
    out = []
    for head in order:
        items = grouped[head]
        if len(items) == 1 and not items[0][0]:
            out.append(items[0][1].alias(head))
        else:
            out.append(F.struct(*build([i for i in items if i[0]])).alias(head))
    return out
