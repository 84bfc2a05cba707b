"""How Glue's built-in CSV classifier reads a file's first lines: which delimiter, and
whether the first row is a header. Pure logic over text; Python's ``csv`` module splits
the lines (quotes included, so a quoted field may hold the delimiter).

Glue's documented rules, as applied here:
- the delimiters tried are comma, pipe, tab, semicolon and Ctrl-A (``\\u0001``); a file
  is CSV when one of them splits every sampled row into the same number (two or more)
  of columns, over at least two rows;
- the first row is a header when every value in it is a string (no number, no
  boolean), every value but the last is under 150 characters, and some later row has
  a value that is not a string: a file of strings only has no header;
- a header's names are lower-cased; without a header, columns are ``col0``, ``col1``…
A custom classifier (``[classifiers.NAME]`` in sparkmark.toml) may fix the delimiter,
the quote, the header policy (PRESENT, ABSENT, UNKNOWN) or the header's names.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

DELIMITERS = (",", "|", "\t", ";", "\x01")
MAX_HEADER_CHARS = 150
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class CsvRules:
    """What a custom CSV classifier fixes (None: detect it)."""

    delimiter: str | None = None
    quote: str = '"'
    contains_header: str = "UNKNOWN"  # PRESENT | ABSENT | UNKNOWN
    header: tuple[str, ...] = ()
    allow_single_column: bool = False


@dataclass(frozen=True)
class Dialect:
    delimiter: str
    quote: str
    has_header: bool
    names: tuple[str, ...]  # the column names the table gets


def _rows(lines: list[str], delimiter: str, quote: str) -> list[list[str]]:
    return [row for row in csv.reader(lines, delimiter=delimiter, quotechar=quote) if row]


def is_string(value: str) -> bool:
    """A value the classifier types as STRING: not a number, not a boolean, not empty."""
    text = value.strip()
    return bool(text) and not _NUMBER.match(text) and text.lower() not in ("true", "false")


def detect(lines: list[str], rules: CsvRules | None = None) -> Dialect | None:
    """The dialect of a file from its first lines, or None when it is not CSV by these rules."""
    rules = rules or CsvRules()
    lines = [line for line in lines if line.strip()]
    minimum = 1 if rules.allow_single_column else 2
    candidates = (rules.delimiter,) if rules.delimiter else DELIMITERS
    chosen: tuple[str, list[list[str]]] | None = None
    for delimiter in candidates:
        rows = _rows(lines, delimiter, rules.quote)
        widths = {len(r) for r in rows}
        if len(rows) >= 2 and len(widths) == 1 and widths.pop() >= minimum:
            chosen = (delimiter, rows)
            break
    if chosen is None:
        return None
    delimiter, rows = chosen
    first, rest = rows[0], rows[1:]
    if rules.contains_header == "PRESENT":
        has_header = True
    elif rules.contains_header == "ABSENT":
        has_header = False
    else:
        has_header = (
            all(is_string(v) for v in first)
            and all(len(v) < MAX_HEADER_CHARS for v in first[:-1])
            and any(not is_string(v) for row in rest for v in row if v.strip())
        )
    if rules.header:
        names = tuple(n.strip().lower() for n in rules.header)
    elif has_header:
        names = tuple(v.strip().lower() for v in first)
    else:
        names = tuple(f"col{i}" for i in range(len(first)))
    return Dialect(delimiter, rules.quote, has_header, names)
