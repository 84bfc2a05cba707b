"""Crawling JDBC targets: tables of a named connection whose path matches the include path.

Include paths follow Glue: ``database/schema/table`` on PostgreSQL and
``database/table`` on MariaDB/MySQL and SQLite, with ``%`` as a wildcard in any
part. Such tables are kept in the state store's catalog (classification
``postgresql``, ``mysql`` or ``sqlite``, with the connection's name), not in the
Hive metastore: registering them there would put credentials in its options.
"""

from __future__ import annotations

import fnmatch

import sqlalchemy as sa

from ..catalog.models import Column, Table
from ..catalog.store import CatalogStore
from ..connections import Connections
from ..engine import jdbc as jdbc_keys
from ..engine.globs import ExclusionMatcher


def spark_type(sa_type: sa.types.TypeEngine) -> str:
    if isinstance(sa_type, sa.types.Boolean):
        return "boolean"
    if isinstance(sa_type, sa.types.BigInteger):
        return "bigint"
    if isinstance(sa_type, sa.types.SmallInteger):
        return "smallint"
    if isinstance(sa_type, sa.types.Integer):
        return "int"
    if isinstance(sa_type, sa.types.Float):
        return "double"
    if isinstance(sa_type, sa.types.Numeric):
        if sa_type.precision:
            return f"decimal({sa_type.precision},{sa_type.scale or 0})"
        return "decimal(38,18)"
    if isinstance(sa_type, sa.types.DateTime):
        return "timestamp"
    if isinstance(sa_type, sa.types.Date):
        return "date"
    if isinstance(sa_type, (sa.types.LargeBinary, sa.types._Binary)):
        return "binary"
    return "string"


def crawl_jdbc_target(
    connections: Connections,
    store: CatalogStore,
    database_name: str,
    prefix: str,
    connection_name: str,
    include_path: str,
    exclusions: list[str],
    crawl_id: str,
) -> tuple[list[str], list[str]]:
    """Returns (tables created, tables updated)."""
    resolved = connections.resolve(connection_name)
    db = jdbc_keys.parse_database(resolved.url, resolved.user, resolved.password)
    parts = include_path.split("/")
    engine = db.engine()
    created, updated = [], []
    try:
        inspector = sa.inspect(engine)
        schemas: list[str | None]
        if db.dialect.name == "postgresql":
            _, schema_pat, table_pat = (parts + ["%", "%"])[:3]
            schemas = [
                s
                for s in inspector.get_schema_names()
                if fnmatch.fnmatchcase(s, schema_pat.replace("%", "*"))
            ]
        else:
            table_pat = (parts + ["%"])[1] if len(parts) > 1 else "%"
            schemas = [None]
        database = parts[0] if parts[0] and "%" not in parts[0] else engine.url.database
        if database and "/" in database:  # SQLite: the file's name, not its path
            database = database.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        skip = ExclusionMatcher(exclusions)
        existing = {t.name for t in store.tables(database_name)}
        for schema in schemas:
            for name in inspector.get_table_names(schema=schema):
                if not fnmatch.fnmatchcase(name, table_pat.replace("%", "*")):
                    continue
                qualified = f"{schema}.{name}" if schema else name
                if skip and skip.excludes(qualified, qualified, qualified.replace(".", "/")):
                    continue
                cols = tuple(
                    Column(c["name"], spark_type(c["type"]))
                    for c in inspector.get_columns(name, schema=schema)
                )
                pk = inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or []
                # Glue's name for a crawled JDBC table: <prefix><database>_<schema>_<table>
                # (no schema part where the database has none, as MySQL's).
                table_name = (prefix + "_".join(p for p in (database, schema, name) if p)).lower()
                table = Table(
                    database_name,
                    table_name,
                    f"{db.display}/{qualified}",
                    db.dialect.name,
                    cols,
                    (),
                    {
                        "connectionName": connection_name,
                        "dbtable": qualified,
                        "primaryKey": ",".join(pk),
                        "crawl_id": crawl_id,
                    },
                )
                changed = store.put_table(table, crawl_id)
                if table_name not in existing:
                    created.append(table.qualified)
                elif changed:
                    updated.append(table.qualified)
    finally:
        engine.dispose()
    return created, updated
