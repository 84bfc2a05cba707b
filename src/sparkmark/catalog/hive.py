"""The catalog on Spark's Hive metastore, with its copy in the state store.

Tables are external Spark data-source tables (``USING json|csv|parquet|…``,
``LOCATION`` the data's folder), so Spark SQL, the Thrift server and other
Hive-aware tools see them; partitions are registered with their own locations,
which also covers folders that are not named ``key=value``.

Without a Spark session (a crawl whose schemas needed no JVM), the metastore
statements are deferred: recorded in the state store, in order, and run by the next
sparkmark process that opens a Spark session with the metastore (``apply_deferred``).
The state store's copy is written at once either way; it is what the CLI, the console
and ``read_table`` read.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..engine.storage import spark_base_path
from ..errors import SparkmarkError
from .models import Column, Partition, Table
from .store import CatalogStore

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame, SparkSession

    from ..engine.store import StateStore

log = logging.getLogger("sparkmark.catalog")

SPARK_FORMATS = {"csv": "csv", "json": "json", "parquet": "parquet", "orc": "orc", "xml": "xml"}


def ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def metastore_name(glue_name: str) -> str:
    """The Hive metastore's name for a Glue database or table name. Glue allows hyphens
    (and stores names in lower case); Hive's metastore takes letters, digits and '_'
    only, so every other character becomes '_' there. The Glue name is what users see
    and what sparkmark's own catalog keeps; Spark SQL sees this one."""
    return re.sub(r"[^0-9a-z_]", "_", glue_name.lower())


def _q(glue_name: str) -> str:
    return ident(metastore_name(glue_name))


def literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def has_metastore(spark: SparkSession) -> bool:
    try:
        return spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"
    except Exception:  # noqa: BLE001 - a Spark Connect server may not expose static settings
        return False


def apply_deferred(spark: SparkSession, store: CatalogStore) -> int:
    """Run the metastore statements deferred by processes without Spark, oldest first;
    returns how many ran. One that fails (its table was changed by other means) is
    logged in one line and dropped: the state store's catalog stays the reference."""
    ran = 0
    for seq, statement in store.deferred():
        try:
            spark.sql(statement)
            ran += 1
        except Exception as exc:  # noqa: BLE001 - reported, and the next statements still run
            log.warning("catalog: a deferred metastore statement failed: %s", str(exc).splitlines()[0][:300])
        store.forget_deferred(seq)
    if ran:
        log.info("catalog: %d deferred metastore statements applied", ran)
    return ran


def sync_metastore(spark: SparkSession, state: StateStore) -> int:
    """Bring a new Spark session's metastore up to the state store's catalog: what a
    crawl without Spark deferred. Nothing to do (one query) in the usual case."""
    if not has_metastore(spark):
        return 0
    return apply_deferred(spark, CatalogStore(state))


def catalog_type(data_type: Any) -> str:
    """A written column's type as a Glue table records it: Spark's name, but a timestamp
    without a zone is ``timestamp`` (Glue, Athena and the crawler have no
    ``timestamp_ntz``), an unresolved choice (VARIANT) and a null column ``string``."""
    if data_type.typeName() in ("void", "null", "variant"):
        return "string"
    return re.sub(
        r"\btimestamp_ntz\b", "timestamp", re.sub(r"\bvariant\b", "string", data_type.simpleString())
    )


