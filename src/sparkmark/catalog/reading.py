"""Reading a catalog table: prune partitions by predicate before listing, then read
exactly the matching partitions' folders (through the bookmark when there is one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from .. import spark_lines
from ..errors import SourceError, SparkmarkError
from .models import Partition, Table
from .store import CatalogStore

Reader = Callable[[list[str], str, dict[str, dict[str, str]], dict[str, Any]], DataFrame]


def split_name(name: str) -> tuple[str, str]:
    if name.count(".") != 1:
        raise SparkmarkError(f"name catalog tables as DATABASE.TABLE, got {name!r}")
    db, table = name.lower().split(".")  # Glue's catalog names are case-insensitive, kept lower-case
    return db, table


def prune(
    spark: SparkSession, table: Table, parts: list[Partition], predicates: list[str]
) -> list[Partition]:
    """The partitions whose values satisfy every predicate (Spark SQL over the partition keys)."""
    predicates = [p for p in predicates if p]
    if not predicates or not parts:
        return parts
    names = [c.name for c in table.partition_keys]
    frame = spark.createDataFrame(
        [tuple(p.values) + (p.location,) for p in parts],
        ", ".join(f"`{n}` string" for n in names) + ", `__sm_location` string",
    )
    typed = frame.select(
        *[F.col(f"`{c.name}`").cast(c.type).alias(c.name) for c in table.partition_keys], "__sm_location"
    )
    for predicate in predicates:
        typed = typed.where(predicate)
    wanted = {r["__sm_location"] for r in typed.collect()}
    return [p for p in parts if p.location in wanted]


def table_schema(table: Table) -> StructType:
    cols = ", ".join(f"`{c.name}` {c.type}" for c in table.columns + table.partition_keys)
    schema = spark_lines.struct_from_ddl(cols)
    if not isinstance(schema, StructType):  # a column list always parses to a struct
        raise SourceError(f"table {table.database}.{table.name} has no columns")
    return schema


def read_table(
    spark: SparkSession,
    store: CatalogStore,
    name: str,
    predicates: list[str],
    reader: Reader,
    fmt: str | None = None,
) -> tuple[DataFrame, Table, int]:
    """Returns the frame, the table, and how many partitions were selected."""
    table = store.table(*split_name(name))
    options: dict[str, Any] = {
        k[len("option.") :]: v for k, v in table.parameters.items() if k.startswith("option.")
    }
    fmt = fmt or table.classification
    if fmt == "csv":  # text columns take the catalog's types
        options["schema"] = ", ".join(f"`{c.name}` {c.type}" for c in table.columns)
    if not table.partition_keys:
        return reader([table.location], fmt, {}, options), table, 0
    parts = prune(spark, table, store.partitions(table.database, table.name), predicates)
    if not parts:
        return spark.createDataFrame([], table_schema(table)), table, 0
    columns = {
        p.location: dict(zip([c.name for c in table.partition_keys], p.values, strict=False)) for p in parts
    }
    df = reader([p.location for p in parts], fmt, columns, options)
    for c in table.partition_keys:
        if c.name in df.columns:
            df = df.withColumn(c.name, F.col(f"`{c.name}`").cast(c.type))
    return df, table, len(parts)
