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

An expression is one condition: Glue's syntax has no sub-queries, so a second SELECT
(the way to join the partitions with themselves) is refused, and the evaluation has a
budget of SQLite virtual-machine steps (:data:`STEP_BUDGET`, about a second of work):
past it the expression is refused with one error rather than holding the endpoint.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..errors import SparkmarkError
from .models import Column, Partition

_NUMERIC = ("tinyint", "smallint", "int", "integer", "bigint", "long")
_REAL = ("float", "double", "decimal", "real")
_ALLOWED_FUNCTIONS = {"like", "lower", "upper", "substr", "length", "trim", "cast"}
STEP_BUDGET = 20_000_000
_STEPS_PER_CHECK = 10_000


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


def keys_read(keys: Sequence[Column], expression: str) -> set[str]:
    """The partition keys ``expression`` reads (checked as :func:`select_partitions`
    checks it, over no partitions)."""
    read: set[str] = set()
    select_partitions(keys, [], expression, reads=read)
    return read


def select_partitions(
    keys: Sequence[Column],
    parts: Sequence[Partition],
    expression: str,
    *,
    budget: int = STEP_BUDGET,
    reads: set[str] | None = None,
) -> list[Partition]:
    """The partitions whose values satisfy ``expression``, within ``budget`` steps; the
    keys it reads are added to ``reads``."""
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

        selects = 0

        def authorize(action, arg1, arg2, _db, _trigger):
            nonlocal selects
            if action == sqlite3.SQLITE_SELECT:
                selects += 1
                return sqlite3.SQLITE_OK if selects == 1 else sqlite3.SQLITE_DENY
            if action == sqlite3.SQLITE_READ and arg1 == "partitions":
                if reads is not None and arg2 != "__position":
                    reads.add(arg2)
                return sqlite3.SQLITE_OK
            if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _ALLOWED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY

        steps = 0

        def progress() -> int:
            nonlocal steps
            steps += _STEPS_PER_CHECK
            return 1 if steps > budget else 0  # non-zero interrupts the statement

        db.set_authorizer(authorize)
        db.set_progress_handler(progress, _STEPS_PER_CHECK)
        try:
            rows = db.execute(f"SELECT __position FROM partitions WHERE {expression}").fetchall()
        except sqlite3.Error as exc:
            if steps > budget:
                raise ExpressionError(
                    f"the partition expression {expression[:200]!r} needs more work than one request may "
                    f"take ({budget} steps over {len(parts)} partitions): simplify it"
                ) from None
            if selects > 1:
                raise ExpressionError(
                    f"invalid partition expression {expression[:200]!r}: a sub-query is not a condition "
                    "on the partition keys"
                ) from None
            raise ExpressionError(f"invalid partition expression {expression!r}: {exc}") from None
    finally:
        db.close()
    return [parts[i] for (i,) in sorted(rows)]
