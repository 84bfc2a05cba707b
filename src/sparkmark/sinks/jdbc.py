"""JDBC sinks: append, overwrite or upsert through a staging table, in one transaction.

Spark writes the rows to a staging table (its own transactions, per partition).
Then one database transaction moves them into the target: a plain insert, a
delete-and-insert, or the dialect's upsert. A failure anywhere leaves the target
as it was.

For an exactly-once write the two halves are apart: ``stage`` runs during the
job, ``apply`` after the bookmark commit. ``apply`` records the write's key in
``sm_applied_outputs`` in the target database inside the same transaction as
the merge, so applying a write a second time (a retry after a crash) finds the
key and changes nothing.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa

from ..engine import jdbc as kr
from ..engine import ownership
from ..engine.faults import crash_point
from ..engine.models import OutputKind, OutputRecord, OutputState
from ..errors import OutputLost, SinkError
from ..spark import driver_class

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame

    from ..engine.store import StateStore

log = logging.getLogger("sparkmark.jdbc")

MODES = ("append", "overwrite", "upsert")
APPLIED_TABLE = "sm_applied_outputs"

_applied = sa.Table(
    APPLIED_TABLE,
    sa.MetaData(),
    sa.Column("output_key", sa.String(100), primary_key=True),  # <run id>-<seq>
    sa.Column("target", sa.String(512), nullable=False),
    sa.Column("rows_applied", sa.BigInteger, nullable=False),
    sa.Column("applied_at", sa.DateTime, nullable=False, server_default=sa.func.current_timestamp()),
)


def _unique_sets(inspector, name: str, schema: str | None) -> list[set[str]]:
    sets = []
    pk = inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or []
    if pk:
        sets.append(set(pk))
    for uc in inspector.get_unique_constraints(name, schema=schema):
        sets.append(set(uc["column_names"]))
    for ix in inspector.get_indexes(name, schema=schema):
        if ix.get("unique"):
            sets.append({c for c in ix["column_names"] if c})
    return sets


def applied_keys(database: kr.Database, table: str) -> list[str]:
    """The keys of the exactly-once writes applied to ``table`` (none before the first)."""
    engine = database.engine()
    try:
        if not sa.inspect(engine).has_table(APPLIED_TABLE):
            return []
        with engine.connect() as conn:
            return list(
                conn.execute(
                    sa.select(_applied.c.output_key).where(_applied.c.target == table[:512])
                ).scalars()
            )
    except sa.exc.DBAPIError as exc:
        raise SinkError(f"cannot read the writes applied to {table!r}: {str(exc.orig).strip()}") from None
    finally:
        engine.dispose()


def stage_name_for(key: str | None) -> str:
    """The staging table of a write: derived from its key, so a later run can find it."""
    if key is None:
        return f"sm_stage_{uuid.uuid4().hex[:16]}"
    run_id, _, seq = key.rpartition("-")
    return f"sm_stage_{run_id[3:19]}_{seq}"


def _names(
    table: str, stage_name: str, database: kr.Database | None = None
) -> tuple[str | None, str, str, str]:
    if database is not None:
        schema, name = kr.Source(database, table, None, ()).table_parts()
    else:
        parts = kr.split_table_name(table)
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    stage_spark = f"{schema}.{stage_name}" if schema else stage_name
    return schema, name, stage_spark, stage_name


def _quoted_stage(database: kr.Database, table: str, stage_name: str) -> str:
    source = kr.Source(database, table, None, ())
    schema = _names(table, stage_name)[0]
    return f"{source.quote(schema)}.{stage_name}" if schema else stage_name


def stage(
    df: DataFrame, database: kr.Database, table: str, *, mode: str, keys: list[str] | None, stage_name: str
) -> dict[str, Any]:
    """Check the write and let Spark fill the staging table. Returns the plan that
    ``apply`` needs (no credentials in it)."""
    if mode not in MODES:
        raise SinkError(f"write mode must be one of {', '.join(MODES)}, got {mode!r}")
    schema, name, stage_spark, _ = _names(table, stage_name, database)
    columns = list(df.columns)
    if not columns:
        raise SinkError("the DataFrame to write has no columns")
    engine = database.engine()
    try:
        inspector = sa.inspect(engine)
        if mode == "upsert":
            if not inspector.has_table(name, schema=schema):
                raise SinkError(
                    f"upsert needs the target table {table!r} to exist, with a primary key or "
                    "unique index on the upsert keys"
                )
            keys = list(
                keys or inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or []
            )
            if not keys:
                raise SinkError(f"upsert into {table!r} needs keys=[...]: the table has no primary key")
            if set(keys) not in _unique_sets(inspector, name, schema):
                raise SinkError(
                    f"upsert keys {keys} of {table!r} are not its primary key or a unique index; "
                    "the database cannot tell an update from an insert without one"
                )
            missing = [k for k in keys if k not in columns]
            if missing:
                raise SinkError(f"upsert key(s) {', '.join(missing)} are not columns of the DataFrame")

        spark = df.sparkSession
        driver = driver_class(spark, database.dialect.drivers, database.dialect.name)
        write_mode = "overwrite"
        to_write = df
        stage = _quoted_stage(database, table, stage_name)
        if database.dialect.name == "sqlite":
            # One writer at a time for a file database; and Spark's table-exists probe
            # fails on SQLite, so the staging table is created here first.
            to_write = df.coalesce(1)
            q = kr.Source(database, table, None, ()).quote
            with engine.begin() as conn:
                kr.execute(conn, f"DROP TABLE IF EXISTS {stage}")
                kr.execute(conn, _sqlite_stage_ddl(stage, df, q))
            write_mode = "append"
        to_write.write.jdbc(
            database.spark_url(driver),
            stage_spark,
            mode=write_mode,
            properties=database.jdbc_properties(driver),
        )
        with engine.connect() as conn:
            staged = kr.execute(conn, f"SELECT COUNT(*) FROM {stage}").scalar()
            if mode == "upsert":  # refused now, before the run can commit
                q = kr.Source(database, table, None, ()).quote
                key_list = ", ".join(q(k) for k in keys or [])
                dup = kr.execute(
                    conn, f"SELECT {key_list} FROM {stage} GROUP BY {key_list} HAVING COUNT(*) > 1 LIMIT 1"
                ).first()
                if dup is not None:
                    raise SinkError(
                        f"the rows to upsert into {table!r} hold key {tuple(dup)} more than once; "
                        "deduplicate them first"
                    )
    except sa.exc.DBAPIError as exc:
        drop_stage(database, {"table": table, "stage": stage_name})
        raise SinkError(
            f"writing {table!r} failed and the target was left as it was: {str(exc.orig).strip()}"
        ) from None
    except BaseException:
        drop_stage(database, {"table": table, "stage": stage_name})
        raise
    finally:
        engine.dispose()
    return {
        "table": table,
        "stage": stage_name,
        "mode": mode,
        "keys": keys,
        "columns": columns,
        "rows_staged": staged,
    }


def apply(database: kr.Database, plan: dict[str, Any], *, key: str | None = None) -> dict[str, Any]:
    """Move the staged rows into the target in one transaction; with ``key``, record it
    in the same transaction and do nothing when it is already recorded. The staging
    table is dropped afterwards."""
    table, mode, keys, columns = plan["table"], plan["mode"], plan.get("keys"), plan["columns"]
    schema, name, _, _ = _names(table, plan["stage"], database)
    source = kr.Source(database, table, None, ())
    q = source.quote
    target = source.quoted_table()
    stage = _quoted_stage(database, table, plan["stage"])
    col_list = ", ".join(q(c) for c in columns)
    engine = database.engine()
    try:
        if key is not None:
            _applied.create(engine, checkfirst=True)
            with engine.connect() as conn:
                done = conn.execute(
                    sa.select(_applied.c.rows_applied).where(_applied.c.output_key == key)
                ).scalar()
            if done is not None:
                log.info(
                    "write %s to %s was already applied (%d rows); not applying it again", key, table, done
                )
                drop_stage(database, plan, engine=engine)
                return {"table": table, "mode": mode, "rows_written": int(done), "already_applied": True}
        if not sa.inspect(engine).has_table(plan["stage"], schema=schema):
            raise OutputLost(
                f"the staging table {plan['stage']} of the write to {table!r} is gone, and the "
                "write was not applied; its rows cannot be recovered. Rewind the job's bookmark "
                "to before that run (`sparkmark bookmark reset JOB --run-id <the run before it>`) and re-run it"
            )
        if not sa.inspect(engine).has_table(name, schema=schema):
            # DDL outside the merge transaction: MariaDB would commit at it.
            with engine.begin() as conn:
                kr.execute(conn, f"CREATE TABLE {target} AS SELECT {col_list} FROM {stage} WHERE 1 = 0")
        insert = f"INSERT INTO {target} ({col_list}) SELECT {col_list} FROM {stage}"
        with engine.begin() as conn:
            staged = kr.execute(conn, f"SELECT COUNT(*) FROM {stage}").scalar()
            for statement in plan.get("preactions") or ():  # Glue's preactions, in the same transaction
                kr.execute(conn, statement)
            if mode == "overwrite":
                kr.execute(conn, f"DELETE FROM {target}")
                kr.execute(conn, insert)
            elif mode == "append":
                kr.execute(conn, insert)
            else:
                kr.execute(conn, _upsert_sql(database.dialect.name, target, stage, columns, keys or [], q))
            for statement in plan.get("postactions") or ():
                kr.execute(conn, statement)
            if key is not None:
                conn.execute(
                    sa.insert(_applied).values(output_key=key, target=table[:512], rows_applied=staged)
                )
                crash_point("applying")
        log.info("wrote %d rows to %s (%s)", staged, table, mode)
        drop_stage(database, plan, engine=engine)
        return {"table": table, "mode": mode, "rows_written": staged}
    except sa.exc.DBAPIError as exc:
        raise SinkError(
            f"writing {table!r} failed and the target was left as it was: {str(exc.orig).strip()}"
        ) from None
    finally:
        engine.dispose()


def stage_exists(database: kr.Database, plan: dict[str, Any]) -> bool:
    """Whether a write's staging table is still there."""
    schema, _, _, _ = _names(plan["table"], plan["stage"])
    engine = database.engine()
    try:
        return bool(sa.inspect(engine).has_table(plan["stage"], schema=schema))
    finally:
        engine.dispose()


