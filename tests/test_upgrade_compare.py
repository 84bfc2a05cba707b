"""The upgrade check's comparison, on captures written here with pyarrow (as a run's
capture holds them): how two runs of one job differ, and which documented change
explains each difference. No Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkmark.upgrade import changes
from sparkmark.upgrade.compare import Ran, compare


def ran(folder: Path, code: int = 0, error: str | None = None, writes=(), warnings=()) -> Ran:
    """A capture folder: ``writes`` are (target, schema [(name, type)], rows [dict])."""
    folder.mkdir(parents=True)
    manifest = []
    for number, (target, schema, rows) in enumerate(writes, 1):
        names = [n for n, _ in schema]
        table = (
            pa.table({n: [r.get(n) for r in rows] for n in names})
            if rows
            else pa.table({n: [] for n in names})
        )
        (folder / f"{number:03d}").mkdir()
        pq.write_table(table, folder / f"{number:03d}" / "part-0.parquet")
        manifest.append(
            {"number": number, "target": target, "kind": "files", "schema": schema, "rows": len(rows)}
        )
    (folder / "manifest.json").write_text(json.dumps({"writes": manifest}))
    (folder / "run.json").write_text(json.dumps({"code": code, "error": error, "warnings": list(warnings)}))
    return Ran.read(folder)


SCHEMA = [("id", "int"), ("v", "string")]


def test_the_same_writes_are_no_difference(tmp_path):
    rows = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    old = ran(tmp_path / "old", writes=[("out", SCHEMA, rows)])
    new = ran(tmp_path / "new", writes=[("out", SCHEMA, list(reversed(rows)))])  # order is not compared
    assert compare("job", old, new) == []
    assert compare("job", old, new, key=["id"]) == []


def test_a_run_that_fails_only_on_the_new_version_is_explained_by_its_error_class(tmp_path):
    old = ran(tmp_path / "old", writes=[("out", SCHEMA, [{"id": 1, "v": "a"}])])
    new = ran(tmp_path / "new", code=1, error="NumberFormatException: [CAST_INVALID_INPUT] The value 'x' …")
    (found,) = compare("job", old, new)
    assert (found.what, found.old, found.change) == ("outcome", "succeeded", changes.BY_KEY["ansi-cast"])
    assert found.new.startswith("failed: NumberFormatException: [CAST_INVALID_INPUT]")
    assert "ANSI" in found.explanation and "spark.sql.ansi.enabled=false" in found.explanation


def test_two_failures_differ_only_by_their_error_class(tmp_path):
    same_old = ran(tmp_path / "a", code=1, error="[DIVIDE_BY_ZERO] Division by zero at line 3")
    same_new = ran(tmp_path / "b", code=1, error="[DIVIDE_BY_ZERO.X] Division by zero at line 4")
    assert compare("job", same_old, same_new) == []
    old = ran(tmp_path / "c", code=1, error="[INCONSISTENT_BEHAVIOR_CROSS_VERSION.PARSE] Fail to parse")
    new = ran(tmp_path / "d", code=1, error="[CANNOT_PARSE_TIMESTAMP] Text '2026-1-5' could not be parsed")
    (found,) = compare("job", old, new)
    assert found.what == "error" and found.change == changes.BY_KEY["datetime-parser-policy"]


def test_values_by_key_name_the_rows_and_the_change_their_shape_shows(tmp_path):
    schema = [("id", "int"), ("listed", "boolean")]
    old = ran(
        tmp_path / "old", writes=[("out", schema, [{"id": 1, "listed": False}, {"id": 2, "listed": None}])]
    )
    new = ran(
        tmp_path / "new", writes=[("out", schema, [{"id": 1, "listed": False}, {"id": 2, "listed": False}])]
    )
    (found,) = compare("job", old, new, key=["id"])
    assert (found.what, found.where, found.old, found.new) == (
        "values",
        "out: listed (1 row(s))",
        "2=null",
        "2=false",
    )
    assert found.change == changes.BY_KEY["null-in-empty-list"]


def test_values_without_a_key_are_the_rows_only_one_version_wrote(tmp_path):
    schema = [("id", "int"), ("n", "int")]
    old = ran(tmp_path / "old", writes=[("out", schema, [{"id": 1, "n": 2}, {"id": 2, "n": -1}])])
    new = ran(tmp_path / "new", writes=[("out", schema, [{"id": 1, "n": 2}, {"id": 2, "n": None}])])
    (found,) = compare("job", old, new)
    assert found.what == "values" and "1 row(s) only in the old, 1 only in the new" in found.where
    assert json.loads(found.old) == {"id": 2, "n": -1} and json.loads(found.new) == {"id": 2, "n": None}
    assert found.change == changes.BY_KEY["size-of-null"]


def test_a_column_of_another_type_is_a_type_difference_and_its_values_are_not_compared(tmp_path):
    old = ran(
        tmp_path / "old", writes=[("out", [("id", "int"), ("code", "string")], [{"id": 1, "code": "7"}])]
    )
    new = ran(
        tmp_path / "new", writes=[("out", [("id", "int"), ("code", "variant")], [{"id": 1, "code": "7"}])]
    )
    (found,) = compare("job", old, new, key=["id"])
    assert (found.what, found.where, found.old, found.new) == ("type", "out: code", "string", "variant")
    assert found.change == changes.BY_KEY["choice-on-variant"]


@pytest.mark.parametrize(
    "old_writes, new_writes, what",
    [
        ([("out", SCHEMA, [{"id": 1, "v": "a"}])], [("out", SCHEMA, [])], "rows"),
        ([("out", SCHEMA, [])], [("out", [("id", "int")], [])], "schema"),
        ([("out", SCHEMA, [])], [("out", SCHEMA, []), ("more", SCHEMA, [])], "writes"),
        ([], [], None),  # nothing written by either: the same
    ],
)
def test_counts_schemas_and_targets(tmp_path, old_writes, new_writes, what):
    found = compare("job", ran(tmp_path / "old", writes=old_writes), ran(tmp_path / "new", writes=new_writes))
    assert [d.what for d in found] == ([what] if what else [])
    assert all(d.change is None and d.explanation.startswith("no documented change") for d in found)


def test_warnings_only_one_version_logged_are_a_difference(tmp_path):
    old = ran(tmp_path / "old", warnings=["a deprecated function"])
    new = ran(tmp_path / "new")
    (found,) = compare("job", old, new)
    assert (found.what, found.old, found.new) == ("warnings", "a deprecated function", "(none)")


@pytest.mark.parametrize(
    "error, key",
    [
        ("[CAST_INVALID_INPUT] x", "ansi-cast"),
        ("[CAST_OVERFLOW] x", "ansi-cast-overflow"),
        ("[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION] x", "ansi-decimal-range"),
        ("[DIVIDE_BY_ZERO] x", "ansi-divide-by-zero"),
        ("[REMAINDER_BY_ZERO] x", "ansi-remainder-by-zero"),
        ("[ARITHMETIC_OVERFLOW] x", "ansi-overflow"),
        ("[INVALID_ARRAY_INDEX_IN_ELEMENT_AT] x", "ansi-array-index"),
        ("[CANNOT_PARSE_TIMESTAMP] x", "ansi-datetime-value"),
        ("[INCONSISTENT_BEHAVIOR_CROSS_VERSION.PARSE_DATETIME_BY_NEW_PARSER] x", "datetime-parser-policy"),
        ("[SYNTAX_DISCONTINUED.BANG_EQUALS_NOT] x", "bang-not"),
        ("[TABLE_OR_VIEW_NOT_FOUND] x", None),
        (None, None),
    ],
)
def test_each_error_class_names_its_change(error, key):
    found = changes.for_error(error)
    assert (found.key if found else None) == key
