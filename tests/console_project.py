"""A project the console tests look at: real runs of a real job (Spark, files, the
SQLite state store), data quality results, a catalog table with two schema versions,
and a workflow declared in sparkmark.toml whose jobs are real scripts."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import functions as F

from sparkmark import Job
from sparkmark.catalog.models import Column, Partition, Table
from sparkmark.catalog.store import CatalogStore
from sparkmark.crawler.definition import load_definition
from sparkmark.crawler.store import CrawlerStore
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

from .conftest import write_json

JOB = "orders_console"
SECRET = "hunter2-not-for-pages"
OK_SCRIPT = """
from sparkmark import Job
job = Job.from_args()
job.commit()
"""
SLEEP_SCRIPT = """
import time
time.sleep(300)
"""
PROJECT = """
[jobs.slow]
Script = "sleep.py"
[workflows.long]
[triggers.long_start]
Type = "ON_DEMAND"
WorkflowName = "long"
Actions = [{ JobName = "slow" }]
[jobs.load]
Script = "ok.py"
[jobs.publish]
Script = "ok.py"
[workflows.nightly]
Description = "load, then publish"
DefaultRunProperties = { day = "2026-11-25" }
[triggers.nightly_start]
Type = "ON_DEMAND"
WorkflowName = "nightly"
Actions = [{ JobName = "load" }]
[triggers.after_load]
Type = "CONDITIONAL"
WorkflowName = "nightly"
Predicate = { Conditions = [{ LogicalOperator = "EQUALS", JobName = "load", State = "SUCCEEDED" }] }
Actions = [{ JobName = "publish" }]
[triggers.hourly_publish]
Type = "SCHEDULED"
Schedule = "cron(0 * * * ? *)"
StartOnCreation = true
Actions = [{ JobName = "publish" }]
"""


@dataclass
class ConsoleProject:
    home: Path
    settings: Settings
    store: StateStore
    data: Path
    run_ids: list[str]  # oldest first: two commits, then a failed run


def _environment(home: Path) -> dict[str, str]:
    return {"SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(home / "sparkmark.toml")}


def build(folder: Path, spark) -> ConsoleProject:
    home = folder / "home"
    home.mkdir(parents=True)
    (home / "sparkmark.toml").write_text(textwrap.dedent(PROJECT), encoding="utf-8")
    (home / "ok.py").write_text(textwrap.dedent(OK_SCRIPT), encoding="utf-8")
    (home / "sleep.py").write_text(textwrap.dedent(SLEEP_SCRIPT), encoding="utf-8")
    settings = Settings.from_env(_environment(home))
    store = StateStore.from_settings(settings)
    data, out = folder / "in", folder / "out"

    def start() -> Job:
        argv = ["job.py", "--JOB_NAME", JOB, "--job-bookmark-option", "job-bookmark-enable"]
        argv += ["--TempDir", str(folder / "tmp"), "--db_password", SECRET]
        return Job.from_args(argv, spark=spark, store=store, settings=settings)

    run_ids = []
    write_json(data / "dt=2026-11-01" / "a.json", [1, 2], qty=3)
    write_json(data / "dt=2026-11-01" / "b.json", [3], qty=-1)
    for extra in (None, "c.json"):
        if extra:
            write_json(data / "dt=2026-11-02" / extra, [4, 5], qty=7)
        job = start()
        df = job.read_files(str(data), format="json", ctx="orders_src")
        result = job.evaluate_quality(
            df, 'Rules = [ ColumnValues "qty" > 0, IsComplete "id" ]', name="orders_checks"
        )
        good, _bad = result.split()
        job.write_files(good.withColumn("ok", F.lit(True)), str(out), format="parquet", ctx="orders_out")
        job.commit()
        run_ids.append(job.run_id)
    job = start()
    job.fail(RuntimeError("the warehouse refused the load: " + "details " * 40 + "END-OF-ERROR"))
    run_ids.append(job.run_id)

    catalog = CatalogStore(store)
    from sparkmark.catalog.models import Database

    catalog.put_database(Database("sales"))
    keys = (Column("dt", "string"),)
    first = Table("sales", "orders", str(data), "json", (Column("id", "bigint"),), keys)
    catalog.put_table(first)
    catalog.put_table(
        Table("sales", "orders", str(data), "json", (Column("id", "bigint"), Column("qty", "bigint")), keys)
    )
    catalog.put_partitions(
        "sales",
        "orders",
        [
            Partition(("2026-11-01",), str(data / "dt=2026-11-01")),
            Partition(("2026-11-02",), str(data / "dt=2026-11-02")),
        ],
    )
    crawlers = CrawlerStore(store)
    crawlers.save(
        load_definition(
            {"Name": "sales_lake", "DatabaseName": "sales", "Targets": {"S3Targets": [{"Path": str(data)}]}}
        )
    )
    crawlers.begin("sales_lake", "cr_0001")
    crawlers.finish(
        "sales_lake",
        "cr_0001",
        "SUCCEEDED",
        {"tables_created": 1, "partitions_added": 2},
        [{"path": str(data / "broken.json"), "error": "not JSON at line 1"}],
    )
    return ConsoleProject(home, settings, store, data, run_ids)
