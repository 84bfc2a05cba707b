"""Reading what Spark reports about a run, for its Glue metrics: the stages and
executors from Spark's own monitoring REST API (``/api/v1``, served by the Spark UI),
and, when this process holds the driver's JVM, its heap and Hadoop's file-system
counters through Py4J.

The REST API is the one reader for every way Spark runs: a local master and a
cluster's driver serve it in this process (``SparkContext.uiWebUrl``); a Spark Connect
server serves it in its own, at the URL the settings give (``SPARKMARK_SPARK_UI_URL``).
Where it cannot be reached (``spark.ui.enabled=false``, or a Connect server whose UI
is not given), the run keeps its bookmark figures and Spark's metrics are left out,
said once in the log.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from .glue_metrics import SparkStatus, dpu_seconds, stage_key, stages_since

log = logging.getLogger("sparkmark.metrics")

TIMEOUT_SECONDS = 5.0
# Task summaries (for skewness) read per reading, at most: a run of thousands of stages
# gets the rest at its next readings rather than all at its end.
SUMMARIES_PER_READ = 50
PARALLEL_REQUESTS = 4
# Spark's median of one or two tasks is the longest of them (its quantile index is
# min(q·n, n-1)): max/median is 1, such a stage is never skewed, and its summary is not
# asked for.
MIN_TASKS_FOR_SKEW = 3
_WARM: set[str] = set()  # REST base URLs that have answered in this process


class SparkStatusReader:
    """Reads Spark's status for one run. Safe to call from the run's sampling thread
    and from the thread that ends the run."""

    def __init__(self, ui_url: str | None = None):
        self.configured_url = ui_url.rstrip("/") if ui_url else None
        self._lock = threading.Lock()
        self._app: tuple[str, str] | None = None  # (REST base URL, application id)
        self._task_times: dict[tuple[int, int], tuple[float, float]] = {}
        self._fs_base: dict[str, tuple[int, int]] | None = None
        self._said = False

    # ------------------------------------------------------------ the application

    @staticmethod
    def _context() -> Any:
        try:
            from pyspark import SparkContext
        except ImportError:
            return None
        return SparkContext._active_spark_context

    def _locate(self) -> tuple[str, str] | None:
        if self._app is not None:
            return self._app
        sc = self._context()
        url = None
        app = None
        if sc is not None:
            url = sc.uiWebUrl
            app = sc.applicationId
        if url is None and self.configured_url:
            url = self.configured_url
            apps = self._get(f"{url}/api/v1/applications?status=running")
            if isinstance(apps, list) and apps:
                app = str(apps[0].get("id"))
        if not url or not app:
            if sc is not None or self.configured_url:  # else Spark has not started yet
                self._say("Spark's UI is off (spark.ui.enabled=false) or not reachable")
            return None
        self._app = (f"{url.rstrip('/')}/api/v1/applications/{app}", app)
        return self._app

    def _say(self, why: str) -> None:
        if not self._said:
            self._said = True
            log.info("Spark's metrics are left out of this run's Glue metrics: %s", why)

    def _get(self, url: str) -> Any:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:
                return json.load(answer)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            self._say(f"{url} did not answer ({exc})")
            return None

    def _get_all(self, urls: list[str]) -> list[Any]:
        """Each URL's answer (None for one that failed), asked at once: the UI serves
        them in parallel, and a run's end waits for the slowest, not for their sum."""
        if len(urls) <= 1:
            return [self._get(url) for url in urls]
        with ThreadPoolExecutor(max_workers=min(len(urls), PARALLEL_REQUESTS)) as pool:
            return list(pool.map(self._get, urls))

    # ------------------------------------------------------------ the driver's JVM

    def _jvm(self) -> Any:
        sc = self._context()
        return getattr(sc, "_jvm", None) if sc is not None else None

    def _filesystems(self) -> dict[str, tuple[int, int]] | None:
        jvm = self._jvm()
        if jvm is None:
            return None
        try:
            found: dict[str, tuple[int, int]] = {}
            # By index: iterating the Java list through Py4J converts it first, ten times
            # the round trips (16 ms against 1.4 at each end of a run).
            every = jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
            for i in range(int(every.size())):
                stats = every.get(i)
                scheme = str(stats.getScheme())
                read, written = found.get(scheme, (0, 0))
                found[scheme] = (read + int(stats.getBytesRead()), written + int(stats.getBytesWritten()))
            return found
        except Exception as exc:  # noqa: BLE001 - an older Hadoop, or the JVM going away
            log.debug("Hadoop's file-system statistics could not be read: %s", exc)
            return None

    def begin(self) -> None:
        """Note the JVM's file-system counters as the run begins (none when Spark has
        not started yet: its counters then start at zero with it)."""
        with self._lock:
            self._fs_base = self._filesystems() or {}

    def _heap(self) -> tuple[int, int] | None:
        jvm = self._jvm()
        if jvm is None:
            return None
        try:
            runtime = jvm.java.lang.Runtime.getRuntime()
            return int(runtime.totalMemory()) - int(runtime.freeMemory()), int(runtime.maxMemory())
        except Exception:  # noqa: BLE001 - the JVM going away
            return None

    def warm_up(self, began: datetime) -> None:
        """Make the UI's first REST request early, in the sampling thread: the UI starts
        its REST service on that request, slowly. Once per UI in a process (a session's
        later runs find it started)."""
        with self._lock:
            located = self._locate()
        if located is None or located[0] in _WARM:
            return
        if self.read(began) is not None:
            _WARM.add(located[0])

    def executor_lives(self, now: datetime) -> list[tuple[str, int, float]] | None:
        """Each executor the application has had, the driver's entry too: (id, cores,
        seconds from its start to its removal, or to ``now`` when it is still there),
        from Spark's ``allexecutors``; None when Spark cannot be asked."""
        with self._lock:
            located = self._locate()
        if located is None:
            return None
        found = self._get(f"{located[0]}/allexecutors")
        if not isinstance(found, list):
            return None
        lives = []
        for executor in found:
            added = _when(executor.get("addTime"))
            if added is None:
                continue
            removed = _when(executor.get("removeTime")) or now
            lives.append(
                (
                    str(executor.get("id")),
                    int(executor.get("totalCores") or 0),
                    (removed - added).total_seconds(),
                )
            )
        return lives

    # ------------------------------------------------------------ one reading

    def read(self, began: datetime) -> SparkStatus | None:
        """Spark's status of the run that began at ``began``; None when Spark cannot be
        asked (not started yet, its UI off)."""
        with self._lock:
            located = self._locate()
            if located is None:
                return None
            base, _ = located
            stages, executors = self._get_all([f"{base}/stages?details=false", f"{base}/executors"])
            if not isinstance(stages, list) or not isinstance(executors, list):
                return None
            mine = stages_since(stages, began)
            done = [
                stage_key(stage)
                for stage in mine
                if stage.get("status") == "COMPLETE"
                and int(stage.get("numCompleteTasks") or 0) >= MIN_TASKS_FOR_SKEW
            ]
            wanted = [key for key in done if key not in self._task_times][:SUMMARIES_PER_READ]
            summaries = self._get_all(
                [f"{base}/stages/{k[0]}/{k[1]}/taskSummary?quantiles=0.5,1.0" for k in wanted]
            )
            for key, summary in zip(wanted, summaries, strict=True):
                run_times = summary.get("executorRunTime") if isinstance(summary, dict) else None
                if isinstance(run_times, list) and len(run_times) == 2:
                    self._task_times[key] = (float(run_times[0]), float(run_times[1]))
            filesystems = None
            now = self._filesystems()
            if now is not None:
                base_fs = self._fs_base or {}
                filesystems = {
                    scheme: (read - base_fs.get(scheme, (0, 0))[0], written - base_fs.get(scheme, (0, 0))[1])
                    for scheme, (read, written) in now.items()
                }
            sc = self._context()
            local = sc is None or str(sc.master).startswith("local")
            return SparkStatus(
                stages=mine,
                executors=executors,
                task_times=dict(self._task_times),
                heap=self._heap(),
                filesystems=filesystems,
                local_master=local and sc is not None,
            )


def _when(value: Any) -> datetime | None:
    """A time as Spark's REST API writes it (``2026-11-30T04:30:00.123GMT``)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.strptime(value.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None


def measured_capacity(reader: SparkStatusReader | None) -> dict[str, Any]:
    """What a run's executors measured as it ends: Glue's DPUSeconds, and how many
    executors it was given in all (an auto-scaling run's come and go); nothing when
    Spark cannot be asked."""
    lives = reader.executor_lives(datetime.now(UTC)) if reader is not None else None
    if not lives:
        return {}
    return {
        "dpu_seconds": dpu_seconds(lives),
        "executors_added": sum(1 for name, _, _ in lives if name != "driver"),
    }
