"""Glue's table optimizers for Iceberg tables (AWS's "Optimizing Iceberg tables" and the
Create/Get/Update/Delete/BatchGet/ListTableOptimizerRuns operations): their settings,
when each is due, the Iceberg procedure a run calls, the runs the scheduler keeps, and
a compaction run for real on a table Iceberg's own GlueCatalog wrote through
sparkmark's Glue API."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparkmark.catalog.kept_documents import KeptDocuments
from sparkmark.catalog.table_optimizers import (
    TableOptimizers,
    check_configuration,
    run_metrics,
    statement,
)
from sparkmark.errors import AlreadyExists, ArgumentError
from sparkmark.workflow.table_optimizing import OptimizerRuns

ACCOUNT = "123456789012"  # any account names the one catalog
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SPARKMARK = Path(sys.executable).with_name("sparkmark")


def enabled(section: str | None = None, **iceberg) -> dict:
    config: dict = {"roleArn": "arn:aws:iam::123456789012:role/optimizer", "enabled": True}
    if section:
        config[section] = {"icebergConfiguration": iceberg}
    return config


@pytest.mark.parametrize(
    "kind,config,message",
    [
        ("vacuum", enabled(), "optimizer type 'vacuum' is not one of"),
        ("compaction", enabled("compactionConfiguration", strategy="zigzag"), "strategy 'zigzag'"),
        ("compaction", enabled("compactionConfiguration", strategy="z-order"), "z-order compaction is not supported"),
        ("compaction", enabled("compactionConfiguration", minInputFiles=0), "minInputFiles must be"),
        ("retention", enabled("retentionConfiguration", runRateInHours=-1), "runRateInHours must be"),
        ("retention", enabled("retentionConfiguration", cleanExpiredFiles=False), "cleanExpiredFiles=false"),
        ("orphan_file_deletion", enabled("orphanFileDeletionConfiguration", orphanFileRetentionPeriodInDays="3"),
         "orphanFileRetentionPeriodInDays must be"),
    ],
)  # fmt: skip
def test_settings_an_optimizer_cannot_run_with_are_one_line(kind, config, message):
    with pytest.raises(ArgumentError, match=message):
        check_configuration(kind, config)


def test_each_kind_calls_its_iceberg_procedure_with_glues_defaults():
    """AWS's defaults: compaction binpack at 100 input files; retention keeps 5 days and 1
    snapshot; orphan files older than 3 days. Names are quoted as SQL strings."""
    assert statement("c", "lake", "events", "compaction", enabled(), NOW) == (
        "CALL c.system.rewrite_data_files(table => 'lake.events', strategy => 'binpack', "
        "options => map('min-input-files', '100'))"
    )
    sort = enabled("compactionConfiguration", strategy="sort", minInputFiles=5, deleteFileThreshold=2)
    assert statement("c", "lake", "events", "compaction", sort, NOW) == (
        "CALL c.system.rewrite_data_files(table => 'lake.events', strategy => 'sort', "
        "options => map('min-input-files', '5', 'delete-file-threshold', '2'))"
    )
    assert statement("c", "lake", "events", "retention", enabled(), NOW) == (
        "CALL c.system.expire_snapshots(table => 'lake.events', "
        "older_than => TIMESTAMP '2026-11-24 12:00:00', retain_last => 1)"
    )
    kept = enabled("retentionConfiguration", snapshotRetentionPeriodInDays=1, numberOfSnapshotsToRetain=3)
    assert "older_than => TIMESTAMP '2026-11-28 12:00:00', retain_last => 3" in statement(
        "c", "lake", "events", "retention", kept, NOW
    )
    orphans = enabled("orphanFileDeletionConfiguration", location="s3://lake/events/data/it's")
    assert statement("c", "lake", "events", "orphan_file_deletion", orphans, NOW) == (
        "CALL c.system.remove_orphan_files(table => 'lake.events', "
        "older_than => TIMESTAMP '2026-11-26 12:00:00', location => 's3://lake/events/data/it\\'s')"
    )


def test_run_metrics_are_glues_from_the_procedures_counts():
    compaction = run_metrics(
        "compaction", {"rewritten_data_files_count": 7, "rewritten_bytes_count": 4096}, 0.5
    )
    assert compaction["metrics"]["NumberOfFilesCompacted"] == "7"
    assert compaction["compactionMetrics"]["IcebergMetrics"]["NumberOfBytesCompacted"] == 4096
    retention = run_metrics(
        "retention", {"deleted_data_files_count": 2, "deleted_manifest_lists_count": 3}, 0.1
    )
    assert retention["retentionMetrics"]["IcebergMetrics"]["NumberOfManifestListsDeleted"] == 3
    assert (
        run_metrics("orphan_file_deletion", {"orphan_files": 4}, 0)["orphanFileDeletionMetrics"][
            "IcebergMetrics"
        ]["NumberOfOrphanFilesDeleted"]
        == 4
    )
    assert run_metrics("compaction", {}, 0)["metrics"]["NumberOfFilesCompacted"] == "0"  # nothing to do


def test_due_optimizers_by_kind_rate_and_last_run(sqlite_store):
    """Compaction looks at its table every hour; retention and orphan deletion run every
    runRateInHours (24 by default); a disabled optimizer never runs; one whose run is
    still going is not started again."""
    optimizers = TableOptimizers(KeptDocuments(sqlite_store))
    optimizers.create("lake", "a", "compaction", enabled())
    optimizers.create("lake", "b", "retention", enabled("retentionConfiguration", runRateInHours=3))
    optimizers.create("lake", "c", "orphan_file_deletion", {**enabled(), "enabled": False})
    with pytest.raises(AlreadyExists):
        optimizers.create("lake", "a", "compaction", enabled())
    due = lambda at: sorted((o.table, o.kind) for o in optimizers.due(at))  # noqa: E731
    assert due(NOW) == [("a", "compaction"), ("b", "retention")]
    optimizers.record("lake", "a", "compaction", {"startTimestamp": NOW, "eventType": "in_progress"})
    optimizers.record("lake", "b", "retention", {"startTimestamp": NOW, "eventType": "completed"})
    assert due(NOW + timedelta(hours=2)) == []
    optimizers.record("lake", "a", "compaction", {"startTimestamp": NOW, "eventType": "completed"})
    assert due(NOW + timedelta(minutes=59)) == []
    assert due(NOW + timedelta(hours=1)) == [("a", "compaction")]
    assert due(NOW + timedelta(hours=3)) == [("a", "compaction"), ("b", "retention")]
    assert [r["eventType"] for r in optimizers.runs("lake", "a", "compaction")] == ["completed"]
    optimizers.delete("lake", "a", "compaction")
    assert (
        optimizers.runs("lake", "a", "compaction") == [] and optimizers.get("lake", "a", "compaction") is None
    )


def test_runs_are_each_optimizers_own_whatever_the_table_names_hold(sqlite_store):
    """Runs are found by their optimizer's name: a table named with LIKE's wildcards
    (``a_b``, ``a%``) never sees the runs of ``axb`` or ``abc``."""
    optimizers = TableOptimizers(KeptDocuments(sqlite_store))
    for table in ("a_b", "axb", "a%", "abc"):
        optimizers.create("lake", table, "compaction", enabled())
        optimizers.record(
            "lake", table, "compaction", {"startTimestamp": NOW, "eventType": "completed", "t": table}
        )
    for table in ("a_b", "axb", "a%", "abc"):
        assert [r["t"] for r in optimizers.runs("lake", table, "compaction")] == [table]
    assert optimizers.run("lake", "a_b", "compaction", NOW)["t"] == "a_b"
    assert optimizers.run("lake", "a_b", "compaction", NOW + timedelta(seconds=1)) is None


def test_a_run_whose_process_ends_without_its_end_is_kept_failed_with_what_it_said(sqlite_store, tmp_path):
    """The scheduler records a run starting, starts its process and, when the process
    ends without recording the run's end, keeps the run failed with the exit code and
    the last line it printed; the optimizer is not started twice while it runs."""
    optimizers = TableOptimizers(KeptDocuments(sqlite_store))
    optimizers.create("lake", "events", "compaction", enabled())
    runs = OptimizerRuns(
        sqlite_store,
        tmp_path / "logs",
        command=[sys.executable, "-c", "import sys; print('error: no such table'); sys.exit(3)"],
    )
    runs.tick(NOW)
    assert [r["eventType"] for r in optimizers.runs("lake", "events", "compaction")] == ["starting"]
    runs.tick(NOW + timedelta(minutes=5))  # still running or just ended: never a second one
    child, _, _ = runs.children.get(("lake", "events", "compaction"), (None, None, None))
    if child is not None:
        child.wait(timeout=60)
        runs.tick(NOW + timedelta(minutes=6))
    (run,) = optimizers.runs("lake", "events", "compaction")
    assert run["eventType"] == "failed"
    assert run["error"] == "its process ended with exit code 3: error: no such table"


def test_a_run_left_in_progress_by_a_stopped_scheduler_is_closed_after_six_hours(sqlite_store, tmp_path):
    optimizers = TableOptimizers(KeptDocuments(sqlite_store))
    optimizers.create("lake", "events", "retention", {**enabled(), "enabled": False})
    optimizers.record("lake", "events", "retention", {"startTimestamp": NOW, "eventType": "in_progress"})
    runs = OptimizerRuns(sqlite_store, tmp_path / "logs", command=[sys.executable, "-c", "pass"])
    runs.tick(NOW + timedelta(hours=5))
    assert optimizers.runs("lake", "events", "retention")[0]["eventType"] == "in_progress"
    runs.tick(NOW + timedelta(hours=6))
    (run,) = optimizers.runs("lake", "events", "retention")
    assert (run["eventType"], run["error"]) == ("failed", "the scheduler running it stopped")


def test_the_leading_scheduler_starts_due_optimizers_and_one_that_queues_does_not(sqlite_store, tmp_path):
    """The scheduler that leads looks for due optimizers in its pass; a scheduler that
    only queues runs (the endpoint's, leading=False) never starts one."""
    from sparkmark.settings import Settings
    from sparkmark.workflow.definition import Project
    from sparkmark.workflow.scheduler import Scheduler

    optimizers = TableOptimizers(KeptDocuments(sqlite_store))
    optimizers.create("lake", "events", "compaction", enabled())
    project = Project(tmp_path / "sparkmark.toml", {}, {}, {}, {})
    settings = Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "home")})

    def scheduler(leading: bool) -> Scheduler:
        made = Scheduler(project, sqlite_store, clock=lambda: NOW, leading=leading, settings=settings)
        made.optimizer_runs.command = [sys.executable, "-c", "pass"]
        return made

    scheduler(False).tick()
    assert optimizers.runs("lake", "events", "compaction") == []
    leader = scheduler(True)
    leader.tick()
    assert [r["eventType"] for r in optimizers.runs("lake", "events", "compaction")] == ["starting"]
    child, _, _ = leader.optimizer_runs.children[("lake", "events", "compaction")]
    child.wait(timeout=60)


