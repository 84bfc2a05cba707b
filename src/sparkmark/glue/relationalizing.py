"""Glue's ``Relationalize``: a frame of nested records as flat tables, one for the
records and one per array, joined by the ids it adds."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StructType

from . import paths as fieldpaths


def relationalize_into(df: DataFrame, table: str, tables: dict[str, DataFrame]) -> None:
    """Add ``df``'s flat table to ``tables`` as ``table``, and one per array field, named
    ``table_<path>``, with ``id`` (the row it came from) and ``index``."""
    flat: list[tuple[list[str], Any]] = []

    def walk(struct: StructType, prefix: list[str]) -> None:
        for f in struct.fields:
            here = prefix + [f.name]
            if isinstance(f.dataType, StructType):
                walk(f.dataType, here)
            else:
                flat.append((here, f.dataType))

    walk(df.schema, [])
    arrays = [(p, t) for p, t in flat if isinstance(t, ArrayType)]
    if arrays:
        df = df.withColumn("__sm_rowid", F.monotonically_increasing_id()).localCheckpoint(eager=True)
    cols = []
    for parts, dtype in flat:
        name = ".".join(parts)
        if isinstance(dtype, ArrayType):
            cols.append(F.when(fieldpaths.column(parts).isNotNull(), F.col("__sm_rowid")).alias(name))
        else:
            cols.append(fieldpaths.column(parts).alias(name))
    tables[table] = df.select(*cols)
    for parts, _dtype in arrays:
        name = ".".join(parts)
        child = df.select(
            F.col("__sm_rowid").alias("id"), F.posexplode(fieldpaths.column(parts)).alias("index", "__sm_val")
        )
        child = child.select("id", "index", F.struct(F.col("__sm_val").alias("val")).alias(name))
        relationalize_into(child, f"{table}_{name}", tables)
