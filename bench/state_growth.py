"""H2's state figures: what the bookmark's state costs from 1,000,000 to 10,000,000
tracked files, in 10,000 Hive partitions (1,000 files each at 10⁷), with the state
written by the engine's own commit path in bulk (commits of 200,000 files, not one
run per partition).

At each size: the commit of 10,000 new files (median of 3, against a bare insert of
the same rows into a scratch table of the same database), the state's bytes per
tracked file, and the time to load a source's processed files for planning.

    python bench/state_growth.py                       # SQLite, 10⁶ and 10⁷
    python bench/state_growth.py --postgres            # PostgreSQL too
    python bench/state_growth.py --quick               # 10⁵ and 10⁶
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import psycopg

from commit_cost import PG, commit, commits_and_load, state_bytes
from harness import record
from sparkmark.engine.models import FileEntry
from sparkmark.engine.store import StateStore

PARTITIONS = 10_000
CHUNK = 200_000
ADDED = 10_000


def files(prefix: str, start: int, n: int, total: int) -> list[FileEntry]:
    """``n`` files from number ``start`` of ``total``, spread over PARTITIONS folders."""
    per = max(total // PARTITIONS, 1)
    return [
        FileEntry(
            f"file:///lake/events/dt={(i // per) % PARTITIONS:05d}/{prefix}-{i:08d}.json",
            1_700_000_000_000 + i,
            4096 + i % 100,
        )
        for i in range(start, start + n)
    ]


def measure(name: str, store: StateStore, tracked: int) -> dict:
    job = f"h2_{uuid.uuid4().hex[:6]}"
    began = time.perf_counter()
    for start in range(0, tracked, CHUNK):
        commit(store, job, files("seed", start, min(CHUNK, tracked - start), tracked))
    seeding = time.perf_counter() - began
    size = state_bytes(store)
    batches = [files(f"new{r}", 0, ADDED, tracked) for r in range(3)]
    commits, floors, load, loaded = commits_and_load(store, job, batches)
    return {
        "backend": name,
        "tracked": tracked,
        "seeding_s": round(seeding, 1),
        "commit_10k_s": round(statistics.median(commits), 4),
        "floor_10k_s": round(statistics.median(floors), 4),
        "bytes_per_file": round(size / tracked),
        "load_state_s": round(load, 2),
        "loaded": len(loaded),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10⁵ and 10⁶ instead of 10⁶ and 10⁷")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL as well as SQLite")
    opts = parser.parse_args()
    sizes = [100_000, 1_000_000] if opts.quick else [1_000_000, 10_000_000]
    rows = []
    for tracked in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = StateStore(f"sqlite:///{tmp}/state.db")
            rows.append(measure("sqlite", sqlite, tracked))
            sqlite.close()
        print(rows[-1], flush=True)
        if opts.postgres:
            schema = f"bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{schema}"')
            try:
                pg = StateStore(
                    PG.replace("postgresql://", "postgresql+psycopg://")
                    + f"?options=-csearch_path%3D{schema}"
                )
                rows.append(measure("postgresql", pg, tracked))
                pg.close()
            finally:
                with psycopg.connect(PG, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
            print(rows[-1], flush=True)
    entries = {}
    for backend, limit in (("sqlite", 100), ("postgresql", 200)):
        mine = [r for r in rows if r["backend"] == backend]
        if not mine:
            continue
        top = mine[-1]
        key = f"H2_state_{backend}" + ("_quick" if opts.quick else "")
        entries[key] = {
            "value": top["commit_10k_s"],
            "goal": f"<= 0.1 s to commit 10,000 files and <= {limit} B per file at {top['tracked']:,}",
            "met": top["commit_10k_s"] <= 0.1 and top["bytes_per_file"] <= limit,
            "sizes": mine,
        }
    record(entries, {"H2_partitions": PARTITIONS, "H2_added": ADDED})


if __name__ == "__main__":
    main()
