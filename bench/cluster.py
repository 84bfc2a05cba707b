"""P1 on a Spark standalone cluster: 100 new files among N already processed (Hive
partitions), JSON in, Parquet out; sparkmark (partition skipping on) against the floor
(plain Spark reading exactly the new files), both on the same cluster, in one process.
Then the same pair on `local[2]`, to show what going distributed costs on one machine.

The cluster is a master and two one-core workers on 127.0.0.1 (as `make cluster`), from
the pinned PySpark; the state store is SQLite.

    python bench/cluster.py            # 100,000 files in 1,000 partitions
    python bench/cluster.py --quick    # 10,000 files in 100 partitions
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from files_incremental import add_new_files, floor_run, increment, make_tree, seed
from harness import arguments, record, timed
from sparkmark.devservices.cluster import start_cluster
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings
from sparkmark.spark import create_session


def pair(spark, store, settings, root: Path, out: Path, new: list[Path], repeats: int) -> tuple[float, float]:
    """(sparkmark's median seconds, the floor's) for the increment on this session."""

    sparkmark_run = increment(spark, store, settings, "bench_files", root, out, new, skip=True)
    floor = floor_run(spark, root, out, new)

    floor(), sparkmark_run()  # warm up
    ours, theirs = [], []
    for i in range(repeats):
        order = [(ours, sparkmark_run), (theirs, floor)]
        for bucket, action in order if i % 2 == 0 else order[::-1]:
            bucket.append(timed(action))
    return statistics.median(ours), statistics.median(theirs)


def main() -> None:
    opts = arguments(repeats=5)
    partitions, per = (100, 100) if opts.quick else (1000, 100)
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-cluster-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    settings = Settings.from_env()
    store = StateStore.from_settings(settings)
    root, out = work / "events", work / "out"
    make_tree(root, partitions, per)
    seed(store, "bench_files", root)
    new = add_new_files(root, partitions)

    cluster = start_cluster(work / "cluster", workers=2, worker_memory="1g")
    try:
        spark = create_session("cluster-bench", cluster.master_url, settings)
        spark.conf.set("spark.sql.shuffle.partitions", "4")
        spark.sparkContext.setLogLevel("ERROR")
        on_cluster = pair(spark, store, settings, root, out, new, opts.repeats)
        spark.stop()
    finally:
        cluster.stop()
    spark = create_session("local-bench", "local[2]", settings)
    spark.sparkContext.setLogLevel("ERROR")
    on_local = pair(spark, store, settings, root, out, new, opts.repeats)
    spark.stop()

    p1c = on_cluster[0] / on_cluster[1]
    print(f"{partitions * per:,} files processed, {len(new)} new, medians of {opts.repeats}")
    print(
        f"cluster: sparkmark {on_cluster[0]:.3f} s, floor {on_cluster[1]:.3f} s, P1c = {p1c:.2f} (goal <= 1.2)"
    )
    print(
        f"local[2]: sparkmark {on_local[0]:.3f} s, floor {on_local[1]:.3f} s, ratio {on_local[0] / on_local[1]:.2f}"
    )
    print(f"the increment on the cluster / on local[2]: {on_cluster[0] / on_local[0]:.2f}")
    key = "P1c_quick" if opts.quick else "P1c"
    record(
        {
            key: {
                "value": round(p1c, 3),
                "goal": "<= 1.2",
                "met": p1c <= 1.2,
                "cluster_over_local": round(on_cluster[0] / on_local[0], 3),
            },
        },
        {key: {"files": partitions * per, "new": len(new), "workers": 2}},
    )


if __name__ == "__main__":
    main()
