"""Glue's format options and the Spark options they become: one table per format and
direction, so what the façade translates can be read (and checked against
docs/glue-compatibility.md) in one place.

A Glue script says ``format_options={"withHeader": True, "separator": "|"}``; Spark's
CSV reader wants ``header=true, sep=|``. Options a table does not name are not passed
on (Glue's own options that have no Spark meaning are listed in ``ACCEPTED_NO_OP``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.options import parse_bool


@dataclass(frozen=True)
class FormatOption:
    glue: str  # the name in a Glue script's format_options
    spark: str  # the Spark reader or writer option it becomes
    # "bool" (true/false), "text" (as given), "lower" (lower-cased text), "quote" (a
    # character, or "-1": no quoting, which Spark spells as an empty string)
    kind: str = "text"
    default: Any = None  # passed to Spark when the script does not give the option


READ: dict[str, tuple[FormatOption, ...]] = {
    "csv": (
        FormatOption("withHeader", "header", "bool", False),
        FormatOption("separator", "sep"),
        FormatOption("quoteChar", "quote", "quote"),
        FormatOption("escaper", "escape"),
        FormatOption("multiline", "multiLine", "bool"),  # Glue's reference spells it so
        FormatOption("multiLine", "multiLine", "bool"),
    ),
    "xml": (FormatOption("rowTag", "rowTag", default="row"),),
}

WRITE: dict[str, tuple[FormatOption, ...]] = {
    "csv": (
        FormatOption("writeHeader", "header", "bool", True),
        FormatOption("separator", "sep"),
    ),
    "parquet": (
        FormatOption("compression", "compression", "lower"),
        FormatOption("blockSize", "parquet.block.size"),
        FormatOption("pageSize", "parquet.page.size"),
    ),
    "xml": (FormatOption("rowTag", "rowTag", default="row"),),
}

# Connection options Glue uses to size or route its reads, which Spark decides itself.
ACCEPTED_NO_OP = ("groupFiles", "groupSize", "compressionType", "useS3ListImplementation")


def _value(option: FormatOption, value: Any) -> str:
    if option.kind == "bool":
        return str(parse_bool(option.glue, value)).lower()
    if option.kind == "lower":
        return str(value).lower()
    if option.kind == "quote" and str(value) == "-1":
        return ""
    return str(value)


def translate(
    table: Mapping[str, tuple[FormatOption, ...]], fmt: str, given: Mapping[str, Any]
) -> dict[str, str]:
    """The Spark options for ``fmt`` that a script's Glue ``given`` options mean."""
    spark: dict[str, str] = {}
    for option in table.get(fmt, ()):
        if option.glue in given:
            spark[option.spark] = _value(option, given[option.glue])
        elif option.default is not None:
            spark[option.spark] = _value(option, option.default)
    return spark
