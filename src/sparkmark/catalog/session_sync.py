"""One catalog for a session that uses it as its metastore (``--enable-glue-datacatalog``).

On Glue, such a session's Spark SQL reads and writes the Glue Data Catalog itself: a
``CREATE TABLE`` in a notebook or a dbt model is a Glue table at once, and a table
made with the Glue API is visible to ``spark.sql``. Here the session's Spark has its
Hive metastore and sparkmark keeps its catalog in the state store, so the two are kept
as one around each statement:

- before it, databases and tables the catalog has and the metastore lacks are made in
  the metastore (and the statements other processes deferred are run);
- after it, what changed in the metastore is written to the catalog: new and changed
  tables (with Glue's ``TableType``, view text, and Spark's provider in
  ``spark.sql.sources.provider``), dropped ones, new and dropped databases.

A table's fingerprint (creation time, last DDL time, schema) says whether it changed,
so a statement that only queries costs two listings.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from ..engine.schema import utcnow
from ..engine.storage import canonical
from ..engine.store import StateStore
from ..errors import NotFound
from ..settings import Settings
from .hive import SPARK_FORMATS, HiveCatalog, apply_deferred, metastore_name
from .models import GLUE_KEY, Column, Database, Table
from .store import CatalogStore

log = logging.getLogger("sparkmark.catalog")

TABLE_TYPES = {"EXTERNAL": "EXTERNAL_TABLE", "MANAGED": "MANAGED_TABLE", "VIEW": "VIRTUAL_VIEW"}
SERDE_FORMATS = (
    ("parquet", "parquet"),
    ("orc", "orc"),
    ("json", "json"),
    ("csv", "csv"),
    ("lazysimple", "csv"),
)
Fingerprint = tuple[str, str, str]


def _option(value: Any) -> Any:
    return value.get() if value.isDefined() else None


_ACTIVE: list[MetastoreSync] = []  # the one a session's process runs, for code it runs


def active() -> MetastoreSync | None:
    """The session's sync in this process, if it keeps one (for a statement that writes the
    catalog before the statement ends: the Athena engine's CTAS adds partitions to it)."""
    return _ACTIVE[-1] if _ACTIVE else None


