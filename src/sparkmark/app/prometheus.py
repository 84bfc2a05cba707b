"""A project's metrics in Prometheus's text format, for the ``/metrics`` endpoints of
the console and the Glue API (both serve :func:`exposition`).

Three kinds of series, read from the state store at each scrape:

- **Glue's job metrics** of each job's latest run (the one that reported last), under
  the Prometheus names :func:`sparkmark.runtime.glue_metrics.prometheus_name` derives
  from Glue's, with labels ``job_name``, ``job_run_id`` and ``type`` (Glue's
  ``JobName``, ``JobRunId`` and ``Type`` dimensions). Each is a gauge: a run's running
  total, or a value at a point in time, as Glue reports it.
- **What scripts put with CloudWatch's PutMetricData**: each metric's latest value, as
  ``<namespace>_<metric name>`` in snake case, its dimensions as labels.
- **sparkmark's job figures** (``sparkmark_job_*``), from the runs: how many runs in
  each state, runs going on and their elapsed time, each job's timeout, and how many
  of its latest runs in a row read nothing. The shipped alerting rules use them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..engine.models import BookmarkOption, RunRecord, RunState
from ..runtime import glue_metrics as gm

if TYPE_CHECKING:
    from .application import App

JOB_FAMILIES = RUNS, ELAPSED, TIMEOUT, EMPTY, LAST_END = (
    "sparkmark_job_runs",
    "sparkmark_job_run_elapsed_seconds",
    "sparkmark_job_timeout_seconds",
    "sparkmark_job_empty_runs_in_a_row",
    "sparkmark_job_last_run_end_timestamp_seconds",
)
EMPTY_RUNS_LOOKED_AT = 10  # the latest runs of a job looked at for zero-record runs in a row
BOOKKEEPING = "crawler:"  # a crawler's own runs, not jobs


def _label(name: str) -> str:
    label = gm.snake(name)
    if not label or label[0].isdigit():
        label = "_" + label
    return label.lstrip("_") if label.startswith("__") else label


def custom_name(namespace: str, name: str) -> str:
    """The Prometheus name of a metric a script put in ``namespace``."""
    joined = re.sub(r"_+", "_", f"{gm.snake(namespace)}_{gm.snake(name)}").strip("_")
    return joined if not joined[:1].isdigit() else "_" + joined


def empty_run(record: RunRecord) -> bool | None:
    """Whether a succeeded bookmarked run read no records (None: not known)."""
    glue = record.metrics.get("glue") or {}
    read = gm.records_read(glue, record.metrics.get("sources") or {})
    if read is None:
        files = [m.get("files_read") for m in (record.metrics.get("sources") or {}).values()]
        known = [int(f) for f in files if f is not None]
        return (sum(known) == 0) if known else None
    return read == 0


class Collector:
    """prometheus_client's custom collector over one application's state store."""

    def __init__(self, app: App):
        self.app = app

    def collect(self) -> Iterator[Any]:
        yield from self._glue_and_custom()
        yield from self._jobs()

    # ------------------------------------------------------------ stored series

    def _glue_and_custom(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from ..runtime.metric_store import MetricStore

        glue: dict[str, list[tuple[list[str], float]]] = defaultdict(list)
        custom: dict[str, dict[str, Any]] = {}
        for row in MetricStore(self.app.state).latest():
            dims = dict(row.dims)
            if row.namespace == gm.NAMESPACE and _known(row.name):
                metric = gm.describe(row.name)
                labels = [dims.get("JobName", ""), dims.get("JobRunId", ""), metric.type]
                glue[row.name].append((labels, gm.prometheus_value(row.name, row.value)))
                continue
            entry = custom.setdefault(
                custom_name(row.namespace, row.name),
                {"doc": f"{row.name} put in namespace {row.namespace} (PutMetricData)", "rows": []},
            )
            entry["rows"].append(({_label(k): v for k, v in row.dims}, row.value))
        for name in sorted(glue):
            metric = gm.describe(name)
            family = GaugeMetricFamily(
                gm.prometheus_name(name),
                f"{name}: {metric.meaning}",
                labels=["job_name", "job_run_id", "type"],
            )
            for labels, value in glue[name]:
                family.add_metric(labels, value)
            yield family
        for name in sorted(custom):
            keys = sorted({k for labels, _ in custom[name]["rows"] for k in labels})
            put = GaugeMetricFamily(name, custom[name]["doc"], labels=keys)
            for labels, value in custom[name]["rows"]:
                put.add_metric([labels.get(k, "") for k in keys], value)
            yield put

    # ------------------------------------------------------------ jobs

    def _jobs(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        state = self.app.state
        counts = GaugeMetricFamily(
            RUNS, "runs of the job in the state store, by state", labels=["job_name", "state"]
        )
        for (job, run_state), n in sorted(state.run_counts().items()):
            if not job.startswith(BOOKKEEPING):
                counts.add_metric([job, run_state.value], n)
        yield counts

        now = datetime.now(UTC)
        running = GaugeMetricFamily(
            ELAPSED,
            "seconds since each running run of the job started",
            labels=["job_name", "job_run_id"],
        )
        running_runs, _ = state.find_runs(states=[RunState.RUNNING], limit=1000)
        for record in running_runs:
            if not record.job_name.startswith(BOOKKEEPING):
                running.add_metric(
                    [record.job_name, record.run_id], (now - record.started_at).total_seconds()
                )
        yield running

        timeouts = GaugeMetricFamily(
            TIMEOUT,
            "the job's timeout (Glue's Timeout, in minutes × 60)",
            labels=["job_name"],
        )
        try:
            jobs = self.app.project.jobs
        except Exception:  # noqa: BLE001 - a broken project file must not hide the run metrics
            jobs = {}
        for name, definition in sorted(jobs.items()):
            timeouts.add_metric([name], float(definition.Timeout) * 60.0)
        yield timeouts

        empty = GaugeMetricFamily(
            EMPTY,
            "the job's latest succeeded bookmarked runs in a row that read zero records",
            labels=["job_name"],
        )
        last_end = GaugeMetricFamily(
            LAST_END,
            "when the job's latest finished run ended (Unix time), by its state",
            labels=["job_name", "state"],
        )
        for job, finished in sorted(state.latest_finished(EMPTY_RUNS_LOOKED_AT).items()):
            if job.startswith(BOOKKEEPING):
                continue
            streak = 0
            for record in finished:
                if (
                    record.state is not RunState.SUCCEEDED
                    or record.bookmark_option is not BookmarkOption.ENABLE
                ):
                    break
                if not empty_run(record):
                    break
                streak += 1
            empty.add_metric([job], float(streak))
            if finished[0].ended_at is not None:
                last_end.add_metric([job, finished[0].state.value], finished[0].ended_at.timestamp())
        yield empty
        yield last_end


def _known(name: str) -> bool:
    try:
        gm.describe(name)
    except KeyError:
        return False
    return True


def exposition(app: App) -> tuple[bytes, str]:
    """The body and content type of a scrape of ``app``'s metrics."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector(app))
    return generate_latest(registry), CONTENT_TYPE_LATEST