class HiveCatalog:
    def __init__(self, spark: SparkSession | None, store: CatalogStore):
        if spark is not None and not has_metastore(spark):
            raise SparkmarkError(
                "the Spark session has no Hive support; start it with sparkmark (which enables "
                "the metastore) or with enableHiveSupport()"
            )
        self.spark = spark
        self.store = store
        self._databases: set[str] = set()  # ensured by this catalog: once is enough
        if spark is not None:
            apply_deferred(spark, store)  # earlier changes first: statements run in order

    def _sql(self, statement: str) -> None:
        log.debug("catalog: %s", statement)
        if self.spark is None:
            self.store.defer(statement)
        else:
            self.spark.sql(statement)

    def ensure_database(self, database: str) -> None:
        if database not in self._databases:
            self._sql(f"CREATE DATABASE IF NOT EXISTS {_q(database)}")
            self._databases.add(database)

    @staticmethod
    def in_metastore(table: Table) -> bool:
        """Formats Spark reads natively are registered in the metastore; others (Avro
        without spark-avro, JDBC tables, streams, grok tables, JSON records under a
        ``jsonPath``) live in the state store's catalog only."""
        from ..sources.registry import STREAM_CONNECTION_TYPES

        streaming = str(table.parameters.get("typeOfData", "")).lower() in STREAM_CONNECTION_TYPES
        # A custom classifier's JSON records (jsonPath) or grok lines are not Spark's format
        custom = "jsonPath" in table.parameters or "input.format" in table.parameters
        return table.classification in SPARK_FORMATS and not streaming and not custom

    def _create(self, table: Table) -> None:
        if not self.in_metastore(table):
            log.info(
                "catalog: %s (%s) is kept in the state store only", table.qualified, table.classification
            )
            return
        fmt = SPARK_FORMATS[table.classification]
        cols = ", ".join(f"{ident(c.name)} {c.type}" for c in table.columns + table.partition_keys)
        parts = ""
        if table.partition_keys:
            parts = " PARTITIONED BY (" + ", ".join(ident(c.name) for c in table.partition_keys) + ")"
        options = {k[len("option.") :]: v for k, v in table.parameters.items() if k.startswith("option.")}
        opts = ""
        if options:
            opts = " OPTIONS (" + ", ".join(f"{literal(k)} {literal(v)}" for k, v in options.items()) + ")"
        # Spark keeps its own spark.sql.* properties and refuses them from outside.
        props = {k: v for k, v in table.parameters.items() if not k.startswith(("option.", "spark.sql."))}
        props["classification"] = table.classification
        tblprops = (
            " TBLPROPERTIES (" + ", ".join(f"{literal(k)}={literal(v)}" for k, v in props.items()) + ")"
        )
        # A deferred creation may meet its table already made from the catalog by another
        # process's session (``session_sync`` pulls what the catalog has): the same table,
        # so it is kept, as deferred partitions are (ADD IF NOT EXISTS).
        exists = " IF NOT EXISTS" if self.spark is None else ""
        self._sql(
            f"CREATE TABLE{exists} {_q(table.database)}.{_q(table.name)} ({cols}) USING {fmt}"
            f"{opts}{parts} LOCATION {literal(spark_base_path(table.location))}{tblprops}"
        )

    def register(self, table: Table) -> None:
        """Make a table the state store's catalog already has in the metastore."""
        self.ensure_database(table.database)
        self._create(table)

    def create_table(self, table: Table, crawl_id: str | None = None) -> None:
        self.ensure_database(table.database)
        self._create(table)
        self.store.put_table(table, crawl_id)

    def replace_table(self, table: Table, crawl_id: str | None = None) -> None:
        """New schema for an existing table; its partitions stay registered."""
        keep = self.store.partitions(table.database, table.name)
        self._sql(f"DROP TABLE IF EXISTS {_q(table.database)}.{_q(table.name)}")
        self._create(table)
        self.store.put_table(table, crawl_id)
        self._register_partitions(table, keep)

    def set_parameters(self, table: Table, parameters: dict[str, str]) -> Table:
        merged = Table(
            table.database,
            table.name,
            table.location,
            table.classification,
            table.columns,
            table.partition_keys,
            {**table.parameters, **parameters},
        )
        props = ", ".join(f"{literal(k)}={literal(v)}" for k, v in parameters.items())
        if self.in_metastore(table):
            self._sql(f"ALTER TABLE {_q(table.database)}.{_q(table.name)} SET TBLPROPERTIES ({props})")
        self.store.put_table(merged)
        return merged

    def drop_table(self, database: str, name: str) -> None:
        self._sql(f"DROP TABLE IF EXISTS {_q(database)}.{_q(name)}")
        self.store.drop_table(database, name)

    def _spec(self, table: Table, p: Partition) -> str:
        return ", ".join(
            f"{ident(k.name)}={literal(v)}" for k, v in zip(table.partition_keys, p.values, strict=False)
        )

    def _register_partitions(self, table: Table, parts: list[Partition]) -> None:
        if not self.in_metastore(table):
            return
        for p in parts:
            self._sql(
                f"ALTER TABLE {_q(table.database)}.{_q(table.name)} ADD IF NOT EXISTS "
                f"PARTITION ({self._spec(table, p)}) LOCATION {literal(spark_base_path(p.location))}"
            )

    def add_partitions(self, table: Table, parts: list[Partition]) -> None:
        self._register_partitions(table, parts)
        self.store.put_partitions(table.database, table.name, parts)

    def drop_partitions(self, table: Table, parts: list[Partition]) -> None:
        for p in parts if self.in_metastore(table) else []:
            self._sql(
                f"ALTER TABLE {_q(table.database)}.{_q(table.name)} DROP IF EXISTS "
                f"PARTITION ({self._spec(table, p)})"
            )
        self.store.drop_partitions(table.database, table.name, parts)

    def conform(self, df: DataFrame, database: str, name: str, partition_keys: list[str]) -> DataFrame:
        """``df`` as a write that updates the table should hold it: a column that holds no
        value in this frame (a JSON field null in every record reads as a string) takes
        the table's type for it, so the files written agree with the table and a later
        read of the table (or of the folder) does not meet two types for one column."""
        from pyspark.sql import functions

        try:
            existing = self.table(database, name)
        except SparkmarkError:
            return df
        written = [
            Column(f.name, f.dataType.simpleString())
            for f in df.schema.fields
            if f.name not in partition_keys
        ]
        types = {c.name.lower(): c.type for c in existing.columns}
        for column in sorted(_all_null(df, existing.columns, written)):
            actual = next(c.name for c in written if c.name.lower() == column)
            df = df.withColumn(actual, functions.col(f"`{actual}`").cast(types[column]))
        return df

    def record_write(
        self,
        df: DataFrame,
        database: str,
        name: str,
        path: str,
        fmt: str,
        partition_keys: list[str],
        update_behavior: str,
    ) -> None:
        """The table of files just written under ``path`` (Glue's ``enableUpdateCatalog``):
        created when absent; its schema replaced when it changed and ``update_behavior``
        is UPDATE_IN_DATABASE; the partitions the frame holds registered when new."""
        from pyspark.sql import functions

        from ..engine.fileplan import root_url

        location = root_url(path)
        written = [
            Column(f.name, catalog_type(f.dataType)) for f in df.schema.fields if f.name not in partition_keys
        ]
        keys = tuple(Column(k, "string") for k in partition_keys)
        classification = "parquet" if fmt == "glueparquet" else fmt
        try:
            existing = self.table(database, name)
        except SparkmarkError:
            existing = None
        self.ensure_database(database)
        if existing is None:
            columns = tuple(Column(c.name.lower(), c.type) for c in written)
            table = Table(
                database, name, location, classification, columns, keys, {"written_by": "sparkmark"}
            )
            self.create_table(table)
        else:
            table = existing
            fields = [f for f in df.schema.fields if f.name not in partition_keys]
            merged = merge_columns(existing.columns, written, fields)
            if update_behavior == "UPDATE_IN_DATABASE" and (merged, keys) != (
                existing.columns,
                existing.partition_keys,
            ):
                table = replace(existing, columns=merged, partition_keys=keys or existing.partition_keys)
                self.replace_table(table)
        if keys:
            values = {
                tuple(str(v) for v in r)
                for r in df.select(*[functions.col(f"`{k}`") for k in partition_keys]).distinct().collect()
            }
            known = {p.values for p in self.store.partitions(database, name)}
            fresh = [
                Partition(
                    v, location + "/" + "/".join(f"{k}={x}" for k, x in zip(partition_keys, v, strict=False))
                )
                for v in sorted(values)
                if v not in known
            ]
            if fresh:
                self.add_partitions(table, fresh)

    def table(self, database: str, name: str) -> Table:
        return self.store.table(database, name)

    def partitions(self, table: Table, predicate: str | None = None) -> list[Partition]:
        """The table's partitions, pruned by a Spark SQL predicate over the partition keys."""
        from .reading import prune

        if self.spark is None:
            raise SparkmarkError("pruning partitions by a predicate needs a Spark session")

        return prune(self.spark, table, self.store.partitions(table.database, table.name), [predicate or ""])


