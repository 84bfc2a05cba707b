"""Avro files through a Python data source over fastavro.

No spark-avro jar is reachable from every machine, so Avro is read in Python:
the schema comes from the first file's writer schema, each file is one input
partition, and Hive partition folders (``dt=…``) become string columns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import fastavro
import fsspec
from pyspark.sql import DataFrame, SparkSession

from .. import spark_lines
from ..errors import SourceError

try:  # the Python data source API (PySpark 4); Spark 3.5 reads Avro with spark-avro
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - exercised under the Glue 5.x runtimes
    DataSource = object  # type: ignore[assignment,misc]
    DataSourceReader = object  # type: ignore[assignment,misc]
    InputPartition = object  # type: ignore[assignment,misc]

NAME = "sparkmark_avro"


def _spark_type(avro: Any) -> tuple[str, bool]:
    """(Spark DDL type, nullable) for an Avro type."""
    if isinstance(avro, list):  # a union: ["null", T] is a nullable T
        others = [t for t in avro if t != "null"]
        if len(others) != 1:
            raise SourceError(f"Avro unions of several types are not supported: {avro}")
        return _spark_type(others[0])[0], True
    if isinstance(avro, dict):
        logical, kind = avro.get("logicalType"), avro.get("type")
        if logical == "date":
            return "DATE", False
        if logical in ("timestamp-millis", "timestamp-micros"):
            return "TIMESTAMP", False
        if logical == "decimal":
            return f"DECIMAL({avro['precision']},{avro.get('scale', 0)})", False
        if kind == "record":
            fields = ", ".join(f"`{f['name']}`: {_spark_type(f['type'])[0]}" for f in avro["fields"])
            return f"STRUCT<{fields}>", False
        if kind == "array":
            return f"ARRAY<{_spark_type(avro['items'])[0]}>", False
        if kind == "map":
            return f"MAP<STRING, {_spark_type(avro['values'])[0]}>", False
        if kind == "enum":
            return "STRING", False
        if kind == "fixed":
            return "BINARY", False
        return _spark_type(kind)
    simple = {
        "null": "STRING",
        "boolean": "BOOLEAN",
        "int": "INT",
        "long": "BIGINT",
        "float": "FLOAT",
        "double": "DOUBLE",
        "bytes": "BINARY",
        "string": "STRING",
    }
    if avro not in simple:
        raise SourceError(f"unsupported Avro type {avro!r}")
    return simple[avro], avro == "null"


def _as_row(value: Any, avro: Any) -> Any:
    """fastavro values → what Spark's Python data source takes (structs as tuples)."""
    if value is None:
        return None
    if isinstance(avro, list):
        return _as_row(value, next(t for t in avro if t != "null"))
    if isinstance(avro, dict):
        if avro.get("type") == "record" and not avro.get("logicalType"):
            return tuple(_as_row(value.get(f["name"]), f["type"]) for f in avro["fields"])
        if avro.get("type") == "array":
            return [_as_row(v, avro["items"]) for v in value]
        if avro.get("type") == "map":
            return {k: _as_row(v, avro["values"]) for k, v in value.items()}
    return value


def _partition_values(path: str, root: str) -> list[tuple[str, str]]:
    relative = path[len(root) :].strip("/").split("/")[:-1]
    pairs = [p.split("=", 1) for p in relative if "=" in p]
    return [(key, value) for key, value in pairs]


class AvroDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def _files(self) -> list[dict[str, str]]:
        return json.loads(self.options["files"])

    def _writer_schema(self) -> dict[str, Any]:
        first = self._files()[0]["path"]
        with fsspec.open(first, "rb") as fo:
            return cast(dict[str, Any], fastavro.reader(fo).writer_schema)

    def schema(self) -> str:
        writer = self._writer_schema()
        if writer.get("type") != "record":
            raise SourceError("Avro files must hold records")
        cols = [f"`{f['name']}` {_spark_type(f['type'])[0]}" for f in writer["fields"]]
        first = self._files()[0]
        cols += [f"`{k}` STRING" for k, _ in _partition_values(first["path"], first["root"])]
        return ", ".join(cols)

    def reader(self, schema):
        return _AvroReader(self._files())


class _AvroReader(DataSourceReader):
    def __init__(self, files: list[dict[str, str]]):
        self.files = files

    def partitions(self):
        return [InputPartition(json.dumps(f)) for f in self.files]

    def read(self, partition):
        f = json.loads(partition.value)
        extra = tuple(v for _, v in _partition_values(f["path"], f["root"]))
        with fsspec.open(f["path"], "rb") as fo:
            reader = fastavro.reader(fo)
            fields = cast(dict[str, Any], reader.writer_schema)["fields"]
            for record in cast(Iterator[dict[str, Any]], reader):
                yield tuple(_as_row(record.get(x["name"]), x["type"]) for x in fields) + extra


def read_avro(spark: SparkSession, files: list[tuple[str, str]]) -> DataFrame:
    """Read ``(file url, root url)`` pairs; all must share one writer schema. On Spark 3.5
    (no Python data sources) Spark's own Avro format reads them: the avro connector."""
    if not spark_lines.PYTHON_DATA_SOURCES:
        return _read_with_spark_avro(spark, files)
    spark.dataSource.register(AvroDataSource)
    listed = [{"path": p, "root": r} for p, r in files]
    return spark.read.format(NAME).option("files", json.dumps(listed)).load()


def _read_with_spark_avro(spark: SparkSession, files: list[tuple[str, str]]) -> DataFrame:
    """Spark 3.5's way: spark-avro over each root's files; the Hive partition folders
    under a root (``dt=…``) become string columns, as the Python reader makes them."""
    from functools import reduce

    from pyspark.sql import functions as F

    from ..engine.storage import spark_path

    by_root: dict[str, list[str]] = {}
    for path, root in files:
        by_root.setdefault(root, []).append(path)
    frames = []
    for root, paths in by_root.items():
        for path in paths:
            frame = spark.read.format("avro").load(spark_path(path))
            for key, value in _partition_values(path, root):
                frame = frame.withColumn(key, F.lit(value))
            frames.append(frame)
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
