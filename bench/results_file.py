"""Shared by the benchmark scripts: merge figures into bench/results/latest.json."""

from __future__ import annotations

import json
from pathlib import Path

LATEST = Path(__file__).parent / "results" / "latest.json"


def record(entries: dict, sizes: dict) -> None:
    LATEST.parent.mkdir(exist_ok=True)
    doc = json.loads(LATEST.read_text()) if LATEST.exists() else {}
    doc.update(entries)
    doc.setdefault("sizes", {}).update(sizes)
    LATEST.write_text(json.dumps(doc, indent=2, sort_keys=True))
