"""DQDL conditions as predicates: on a rule's computed value (Python) and on each
row's value (a Spark column), with Glue's rules for NULL, EMPTY and WHITESPACES_ONLY.

- ``between a and b`` is exclusive at both ends, as Glue documents it.
- For a row value, NULL fails every condition except ``!=`` and ``not in``, unless the
  condition names NULL itself (``= NULL``, ``in [..., NULL]``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from .ruleset import Condition, DQDLError, Duration, Keyword, Now

NEGATED = {"!=", "not in", "not between", "not matches"}


def resolve(operand: Any, now: datetime) -> Any:
    """A literal's value at evaluation time: now() becomes a timestamp, a duration seconds."""
    if isinstance(operand, Now):
        return now + timedelta(seconds=operand.offset_seconds)
    if isinstance(operand, Duration):
        return operand.seconds
    return operand


def holds(condition: Condition, value: Any, now: datetime) -> bool:
    """Whether a rule's computed value meets ``condition``."""
    if value is None:
        return False
    ops = [resolve(o, now) for o in condition.operands]
    op = condition.op
    try:
        if op in ("=", "!=", ">", "<", ">=", "<="):
            (x,) = ops
            if isinstance(x, Keyword):
                raise DQDLError(f"{x.value} cannot be compared with a rule's value")
            value, x = _comparable(value, x)
            return {
                "=": value == x,
                "!=": value != x,
                ">": value > x,
                "<": value < x,
                ">=": value >= x,
                "<=": value <= x,
            }[op]
        if op in ("between", "not between"):
            lo, hi = (_comparable(value, o)[1] for o in ops)
            inside = lo < _comparable(value, lo)[0] < hi
            return inside if op == "between" else not inside
        if op in ("in", "not in"):
            found = any(
                _comparable(value, o)[0] == _comparable(value, o)[1]
                for o in ops
                if not isinstance(o, Keyword)
            )
            return found if op == "in" else not found
        if op in ("matches", "not matches"):
            found = re.fullmatch(str(ops[0]), str(value)) is not None
            return found if op == "matches" else not found
    except TypeError as exc:
        raise DQDLError(f"cannot compare {value!r} with {ops}: {exc}") from None
    raise DQDLError(f"unknown operator {op!r}")


def _comparable(value: Any, other: Any) -> tuple[Any, Any]:
    if isinstance(value, (int, float)) and isinstance(other, (int, float)):
        return float(value), float(other)
    if isinstance(value, datetime) and isinstance(other, datetime):
        return _aware(value), _aware(other)
    return value, other


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _literal(value: Any) -> Column:
    if isinstance(value, datetime):
        return F.lit(value.astimezone(UTC).replace(tzinfo=None)).cast("timestamp")
    return F.lit(value)


def _keyword(column: Column, word: Keyword) -> Column:
    if word is Keyword.NULL:
        return column.isNull()
    text = column.cast("string")
    if word is Keyword.EMPTY:
        return text == F.lit("")
    return (F.length(text) > 0) & (F.trim(text) == F.lit(""))


def row_predicate(condition: Condition, column: Column, now: datetime) -> Column:
    """A boolean column, never NULL: true where the row's value meets ``condition``."""
    ops = [resolve(o, now) for o in condition.operands]
    op = condition.op
    if op in ("=", "!="):
        (x,) = ops
        hit = _keyword(column, x) if isinstance(x, Keyword) else (column == _literal(x))
    elif op in (">", "<", ">=", "<="):
        (x,) = ops
        if isinstance(x, Keyword):
            raise DQDLError(f"{x.value} can only be used with =, != and in")
        lit = _literal(x)
        hit = {">": column > lit, "<": column < lit, ">=": column >= lit, "<=": column <= lit}[op]
    elif op in ("between", "not between"):
        lo, hi = (_literal(o) for o in ops)
        hit = (column > lo) & (column < hi)
    elif op in ("in", "not in"):
        parts = [_keyword(column, o) if isinstance(o, Keyword) else (column == _literal(o)) for o in ops]
        hit = F.lit(False)
        for part in parts:
            hit = hit | F.coalesce(part, F.lit(False))
    elif op in ("matches", "not matches"):
        hit = column.cast("string").rlike("^(?:" + str(ops[0]) + ")$")
    else:
        raise DQDLError(f"unknown operator {op!r}")
    hit = F.coalesce(hit, F.lit(False))  # a comparison with NULL is no match
    if op in ("!=", "not in"):
        return ~hit  # NULL passes, unless the condition names NULL (then hit is true)
    if op in NEGATED:
        return column.isNotNull() & ~hit  # not between / not matches: NULL fails
    return hit