def drop_stage(database: kr.Database, plan: dict[str, Any], *, engine: sa.Engine | None = None) -> None:
    own = engine is None
    engine = engine or database.engine()
    stage = _quoted_stage(database, plan["table"], plan["stage"])
    try:
        with engine.begin() as conn:
            kr.execute(conn, f"DROP TABLE IF EXISTS {stage}")
    except sa.exc.DBAPIError as exc:
        log.warning("could not drop staging table %s: %s", stage, exc.orig)
    finally:
        if own:
            engine.dispose()


def write(
    df: DataFrame,
    database: kr.Database,
    table: str,
    *,
    mode: str,
    keys: list[str] | None,
    actions: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Stage and apply at once: the write is visible when this returns. ``actions``:
    SQL run before (``preactions``) and after (``postactions``) the rows are merged."""
    plan = {
        **stage(df, database, table, mode=mode, keys=keys, stage_name=stage_name_for(None)),
        **(actions or {}),
    }
    try:
        return apply(database, plan)
    finally:
        drop_stage(database, plan)


def _upsert_sql(dialect: str, target: str, stage: str, columns: list[str], keys: list[str], q) -> str:
    col_list = ", ".join(q(c) for c in columns)
    key_list = ", ".join(q(k) for k in keys)
    others = [c for c in columns if c not in keys]
    if dialect == "mysql":
        updates = ", ".join(f"{q(c)} = VALUES({q(c)})" for c in (others or keys[:1]))
        return (
            f"INSERT INTO {target} ({col_list}) SELECT {col_list} FROM {stage} "
            f"ON DUPLICATE KEY UPDATE {updates}"
        )
    where = " WHERE true" if dialect == "sqlite" else ""  # SQLite's parser needs it before ON CONFLICT
    if not others:
        action = "DO NOTHING"
    else:
        action = "DO UPDATE SET " + ", ".join(f"{q(c)} = excluded.{q(c)}" for c in others)
    return (
        f"INSERT INTO {target} ({col_list}) SELECT {col_list} FROM {stage}{where} "
        f"ON CONFLICT ({key_list}) {action}"
    )


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


def split_actions(text: Any) -> list[str]:
    """Glue's ``preactions``/``postactions``: SQL statements separated by semicolons (a
    semicolon inside a statement's literal would split it)."""
    if not text:
        return []
    given = text if isinstance(text, (list, tuple)) else str(text).split(";")
    return [s.strip() for s in given if str(s).strip()]


@dataclass(frozen=True)
class JdbcSink:
    """A database table, for ``runtime.write_sink``: append, overwrite, or upsert by
    ``keys`` (default: the target's primary key). ``connection`` names the connection
    the database came from, so a later process can publish with its credentials."""

    database: kr.Database
    table: str
    mode: str = "append"
    keys: tuple[str, ...] | None = None
    connection: str | None = None
    ctx: str | None = None
    preactions: tuple[str, ...] = ()  # SQL run before the rows are merged, in the same transaction
    postactions: tuple[str, ...] = ()  # and after
    kind: ClassVar[OutputKind] = OutputKind.JDBC
    unit: ClassVar[str] = "rows"

    @property
    def target(self) -> str:
        return f"{self.database.display} {self.table}"

    def check(self) -> None:
        if not self.table:
            raise SinkError("a JDBC write needs a table")

    def join(self, run: Any, staged: bool) -> None:
        run.add_database(self.database)
        if staged:  # committed writes of earlier runs to this database may have waited for its password
            run.recover_outputs(only_url=self.database.jdbc_url)

    def guard(self, store: StateStore) -> None:
        ownership.check_output(
            store,
            self.target,
            applied_keys(self.database, self.table),
            take_over=f"delete the table's rows from {APPLIED_TABLE} in that database "
            "(its data stays; this store's bookmark then decides what is read again)",
        )

    def _actions(self) -> dict[str, list[str]]:
        return {"preactions": list(self.preactions), "postactions": list(self.postactions)}

    def write_now(self, df: DataFrame) -> dict[str, Any]:
        keys = list(self.keys) if self.keys else None
        return write(df, self.database, self.table, mode=self.mode, keys=keys, actions=self._actions())

    def plan(self) -> dict[str, Any]:
        return {
            "jdbc_url": self.database.jdbc_url,
            "user": self.database.user,
            "connection": self.connection,
            "table": self.table,
            "mode": self.mode,
            **self._actions(),
        }

    def stage(self, df: DataFrame, record: OutputRecord, store: StateStore) -> tuple[dict[str, Any], int]:
        staged = stage(
            df,
            self.database,
            self.table,
            mode=self.mode,
            keys=list(self.keys) if self.keys else None,
            stage_name=stage_name_for(record.key),
        )
        return {**record.plan, **staged}, int(staged["rows_staged"])

    def discard(self, store: StateStore, record: OutputRecord) -> None:
        store.set_output(record.run_id, record.seq, OutputState.DISCARDED)  # stage() dropped its table

    def result(self, staged: int, ctx: str) -> dict[str, Any]:
        return {"table": self.table, "mode": self.mode, "ctx": ctx, "rows_staged": staged}