# ------------------------------------------------------------------ a run for real

WRITER = """
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "step"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
if args["step"] == "write":
    spark.sql("CREATE NAMESPACE IF NOT EXISTS glue_catalog.lake")
    spark.sql("CREATE TABLE glue_catalog.lake.events (id bigint, batch string) USING iceberg")
    for i in range(4):  # four commits, a data file each
        spark.sql(f"INSERT INTO glue_catalog.lake.events VALUES ({i}, 'b{i}'), ({i + 10}, 'b{i}')")
files = spark.sql("SELECT count(*) FROM glue_catalog.lake.events.files").collect()[0][0]
rows = spark.sql("SELECT count(*), sum(id) FROM glue_catalog.lake.events").collect()[0]
print("FILES", files)
print("ROWS", rows[0], rows[1])
job.commit()
"""


def printed(done: subprocess.CompletedProcess, prefix: str) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith(prefix + " "))


@pytest.mark.slow
def test_a_compaction_run_rewrites_an_iceberg_tables_small_files_as_glue_reports_it(tmp_path):
    """A table Iceberg's GlueCatalog wrote through sparkmark's Glue API in four commits has
    four data files. With a compaction optimizer (minInputFiles 2), the scheduler's optimizer
    pass runs `sparkmark catalog optimize` for it: one data file afterwards, every row kept, and the run listed as
    completed with Glue's metrics (4 files compacted)."""
    import boto3

    from sparkmark.api.server import start_in_thread
    from sparkmark.engine.store import StateStore
    from sparkmark.settings import Settings

    home = tmp_path / "home"
    env = {**os.environ, "SPARKMARK_HOME": str(home), "SPARKMARK_SPARK_MASTER": "local[1]"}
    for key in [k for k in env if k.startswith("AWS_")]:
        env.pop(key)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    warehouse = (tmp_path / "warehouse").as_uri()
    conf = (
        "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        " --conf spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog"
        f" --conf spark.sql.catalog.glue_catalog.warehouse={warehouse}"
        " --conf spark.sql.catalog.glue_catalog.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog"
        " --conf spark.sql.catalog.glue_catalog.io-impl=org.apache.iceberg.hadoop.HadoopFileIO"
    )

    def writer(step: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(SPARKMARK), "run", str(script), "--JOB_NAME", f"iceberg_{step}", "--step", step,
             "--datalake-formats", "iceberg", "--conf", conf],
            capture_output=True, text=True, env=env, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-6000:]
        return done

    before = writer("write")
    assert printed(before, "FILES") == "FILES 4"
    assert printed(before, "ROWS") == "ROWS 8 52"

    settings = Settings.from_env({"SPARKMARK_HOME": str(home)})
    api = start_in_thread(settings)
    try:
        glue = boto3.client(
            "glue", endpoint_url=api.url, region_name="us-east-1",
            aws_access_key_id="sparkmark", aws_secret_access_key=api.token,
        )  # fmt: skip
        glue.create_table_optimizer(
            CatalogId=ACCOUNT, DatabaseName="lake", TableName="events", Type="compaction",
            TableOptimizerConfiguration={"roleArn": "arn:aws:iam::123456789012:role/o", "enabled": True,
                "compactionConfiguration": {"icebergConfiguration": {"minInputFiles": 2}}},
        )  # fmt: skip
        state = StateStore.from_settings(settings)
        runs = OptimizerRuns(state, home / "logs" / "optimizers")
        started = datetime.now(UTC)
        old = os.environ.copy()
        os.environ.clear()
        os.environ.update(env)  # the scheduler's environment: this home, no AWS settings
        try:
            runs.tick(started)  # the scheduler's pass: the process inherits this environment
        finally:
            os.environ.clear()
            os.environ.update(old)
        child, _, log_path = runs.children[("lake", "events", "compaction")]
        assert child.wait(timeout=900) == 0, log_path.read_text()[-6000:]
        runs.tick(started + timedelta(seconds=1))
        listed = glue.list_table_optimizer_runs(
            CatalogId=ACCOUNT, DatabaseName="lake", TableName="events", Type="compaction"
        )
        (run,) = listed["TableOptimizerRuns"]
        assert run["eventType"] == "completed", run
        assert run["metrics"]["NumberOfFilesCompacted"] == "4"
        assert run["compactionMetrics"]["IcebergMetrics"]["NumberOfBytesCompacted"] > 0
        assert run["compactionStrategy"] == "binpack"
        assert run["endTimestamp"] >= run["startTimestamp"]
        last = glue.get_table_optimizer(
            CatalogId=ACCOUNT, DatabaseName="lake", TableName="events", Type="compaction"
        )
        assert last["TableOptimizer"]["lastRun"]["eventType"] == "completed"
        assert runs.optimizers.due(started + timedelta(minutes=30)) == []  # looked at within the hour

        # A table whose Iceberg metadata is gone: the run is kept failed with the JVM's
        # own reason, and `sparkmark catalog optimize` says it in one line.
        gone = tmp_path / "gone"
        glue.create_table(
            DatabaseName="lake",
            TableInput={"Name": "gone", "TableType": "EXTERNAL_TABLE",
                        "Parameters": {"table_type": "ICEBERG",
                                       "metadata_location": (gone / "metadata" / "v1.metadata.json").as_uri()},
                        "StorageDescriptor": {"Location": gone.as_uri()}},
        )  # fmt: skip
        glue.create_table_optimizer(
            CatalogId=ACCOUNT, DatabaseName="lake", TableName="gone", Type="retention",
            TableOptimizerConfiguration={"enabled": False},
        )  # fmt: skip
        failed = subprocess.run(
            [str(SPARKMARK), "catalog", "optimize", "lake.gone", "--type", "retention"],
            capture_output=True, text=True, env=env, timeout=900,
        )  # fmt: skip
        assert failed.returncode == 1
        said = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
        assert len(said) == 1 and "retention of lake.gone failed" in said[0], failed.stderr[-3000:]
        assert "Traceback" not in failed.stderr
        (kept,) = glue.list_table_optimizer_runs(
            CatalogId=ACCOUNT, DatabaseName="lake", TableName="gone", Type="retention"
        )["TableOptimizerRuns"]
        assert kept["eventType"] == "failed" and "v1.metadata.json" in kept["error"], kept
        assert "An error occurred while calling" not in kept["error"]
    finally:
        api.stop()
    after = writer("read")
    assert printed(after, "FILES") == "FILES 1"
    assert printed(after, "ROWS") == "ROWS 8 52"
