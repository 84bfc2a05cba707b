"""Glue's job metrics, under Glue's names, computed from what Spark reports about a run
and from the run's own bookmark figures.

``METRICS`` is the one table: each metric's Glue name, whether Glue reports it as a
``count`` or a ``gauge`` (CloudWatch's ``Type`` dimension), its unit, where the value
comes from and what it means. docs/observability.md is checked against it, the
Prometheus names are derived from it (:func:`prometheus_name`), and the exporter,
the CloudWatch operations and the console all read values keyed by these names.

The computation is pure: :func:`spark_values` takes a :class:`SparkStatus` (the
stages the run submitted, the executors, what the driver's JVM says), and
:func:`run_values` the run's source and streaming figures. Reading Spark lives in
``runtime.spark_status``; sampling while the run lives in ``runtime.run_metrics``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

NAMESPACE = "Glue"  # CloudWatch's namespace for Glue's metrics, and for these
SKEWNESS_FACTOR = 5.0  # Glue's default: a stage is skewed when max/median task time passes it

COUNT, GAUGE = "count", "gauge"


@dataclass(frozen=True)
class Metric:
    name: str  # Glue's (CloudWatch's MetricName)
    type: str  # COUNT: a running total over the run; GAUGE: a value at a point in time
    unit: str  # CloudWatch's unit
    source: str  # where sparkmark takes the value from
    meaning: str
    group: str | None = None  # Glue 4's ObservabilityGroup dimension, for its observability metrics


def _stages(what: str) -> str:
    return f"Spark's stages of the run: {what}"


METRICS: tuple[Metric, ...] = (
    # ------------------------------------------------ glue.driver.aggregate.*
    Metric(
        "glue.driver.aggregate.recordsRead",
        COUNT,
        "Count",
        _stages("sum of inputRecords"),
        "records read from every data source by the run's completed tasks",
    ),
    Metric(
        "glue.driver.aggregate.bytesRead",
        COUNT,
        "Bytes",
        _stages("sum of inputBytes"),
        "bytes read from every data source by the run's tasks",
    ),
    Metric(
        "glue.driver.aggregate.elapsedTime",
        GAUGE,
        "Milliseconds",
        "the run's clock",
        "time since the run started",
    ),
    Metric(
        "glue.driver.aggregate.numCompletedStages",
        COUNT,
        "Count",
        _stages("status COMPLETE"),
        "stages the run completed",
    ),
    Metric(
        "glue.driver.aggregate.numFailedStages",
        COUNT,
        "Count",
        _stages("status FAILED"),
        "stages of the run that failed",
    ),
    Metric(
        "glue.driver.aggregate.numCompletedTasks",
        COUNT,
        "Count",
        _stages("sum of numCompleteTasks"),
        "tasks the run completed",
    ),
    Metric(
        "glue.driver.aggregate.numFailedTasks",
        COUNT,
        "Count",
        _stages("sum of numFailedTasks"),
        "task attempts that failed (Spark retries them)",
    ),
    Metric(
        "glue.driver.aggregate.numKilledTasks",
        COUNT,
        "Count",
        _stages("sum of numKilledTasks"),
        "task attempts Spark killed",
    ),
    Metric(
        "glue.driver.aggregate.shuffleBytesWritten",
        COUNT,
        "Bytes",
        _stages("sum of shuffleWriteBytes"),
        "bytes the run's tasks wrote for shuffles (joins, aggregations, repartitions)",
    ),
    Metric(
        "glue.driver.aggregate.shuffleLocalBytesRead",
        COUNT,
        "Bytes",
        _stages("sum of shuffleLocalBytesRead"),
        "shuffle bytes read from the executor's own disk",
    ),
    # ------------------------------------------------ executors
    Metric(
        "glue.driver.ExecutorAllocationManager.executors.numberAllExecutors",
        GAUGE,
        "Count",
        "Spark's executors (active ones; a local master's driver counts as its one executor)",
        "executors running the run's tasks",
    ),
    Metric(
        "glue.driver.ExecutorAllocationManager.executors.numberMaxNeededExecutors",
        GAUGE,
        "Count",
        "Spark's active stages and executors: running and pending tasks over cores per executor",
        "executors the current load would need",
    ),
    # ------------------------------------------------ JVM heap
    Metric(
        "glue.driver.jvm.heap.usage",
        GAUGE,
        "None",
        "the driver JVM (Runtime)",
        "share of the driver's maximum heap in use, 0 to 1",
    ),
    Metric(
        "glue.driver.jvm.heap.used",
        GAUGE,
        "Bytes",
        "the driver JVM (Runtime), else Spark's peak JVMHeapMemory",
        "bytes of the driver's heap in use",
    ),
    Metric(
        "glue.ALL.jvm.heap.usage",
        GAUGE,
        "None",
        "the executors' JVMs (a local master's: the driver's)",
        "share of the executors' maximum heap in use, 0 to 1 (local master only)",
    ),
    Metric(
        "glue.ALL.jvm.heap.used",
        GAUGE,
        "Bytes",
        "Spark's executors: peak JVMHeapMemory, summed",
        "bytes of heap the executors used at their peak",
    ),
    # ------------------------------------------------ file systems
    Metric(
        "glue.ALL.s3.filesystem.read_bytes",
        COUNT,
        "Bytes",
        "Hadoop's FileSystem statistics for s3a, s3 and s3n in the driver JVM",
        "bytes read from S3 (every task, with a local master; the driver's own reads on a cluster)",
    ),
    Metric(
        "glue.ALL.s3.filesystem.write_bytes",
        COUNT,
        "Bytes",
        "Hadoop's FileSystem statistics for s3a, s3 and s3n in the driver JVM",
        "bytes written to S3 (as read_bytes)",
    ),
    # ------------------------------------------------ Glue 4 observability metrics
    Metric(
        "glue.driver.workerUtilization",
        GAUGE,
        "Percent",
        "Spark's stages and executors: task run time over cores times elapsed time",
        "share of the executors' cores the run kept busy, 0 to 1",
        "resource_utilization",
    ),
    Metric(
        "glue.driver.skewness.stage",
        GAUGE,
        "Count",
        "Spark's task summaries: max over median task run time per completed stage",
        "the most skewed stage: 0 while max/median stays under the factor (5), 1 at twice it",
        "job_performance",
    ),
    Metric(
        "glue.driver.skewness.job",
        GAUGE,
        "Count",
        "the stages' skewness, each weighted by its share of the run's stage time",
        "skew that costs time: a short skewed stage weighs little",
        "job_performance",
    ),
    Metric(
        "glue.driver.memory.heap.used",
        GAUGE,
        "Bytes",
        "the driver JVM (Runtime)",
        "bytes of the driver's heap in use",
        "resource_utilization",
    ),
    Metric(
        "glue.driver.memory.heap.available",
        GAUGE,
        "Bytes",
        "the driver JVM (Runtime)",
        "bytes of the driver's heap still free up to its maximum",
        "resource_utilization",
    ),
    Metric(
        "glue.driver.memory.heap.used.percentage",
        GAUGE,
        "Percent",
        "the driver JVM (Runtime)",
        "share of the driver's maximum heap in use, 0 to 100",
        "resource_utilization",
    ),
    Metric(
        "glue.driver.disk.used_GB",
        GAUGE,
        "Gigabytes",
        "the file system of the run's temporary folder",
        "gigabytes used on the driver's scratch disk",
        "resource_utilization",
    ),
    Metric(
        "glue.driver.disk.available_GB",
        GAUGE,
        "Gigabytes",
        "the file system of the run's temporary folder",
        "gigabytes free on the driver's scratch disk",
        "resource_utilization",
    ),
    Metric(
        "glue.driver.disk.used.percentage",
        GAUGE,
        "Percent",
        "the file system of the run's temporary folder",
        "share of the driver's scratch disk in use, 0 to 100",
        "resource_utilization",
    ),
    Metric("glue.succeed.ALL", COUNT, "Count", "the run's end", "1 when the run succeeded", "error"),
    Metric("glue.error.ALL", COUNT, "Count", "the run's end", "1 when the run failed", "error"),
    Metric(
        "glue.error.<CATEGORY>",
        COUNT,
        "Count",
        "the run's error, classified (runtime.insights)",
        "1 under the failed run's error category, e.g. glue.error.OUT_OF_MEMORY_ERROR",
        "error",
    ),
    Metric(
        "glue.driver.recordsWritten",
        COUNT,
        "Count",
        _stages("sum of outputRecords"),
        "records the run's tasks wrote to files and tables (all sinks together)",
        "throughput",
    ),
    Metric(
        "glue.driver.filesRead",
        COUNT,
        "Count",
        "the run's file sources (bookmark figures)",
        "files the run's sources read",
        "throughput",
    ),
    # ------------------------------------------------ streaming
    Metric(
        "glue.driver.streaming.numRecords",
        COUNT,
        "Count",
        "the run's streaming query",
        "records the run's micro-batches processed",
    ),
    # ------------------------------------------------ sparkmark's bookmark figures
    Metric(
        "sparkmark.bookmark.filesListed", GAUGE, "Count", "the run's file sources", "files the sources listed"
    ),
    Metric(
        "sparkmark.bookmark.filesNew",
        GAUGE,
        "Count",
        "the run's file sources",
        "listed files the bookmark had not seen",
    ),
    Metric(
        "sparkmark.bookmark.filesModified",
        GAUGE,
        "Count",
        "the run's file sources",
        "listed files changed since the bookmark recorded them",
    ),
    Metric(
        "sparkmark.bookmark.filesRead",
        GAUGE,
        "Count",
        "the run's file sources",
        "files chosen and read this run",
    ),
    Metric(
        "sparkmark.bookmark.filesDeferred",
        GAUGE,
        "Count",
        "the run's file sources",
        "new files left for a later run (boundedFiles, boundedSize, a settling band): the source's backlog",
    ),
    Metric(
        "sparkmark.bookmark.recordsQuarantined",
        GAUGE,
        "Count",
        "the run's sources and micro-batches",
        "bad records set aside in the quarantine instead of read",
    ),
    Metric(
        "sparkmark.bookmark.version",
        GAUGE,
        "None",
        "the state store",
        "the bookmark version the run read from (its base), then the one it committed",
    ),
    Metric(
        "sparkmark.streaming.lag",
        GAUGE,
        "Count",
        "the run's streaming query: latest offsets minus processed",
        "records the stream's sources hold that the run has not processed yet",
    ),
)
BY_NAME = {m.name: m for m in METRICS}
ERROR_PREFIX = "glue.error."


def describe(name: str) -> Metric:
    """The metric ``name`` (an error category's ``glue.error.X`` as the family's)."""
    if name in BY_NAME:
        return BY_NAME[name]
    if name.startswith(ERROR_PREFIX):
        return BY_NAME["glue.error.<CATEGORY>"]
    raise KeyError(name)


# ------------------------------------------------------------------ Prometheus names

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")


def snake(text: str) -> str:
    """``recordsRead`` → ``records_read``; ``used_GB`` → ``used_gb``; ``non-heap`` → ``non_heap``."""
    return _NOT_NAME.sub("_", _CAMEL.sub("_", text)).lower()


def prometheus_name(name: str) -> str:
    """The Prometheus name of Glue metric ``name``: each dotted part in snake case,
    joined by ``_``; a metric in milliseconds is given in seconds (``_seconds``), one in
    bytes ends in ``_bytes``; ``usage``/``Percent`` stay as Glue gives them."""
    metric = describe(name)
    base = "_".join(snake(part) for part in name.split("."))
    if metric.unit == "Milliseconds":
        return base + "_seconds"
    if metric.unit == "Bytes" and not base.endswith("_bytes"):
        return base + "_bytes"
    return base


def prometheus_value(name: str, value: float) -> float:
    return value / 1000.0 if describe(name).unit == "Milliseconds" else value


# ------------------------------------------------------------------ from Spark


@dataclass
class SparkStatus:
    """What Spark says about a run: its stages (Spark's REST API's StageData, those
    submitted since the run began), the application's executors (ExecutorSummary),
    per completed stage the median and maximum task run time, and the driver JVM's
    heap and Hadoop file-system counters when this process holds the JVM."""

    stages: list[dict[str, Any]] = field(default_factory=list)
    executors: list[dict[str, Any]] = field(default_factory=list)
    task_times: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    heap: tuple[int, int] | None = None  # (used, max) bytes of the driver's JVM
    filesystems: dict[str, tuple[int, int]] | None = (
        None  # scheme → (read, written) bytes, since the run began
    )
    local_master: bool = True


def stage_time(text: str | None) -> datetime | None:
    """A time as Spark's REST API writes it: ``2026-11-27T08:17:51.158GMT``."""
    if not text:
        return None
    try:
        return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None


