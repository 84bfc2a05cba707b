"""The changes between Glue versions that explain a difference the upgrade check finds.

Each is a documented change: Spark's SQL migration guide (3.5 → 4.0), Spark's ANSI
compliance page (the behaviour ANSI mode, on by default since Spark 4.0, gives each
expression), or a difference of sparkmark's own runtimes (docs/glue-versions.md). A
difference is tied to one by a sign: an error class in a failure's message, or the
shape of a value that changed (5.0 gave null, 6.0 gives false). Pure: no Spark here.
"""

from __future__ import annotations

from dataclasses import dataclass

MIGRATION = "Spark SQL migration guide, 3.5 to 4.0"
ANSI = "Spark's ANSI compliance page (ANSI mode is on by default since Spark 4.0)"
ANSI_FIX = "keep the old result with try_* functions, or --conf spark.sql.ansi.enabled=false"


@dataclass(frozen=True)
class KnownChange:
    key: str
    what: str  # what changed, in one line
    source: str  # where it is documented
    fix: str = ""
    errors: tuple[str, ...] = ()  # error classes (or texts) that are its sign


CHANGES: tuple[KnownChange, ...] = (
    KnownChange(
        "ansi-cast",
        "a cast of a value that does not convert fails (CAST_INVALID_INPUT); Spark 3.5 gave null",
        ANSI,
        ANSI_FIX,
        ("CAST_INVALID_INPUT",),
    ),
    KnownChange(
        "ansi-cast-overflow",
        "a cast to a type too small for the value fails (CAST_OVERFLOW); Spark 3.5 wrapped or gave null",
        ANSI,
        ANSI_FIX,
        ("CAST_OVERFLOW",),
    ),
    KnownChange(
        "ansi-decimal-range",
        "a decimal that does not fit its precision fails (NUMERIC_VALUE_OUT_OF_RANGE); Spark 3.5 gave null",
        ANSI,
        ANSI_FIX,
        ("NUMERIC_VALUE_OUT_OF_RANGE",),
    ),
    KnownChange(
        "ansi-divide-by-zero",
        "division by zero fails (DIVIDE_BY_ZERO); Spark 3.5 gave null",
        ANSI,
        "try_divide, or " + ANSI_FIX,
        ("DIVIDE_BY_ZERO",),
    ),
    KnownChange(
        "ansi-remainder-by-zero",
        "a remainder (%, mod, pmod) by zero fails (REMAINDER_BY_ZERO); Spark 3.5 gave null",
        ANSI,
        "try_mod, or " + ANSI_FIX,
        ("REMAINDER_BY_ZERO",),
    ),
    KnownChange(
        "ansi-overflow",
        "integer arithmetic that overflows fails (ARITHMETIC_OVERFLOW); Spark 3.5 wrapped around",
        ANSI,
        "try_add, try_multiply, or " + ANSI_FIX,
        ("ARITHMETIC_OVERFLOW",),
    ),
    KnownChange(
        "ansi-array-index",
        "an array index past the end fails (INVALID_ARRAY_INDEX); Spark 3.5 gave null",
        ANSI,
        "try_element_at, or " + ANSI_FIX,
        ("INVALID_ARRAY_INDEX",),
    ),
    KnownChange(
        "ansi-datetime-value",
        "a string that is no valid date or timestamp fails to parse (CANNOT_PARSE_TIMESTAMP); Spark 3.5 "
        "gave null",
        ANSI,
        "try_to_timestamp, or " + ANSI_FIX,
        ("CANNOT_PARSE_TIMESTAMP",),
    ),
    KnownChange(
        "datetime-parser-policy",
        "spark.sql.legacy.timeParserPolicy is CORRECTED by default: a string that only Spark 2's lenient "
        "parser read (a one-digit month for MM) is no longer an INCONSISTENT_BEHAVIOR_CROSS_VERSION error "
        "but fails to parse, or is null without ANSI",
        MIGRATION,
        "fix the pattern (M for one or two digits), or --conf spark.sql.legacy.timeParserPolicy=LEGACY",
        ("INCONSISTENT_BEHAVIOR_CROSS_VERSION",),
    ),
    KnownChange(
        "bang-not",
        "! is NOT only as a prefix: `x ! IN (…)`, `! LIKE`, `! BETWEEN`, `IS ! NULL` no longer parse",
        MIGRATION,
        "write NOT, or --conf spark.sql.legacy.bangEqualsNot=true",
        ("BANG_EQUALS_NOT",),
    ),
    KnownChange(
        "null-in-empty-list",
        "NULL IN () (an empty isin) is false; Spark 3.5 gave null",
        MIGRATION,
        "--conf spark.sql.legacy.nullInEmptyListBehavior=true",
    ),
    KnownChange(
        "size-of-null",
        "size(NULL) is null under ANSI mode; Spark 3.5 gave -1 (spark.sql.legacy.sizeOfNull follows ANSI)",
        ANSI,
        "--conf spark.sql.legacy.sizeOfNull=true",
    ),
    KnownChange(
        "choice-on-variant",
        "a field whose records disagree on its type is a choice (VARIANT) on Glue 6.0; sparkmark's Glue 5.x "
        "runtimes read it as text, where Glue 5.x itself keeps a choice",
        "docs/glue-versions.md",
        "resolve the choice (resolveChoice cast:) before writing",
    ),
)
BY_KEY = {c.key: c for c in CHANGES}


def for_error(text: str | None) -> KnownChange | None:
    """The known change whose sign an error's text carries."""
    if not text:
        return None
    for change in CHANGES:
        if any(sign in text for sign in change.errors):
            return change
    return None


def for_values(old: object, new: object) -> KnownChange | None:
    """The known change that turns a 5.x value into a 6.0 one, by its shape."""
    if old is None and new is False:
        return BY_KEY["null-in-empty-list"]
    if old == -1 and new is None:
        return BY_KEY["size-of-null"]
    return None


def for_types(old: str, new: str) -> KnownChange | None:
    """The known change that turns a column's 5.x type into its 6.0 type."""
    if new == "variant" and old != "variant":
        return BY_KEY["choice-on-variant"]
    return None
