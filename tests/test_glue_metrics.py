"""Glue's job metrics, computed without Spark: the table, the Prometheus names derived
from it, the values taken from what Spark's REST API says of a run, the reports sent
as CloudWatch sends Glue's (a count's increase, a gauge's value), the metric store, and
job run insights. Glue's semantics come from AWS's "Monitoring AWS Glue using Amazon
CloudWatch metrics" and "Monitoring with AWS Glue Observability metrics"."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparkmark.api.cloudwatch import _bucket, _period, _statistic
from sparkmark.api.protocol import GlueApiError, service_model
from sparkmark.app.prometheus import custom_name
from sparkmark.engine.store import StateStore
from sparkmark.runtime import glue_metrics as gm
from sparkmark.runtime.insights import RULES, classify, insight_of, script_line
from sparkmark.runtime.metric_store import Datapoint, MetricStore, dims_of

PROMETHEUS_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


# ------------------------------------------------------------------ the table


def test_every_metric_has_a_type_and_a_unit_cloudwatch_knows():
    units = set(service_model("cloudwatch").shape_for("StandardUnit").enum)
    names = [m.name for m in gm.METRICS]
    assert len(names) == len(set(names))
    for metric in gm.METRICS:
        assert metric.type in (gm.COUNT, gm.GAUGE), metric.name
        assert metric.unit in units, metric.name
        assert metric.source and metric.meaning, metric.name


@pytest.mark.parametrize(
    ("glue", "prometheus"),
    [
        ("glue.driver.aggregate.recordsRead", "glue_driver_aggregate_records_read"),
        ("glue.driver.aggregate.bytesRead", "glue_driver_aggregate_bytes_read_bytes"),
        ("glue.driver.aggregate.elapsedTime", "glue_driver_aggregate_elapsed_time_seconds"),
        ("glue.driver.jvm.heap.usage", "glue_driver_jvm_heap_usage"),
        ("glue.driver.jvm.heap.used", "glue_driver_jvm_heap_used_bytes"),
        ("glue.ALL.s3.filesystem.read_bytes", "glue_all_s3_filesystem_read_bytes"),
        ("glue.driver.disk.used_GB", "glue_driver_disk_used_gb"),
        (
            "glue.driver.ExecutorAllocationManager.executors.numberAllExecutors",
            "glue_driver_executor_allocation_manager_executors_number_all_executors",
        ),
        ("glue.error.OUT_OF_MEMORY_ERROR", "glue_error_out_of_memory_error"),
        ("sparkmark.bookmark.filesDeferred", "sparkmark_bookmark_files_deferred"),
    ],
)
def test_prometheus_names_follow_its_naming_rules(glue, prometheus):
    assert gm.prometheus_name(glue) == prometheus


def test_prometheus_names_are_valid_and_distinct():
    names = [gm.prometheus_name(m.name.replace("<CATEGORY>", "X")) for m in gm.METRICS]
    assert all(PROMETHEUS_NAME.match(n) for n in names)
    assert len(names) == len(set(names))


def test_milliseconds_are_given_in_seconds_and_others_as_they_are():
    assert gm.prometheus_value("glue.driver.aggregate.elapsedTime", 4500) == 4.5
    assert gm.prometheus_value("glue.driver.aggregate.recordsRead", 4500) == 4500


def test_an_unknown_metric_is_not_described():
    with pytest.raises(KeyError):
        gm.describe("glue.driver.nothing")


# ------------------------------------------------------------------ values from Spark

BEGAN = datetime(2026, 11, 27, 8, 0, 0, 500_000, tzinfo=UTC)


def _stage(stage_id: int, status: str, submitted: str | None, **figures) -> dict:
    stage = {"stageId": stage_id, "attemptId": 0, "status": status, "submissionTime": submitted}
    stage.update(figures)
    return stage


def test_only_the_stages_submitted_since_the_run_began_are_its_own():
    stages = [
        _stage(1, "COMPLETE", "2026-11-27T07:59:59.999GMT"),  # an earlier run's
        _stage(2, "COMPLETE", "2026-11-27T08:00:00.500GMT"),
        _stage(3, "PENDING", None),  # not submitted yet
        _stage(4, "ACTIVE", "2026-11-27T08:00:03.000GMT"),
    ]
    assert [s["stageId"] for s in gm.stages_since(stages, BEGAN)] == [2, 4]


def test_spark_values_sum_the_runs_stages_as_glues_aggregate_metrics():
    status = gm.SparkStatus(
        stages=[
            _stage(
                2,
                "COMPLETE",
                "x",
                inputRecords=10,
                inputBytes=100,
                outputRecords=4,
                numCompleteTasks=2,
                numFailedTasks=1,
                numKilledTasks=0,
                numTasks=2,
                shuffleWriteBytes=30,
                shuffleLocalBytesRead=30,
                executorRunTime=800,
            ),
            _stage(
                3,
                "FAILED",
                "x",
                inputRecords=5,
                inputBytes=50,
                numCompleteTasks=1,
                numFailedTasks=4,
                numTasks=4,
                executorRunTime=200,
            ),
            _stage(4, "ACTIVE", "x", numTasks=9, numCompleteTasks=2, executorRunTime=0),
        ],
        executors=[
            {"id": "driver", "isActive": True, "totalCores": 2, "peakMemoryMetrics": {"JVMHeapMemory": 70}}
        ],
        heap=(256, 1024),
        filesystems={"s3a": (300, 40), "file": (999, 999)},
    )
    values = gm.spark_values(status, elapsed_ms=1000)
    assert values["glue.driver.aggregate.recordsRead"] == 15
    assert values["glue.driver.aggregate.bytesRead"] == 150
    assert values["glue.driver.recordsWritten"] == 4
    assert values["glue.driver.aggregate.numCompletedStages"] == 1
    assert values["glue.driver.aggregate.numFailedStages"] == 1
    assert values["glue.driver.aggregate.numCompletedTasks"] == 5
    assert values["glue.driver.aggregate.numFailedTasks"] == 5
    assert values["glue.driver.aggregate.shuffleBytesWritten"] == 30
    assert values["glue.driver.aggregate.elapsedTime"] == 1000
    # A local master: its driver is the one executor; 7 tasks left over 2 cores.
    assert values["glue.driver.ExecutorAllocationManager.executors.numberAllExecutors"] == 1
    assert values["glue.driver.ExecutorAllocationManager.executors.numberMaxNeededExecutors"] == 4
    assert values["glue.driver.workerUtilization"] == pytest.approx(1000 / (2 * 1000))
    assert values["glue.driver.jvm.heap.usage"] == 0.25
    assert values["glue.driver.memory.heap.used.percentage"] == 25.0
    assert values["glue.driver.memory.heap.available"] == 768
    assert values["glue.ALL.jvm.heap.used"] == 256  # the executors are the driver's JVM
    assert values["glue.ALL.s3.filesystem.read_bytes"] == 300  # s3a only, not file://
    assert values["glue.ALL.s3.filesystem.write_bytes"] == 40


def test_a_clusters_executors_are_counted_without_the_driver():
    status = gm.SparkStatus(
        executors=[
            {"id": "driver", "isActive": True, "totalCores": 0},
            {"id": "0", "isActive": True, "totalCores": 4, "peakMemoryMetrics": {"JVMHeapMemory": 100}},
            {"id": "1", "isActive": True, "totalCores": 4, "peakMemoryMetrics": {"JVMHeapMemory": 50}},
            {"id": "2", "isActive": False, "totalCores": 4},
        ],
        local_master=False,
    )
    values = gm.spark_values(status, elapsed_ms=10)
    assert values["glue.driver.ExecutorAllocationManager.executors.numberAllExecutors"] == 2
    assert values["glue.ALL.jvm.heap.used"] == 150
    assert "glue.ALL.s3.filesystem.read_bytes" not in values  # not known: not made up


@pytest.mark.parametrize(
    ("median", "maximum", "expected"),
    [(10, 40, 0.0), (10, 50, 0.0), (10, 100, 1.0), (10, 150, 2.0), (0, 0, 0.0)],
)
def test_skewness_is_zero_under_the_factor_and_one_at_twice_it(median, maximum, expected):
    assert gm.skewness(median, maximum) == pytest.approx(expected)


def test_job_skewness_weighs_each_stage_by_its_share_of_the_run_time():
    status = gm.SparkStatus(
        stages=[
            _stage(1, "COMPLETE", "x", executorRunTime=100),  # skewed but short
            _stage(2, "COMPLETE", "x", executorRunTime=900),  # long, not skewed
        ],
        task_times={(1, 0): (10.0, 150.0), (2, 0): (100.0, 120.0)},
    )
    values = gm.spark_values(status, elapsed_ms=1000)
    assert values["glue.driver.skewness.stage"] == 2.0
    assert values["glue.driver.skewness.job"] == pytest.approx(2.0 * 100 / 1000)


def test_disk_values_in_gigabytes_and_percent():
    gib = 1024**3
    values = gm.disk_values(total=100 * gib, used=25 * gib)
    assert values == {
        "glue.driver.disk.used_GB": 25.0,
        "glue.driver.disk.available_GB": 75.0,
        "glue.driver.disk.used.percentage": 25.0,
    }


# ------------------------------------------------------------------ the run's own figures


def test_bookmark_figures_are_summed_over_the_runs_file_sources():
    sources = {
        "a": {"files_listed": 5, "files_new": 2, "files_modified": 1, "files_read": 3, "files_deferred": 1},
        "b": {"files_listed": 2, "files_new": 2, "files_modified": 0, "files_read": 2, "files_deferred": 0,
              "records_quarantined": 7},
        "db": {"rows_read": 40},
    }  # fmt: skip
    values = gm.run_values(sources, None)
    assert values["sparkmark.bookmark.filesListed"] == 7
    assert values["sparkmark.bookmark.filesNew"] == 4
    assert values["sparkmark.bookmark.filesRead"] == values["glue.driver.filesRead"] == 5
    assert values["sparkmark.bookmark.filesDeferred"] == 1
    assert values["sparkmark.bookmark.recordsQuarantined"] == 7


def test_a_streaming_runs_records_and_lag():
    values = gm.run_values({}, {"numRecords": 12, "lag": 30, "records_quarantined": 2})
    assert values["glue.driver.streaming.numRecords"] == 12
    assert values["sparkmark.streaming.lag"] == 30
    assert values["sparkmark.bookmark.recordsQuarantined"] == 2


def test_a_run_with_no_sources_has_no_bookmark_figures():
    assert gm.run_values({}, None) == {}


def test_records_read_prefers_spark_and_falls_back_to_the_sources():
    assert gm.records_read({"glue.driver.aggregate.recordsRead": 3.0}, {"db": {"rows_read": 40}}) == 3
    assert gm.records_read({}, {"db": {"rows_read": 40}, "s": {"numRecords": 2}}) == 42
    assert gm.records_read({}, {"f": {"files_read": 0}}) is None


def test_reports_send_a_counts_increase_and_a_gauges_value():
    first = {"glue.driver.aggregate.recordsRead": 10.0, "glue.driver.jvm.heap.used": 500.0}
    second = {"glue.driver.aggregate.recordsRead": 25.0, "glue.driver.jvm.heap.used": 300.0}
    assert gm.deltas({}, first) == first
    assert gm.deltas(first, second) == {
        "glue.driver.aggregate.recordsRead": 15.0,
        "glue.driver.jvm.heap.used": 300.0,
    }


def test_a_runs_end_as_glues_reliability_metrics():
    assert gm.end_values(True, None) == {"glue.succeed.ALL": 1.0, "glue.error.ALL": 0.0}
    assert gm.end_values(False, "QUERY_ERROR") == {
        "glue.succeed.ALL": 0.0,
        "glue.error.ALL": 1.0,
        "glue.error.QUERY_ERROR": 1.0,
    }
    assert gm.end_values(False, None) == {"glue.succeed.ALL": 0.0, "glue.error.ALL": 0.0}  # stopped


# ------------------------------------------------------------------ the store and CloudWatch's statistics


def test_the_metric_store_keeps_datapoints_series_and_latest_values(tmp_path):
    store = MetricStore(StateStore(f"sqlite:///{tmp_path / 'state.db'}"))
    now = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    dims = dims_of({"JobName": "j", "Stage": "x"})
    store.put(
        [Datapoint.single("App", "Rate", dims, now - timedelta(minutes=m), m, "Percent") for m in range(3)]
    )
    points = store.datapoints("App", "Rate", dims, now - timedelta(minutes=5), now + timedelta(seconds=1))
    assert [p.total for p in points] == [2.0, 1.0, 0.0]  # oldest first
    assert store.datapoints("App", "Rate", dims_of({"JobName": "j"}), now - timedelta(hours=1), now) == []
    assert store.series("App") == [("App", "Rate", (("JobName", "j"), ("Stage", "x")))]
    assert store.prune(now - timedelta(seconds=90)) == 1
    store.set_latest(
        "Glue", {"a": (1.0, None), "b": (2.0, "Count")}, dims_of({"JobRunId": "r1"}), now, group="j"
    )
    store.set_latest("Glue", {"a": (3.0, None)}, dims_of({"JobRunId": "r2"}), now, group="j")
    assert [(r.name, r.value, dict(r.dims)["JobRunId"]) for r in store.latest("Glue")] == [("a", 3.0, "r2")]


def test_statistics_over_statistic_sets():
    at = datetime(2026, 11, 27, 9, 0, 10, tzinfo=UTC)
    points = [
        Datapoint("N", "m", (), at, 1, 4.0, 4.0, 4.0),
        Datapoint("N", "m", (), at, 3, 6.0, 1.0, 3.0),  # three values summing to 6
    ]
    assert _statistic(points, "SampleCount") == 4
    assert _statistic(points, "Sum") == 10
    assert _statistic(points, "Average") == 2.5
    assert _statistic(points, "Minimum") == 1
    assert _statistic(points, "Maximum") == 4


def test_periods_are_aligned_as_cloudwatch_aligns_them():
    at = datetime(2026, 11, 27, 9, 0, 10, tzinfo=UTC)
    later = datetime(2026, 11, 27, 9, 1, 59, tzinfo=UTC)
    buckets = _bucket([Datapoint.single("N", "m", (), t, 1) for t in (at, later)], 60)
    assert sorted(buckets) == [
        datetime(2026, 11, 27, 9, 0, tzinfo=UTC),
        datetime(2026, 11, 27, 9, 1, tzinfo=UTC),
    ]
    assert _period(300) == 300
    for wrong in (0, 7, 61, 90):
        with pytest.raises(GlueApiError, match="Period"):
            _period(wrong)


def test_a_custom_metrics_prometheus_name():
    assert custom_name("MyETL", "QuarantineRate") == "my_etl_quarantine_rate"
    assert custom_name("team/etl", "rows.bad") == "team_etl_rows_bad"
    assert custom_name("1st", "x") == "_1st_x"


# ------------------------------------------------------------------ job run insights

ERRORS = [
    (RuntimeError("java.lang.OutOfMemoryError: Java heap space"), "OUT_OF_MEMORY_ERROR"),
    (OSError("[Errno 28] No space left on device"), "DISK_NO_SPACE_ERROR"),
    (ModuleNotFoundError("No module named 'great_tables'"), "IMPORT_ERROR"),
    (
        RuntimeError(
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name `amt` cannot be resolved"
        ),
        "QUERY_ERROR",
    ),
    (RuntimeError("[PATH_NOT_FOUND] Path does not exist: file:/data/in."), "RESOURCE_NOT_FOUND_ERROR"),
    (
        RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] The table or view `db`.`t` cannot be found."),
        "RESOURCE_NOT_FOUND_ERROR",
    ),
    (RuntimeError("Connection refused: localhost/127.0.0.1:5432"), "CONNECTION_ERROR"),
    (PermissionError("[Errno 13] Permission denied: '/data/x'"), "PERMISSION_ERROR"),
    (RuntimeError("[PATH_ALREADY_EXISTS] Path file:/out already exists."), "RESOURCES_ALREADY_EXISTS_ERROR"),
    (NotImplementedError("not here"), "UNSUPPORTED_OPERATION_ERROR"),
    (ValueError("the total is negative"), "UNCLASSIFIED_ERROR"),
]


@pytest.mark.parametrize(("error", "category"), ERRORS, ids=[c for _, c in ERRORS])
def test_errors_are_classified_in_glues_error_categories(error, category):
    assert classify(error)[0] == category


def test_a_spark_error_nobody_classified_names_the_java_class():
    Py4JJavaError = type("Py4JJavaError", (Exception,), {})
    error = Py4JJavaError(
        "An error occurred: org.apache.spark.SparkException: Job aborted due to stage failure"
    )
    category, error_class, cause, advice = classify(error)
    assert (category, error_class) == ("UNCLASSIFIED_SPARK_ERROR", "org.apache.spark.SparkException")
    assert cause and advice


def test_every_rule_gives_a_cause_and_advice_and_a_glue_category():
    categories = {
        "OUT_OF_MEMORY_ERROR", "DISK_NO_SPACE_ERROR", "THROTTLING_ERROR", "DATA_LAKE_FRAMEWORK_ERROR",
        "GLUE_JOB_BOOKMARK_VERSION_MISMATCH_ERROR", "TIMEOUT_ERROR", "QUERY_ERROR", "SYNTAX_ERROR", "IMPORT_ERROR",
        "INVALID_ARGUMENT_ERROR", "PERMISSION_ERROR", "RESOURCE_NOT_FOUND_ERROR", "RESOURCES_ALREADY_EXISTS_ERROR",
        "CONNECTION_ERROR", "UNSUPPORTED_OPERATION_ERROR", "SYSTEM_EXIT_ERROR", "S3_ERROR",
    }  # fmt: skip
    for rule in RULES:
        assert rule.category in categories
        assert rule.cause and rule.advice and "\n" not in rule.cause + rule.advice


def test_the_script_line_where_the_run_failed(tmp_path):
    script = tmp_path / "job.py"
    source = "x = 1\n\ndef go():\n    raise ValueError('boom')\n\ngo()\n"
    script.write_text(source)
    with pytest.raises(ValueError) as caught:
        exec(compile(source, str(script), "exec"), {})  # a script, compiled as runpy compiles one
    assert script_line(caught.value.__traceback__, str(script)) == 4
    found = insight_of(caught.value, str(script))
    assert found.where() == "line 4 of job.py"
    assert "line 4 of job.py, UNCLASSIFIED_ERROR; probable cause:" in found.suffix("")
    assert insight_of(caught.value, None).line is None  # no script known: no line made up


def test_floats_stay_finite():
    assert all(math.isfinite(v) for v in gm.spark_values(gm.SparkStatus(), elapsed_ms=0).values())


# ------------------------------------------------------------------ the documentation

DOC = Path(__file__).resolve().parents[1] / "docs" / "observability.md"


def doc_row(metric: gm.Metric) -> str:
    prometheus = gm.prometheus_name(metric.name.replace("<CATEGORY>", "CATEGORY")).replace(
        "category", "<category>"
    )
    return f"| `{metric.name}` | `{prometheus}` | {metric.type} | {metric.unit} | {metric.source} | {metric.meaning} |"


def test_the_documentation_lists_every_metric_with_its_names_source_and_meaning():
    text = DOC.read_text(encoding="utf-8")
    table = text.split(
        "| Glue name | Prometheus name | type | unit | source | meaning |\n|---|---|---|---|---|---|\n", 1
    )[1]
    documented = table.split("\n\n", 1)[0].splitlines()
    expected = [doc_row(m) for m in gm.METRICS]
    assert documented == expected, "\n".join(expected)


def test_the_documentation_lists_every_job_figure_and_alert():
    from sparkmark.app.prometheus import JOB_FAMILIES
    from sparkmark.monitoring import RULES

    text = DOC.read_text(encoding="utf-8")
    for name in JOB_FAMILIES:
        assert f"| `{name}` |" in text
    for alert in re.findall(r"- alert: (\w+)", RULES.read_text(encoding="utf-8")):
        assert f"| `{alert}` |" in text
