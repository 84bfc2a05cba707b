"""JDBC key ranges: URLs, dialects, bookmark key values and the SQL of a run's range.

Pure SQLAlchemy, no Spark. A table name is used as the user wrote it when it is a
plain name (the database folds its case as for any SQL), quoted by the dialect's own
preparer otherwise; columns are quoted; every bookmark value is rendered by the dialect's own literal
rendering (``literal_binds``), never by string formatting.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import URL, Engine, make_url

from ..errors import ConfigError, SourceError


@dataclass(frozen=True)
class DialectInfo:
    name: str  # sqlalchemy backend name
    jdbc_scheme: str
    drivers: tuple[str, ...]  # JVM driver classes, preferred first
    sa_driver: str


DIALECTS = {
    "postgresql": DialectInfo("postgresql", "postgresql", ("org.postgresql.Driver",), "postgresql+psycopg"),
    # Spark's MySQL dialect (backquoted names) only answers to jdbc:mysql: URLs, so
    # MariaDB is reached as jdbc:mysql: too; MariaDB's driver accepts it when asked.
    "mysql": DialectInfo(
        "mysql", "mysql", ("org.mariadb.jdbc.Driver", "com.mysql.cj.jdbc.Driver"), "mysql+pymysql"
    ),
    "sqlite": DialectInfo("sqlite", "sqlite", ("org.sqlite.JDBC",), "sqlite"),
}
# Glue's JDBC connection types sparkmark reads and writes with key ranges, each with
# its dialect (MariaDB is reached through Spark's MySQL dialect).
CONNECTION_TYPES = {"postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql", "sqlite": "sqlite"}
# A URL's scheme, or a SQLAlchemy backend name, as a dialect.
_JDBC_ALIASES = {**CONNECTION_TYPES, "postgres": "postgresql"}


@dataclass(frozen=True)
class Database:
    """One database, as Spark (JDBC) and Python (SQLAlchemy) each reach it."""

    dialect: DialectInfo
    jdbc_url: str
    sa_url: URL
    user: str | None
    password: str | None

    @property
    def display(self) -> str:
        return self.sa_url.render_as_string(hide_password=True)

    def jdbc_properties(self, driver: str) -> dict[str, str]:
        props = {"driver": driver}
        if self.user:
            props["user"] = self.user
        if self.password:
            props["password"] = self.password
        return props

    def spark_url(self, driver: str) -> str:
        if driver == "org.mariadb.jdbc.Driver" and self.jdbc_url.startswith("jdbc:mysql:"):
            return self.jdbc_url + ("&" if "?" in self.jdbc_url else "?") + "permitMysqlScheme"
        return self.jdbc_url

    def engine(self) -> Engine:
        return sa.create_engine(self.sa_url, pool_pre_ping=True)


def parse_database(url: str, user: str | None = None, password: str | None = None) -> Database:
    """Accept a JDBC URL (``jdbc:postgresql://h:5432/db``, ``jdbc:mariadb://…``,
    ``jdbc:sqlite:/path.db``) or a SQLAlchemy URL, and derive the other form."""
    if url.startswith("jdbc:"):
        rest = url[5:]
        scheme = rest.split(":", 1)[0]
        kind = _JDBC_ALIASES.get(scheme)
        if kind is None:
            raise ConfigError(
                f"unsupported JDBC URL {url.split('?', maxsplit=1)[0]!r}: use postgresql, mariadb/mysql or sqlite"
            )
        info = DIALECTS[kind]
        if kind == "sqlite":
            path = rest.split(":", 1)[1]
            sa_url = URL.create("sqlite", database=path)
            jdbc = f"jdbc:sqlite:{path}"
        else:
            parts = urlsplit(rest)
            query = dict(parse_qsl(parts.query))
            user = user or query.pop("user", None) or parts.username
            password = password or query.pop("password", None) or parts.password
            sa_url = URL.create(
                info.sa_driver,
                username=user,
                password=password,
                host=parts.hostname,
                port=parts.port,
                database=parts.path.lstrip("/") or None,
            )
            if not parts.hostname:
                raise ConfigError(f"JDBC URL {url.split('?', maxsplit=1)[0]!r} names no host")
            netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
            jdbc = f"jdbc:{info.jdbc_scheme}://{netloc}{parts.path}"
            if query:
                jdbc += "?" + urlencode(query)
        return Database(info, jdbc, sa_url, user, password)
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError:
        raise ConfigError(f"not a JDBC or SQLAlchemy URL: {url.rsplit('@', maxsplit=1)[-1]!r}") from None
    kind = _JDBC_ALIASES.get(parsed.get_backend_name())
    if kind is None:
        raise ConfigError(f"unsupported database {parsed.get_backend_name()!r}")
    info = DIALECTS[kind]
    user = user or parsed.username
    password = password or parsed.password
    if kind == "sqlite":
        jdbc = f"jdbc:sqlite:{parsed.database}"
        sa_url = parsed
    else:
        sa_url = parsed.set(drivername=info.sa_driver, username=user, password=password)
        netloc = (parsed.host or "localhost") + (f":{parsed.port}" if parsed.port else "")
        jdbc = f"jdbc:{info.jdbc_scheme}://{netloc}/{parsed.database or ''}"
    return Database(info, jdbc, sa_url, user, password)


# ------------------------------------------------------------ key values


def encode_value(value: Any) -> dict[str, Any]:
    """A key value as JSON the state store can keep and a person can read."""
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "int", "value": value}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, Decimal):
        return {"type": "decimal", "value": str(value)}
    if isinstance(value, datetime):
        return {"type": "timestamp", "value": value.isoformat()}
    if isinstance(value, date):
        return {"type": "date", "value": value.isoformat()}
    if isinstance(value, str):
        return {"type": "str", "value": value}
    raise SourceError(f"bookmark keys of type {type(value).__name__} are not supported")


def decode_value(doc: dict[str, Any]) -> Any:
    kind, value = doc["type"], doc["value"]
    decoders: dict[str, Callable[[Any], Any]] = {
        "bool": bool,
        "int": int,
        "float": float,
        "decimal": Decimal,
        "str": str,
        "timestamp": datetime.fromisoformat,
        "date": date.fromisoformat,
    }
    return decoders[kind](value)


def minus_lag(value: Any, lag: float) -> Any:
    """The value ``lag`` below ``value``: seconds for times, days rounded up for dates,
    units for numbers."""
    if isinstance(value, (bool, str)):
        raise SourceError("lag needs a numeric, date or timestamp key")
    if isinstance(value, datetime):
        return value - timedelta(seconds=lag)
    if isinstance(value, date):
        return value - timedelta(days=math.ceil(lag / 86400))
    if isinstance(value, Decimal):
        return value - Decimal(str(lag))
    if isinstance(value, int) and float(lag).is_integer():
        return value - int(lag)
    return value - lag


def is_numeric(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


# ------------------------------------------------------------ SQL


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _quoted_by_user(name: str, quote: str) -> bool:
    """A name the user quoted the dialect's way ("Name", `Name`), with any quote inside
    it doubled: kept as written."""
    inner = name[1:-1]
    return len(name) > 1 and name[0] == name[-1] == quote and quote not in inner.replace(quote * 2, "")


@dataclass(frozen=True)
class Source:
    """A table or a query, with its keys, in one database."""

    database: Database
    table: str | None
    query: str | None
    keys: tuple[str, ...]
    descending: bool = False

    @property
    def dialect(self):
        return _DIALECT_OBJECTS[self.database.dialect.name]

    def quote(self, name: str) -> str:
        return self.dialect.identifier_preparer.quote(name)

    def quoted_table(self) -> str:
        """The table as the user wrote it, as Glue hands ``dbtable`` to the database: a
        plain name stays unquoted (so PostgreSQL folds ``Account`` to ``account``, as for
        any SQL); a name that is a reserved word or holds other characters is quoted,
        never read as SQL."""
        if self.table is None:
            raise SourceError("this source is a query, not a table")
        return ".".join(self.as_written(part) for part in split_table_name(self.table))

    def as_written(self, name: str) -> str:
        preparer = self.dialect.identifier_preparer
        if _PLAIN_NAME.fullmatch(name) and name.lower() not in preparer.reserved_words:
            return name
        if _quoted_by_user(name, preparer.initial_quote):
            return name
        return preparer.quote_identifier(name)

    def table_parts(self) -> tuple[str | None, str]:
        """(schema, table) as the database's catalogue knows a plain name: PostgreSQL
        folds it to lower case."""
        if self.table is None:
            raise SourceError("this source is a query, not a table")
        quote = self.dialect.identifier_preparer.initial_quote
        parts = [
            p[1:-1].replace(quote * 2, quote)
            if _quoted_by_user(p, quote)
            else p.lower()
            if self.database.dialect.name == "postgresql" and _PLAIN_NAME.fullmatch(p)
            else p
            for p in split_table_name(self.table)
        ]
        return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])

    def from_sql(self) -> str:
        """The FROM item of every statement about this source."""
        if self.table is not None:
            return self.quoted_table()
        return f"({self.query}) sm_q"

    def key_columns(self) -> list[sa.ColumnClause]:
        return [sa.column(k) for k in self.keys]

    def render(self, clause) -> str:
        return str(clause.compile(dialect=self.dialect, compile_kwargs={"literal_binds": True}))

    def after(self, last: tuple) -> sa.ColumnElement:
        """Rows strictly past ``last`` in the bookmark's order (lexicographic for composite keys)."""
        return self._compare(last, strict=True, beyond=True)

    def up_to(self, upper: tuple) -> sa.ColumnElement:
        """Rows at or before ``upper`` in the bookmark's order."""
        return self._compare(upper, strict=False, beyond=False)

    def _compare(self, bound: tuple, *, strict: bool, beyond: bool) -> sa.ColumnElement:
        cols = self.key_columns()
        forward = beyond != self.descending  # True: key greater than bound
        terms = []
        for i, col in enumerate(cols):
            prefix = [cols[j] == sa.literal(bound[j]) for j in range(i)]
            step = col > sa.literal(bound[i]) if forward else col < sa.literal(bound[i])
            terms.append(sa.and_(*prefix, step) if prefix else step)
        if not strict:
            terms.append(sa.and_(*[c == sa.literal(v) for c, v in zip(cols, bound, strict=True)]))
        return sa.or_(*terms) if len(terms) > 1 else terms[0]

    def not_null(self) -> sa.ColumnElement:
        return sa.and_(*[c.isnot(None) for c in self.key_columns()])

    def any_null(self) -> sa.ColumnElement:
        return sa.or_(*[c.is_(None) for c in self.key_columns()])

    def select_sql(self, where: sa.ColumnElement | None) -> str:
        clause = "" if where is None else " WHERE " + self.render(where)
        return f"SELECT * FROM {self.from_sql()}{clause}"

    def _edge_sql(self, last: bool) -> str:
        order = " DESC" if last != self.descending else " ASC"
        cols = ", ".join(self.quote(k) for k in self.keys)
        ordering = ", ".join(self.quote(k) + order for k in self.keys)
        return (
            f"SELECT {cols} FROM {self.from_sql()} WHERE {self.render(self.not_null())} "
            f"ORDER BY {ordering} LIMIT 1"
        )

    def upper_sql(self) -> str:
        """The last key in the bookmark's order now: the run's fixed upper bound."""
        return self._edge_sql(last=True)

    def first_sql(self) -> str:
        """The first key in the bookmark's order: the lower bound of a first run's partitions."""
        return self._edge_sql(last=False)

    def count_sql(self, where: sa.ColumnElement) -> str:
        return f"SELECT COUNT(*) FROM {self.from_sql()} WHERE {self.render(where)}"

    def hash_predicates(
        self, hashfield: str | None, hashexpression: str | None, partitions: int
    ) -> list[str]:
        """One predicate per partition; together they cover every row exactly once,
        rows whose hash is NULL included (they go to partition 0)."""
        if hashexpression:
            expr = f"({hashexpression})"
        elif hashfield:
            col = self.quote(hashfield)
            name = self.database.dialect.name
            if name == "postgresql":
                expr = f"hashtext(CAST({col} AS TEXT))"
            elif name == "mysql":
                expr = f"CRC32({col})"
            else:
                raise SourceError(
                    "SQLite has no hash function: pass hashexpression, an SQL integer "
                    "expression such as the integer key itself"
                )
        else:
            raise SourceError("hash partitioning needs hashfield or hashexpression")
        bucket = f"((({expr}) % {partitions}) + {partitions}) % {partitions}"
        predicates = [f"{bucket} = {i}" for i in range(partitions)]
        predicates[0] = f"({predicates[0]} OR ({expr}) IS NULL)"
        return predicates


