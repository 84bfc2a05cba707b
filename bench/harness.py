"""Shared by the benchmark scripts: arguments, timing, and bench/results/latest.json."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

LATEST = Path(__file__).parent / "results" / "latest.json"


def record(entries: dict, sizes: dict) -> None:
    LATEST.parent.mkdir(exist_ok=True)
    doc = json.loads(LATEST.read_text()) if LATEST.exists() else {}
    doc.update(entries)
    doc.setdefault("sizes", {}).update(sizes)
    LATEST.write_text(json.dumps(doc, indent=2, sort_keys=True))


def timed(action) -> float:
    """Seconds one call of ``action`` takes."""
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def arguments(repeats: int = 5) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a tenth of the full size")
    parser.add_argument("--repeats", type=int, default=repeats)
    return parser.parse_args()
