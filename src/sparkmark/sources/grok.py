"""Grok patterns, as Glue's grok classifiers and ``GrokSerDe`` tables use them: a
line of text matched against named patterns (``%{IP:client} %{NUMBER:bytes:int}``),
each named field a column. pygrok expands the pattern with the usual grok library
(``COMBINEDAPACHELOG``, ``SYSLOGBASE``…) and a classifier's ``CustomPatterns`` (one
``NAME regex`` a line); a field is a string unless the pattern gives it one of
Glue's types (byte, boolean, double, short, int, long, float).

A table made from a grok classifier is read by Spark: each line of its files is matched
with the same expression (Java's regex engine, its named groups made positional), a line
that does not match giving a row of nulls, as Glue's ``GrokSerDe`` reads one."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SourceError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Glue's grok field types, and the catalog type each becomes.
GROK_TYPES = {
    "byte": "tinyint",
    "boolean": "boolean",
    "double": "double",
    "short": "smallint",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "string": "string",
}
_TYPED_FIELD = re.compile(r"%\{(\w+):([\w.-]+):(\w+)\}")
_NAMED_GROUP = re.compile(r"\(\?P?<([A-Za-z_][\w-]*)>")  # (?P<name> or (?<name>, not (?<= or (?<!


def custom_patterns(text: str | None) -> dict[str, str]:
    """A classifier's ``CustomPatterns``: ``NAME regex`` a line; blank lines and ``#``
    comments are skipped."""
    found: dict[str, str] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, regex = line.partition(" ")
        if not regex.strip():
            raise SourceError(f"custom grok pattern {name!r} has no expression (a line is 'NAME regex')")
        found[name] = regex.strip()
    return found


@dataclass(frozen=True)
class GrokPattern:
    """A grok pattern compiled: its expression, and its fields with their catalog types."""

    pattern: str
    regex: str  # Python's (the ``regex`` module's) expression, with named groups
    fields: tuple[tuple[str, str], ...]  # (name, catalog type) in the pattern's order

    @classmethod
    def compile(cls, pattern: str, custom: str | None = None) -> GrokPattern:
        """The pattern expanded (once per pattern in a process: a crawl tries it on
        every file)."""
        return _compiled(pattern, custom)

    @classmethod
    def _expand(cls, pattern: str, custom: str | None) -> GrokPattern:
        from pygrok import Grok  # the grok library and its pattern files

        for name, field, kind in _TYPED_FIELD.findall(pattern):
            if kind not in GROK_TYPES:
                raise SourceError(
                    f"grok field {field!r} of %{{{name}}} has type {kind!r}; Glue's types are "
                    + ", ".join(sorted(GROK_TYPES))
                )
        # pygrok names a field only when it is a word; Glue allows hyphens (field-name)
        safe = re.sub(r"%\{(\w+):([\w.-]+)((?::\w+)?)\}", _safe_field, pattern)
        try:
            grok = Grok(safe, custom_patterns=custom_patterns(custom))
        except KeyError as exc:
            raise SourceError(
                f"grok pattern {pattern!r} names %{{{exc.args[0]}}}, which is not a known pattern"
            ) from None
        except Exception as exc:  # noqa: BLE001 - the regex engine's error, in one line
            raise SourceError(f"grok pattern {pattern!r} is not a valid expression: {exc}") from None
        types = {_safe_name(f): GROK_TYPES[k] for _, f, k in _TYPED_FIELD.findall(pattern)}
        order = sorted(grok.regex_obj.groupindex.items(), key=lambda item: item[1])
        fields = tuple((_field_name(n), types.get(n, "string")) for n, _ in order)
        return cls(pattern, grok.regex_obj.pattern, fields)

    def match(self, line: str) -> dict[str, str | None] | None:
        """The fields of a line the whole pattern matches (None: it does not)."""
        import regex

        found = regex.match(f"(?:{self.regex})$", line)
        if found is None:
            return None
        return {_field_name(k): v for k, v in found.groupdict().items()}

    def java_regex(self) -> tuple[str, list[int]]:
        """The expression for Spark (Java), named groups made plain groups, and each
        field's group number in it (numbers are the same: named groups count as groups)."""
        import regex

        compiled = regex.compile(self.regex)
        positions = [compiled.groupindex[n] for n in sorted(compiled.groupindex, key=compiled.groupindex.get)]
        return _NAMED_GROUP.sub("(", self.regex), positions

    def read(self, lines: DataFrame) -> DataFrame:
        """Spark's text frame (a ``value`` column) as the pattern's columns (its other
        columns, a table's partition values, kept); a line that does not match is a row
        of nulls."""
        from pyspark.sql import functions as F

        expression, positions = self.java_regex()
        anchored = f"^(?:{expression})$"
        value = F.col("value")
        matches = value.rlike(anchored)
        columns = [
            F.when(matches, F.regexp_extract(value, anchored, position)).cast(kind).alias(name)
            for (name, kind), position in zip(self.fields, positions, strict=True)
        ]
        return lines.select(*columns, *[c for c in lines.columns if c != "value"])


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str, custom: str | None) -> GrokPattern:
    return GrokPattern._expand(pattern, custom)


def _safe_name(field: str) -> str:
    return field.replace("-", "__h__").replace(".", "__d__")


def _field_name(group: str) -> str:
    return group.replace("__h__", "-").replace("__d__", ".")


def _safe_field(m: re.Match[str]) -> str:
    return "%{" + m.group(1) + ":" + _safe_name(m.group(2)) + m.group(3) + "}"
