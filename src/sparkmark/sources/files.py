"""File sources: read exactly the files a run's plan chose (engine/fileplan.py) with Spark."""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from ..engine.listing import ListedFile, spark_base_path, spark_path
from ..errors import SourceError

FORMATS = ("csv", "json", "parquet", "orc", "xml", "text", "avro")
SOURCE_FILE = "_sm_source_file"  # beside malformed records: the file they came from


def struct_from_ddl(ddl: str) -> StructType:
    """A schema given as DDL (``"id BIGINT, name STRING"``)."""
    schema = StructType.fromDDL(ddl)
    if not isinstance(schema, StructType):
        raise SourceError(f"schema {ddl!r} is not a list of columns, e.g. 'id BIGINT, name STRING'")
    return schema


def read_selected(
    spark: SparkSession,
    files: list[ListedFile],
    *,
    fmt: str,
    spark_options: dict[str, Any],
    schema: StructType | str | None,
    empty_schema: StructType | None,
    root_columns: dict[str, dict[str, str]] | None = None,
    corrupt_column: str | None = None,
) -> DataFrame:
    """Read exactly ``files`` with Spark, keeping Hive partition columns of each root.

    ``root_columns`` maps a root (as listed) to constant columns for its files: the
    values of a catalog partition whose folder is that root. ``corrupt_column`` (JSON
    and CSV) makes sure malformed records arrive in that column, with the path of
    their file in ``SOURCE_FILE``."""
    if not files:
        if isinstance(schema, str):
            schema = struct_from_ddl(schema)
        return spark.createDataFrame([], schema or empty_schema or StructType([]))
    if fmt == "avro":
        from .avro import read_avro

        by_root: dict[str, list[tuple[str, str]]] = {}
        for f in files:
            by_root.setdefault(f.root, []).append((f.url, f.root))
        parts = []
        for root, pairs in by_root.items():
            parts.append(_with_root_columns(read_avro(spark, pairs), root, root_columns))
        return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    # Spark drops files that sit beside partition folders when both are read in one
    # load, so files are grouped by root and by the partition columns of their folder.
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for f in files:
        groups.setdefault((f.root, partition_columns(f)), []).append(spark_path(f.url))
    frames = []
    for (root, _columns), group in groups.items():
        reader = spark.read.format(fmt)
        for key, value in spark_options.items():
            reader = reader.option(key, value)
        reader = reader.option("basePath", spark_base_path(root))
        group_schema = struct_from_ddl(schema) if isinstance(schema, str) else schema
        if corrupt_column is not None and (group_schema is not None or fmt == "csv"):
            # JSON inference adds the column only when it met a malformed record; CSV
            # never does, and a given schema must be told about it.
            if group_schema is None:
                group_schema = reader.load(group).schema
            if corrupt_column not in group_schema.fieldNames():
                group_schema = StructType(group_schema.fields + [StructField(corrupt_column, StringType())])
        if group_schema is not None:
            reader = reader.schema(group_schema)
        frame = reader.load(group)
        if corrupt_column is not None and corrupt_column in frame.columns:
            frame = frame.withColumn(SOURCE_FILE, F.col("_metadata.file_path"))
        frames.append(_with_root_columns(frame, root, root_columns))
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def _with_root_columns(
    frame: DataFrame, root: str, root_columns: dict[str, dict[str, str]] | None
) -> DataFrame:
    for name, value in ((root_columns or {}).get(root) or {}).items():
        frame = frame.withColumn(name, F.lit(value))
    return frame


def partition_columns(f: ListedFile) -> tuple[str, ...]:
    """The Hive partition column names in a file's folder path below its root."""
    relative = f.dir[len(f.root) :].strip("/")
    return tuple(part.split("=", 1)[0] for part in relative.split("/") if "=" in part)
