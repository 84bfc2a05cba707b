"""Glue's partition ``Expression`` (GetPartitions): a SQL WHERE clause over a table's
partition keys, evaluated without Spark.

Glue documents the syntax as SQL's: ``=``, ``<>``/``!=``, ``<``, ``<=``, ``>``, ``>=``,
``BETWEEN``, ``IN``, ``LIKE``, ``AND``, ``OR``, ``NOT`` and parentheses, over
partition keys compared as their declared types (an ``int`` key compares as a number,
a ``string`` key as text). The clause runs in an in-memory SQLite database holding one
row per partition, with each key column typed from the key's type; an authorizer lets
it read that one table and nothing else, so an expression cannot reach a file or any
other database. SQLite is used rather than a hand-written parser because its
operators are SQL's and it ships with Python.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..errors import SparkmarkError
from .models import Column, Partition

_NUMERIC = ("tinyint", "smallint", "int", "integer", "bigint", "long")
_REAL = ("float", "double", "decimal", "real")
_ALLOWED_FUNCTIONS = {"like", "lower", "upper", "substr", "length", "trim", "cast"}


class ExpressionError(SparkmarkError):
    """A partition expression that is not valid SQL over the partition keys."""


def _affinity(glue_type: str) -> str:
    base = glue_type.lower().split("(")[0].strip()
    if base in _NUMERIC:
        return "INTEGER"
    if base in _REAL:
        return "REAL"
    return "TEXT"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def select_partitions(keys: Sequence[Column], parts: Sequence[Partition], expression: str) -> list[Partition]:
    """The partitions whose values satisfy ``expression``."""
    if not expression or not expression.strip():
        return list(parts)
    if ";" in expression:
        raise ExpressionError("a partition expression is one condition, without ';'")
    db = sqlite3.connect(":memory:")
    try:
        columns = ", ".join(f"{_quote(k.name)} {_affinity(k.type)}" for k in keys)
        db.execute(f"CREATE TABLE partitions (__position INTEGER, {columns})")
        marks = ", ".join("?" for _ in range(len(keys) + 1))
        db.executemany(
            f"INSERT INTO partitions VALUES ({marks})",
            [(i, *p.values[: len(keys)]) for i, p in enumerate(parts)],
        )

        def authorize(action, arg1, arg2, _db, _trigger):
            if action == sqlite3.SQLITE_SELECT:
                return sqlite3.SQLITE_OK
            if action == sqlite3.SQLITE_READ and arg1 == "partitions":
                return sqlite3.SQLITE_OK
            if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _ALLOWED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY

        db.set_authorizer(authorize)
        try:
            rows = db.execute(f"SELECT __position FROM partitions WHERE {expression}").fetchall()
        except sqlite3.Error as exc:
            raise ExpressionError(f"invalid partition expression {expression!r}: {exc}") from None
    finally:
        db.close()
    return [parts[i] for (i,) in sorted(rows)]
