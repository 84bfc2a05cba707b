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
    "H2_state_sqlite",
    "H2_state_postgresql",
    "H2_nothing_new_sqlite",
    "H2_nothing_new_postgresql",
    "H2_run_sqlite",
    "H2_run_postgresql",
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
    "S3d",
    "P8",
    "P9",
    "P10",
    "P1c",
    "T1",
    "T2",
    "T3",
    "K1",
    "K2",
    "V1",
    "V2",
    "A1",
    "L1",
    "Q2",
    "M1",
    "M2",
    "U1",
    "U1r",
    "G1",
    "G2",
]


def main() -> None:
    if not LATEST.exists():
        sys.exit(f"no results yet: {LATEST}")
    doc = json.loads(Path(LATEST).read_text())
    figures = {k: v for k, v in doc.items() if k != "sizes"}
    misshapen = sorted(k for k, v in figures.items() if not isinstance(v, dict) or "value" not in v)
    keys = [k for k in ORDER if k in figures and k not in misshapen]
    keys += sorted(k for k in figures if k not in keys and k not in misshapen)
    print(f"{'figure':<36}{'value':>10}  {'goal':<46}{'met':>5}  date")
    for key in keys:
        entry = figures[key]
        met = {True: "yes", False: "NO", None: "-"}.get(entry.get("met"), "-")
        goal = str(entry.get("goal", ""))[:45]
        print(f"{key:<36}{entry['value']!s:>10}  {goal:<46}{met:>5}  {entry.get('date', '?')}")
    missed = [k for k in keys if figures[k].get("met") is False]
    print(f"{len(keys)} figures, {len(missed)} missed" + (f": {', '.join(missed)}" if missed else ""))
    if misshapen:
        sys.exit(f"figures without a value: {', '.join(misshapen)}")


if __name__ == "__main__":
    main()
