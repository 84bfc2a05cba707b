"""A Delta append written once: the rows go into the table's folder during the run, as
the data files of a Delta transaction (``OptimisticTransaction.writeFiles``), and only
their ``add`` actions are committed after the bookmark, in a transaction of their own
whose commit carries the write's key as its ``userMetadata``.

Until then the files are not part of the table: Delta reads only the files its log
names (a VACUUM removes such files once they are older than its retention, seven days by
default). The actions wait beside the other staged writes
(``LOCATION/_sparkmark/staging/<key>/actions.json``, one JSON action a line, as Delta's
log writes them), so that whichever process commits the write (the run, or the next one
after a crash) commits the same files.

Only an append to a Delta table that exists, with no writer options, whose columns are
the frame's (same names, order and types) and which asks Delta's writer for nothing it
would do beyond writing files (no constraints, generated or identity columns, column
mapping, NOT NULL or CHAR/VARCHAR columns), is written this way (``writable``). Any other
Delta write is staged as Parquet and written by Delta's writer after the bookmark
(``tables``). The commit has no ``operationMetrics``: Delta fills them from the SQL
metrics of its own write command, which this path does not run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from fsspec.core import url_to_fs

from ..engine.storage import parquet_rows, spark_base_path

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sparkmark.sinks")

ACTIONS = "actions.json"
# What in a table's schema or configuration makes Delta's writer do more than write the
# files (checks, computed columns, renamed physical columns): such tables are written by
# Delta's writer.
WRITER_SCHEMA_FEATURES = (
    "delta.generationExpression",
    "delta.identity",
    "delta.columnMapping",
    "__CHAR_VARCHAR_TYPE_STRING",
    '"nullable":false',
)
WRITER_CONFIGURATION = ("delta.constraints.", "delta.columnMapping.mode", "delta.invariants")


def _jvm(spark: SparkSession) -> Any:
    return spark.sparkContext._jvm


def _delta(spark: SparkSession) -> Any:
    return _jvm(spark).org.apache.spark.sql.delta


def _scala_list(spark: SparkSession, items: Sequence[Any]) -> Any:
    jvm = _jvm(spark)
    values = jvm.java.util.ArrayList()
    for item in items:
        values.add(item)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(values).toList()


def _transaction(spark: SparkSession, path: str) -> Any:
    """A new transaction on the Delta table at ``path`` (its latest version)."""
    return _delta(spark).DeltaLog.forTable(spark._jsparkSession, spark_base_path(path)).startTransaction()


def _partition_columns(metadata: Any) -> list[str]:
    columns = metadata.partitionColumns()
    return [str(columns.apply(i)) for i in range(columns.size())]


def plain_table(schema_json: str, configuration: Mapping[str, str]) -> bool:
    """Whether Delta's writer would do nothing for a table of this schema and
    configuration but write its files (``WRITER_SCHEMA_FEATURES``)."""
    if any(feature in schema_json for feature in WRITER_SCHEMA_FEATURES):
        return False
    for key, value in configuration.items():
        if key.startswith(WRITER_CONFIGURATION) and not (
            key == "delta.columnMapping.mode" and value == "none"
        ):
            return False
    return True


def same_columns(frame_schema: Any, table_schema: Any) -> bool:
    """The frame's columns are the table's: names (with their case), order and types,
    nested ones included; nullability aside (a table of nullable columns takes both)."""
    return bool(frame_schema.simpleString() == table_schema.simpleString())


def writable(df: DataFrame, path: str, partition_by: Sequence[str]) -> Any | None:
    """The transaction to write ``df``'s files in, when this append can be written as a
    Delta transaction's files (see the module); None when Delta's writer must write it."""
    from pyspark.sql.types import StructType

    spark = df.sparkSession
    txn = _transaction(spark, path)
    if int(txn.readVersion()) < 0:
        return None  # no table yet: its first write creates it
    metadata = txn.metadata()
    schema_json = str(metadata.schemaString())
    configuration = dict(_jvm(spark).scala.jdk.javaapi.CollectionConverters.asJava(metadata.configuration()))
    if not plain_table(schema_json, configuration):
        return None
    if partition_by and list(partition_by) != _partition_columns(metadata):
        return None  # Delta's writer says how they differ
    if not same_columns(df.schema, StructType.fromJson(json.loads(schema_json))):
        return None
    return txn


def table_root(staging: str) -> str:
    """The table's folder, from its staged write's folder (``ROOT/_sparkmark/staging/KEY``)."""
    return staging.rstrip("/").rsplit("/", 3)[0]


def data_file(root: str, action: Mapping[str, Any]) -> str:
    """The URL of an ``add`` action's file (the action's path is relative and URL-encoded)."""
    return f"{root.rstrip('/')}/{unquote(action['add']['path'])}"


def stage(df: DataFrame, txn: Any, staging: str) -> dict[str, Any]:
    """Write ``df`` as the files of ``txn`` and keep their actions in ``staging``; the
    plan's part of it: the actions' place, the rows, and the table's schema and version
    the files were written for."""
    actions = txn.writeFiles(df._jdf)
    lines = [str(actions.apply(i).json()) for i in range(actions.size())]
    fs, folder = url_to_fs(staging)
    fs.makedirs(folder, exist_ok=True)
    with fs.open(f"{folder}/{ACTIONS}", "w") as handle:
        handle.write("".join(line + "\n" for line in lines))
    added = [json.loads(line) for line in lines]
    return {
        "delta_actions": True,
        "delta_schema": str(txn.metadata().schemaString()),
        "version_before": int(txn.readVersion()),
        "rows_staged": rows_of(table_root(staging), added),
    }


def rows_of(root: str, added: Sequence[Mapping[str, Any]]) -> int:
    """The rows of the added files: their statistics' ``numRecords``, else their Parquet
    footers (a table whose statistics are turned off)."""
    total = 0
    for action in added:
        if "add" not in action:
            continue
        stats = json.loads(action["add"].get("stats") or "{}")
        if "numRecords" in stats:
            total += int(stats["numRecords"])
            continue
        total += parquet_rows(*url_to_fs(data_file(root, action)))
    return total


def staged_actions(staging: str) -> list[dict[str, Any]] | None:
    """The staged write's actions; None when they are not there."""
    fs, folder = url_to_fs(staging)
    where = f"{folder}/{ACTIONS}"
    if not fs.exists(where):
        return None
    with fs.open(where, "r") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def added_files(staging: str, actions: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """The URLs of the data files a staged write's ``add`` actions name (``actions``, or
    the ones kept in ``staging``)."""
    root = table_root(staging)
    found = staged_actions(staging) if actions is None else actions
    return [data_file(root, action) for action in found or [] if "add" in action]


def missing(staging: str, added: Sequence[Mapping[str, Any]] | None = None) -> str | None:
    """What of a staged write is no longer there (its actions: ``added``, read from
    ``staging`` when not given); None when its actions and every file they add are."""
    added = staged_actions(staging) if added is None else added
    if added is None:
        return f"its staged actions at {staging} no longer exist"
    for url in added_files(staging, added):
        fs, where = url_to_fs(url)
        if not fs.exists(where):
            return f"its data file {url} no longer exists"
    return None


def commit(
    spark: SparkSession, plan: Mapping[str, Any], key: str, added: Sequence[Mapping[str, Any]]
) -> int | None:
    """Commit the staged files' actions (``added``, as ``staged_actions`` read them) to the
    table, with ``key`` as the commit's user metadata; the version committed. None,
    committing nothing, when the table's schema is no longer the one the files were
    written for (``staged_frame`` then gives them to Delta's writer)."""
    txn = _transaction(spark, plan["path"])
    metadata = txn.metadata()
    if str(metadata.schemaString()) != plan["delta_schema"] and any("add" in a for a in added):
        log.info("the Delta table %s changed its schema since the write was staged", plan["path"])
        return None
    delta = _delta(spark)
    actions = [delta.actions.Action.fromJson(json.dumps(action)) for action in added]
    option = _jvm(spark).scala.Option
    operation = delta.DeltaOperations.Write(
        _jvm(spark).org.apache.spark.sql.SaveMode.Append,
        option.apply(_scala_list(spark, _partition_columns(metadata))),
        option.empty(),
        option.apply(key),
        option.empty(),
        option.empty(),
        option.empty(),
    )
    return int(txn.commit(_scala_list(spark, actions), operation))


def staged_frame(spark: SparkSession, staging: str) -> DataFrame:
    """The staged files' rows, their partition columns read from their folders."""
    files = [spark_base_path(url) for url in added_files(staging)]
    return spark.read.option("basePath", spark_base_path(table_root(staging))).parquet(*files)


def remove_files(staging: str) -> None:
    """Remove the data files a staged write that will never commit wrote into the table's
    folder (nothing names them; this only frees their space before a VACUUM would)."""
    for url in added_files(staging):
        fs, where = url_to_fs(url)
        try:
            fs.rm(where)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove the uncommitted Delta file %s: %s", where, exc)
