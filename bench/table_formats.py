"""T1, T2, T3: what bookmarks and exactly-once writes cost on Iceberg and Delta tables.

- T1: an Iceberg table of 1,000 snapshots (one append each); a bookmarked run (paused,
  so every repeat reads the same snapshots) reading the last 10 ÷ Spark's own incremental
  read of those snapshots (``start-snapshot-id``/``end-snapshot-id``). Goal ≤ 1.2.
- T2: the same for a Delta table of 1,000 versions ÷ Spark's read of the files those 10
  versions added (``versionAsOf`` and ``_metadata.file_path``, by hand). Goal ≤ 1.2.
- T3: a run appending 1,000,000 rows (200,000 with --quick) to an Iceberg table and to a Delta table exactly-once
  (staged, then applied after the commit with its write key) ÷ the same append without
  sparkmark (``writeTo(...).append()``, ``format("delta").mode("append")``). Goal ≤ 1.2.

Each figure is the ratio of the medians of interleaved repeats in one process.

    python bench/table_formats.py            # 1,000 snapshots / versions
    python bench/table_formats.py --quick    # 200
    python bench/table_formats.py --only T3  # one figure (T1, T2 or T3): T3 needs no history
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed
from sparkmark.runtime.run import settle_metrics


def _session(work: Path):
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    os.environ["SPARKMARK_DATALAKE_FORMATS"] = "iceberg,delta"
    os.environ["SPARKMARK_SPARK_CONF"] = json.dumps(
        {
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,"
            "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.ice.type": "hadoop",
            "spark.sql.catalog.ice.warehouse": str(work / "warehouse"),
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.ui.enabled": "false",
        }
    )
    from sparkmark.engine.store import StateStore
    from sparkmark.settings import Settings
    from sparkmark.spark import create_session

    settings = Settings.from_env()
    spark = create_session("table-formats-bench", "local[2]", settings)
    spark.sparkContext.setLogLevel("ERROR")
    return spark, settings, StateStore.from_settings(settings)


def _medians(actions: dict, repeats: int) -> dict[str, float]:
    for action in actions.values():
        action()  # warm up
    times: dict[str, list[float]] = {name: [] for name in actions}
    names = list(actions)
    for i in range(repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            times[name].append(timed(actions[name]))
            settle_metrics()  # a run's last metrics sample, after its commit: not overlapping the next
    return {name: statistics.median(t) for name, t in times.items()}


def _ratio(value: float, seconds: dict[str, float], **more) -> dict:
    """A figure of latest.json: the ratio against its goal of 1.2, and the medians behind it."""
    return {
        "value": round(value, 2),
        "goal": "<= 1.2",
        "met": value <= 1.2,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        **more,
    }


def _job(spark, store, settings, name: str, option: str):
    from sparkmark import Job

    return Job.from_args(
        ["b", "--JOB_NAME", name, "--job-bookmark-option", option],
        spark=spark,
        store=store,
        settings=settings,
    )


def main() -> None:
    opts = arguments(repeats=7, figures=("T1", "T2", "T3"))
    history = 200 if opts.quick else 1000
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-"))
    spark, settings, store = _session(work)
    from sparkmark.runtime import read_source, write_sink
    from sparkmark.sinks.tables import TableSink
    from sparkmark.sources.delta import DeltaSource
    from sparkmark.sources.iceberg import IcebergSource

    entries, sizes = {}, {"T_history": history, "T_read": 10}
    if opts.only in (None, "T1"):
        # ---- T1: Iceberg, 1,000 snapshots, a bookmark 10 behind
        table = "ice.db.events"
        spark.sql(f"CREATE TABLE {table} (id bigint, note string) USING iceberg")
        for i in range(history):
            spark.createDataFrame([(i * 10 + k, "x") for k in range(10)], "id bigint, note string").writeTo(
                table
            ).append()
            if i == history - 11:
                job = _job(spark, store, settings, "t1", "job-bookmark-enable")
                read_source(spark, IcebergSource(table, ctx="src"), job.job_run).count()
                job.commit()
        snaps = [
            r[0]
            for r in spark.sql(f"SELECT snapshot_id FROM {table}.history ORDER BY made_current_at").collect()
        ]

        def t1_sparkmark():
            job = _job(spark, store, settings, "t1", "job-bookmark-pause")
            n = read_source(spark, IcebergSource(table, ctx="src"), job.job_run).count()
            job.commit()
            assert n == 100, n

        def t1_hand():
            n = (
                spark.read.format("iceberg")
                .option("start-snapshot-id", snaps[-11])
                .option("end-snapshot-id", snaps[-1])
                .load(table)
                .count()
            )
            assert n == 100, n

        t1 = _medians({"sparkmark": t1_sparkmark, "hand": t1_hand}, opts.repeats)
        entries["T1"] = _ratio(t1["sparkmark"] / t1["hand"], t1)
        print("T1", entries["T1"])

    if opts.only in (None, "T2"):
        # ---- T2: Delta, 1,000 versions, a bookmark 10 behind
        from pyspark.sql import functions as F

        path = str(work / "delta" / "events")
        for i in range(history):
            spark.createDataFrame(
                [(i * 10 + k, "x") for k in range(10)], "id bigint, note string"
            ).write.format("delta").mode("append").save(path)
            if i == history - 11:
                job = _job(spark, store, settings, "t2", "job-bookmark-enable")
                read_source(spark, DeltaSource(path, ctx="src"), job.job_run).count()
                job.commit()
        last = history - 1

        def t2_sparkmark():
            job = _job(spark, store, settings, "t2", "job-bookmark-pause")
            n = read_source(spark, DeltaSource(path, ctx="src"), job.job_run).count()
            job.commit()
            assert n == 100, n

        def t2_hand():
            before = set(spark.read.format("delta").option("versionAsOf", last - 10).load(path).inputFiles())
            now = spark.read.format("delta").option("versionAsOf", last).load(path)
            added = [f for f in now.inputFiles() if f not in before]
            n = now.where(F.col("_metadata.file_path").isin(added)).count()
            assert n == 100, n

        t2 = _medians({"sparkmark": t2_sparkmark, "hand": t2_hand}, opts.repeats)
        entries["T2"] = _ratio(t2["sparkmark"] / t2["hand"], t2)
        print("T2", entries["T2"])

    if opts.only in (None, "T3"):
        # ---- T3: an exactly-once append ÷ the plain append, Iceberg and Delta
        rows = (
            spark.range(200_000 if opts.quick else 1_000_000)
            .selectExpr("id", "cast(id as string) AS note")
            .cache()
        )
        rows.count()
        spark.sql("CREATE TABLE ice.db.sink (id bigint, note string) USING iceberg")
        spark.sql("CREATE TABLE ice.db.plain (id bigint, note string) USING iceberg")
        delta_sink, delta_plain = str(work / "delta" / "sink"), str(work / "delta" / "plain")

        def exactly_once(sink):
            def go():
                job = _job(spark, store, settings, "t3", "job-bookmark-enable")
                write_sink(sink, rows, job.job_run)
                job.commit()

            return go

        t3 = _medians(
            {
                "iceberg_sparkmark": exactly_once(TableSink("iceberg", table="ice.db.sink", ctx="out")),
                "iceberg_plain": lambda: rows.writeTo("ice.db.plain").append(),
                "delta_sparkmark": exactly_once(TableSink("delta", path=delta_sink, ctx="out")),
                "delta_plain": lambda: rows.write.format("delta").mode("append").save(delta_plain),
            },
            opts.repeats,
        )
        assert spark.table("ice.db.sink").count() == spark.table("ice.db.plain").count()
        ratios = {
            "iceberg": t3["iceberg_sparkmark"] / t3["iceberg_plain"],
            "delta": t3["delta_sparkmark"] / t3["delta_plain"],
        }
        worst = max(ratios.values())
        entries["T3"] = _ratio(worst, t3, ratios={k: round(v, 2) for k, v in ratios.items()})
        print("T3", entries["T3"])
    from datetime import date

    for entry in entries.values():
        entry["date"] = date.today().isoformat()
    if opts.quick:  # kept beside the full-size figures, never over them
        entries = {f"{key}_quick": entry for key, entry in entries.items()}
        sizes = {f"{key}_quick": value for key, value in sizes.items()}
    record(entries, sizes)


if __name__ == "__main__":
    main()
