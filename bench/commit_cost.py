"""Bookmark commit cost as the tracked state grows (a first cut of scenario P4).

Builds a job whose bookmark already tracks N files, then times a commit that adds
k more, against a floor measured in the same process: a bare insert of the same k
rows into a scratch table of the same database. Also reports the bytes of state
per tracked file and the time to load a source's state for planning.

    python bench/commit_cost.py            # N = 1,000,000, k = 1,000
    python bench/commit_cost.py --quick    # N = 100,000
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, insert, text

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record
from sparkmark.engine.models import BookmarkOption, CtxCommit, FileEntry
from sparkmark.engine.store import StateStore

PG = os.environ.get("SPARKMARK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def entries(prefix: str, n: int) -> list[FileEntry]:
    return [
        FileEntry(
            f"file:///lake/events/dt=2026-01-{i % 28 + 1:02d}/{prefix}-{i:08d}.json",
            1_700_000_000_000 + i,
            4096 + i % 100,
        )
        for i in range(n)
    ]


def commit(store: StateStore, job: str, files: list[FileEntry]) -> float:
    run = store.start_run(
        job_name=job,
        run_id="jr_" + uuid.uuid4().hex,
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments={},
        owner="bench",
        lease_seconds=600,
    )
    began = time.perf_counter()
    store.commit(run, [CtxCommit("src", {"type": "files"}, files)], metrics={})
    return time.perf_counter() - began


def floor(store: StateStore, files: list[FileEntry]) -> float:
    scratch = Table(
        f"bench_floor_{uuid.uuid4().hex[:8]}",
        MetaData(),
        Column("path", Text),
        Column("mtime_ms", BigInteger),
        Column("size", BigInteger),
    )
    scratch.create(store.engine)
    began = time.perf_counter()
    with store.engine.begin() as conn:
        conn.execute(
            insert(scratch), [{"path": f.path, "mtime_ms": f.mtime_ms, "size": f.size} for f in files]
        )
    took = time.perf_counter() - began
    scratch.drop(store.engine)
    return took


def state_bytes(store: StateStore) -> int:
    if store.dialect == "sqlite":
        # The database's pages once the write-ahead log is folded into it (the log is
        # scratch space SQLite reuses, not state).
        base = store.url.database
        with contextlib.closing(sqlite3.connect(base)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(os.path.getsize(p) for p in (base, base + "-wal") if os.path.exists(p))
    with store.engine.connect() as conn:
        # Every table of a source's per-file state, with its indexes and TOAST.
        return sum(
            conn.execute(text(f"SELECT pg_total_relation_size('{table}')")).scalar()
            for table in ("sm_files", "sm_folders", "sm_version_files", "sm_dir_entries")
        )


def commits_and_load(store: StateStore, job: str, batches: list[list[FileEntry]]):
    """Each batch committed and, alternately, inserted bare (the floor); then the time
    to load the source's processed files and how many there are."""
    commits, floors = [], []
    for batch in batches:  # alternate the two measurements
        floors.append(floor(store, batch))
        commits.append(commit(store, job, batch))
    latest = store.latest_version(job)
    began = time.perf_counter()
    loaded = store.processed_files(job, "src", latest.lineage)
    return commits, floors, time.perf_counter() - began, loaded


def scenario(name: str, store: StateStore, tracked: int, added: int, repeats: int) -> dict:
    job = f"bench_{uuid.uuid4().hex[:6]}"
    chunk = 100_000
    for start in range(0, tracked, chunk):
        commit(store, job, entries(f"seed{start}", min(chunk, tracked - start)))
    size = state_bytes(store)
    commits, floors, load, loaded = commits_and_load(
        store, job, [entries(f"new{r}", added) for r in range(repeats)]
    )
    result = {
        "backend": name,
        "tracked": tracked,
        "added": added,
        "commit_s": statistics.median(commits),
        "floor_s": statistics.median(floors),
        "bytes_per_file": size / tracked,
        "load_state_s": load,
        "loaded": len(loaded),
    }
    result["ratio"] = result["commit_s"] / result["floor_s"]
    return result


def main() -> None:
    opts = arguments()
    tracked = 100_000 if opts.quick else 1_000_000
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = StateStore(f"sqlite:///{tmp}/state.db")
        rows.append(scenario("sqlite", sqlite, tracked, 1000, 5))
        sqlite.close()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        pg = StateStore(
            PG.replace("postgresql://", "postgresql+psycopg://") + f"?options=-csearch_path%3D{schema}"
        )
        rows.append(scenario("postgresql", pg, tracked, 1000, 5))
        pg.close()
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    print(
        f"{'backend':<11}{'tracked':>10}{'added':>7}{'commit s':>10}{'floor s':>9}"
        f"{'ratio':>7}{'B/file':>8}{'load state s':>14}"
    )
    sqlite = next(r for r in rows if r["backend"] == "sqlite")
    met = sqlite["commit_s"] <= 0.05 and sqlite["bytes_per_file"] <= 150
    record(
        {
            "P4": {
                "value": round(sqlite["commit_s"], 4),
                "goal": "<= 0.05 s and <= 150 bytes per file (SQLite)",
                "met": met,
                **{f"{r['backend']}_commit_s": round(r["commit_s"], 4) for r in rows},
                **{f"{r['backend']}_bytes_per_file": round(r["bytes_per_file"]) for r in rows},
            }
        },
        {"P4_files_tracked": tracked, "P4_files_added": 1000},
    )
    for r in rows:
        print(
            f"{r['backend']:<11}{r['tracked']:>10}{r['added']:>7}{r['commit_s']:>10.3f}"
            f"{r['floor_s']:>9.3f}{r['ratio']:>7.2f}{r['bytes_per_file']:>8.0f}{r['load_state_s']:>14.2f}"
        )


if __name__ == "__main__":
    main()
