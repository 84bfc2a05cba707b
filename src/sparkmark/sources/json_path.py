"""A JSON classifier's ``JsonPath`` (and the ``jsonPath`` format option): which parts of
a JSON document are its records. jsonpath-ng parses the path; sparkmark reads the paths
that name one object field after another, ending in ``[*]`` (each element of that array
is a record) or not (the object found is one record): ``$[*]``, ``$.records[*]``,
``$.data.items[*]``, ``$['key with spaces'][*]``, ``$.payload``. Others (filters,
indexes, slices, a wildcard before the end) are refused in one line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SourceError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class JsonPath:
    text: str
    fields: tuple[str, ...]  # the object fields from the root
    each: bool  # ends in [*]: the array's elements are the records

    def spark_path(self) -> str:
        """The path as Spark's JSON functions take it (``$['a']['b']``)."""
        quoted = "".join("['" + f.replace("\\", "\\\\").replace("'", "\\'") + "']" for f in self.fields)
        return "$" + quoted

    def records(self, document: Any) -> Iterator[Any]:
        """The records a parsed document holds at this path (none when it is not there)."""
        found = document
        for f in self.fields:
            if not isinstance(found, dict) or f not in found:
                return
            found = found[f]
        if self.each:
            if isinstance(found, list):
                yield from found
        elif found is not None:
            yield found

    def select(self, df: DataFrame, column: str = "value") -> DataFrame:
        """A frame of whole documents as text → one row per record, as JSON text in
        ``column`` (the frame's other columns kept). The records' text is the file's own
        (``get_json_object``), so their fields keep the file's order."""
        from pyspark.sql import functions as F

        keep = [c for c in df.columns if c != column]
        found = F.get_json_object(F.col(column), self.spark_path())
        if self.each:
            found = F.explode(F.from_json(found, "array<string>"))
        picked = df.select(found.alias("__sm_record"), *keep)
        return picked.where(F.col("__sm_record").isNotNull()).withColumnRenamed("__sm_record", column)


def parse_path(text: str) -> JsonPath:
    from jsonpath_ng import Child, Fields, Root, Wildcard, parse

    try:
        tree = parse(text)
    except Exception as exc:  # noqa: BLE001 - its lexer and parser raise plain Exceptions
        raise SourceError(f"JsonPath {text!r} is not a JSON path: {str(exc).splitlines()[0]}") from None
    steps: list[Any] = []
    while isinstance(tree, Child):
        steps.insert(0, tree.right)
        tree = tree.left
    if not isinstance(tree, Root):
        raise SourceError(f"JsonPath {text!r} must start at the document's root ($)")
    each = bool(steps) and isinstance(steps[-1], Wildcard)
    fields = steps[:-1] if each else steps
    if not all(isinstance(s, Fields) and len(s.fields) == 1 and s.fields[0] != "*" for s in fields):
        raise SourceError(
            f"JsonPath {text!r} is not one sparkmark reads: give object fields from $, ending in [*] "
            "or not ($[*], $.records[*], $.payload)"
        )
    return JsonPath(text, tuple(s.fields[0] for s in fields), each)
