"""Data quality benchmark: 20 DQDL rules on N rows.

Q1: the 20 rules evaluated by sparkmark (aggregates in one pass, one grouped plan per
    column set for the frequency rules) ÷ one count(*) scan of the same Parquet data
    that reads every value (and hashes it, so Spark cannot skip the columns; Parquet
    answers a bare count(*) from its footers, which is printed too). Goal ≤ 1.3.
Q2: the same 20 rules evaluated one query each ÷ sparkmark: what the single pass saves.

The data is written once as Parquet; every side reads it from disk, alternating, and
medians are compared.

    python bench/quality.py            # N = 10,000,000
    python bench/quality.py --quick    # N = 1,000,000
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pyspark.sql import functions as F

from harness import arguments, record, timed
from sparkmark.quality import evaluate
from sparkmark.settings import Settings
from sparkmark.spark import create_session

RULES = [
    "RowCount > 0",
    'IsComplete "id"',
    'Completeness "name" > 0.9',
    'Completeness "amount" > 0.9',
    'ColumnValues "country" in ["US", "CA", "UK", "DE", "FR"]',
    'ColumnValues "amount" between -1 and 1001',
    'ColumnValues "qty" >= 0 with threshold > 0.99',
    'ColumnValues "name" matches "n[0-9]+"',
    'ColumnLength "name" <= 12',
    'ColumnDataType "code" = "INTEGER" with threshold > 0.9',
    'DataFreshness "ts" <= 400 days',
    'Mean "amount" between 400 and 600',
    'Sum "qty" > 0',
    'StandardDeviation "amount" > 1',
    'ColumnCorrelation "qty" "amount" between -1 and 1',
    'DistinctValuesCount "country" = 5',
    'ColumnValues "qty" < 100 where "country = \'US\'"',
    'ColumnValues "ts" > (now() - 800 days)',
    'IsUnique "id"',
    'Uniqueness "id" > 0.99',
]


def main() -> None:
    opts = arguments(repeats=3)
    rows = 1_000_000 if opts.quick else 10_000_000
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    spark = create_session("quality-bench", "local[2]", Settings.from_env())
    spark.sparkContext.setLogLevel("ERROR")
    path = str(work / "data")
    try:
        (
            spark.range(rows)
            .select(
                F.col("id"),
                F.concat(F.lit("n"), (F.col("id") % 100000).cast("string")).alias("name"),
                (F.col("id") % 1000).cast("double").alias("amount"),
                (F.col("id") % 50).alias("qty"),
                F.element_at(
                    F.array(*[F.lit(c) for c in ("US", "CA", "UK", "DE", "FR")]),
                    (F.col("id") % 5 + 1).cast("int"),
                ).alias("country"),
                (F.col("id") % 997).cast("string").alias("code"),
                (
                    F.lit(datetime(2026, 1, 1)).cast("timestamp")
                    + F.make_interval(secs=(F.col("id") % 86400).cast("int"))
                ).alias("ts"),
            )
            .write.parquet(path)
        )
        now = datetime(2026, 11, 23, tzinfo=UTC)

        def scan():
            # Every value is read and hashed: count(struct(...)) would be simplified to
            # count(*) and answered without reading the columns.
            df = spark.read.parquet(path)
            df.agg(F.count(F.lit(1)), F.max(F.xxhash64(*df.columns))).collect()

        def bare_count():
            spark.read.parquet(path).agg(F.count(F.lit(1))).collect()

        def sparkmark_pass():
            result = evaluate(
                spark.read.parquet(path), "Rules = [ " + ", ".join(RULES) + " ]", row_level=False, now=now
            )
            assert len(result.outcomes) == len(RULES)

        def one_query_each():
            for rule in RULES:
                evaluate(spark.read.parquet(path), f"Rules = [ {rule} ]", row_level=False, now=now)

        scan(), sparkmark_pass()  # warm up
        a, b, c, d = [], [], [], []
        for i in range(opts.repeats):
            group = [(a, scan), (b, sparkmark_pass), (c, one_query_each), (d, bare_count)]
            for bucket, action in group if i % 2 == 0 else group[::-1]:
                bucket.append(timed(action))
        scan_s, pass_s, each_s, bare_s = (statistics.median(x) for x in (a, b, c, d))
        q1, q2 = pass_s / scan_s, each_s / pass_s
        print(f"rows: {rows:,}; rules: {len(RULES)}")
        print(f"{'scenario':<52}{'median s':>10}{'ratio':>8}{'goal':>8}")
        print(f"{'Q1 sparkmark, 20 rules':<52}{pass_s:>10.3f}{q1:>8.2f}{'<= 1.3':>8}")
        print(f"{'   one count scan reading every value':<52}{scan_s:>10.3f}")
        print(f"{'   bare count(*) (Parquet footers only)':<52}{bare_s:>10.3f}")
        print(f"{'Q2 the 20 rules one query each ÷ sparkmark':<52}{each_s:>10.3f}{q2:>8.2f}")
        record(
            {
                "Q1": {
                    "value": round(q1, 3),
                    "goal": "<= 1.3",
                    "met": q1 <= 1.3,
                    "sparkmark_s": round(pass_s, 3),
                    "count_scan_s": round(scan_s, 3),
                    "bare_count_s": round(bare_s, 3),
                },
                "Q2": {
                    "value": round(q2, 3),
                    "goal": "report",
                    "met": None,
                    "one_query_each_s": round(each_s, 3),
                    "sparkmark_s": round(pass_s, 3),
                },
            },
            {"Q_rows": rows, "Q_rules": len(RULES)},
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