def _all_null(df: DataFrame, existing: tuple[Column, ...], written: list[Column]) -> frozenset[str]:
    """The written columns (lower-cased) whose type differs from the table's and that
    hold no value in this frame: one pass over it, only when some type differs."""
    from pyspark.sql import functions

    types = {c.name.lower(): c.type for c in existing}
    differing = [c.name for c in written if types.get(c.name.lower(), c.type) != c.type]
    if not differing:
        return frozenset()
    counts = df.select(
        *[functions.count(functions.col(f"`{n}`")).alias(f"c{i}") for i, n in enumerate(differing)]
    )
    row = counts.first()
    return frozenset(n.lower() for i, n in enumerate(differing) if row is None or row[f"c{i}"] == 0)


def merge_columns(
    existing: tuple[Column, ...], written: list[Column], fields: list, all_null: frozenset[str] = frozenset()
) -> tuple[Column, ...]:
    """The table's columns after a write, as Glue's catalog update merges them: each
    existing column keeps its name (matched without regard to case) and its type,
    unless the frame holds it with another type that is not all null (``all_null``: the
    lower-cased names of the written columns that hold no value); columns new to the
    table are added, in lower case, after them."""
    by_name = {c.name.lower(): (c, f) for c, f in zip(written, fields, strict=False)}
    merged = []
    for column in existing:
        found = by_name.pop(column.name.lower(), None)
        if (
            found is None
            or found[1].dataType.typeName() in ("void", "null")
            or column.name.lower() in all_null
            or found[0].type == column.type
        ):
            merged.append(column)
        else:
            merged.append(Column(column.name, found[0].type))
    merged += [Column(c.name.lower(), c.type) for c, _ in by_name.values()]
    return tuple(merged)
