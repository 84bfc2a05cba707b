"""A ruleset proposed from a table's profile, as Glue's rule recommendation runs propose
one: rules the profiled data meets, to hold later data to. The profile is computed by
Spark (one pass); what is proposed from it is decided here.

For the whole table, the row count within ±20% (bounds that are exclusive, as DQDL's
``between`` is). For each column:

- ``IsComplete`` when it has no NULL; ``Completeness >= c`` (its share rounded down to
  two places) when at least half its values are there;
- ``IsUnique`` when each of its values occurs once (and there are two rows or more);
- ``ColumnValues in [...]`` for text with at most ten distinct values, each seen at
  least twice on average (a category, not an identifier), NULL listed when it occurs;
- ``ColumnValues >= 0`` for a complete numeric column with no negative value;
- ``ColumnLength <= n`` for text, n its longest value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
CATEGORIES = 10


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    type: str  # Spark's simple type name
    present: int  # non-NULL values
    distinct: int
    minimum: float | None = None  # numeric columns
    longest: int | None = None  # text columns
    values: tuple[str, ...] = ()  # text columns with few distinct values


@dataclass(frozen=True)
class Profile:
    rows: int
    columns: tuple[ColumnProfile, ...] = field(default_factory=tuple)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _numeric(kind: str) -> bool:
    return kind.startswith(NUMERIC)


def rules_for(profile: Profile) -> list[str]:
    """The proposed rules, in the order of the table's columns."""
    n = profile.rows
    rules: list[str] = []
    if n > 0:
        rules.append(f"RowCount between {math.floor(n * 0.8) - 1} and {math.ceil(n * 1.2) + 1}")
    if n == 0:
        return rules
    for column in profile.columns:
        name = _quoted(column.name)
        share = column.present / n
        if column.present == n:
            rules.append(f"IsComplete {name}")
        elif share >= 0.5:
            rules.append(f"Completeness {name} >= {math.floor(share * 100) / 100:.2f}")
        if n >= 2 and column.distinct == n and column.present == n:
            rules.append(f"IsUnique {name}")
        if column.type == "string" and column.values and column.distinct * 2 <= column.present:
            listed = [_quoted(v) for v in sorted(column.values)]
            if column.present < n:
                listed.append("NULL")
            rules.append(f"ColumnValues {name} in [{', '.join(listed)}]")
        if (
            _numeric(column.type)
            and column.present == n
            and column.minimum is not None
            and column.minimum >= 0
        ):
            rules.append(f"ColumnValues {name} >= 0")
        if column.type == "string" and column.longest is not None and column.longest > 0:
            rules.append(f"ColumnLength {name} <= {column.longest}")
    return rules


def ruleset_for(profile: Profile) -> str:
    """The proposed rules as a DQDL document."""
    return "Rules = [\n    " + ",\n    ".join(rules_for(profile)) + "\n]"


def profile_of(row_count: int, columns: list[dict[str, Any]]) -> Profile:
    """A Profile from the plain values Spark's profiling pass gives."""
    return Profile(
        row_count,
        tuple(
            ColumnProfile(
                c["name"],
                c["type"],
                int(c["present"] or 0),
                int(c["distinct"] or 0),
                None if c.get("minimum") is None else float(c["minimum"]),
                None if c.get("longest") is None else int(c["longest"]),
                tuple(str(v) for v in c.get("values") or ()),
            )
            for c in columns
        ),
    )
