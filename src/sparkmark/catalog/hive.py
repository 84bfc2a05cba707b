"""The catalog on Spark's Hive metastore, with its copy in the state store.

Tables are external Spark data-source tables (``USING json|csv|parquet|…``,
``LOCATION`` the data's folder), so Spark SQL, the Thrift server and other
Hive-aware tools see them; partitions are registered with their own locations,
which also covers folders that are not named ``key=value``.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from ..errors import SparkmarkError
from .models import Partition, Table
from .store import CatalogStore

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import SparkSession

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


class HiveCatalog:
    def __init__(self, spark: SparkSession, store: CatalogStore):
        if spark.conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
            raise SparkmarkError(
                "the Spark session has no Hive support; start it with sparkmark (which enables "
                "the metastore) or with enableHiveSupport()"
            )
        self.spark = spark
        self.store = store

    def _sql(self, statement: str):
        log.debug("catalog: %s", statement)
        return self.spark.sql(statement)

    def ensure_database(self, database: str) -> None:
        self._sql(f"CREATE DATABASE IF NOT EXISTS {_q(database)}")

    @staticmethod
    def in_metastore(table: Table) -> bool:
        """Formats Spark reads natively are registered in the metastore; others (Avro
        without spark-avro, JDBC tables) live in the state store's catalog only."""
        return table.classification in SPARK_FORMATS

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
        props = {k: v for k, v in table.parameters.items() if not k.startswith("option.")}
        props["classification"] = table.classification
        tblprops = (
            " TBLPROPERTIES (" + ", ".join(f"{literal(k)}={literal(v)}" for k, v in props.items()) + ")"
        )
        self._sql(
            f"CREATE TABLE {_q(table.database)}.{_q(table.name)} ({cols}) USING {fmt}"
            f"{opts}{parts} LOCATION {literal(table.location)}{tblprops}"
        )

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
                f"PARTITION ({self._spec(table, p)}) LOCATION {literal(p.location)}"
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

    def table(self, database: str, name: str) -> Table:
        return self.store.table(database, name)

    def partitions(self, table: Table, predicate: str | None = None) -> list[Partition]:
        """The table's partitions, pruned by a Spark SQL predicate over the partition keys."""
        from .reading import prune

        return prune(self.spark, table, self.store.partitions(table.database, table.name), [predicate or ""])
