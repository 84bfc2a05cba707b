"""Glue's schedule expressions, ``cron(Minutes Hours Day-of-month Month Day-of-week Year)``.

Glue's cron differs from the five-field cron that croniter reads:
- six fields, the sixth a year (1970-2199);
- day-of-week counts 1 = SUN … 7 = SAT (croniter: 0 = SUN … 6 = SAT);
- exactly one of day-of-month and day-of-week is ``?``;
- ``L`` in day-of-week means Saturday, and ``nL`` the last weekday ``n`` of the month;
- ``a/b`` starts at ``a`` and steps by ``b``.

:func:`parse` checks an expression and translates it once; :class:`Schedule` then
answers "when does it fire next" through croniter, filtering years itself.
Every time is UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from croniter import croniter

from ..errors import ConfigError

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    )
}
_DAYS = {d: i + 1 for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}
_FIELDS = ("minutes", "hours", "day-of-month", "month", "day-of-week", "year")
_RANGES = {
    "minutes": (0, 59),
    "hours": (0, 23),
    "day-of-month": (1, 31),
    "month": (1, 12),
    "day-of-week": (1, 7),
    "year": (1970, 2199),
}
_WRAPPED = re.compile(r"^\s*cron\((?P<body>.*)\)\s*$", re.IGNORECASE)
_MAX_SCAN = 100_000  # candidate times examined while looking for a year that matches


class CronError(ConfigError):
    """A schedule expression Glue would refuse."""


def _bad(expr: str, why: str) -> CronError:
    return CronError(
        f"invalid schedule {expr!r}: {why} "
        "(expected cron(Minutes Hours Day-of-month Month Day-of-week Year), e.g. "
        "cron(15 12 * * ? *))"
    )


def _number(token: str, field: str, expr: str, names: dict[str, int] | None = None) -> int:
    text = token.upper()
    if names and text in names:
        return names[text]
    if not text.isdigit():
        raise _bad(expr, f"{token!r} is not a value of the {field} field")
    value = int(text)
    low, high = _RANGES[field]
    if not low <= value <= high:
        raise _bad(expr, f"{value} is out of range for the {field} field ({low}-{high})")
    return value


def _translate_list(text: str, field: str, expr: str, names=None, shift: int = 0) -> str:
    """Translate ``a,b-c,d/e,*`` items, checking each value; ``shift`` moves day numbers."""
    _low, high = _RANGES[field]
    out = []
    for item in text.split(","):
        if not item:
            raise _bad(expr, f"empty list item in the {field} field")
        base, slash, step = item.partition("/")
        if slash and (not step.isdigit() or int(step) == 0):
            raise _bad(expr, f"bad step {step!r} in the {field} field")
        if base == "*":
            rendered = "*"
        elif "-" in base:
            start_text, _, end_text = base.partition("-")
            start = _number(start_text, field, expr, names)
            end = _number(end_text, field, expr, names)
            if start > end:
                raise _bad(expr, f"range {base!r} runs backwards in the {field} field")
            rendered = f"{start - shift}-{end - shift}"
        else:
            start = _number(base, field, expr, names)
            # Glue's "a/b" means from a to the end of the field, every b.
            rendered = f"{start - shift}-{high - shift}" if slash else str(start - shift)
        out.append(rendered + (f"/{step}" if slash else ""))
    return ",".join(out)


def _day_of_week(text: str, expr: str) -> str:
    upper = text.upper()
    if upper == "L":
        return "6"  # the last day of the week: Saturday
    if upper.endswith("L") and len(upper) > 1:
        return f"L{_number(upper[:-1], 'day-of-week', expr, _DAYS) - 1}"
    if "#" in upper:
        day, _, nth = upper.partition("#")
        if not nth.isdigit() or not 1 <= int(nth) <= 5:
            raise _bad(expr, f"{text!r}: the week after # must be 1-5")
        return f"{_number(day, 'day-of-week', expr, _DAYS) - 1}#{nth}"
    return _translate_list(upper, "day-of-week", expr, _DAYS, shift=1)


def _day_of_month(text: str, expr: str) -> str:
    upper = text.upper()
    if upper == "L":
        return "L"
    if upper == "LW":
        raise _bad(
            expr,
            "LW (the last weekday of the month) is not supported by sparkmark; "
            "use L, or a day-of-week such as 6L",
        )
    if upper.endswith("W"):
        return f"{_number(upper[:-1], 'day-of-month', expr)}W"
    return _translate_list(upper, "day-of-month", expr)


def _years(text: str, expr: str) -> frozenset[int] | None:
    if text == "*":
        return None
    years: set[int] = set()
    for item in text.split(","):
        base, slash, step = item.partition("/")
        if slash and (not step.isdigit() or int(step) == 0):
            raise _bad(expr, f"bad step {step!r} in the year field")
        if base == "*":
            start, end = _RANGES["year"]
        elif "-" in base:
            a, _, b = base.partition("-")
            start, end = _number(a, "year", expr), _number(b, "year", expr)
            if start > end:
                raise _bad(expr, f"range {base!r} runs backwards in the year field")
        else:
            start = _number(base, "year", expr)
            end = _RANGES["year"][1] if slash else start
        years.update(range(start, end + 1, int(step) if slash else 1))
    return frozenset(years)


@dataclass(frozen=True)
class Schedule:
    """A checked Glue schedule and its croniter form."""

    expression: str
    croniter_expression: str
    years: frozenset[int] | None

    def next_after(self, moment: datetime) -> datetime | None:
        """The first firing strictly after ``moment`` (UTC), or None when no year is left."""
        moment = moment.astimezone(UTC)
        it = croniter(self.croniter_expression, moment)
        last_year = max(self.years) if self.years else None
        for _ in range(_MAX_SCAN):
            candidate = it.get_next(datetime).astimezone(UTC)
            if last_year is not None and candidate.year > last_year:
                return None
            if self.years is None or candidate.year in self.years:
                return candidate
            if self.years and candidate.year < min(self.years):
                it = croniter(
                    self.croniter_expression,
                    datetime(min(self.years), 1, 1, tzinfo=UTC) - timedelta(seconds=1),
                )
        return None

    def latest_in(self, after: datetime, until: datetime) -> datetime | None:
        """The last firing in ``(after, until]``, or None."""
        it = croniter(self.croniter_expression, until.astimezone(UTC) + timedelta(seconds=1))
        for _ in range(_MAX_SCAN):
            candidate = it.get_prev(datetime).astimezone(UTC)
            if candidate <= after:
                return None
            if self.years is None or candidate.year in self.years:
                return candidate
            if candidate.year < min(self.years):
                return None
        return None

    def count_in(self, after: datetime, before: datetime, cap: int = 10_000) -> int:
        """How many firings fall in ``(after, before)`` (counted up to ``cap``)."""
        count, moment = 0, after
        while count < cap:
            following = self.next_after(moment)
            if following is None or following >= before:
                return count
            moment, count = following, count + 1
        return count

    def between(self, after: datetime, until: datetime) -> list[datetime]:
        """Every firing in ``(after, until]``."""
        out: list[datetime] = []
        moment = after
        while True:
            nxt = self.next_after(moment)
            if nxt is None or nxt > until:
                return out
            out.append(nxt)
            moment = nxt


def parse(expression: str) -> Schedule:
    """Check a Glue ``cron(...)`` expression and translate it for croniter."""
    match = _WRAPPED.match(expression or "")
    if not match:
        raise _bad(expression, "a schedule is written cron(...)")
    fields = match.group("body").split()
    if len(fields) != 6:
        raise _bad(
            expression,
            f"it has {len(fields)} fields; Glue's cron has 6 "
            "(minutes hours day-of-month month day-of-week year)",
        )
    minutes, hours, dom, month, dow, year = fields
    if (dom == "?") == (dow == "?"):
        raise _bad(
            expression,
            "exactly one of day-of-month and day-of-week must be '?' "
            "(you cannot restrict both, and one must be given)",
        )
    for name, value in zip(_FIELDS, fields, strict=True):
        if value == "?" and name not in ("day-of-month", "day-of-week"):
            raise _bad(expression, f"'?' is only allowed in day-of-month or day-of-week, not {name}")
    parts = [
        _translate_list(minutes, "minutes", expression),
        _translate_list(hours, "hours", expression),
        "*" if dom == "?" else _day_of_month(dom, expression),
        _translate_list(month.upper(), "month", expression, _MONTHS),
        "*" if dow == "?" else _day_of_week(dow, expression),
    ]
    translated = " ".join(parts)
    if not croniter.is_valid(translated):
        raise _bad(expression, f"its translation {translated!r} is not a valid schedule")
    gap = _shortest_gap(translated)
    if gap is not None and gap < MIN_INTERVAL:
        raise _bad(
            expression,
            f"it fires {int(gap.total_seconds() // 60)} minute(s) apart; Glue does not support cron "
            "expressions that lead to rates faster than 5 minutes",
        )
    return Schedule(expression.strip(), translated, _years(year, expression))


MIN_INTERVAL = timedelta(minutes=5)  # "the minimum precision for a schedule is 5 minutes"


def _shortest_gap(translated: str, firings: int = 400) -> timedelta | None:
    """The shortest time between two firings. Minute and hour patterns repeat every day,
    and 400 firings at least 5 minutes apart span more than a day of them."""
    it = croniter(translated, datetime(2026, 1, 4, tzinfo=UTC))  # a Sunday: a whole week ahead
    previous, shortest = None, None
    for _ in range(firings):
        moment = it.get_next(datetime)
        if previous is not None:
            gap = moment - previous
            shortest = gap if shortest is None else min(shortest, gap)
            if shortest < MIN_INTERVAL:
                break
        previous = moment
    return shortest