_DIALECT_OBJECTS = {
    "postgresql": postgresql.dialect(),
    "mysql": mysql.dialect(),
    "sqlite": sqlite.dialect(),
}


def execute(conn: sa.Connection, sql: str):
    """Run finished SQL text (identifiers quoted, literals rendered) on ``conn``.

    Drivers with ``format``/``pyformat`` parameters (psycopg, PyMySQL) read ``%`` as
    a placeholder even without parameters, so it is doubled for them.
    """
    if conn.dialect.paramstyle in ("format", "pyformat"):
        sql = sql.replace("%", "%%")
    return conn.exec_driver_sql(sql)


def split_table_name(table: str) -> list[str]:
    """``schema.table`` → ``["schema", "table"]``; anything else in the name stays in
    the identifier and is quoted, never interpreted as SQL."""
    parts = table.split(".")
    if len(parts) > 2 or not all(parts):
        raise SourceError(f"table name {table!r} must be TABLE or SCHEMA.TABLE")
    return parts


@dataclass(frozen=True)
class TableShape:
    columns: tuple[str, ...]
    primary_key: tuple[str, ...]


def table_shape(conn: sa.Connection, source: Source, *, with_primary_key: bool) -> TableShape:
    """The table's column names (from an empty SELECT, one cheap query) and, when asked,
    its primary key (from the catalogue)."""
    try:
        result = execute(conn, f"SELECT * FROM {source.quoted_table()} WHERE 1 = 0")
        columns = tuple(result.keys())
        result.close()
    except sa.exc.DBAPIError:
        conn.rollback()
        raise SourceError(f"table {source.table!r} does not exist or cannot be read") from None
    pk: tuple[str, ...] = ()
    if with_primary_key and source.table is not None:
        schema, name = source.table_parts()
        found = sa.inspect(conn).get_pk_constraint(name, schema=schema)
        pk = tuple(found.get("constrained_columns") or [])
    return TableShape(columns, pk)
