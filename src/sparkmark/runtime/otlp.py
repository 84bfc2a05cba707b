"""Pushing a run's metrics to an OpenTelemetry collector over OTLP/HTTP, with the
OpenTelemetry SDK (the ``otlp`` extra: ``pip install 'sparkmark[otlp]'``).

Each Glue metric is an observable gauge under its Glue name (OpenTelemetry's names
are dotted too; its instrument names are case-insensitive, and the SDK sends them in
lower case: ``glue.driver.aggregate.recordsread``), with Glue's dimensions as
attributes (``JobName``, ``JobRunId``, ``Type``). A report exports at once (``force_flush``); the run's end shuts the
provider down. A collector that does not answer costs the run a logged warning,
never its result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping

from ..errors import ConfigError
from . import glue_metrics as gm

log = logging.getLogger("sparkmark.metrics")

NEVER_MS = 24 * 3600 * 1000  # the SDK's own timer stays idle: each report exports itself


def metrics_url(endpoint: str) -> str:
    """OTLP/HTTP's metrics path on a collector's base URL, as OpenTelemetry's variables
    give it (a URL already ending in ``/v1/metrics`` is kept)."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/metrics") else endpoint + "/v1/metrics"


def parse_headers(text: str | None) -> dict[str, str]:
    """``key=value,key2=value2`` (OpenTelemetry's form) as headers."""
    headers = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"SPARKMARK_OTLP_HEADERS: {key.strip()!r} is not key=value")
        headers[key.strip()] = value.strip()
    return headers


class OtlpPusher:
    """One run's metrics, pushed to ``endpoint``."""

    def __init__(self, endpoint: str, headers: str | None = None):
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
            from opentelemetry.sdk.resources import Resource
        except ImportError:
            raise ConfigError(
                "SPARKMARK_OTLP_ENDPOINT is set, but OpenTelemetry's SDK is not installed: "
                "pip install 'sparkmark[otlp]'"
            ) from None
        self.url = metrics_url(endpoint)
        exporter = OTLPMetricExporter(endpoint=self.url, headers=parse_headers(headers), timeout=5)
        self._reader = PeriodicExportingMetricReader(exporter, export_interval_millis=NEVER_MS)
        self._provider = MeterProvider(
            metric_readers=[self._reader], resource=Resource.create({"service.name": "sparkmark"})
        )
        self._meter = self._provider.get_meter("sparkmark")
        self._lock = threading.Lock()
        self._values: dict[str, float] = {}
        self._attributes: dict[str, str] = {}
        self._made: set[str] = set()
        self._closed = False

    def _observe(self, name: str):
        def callback(_options) -> Iterable:
            from opentelemetry.metrics import Observation

            with self._lock:
                if name not in self._values:
                    return []
                metric = gm.describe(name)
                return [Observation(self._values[name], {**self._attributes, "Type": metric.type})]

        return callback

    def _instrument(self, name: str) -> None:
        if name in self._made:
            return
        metric = gm.describe(name)
        unit = {"Bytes": "By", "Milliseconds": "ms", "Percent": "%", "Count": "1", "Gigabytes": "GBy"}.get(
            metric.unit, "1"
        )
        self._meter.create_observable_gauge(
            name, callbacks=[self._observe(name)], unit=unit, description=metric.meaning
        )
        self._made.add(name)

    def push(self, job: str, run_id: str, values: Mapping[str, float]) -> None:
        if self._closed:
            return
        with self._lock:
            self._attributes = {"JobName": job, "JobRunId": run_id}
            self._values = dict(values)
        for name in values:
            self._instrument(name)
        if not self._provider.force_flush(timeout_millis=10_000):
            log.warning("run %s: its metrics could not be pushed to %s", run_id, self.url)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._provider.shutdown(timeout_millis=5_000)