def stage_key(stage: Mapping[str, Any]) -> tuple[int, int]:
    """A stage of Spark's REST API as (stage id, attempt id), the key of its task times."""
    return int(stage["stageId"]), int(stage.get("attemptId") or 0)


def stages_since(stages: Iterable[Mapping[str, Any]], began: datetime) -> list[dict[str, Any]]:
    """The stages submitted at or after ``began`` (a run's own, in a process that runs one
    run at a time); a stage not yet submitted has no time and is left out."""
    chosen = []
    for stage in stages:
        when = stage_time(stage.get("submissionTime"))
        if when is not None and when >= began.replace(microsecond=(began.microsecond // 1000) * 1000):
            chosen.append(dict(stage))
    return chosen


def skewness(median: float, maximum: float, factor: float = SKEWNESS_FACTOR) -> float:
    """Glue's skewness of one stage: 0 while max/median stays under ``factor``, rising by
    1 for each further ``factor``."""
    if median <= 0:  # tasks too short to time: nothing to compare
        return 0.0
    return max(0.0, (maximum / median) / factor - 1.0)


def _sum(stages: list[dict[str, Any]], key: str) -> float:
    return float(sum(int(s.get(key) or 0) for s in stages))


def _task_executors(executors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The executors that run tasks: the non-driver ones, or a local master's driver."""
    active = [e for e in executors if e.get("isActive", True)]
    workers = [e for e in active if e.get("id") != "driver"]
    return workers or [e for e in active if e.get("id") == "driver"]


def spark_values(status: SparkStatus, elapsed_ms: float) -> dict[str, float]:
    """Glue's metrics from what Spark said of the run, ``elapsed_ms`` after it began."""
    stages = status.stages
    values: dict[str, float] = {
        "glue.driver.aggregate.elapsedTime": float(round(elapsed_ms)),
        "glue.driver.aggregate.recordsRead": _sum(stages, "inputRecords"),
        "glue.driver.aggregate.bytesRead": _sum(stages, "inputBytes"),
        "glue.driver.recordsWritten": _sum(stages, "outputRecords"),
        "glue.driver.aggregate.numCompletedStages": float(sum(s.get("status") == "COMPLETE" for s in stages)),
        "glue.driver.aggregate.numFailedStages": float(sum(s.get("status") == "FAILED" for s in stages)),
        "glue.driver.aggregate.numCompletedTasks": _sum(stages, "numCompleteTasks"),
        "glue.driver.aggregate.numFailedTasks": _sum(stages, "numFailedTasks"),
        "glue.driver.aggregate.numKilledTasks": _sum(stages, "numKilledTasks"),
        "glue.driver.aggregate.shuffleBytesWritten": _sum(stages, "shuffleWriteBytes"),
        "glue.driver.aggregate.shuffleLocalBytesRead": _sum(stages, "shuffleLocalBytesRead"),
    }
    workers = _task_executors(status.executors)
    if workers:
        cores = sum(int(e.get("totalCores") or 0) for e in workers)
        values["glue.driver.ExecutorAllocationManager.executors.numberAllExecutors"] = float(len(workers))
        per_executor = max(cores / len(workers), 1.0)
        waiting = sum(
            max(int(s.get("numTasks") or 0) - int(s.get("numCompleteTasks") or 0), 0)
            for s in stages
            if s.get("status") == "ACTIVE"
        )
        values["glue.driver.ExecutorAllocationManager.executors.numberMaxNeededExecutors"] = float(
            math.ceil(waiting / per_executor)
        )
        if cores and elapsed_ms > 0:
            busy = _sum(stages, "executorRunTime")
            values["glue.driver.workerUtilization"] = round(min(busy / (cores * elapsed_ms), 1.0), 4)
        peaks = [int((e.get("peakMemoryMetrics") or {}).get("JVMHeapMemory") or 0) for e in workers]
        if any(peaks):
            values["glue.ALL.jvm.heap.used"] = float(sum(peaks))
    if status.heap is not None:
        used, top = status.heap
        values["glue.driver.jvm.heap.used"] = float(used)
        values["glue.driver.memory.heap.used"] = float(used)
        if top > 0:
            values["glue.driver.jvm.heap.usage"] = round(used / top, 4)
            values["glue.driver.memory.heap.available"] = float(max(top - used, 0))
            values["glue.driver.memory.heap.used.percentage"] = round(100.0 * used / top, 2)
        if status.local_master:  # the executors are the driver's JVM
            values["glue.ALL.jvm.heap.used"] = float(used)
            if top > 0:
                values["glue.ALL.jvm.heap.usage"] = round(used / top, 4)
    else:
        driver = [e for e in status.executors if e.get("id") == "driver"]
        peak = int(((driver[0].get("peakMemoryMetrics") or {}).get("JVMHeapMemory") or 0) if driver else 0)
        if peak:
            values["glue.driver.jvm.heap.used"] = float(peak)
    if status.filesystems is not None:
        s3 = [v for k, v in status.filesystems.items() if k in ("s3a", "s3", "s3n")]
        values["glue.ALL.s3.filesystem.read_bytes"] = float(sum(r for r, _ in s3))
        values["glue.ALL.s3.filesystem.write_bytes"] = float(sum(w for _, w in s3))
    skews: list[tuple[float, float]] = []  # (skewness, stage run time)
    for stage in stages:
        if stage.get("status") != "COMPLETE":
            continue
        times = status.task_times.get(stage_key(stage))
        if times is None:
            continue
        skews.append((skewness(*times), float(stage.get("executorRunTime") or 0)))
    if skews:
        values["glue.driver.skewness.stage"] = round(max(s for s, _ in skews), 4)
        total = sum(t for _, t in skews)
        values["glue.driver.skewness.job"] = round(
            max((s * t / total) if total > 0 else s for s, t in skews), 4
        )
    return values


def disk_values(total: int, used: int) -> dict[str, float]:
    gib = 1024.0**3
    values = {
        "glue.driver.disk.used_GB": round(used / gib, 3),
        "glue.driver.disk.available_GB": round(max(total - used, 0) / gib, 3),
    }
    if total > 0:
        values["glue.driver.disk.used.percentage"] = round(100.0 * used / total, 2)
    return values


# ------------------------------------------------------------------ from the run's own figures


def run_values(
    sources: Mapping[str, Mapping[str, Any]], streaming: Mapping[str, Any] | None
) -> dict[str, float]:
    """The bookmark figures of a run's sources (summed over them) and its stream."""
    values: dict[str, float] = {}
    files = [m for m in sources.values() if "files_listed" in m]
    if files:
        for key, name in (
            ("files_listed", "sparkmark.bookmark.filesListed"),
            ("files_new", "sparkmark.bookmark.filesNew"),
            ("files_modified", "sparkmark.bookmark.filesModified"),
            ("files_read", "sparkmark.bookmark.filesRead"),
            ("files_deferred", "sparkmark.bookmark.filesDeferred"),
        ):
            values[name] = float(sum(int(m.get(key) or 0) for m in files))
        values["glue.driver.filesRead"] = values["sparkmark.bookmark.filesRead"]
    quarantined = sum(int(m.get("records_quarantined") or 0) for m in sources.values())
    if streaming:
        quarantined += int(streaming.get("records_quarantined") or 0)
        values["glue.driver.streaming.numRecords"] = float(streaming.get("numRecords") or 0)
        if streaming.get("lag") is not None:
            values["sparkmark.streaming.lag"] = float(streaming["lag"])
    if files or quarantined or streaming:
        values["sparkmark.bookmark.recordsQuarantined"] = float(quarantined)
    return values


def records_read(values: Mapping[str, float], sources: Mapping[str, Mapping[str, Any]]) -> float | None:
    """What a run read, in records: Spark's count when there is one, else its sources'."""
    if "glue.driver.aggregate.recordsRead" in values:
        return float(values["glue.driver.aggregate.recordsRead"])
    counted = [m.get("rows_read", m.get("numRecords")) for m in sources.values()]
    known = [int(c) for c in counted if c is not None]
    return float(sum(known)) if known else None


def end_values(succeeded: bool, category: str | None) -> dict[str, float]:
    """Glue 4's reliability metrics for a run that ended: a failed run has an error
    ``category``; a stopped one has none and counts as neither."""
    if succeeded:
        return {"glue.succeed.ALL": 1.0, "glue.error.ALL": 0.0}
    values = {"glue.succeed.ALL": 0.0, "glue.error.ALL": 1.0 if category else 0.0}
    if category:
        values[ERROR_PREFIX + category] = 1.0
    return values


def deltas(previous: Mapping[str, float], current: Mapping[str, float]) -> dict[str, float]:
    """What CloudWatch is sent for one period, as Glue sends it: a count metric's
    increase since the last report, a gauge's value."""
    sent = {}
    for name, value in current.items():
        if describe(name).type == COUNT:
            sent[name] = value - previous.get(name, 0.0)
        else:
            sent[name] = value
    return sent


def utc_ms(when: datetime) -> int:
    return int(when.astimezone(UTC).timestamp() * 1000)


VCPUS_PER_DPU = 4  # a DPU is 4 vCPUs and 16 GB (AWS's worker types page)


def dpu_seconds(lives: list[tuple[str, int, float]]) -> float:
    """Glue's DPUSeconds of a run from its executors' measured lives (id, cores, seconds):
    each executor counts its cores ÷ 4 DPUs for as long as it lived. The driver is a
    worker too, as Glue counts it: of its own cores on a local master, else of the size
    of the largest executor (Glue's driver is a worker of the job's type), one DPU when
    there was none."""
    executors = [(cores, seconds) for name, cores, seconds in lives if name != "driver"]
    largest = max((cores for cores, _ in executors), default=VCPUS_PER_DPU)
    total = sum(cores / VCPUS_PER_DPU * seconds for cores, seconds in executors)
    for name, cores, seconds in lives:
        if name == "driver":
            total += (cores or largest) / VCPUS_PER_DPU * seconds
    return round(total, 3)
