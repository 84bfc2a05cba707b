"""H2's run figures: a bookmarked file source tracking 1,000,000 and 10,000,000 files in
10,000 Hive partitions (100 and 1,000 files each), on SQLite and on PostgreSQL.

The tree is real: empty files on the local disk (only the new ones have rows, so the
disk holds inodes, not data). The state is written by the engine's own commit path in
one bulk commit of what a first run's plan records (every file and every folder's
mark), not by 10,000 runs.

At each size and store:
- nothing new: the time to decide that a run has nothing to read (the plan against
  the bookmark, skipUnchangedPartitions on: the partitions' folders stat'ed, their marks
  compared; no Spark), median of 5. Goal ≤ 1 s.
- 100 new files in 10 partitions: the run (a paused job reading JSON and writing
  Parquet, so each repeat reads the same increment) ÷ the floor (plain Spark reading
  exactly the new files), medians of alternating repeats. Goal ≤ 1.2.

    python bench/h2_runs.py             # 10⁶ and 10⁷, SQLite and PostgreSQL
    python bench/h2_runs.py --quick     # 10⁵ (10 a partition) and 10⁶, SQLite only
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import psycopg

from commit_cost import PG
from files_incremental import add_new_files, floor_run, increment, seed
from harness import record, timed
from sparkmark.engine.fileplan import now_ms, plan_bookmarked
from sparkmark.engine.increment import FileSourceOptions
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings
from sparkmark.spark import create_session

PARTITIONS = 10_000


def make_empty_tree(root: Path, per_partition: int) -> float:
    """PARTITIONS folders of ``per_partition`` empty files; returns the seconds taken."""
    began = time.perf_counter()
    flags = os.O_CREAT | os.O_WRONLY
    for p in range(PARTITIONS):
        folder = root / f"dt={p:05d}"
        folder.mkdir(parents=True)
        base = str(folder)
        for n in range(per_partition):
            os.close(os.open(f"{base}/part-{n:05d}.json", flags, 0o644))
    return time.perf_counter() - began


def decide_nothing_new(store: StateStore, job: str, root: Path) -> int:
    """The plan of a run with nothing new, as ``sparkmark run`` makes it before Spark."""
    latest = store.latest_version(job)
    plan = plan_bookmarked(
        store,
        job,
        "src",
        [str(root)],
        FileSourceOptions(skip_unchanged_partitions=True),
        lineage=latest.lineage,
        previous=latest.ctx_states["src"],
        now_ms=now_ms(),
    )
    return len(plan.increment.selected)


def stores(work: Path, with_postgres: bool):
    """(name, store, cleanup) for SQLite and, when asked, a fresh PostgreSQL schema."""
    yield "sqlite", StateStore(f"sqlite:///{work}/state.db"), lambda: None
    if with_postgres:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')

        def drop(schema=schema):
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

        url = PG.replace("postgresql://", "postgresql+psycopg://") + f"?options=-csearch_path%3D{schema}"
        yield "postgresql", StateStore(url), drop


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10⁵ and 10⁶, SQLite only")
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    per_sizes = [10, 100] if opts.quick else [100, 1000]
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    settings = Settings.from_env()
    spark = create_session("h2-bench", "local[2]", settings)
    spark.sparkContext.setLogLevel("ERROR")
    table = []
    try:
        for per in per_sizes:
            root, out = work / f"lake_{per}", work / f"out_{per}"
            made = make_empty_tree(root, per)
            print(f"{PARTITIONS * per:,} empty files made in {made:.0f} s", flush=True)
            for name, store, cleanup in stores(work, with_postgres=not opts.quick):
                try:
                    job = f"h2_{per}_{name}"
                    began = time.perf_counter()
                    seed(store, job, root)
                    seeded = time.perf_counter() - began
                    assert decide_nothing_new(store, job, root) == 0
                    nothing = [
                        timed(lambda store=store, job=job, root=root: decide_nothing_new(store, job, root))
                        for _ in range(opts.repeats)
                    ]
                    new = add_new_files(root, PARTITIONS)  # 10 new files in each of 10 partitions
                    run = increment(spark, store, settings, job, root, out, new, skip=True)
                    floor = floor_run(spark, root, out, new)
                    run(), floor()  # warm up
                    runs, floors = [], []
                    for i in range(opts.repeats):
                        order = [(runs, run), (floors, floor)]
                        for bucket, action in order if i % 2 == 0 else order[::-1]:
                            bucket.append(timed(action))
                    for path in new:  # the next store starts from the same tree
                        path.unlink()
                    row = {
                        "backend": name,
                        "tracked": PARTITIONS * per,
                        "seed_commit_s": round(seeded, 1),
                        "nothing_new_s": round(statistics.median(nothing), 3),
                        "run_s": round(statistics.median(runs), 3),
                        "floor_s": round(statistics.median(floors), 3),
                    }
                    row["ratio"] = round(row["run_s"] / row["floor_s"], 3)
                    table.append(row)
                    print(row, flush=True)
                finally:
                    store.close()
                    cleanup()
            shutil.rmtree(root)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    entries = {}
    for name in ("sqlite", "postgresql"):
        mine = [r for r in table if r["backend"] == name]
        if not mine:
            continue
        top = mine[-1]
        suffix = "_quick" if opts.quick else ""
        entries[f"H2_run_{name}{suffix}"] = {
            "value": top["ratio"],
            "goal": f"<= 1.2 x floor for 100 new files at {top['tracked']:,} tracked",
            "met": top["ratio"] <= 1.2,
            "sizes": mine,
        }
        entries[f"H2_nothing_new_{name}{suffix}"] = {
            "value": top["nothing_new_s"],
            "goal": f"<= 1 s to decide nothing is new at {top['tracked']:,} tracked, without Spark",
            "met": top["nothing_new_s"] <= 1.0,
            "sizes": mine,
        }
    record(entries, {"H2_partitions": PARTITIONS, "H2_new_files": 100})


if __name__ == "__main__":
    main()
