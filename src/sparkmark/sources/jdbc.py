"""JDBC sources: the rows past the bookmark, read by Spark in parallel."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .. import spark_lines
from ..engine import jdbc as kr
from ..engine.models import CtxCommit
from ..errors import SourceError
from ..spark import driver_class
from .base import ReadContext, SourceOutcome

log = logging.getLogger("sparkmark.jdbc")

NULL_KEY_POLICIES = ("raise", "include", "exclude")
MAX_BOUNDARY_ROWS = 100_000
DEFAULT_FETCHSIZE = 10_000


@dataclass
class JdbcRequest:
    """What the caller asked for, validated."""

    database: kr.Database
    table: str | None
    query: str | None
    keys: tuple[str, ...] | None
    descending: bool
    hashfield: str | None
    hashexpression: str | None
    hashpartitions: int
    lag: float | None
    on_null_key: str
    fetchsize: int | None = None

    @classmethod
    def build(
        cls,
        database: kr.Database,
        *,
        table,
        query,
        keys,
        keys_sort_order,
        hashfield,
        hashexpression,
        hashpartitions,
        lag,
        on_null_key,
        fetchsize=None,
    ) -> JdbcRequest:
        if (table is None) == (query is None):
            raise SourceError("read_jdbc needs exactly one of table= or query=")
        order = str(keys_sort_order or "asc").lower()
        if order not in ("asc", "desc"):
            raise SourceError(f"keys_sort_order must be 'asc' or 'desc', got {keys_sort_order!r}")
        if on_null_key not in NULL_KEY_POLICIES:
            raise SourceError(
                f"on_null_key must be one of {', '.join(NULL_KEY_POLICIES)}, got {on_null_key!r}"
            )
        try:
            partitions = int(hashpartitions)
        except (TypeError, ValueError):
            partitions = 0
        if partitions < 1:
            raise SourceError(f"hashpartitions must be a positive whole number, got {hashpartitions!r}")
        if hashfield and hashexpression:
            raise SourceError("give hashfield or hashexpression, not both")
        if lag is not None:
            try:
                lag = float(lag)
            except (TypeError, ValueError):
                lag = -1.0
            if lag < 0:
                raise SourceError("lag must be a number ≥ 0 (seconds for time keys, units for numbers)")
        if isinstance(keys, str):
            keys = [keys]
        return cls(
            database,
            table,
            query,
            tuple(keys) if keys else None,
            order == "desc",
            hashfield,
            hashexpression,
            partitions,
            lag,
            on_null_key,
            fetchsize,
        )


def _describe(values: tuple | None) -> list | None:
    """Key values as a person reads them (timestamps in ISO form)."""
    return None if values is None else [kr.encode_value(v)["value"] for v in values]


def _encode(values: tuple | None) -> list | None:
    return None if values is None else [kr.encode_value(v) for v in values]


def _decode(values: list | None) -> tuple | None:
    return None if values is None else tuple(kr.decode_value(v) for v in values)


def _identity(req: JdbcRequest) -> dict[str, Any]:
    ident: dict[str, Any] = {"database": req.database.display}
    if req.table:
        ident["table"] = req.table
    else:
        ident["query_sha256"] = hashlib.sha256((req.query or "").encode()).hexdigest()[:16]
    return ident


def read(
    spark: SparkSession,
    req: JdbcRequest,
    *,
    ctx: str | None,
    previous: dict[str, Any] | None,
    bookmarked: bool,
    commit_state: bool,
    bounds: tuple[dict | None, dict | None] | None = None,
    run_id: str,
) -> SourceOutcome:
    """Read this run's rows. ``bounds`` (pause with from/to) gives the two ctx states
    whose committed key values delimit the range."""
    engine = req.database.engine()
    try:
        with engine.connect() as conn:
            return _read(
                spark,
                conn,
                req,
                ctx=ctx,
                previous=previous or {},
                bookmarked=bookmarked,
                commit_state=commit_state,
                bounds=bounds,
                run_id=run_id,
            )
    except sa.exc.OperationalError as exc:
        raise SourceError(f"cannot reach {req.database.display}: {str(exc.orig).strip()}") from None
    finally:
        engine.dispose()


def _as_the_table_has(name: str, columns: tuple[str, ...], table: str) -> str:
    """A column an option names, as the table has it: PostgreSQL folds an unquoted
    ``RecordId__c`` to ``recordid__c`` (MariaDB keeps case but compares without it), so a
    name that differs from one column only in case is that column."""
    if name in columns:
        return name
    alike = [c for c in columns if c.lower() == name.lower()]
    if len(alike) == 1:
        return alike[0]
    raise SourceError(f"key column(s) {name} not in table {table!r} (its columns: {', '.join(columns)})")


def _spark_connection(spark, req) -> tuple[str, dict[str, str]]:
    """Spark's JDBC URL and properties for the request's database, its driver loaded;
    rows stream in batches (some drivers otherwise hold a whole partition in memory)."""
    driver = driver_class(spark, req.database.dialect.drivers, req.database.dialect.name)
    props = req.database.jdbc_properties(driver)
    props["fetchsize"] = str(req.fetchsize or DEFAULT_FETCHSIZE)
    return req.database.spark_url(driver), props


def _hashed(spark, url, dbtable, props, source, req, hashfield) -> tuple[DataFrame | None, str, int]:
    """The read split by ``hashfield`` or ``hashexpression`` (Glue's options), with how
    it was split and into how many; no frame (one partition) when neither is given."""
    if not (hashfield or req.hashexpression):
        return None, "single", 1
    predicates = source.hash_predicates(hashfield, req.hashexpression, req.hashpartitions)
    frame = spark.read.jdbc(url, dbtable, predicates=predicates, properties=props)
    return frame, f"hash({hashfield or req.hashexpression})", len(predicates)


def _check_columns(frame: DataFrame, req) -> None:
    why = spark_lines.jdbc_column_refused(frame.columns)
    if why:
        raise SourceError(f"cannot read {req.table or 'the query'}: {why}")


def _read_whole(spark, conn, req, hashfield: str | None) -> SourceOutcome:
    """A read no bookmark follows (no ``Job.init``, no transformation_ctx), of a table
    without a primary key or a query without keys: every row, as Glue reads it; split by
    ``hashfield``/``hashexpression`` when given."""
    source = kr.Source(req.database, req.table, req.query, ())
    url, props = _spark_connection(spark, req)
    dbtable = f"({source.select_sql(None)}) sm_all"
    frame, partitioning, partitions = _hashed(spark, url, dbtable, props, source, req, hashfield)
    if frame is None:
        frame = spark.read.jdbc(url, dbtable, properties=props)
    _check_columns(frame, req)
    rows = kr.execute(conn, source.count_sql(sa.true())).scalar()
    metrics = {"rows_read": rows, "partitions": partitions, "partitioning": partitioning, "key_range": None}
    return SourceOutcome(frame, None, metrics)


def _read(spark, conn, req, *, ctx, previous, bookmarked, commit_state, bounds, run_id) -> SourceOutcome:
    primary: list[str] = []
    hashfield = req.hashfield
    followed = bookmarked or (commit_state and ctx is not None)  # a bookmark needs keys
    if req.table is not None:
        probe = kr.Source(req.database, req.table, None, ())
        need_pk = not req.keys or (req.lag is not None and bookmarked)
        # The primary key a bookmark was kept on is reused rather than looked up again
        # (a catalogue lookup costs more than the rest of a small increment's queries).
        remembered = (
            list(previous.get("keys") or [])
            if bookmarked and previous.get("keys_are_primary_key") and not req.keys and req.lag is None
            else []
        )
        shape = kr.table_shape(conn, probe, with_primary_key=need_pk and not remembered)
        primary = remembered or list(shape.primary_key)
        keys = tuple(_as_the_table_has(k, shape.columns, req.table) for k in req.keys or ()) or tuple(primary)
        if hashfield:
            hashfield = _as_the_table_has(hashfield, shape.columns, req.table)
        if not keys and not followed:
            return _read_whole(spark, conn, req, hashfield)
        if not keys:
            raise SourceError(
                f"table {req.table!r} has no primary key: pass keys=[...] (jobBookmarkKeys) "
                "naming the columns that order new rows"
            )
    else:
        if not req.keys and not followed:
            return _read_whole(spark, conn, req, hashfield)
        if not req.keys:
            raise SourceError("a query source needs keys=[...]: a query has no primary key")
        keys = req.keys
    source = kr.Source(req.database, req.table, req.query, tuple(keys), req.descending)
    order = "desc" if req.descending else "asc"

    if (
        bookmarked
        and previous
        and (previous.get("keys") != list(keys) or previous.get("keys_sort_order") != order)
    ):
        raise SourceError(
            f"source {ctx!r} was bookmarked on keys {previous.get('keys')} "
            f"{previous.get('keys_sort_order')}; it is now read on {list(keys)} {order}. "
            "Reset the bookmark to change the keys"
        )
    if req.lag is not None and (len(keys) != 1 or req.descending):
        raise SourceError("lag needs a single ascending key")
    if req.lag is not None and bookmarked and not primary:
        raise SourceError("lag needs a table with a primary key, to drop rows already processed")

    last = _decode(previous.get("last")) if bookmarked else None
    top = kr.execute(conn, source.upper_sql()).first()
    upper = tuple(top) if top is not None else None
    # Primary-key columns cannot hold NULL; other keys are counted.
    null_rows = (
        0 if set(keys) <= set(primary) else kr.execute(conn, source.count_sql(source.any_null())).scalar()
    )

    if null_rows and bookmarked and req.on_null_key == "raise":
        raise SourceError(
            f"{null_rows} row(s) of {req.table or 'the query'} have a NULL bookmark key "
            f"({', '.join(keys)}); they cannot be bookmarked. Pass on_null_key='exclude' to skip "
            "them or 'include' to read them in every run"
        )

    lower = last
    if bounds is not None:  # pause with from/to
        lower = _decode((bounds[0] or {}).get("last"))
        upper = _decode((bounds[1] or {}).get("last"))
    elif last is not None and req.lag is not None:
        lower = (kr.minus_lag(last[0], req.lag),)

    where: sa.ColumnElement[bool] | None
    if not bookmarked:
        where = None
    elif upper is None:
        where = sa.false()
    else:
        parts = [source.up_to(upper)]
        if lower is not None:
            parts.insert(0, source.after(lower))
        where = sa.and_(*parts)
    if bookmarked and null_rows and req.on_null_key == "include":
        where = sa.or_(where, source.any_null()) if where is not None else None

    in_range = kr.execute(conn, source.count_sql(where if where is not None else sa.true())).scalar()

    url, props = _spark_connection(spark, req)
    dbtable = f"({source.select_sql(where)}) sm_inc"
    frame, partitioning, partitions = _hashed(spark, url, dbtable, props, source, req, hashfield)
    if frame is None and len(keys) == 1 and req.hashpartitions > 1 and upper is not None and in_range:
        low = lower
        if low is None:
            first = kr.execute(conn, source.first_sql()).first()
            low = tuple(first) if first is not None else None
        if low is not None and kr.is_numeric(low[0]) and kr.is_numeric(upper[0]):
            lo, hi = sorted((int(low[0]), int(upper[0]) + 1))
            if hi > lo:
                count = min(req.hashpartitions, hi - lo)
                frame = spark.read.jdbc(
                    url,
                    dbtable,
                    column=keys[0],
                    lowerBound=lo,
                    upperBound=hi,
                    numPartitions=count,
                    properties=props,
                )
                partitioning, partitions = f"range({keys[0]})", count
    if frame is None:
        frame = spark.read.jdbc(url, dbtable, properties=props)
    _check_columns(frame, req)

    metrics: dict[str, Any] = {
        "rows_read": in_range,
        "null_key_rows": null_rows,
        "null_key_policy": req.on_null_key,
        "partitions": partitions,
        "partitioning": partitioning,
        "key_range": {"after": _describe(lower), "up_to": _describe(upper)} if bookmarked else None,
    }

    boundary: list[list] | None = None
    if req.lag is not None and bookmarked:
        # Materialise once, so the rows recorded as processed are exactly the rows the job saw.
        frame = frame.localCheckpoint(eager=True)
        identity = [c for c in primary if c != keys[0]] + [keys[0]]  # the key last
        old = [tuple(kr.decode_value(v) for v in row) for row in previous.get("boundary") or []]
        if old:
            seen = spark.createDataFrame(old, frame.select(*identity).schema)
            frame = frame.join(seen, on=identity, how="left_anti").localCheckpoint(eager=True)
        metrics["rows_read"] = frame.count()
        metrics["rows_dropped_as_processed"] = in_range - metrics["rows_read"]
        if upper is not None:
            edge = kr.minus_lag(upper[0], req.lag)
            fresh = [tuple(r) for r in frame.filter(frame[keys[0]] > edge).select(*identity).collect()]
            kept = [r for r in old if r[-1] > edge] + fresh
            if len(kept) > MAX_BOUNDARY_ROWS:
                raise SourceError(
                    f"{len(kept)} rows fall inside the lag window; at most {MAX_BOUNDARY_ROWS} "
                    "can be tracked. Use a smaller lag"
                )
            boundary = [[kr.encode_value(v) for v in row] for row in kept]
        else:
            boundary = previous.get("boundary") or []

    commit = None
    if commit_state and ctx is not None:
        new_last = upper if upper is not None else last
        state = {
            "type": "jdbc",
            **_identity(req),
            "keys": list(keys),
            "keys_are_primary_key": bool(primary) and list(keys) == primary,
            "keys_sort_order": order,
            "last": _encode(new_last),
            "last_value": _describe(new_last),
            "range_read": metrics["key_range"],
            "rows_read": metrics["rows_read"],
            "last_run": {"run_id": run_id, "rows": metrics["rows_read"]},
        }
        if req.lag is not None:
            state["lag"] = req.lag
            state["boundary"] = boundary or []
        commit = CtxCommit(ctx=ctx, state=state)
    return SourceOutcome(frame, commit, metrics)


class JdbcSource:
    """The rows of a table (or query) past the state ``ctx`` committed: the run reads
    ``last < key <= upper``, where ``upper`` is the last key in the table now, and the
    commit records ``upper``."""

    def __init__(self, request: JdbcRequest, *, ctx: str | None = None):
        self.request = request
        self.ctx = ctx

    def describe(self) -> str:
        return self.request.table or "query"

    def read(self, context: ReadContext) -> SourceOutcome:
        bounds = context.range_states()
        bookmarked = context.bookmark_ctx is not None
        return read(
            context.spark,
            self.request,
            ctx=self.ctx,
            previous=context.previous,
            bookmarked=bookmarked,
            commit_state=bookmarked and context.commit_state,
            bounds=bounds,
            run_id=context.run_id or "-",
        )


# Glue's dataTypeMapping for JDBC connectors: the JDBC type names (java.sql.Types) for the Spark types the JDBC reader gives them.
_JDBC_TYPE_NAMES: dict[str, tuple[str, ...]] = {
    "boolean": ("BOOLEAN", "BIT"),
    "tinyint": ("TINYINT",),
    "smallint": ("SMALLINT",),
    "int": ("INTEGER",),
    "bigint": ("BIGINT",),
    "float": ("REAL",),
    "double": ("DOUBLE", "FLOAT"),
    "string": ("VARCHAR", "CHAR", "LONGVARCHAR", "NVARCHAR", "NCHAR", "CLOB"),
    "date": ("DATE",),
    "timestamp": ("TIMESTAMP", "TIMESTAMP_WITH_TIMEZONE"),
    "binary": ("BINARY", "VARBINARY", "LONGVARBINARY", "BLOB"),
}
_GLUE_TARGETS = {
    "STRING": "string", "INT": "int", "INTEGER": "int", "LONG": "bigint", "BIGINT": "bigint",
    "SHORT": "smallint", "BYTE": "tinyint", "FLOAT": "float", "DOUBLE": "double",
    "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp", "BINARY": "binary",
}  # fmt: skip


def type_mapping(raw) -> dict[str, str]:
    """Glue's ``dataTypeMapping`` (JDBC type name → Glue type), checked."""
    if not raw:
        return {}
    mapping = json.loads(raw) if isinstance(raw, str) else dict(raw)
    checked = {}
    for jdbc, glue in mapping.items():
        target = _GLUE_TARGETS.get(str(glue).upper()) or (
            str(glue).lower() if str(glue).upper().startswith("DECIMAL") else None
        )
        if target is None:
            raise SourceError(f"dataTypeMapping: {glue!r} is not a Glue type ({', '.join(_GLUE_TARGETS)})")
        checked[str(jdbc).upper()] = target
    return checked


def apply_type_mapping(df: DataFrame, mapping: dict[str, str]) -> DataFrame:
    """Cast each column whose JDBC type the mapping names (a value that does not convert
    becomes null, as any Glue cast)."""
    cols = []
    for f in df.schema.fields:
        simple = "decimal" if f.dataType.simpleString().startswith("decimal") else f.dataType.simpleString()
        names = ("DECIMAL", "NUMERIC") if simple == "decimal" else _JDBC_TYPE_NAMES.get(simple, ())
        target = next((mapping[n] for n in names if n in mapping), None)
        col = F.col(f"`{f.name}`")
        cols.append(spark_lines.try_cast(col, target).alias(f.name) if target else col)
    return df.select(*cols)
