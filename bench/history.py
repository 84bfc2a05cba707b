"""H1: what an incremental run costs as the history it tracks grows.

The same run (100 new files in 10 of the partitions, JSON in, Parquet out) against a
bookmark already tracking 10,000, 100,000 and 1,000,000 files, 100 to a Hive
partition (100, 1,000 and 10,000 partitions: a history grows by adding partitions),
with skipUnchangedPartitions on and with the defaults. The floor, plain Spark reading
exactly the new files, is measured at each size in the same process. H1 is the
largest growth of the skipping run per 10× history. Goal: flat within 20 % (≤ 1.2).

    python bench/history.py            # 10,000 / 100,000 / 1,000,000 files
    python bench/history.py --quick    # 10,000 / 100,000
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import itertools

from files_incremental import add_new_files, floor_run, increment, make_tree, seed
from harness import arguments, record, timed
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings
from sparkmark.spark import create_session


def main() -> None:
    opts = arguments(repeats=5)
    sizes = [100, 1000] if opts.quick else [100, 1000, 10000]  # partitions of 100 files
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    settings = Settings.from_env()
    store = StateStore.from_settings(settings)
    spark = create_session("history-bench", "local[2]", settings)
    spark.sparkContext.setLogLevel("ERROR")
    table = []
    try:
        for partitions in sizes:
            root, out = work / f"events_{partitions}", work / f"out_{partitions}"
            job_name = f"bench_history_{partitions}"
            make_tree(root, partitions, 100)
            seed(store, job_name, root)
            new = add_new_files(root, partitions)

            def run(skip: bool, root=root, out=out, job_name=job_name, new=new):
                return increment(spark, store, settings, job_name, root, out, new, skip=skip)

            floor = floor_run(spark, root, out, new)
            floor(), run(True)(), run(False)()  # warm up
            skip, noskip, floors = [], [], []
            for i in range(opts.repeats):
                order = [(skip, run(True)), (noskip, run(False)), (floors, floor)]
                for bucket, action in order if i % 2 == 0 else order[::-1]:
                    bucket.append(timed(action))
            row = {
                "files": partitions * 100,
                "partitions": partitions,
                "skipping_s": statistics.median(skip),
                "defaults_s": statistics.median(noskip),
                "floor_s": statistics.median(floors),
            }
            table.append(row)
            print(
                f"{row['files']:>10,} files: skipping {row['skipping_s']:.3f} s, defaults "
                f"{row['defaults_s']:.3f} s, floor {row['floor_s']:.3f} s",
                flush=True,
            )
            shutil.rmtree(root)
        growth = [b["skipping_s"] / a["skipping_s"] for a, b in itertools.pairwise(table)]
        growth_d = [b["defaults_s"] / a["defaults_s"] for a, b in itertools.pairwise(table)]
        h1 = max(growth)
        print(f"{'files tracked':>14}{'skipping s':>12}{'defaults s':>12}{'floor s':>10}")
        for row in table:
            print(
                f"{row['files']:>14,}{row['skipping_s']:>12.3f}{row['defaults_s']:>12.3f}{row['floor_s']:>10.3f}"
            )
        print(f"growth per 10x history, skipping: {', '.join(f'{g:.2f}' for g in growth)} (goal <= 1.2)")
        print(f"growth per 10x history, defaults: {', '.join(f'{g:.2f}' for g in growth_d)}")
        record(
            {
                "H1": {
                    "value": round(h1, 3),
                    "goal": "<= 1.2",
                    "met": h1 <= 1.2,
                    "growth_skipping": [round(g, 3) for g in growth],
                    "growth_defaults": [round(g, 3) for g in growth_d],
                    "runs": [
                        {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in table
                    ],
                }
            },
            {"H1_files": [r["files"] for r in table], "H1_new_files": 100},
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