class MetastoreSync:
    def __init__(self, spark: Any, settings: Settings):
        self.spark = spark
        self.store = CatalogStore(StateStore.from_settings(settings))
        self.external = spark._jsparkSession.sharedState().externalCatalog()
        self.hive = HiveCatalog(spark, self.store)  # runs the deferred statements
        self.since = utcnow()
        self._pull()
        self.seen_databases, self.seen = self._metastore()
        self._adopt()
        _ACTIVE[:] = [self]

    def _adopt(self) -> None:
        """Tables the metastore had before this session (made by an earlier one) that the
        catalog lacks are copied to it once."""
        known = {db: {t.name for t in self.store.tables(db)} for db in self.store.databases()}
        for db in sorted(self.seen_databases - set(known)):
            self.store.put_database(Database(db))
        for db, name in sorted(self.seen):
            if name not in known.get(db, set()):
                self.store.put_table(self._table(db, self.external.getTable(db, name)))

    # ------------------------------------------------------------------ metastore → catalog
    def _metastore(self) -> tuple[set[str], dict[tuple[str, str], Fingerprint]]:
        databases = {str(d) for d in _seq(self.external.listDatabases())}
        found: dict[tuple[str, str], Fingerprint] = {}
        for db in databases:
            for table in self._tables(db):
                found[(db, str(table.identifier().table()))] = self._fingerprint(table)
        return databases, found

    def _tables(self, db: str) -> list[Any]:
        names = self.external.listTables(db)
        if names.isEmpty():
            return []
        return _seq(self.external.getTablesByName(db, names))

    @staticmethod
    def _fingerprint(table: Any) -> Fingerprint:
        props = table.properties()
        ddl = props.get("transient_lastDdlTime")
        return (
            str(table.createTime()),
            str(_option(ddl) if ddl is not None else ""),
            str(table.schema().json()),
        )

    def _table(self, db: str, table: Any) -> Table:
        name = str(table.identifier().table())
        kind = TABLE_TYPES.get(str(table.tableType().name()), "EXTERNAL_TABLE")
        provider = str(_option(table.provider()) or "hive").lower()
        storage = table.storage()
        location = _option(storage.locationUri())
        classification = provider
        if provider == "hive":
            serde = str(_option(storage.serde()) or "").lower()
            classification = next((fmt for key, fmt in SERDE_FORMATS if key in serde), "csv")
        partition_names = {str(n) for n in _seq(table.partitionColumnNames())}
        fields = [(str(f.name()), str(f.dataType().simpleString())) for f in _seq(table.schema().fields())]
        columns = tuple(Column(n, t) for n, t in fields if n not in partition_names)
        keys = tuple(Column(n, t) for n, t in fields if n in partition_names)
        params = {
            str(k): str(v)
            for k, v in _map_items(table.properties())
            if not str(k).startswith("spark.sql.sources.schema")
        }
        if provider != "hive":
            params["spark.sql.sources.provider"] = provider
        glue: dict[str, Any] = {"TableType": kind, "DerivedClassification": "classification" not in params}
        view = _option(table.viewText())
        if view is not None:
            glue["ViewOriginalText"] = glue["ViewExpandedText"] = str(view)
        params["classification"] = params.get("classification", classification)
        params[GLUE_KEY] = json.dumps(glue)
        where = canonical(str(location)) if location is not None else ""  # s3:// as Glue keeps it
        return Table(db, name, where, classification, columns, keys, params)

    def after(self) -> str | None:
        """Write what the statement changed in the metastore to the catalog; a one-line
        problem to show with the statement's output, or None."""
        try:
            databases, current = self._metastore()
            for db in sorted(databases - self.seen_databases):
                try:
                    self.store.database(db)
                except NotFound:
                    self.store.put_database(Database(db))
            written = self._written_since()
            for (db, name), fingerprint in current.items():
                if (db, name) in written:
                    continue  # sparkmark wrote the catalog itself (a crawl, a job's catalog write)
                if self.seen.get((db, name)) != fingerprint:
                    jtable = self.external.getTable(db, name)
                    self.store.put_table(self._table(db, jtable))
            for db, name in set(self.seen) - set(current):
                self.store.drop_table(db, name)
            for db in sorted(self.seen_databases - databases):
                with contextlib.suppress(NotFound):
                    self.store.drop_database(db)
            self.seen_databases, self.seen = databases, current
        except Exception as exc:  # noqa: BLE001 - the statement's own result stands
            log.warning("catalog: the session's tables could not be copied to the catalog: %s", exc)
            return f"the catalog was not updated from this statement: {str(exc).splitlines()[0][:300]}"
        return None

    # ------------------------------------------------------------------ catalog → metastore
    def _written_since(self) -> set[tuple[str, str]]:
        """Tables whose catalog entry changed since the statement began: written by
        sparkmark's own code in this process, in the catalog and the metastore both."""
        found = set()
        for db in self.store.databases():
            for name, (_created, updated) in self.store.times(db).items():
                if updated is not None and updated >= self.since:
                    found.add((db, name))
        return found

    def before(self) -> None:
        self.since = utcnow()
        apply_deferred(self.spark, self.store)
        catalog = self._catalog()
        if self._pull(catalog) + self._forget_dropped(catalog):
            self.seen_databases, self.seen = self._metastore()

    def _catalog(self) -> dict[str, list[Table]]:
        """The catalog's tables by database, listed once for a statement."""
        return {db: self.store.tables(db) for db in self.store.databases()}

    def _forget_dropped(self, catalog: dict[str, list[Table]]) -> int:
        """External tables the metastore had from the catalog that the catalog no longer
        has (deleted through the Glue API, as dbt-athena and the console delete them),
        dropped from the metastore too; their files are left, as the catalog's deletion
        left them. Names are compared as the metastore spells them (``sales-eu`` is
        ``sales_eu`` there)."""
        kept = {
            (metastore_name(db), metastore_name(t.name)) for db, tables in catalog.items() for t in tables
        }
        gone = 0
        for db, name in list(self.seen):
            if (db, name) in kept:
                continue
            with contextlib.suppress(Exception):
                table = self.external.getTable(db, name)
                if str(table.tableType().name()) != "EXTERNAL":
                    continue  # a managed table's drop would delete its files
                self.external.dropTable(db, name, True, False)
                gone += 1
        return gone

    def _pull(self, catalog: dict[str, list[Table]] | None = None) -> int:
        """Databases and tables the catalog has and the metastore lacks, made there."""
        made = 0
        have = {str(d) for d in _seq(self.external.listDatabases())}
        for db, tables in (catalog if catalog is not None else self._catalog()).items():
            target = metastore_name(db)
            if target not in have:
                self.spark.sql(f"CREATE DATABASE IF NOT EXISTS `{target}`")
                made += 1
            names = {str(n) for n in _seq(self.external.listTables(target))} if target in have else set()
            views = []
            for table in tables:
                if table.name.lower() not in names and _view_text(table):
                    views.append(table)
                    continue
                if table.name.lower() in names or table.classification not in SPARK_FORMATS:
                    continue
                if not table.location or not self.hive.in_metastore(table):
                    continue
                try:
                    self.hive.register(table)
                    made += 1
                except Exception as exc:  # noqa: BLE001 - one table's problem is logged, the rest go on
                    log.warning(
                        "catalog: %s could not be made in the session's metastore: %s", table.qualified, exc
                    )
            for view in views:  # after the tables they read
                try:
                    self.spark.sql(
                        f"CREATE VIEW IF NOT EXISTS `{target}`.`{view.name}` AS {_view_text(view)}"
                    )
                    made += 1
                except Exception as exc:  # noqa: BLE001 - as above
                    log.warning(
                        "catalog: view %s could not be made in the session's metastore: %s",
                        view.qualified,
                        exc,
                    )
        return made


def _view_text(table: Table) -> str | None:
    """A view's SQL, from the Glue fields the catalog keeps with it."""
    try:
        glue = json.loads(table.parameters.get(GLUE_KEY, "{}"))
    except ValueError:
        return None
    if glue.get("TableType") != "VIRTUAL_VIEW":
        return None
    return glue.get("ViewOriginalText") or None


def _seq(value: Any) -> list[Any]:
    """A Scala sequence (or a Java array) as a Python list."""
    from py4j.java_collections import JavaArray

    if isinstance(value, JavaArray):
        return list(value)
    return [value.apply(i) for i in range(value.size())]


def _map_items(value: Any) -> list[tuple[Any, Any]]:
    items = []
    iterator = value.iterator()
    while iterator.hasNext():
        pair = iterator.next()
        items.append((pair._1(), pair._2()))
    return items
