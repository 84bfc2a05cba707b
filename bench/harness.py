"""Shared by the benchmark scripts: arguments, timing, and bench/results/latest.json."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

LATEST = Path(__file__).parent / "results" / "latest.json"


def record(entries: dict, sizes: dict) -> None:
    """Merge figures into bench/results/latest.json, each with the day it was measured."""
    LATEST.parent.mkdir(exist_ok=True)
    doc = json.loads(LATEST.read_text()) if LATEST.exists() else {}
    today = time.strftime("%Y-%m-%d")
    for key, entry in entries.items():
        missing = {"value", "goal", "met"} - set(entry) if isinstance(entry, dict) else {"a dict"}
        if missing:  # every figure is kept in one shape, so bench/table.py can list it
            raise ValueError(f"figure {key} lacks {', '.join(sorted(missing))}")
        entry.setdefault("date", today)
    doc.update(entries)  # keys not measured this time stay as they were
    doc.setdefault("sizes", {}).update(sizes)
    LATEST.write_text(json.dumps(doc, indent=2, sort_keys=True))


def timed(action) -> float:
    """Seconds one call of ``action`` takes."""
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def arguments(repeats: int = 5, figures: tuple[str, ...] = ()) -> argparse.Namespace:
    """The benches' options; ``--only`` for a bench that names its ``figures`` (a bench
    that does not refuses it, rather than measuring everything)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a tenth of the full size")
    parser.add_argument("--repeats", type=int, default=repeats)
    if figures:
        parser.add_argument("--only", choices=figures, default=None, help="measure this figure alone")
    return parser.parse_args()


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot (Linux /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def cores_busy(action) -> tuple[float, float]:
    """(wall seconds, average cores the whole machine kept busy) for one call. Whole
    machine, because the database's per-connection processes come and go within it."""
    if not Path("/proc/stat").exists():
        return timed(action), float("nan")
    busy0, total0 = _cpu_ticks()
    wall = timed(action)
    busy1, total1 = _cpu_ticks()
    share = (busy1 - busy0) / max(total1 - total0, 1)
    return wall, share * (os.cpu_count() or 1)


@contextlib.contextmanager
def api_endpoint(env: dict[str, str], home: Path, service: str) -> Iterator[tuple[str, object]]:
    """`sparkmark api` as a process (no scheduler) on ``env``'s home, and a boto3 client of
    ``service`` signed with the home's token: (URL, client). The process ends on exit."""
    import boto3
    from botocore.config import Config

    from sparkmark.access import local_token

    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkmark", "api", "--port", "0", "--no-scheduler"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline())
        assert found is not None, "sparkmark api printed no URL"
        client = boto3.client(
            service,
            endpoint_url=found.group(0),
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key=local_token(home),
            config=Config(retries={"max_attempts": 1}, read_timeout=300),
        )
        yield found.group(0), client
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
