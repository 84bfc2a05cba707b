"""Data quality benchmark: 20 DQDL rules on N rows, against the tools users pick.

Q1: the 20 rules evaluated by sparkmark ÷ the best hand-written PySpark for the same
    rules: one aggregate pass, plus the grouped passes exact uniqueness and distinct
    counts cannot avoid. Two hand-written forms are timed (the passes one after another,
    and at once from threads); the faster is the floor. Goal ≤ 1.0 (≤ 1.1 before round 5).
Q3: Great Expectations (its Spark execution engine, from PyPI: `pip install
    -e ".[bench]"`) validating the equivalent expectations ÷ sparkmark. Goal ≥ 5.
    DQDL's ColumnCorrelation has no Great Expectations counterpart; its suite has 19
    expectations, which favours it.

Every side must reach the same outcome for every rule it has (sparkmark's exact
uniqueness and distinct counts included), or the script fails. The data is written
once as Parquet; every side reads it from disk, alternating, and medians are compared.

    python bench/quality.py            # N = 10,000,000
    python bench/quality.py --quick    # N = 1,000,000
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness import arguments, record, timed
from sparkmark.quality import evaluate
from sparkmark.settings import Settings
from sparkmark.spark import create_session

COUNTRIES = ["US", "CA", "UK", "DE", "FR"]
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
NOW = datetime(2026, 11, 23, tzinfo=UTC)


def hand_written_plans(df: DataFrame) -> list:
    """The same 20 rules as a careful engineer would write them in PySpark: each
    returns a function computing its share of the metrics."""
    now = NOW.replace(tzinfo=None)
    col = F.col

    def aggregates() -> dict:
        row = df.agg(
            F.count(F.lit(1)).alias("rows"),
            F.count("id").alias("id_complete"),
            F.count("name").alias("name_complete"),
            F.count("amount").alias("amount_complete"),
            F.count_if(col("country").isin(COUNTRIES)).alias("country_in"),
            F.count_if(col("amount").between(-1, 1001)).alias("amount_between"),
            F.count_if(col("qty") >= 0).alias("qty_ge"),
            F.count_if(col("name").rlike("^(?:n[0-9]+)$")).alias("name_matches"),
            F.count_if(F.coalesce(F.length("name"), F.lit(0)) <= 12).alias("name_length"),
            F.count_if(F.expr("try_cast(code AS int)").isNotNull()).alias("code_int"),
            F.count_if(col("ts") >= F.lit(now - timedelta(days=400))).alias("ts_fresh"),
            F.avg("amount").alias("mean"),
            F.sum("qty").alias("sum"),
            F.stddev_pop("amount").alias("stddev"),
            F.corr("qty", "amount").alias("corr"),
            F.count_if(col("country") == "US").alias("us_rows"),
            F.count_if((col("country") == "US") & (col("qty") < 100)).alias("us_qty"),
            F.count_if(col("ts") > F.lit(now - timedelta(days=800))).alias("ts_recent"),
        ).head()
        return row.asDict()

    def frequencies(name: str):
        def run() -> dict:
            counts = df.where(col(name).isNotNull()).groupBy(name).count()
            row = counts.agg(
                F.sum("count").alias("rows"),
                F.count(F.lit(1)).alias("distinct"),
                F.count_if(col("count") == 1).alias("singles"),
            ).head()
            return {f"{name}_{k}": v for k, v in row.asDict().items()}

        return run

    return [aggregates, frequencies("id"), frequencies("country")]


def hand_written_outcomes(m: dict) -> list[bool]:
    n = m["rows"]
    return [
        n > 0,
        m["id_complete"] == n,
        m["name_complete"] / n > 0.9,
        m["amount_complete"] / n > 0.9,
        m["country_in"] == n,
        m["amount_between"] == n,
        m["qty_ge"] / n > 0.99,
        m["name_matches"] == n,
        m["name_length"] == n,
        m["code_int"] / n > 0.9,
        m["ts_fresh"] == n,
        400 <= m["mean"] <= 600,
        m["sum"] > 0,
        m["stddev"] > 1,
        -1 <= m["corr"] <= 1,
        m["country_distinct"] == 5,
        m["us_qty"] == m["us_rows"],
        m["ts_recent"] == n,
        m["id_singles"] == m["id_rows"],
        m["id_singles"] / n > 0.99,
    ]


def great_expectations_suite():
    """The rules as Great Expectations expectations (None where it has none)."""
    import great_expectations.expectations as gxe

    now = NOW.replace(tzinfo=None)
    return [
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="id"),
        gxe.ExpectColumnValuesToNotBeNull(column="name", mostly=0.9),
        gxe.ExpectColumnValuesToNotBeNull(column="amount", mostly=0.9),
        gxe.ExpectColumnValuesToBeInSet(column="country", value_set=COUNTRIES),
        gxe.ExpectColumnValuesToBeBetween(column="amount", min_value=-1, max_value=1001),
        gxe.ExpectColumnValuesToBeBetween(column="qty", min_value=0, mostly=0.99),
        gxe.ExpectColumnValuesToMatchRegex(column="name", regex="^n[0-9]+$"),
        gxe.ExpectColumnValueLengthsToBeBetween(column="name", max_value=12),
        gxe.ExpectColumnValuesToMatchRegex(column="code", regex="^[+-]?[0-9]+$", mostly=0.9),
        gxe.ExpectColumnValuesToBeBetween(column="ts", min_value=now - timedelta(days=400)),
        gxe.ExpectColumnMeanToBeBetween(column="amount", min_value=400, max_value=600),
        gxe.ExpectColumnSumToBeBetween(column="qty", min_value=0, strict_min=True),
        gxe.ExpectColumnStdevToBeBetween(column="amount", min_value=1, strict_min=True),
        None,  # ColumnCorrelation
        gxe.ExpectColumnUniqueValueCountToBeBetween(column="country", min_value=5, max_value=5),
        gxe.ExpectColumnValuesToBeBetween(
            column="qty",
            max_value=100,
            strict_max=True,
            row_condition='col("country")=="US"',
            condition_parser="great_expectations__experimental__",
        ),
        gxe.ExpectColumnValuesToBeBetween(column="ts", min_value=now - timedelta(days=800), strict_min=True),
        gxe.ExpectColumnValuesToBeUnique(column="id"),
        gxe.ExpectColumnProportionOfUniqueValuesToBeBetween(column="id", min_value=0.99),
    ]


def main() -> None:
    opts = arguments(repeats=3)
    rows = 1_000_000 if opts.quick else 10_000_000
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    os.environ.setdefault("TQDM_DISABLE", "1")  # Great Expectations' progress bars
    spark = create_session("quality-bench", "local[2]", Settings.from_env())
    spark.sparkContext.setLogLevel("ERROR")
    path = str(work / "data")
    try:
        import great_expectations as gx
    except ImportError:
        sys.exit('Great Expectations is not installed: pip install -e ".[bench]" (make bench does)')
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    try:
        (
            spark.range(rows)
            .select(
                F.col("id"),
                F.concat(F.lit("n"), (F.col("id") % 100000).cast("string")).alias("name"),
                (F.col("id") % 1000).cast("double").alias("amount"),
                (F.col("id") % 50).alias("qty"),
                F.element_at(
                    F.array(*[F.lit(c) for c in COUNTRIES]), (F.col("id") % 5 + 1).cast("int")
                ).alias("country"),
                (F.col("id") % 997).cast("string").alias("code"),
                (
                    F.lit(datetime(2026, 1, 1)).cast("timestamp")
                    + F.make_interval(secs=(F.col("id") % 86400).cast("int"))
                ).alias("ts"),
            )
            .write.parquet(path)
        )
        outcomes: dict[str, list[bool | None]] = {}

        def sparkmark_pass():
            result = evaluate(
                spark.read.parquet(path), "Rules = [ " + ", ".join(RULES) + " ]", row_level=False, now=NOW
            )
            outcomes["sparkmark"] = [o.passed for o in result.outcomes]

        def hand_sequential():
            metrics: dict = {}
            for plan in hand_written_plans(spark.read.parquet(path)):
                metrics.update(plan())
            outcomes["hand-written"] = hand_written_outcomes(metrics)

        def hand_concurrent():
            metrics: dict = {}
            with ThreadPoolExecutor(3) as pool:
                for part in pool.map(lambda plan: plan(), hand_written_plans(spark.read.parquet(path))):
                    metrics.update(part)
            outcomes["hand-written, at once"] = hand_written_outcomes(metrics)

        context = gx.get_context(mode="ephemeral")
        batches = context.data_sources.add_spark(name="bench").add_dataframe_asset(name="data")
        whole = batches.add_batch_definition_whole_dataframe("whole")
        expectations = great_expectations_suite()
        suite = gx.ExpectationSuite(name="rules")
        for expectation in expectations:
            if expectation is not None:
                suite.add_expectation(expectation)
        suite = context.suites.add(suite)

        def great_expectations():
            batch = whole.get_batch(batch_parameters={"dataframe": spark.read.parquet(path)})
            result = batch.validate(suite)
            errors = [r.exception_info for r in result.results if r.exception_info.get("raised_exception")]
            assert not errors, errors
            passed = iter(r.success for r in result.results)
            outcomes["Great Expectations"] = [None if e is None else next(passed) for e in expectations]

        sparkmark_pass(), hand_sequential()  # warm up
        sides = {
            "sparkmark": sparkmark_pass,
            "hand-written": hand_sequential,
            "hand-written, at once": hand_concurrent,
            "Great Expectations": great_expectations,
        }
        times: dict[str, list[float]] = {k: [] for k in sides}
        for i in range(opts.repeats):
            order = list(sides.items())
            for name, action in order if i % 2 == 0 else order[::-1]:
                times[name].append(timed(action))
        expected = outcomes["sparkmark"]
        assert all(expected), f"every rule passes on this data: {expected}"
        for name, got in outcomes.items():
            differ = [RULES[i] for i, v in enumerate(got) if v is not None and v != expected[i]]
            assert not differ, f"{name} disagrees with sparkmark on {differ}"
        med = {k: statistics.median(v) for k, v in times.items()}
        floor_name = min(("hand-written", "hand-written, at once"), key=med.__getitem__)
        q1 = med["sparkmark"] / med[floor_name]
        q3 = med["Great Expectations"] / med["sparkmark"]
        print(f"rows: {rows:,}; rules: {len(RULES)}")
        print(f"{'scenario':<58}{'median s':>10}{'ratio':>8}{'goal':>8}")
        print(
            f"{'Q1 sparkmark ÷ best hand-written PySpark':<58}{med['sparkmark']:>10.3f}{q1:>8.2f}{'<= 1.0':>8}"
        )
        for name in ("hand-written", "hand-written, at once"):
            label = f"   {name} ({'the floor' if name == floor_name else 'slower'})"
            print(f"{label:<58}{med[name]:>10.3f}")
        print(
            f"{'Q3 Great Expectations ÷ sparkmark':<58}{med['Great Expectations']:>10.3f}{q3:>8.2f}{'>= 5':>8}"
        )
        record(
            {
                "Q1": {
                    "value": round(q1, 3),
                    "goal": "<= 1.0",
                    "met": q1 <= 1.0,
                    "sparkmark_s": round(med["sparkmark"], 3),
                    "hand_written_s": round(med["hand-written"], 3),
                    "hand_written_at_once_s": round(med["hand-written, at once"], 3),
                    "floor": floor_name,
                },
                "Q3": {
                    "value": round(q3, 3),
                    "goal": ">= 5",
                    "met": q3 >= 5,
                    "great_expectations_s": round(med["Great Expectations"], 3),
                    "great_expectations_version": gx.__version__,
                    "sparkmark_s": round(med["sparkmark"], 3),
                },
            },
            {"Q_rows": rows, "Q_rules": len(RULES)},
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
