"""JDBC benchmark on the local PostgreSQL (scenarios P5 and P6 of the benchmark plan).

P5: with N rows already bookmarked and 1,000 new ones, a sparkmark incremental read
    ÷ a plain ``spark.read.jdbc`` of exactly that key range (same partitioning, same
    write to the ``noop`` sink). Goal ≤ 1.05.
P6: a bookmarked full read with hashpartitions=7 (a job with nothing bookmarked yet,
    paused so that every repeat reads the whole table) ÷ Spark's own partitioned read
    of the same table (``partitionColumn``/``numPartitions=7`` over the key's minimum
    and maximum, which it must look up first). Goal ≤ 1.1. The cores each keeps busy
    are reported.

Both sides of each ratio run in this process, alternating, and the medians are
compared. The first bookmark is seeded by a run that reads nothing and commits
(the upper bound is fixed when ``read_jdbc`` is called), so N rows need not be
pulled through Spark once before measuring.

    python bench/jdbc_read.py            # N = 10,000,000
    python bench/jdbc_read.py --quick    # N = 1,000,000
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, cores_busy, record, timed
from sparkmark import Job
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings
from sparkmark.spark import create_session

PG_SA = os.environ.get("SPARKMARK_BENCH_PG_SA", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
PG_JDBC = os.environ.get("SPARKMARK_BENCH_PG_JDBC", "jdbc:postgresql://127.0.0.1:5432/test")


def main() -> None:
    opts = arguments()
    rows = 1_000_000 if opts.quick else 10_000_000
    table = f"bench_orders_{uuid.uuid4().hex[:6]}"
    engine = sa.create_engine(PG_SA)
    home = tempfile.mkdtemp(prefix="sparkmark-bench-")
    os.environ["SPARKMARK_HOME"] = home
    settings = Settings.from_env()
    store = StateStore.from_settings(settings)
    spark = create_session("jdbc-bench", "local[2]", Settings.from_env())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer INT, amount NUMERIC(10,2), "
                "created_at TIMESTAMP)"
            )
            conn.exec_driver_sql(
                f"INSERT INTO {table} SELECT g, g %% 1000, (g %% 10000) / 100.0, "
                f"TIMESTAMP '2026-01-01' + g * INTERVAL '1 second' FROM generate_series(1, {rows}) g"
            )
            conn.exec_driver_sql(f"ANALYZE {table}")
        name = f"bench_{table}"

        def job(option: str) -> Job:
            return Job.from_args(
                ["bench", "--JOB_NAME", name, "--job-bookmark-option", option],
                spark=spark,
                store=store,
                settings=settings,
            )

        seed = job("job-bookmark-enable")
        seed.read_jdbc(PG_JDBC, table=table, ctx="orders", user="postgres")
        seed.commit()
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"INSERT INTO {table} SELECT g, g %% 1000, 1.0, TIMESTAMP '2026-06-01' "
                f"FROM generate_series({rows + 1}, {rows + 1000}) g"
            )

        def spark_range_read(source: str, low: int, high: int) -> None:
            """Spark's own partitioned read: 7 ranges of id over [low, high)."""
            df = spark.read.jdbc(
                PG_JDBC,
                source,
                column="id",
                lowerBound=low,
                upperBound=high,
                numPartitions=7,
                properties={"user": "postgres", "driver": "org.postgresql.Driver"},
            )
            df.write.format("noop").mode("overwrite").save()

        def sparkmark_increment():
            run = job("job-bookmark-pause")  # reads what enable would, advances nothing
            df = run.read_jdbc(PG_JDBC, table=table, ctx="orders", user="postgres")
            df.write.format("noop").mode("overwrite").save()
            run.commit()
            assert run.metrics["sources"]["orders"]["rows_read"] == 1000

        def plain_range():
            spark_range_read(
                f"(SELECT * FROM {table} WHERE id > {rows} AND id <= {rows + 1000}) q", rows, rows + 1001
            )

        def sparkmark_full():
            run = Job.from_args(
                ["bench", "--JOB_NAME", f"{name}_full", "--job-bookmark-option", "job-bookmark-pause"],
                spark=spark,
                store=store,
                settings=settings,
            )
            df = run.read_jdbc(PG_JDBC, table=table, ctx="full", user="postgres", hashpartitions=7)
            df.write.format("noop").mode("overwrite").save()
            run.commit()
            assert run.metrics["sources"]["full"]["rows_read"] == rows + 1000

        def spark_partitioned():
            with engine.connect() as conn:  # what a hand-written read must look up first
                low, high = conn.exec_driver_sql(f"SELECT min(id), max(id) FROM {table}").one()
            spark_range_read(table, low, high + 1)

        sparkmark_increment(), plain_range()  # warm up JVM code paths and connections
        p5_a, p5_b, p6_a, p6_b = [], [], [], []
        for i in range(opts.repeats):
            pair = [(p5_a, sparkmark_increment), (p5_b, plain_range)]
            for bucket, action in pair if i % 2 == 0 else pair[::-1]:
                bucket.append(timed(action))
        for i in range(max(3, opts.repeats // 2)):
            pair = [(p6_a, sparkmark_full), (p6_b, spark_partitioned)]
            for bucket, action in pair if i % 2 == 0 else pair[::-1]:
                bucket.append(timed(action))
        # Where the time goes: how many of the machine's cores each read keeps busy
        # (Spark decoding rows and PostgreSQL sending them share the same cores).
        _, busy_sm = cores_busy(sparkmark_full)
        _, busy_spark = cores_busy(spark_partitioned)
        p5 = statistics.median(p5_a) / statistics.median(p5_b)
        p6 = statistics.median(p6_a) / statistics.median(p6_b)
        results = {
            "rows": rows,
            "P5": {
                "value": round(p5, 3),
                "goal": "<= 1.05",
                "met": p5 <= 1.05,
                "sparkmark_s": round(statistics.median(p5_a), 3),
                "plain_range_s": round(statistics.median(p5_b), 3),
            },
            "P6": {
                "value": round(p6, 3),
                "goal": "<= 1.1",
                "met": p6 <= 1.1,
                "sparkmark_hashpartitions_7_s": round(statistics.median(p6_a), 3),
                "spark_partitioned_7_s": round(statistics.median(p6_b), 3),
                "cores_busy_sparkmark": round(busy_sm, 2),
                "cores_busy_spark": round(busy_spark, 2),
                "cores": os.cpu_count(),
            },
        }
        print(f"rows in table: {rows:,} (+1,000 new)")
        print(f"{'scenario':<52}{'median s':>10}{'ratio':>8}{'goal':>9}")
        print(f"{'P5 sparkmark incremental read':<52}{results['P5']['sparkmark_s']:>10}")
        print(
            f"{'   plain spark.read.jdbc of the key range':<52}{results['P5']['plain_range_s']:>10}"
            f"{results['P5']['value']:>8}{'<= 1.05':>9}"
        )
        print(
            f"{'P6 sparkmark bookmarked full read, hashpartitions=7':<52}"
            f"{results['P6']['sparkmark_hashpartitions_7_s']:>10}{results['P6']['value']:>8}{'<= 1.1':>9}"
        )
        print(
            f"{'   Spark partitionColumn=id, numPartitions=7':<52}{results['P6']['spark_partitioned_7_s']:>10}"
        )
        print(
            f"cores kept busy (Spark and PostgreSQL together), of {os.cpu_count()}: "
            f"sparkmark {busy_sm:.2f}, Spark's partitioned read {busy_spark:.2f}"
        )
        record(
            {"P5": results["P5"], "P6": results["P6"]},
            {"P5_rows": rows, "P5_new_rows": 1000, "P6_rows": rows + 1000},
        )
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
        spark.stop()


if __name__ == "__main__":
    main()
