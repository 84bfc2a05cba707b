"""JSON text, one record per row, as typed columns, as a Glue DynamicFrame holds such
records: a field whose records disagree on its type stays a VARIANT column (a choice,
``glue.choice``), a fractional number is a double, and the fields keep the order the
records give them (VARIANT sorts an object's keys). Sources whose records arrive as
JSON (files through the façade, DynamoDB items) are parsed here.
"""

from __future__ import annotations

import json
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from .. import spark_lines


def parse_records(df: DataFrame, text_column: str, keep: list[str]) -> tuple[DataFrame, DataFrame]:
    """JSON text, one record per row, → typed columns; conflicting fields stay VARIANT.

    Returns the records and the rows that are not JSON objects (malformed text, or a
    bare value): those become error records rather than being dropped silently.
    """
    if not spark_lines.HAS_VARIANT:
        return _parse_without_variant(df, text_column, keep)
    parsed = df.select(
        F.col(text_column).alias("__sm_text"), F.try_parse_json(F.col(text_column)).alias("__sm_v"), *keep
    )
    is_record = F.col("__sm_v").isNotNull() & F.schema_of_variant("__sm_v").startswith("OBJECT")
    bad = parsed.where(~is_record | is_record.isNull()).select(
        F.lit("not a JSON record").alias("error"),
        F.col("__sm_text").alias("record"),
        F.lit("read").alias("transformation"),
    )
    good = parsed.where(is_record)
    ordered = good.select("__sm_v", "__sm_text", _row_order())
    agg, first_text = ordered.agg(F.schema_of_variant_agg("__sm_v"), F.min_by("__sm_text", "__sm_at")).head(
        1
    )[0]
    if agg is None or not agg.startswith("OBJECT<"):  # no records at all
        return good.select(*keep), bad
    ddl = to_ddl(agg)
    typed = good.select(F.expr(f"variant_get(__sm_v, '$', '{ddl}')").alias("__sm_r"), *keep)
    record_type = typed.schema["__sm_r"].dataType
    fields = record_type.fieldNames() if isinstance(record_type, StructType) else []
    order = _file_order(good, fields, _keys(first_text))
    return typed.select(*[F.col("__sm_r").getField(name).alias(name) for name in order], *keep), bad


def _parse_without_variant(df: DataFrame, text_column: str, keep: list[str]) -> tuple[DataFrame, DataFrame]:
    """Spark 3.5's :func:`parse_records`: the records typed as Spark's JSON reader types
    them (a field whose records disagree is a string, not a choice), in the file's order."""
    parsed = df.select(F.col(text_column).alias("__sm_text"), *keep)
    is_record = spark_lines.is_json_object(F.col("__sm_text"))
    bad = parsed.where(~is_record | is_record.isNull()).select(
        F.lit("not a JSON record").alias("error"),
        F.col("__sm_text").alias("record"),
        F.lit("read").alias("transformation"),
    )
    good = parsed.where(is_record)
    record_type = spark_lines.inferred_json_type(good, "__sm_text")
    if record_type is None:  # no records at all
        return good.select(*keep), bad
    first = good.select("__sm_text", _row_order()).agg(F.min_by("__sm_text", "__sm_at")).head(1)[0][0]
    typed = good.select(F.from_json("__sm_text", record_type).alias("__sm_r"), "__sm_text", *keep)
    order = _file_order(good, record_type.fieldNames(), _keys(first))
    return typed.select(*[F.col("__sm_r").getField(name).alias(name) for name in order], *keep), bad


def _keys(text: str | None) -> list[str]:
    """The first record's fields in its own order (read here: one record, not a column
    of them)."""
    try:
        record = json.loads(text or "")
    except ValueError:
        return []
    return list(record) if isinstance(record, dict) else []


def _row_order() -> Column:
    """A row's place in what was read: by file part, then by line."""
    return F.monotonically_increasing_id().alias("__sm_at")


def _file_order(records: DataFrame, fields: list[str], first: list[str]) -> list[str]:
    """The record fields in the order the file gives them, as a Glue DynamicFrame keeps
    them (VARIANT sorts an object's keys): the first record's, then each field no earlier
    record had, where it first appears. When the first record has every field, as is
    usual, nothing more is read."""
    seen = [k for k in dict.fromkeys(first) if k in fields]
    if len(seen) == len(fields):
        return seen
    at = records.select(_row_order(), F.posexplode(F.json_object_keys("__sm_text")))
    firsts = at.groupBy("col").agg(F.min(F.struct("__sm_at", "pos")).alias("at")).collect()
    ranked = [r["col"] for r in sorted(firsts, key=lambda r: (r["at"]["__sm_at"], r["at"]["pos"]))]
    ordered = [k for k in dict.fromkeys(ranked) if k in fields]
    return ordered + [f for f in fields if f not in ordered]


def to_ddl(variant_schema: str) -> str:
    """``schema_of_variant_agg`` output as a Spark DDL type: OBJECT → STRUCT, a field that
    was null in every record (VOID) → STRING, since Spark has no null-typed column, and a
    fractional JSON number (which VARIANT holds as DECIMAL) → DOUBLE, as Glue types it."""
    ddl = re.sub(r"\bVOID\b", "STRING", re.sub(r"\bOBJECT<", "STRUCT<", variant_schema))
    return re.sub(r"\bDECIMAL\(\d+,\s*\d+\)", "DOUBLE", ddl)
