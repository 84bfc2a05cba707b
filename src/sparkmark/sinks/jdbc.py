"""JDBC sinks: append, overwrite or upsert through a staging table, in one transaction.

Spark writes the rows to a fresh staging table (its own transactions, per
partition). Then one database transaction moves them into the target: a plain
insert, a delete-and-insert, or the dialect's upsert. A failure anywhere leaves
the target as it was; the staging table is dropped either way.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import sqlalchemy as sa
from pyspark.sql import DataFrame

from ..engine import jdbc as kr
from ..errors import SourceError
from ..spark import driver_class

log = logging.getLogger("sparkmark.jdbc")

MODES = ("append", "overwrite", "upsert")


def _unique_sets(inspector, name: str, schema: str | None) -> list[set[str]]:
    sets = []
    pk = inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or []
    if pk:
        sets.append(set(pk))
    for uc in inspector.get_unique_constraints(name, schema=schema):
        sets.append(set(uc["column_names"]))
    for ix in inspector.get_indexes(name, schema=schema):
        if ix.get("unique"):
            sets.append(set(c for c in ix["column_names"] if c))
    return sets


def write(df: DataFrame, database: kr.Database, table: str, *, mode: str,
          keys: list[str] | None) -> dict[str, Any]:
    if mode not in MODES:
        raise SourceError(f"write mode must be one of {', '.join(MODES)}, got {mode!r}")
    parts = kr.split_table_name(table)
    schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    source = kr.Source(database, table, None, ())
    q = source.quote
    target = source.quoted_table()
    stage_name = f"sm_stage_{uuid.uuid4().hex[:12]}"
    stage_spark = f"{schema}.{stage_name}" if schema else stage_name
    stage = f"{q(schema)}.{stage_name}" if schema else stage_name
    columns = list(df.columns)
    if not columns:
        raise SourceError("the DataFrame to write has no columns")

    engine = database.engine()
    try:
        inspector = sa.inspect(engine)
        exists = inspector.has_table(name, schema=schema)
        if mode == "upsert":
            if not exists:
                raise SourceError(
                    f"upsert needs the target table {table!r} to exist, with a primary key or "
                    "unique index on the upsert keys"
                )
            keys = list(keys or inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or [])
            if not keys:
                raise SourceError(f"upsert into {table!r} needs keys=[...]: the table has no primary key")
            if set(keys) not in _unique_sets(inspector, name, schema):
                raise SourceError(
                    f"upsert keys {keys} of {table!r} are not its primary key or a unique index; "
                    "the database cannot tell an update from an insert without one"
                )
            missing = [k for k in keys if k not in columns]
            if missing:
                raise SourceError(f"upsert key(s) {', '.join(missing)} are not columns of the DataFrame")

        spark = df.sparkSession
        driver = driver_class(spark, database.dialect.drivers, database.dialect.name)
        write_mode = "overwrite"
        to_write = df
        if database.dialect.name == "sqlite":
            # One writer at a time for a file database; and Spark's table-exists probe
            # fails on SQLite, so the staging table is created here first.
            to_write = df.coalesce(1)
            with engine.begin() as conn:
                kr.execute(conn, _sqlite_stage_ddl(stage, df, q))
            write_mode = "append"
        to_write.write.jdbc(database.spark_url(driver), stage_spark, mode=write_mode,
                            properties=database.jdbc_properties(driver))

        col_list = ", ".join(q(c) for c in columns)
        insert = f"INSERT INTO {target} ({col_list}) SELECT {col_list} FROM {stage}"
        with engine.begin() as conn:
            staged = kr.execute(conn, f"SELECT COUNT(*) FROM {stage}").scalar()
            if not exists:
                kr.execute(conn, f"CREATE TABLE {target} AS SELECT {col_list} FROM {stage} WHERE 1 = 0")
            if mode == "overwrite":
                kr.execute(conn, f"DELETE FROM {target}")
                kr.execute(conn, insert)
            elif mode == "append":
                kr.execute(conn, insert)
            else:
                key_list = ", ".join(q(k) for k in keys)
                dup = kr.execute(conn, 
                    f"SELECT {key_list} FROM {stage} GROUP BY {key_list} HAVING COUNT(*) > 1 LIMIT 1"
                ).first()
                if dup is not None:
                    raise SourceError(
                        f"the rows to upsert into {table!r} hold key {tuple(dup)} more than once; "
                        "deduplicate them first"
                    )
                kr.execute(conn, _upsert_sql(database.dialect.name, target, stage, columns, keys, q))
        log.info("wrote %d rows to %s (%s)", staged, table, mode)
        return {"table": table, "mode": mode, "rows_written": staged}
    except sa.exc.DBAPIError as exc:
        raise SourceError(f"writing {table!r} failed and the target was left as it was: {str(exc.orig).strip()}") from None
    finally:
        try:
            with engine.begin() as conn:
                kr.execute(conn, f"DROP TABLE IF EXISTS {stage}")
        except sa.exc.DBAPIError as exc:
            log.warning("could not drop staging table %s: %s", stage, exc.orig)
        engine.dispose()


def _upsert_sql(dialect: str, target: str, stage: str, columns: list[str], keys: list[str], q) -> str:
    col_list = ", ".join(q(c) for c in columns)
    key_list = ", ".join(q(k) for k in keys)
    others = [c for c in columns if c not in keys]
    if dialect == "mysql":
        updates = ", ".join(f"{q(c)} = VALUES({q(c)})" for c in (others or keys[:1]))
        return (f"INSERT INTO {target} ({col_list}) SELECT {col_list} FROM {stage} "
                f"ON DUPLICATE KEY UPDATE {updates}")
    where = " WHERE true" if dialect == "sqlite" else ""  # SQLite's parser needs it before ON CONFLICT
    if not others:
        action = "DO NOTHING"
    else:
        action = "DO UPDATE SET " + ", ".join(f"{q(c)} = excluded.{q(c)}" for c in others)
    return (f"INSERT INTO {target} ({col_list}) SELECT {col_list} FROM {stage}{where} "
            f"ON CONFLICT ({key_list}) {action}")


def _sqlite_stage_ddl(stage: str, df: DataFrame, q) -> str:
    def affinity(data_type) -> str:
        name = data_type.typeName()
        if name in ("byte", "short", "integer", "long", "boolean"):
            return "INTEGER"
        if name in ("float", "double"):
            return "REAL"
        if name == "decimal":
            return "NUMERIC"
        if name == "binary":
            return "BLOB"
        return "TEXT"

    columns = ", ".join(f"{q(f.name)} {affinity(f.dataType)}" for f in df.schema.fields)
    return f"CREATE TABLE {stage} ({columns})"
