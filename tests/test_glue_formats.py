"""Glue's format options as Spark options: one fixture row per case (tests/fixtures/
glue_format_options.json), written from Glue's "Format Options for ETL Inputs and
Outputs" page (CSV: withHeader default false, writeHeader default true, separator,
escaper, quoteChar with -1 for no quoting, multiline; Parquet: compression, blockSize,
pageSize; XML: rowTag)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkmark.errors import SourceError
from sparkmark.glue import formats

CASES = json.loads((Path(__file__).parent / "fixtures" / "glue_format_options.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_format_options(case):
    table = formats.READ if case["direction"] == "read" else formats.WRITE
    assert formats.translate(table, case["format"], case["given"]) == case["spark"]


def test_a_boolean_that_is_not_one_is_refused():
    with pytest.raises(SourceError, match="option withHeader must be true or false, got 'maybe'"):
        formats.translate(formats.READ, "csv", {"withHeader": "maybe"})
