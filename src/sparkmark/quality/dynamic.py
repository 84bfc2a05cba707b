"""DQDL's dynamic rules: a condition whose number is worked out from the values the same
metric had in earlier evaluations, as in ``RowCount > avg(last(10)) * 0.8``.

What Glue documents, and what is done here:

- ``last(k)`` is the metric's ``k`` most recent earlier values, newest first; ``last()``
  is ``last(1)``. With no earlier value it is the one value 0.0; with fewer than ``k``
  it is all of them.
- A list must be reduced to a number before it is compared: ``avg``, ``median``,
  ``max``, ``min``, ``sum``, ``std`` (the population standard deviation, as Deequ
  computes its StandardDeviation) and ``index(last(k), i)``, the ``i``-th most recent
  (from 0). ``abs`` takes a number. ``last(1)`` and ``last()`` are numbers already.
- ``+ - * /`` are read left to right, all at the same precedence, because AWS's
  grammar gives them one rule (``number numberOp number``): ``1 + 2 * 3`` is 9.
  Parentheses group.

Which functions and shapes are allowed is checked when the ruleset is read; an
expression that cannot be worked out on the history at hand (``index`` past its end,
a division by zero) fails its rule with the reason.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


class DynamicError(ValueError):
    """An expression that is not valid, or cannot be worked out on this history."""


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Chain:
    """``first op1 x1 op2 x2 ...``, worked out left to right."""

    first: Expr
    rest: tuple[tuple[str, Expr], ...]


Expr = float | Call | Chain


@dataclass(frozen=True)
class Dynamic:
    """A condition's operand that needs the metric's history."""

    expr: Expr

    def __str__(self) -> str:
        return render(self.expr)


REDUCERS = ("avg", "median", "max", "min", "sum", "std")
FUNCTIONS = (*REDUCERS, "abs", "index", "last")


def render(expr: Expr) -> str:
    if isinstance(expr, Call):
        return f"{expr.name}(" + ", ".join(render(a) for a in expr.args) + ")"
    if isinstance(expr, Chain):
        text = _term(expr.first)
        for op, operand in expr.rest:
            text += f" {op} {_term(operand)}"
        return text
    return f"{expr:g}"


def _term(expr: Expr) -> str:
    return f"({render(expr)})" if isinstance(expr, Chain) else render(expr)


def uses_history(expr: Expr) -> bool:
    if isinstance(expr, Call):
        return expr.name == "last" or any(uses_history(a) for a in expr.args)
    if isinstance(expr, Chain):
        return uses_history(expr.first) or any(uses_history(x) for _, x in expr.rest)
    return False


def check(expr: Expr) -> None:
    """Raise DynamicError when ``expr`` is not a number (a bare ``last(5)``), names a
    function DQDL does not have, or gives one the wrong arguments."""
    _check(expr)
    if _is_list(expr):
        raise DynamicError(
            f"{render(expr)} is a list of earlier values; reduce it to a number with "
            + ", ".join(REDUCERS)
            + " or index(..., i)"
        )


def _is_list(expr: Expr) -> bool:
    return isinstance(expr, Call) and expr.name == "last" and _last_size(expr) > 1


def _last_size(call: Call) -> int:
    if not call.args:
        return 1
    (k,) = call.args
    return int(k) if isinstance(k, float) else 0


def _whole(expr: Expr, least: int, what: str) -> int:
    if not isinstance(expr, float) or expr != int(expr) or expr < least:
        raise DynamicError(f"{what} must be a whole number of at least {least}, not {render(expr)}")
    return int(expr)


def _check(expr: Expr) -> None:
    if isinstance(expr, Chain):
        for part in (expr.first, *(x for _, x in expr.rest)):
            check(part)
        return
    if not isinstance(expr, Call):
        return
    name, args = expr.name, expr.args
    if name not in FUNCTIONS:
        raise DynamicError(f"unknown function {name}() in {render(expr)}; DQDL has " + ", ".join(FUNCTIONS))
    if name == "last":
        if len(args) > 1:
            raise DynamicError(f"last takes one number, the count of earlier values: {render(expr)}")
        if args:
            _whole(args[0], 1, "last's count")
        return
    if name == "index":
        if len(args) != 2 or not (isinstance(args[0], Call) and args[0].name == "last"):
            raise DynamicError(f"index takes last(k) and a position, e.g. index(last(3), 0): {render(expr)}")
        _check(args[0])
        _whole(args[1], 0, "index's position")
        return
    if not args:
        raise DynamicError(f"{name} needs an argument: {render(expr)}")
    if name == "abs":
        if len(args) != 1:
            raise DynamicError(f"abs takes one number: {render(expr)}")
        check(args[0])
        return
    for arg in args:  # a reducer takes lists and numbers alike
        _check(arg)


def evaluate(expr: Expr, earlier: Sequence[float]) -> float:
    """The number ``expr`` stands for, given the metric's earlier values, oldest first."""
    value = _value(expr, list(reversed(earlier)))
    if isinstance(value, list):  # check() refuses a bare list of more than one
        if len(value) != 1:
            raise DynamicError(f"{render(expr)} is a list; reduce it to a number")
        return value[0]
    return value


def _value(expr: Expr, newest_first: list[float]) -> float | list[float]:
    if isinstance(expr, float):
        return expr
    if isinstance(expr, Chain):
        total = _number(_value(expr.first, newest_first), expr.first)
        for op, operand in expr.rest:
            right = _number(_value(operand, newest_first), operand)
            if op == "+":
                total += right
            elif op == "-":
                total -= right
            elif op == "*":
                total *= right
            elif right == 0:
                raise DynamicError(f"division by zero in {render(expr)}")
            else:
                total /= right
        return total
    name = expr.name
    if name == "last":
        k = _last_size(expr)
        return newest_first[:k] if newest_first else [0.0]
    if name == "index":
        values = _value(expr.args[0], newest_first)
        assert isinstance(values, list)
        position = int(_number(_value(expr.args[1], newest_first), expr.args[1]))
        if position >= len(values):
            raise DynamicError(
                f"{render(expr)}: there are {len(values)} earlier value(s), so position {position} does not exist"
            )
        return values[position]
    if name == "abs":
        return abs(_number(_value(expr.args[0], newest_first), expr.args[0]))
    values = []
    for arg in expr.args:
        got = _value(arg, newest_first)
        values.extend(got if isinstance(got, list) else [got])
    if name == "avg":
        return statistics.fmean(values)
    if name == "median":
        return float(statistics.median(values))
    if name == "max":
        return max(values)
    if name == "min":
        return min(values)
    if name == "sum":
        return float(sum(values))
    return statistics.pstdev(values)  # std


def _number(value: float | list[float], expr: Expr) -> float:
    if isinstance(value, list):
        if len(value) != 1:
            raise DynamicError(f"{render(expr)} is a list; reduce it to a number")
        return value[0]
    return value
