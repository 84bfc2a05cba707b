"""An append-only source (modifiedFiles=new-bytes) against Glue's rule (reprocess).

One JSON-lines file of N rows is read by a first run; 1% more rows are appended;
the second run is timed under each policy, and against a floor: plain Spark
reading a file that holds only the appended rows (what an ideal reader would do).
Reported: reprocess ÷ new-bytes (the saving, and the rows read twice by
reprocess), new-bytes ÷ floor (the cost of checking the prefix and copying the
tail). Each repeat starts from a fresh job; medians compared.

    python bench/appends.py            # N = 2,000,000 rows (~120 MB)
    python bench/appends.py --quick    # N = 200,000
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed
from sparkmark import Job
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings
from sparkmark.spark import create_session


def write_rows(path: Path, start: int, count: int, mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as out:
        for i in range(start, start + count):
            out.write(json.dumps({"id": i, "name": f"customer-{i % 997}", "amount": i % 1000}) + "\n")


def main() -> None:
    args = arguments(repeats=3)
    rows = 200_000 if args.quick else 2_000_000
    added = rows // 100
    settings = Settings.from_env()
    spark = create_session("appends-bench", "local[2]", settings)
    results: dict[str, list[float]] = {"reprocess": [], "new-bytes": [], "floor": []}
    read_twice = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = StateStore(f"sqlite:///{root / 'state.db'}")
        for repeat in range(args.repeats):
            for policy in ("reprocess", "new-bytes"):
                folder = root / f"{policy}-{repeat}"
                folder.mkdir()
                data = folder / "events.jsonl"
                write_rows(data, 0, rows)
                name = f"bench_{uuid.uuid4().hex[:8]}"

                def run(policy=policy, folder=folder, name=name) -> int:
                    job = Job.from_args(
                        [
                            "bench.py",
                            "--JOB_NAME",
                            name,
                            "--job-bookmark-option",
                            "job-bookmark-enable",
                            "--TempDir",
                            str(root / "tmp"),
                        ],
                        spark=spark,
                        store=store,
                        settings=settings,
                    )
                    count = job.read_files(
                        str(folder), format="json", ctx="src", modifiedFiles=policy
                    ).count()
                    job.commit()
                    return count

                run()
                write_rows(data, rows, added, mode="a")
                counted: list[int] = []
                results[policy].append(timed(lambda run=run, counted=counted: counted.append(run())))
                read_twice[policy] = counted[0] - added
            tail = root / f"floor-{repeat}"
            tail.mkdir()
            write_rows(tail / "events.jsonl", rows, added)
            results["floor"].append(timed(lambda tail=tail: spark.read.json(str(tail)).count()))
        store.close()
    median = {k: statistics.median(v) for k, v in results.items()}
    summary = {
        "appends_rows": rows,
        "appends_added": added,
        "appends_reprocess_s": round(median["reprocess"], 3),
        "appends_new_bytes_s": round(median["new-bytes"], 3),
        "appends_floor_s": round(median["floor"], 3),
        "appends_reprocess_over_new_bytes": round(median["reprocess"] / median["new-bytes"], 2),
        "appends_new_bytes_over_floor": round(median["new-bytes"] / median["floor"], 2),
        "appends_rows_read_twice_reprocess": read_twice["reprocess"],
        "appends_rows_read_twice_new_bytes": read_twice["new-bytes"],
    }
    print(json.dumps(summary, indent=2))
    figure = {
        "value": summary["appends_new_bytes_over_floor"],
        "goal": "none: measured (new-bytes ÷ floor)",
        "met": None,
        **{k.removeprefix("appends_"): v for k, v in summary.items()},
    }
    record({"A1_quick" if args.quick else "A1": figure}, {"A1_rows": rows})


if __name__ == "__main__":
    main()
