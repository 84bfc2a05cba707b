"""Print bench/results/latest.json as one table: each figure, its goal, and whether it
is met. `make bench` and `make bench-quick` end with it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import LATEST

ORDER = [
    "P1",
    "P1d",
    "H1",
    "P2",
    "P3",
    "P4",
    "P5",
    "P6",
    "Q1",
    "Q3",
    "C1",
    "W1",
    "W1w",
    "S1",
    "S2",
    "S2c",
    "S3",
    "P8",
    "P9",
    "P10",
    "P1c",
    "T1",
    "T2",
    "T3",
]


def main() -> None:
    if not LATEST.exists():
        sys.exit(f"no results yet: {LATEST}")
    doc = json.loads(Path(LATEST).read_text())
    keys = [k for k in ORDER if isinstance(doc.get(k), dict) and "value" in doc[k]]
    keys += sorted(k for k, v in doc.items() if isinstance(v, dict) and "value" in v and k not in keys)
    print(f"{'key':<6}{'value':>12}  {'goal':<48}{'met':>5}")
    for key in keys:
        entry = doc[key]
        met = {True: "yes", False: "NO", None: "-"}.get(entry.get("met"), "-")
        print(f"{key:<6}{entry['value']!s:>12}  {entry.get('goal', '')!s:<48}{met:>5}")
    missed = [k for k in keys if doc[k].get("met") is False]
    print(f"{len(keys)} figures, {len(missed)} missed" + (f": {', '.join(missed)}" if missed else ""))


if __name__ == "__main__":
    main()
