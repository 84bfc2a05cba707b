"""One run of a job, as a transaction: it holds the job's lease (renewed by a heartbeat
thread), the state each source will commit, the outputs staged for publishing, and the
run's metrics; ``commit()`` records them at once, then publishes the outputs.

Both front ends hold a ``JobRun``: the native ``sparkmark.Job`` and the Glue façade's
``Job``/``GlueContext``. Nothing outside this class reaches into its state: sources
and sinks go through ``claim_source``/``stage_commit`` and ``claim_sink``/``add_output``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from .. import outputs as run_outputs
from ..connections import Connections
from ..engine import jdbc as jdbc_keys
from ..engine import run_logs
from ..engine.faults import crash_point
from ..engine.masking import mask_arguments, mask_logging
from ..engine.models import (
    BookmarkOption,
    BookmarkVersion,
    CtxCommit,
    OutputRecord,
    RunRecord,
    RunState,
    new_run_id,
)
from ..engine.names import check_run_id, some_of
from ..engine.owner import this_process
from ..engine.preview import script_identity
from ..engine.publish import PublishError
from ..engine.store import StateStore
from ..errors import ArgumentError, OutputLost, RunFinished, SourceError, StateStoreError
from ..sources.registry import FILES, kind_of_state
from . import stopping
from .failures import reading_of
from .insights import category_of_state, failure_message
from .run_ledger import RunLedger
from .run_metrics import MetricsSetup
from .spark_status import measured_capacity

log = logging.getLogger("sparkmark.run")

_RUNNING: dict[str, JobRun] = {}
_STARTED: list[JobRun] = []
_LOCK = threading.Lock()
_ENDING: list[threading.Thread] = []  # runs' last metrics samples still being taken
_hooks_installed = False
_EXPECTED: tuple[str, int] | None = None  # the run the host is starting: see expect_run


def running_runs() -> list[JobRun]:
    """Runs of this process that have not ended yet."""
    with _LOCK:
        return list(_RUNNING.values())


def started_runs() -> list[JobRun]:
    """Every run this process started, in order."""
    with _LOCK:
        return list(_STARTED)


def settle_metrics(timeout: float | None = 30.0) -> None:
    """Wait until every ended run of this process has its last metrics sample reported
    and kept with its record (a host does before it stops Spark or says a job ended)."""
    with _LOCK:
        ending = list(_ENDING)
    for thread in ending:
        thread.join(timeout)


class _Heartbeat(threading.Thread):
    def __init__(self, run: JobRun, interval: float):
        super().__init__(name=f"sparkmark-lease-{run.run_id[:10]}", daemon=True)
        self.run_ = run
        self.interval = interval
        self.stopped = threading.Event()

    def run(self) -> None:
        job = self.run_
        while not self.stopped.wait(self.interval):
            try:
                if not job.store.heartbeat(job.name, job.run_id, job.lease_seconds):
                    log.error(
                        "run %s lost the lease of job %s; its commit will be refused", job.run_id, job.name
                    )
                    return
            except Exception as exc:  # noqa: BLE001 - keep trying: a blip must not kill the run
                log.warning("could not renew the lease of run %s: %s", job.run_id, exc)


class JobRun(RunLedger):
    """One run of job ``name``. Creating it starts the run (takes the lease, records
    the run); ``commit()``, ``finish_without_commit()`` or ``fail()`` end it. What the
    run's sources and sinks hand it while it works is kept by :class:`RunLedger`."""

    def __init__(
        self,
        name: str,
        *,
        store: StateStore,
        option: BookmarkOption,
        args: Mapping[str, str],
        temp_dir: str,
        lease_seconds: float,
        connections: Connections,
        bookmark_from: str | None = None,
        bookmark_to: str | None = None,
        attempt: int | None = None,
        run_id: str | None = None,
        metrics_setup: MetricsSetup | None = None,
    ):
        self.name = name
        self.store = store
        self.option = option
        self.args = dict(args)  # as given, secrets included: the script's own, never recorded
        self.temp_dir = temp_dir
        self.lease_seconds = lease_seconds
        self.connections = connections
        self.outputs: list[OutputRecord] = []  # this run's exactly-once writes, staged
        self._pending: dict[str, CtxCommit] = {}
        self._sources: dict[str, dict[str, Any]] = {}
        self._sinks: list[dict[str, Any]] = []
        self._quality: dict[str, dict[str, Any]] = {}  # ruleset name → outcome summary
        self._streams: list[tuple[Any, str | None]] = []  # stream sources read, with their ctx
        self._stream_metrics: dict[str, Any] | None = None
        self._batch = threading.local()  # the micro-batch whose function is running, per thread
        self._databases: dict[str, jdbc_keys.Database] = {}  # by JDBC URL, with credentials
        self._started = time.monotonic()
        self._committed = False
        self._script = script_identity(sys.argv[0] if sys.argv else None)
        self._script_path = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else None
        self._glue: dict[str, float] = {}  # the run's Glue metrics, as it ended
        self._insight: dict[str, Any] | None = None

        self.range: tuple[BookmarkVersion, BookmarkVersion] | None = None
        if bookmark_from is not None:
            if bookmark_to is None:
                raise ArgumentError("--job-bookmark-from needs --job-bookmark-to (a run id)")
            self.range = (
                store.version_after_run(name, bookmark_from),
                store.version_after_run(name, bookmark_to),
            )

        given_id, given_attempt = _take_expected()
        from ..spark_lines import runtime_shown  # PySpark: the run's session is up by now

        self._runtime = runtime_shown()
        self.record: RunRecord = store.start_run(
            job_name=name,
            run_id=run_id or given_id or new_run_id(),
            attempt=given_attempt if attempt is None else attempt,
            option=option,
            arguments=mask_arguments(dict(args)),
            owner=this_process(),
            lease_seconds=lease_seconds,
            metrics={"runtime": self._runtime},  # the Spark it runs on, shown while it runs
        )
        self.base: BookmarkVersion | None = (
            store.get_version(name, self.record.base_version) if self.record.base_version else None
        )
        with _LOCK:
            _RUNNING[self.run_id] = self
            _STARTED.append(self)
        run_logs.run_started(name, self.run_id)  # a run from a terminal: its log, followed live
        _install_process_hooks()
        self._heartbeat = _Heartbeat(self, max(lease_seconds / 3, 0.05))
        self._heartbeat.start()
        self._sampler = (metrics_setup or MetricsSetup(record=False)).for_run(
            name, self.run_id, self._figures, store, temp_dir
        )
        self._sampler.start()
        # Holding the job's lease, finish what earlier runs of the job left half-done.
        run_outputs.recover(store, name, running_run=self.run_id, connections=connections)
        log.info(
            "job %s: run %s started (%s, bookmark version %d)",
            name,
            self.run_id,
            option.value,
            self.record.base_version,
        )

    # ------------------------------------------------------------ state

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def finished(self) -> bool:
        return self.run_id not in _RUNNING

    @property
    def metrics(self) -> dict[str, Any]:
        metrics = {
            "sources": dict(self._sources),
            "sinks": list(self._sinks),
            "duration_seconds": round(time.monotonic() - self._started, 3),
            "runtime": self._runtime,
        }
        if self._script is not None:
            metrics["script"] = self._script
        if self._quality:
            metrics["quality"] = dict(self._quality)
        if self._stream_metrics is not None:
            metrics["streaming"] = dict(self._stream_metrics)
        metrics.update({k: dict(v) for k, v in (("glue", self._glue), ("insight", self._insight)) if v})
        return metrics

    def _figures(self) -> tuple[dict[str, Any], dict[str, Any] | None, int | None]:
        """The sources' figures, the stream's summary and the bookmark version, for the sampler."""
        return (
            dict(self._sources),
            self._stream_metrics,
            self.record.committed_version or self.record.base_version,
        )

    def _report_end(self, succeeded: bool, category: str | None = None) -> None:
        """The run's last Glue-metrics sample, its report and its place in the run's
        record, taken after the run has ended (its commit is not kept waiting for Spark's
        status) in a thread of its own: :func:`settle_metrics` waits for it, and so does
        the interpreter as it exits."""
        version = self.record.committed_version if succeeded else None
        ending = threading.Thread(
            target=self._keep_final_metrics,
            args=(succeeded, category, version),
            name=f"sparkmark-metrics-end-{self.run_id[:10]}",
        )
        with _LOCK:
            _ENDING.append(ending)
        self.store.expect_late_write()  # the store is not closed under it
        ending.start()

    def _keep_final_metrics(self, succeeded: bool, category: str | None, version: int | None) -> None:
        try:
            self._sampler.ended(succeeded, category, version)
            self._glue = self._sampler.final()
            kept: dict[str, Any] = {}
            if self._glue:
                kept["glue"] = dict(self._glue)
            capacity = measured_capacity(self._sampler.reader)
            if capacity:
                kept["capacity"] = capacity
            if kept:
                self.store.add_run_metrics(self.run_id, kept)
        except Exception as exc:  # noqa: BLE001 - a metric never fails a run
            log.warning("run %s: its final Glue metrics could not be kept: %s", self.run_id, exc)
        finally:
            self.store.late_write_done()
            with _LOCK:
                if threading.current_thread() in _ENDING:
                    _ENDING.remove(threading.current_thread())

    def reading(self) -> str | None:
        """What this run has read, for an error that names no file of its own."""
        return reading_of(self._sources)

    def require_running(self) -> None:
        if self.finished:
            raise RunFinished(f"run {self.run_id} of job {self.name!r} has already ended; start a new run")

    # ------------------------------------------------------------ ending

    def _check_inputs(self) -> None:
        """The bookmark records each file as it was listed; Spark read what was there when
        it read. A file replaced or rewritten in between would be recorded as a version
        that was never read (and the one read, read again next run), so when a file no
        longer lists as it did, the run commits nothing and the next run lists it anew."""
        from ..engine.listing import changed_since_listed

        for commit in self._pending.values():
            if kind_of_state(commit.state) is not FILES or not commit.files:
                continue
            growth_ok = commit.state.get("options", {}).get("modifiedFiles") == "new-bytes"
            changed = changed_since_listed(
                [(f.path, f.mtime_ms, f.size, f.etag) for f in commit.files], growth_ok=growth_ok
            )
            if changed:
                shown = some_of(changed)
                raise SourceError(
                    f"source {commit.ctx}: {len(changed)} file(s) were replaced or rewritten after they "
                    f"were listed, while the run read them ({shown}); the bookmark would record a "
                    "version that was not the one read. Nothing was committed: the next run lists "
                    "them again and reads each once"
                )

    def _check_staged(self) -> None:
        """Every write this run staged must still be there before the bookmark moves past
        the input it came from; otherwise the run commits nothing."""
        problems = []
        for record in self.outputs:
            try:
                found = run_outputs.gone(record, self._databases, self.connections)
            except Exception as exc:  # noqa: BLE001 - a target we cannot look at is not known to be whole
                found = f"it could not be checked ({exc})"
            if found:
                problems.append(f"the write {record.ctx} -> {record.target}: {found}")
        if problems:
            raise OutputLost(
                f"run {self.run_id} of job {self.name!r} staged output that is gone before its commit: "
                + "; ".join(problems)
                + ". Nothing was committed: the bookmark stays where it was, so the next run reads "
                "the same input again"
            )

    def _publish(self) -> None:
        """Publish this run's committed writes; a failure leaves them for the next run."""
        problems = []
        lost = False
        for record in self.outputs:
            try:
                self._sinks.append(
                    run_outputs.publish_output(self.store, record, self._databases, self.connections)
                )
            except Exception as exc:  # noqa: BLE001 - each write's problem is reported; the others still publish
                problems.append(f"{record.ctx} -> {record.target}: {exc}")
                lost = lost or isinstance(exc, OutputLost)
        if problems:
            ending = (
                " Rows of this run are lost from its output (see above): rewind the bookmark to "
                f"before run {self.run_id} (`sparkmark bookmark reset {self.name} --run-id <the run before it>`) and re-run it"
                if lost
                else " Nothing is lost: the next run of the job, "
                f"or `sparkmark outputs recover {self.name}`, finishes publishing it"
            )
            raise PublishError(
                f"run {self.run_id} of job {self.name!r} committed, but publishing its output "
                "failed: " + "; ".join(problems) + "." + ending
            )

    def _discard(self, why: str) -> None:
        for record in self.outputs:
            try:
                if not run_outputs.discard_output(self.store, record, self._databases, self.connections):
                    continue
                log.warning(
                    "job %s: write %s (%s -> %s) discarded: %s",
                    self.name,
                    record.key,
                    record.ctx,
                    record.target,
                    why,
                )
            except Exception as exc:  # noqa: BLE001 - discarding goes on for the other writes; this one is logged
                log.error(
                    "job %s: could not discard write %s yet (%s); the next run will: %s",
                    self.name,
                    record.key,
                    record.target,
                    exc,
                )

    def _end(self) -> None:
        self._heartbeat.stopped.set()
        with _LOCK:
            _RUNNING.pop(self.run_id, None)

    def abandon(self) -> None:
        """Leave the run as a process that died would: RUNNING in the store, with a lease
        nobody renews, and nothing published or discarded. The next run of the job
        takes over once the lease is free (at once, when this process is the owner)."""
        self._end()
        self._sampler.stop()

    def commit(self) -> RunRecord:
        """Persist every source's new state atomically and mark the run SUCCEEDED.

        With bookmarks disabled or paused the run succeeds and the bookmark stays.
        """
        if self.finished:
            if self._committed:
                log.warning("run %s was already committed; this commit does nothing", self.run_id)
                return self.record
            raise RunFinished(
                f"run {self.run_id} already ended as {self.store.get_run(self.run_id).state}; "
                "it cannot commit"
            )
        with stopping.deferred():  # a stop signal waits for the commit and the publish
            return self._commit()

    def _commit(self) -> RunRecord:
        crash_point("staged")
        try:
            self._check_inputs()
            self._check_staged()
            self._store_commit()
        except Exception as exc:
            self.fail(exc)
            raise
        crash_point("committed")
        self._committed = True
        self._end()
        try:
            self._publish()
        finally:
            self.record = self.store.get_run(self.run_id)
            self._report_end(self.record.state is RunState.SUCCEEDED)
        return self.record

    def _store_commit(self) -> None:
        """The commit's transaction. When the connection to the store is lost in it, the
        run's row says whether it landed (the commit is all or nothing, and refused
        once the run has ended): landed, go on; not landed, try once more."""
        for attempt in (1, 2):
            try:
                if self.option is BookmarkOption.ENABLE:
                    version = self.store.commit(self.record, self._pending.values(), metrics=self.metrics)
                    log.info(
                        "job %s: run %s committed bookmark version %d",
                        self.name,
                        self.run_id,
                        version.version,
                    )
                else:
                    self.store.finish_run(
                        self.run_id, RunState.SUCCEEDED, metrics=self.metrics, commit_outputs=True
                    )
                return
            except StateStoreError as exc:
                try:
                    state = self.store.get_run(self.run_id).state
                except StateStoreError:
                    raise StateStoreError(
                        f"{exc}. Run {self.run_id} of job {self.name!r} could not finish its commit; "
                        "nothing was committed unless the store received the commit before the "
                        f"connection was lost (`sparkmark runs show {self.run_id}` says which once "
                        "the store is back). Re-run the job: a committed run is not repeated"
                    ) from None
                if state is RunState.SUCCEEDED:
                    log.warning(
                        "run %s: the connection was lost after the commit landed; going on", self.run_id
                    )
                    return
                if state is not RunState.RUNNING or attempt == 2:
                    raise StateStoreError(
                        f"{exc}. Nothing was committed for run {self.run_id} of job {self.name!r}; re-run the job"
                    ) from None
                log.warning(
                    "run %s: the connection to the state store was lost in the commit; retrying: %s",
                    self.run_id,
                    exc,
                )

    def finish_without_commit(self) -> RunRecord:
        """End a run whose script finished without calling commit(): as on Glue, the
        run succeeds and the bookmark does not advance."""
        if self.finished:
            return self.record
        log.warning(
            "job %s: run %s ended without job.commit(); the bookmark did not advance", self.name, self.run_id
        )
        self._end()
        # With bookmarks on, the next run reads this run's input again: publishing its
        # output too would write it twice.
        publish = self.option is not BookmarkOption.ENABLE
        self.record = self.store.finish_run(
            self.run_id, RunState.SUCCEEDED, metrics=self.metrics, commit_outputs=publish
        )
        self._report_end(True)
        if publish:
            self._publish()
        else:
            self._discard("the run ended without job.commit(), so the next run reads its input again")
        return self.record

    def fail(self, error: BaseException | str, state: RunState = RunState.FAILED) -> RunRecord:
        """End the run without committing anything."""
        if self.finished:
            return self.record
        self._end()
        message, found = failure_message(error, self.reading(), self._script_path)
        self._insight = found.as_dict() if found is not None else None
        try:
            self.record = self.store.finish_run(self.run_id, state, error=message, metrics=self.metrics)
        except RunFinished:
            self.record = self.store.get_run(self.run_id)
        except StateStoreError as exc:
            log.error(
                "job %s: run %s %s (%s), but the state store could not record it: %s. It stays "
                "RUNNING there until the next run of the job takes its lease over",
                self.name,
                self.run_id,
                state.value,
                message,
                exc,
            )
            return self.record
        log.error("job %s: run %s %s: %s", self.name, self.run_id, state.value, message)
        self._report_end(False, found.category if found is not None else category_of_state(state))
        self._discard(f"run {self.run_id} ended {state.value} without committing")
        return self.record


