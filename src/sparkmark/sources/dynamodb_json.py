"""DynamoDB JSON (``{"Item": {"id": {"S": "a"}, "n": {"N": "1"}}}``, the form of an
export and of a stream's images) made plain, as Glue's two transforms make it:

- ``unnest``: the top level only. ``Item`` goes, and each attribute loses its type
  descriptor: ``id`` is a string, ``n`` a string (DynamoDB's number text), a list an
  array of its elements as they are (an array of structs is not unnested), a map a
  struct whose fields keep their descriptors.
- ``simplify``: every level. A map is a struct of plain fields, a list an array of
  plain elements, a set an array of strings, a number its text, a NULL a null.

Both work on Spark's schema (no Python per row). An attribute whose items disagree on
its type is a struct of several descriptors; it becomes the text of whichever it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

DESCRIPTORS = frozenset({"S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M"})


def _descriptors(kind: Any) -> list[str] | None:
    """The descriptor fields of a struct type that holds one DynamoDB value, or None."""
    from pyspark.sql.types import StructType

    if not isinstance(kind, StructType) or not kind.fields:
        return None
    names = [f.name for f in kind.fields]
    return names if set(names) <= DESCRIPTORS else None


TEXT_ALREADY = ("S", "N", "B")


def _one_of(column: Column, kind: Any, names: list[str], inner: Any) -> Column:
    """A value whose items disagree on its descriptor: the text of the one it holds (a
    set, list or map as its JSON)."""
    from pyspark.sql import functions as F

    parts = []
    for name in names:
        value = inner(column[name], name, kind[name].dataType)
        if name in TEXT_ALREADY:
            parts.append(value)
        elif name in ("BOOL", "NULL"):
            parts.append(value.cast("string"))
        else:
            parts.append(F.to_json(value))
    return F.coalesce(*parts)


def _unwrapped(column: Column, name: str, kind: Any) -> Column:
    """One descriptor's value, one level: a NULL is a null."""
    from pyspark.sql import functions as F

    return F.lit(None) if name == "NULL" else column


def _simplified(column: Column, name: str, kind: Any) -> Column:
    """One descriptor's value, every level."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StructType

    if name == "NULL":
        return F.lit(None)
    if name == "M" and isinstance(kind, StructType):
        return F.struct(*[simplify_value(column[f.name], f.dataType).alias(f.name) for f in kind.fields])
    if name == "L" and isinstance(kind, ArrayType):
        element = kind.elementType
        return F.transform(column, lambda e: simplify_value(e, element))
    return column


def _plain(column: Column, kind: Any, inner: Any) -> Column:
    """A DynamoDB JSON value without its descriptor, ``inner`` taking each descriptor's
    value (anything that is not DynamoDB JSON as it is)."""
    names = _descriptors(kind)
    if names is None:
        return column
    if len(names) == 1:
        return inner(column[names[0]], names[0], kind[names[0]].dataType)
    return _one_of(column, kind, names, inner)


def simplify_value(column: Column, kind: Any) -> Column:
    """A DynamoDB JSON value made plain at every level."""
    return _plain(column, kind, _simplified)


def _unnest_value(column: Column, kind: Any) -> Column:
    return _plain(column, kind, _unwrapped)


def _attributes(df: DataFrame) -> tuple[Any, str]:
    """The struct holding the item's attributes and how to reach it: ``Item`` when the
    frame is an export's, else the frame's own columns."""
    from pyspark.sql.types import StructType

    if df.columns == ["Item"] and isinstance(df.schema["Item"].dataType, StructType):
        return df.schema["Item"].dataType, "Item."
    return df.schema, ""


def unnest(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    fields, at = _attributes(df)
    return df.select(
        *[_unnest_value(F.col(f"{at}`{f.name}`"), f.dataType).alias(f.name) for f in fields.fields]
    )


def simplify(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    fields, at = _attributes(df)
    return df.select(
        *[simplify_value(F.col(f"{at}`{f.name}`"), f.dataType).alias(f.name) for f in fields.fields]
    )
