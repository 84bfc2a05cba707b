"""Shared by the benchmark scripts: arguments, timing, and bench/results/latest.json."""

from __future__ import annotations

import argparse
import json
import os
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


def process_cpu_seconds(names: tuple[str, ...]) -> float:
    """CPU seconds used so far by every process whose command name is one of ``names``
    (Linux /proc; 0.0 elsewhere). Differences around an action tell which process
    kept the cores busy."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name in names:
            fields = stat[stat.rindex(")") + 2:].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / tick


def cores_busy(action, names: tuple[str, ...]) -> tuple[float, float]:
    """(wall seconds, average cores kept busy by the named processes) for one call."""
    before = process_cpu_seconds(names)
    wall = timed(action)
    return wall, (process_cpu_seconds(names) - before) / wall