def expect_run(run_id: str | None, attempt: int = 0) -> None:
    """Said by whoever hosts a script (``host.run_request``) before it runs: the first
    run the script starts is run ``run_id``, attempt ``attempt``, as its scheduler
    chose; ``None`` forgets it (the host says so after the script, so a run it did not
    start never takes the id)."""
    global _EXPECTED  # noqa: PLW0603 - one expected run per process at a time
    with _LOCK:
        _EXPECTED = None if run_id is None else (check_run_id(run_id), attempt)


def _take_expected() -> tuple[str | None, int]:
    """The run id and attempt the host expects, given once: to the first run only."""
    global _EXPECTED
    with _LOCK:
        found, _EXPECTED = _EXPECTED, None
    return found if found is not None else (None, 0)


def _install_process_hooks() -> None:
    """For scripts run with plain ``python``: an uncaught exception fails the run, and
    a run still open at exit ends like a Glue run that never called commit()."""
    global _hooks_installed  # noqa: PLW0603 - the hooks are per process
    stopping.reinstall()  # Spark, started by now, took SIGINT for itself
    mask_logging()
    if _hooks_installed:
        return
    _hooks_installed = True
    previous_hook = sys.excepthook

    def _excepthook(exc_type, exc, tb):
        for run in running_runs():
            run.fail(exc, RunState.STOPPED if exc_type is KeyboardInterrupt else RunState.FAILED)
        previous_hook(exc_type, exc, tb)

    sys.excepthook = _excepthook

    @atexit.register
    def _at_exit():
        for run in running_runs():
            with contextlib.suppress(Exception):  # the store may be gone at interpreter exit
                run.finish_without_commit()
