"""docs/studio.md lists every node type of botocore's Glue model, and says Yes exactly
for the ones the generator writes."""

from __future__ import annotations

import re
from pathlib import Path

from sparkmark.studio.codegen import WRITERS
from sparkmark.studio.model import node_shapes

DOC = Path(__file__).resolve().parents[1] / "docs" / "studio.md"


def test_every_node_type_is_listed_with_its_status():
    rows = dict(re.findall(r"^\| (\w+) \| (Yes|No) \|", DOC.read_text(encoding="utf-8"), flags=re.M))
    assert set(rows) == set(node_shapes())
    assert {n for n, status in rows.items() if status == "Yes"} == set(WRITERS)
