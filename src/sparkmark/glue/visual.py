"""Glue Studio's built-in visual transforms, as its generated scripts call them: a script
does ``import gs_flatten`` (``gs_explode``, ``gs_uuid`` …), which on Glue adds a method
of that name to DynamicFrame, then ``frame.gs_flatten(maxLevels=1)``. The awsglue
import hook points every ``gs_*`` module at this one, and DynamicFrame carries the
methods (``VisualTransforms``), so each import form works. Their parameters are the
ones Studio writes; their behaviour is that of Glue's "Using the … transform" pages:

- ``gs_flatten(maxLevels=0, separator=".")``: nested struct fields as top-level columns
  named ``parent<separator>child``, to ``maxLevels`` levels (0: all);
- ``gs_explode(colName, newCol=None, outer=False)``: a row per element of an array (a
  map gives ``<newCol>_key`` and ``<newCol>_value``); ``outer`` keeps rows whose
  collection is empty or null, with a null;
- ``gs_uuid(colName="uuid")``: a random UUID string per row;
- ``gs_concat(colName, colList, spacer="")``: the columns' values joined by ``spacer``;
- ``gs_split(colName, pattern, newColName=None)``: a string split by a regular
  expression into an array;
- ``gs_array_to_cols(colName, colList)``: an array's elements as the named columns;
- ``gs_to_timestamp(colName, colType="autodetect", newColName=None)``: a number (seconds,
  milliseconds, microseconds) or an ISO string as a timestamp;
- ``gs_format_timestamp(colName, dateFormat, newColName=None)``: a timestamp as text, in
  Spark's datetime pattern or Python's ``%`` codes;
- ``gs_derived(colName, expr)``: a column computed by a SQL expression.

A name ``newCol``/``newColName`` leaves out replaces the column itself."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, NumericType, StringType, StructType

from ..errors import TransformError
from . import paths as fieldpaths

if TYPE_CHECKING:
    from .dynamicframe import DynamicFrame

# Python's strftime codes and the Spark datetime patterns they mean.
_STRFTIME = {
    "%Y": "yyyy", "%y": "yy", "%m": "MM", "%d": "dd", "%H": "HH", "%I": "hh", "%M": "mm",
    "%S": "ss", "%f": "SSSSSS", "%p": "a", "%b": "MMM", "%B": "MMMM", "%a": "EEE",
    "%A": "EEEE", "%j": "DDD", "%z": "Z", "%Z": "z", "%%": "%",
}  # fmt: skip
TIME_TYPES = ("autodetect", "iso", "seconds", "milliseconds", "microseconds")


def _column(df: DataFrame, name: str) -> tuple[list[str], Column]:
    """A column Studio names (a dotted path in backticks names one top-level field)."""
    parts = [name.strip("`")] if name.startswith("`") and name.endswith("`") else fieldpaths.split_path(name)
    if fieldpaths.field_type(df.schema, parts) is None:
        raise TransformError(f"column {name!r} is not in the frame (fields: {', '.join(df.columns)})")
    return parts, fieldpaths.column(parts)


def _flat_name(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ".".join(parts)


def flatten(df: DataFrame, max_levels: int = 0, separator: str = ".") -> DataFrame:
    columns: list[Column] = []

    def walk(struct: StructType, prefix: list[str], depth: int) -> None:
        for field in struct.fields:
            here = [*prefix, field.name]
            if isinstance(field.dataType, StructType) and (max_levels <= 0 or depth < max_levels):
                walk(field.dataType, here, depth + 1)
            else:
                columns.append(fieldpaths.column(here).alias(separator.join(here)))

    walk(df.schema, [], 0)
    return df.select(*columns)


def explode(df: DataFrame, col_name: str, new_col: str | None = None, outer: bool = False) -> DataFrame:
    parts, source = _column(df, col_name)
    target = new_col or _flat_name(parts)
    kind = fieldpaths.field_type(df.schema, parts)
    if not isinstance(kind, (ArrayType, MapType)):
        raise TransformError(
            f"column {col_name!r} is not an array or a map, it is {kind.simpleString() if kind else '?'}"
        )
    generate = F.explode_outer if outer else F.explode
    keep = [F.col(f"`{c}`") for c in df.columns if c != target]
    if isinstance(kind, MapType):
        pairs = df.select(*keep, generate(source).alias(f"{target}_key", f"{target}_value"))
        return pairs
    return df.select(*keep, generate(source).alias(target))


def to_timestamp(
    df: DataFrame, col_name: str, col_type: str = "autodetect", new_col: str | None = None
) -> DataFrame:
    kind = str(col_type).lower()
    if kind not in TIME_TYPES:
        raise TransformError(f"gs_to_timestamp colType {col_type!r} is not one of {', '.join(TIME_TYPES)}")
    parts, source = _column(df, col_name)
    data_type = fieldpaths.field_type(df.schema, parts)
    numeric = source.cast("double")
    by_unit = {
        "seconds": F.timestamp_seconds(numeric),
        "milliseconds": F.timestamp_micros((numeric * 1000).cast("long")),
        "microseconds": F.timestamp_micros(numeric.cast("long")),
    }
    iso = F.try_to_timestamp(source.cast("string"))
    if kind in by_unit:
        converted = by_unit[kind]
    elif kind == "iso":
        converted = iso
    elif isinstance(data_type, NumericType) or not isinstance(data_type, StringType):
        # A number's magnitude tells its unit: seconds until the year 5138, then ms, then µs.
        magnitude = F.abs(numeric)
        converted = (
            F.when(magnitude < 1e11, by_unit["seconds"])
            .when(magnitude < 1e14, by_unit["milliseconds"])
            .otherwise(by_unit["microseconds"])
        )
    else:
        converted = F.coalesce(iso, F.when(source.rlike(r"^-?\d+(\.\d+)?$"), by_unit["seconds"]))
    return df.withColumn(new_col or _flat_name(parts), converted)


def spark_pattern(date_format: str) -> str:
    """Spark's datetime pattern for a format Studio takes: Spark's own, or Python's ``%``
    codes translated (the literal text between them quoted)."""
    text = str(date_format).strip()
    if len(text) > 1 and text[0] == text[-1] == "'":
        text = text[1:-1]
    if "%" not in text:
        return text
    out, i = [], 0
    for match in re.finditer(r"%.", text):
        literal = text[i : match.start()]
        if literal:
            out.append("'" + literal.replace("'", "''") + "'")
        code = match.group(0)
        if code not in _STRFTIME:
            raise TransformError(f"date format code {code} in {date_format!r} is not one sparkmark knows")
        out.append(_STRFTIME[code])
        i = match.end()
    if text[i:]:
        out.append("'" + text[i:].replace("'", "''") + "'")
    return "".join(out)


class VisualTransforms:
    """The ``gs_*`` methods Studio's generated scripts call on a DynamicFrame."""

    if TYPE_CHECKING:  # DynamicFrame's, which holds these methods

        def toDF(self, options: Any = None) -> DataFrame: ...

        def _with(self, df: DataFrame) -> DynamicFrame: ...

    def gs_flatten(self, maxLevels: int = 0, separator: str = ".") -> DynamicFrame:
        return self._with(flatten(self.toDF(), int(maxLevels or 0), separator))

    def gs_explode(self, colName: str, newCol: str | None = None, outer: bool = False) -> DynamicFrame:
        return self._with(explode(self.toDF(), colName, newCol, bool(outer)))

    def gs_uuid(self, colName: str = "uuid") -> DynamicFrame:
        return self._with(self.toDF().withColumn(colName, F.expr("uuid()")))

    def gs_concat(self, colName: str, colList: list[str], spacer: str = "") -> DynamicFrame:
        df = self.toDF()
        sources = [_column(df, c)[1].cast("string") for c in colList]
        return self._with(df.withColumn(colName, F.concat_ws(spacer or "", *sources)))

    def gs_split(self, colName: str, pattern: str, newColName: str | None = None) -> DynamicFrame:
        df = self.toDF()
        parts, source = _column(df, colName)
        return self._with(
            df.withColumn(newColName or _flat_name(parts), F.split(source.cast("string"), pattern))
        )

    def gs_array_to_cols(self, colName: str, colList: list[str] | str) -> DynamicFrame:
        df = self.toDF()
        _parts, source = _column(df, colName)
        names = [
            c.strip() for c in (colList.split(",") if isinstance(colList, str) else colList) if c.strip()
        ]
        for i, name in enumerate(names):
            df = df.withColumn(name, source.getItem(i))
        return self._with(df)

    def gs_to_timestamp(
        self, colName: str, colType: str = "autodetect", newColName: str | None = None
    ) -> DynamicFrame:
        return self._with(to_timestamp(self.toDF(), colName, colType, newColName))

    def gs_format_timestamp(
        self, colName: str, dateFormat: str, newColName: str | None = None
    ) -> DynamicFrame:
        df = self.toDF()
        parts, source = _column(df, colName)
        formatted = F.date_format(source.cast("timestamp"), spark_pattern(dateFormat))
        return self._with(df.withColumn(newColName or _flat_name(parts), formatted))

    def gs_derived(self, colName: str, expr: str) -> DynamicFrame:
        return self._with(self.toDF().withColumn(colName, F.expr(expr)))
