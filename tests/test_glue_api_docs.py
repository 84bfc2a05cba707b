"""docs/glue-api.md names every Glue operation: the served ones in its table, the rest
in its list, both as the endpoint's code and botocore's Glue model have them."""

from __future__ import annotations

import re
from pathlib import Path

import sparkmark.api.server  # noqa: F401 - registers the operations
from sparkmark.api.protocol import service_model
from sparkmark.api.service import HANDLERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "glue-api.md"


def test_the_operations_page_matches_the_endpoint():
    text = DOC.read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| ") and "|" in line[2:]]
    documented = set()
    for line in table[1:]:  # after the header row (the separator does not start with "| ")
        documented |= set(re.findall(r"[A-Z][A-Za-z]+", line.split("|")[1]))
    assert set(HANDLERS) <= documented, sorted(set(HANDLERS) - documented)
    listed = text.split("tests/test_glue_api_docs.py checks this list -->", 1)[1]
    unserved = {name.strip().rstrip(".") for name in listed.split(",") if name.strip()}
    assert unserved == set(service_model().operation_names) - set(HANDLERS)
