"""A run's Glue metrics while it lives: sampled every ``SPARKMARK_METRICS_INTERVAL``
seconds (30, as Glue reports) in a thread of the run's process, and once more as the
run ends.

Each report goes where a team looks:

- the state store's metric tables (:mod:`sparkmark.runtime.metric_store`): CloudWatch's
  datapoints under namespace ``Glue`` with Glue's dimensions (``JobName``,
  ``JobRunId``, and ``ALL`` for every run of the job; ``Type``: a ``count`` is sent as
  its increase since the last report, as Glue sends it), and each series' latest
  value, which the ``/metrics`` endpoints expose;
- an OpenTelemetry collector, when one is configured (:mod:`sparkmark.runtime.otlp`);
- the run's own record: its final values are kept with its metrics (``glue``), for
  ``sparkmark runs show`` and the console's charts. They are added just after the run's
  commit (``JobRun._report_end``), so the commit never waits for Spark's status.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..runtime.metric_store import Datapoint, MetricStore, dims_of
from . import glue_metrics as gm
from .spark_status import SparkStatusReader

log = logging.getLogger("sparkmark.metrics")

Figures = Callable[[], tuple[Mapping[str, Mapping[str, Any]], Mapping[str, Any] | None, int | None]]


class Pusher(Protocol):
    def push(self, job: str, run_id: str, values: Mapping[str, float]) -> None: ...

    def close(self) -> None: ...


class RunMetrics:
    """The metrics of one run. ``figures`` gives the run's source figures, its stream's
    summary and its bookmark version when asked."""

    def __init__(
        self,
        *,
        job: str,
        run_id: str,
        figures: Figures,
        store: MetricStore | None,
        reader: SparkStatusReader | None,
        interval: float,
        retention_days: float,
        disk_path: str | None = None,
        pusher: Pusher | None = None,
    ):
        self.job = job
        self.run_id = run_id
        self.figures = figures
        self.store = store
        self.reader = reader
        self.interval = interval
        self.retention_days = retention_days
        self.disk_path = disk_path
        self.pusher = pusher
        self.began = datetime.now(UTC)
        self._clock = time.monotonic()
        self._sent: dict[str, float] = {}  # what the last report said of each metric
        self._final: dict[str, float] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ the thread

    def start(self) -> None:
        if self.reader is not None:
            self.reader.begin()
        if self.interval > 0:
            self._thread = threading.Thread(
                target=self._loop, name=f"sparkmark-metrics-{self.run_id[:10]}", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop sampling without a last report (a run abandoned as a dead process would be)."""
        self._stop.set()

    def _loop(self) -> None:
        if self.reader is not None:
            try:  # Spark's UI answers its first REST request slowly: not as the run ends
                self.reader.warm_up(self.began)
            except Exception as exc:  # noqa: BLE001 - a metric never fails a run
                log.debug("run %s: Spark's status could not be read: %s", self.run_id, exc)
        while not self._stop.wait(self.interval):
            try:
                self._report(self.sample())
            except Exception as exc:  # noqa: BLE001 - a metric never fails a run
                log.debug("run %s: a metrics report failed: %s", self.run_id, exc)

    # ------------------------------------------------------------ values

    def sample(self) -> dict[str, float]:
        """The run's metrics now."""
        elapsed_ms = (time.monotonic() - self._clock) * 1000.0
        values: dict[str, float] = {}
        status = self.reader.read(self.began) if self.reader is not None else None
        if status is not None:
            values.update(gm.spark_values(status, elapsed_ms))
        else:
            values["glue.driver.aggregate.elapsedTime"] = float(round(elapsed_ms))
        if self.disk_path:
            try:
                usage = shutil.disk_usage(self.disk_path)
                values.update(gm.disk_values(usage.total, usage.used))
            except OSError:
                pass
        sources, streaming, version = self.figures()
        values.update(gm.run_values(sources, streaming))
        if version is not None:
            values["sparkmark.bookmark.version"] = float(version)
        return values

    def final(self) -> dict[str, float]:
        """The run's metrics as it ends, sampled once; the sampling thread stops."""
        with self._lock:
            if self._final is None:
                self._stop.set()
                try:
                    self._final = self.sample()
                except Exception as exc:  # noqa: BLE001 - a metric never fails a run
                    log.debug("run %s: its final metrics could not be read: %s", self.run_id, exc)
                    self._final = {}
            return dict(self._final)

    def ended(self, succeeded: bool, category: str | None, version: int | None = None) -> dict[str, float]:
        """Report the run's end: its final metrics with Glue's success and error
        counts (``category``: its error's). Returns what was reported."""
        values = self.final()
        values.update(gm.end_values(succeeded, category))
        if version is not None:
            values["sparkmark.bookmark.version"] = float(version)
        try:
            self._report(values)
        except Exception as exc:  # noqa: BLE001 - a metric never fails a run
            log.warning("run %s: its metrics could not be stored: %s", self.run_id, exc)
        if self.pusher is not None:
            self.pusher.close()
        return values

    # ------------------------------------------------------------ reports

    def _report(self, values: Mapping[str, float]) -> None:
        now = datetime.now(UTC)
        with self._lock:
            sent = gm.deltas(self._sent, values)
            self._sent = dict(values)
        if self.store is not None:
            points = []
            for name, value in sent.items():
                metric = gm.describe(name)
                for run in (self.run_id, "ALL"):
                    dims = {"JobName": self.job, "JobRunId": run, "Type": metric.type}
                    if metric.group:
                        dims["ObservabilityGroup"] = metric.group
                    points.append(
                        Datapoint.single(gm.NAMESPACE, name, dims_of(dims), now, value, metric.unit)
                    )
            self.store.put(points)
            self.store.set_latest(
                gm.NAMESPACE,
                {name: (value, gm.describe(name).unit) for name, value in values.items()},
                dims_of({"JobName": self.job, "JobRunId": self.run_id}),
                now,
                group=self.job,
            )
            if self.retention_days > 0:
                self.store.prune(now - timedelta(days=self.retention_days))
        if self.pusher is not None:
            self.pusher.push(self.job, self.run_id, values)


