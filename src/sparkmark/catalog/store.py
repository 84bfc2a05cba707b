"""The state store's copy of the catalog: tables, partitions and schema versions.

The Hive metastore is where Spark reads tables from. This copy lets the CLI answer
without opening the metastore (embedded Derby admits one process at a time), and
keeps every schema a table ever had, for ``sparkmark catalog versions``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import (
    Column as SAColumn,
)
from sqlalchemy import (
    Index,
    Integer,
    MetaData,
    String,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy import (
    Table as SATable,
)
from sqlalchemy.exc import IntegrityError

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound, SparkmarkError
from ..state import components
from .models import Column, Database, Partition, SchemaVersion, Table

metadata = MetaData()

tables = SATable(
    "sm_catalog_tables",
    metadata,
    SAColumn("database", String(255), primary_key=True),
    SAColumn("name", String(255), primary_key=True),
    SAColumn("location", Text, nullable=False),
    SAColumn("classification", String(32), nullable=False),
    SAColumn("columns", Text, nullable=False),
    SAColumn("partition_keys", Text, nullable=False),
    SAColumn("parameters", Text, nullable=False),
    SAColumn("updated_at", UTCDateTime, nullable=False),
)
partitions = SATable(
    "sm_catalog_partitions",
    metadata,
    SAColumn("database", String(255), primary_key=True),
    SAColumn("table", String(255), primary_key=True),
    SAColumn("values", Text, primary_key=True),  # JSON list
    SAColumn("location", Text, nullable=False),
    SAColumn("added_at", UTCDateTime, nullable=False),
)
versions = SATable(
    "sm_catalog_schema_versions",
    metadata,
    SAColumn("database", String(255), primary_key=True),
    SAColumn("table", String(255), primary_key=True),
    SAColumn("version", Integer, primary_key=True),
    SAColumn("columns", Text, nullable=False),
    SAColumn("partition_keys", Text, nullable=False),
    SAColumn("created_at", UTCDateTime, nullable=False),
    SAColumn("crawl_id", String(80)),
)

databases = SATable(
    "sm_catalog_databases",
    metadata,
    SAColumn("name", String(255), primary_key=True),
    SAColumn("description", Text, nullable=False),
    SAColumn("location_uri", Text, nullable=False),
    SAColumn("parameters", Text, nullable=False),
    SAColumn("created_at", UTCDateTime, nullable=False),
)

# Metastore statements a process without Spark could not run (a crawl that inferred its
# schemas without a JVM): the next sparkmark Spark session runs them, in order.
deferred = SATable(
    "sm_catalog_deferred",
    metadata,
    SAColumn("seq", Integer, primary_key=True, autoincrement=True),
    SAColumn("statement", Text, nullable=False),
    SAColumn("created_at", UTCDateTime, nullable=False),
)

# Glue's partition indexes: a table's index names keys (up to 3); each partition has an
# entry holding its values of those keys, looked up through the database's own index.
partition_indexes = SATable(
    "sm_catalog_partition_indexes",
    metadata,
    SAColumn("database", String(255), primary_key=True),
    SAColumn("table", String(255), primary_key=True),
    SAColumn("index_name", String(255), primary_key=True),
    SAColumn("keys", Text, nullable=False),  # JSON list of key names
    SAColumn("created_at", UTCDateTime, nullable=False),
)
index_entries = SATable(
    "sm_catalog_partition_index_entries",
    metadata,
    SAColumn("database", String(255), primary_key=True),
    SAColumn("table", String(255), primary_key=True),
    SAColumn("index_name", String(255), primary_key=True),
    SAColumn("key_values", String(1024), primary_key=True),  # JSON list: the partition's values of the keys
    SAColumn("values", String(2048), primary_key=True),  # JSON list: all the partition's values
)
Index("sm_catalog_index_lookup", index_entries.c.database, index_entries.c.table, index_entries.c.index_name,
      index_entries.c.key_values)  # fmt: skip

COMPONENT = components.declare(
    "catalog",
    "catalog_schema_version",
    metadata,
    [tables, partitions, versions],
    [databases],  # 2: databases with no tables yet
    [deferred],  # 3: statements the Hive metastore has yet to see
    [partition_indexes, index_entries],  # 4
)


class TableChanged(SparkmarkError):
    """A compare-and-swap of a table found it changed (or dropped) by another writer."""


def _cols(doc: str) -> tuple[Column, ...]:
    return tuple(Column(n, t) for n, t in json.loads(doc))


def _doc(cols: Iterable[Column]) -> str:
    return json.dumps([[c.name, c.type] for c in cols])


class CatalogStore:
    """Catalog tables in the state store's database, migrated on open."""

    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def put_database(self, db: Database, *, create: bool = True) -> None:
        """Record a database; with ``create``, refuse one that already exists."""
        values = {
            "description": db.description,
            "location_uri": db.location_uri,
            "parameters": json.dumps(db.parameters, sort_keys=True),
        }
        with self.state.begin() as conn:
            row = conn.execute(select(databases.c.name).where(databases.c.name == db.name)).first()
            has_tables = conn.execute(select(tables.c.name).where(tables.c.database == db.name)).first()
            if create and (row or has_tables):
                raise AlreadyExists(f"database {db.name!r} already exists")
            if row:
                conn.execute(update(databases).where(databases.c.name == db.name).values(**values))
            else:
                conn.execute(insert(databases).values(name=db.name, created_at=utcnow(), **values))

    def database(self, name: str) -> Database:
        with self.state.connect() as conn:
            row = conn.execute(select(databases).where(databases.c.name == name)).first()
            has_tables = conn.execute(select(tables.c.name).where(tables.c.database == name)).first()
        if row is not None:
            return Database(
                row.name, row.description, row.location_uri, json.loads(row.parameters), row.created_at
            )
        if has_tables:  # made by a crawler, which records no database of its own
            return Database(name)
        raise NotFound(f"no database {name!r} in the catalog")

    def drop_database(self, name: str) -> None:
        """Delete a database with its tables, partitions and schema versions."""
        self.database(name)
        with self.state.begin() as conn:
            conn.execute(delete(partitions).where(partitions.c.database == name))
            conn.execute(delete(partition_indexes).where(partition_indexes.c.database == name))
            conn.execute(delete(index_entries).where(index_entries.c.database == name))
            conn.execute(delete(versions).where(versions.c.database == name))
            conn.execute(delete(tables).where(tables.c.database == name))
            conn.execute(delete(databases).where(databases.c.name == name))

    def put_table(
        self, table: Table, crawl_id: str | None = None, *, replacing: Table | None = None, new: bool = False
    ) -> int | None:
        """Record the table; returns the new schema version number when its schema changed.

        ``replacing`` makes it a compare-and-swap: the table is changed only if it is still
        exactly ``replacing`` (its parameters, where Glue's VersionId and an Iceberg
        table's metadata location are kept), else :class:`TableChanged` is raised and
        nothing is written. ``new`` refuses (AlreadyExists) a table that exists. Either
        check and the write are one statement, so two writers never both pass."""
        try:
            return self._put_table(table, crawl_id, replacing, new)
        except IntegrityError:  # another writer wrote it between the look and the write
            if new:
                raise AlreadyExists(f"table {table.qualified} already exists") from None
            raise TableChanged(f"table {table.qualified} was changed by another writer") from None

    def _put_table(
        self, table: Table, crawl_id: str | None, replacing: Table | None, new: bool
    ) -> int | None:
        now = utcnow()
        values = {
            "location": table.location,
            "classification": table.classification,
            "columns": _doc(table.columns),
            "partition_keys": _doc(table.partition_keys),
            "parameters": json.dumps(table.parameters, sort_keys=True),
            "updated_at": now,
        }
        with self.state.begin() as conn:
            key = (tables.c.database == table.database) & (tables.c.name == table.name)
            before = conn.execute(select(tables.c.partition_keys).where(key)).first()
            if before is not None and new:
                raise AlreadyExists(f"table {table.qualified} already exists")
            if replacing is not None:
                if before is None:
                    raise TableChanged(f"table {table.qualified} was dropped by another writer")
                expected = json.dumps(replacing.parameters, sort_keys=True)
                swapped = conn.execute(
                    update(tables).where(key & (tables.c.parameters == expected)).values(**values)
                )
                if swapped.rowcount != 1:
                    raise TableChanged(f"table {table.qualified} was changed by another writer")
            elif before is not None:
                conn.execute(update(tables).where(key).values(**values))
            else:
                conn.execute(insert(tables).values(database=table.database, name=table.name, **values))
            if before is not None and before.partition_keys != values["partition_keys"]:
                # An index's entries hold values by the old keys: it no longer fits.
                for kept in (partition_indexes, index_entries):
                    conn.execute(
                        delete(kept).where((kept.c.database == table.database) & (kept.c.table == table.name))
                    )
            vkey = (versions.c.database == table.database) & (versions.c.table == table.name)
            last = conn.execute(
                select(versions.c.version, versions.c.columns, versions.c.partition_keys)
                .where(vkey)
                .order_by(versions.c.version.desc())
                .limit(1)
            ).first()
            if last and last.columns == values["columns"] and last.partition_keys == values["partition_keys"]:
                return None
            number = (last.version if last else 0) + 1
            conn.execute(
                insert(versions).values(
                    database=table.database,
                    table=table.name,
                    version=number,
                    columns=values["columns"],
                    partition_keys=values["partition_keys"],
                    created_at=now,
                    crawl_id=crawl_id,
                )
            )
            return number

    def rename_table(self, database: str, name: str, new_database: str, new_name: str) -> None:
        """Move a table, with its partitions and schema versions, to another name in one
        transaction (AlreadyExists when that name is taken). Partition indexes are
        dropped: their entries are looked up by the old name."""
        try:
            with self.state.begin() as conn:
                if conn.execute(
                    select(tables.c.name).where(
                        (tables.c.database == new_database) & (tables.c.name == new_name)
                    )
                ).first():
                    raise AlreadyExists(f"table {new_database}.{new_name} already exists")
                for kept, named in (
                    (tables, tables.c.name),
                    (partitions, partitions.c.table),
                    (versions, versions.c.table),
                ):
                    conn.execute(
                        update(kept)
                        .where((kept.c.database == database) & (named == name))
                        .values({"database": new_database, named.key: new_name})
                    )
                for kept in (partition_indexes, index_entries):
                    conn.execute(delete(kept).where((kept.c.database == database) & (kept.c.table == name)))
        except IntegrityError:
            raise AlreadyExists(f"table {new_database}.{new_name} already exists") from None

    def drop_table(self, database: str, name: str) -> None:
        with self.state.begin() as conn:
            conn.execute(delete(tables).where((tables.c.database == database) & (tables.c.name == name)))
            conn.execute(
                delete(partitions).where((partitions.c.database == database) & (partitions.c.table == name))
            )
            for kept in (partition_indexes, index_entries):
                conn.execute(delete(kept).where((kept.c.database == database) & (kept.c.table == name)))

    def _indexes(self, conn, database: str, name: str) -> dict[str, list[str]]:
        rows = conn.execute(
            select(partition_indexes.c.index_name, partition_indexes.c["keys"]).where(
                (partition_indexes.c.database == database) & (partition_indexes.c.table == name)
            )
        ).all()
        return {index_name: json.loads(keys) for index_name, keys in rows}

    def _entries(self, database: str, name: str, indexes: dict[str, list[str]], parts: list[Partition]):
        """The index entries of ``parts`` for each of ``indexes`` (the table read once)."""
        if not indexes or not parts:
            return []
        table_keys = [c.name for c in self.table(database, name).partition_keys]
        positions = {index: [table_keys.index(k) for k in keys] for index, keys in indexes.items()}
        return [self._entry(database, name, index, at, p) for index, at in positions.items() for p in parts]

    @staticmethod
    def _entry(database: str, name: str, index: str, at: list[int], p: Partition) -> dict[str, str]:
        return {
            "database": database,
            "table": name,
            "index_name": index,
            "key_values": json.dumps([p.values[i] for i in at]),
            "values": json.dumps(list(p.values)),
        }

    def create_partition_index(self, database: str, name: str, index: str, keys: list[str]) -> None:
        """A partition index over ``keys`` (partition keys of the table), filled from the
        partitions the table has (Glue's backfill)."""
        entries = self._entries(database, name, {index: keys}, self.partitions(database, name))
        with self.state.begin() as conn:
            if index in self._indexes(conn, database, name):
                raise AlreadyExists(f"partition index {index!r} already exists on {database}.{name}")
            conn.execute(
                insert(partition_indexes).values(
                    database=database,
                    table=name,
                    index_name=index,
                    keys=json.dumps(keys),
                    created_at=utcnow(),
                )
            )
            if entries:
                conn.execute(insert(index_entries), entries)

    def partition_indexes(self, database: str, name: str) -> dict[str, list[str]]:
        """The table's partition indexes: their names and keys."""
        with self.state.connect() as conn:
            return self._indexes(conn, database, name)

    def drop_partition_index(self, database: str, name: str, index: str) -> None:
        with self.state.begin() as conn:
            if index not in self._indexes(conn, database, name):
                raise NotFound(f"no partition index {index!r} on {database}.{name}")
            for kept in (partition_indexes, index_entries):
                conn.execute(
                    delete(kept).where(
                        (kept.c.database == database) & (kept.c.table == name) & (kept.c.index_name == index)
                    )
                )

    def indexed_key_values(self, database: str, name: str, index: str) -> list[tuple[str, ...]]:
        """The distinct values the index's keys take (what an expression is tried on first)."""
        with self.state.connect() as conn:
            rows = conn.execute(
                select(index_entries.c.key_values)
                .where(
                    (index_entries.c.database == database)
                    & (index_entries.c.table == name)
                    & (index_entries.c.index_name == index)
                )
                .distinct()
            ).scalars()
            return [tuple(json.loads(v)) for v in rows]

    def partitions_by_index(
        self, database: str, name: str, index: str, key_values: Iterable[tuple[str, ...]]
    ) -> list[Partition]:
        """The partitions whose index keys take one of ``key_values``, found through the
        index (the table's other partitions are not read)."""
        wanted = [json.dumps(list(v)) for v in key_values]
        found: list[Partition] = []
        with self.state.connect() as conn:
            for start in range(0, len(wanted), 500):
                rows = conn.execute(
                    select(partitions.c["values"], partitions.c.location)
                    .join(
                        index_entries,
                        (index_entries.c.database == partitions.c.database)
                        & (index_entries.c.table == partitions.c.table)
                        & (index_entries.c["values"] == partitions.c["values"]),
                    )
                    .where(
                        (index_entries.c.database == database)
                        & (index_entries.c.table == name)
                        & (index_entries.c.index_name == index)
                        & index_entries.c.key_values.in_(wanted[start : start + 500])
                    )
                ).all()
                found += [Partition(tuple(json.loads(v)), loc) for v, loc in rows]
        return sorted(found, key=lambda p: p.values)

    def put_partitions(self, database: str, name: str, parts: Iterable[Partition]) -> None:
        listed = list(parts)
        rows = [
            {
                "database": database,
                "table": name,
                "values": json.dumps(list(p.values)),
                "location": p.location,
                "added_at": utcnow(),
            }
            for p in listed
        ]
        if not rows:
            return
        entries = self._entries(database, name, self.partition_indexes(database, name), listed)
        with self.state.begin() as conn:
            conn.execute(insert(partitions), rows)
            if entries:
                conn.execute(insert(index_entries), entries)

    def drop_partitions(self, database: str, name: str, parts: Iterable[Partition]) -> None:
        with self.state.begin() as conn:
            for p in parts:
                for kept in (partitions, index_entries):
                    conn.execute(
                        delete(kept).where(
                            (kept.c.database == database)
                            & (kept.c.table == name)
                            & (kept.c["values"] == json.dumps(list(p.values)))
                        )
                    )

    def defer(self, statement: str) -> None:
        with self.state.begin() as conn:
            conn.execute(insert(deferred).values(statement=statement, created_at=utcnow()))

    def deferred(self) -> list[tuple[int, str]]:
        with self.state.connect() as conn:
            rows = conn.execute(select(deferred.c.seq, deferred.c.statement).order_by(deferred.c.seq))
            return [(r.seq, r.statement) for r in rows]

    def forget_deferred(self, seq: int) -> None:
        with self.state.begin() as conn:
            conn.execute(delete(deferred).where(deferred.c.seq == seq))

    def databases(self) -> list[str]:
        with self.state.connect() as conn:
            named = set(conn.execute(select(tables.c.database).distinct()).scalars())
            named |= set(conn.execute(select(databases.c.name)).scalars())
        return sorted(named)

    def tables(self, database: str) -> list[Table]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(tables).where(tables.c.database == database).order_by(tables.c.name)
            ).all()
        return [self._table(r) for r in rows]

    def table(self, database: str, name: str) -> Table:
        with self.state.connect() as conn:
            row = conn.execute(
                select(tables).where((tables.c.database == database) & (tables.c.name == name))
            ).first()
        if row is None:
            raise NotFound(f"no table {database}.{name} in the catalog (run a crawler, or check the name)")
        return self._table(row)

    @staticmethod
    def _table(row) -> Table:
        return Table(
            row.database,
            row.name,
            row.location,
            row.classification,
            _cols(row.columns),
            _cols(row.partition_keys),
            json.loads(row.parameters),
        )

    def partitions(self, database: str, name: str) -> list[Partition]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(partitions.c["values"], partitions.c.location).where(
                    (partitions.c.database == database) & (partitions.c.table == name)
                )
            ).all()
        return sorted((Partition(tuple(json.loads(v)), loc) for v, loc in rows), key=lambda p: p.values)

    def times(self, database: str) -> dict[str, tuple[datetime | None, datetime]]:
        """Each table of ``database``: (when it was created, when it was last changed)."""
        with self.state.connect() as conn:
            changed = conn.execute(
                select(tables.c.name, tables.c.updated_at).where(tables.c.database == database)
            ).all()
            created = conn.execute(
                select(versions.c.table, func.min(versions.c.created_at))
                .where(versions.c.database == database)
                .group_by(versions.c.table)
            ).all()
        first = {r[0]: r[1] for r in created}
        return {r.name: (first.get(r.name), r.updated_at) for r in changed}

    def versions(self, database: str, name: str) -> list[SchemaVersion]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(versions)
                .where((versions.c.database == database) & (versions.c.table == name))
                .order_by(versions.c.version)
            ).all()
        return [
            SchemaVersion(
                r.database,
                r.table,
                r.version,
                _cols(r.columns),
                _cols(r.partition_keys),
                r.created_at,
                r.crawl_id,
            )
            for r in rows
        ]


def diff(old: SchemaVersion, new: SchemaVersion) -> list[str]:
    """Lines describing how ``new`` differs from ``old``."""
    before, after = {c.name: c.type for c in old.columns}, {c.name: c.type for c in new.columns}
    lines = [f"+ {n} {t}" for n, t in after.items() if n not in before]
    lines += [f"- {n} {t}" for n, t in before.items() if n not in after]
    lines += [f"~ {n} {before[n]} -> {t}" for n, t in after.items() if n in before and before[n] != t]
    if old.partition_keys != new.partition_keys:
        lines.append(
            f"~ partition keys {[c.name for c in old.partition_keys]} -> {[c.name for c in new.partition_keys]}"
        )
    return lines
