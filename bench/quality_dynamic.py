"""Q4: 20 DQDL rules of which 5 are dynamic, worked out on a history of 30 earlier
results in the state store, ÷ the same 20 rules with those 5 written with fixed numbers
and no history. Goal <= 1.1.

The dynamic side does what a job's evaluation does: the history is read from the
state store once for the ruleset (every earlier result's metrics, the runs that did not
succeed and the excluded points left out), each dynamic rule's numbers are worked out
on its metric's values, and the rules are evaluated in the same single pass. The data
is written once as Parquet; the sides alternate and medians are compared.

    python bench/quality_dynamic.py            # N = 10,000,000
    python bench/quality_dynamic.py --quick    # N = 1,000,000
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pyspark.sql import functions as F

from harness import arguments, record, timed
from quality import COUNTRIES, NOW, RULES
from sparkmark.engine.store import StateStore
from sparkmark.quality import evaluate
from sparkmark.quality.runs import history_of
from sparkmark.quality.store import QualityStore
from sparkmark.settings import Settings
from sparkmark.spark import create_session

# Five of RULES made dynamic, and the same five with the numbers they come to fixed.
DYNAMIC = {
    "RowCount > 0": "RowCount > avg(last(10)) * 0.5",
    'Completeness "name" > 0.9': 'Completeness "name" >= min(last(10)) - 0.05',
    'Mean "amount" between 400 and 600': 'Mean "amount" between avg(last(10)) * 0.8 and avg(last(10)) * 1.2',
    'Sum "qty" > 0': 'Sum "qty" > index(last(5), 0) * 0.5',
    'DistinctValuesCount "country" = 5': 'DistinctValuesCount "country" between min(last(10)) - 1 and max(last(10)) + 1',
}


def main() -> None:
    opts = arguments()
    rows = 1_000_000 if opts.quick else 10_000_000
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-q4-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    settings = Settings.from_env()
    spark = create_session("quality-dynamic-bench", "local[2]", settings)
    spark.sparkContext.setLogLevel("ERROR")
    path = str(work / "data")
    try:
        spark.range(rows).select(
            F.col("id"),
            F.concat(F.lit("n"), (F.col("id") % 100000).cast("string")).alias("name"),
            (F.col("id") % 1000).cast("double").alias("amount"),
            (F.col("id") % 50).alias("qty"),
            F.element_at(F.array(*[F.lit(c) for c in COUNTRIES]), (F.col("id") % 5 + 1).cast("int")).alias(
                "country"
            ),
            (F.col("id") % 997).cast("string").alias("code"),
            (
                F.lit(datetime(2026, 1, 1)).cast("timestamp")
                + F.make_interval(secs=(F.col("id") % 86400).cast("int"))
            ).alias("ts"),
        ).write.parquet(path)
        store = QualityStore(StateStore.from_settings(settings))
        metrics = {
            "Dataset.*.RowCount": float(rows),
            "Column.name.Completeness": 1.0,
            "Column.amount.Mean": 499.5,
            "Column.qty.Sum": float(rows // 50 * sum(range(50))),
            "Column.country.DistinctValuesCount": 5.0,
        }
        for i in range(30):  # 30 earlier evaluations, a day apart
            store.save(
                "q4",
                None,
                {
                    "ruleset": "q4",
                    "evaluated_at": (NOW - timedelta(days=30 - i)).astimezone(UTC).isoformat(),
                    "passed": True,
                    "score": 1.0,
                    "rules": [],
                    "metrics": metrics,
                },
            )
        static = "Rules = [ " + ", ".join(RULES) + " ]"
        dynamic = "Rules = [ " + ", ".join(DYNAMIC.get(r, r) for r in RULES) + " ]"
        outcomes: dict[str, list[bool]] = {}

        def without_history():
            result = evaluate(spark.read.parquet(path), static, row_level=False, now=NOW)
            outcomes["static"] = [o.passed for o in result.outcomes]

        def with_history():
            result = evaluate(
                spark.read.parquet(path),
                dynamic,
                row_level=False,
                now=NOW,
                history=history_of(store, "q4", "q4"),
            )
            outcomes["dynamic"] = [o.passed for o in result.outcomes]

        without_history(), with_history()  # warm up
        times: dict[str, list[float]] = {"static": [], "dynamic": []}
        for i in range(opts.repeats):
            sides = [("static", without_history), ("dynamic", with_history)]
            for name, action in sides if i % 2 == 0 else sides[::-1]:
                times[name].append(timed(action))
        assert all(outcomes["static"]) and all(outcomes["dynamic"]), outcomes
        med = {k: statistics.median(v) for k, v in times.items()}
        q4 = med["dynamic"] / med["static"]
        print(f"rows: {rows:,}; rules: {len(RULES)}, {len(DYNAMIC)} dynamic; history: 30 results")
        print(f"Q4 dynamic {med['dynamic']:.3f} s ÷ static {med['static']:.3f} s = {q4:.3f} (goal <= 1.1)")
        key = "Q4_quick" if opts.quick else "Q4"
        record(
            {
                key: {
                    "value": round(q4, 3),
                    "goal": "<= 1.1",
                    "met": q4 <= 1.1,
                    "dynamic_s": round(med["dynamic"], 3),
                    "static_s": round(med["static"], 3),
                    "repeats": opts.repeats,
                }
            },
            {f"{key}_rows": rows},
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
