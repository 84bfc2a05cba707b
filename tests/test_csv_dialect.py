"""Glue's built-in CSV classifier rules (delimiter and header detection), over a fixture
set of files in each delimiter with and without a header (pure logic, no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkmark.crawler.csv_dialect import CsvRules, detect

FIXTURES = Path(__file__).parent / "fixtures" / "csv_dialects"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def lines_of(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_delimiter_and_header_as_glue_detects_them(name):
    dialect = detect(lines_of(name))
    assert dialect is not None
    want = EXPECTED[name]
    assert (dialect.delimiter, dialect.has_header, list(dialect.names)) == (
        want["delimiter"],
        want["header"],
        want["names"],
    )


def test_not_csv_by_the_rules():
    assert detect(["just one column", "and another line"]) is None  # one column
    assert detect(["a,b,c"]) is None  # one row
    assert detect(["a,b,c", "1,2"]) is None  # rows of different widths


def test_a_header_needs_short_names_and_a_typed_row():
    long = "x" * 150
    assert not detect([f"{long},b", "1,2"]).has_header  # 150 characters: not a header name
    assert detect([f"b,{long}", "1,2"]).has_header  # the last column may be longer
    assert not detect(["a,1", "2,3"]).has_header  # a number in the first row


def test_a_custom_classifier_fixes_what_it_names():
    rules = CsvRules(delimiter=";", quote="'", contains_header="PRESENT")
    dialect = detect(["Name;Note", "'Smith; Ann';ok"], rules)
    assert dialect is not None
    assert (dialect.delimiter, dialect.has_header, dialect.names) == (";", True, ("name", "note"))
    absent = detect(["id,name", "1,Ann"], CsvRules(contains_header="ABSENT"))
    assert absent is not None and absent.names == ("col0", "col1")
    named = detect(["1|Ann", "2|Bob"], CsvRules(header=("ID", "Who")))
    assert named is not None and named.names == ("id", "who")
    assert detect(["a", "b"], CsvRules(allow_single_column=True)) is not None