class MetricsSetup:
    """How a process's runs report their metrics, from the settings."""

    def __init__(
        self,
        *,
        interval: float = 30.0,
        spark_ui_url: str | None = None,
        retention_days: float = 15.0,
        otlp_endpoint: str | None = None,
        otlp_headers: str | None = None,
        record: bool = True,
    ):
        self.record = record  # False: nothing sampled, stored or pushed
        self.interval = interval
        self.spark_ui_url = spark_ui_url
        self.retention_days = retention_days
        self.otlp_endpoint = otlp_endpoint
        self.otlp_headers = otlp_headers

    @classmethod
    def from_settings(cls, settings: Any) -> MetricsSetup:
        headers = settings.otlp_headers.get_secret_value() if settings.otlp_headers else None
        return cls(
            interval=settings.metrics_interval,
            spark_ui_url=settings.spark_ui_url,
            retention_days=settings.metrics_retention_days,
            otlp_endpoint=settings.otlp_endpoint,
            otlp_headers=headers,
        )

    def for_run(
        self, job: str, run_id: str, figures: Figures, state: Any, temp_dir: str | None
    ) -> RunMetrics:
        pusher: Pusher | None = None
        if self.otlp_endpoint:
            from .otlp import OtlpPusher

            pusher = OtlpPusher(self.otlp_endpoint, self.otlp_headers)
        try:
            store: MetricStore | None = MetricStore(state)
        except Exception as exc:  # noqa: BLE001 - a metric never fails a run
            log.warning("run %s: its metrics will not be stored: %s", run_id, exc)
            store = None
        disk = temp_dir if temp_dir and "://" not in temp_dir else None
        return RunMetrics(
            job=job,
            run_id=run_id,
            figures=figures,
            store=store,
            reader=SparkStatusReader(self.spark_ui_url),
            interval=self.interval,
            retention_days=self.retention_days,
            disk_path=disk,
            pusher=pusher,
        )
