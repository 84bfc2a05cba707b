"""Supervising a scheduler's actions (job runs and crawls): starting their processes
once a slot is reserved, watching them end, applying timeouts and retries, and
closing their records. ``Scheduler`` holds this concern; its own module fires
triggers and follows workflow runs."""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime
from pathlib import Path

from sqlalchemy.exc import IntegrityError

from .. import runtimes
from ..crawler.store import CrawlerStore
from ..engine import run_logs
from ..engine.masking import MASK
from ..engine.models import BookmarkOption, RunState
from ..engine.schema import utcnow
from ..engine.sealing import Sealer
from ..engine.store import StateStore
from ..errors import ConfigError, NotFound, RunFinished, SparkmarkError
from ..host.handover import read_exit_error
from ..host.request import RunRequest
from ..settings import Settings
from . import capacity
from .definition import JobDefinition, Project, is_url
from .launcher import Launcher, LaunchSpec, log_tail
from .records import ActionRecord, ActionState, WorkflowRunStatus, moves_bookmark
from .store import WorkflowStore

log = logging.getLogger("sparkmark.scheduler")

_JOB_STATES = {
    s.value: ActionState(s.value)
    for s in (RunState.SUCCEEDED, RunState.FAILED, RunState.STOPPED, RunState.TIMEOUT)
}
_CRAWL_STATES = {
    "SUCCEEDED": ActionState.SUCCEEDED,
    "FAILED": ActionState.FAILED,
    "CANCELLED": ActionState.CANCELLED,
}


class ActionSupervisor:
    """The actions this process supervises: their processes, from start to end."""

    project: Project
    state: StateStore
    store: WorkflowStore
    crawlers: CrawlerStore
    launcher: Launcher
    owner: str
    host: str
    settings: Settings
    _told_serial: set[str]
    _told_forced: set[str]

    @property
    def sealer(self) -> Sealer:
        raise NotImplementedError  # the scheduler's, made once

    def _mine(self, action: ActionRecord) -> bool:
        return action.supervisor == self.owner

    def _watch(self, now: datetime) -> None:
        for action in self.store.active_actions():
            if not self._mine(action) or action.state is not ActionState.RUNNING:
                continue
            if action.host in (None, self.host):
                status = self.launcher.exit_status(action.action_id, action.pid, action.log_path)
            else:
                status = self._remote_status(action)
            if status is None:
                self._police(action, now)
            else:
                self._ended(action, None if status is False else status, now)

    def _remote_status(self, action: ActionRecord) -> int | bool | None:
        """How a process on another host is doing, from what it records in the state
        store: None while it runs, False when it ended (its exit status unknown here)."""
        if action.kind == "JOB":
            try:
                run = self.state.get_run(action.action_id)
            except NotFound:
                return None  # not started yet, or it died before recording its run
            if run.state is not RunState.RUNNING:
                return False
            lease = self.state.run_lease(action.name, action.action_id)
            alive = lease is not None and lease.expires_at > utcnow()
            return None if alive else False
        record = self.crawlers.crawl(action.action_id)
        return False if record and record.state != "RUNNING" else None

    def _police(self, action: ActionRecord, now: datetime) -> None:
        """A running action: stop it when its workflow run stops, or when it timed out."""
        if action.workflow_run_id:
            run = self.store.workflow_run(action.workflow_run_id)
            if run.status is WorkflowRunStatus.STOPPING:
                self._kill(
                    action,
                    ActionState.CANCELLED if action.kind == "CRAWLER" else ActionState.STOPPED,
                    "stopped with its workflow run",
                    now,
                )
                return
        if action.timeout_minutes and action.started_at is not None:
            elapsed = (now - action.started_at).total_seconds() / 60
            if elapsed > action.timeout_minutes:
                self._kill(
                    action,
                    ActionState.TIMEOUT if action.kind == "JOB" else ActionState.CANCELLED,
                    f"timed out after {action.timeout_minutes:g} minutes",
                    now,
                )

    def _kill(self, action: ActionRecord, state: ActionState, why: str, now: datetime) -> None:
        log.warning("%s %s run %s: %s", action.kind.lower(), action.name, action.action_id, why)
        # The run is closed first, with the reason: the process, stopping on its signal,
        # then finds it ended (and records nothing over it). A process on another host
        # cannot be signalled from here: with its run closed and its lease gone, it
        # cannot commit, and it fails at its next state change.
        self._close_records(action, state, why)
        if action.host in (None, self.host):
            self.launcher.kill(action.action_id, action.pid)
        self.store.finish_action(action, state, now, error=why)

    def _close_records(self, action: ActionRecord, state: ActionState, why: str) -> None:
        """End the job run or crawl the killed process left open in the state store."""
        if action.kind == "JOB":
            try:
                run = self.state.get_run(action.action_id)
            except NotFound:
                return
            if run.state is RunState.RUNNING:
                with contextlib.suppress(RunFinished):
                    self.state.finish_run(action.action_id, RunState(state.value), error=why)
        else:
            record = self.crawlers.crawl(action.action_id)
            if record and record.state == "RUNNING":
                self.crawlers.finish(
                    action.name, action.action_id, state.value, {}, [{"path": "(crawl)", "error": why}]
                )

    def _ended(self, action: ActionRecord, code: int | None, now: datetime) -> None:
        state, error = self._outcome(action, code, now)
        retry = False
        if state is ActionState.FAILED and action.kind == "JOB":
            job = self.project.jobs.get(action.name)
            stopping = (
                action.workflow_run_id is not None
                and self.store.workflow_run(action.workflow_run_id).status is not WorkflowRunStatus.RUNNING
            )
            retry = job is not None and action.attempt < job.MaxRetries and not stopping
        next_id = self.store.finish_action(action, state, now, error=error, retry=retry)
        log.info(
            "%s %s run %s (attempt %d): %s%s",
            action.kind.lower(),
            action.name,
            action.action_id,
            action.attempt,
            state.value,
            f"; retrying as {next_id}" if next_id else "",
        )

    def _outcome(
        self, action: ActionRecord, code: int | None, now: datetime
    ) -> tuple[ActionState, str | None]:
        tail = log_tail(action.log_path)
        if action.kind == "JOB":
            try:
                run = self.state.get_run(action.action_id)
            except NotFound:
                run = None
            if run is not None and run.state is not RunState.RUNNING:
                return _JOB_STATES[run.state.value], run.error
            why = "its process ended" + (
                f" with status {code}" if code is not None else " and its exit status is unknown"
            )
            if run is not None:  # the process died before the run could end itself
                self._close_records(action, ActionState.FAILED, why)
                return ActionState.FAILED, f"{why}: {tail}" if tail else why
            told = read_exit_error(action.log_path)  # a Python shell run's own line
            ended = (
                (ActionState.SUCCEEDED, None)
                if code == 0
                else (ActionState.FAILED, told or (f"{why}: {tail}" if tail else why))
            )
            self._record_run(action, ended[0], ended[1], now)
            return ended
        record = self.crawlers.crawl(action.action_id)
        if record and record.state in _CRAWL_STATES:
            errors = record.errors
            return _CRAWL_STATES[record.state], (
                errors[0]["error"] if errors and record.state != "SUCCEEDED" else None
            )
        if record:
            self._close_records(action, ActionState.FAILED, "its process died")
        return (
            (ActionState.SUCCEEDED, None)
            if code == 0
            else (ActionState.FAILED, f"the crawl process ended with status {code}: {tail}")
        )

    def _record_run(self, action: ActionRecord, state: ActionState, error: str | None, now: datetime) -> None:
        """A job's process ended without a run record (it died before its script could
        record one): the run is recorded here, so the run store holds every run."""
        option = action.arguments.get("--job-bookmark-option", BookmarkOption.DISABLE.value)
        job = self.project.jobs.get(action.name)
        if job is not None and job.python_shell:
            option = BookmarkOption.DISABLE.value  # Python shell jobs have no bookmarks
        # Recorded meanwhile, or the store is out of reach: the action keeps the outcome.
        with contextlib.suppress(SparkmarkError, IntegrityError):
            self.state.record_ended_run(
                job_name=action.name,
                run_id=action.action_id,
                attempt=action.attempt,
                option=BookmarkOption(option) if option in set(BookmarkOption) else BookmarkOption.DISABLE,
                arguments=action.arguments,
                state=RunState(state.value),
                started_at=action.started_at or action.queued_at,
                error=error,
                ended_at=now,  # the pass that saw it end, which starts what waited for it
            )

    def _launch(self, now: datetime) -> None:
        stopping: dict[str, bool] = {}
        for action in self.store.active_actions():
            if not self._mine(action) or action.state is not ActionState.WAITING:
                continue
            if action.workflow_run_id:
                if action.workflow_run_id not in stopping:
                    run = self.store.workflow_run(action.workflow_run_id)
                    stopping[action.workflow_run_id] = run.status is not WorkflowRunStatus.RUNNING
                if stopping[action.workflow_run_id]:
                    self._stop_unstarted(action, now)
                    continue
            try:
                spec = self._spec(action)
            except ConfigError as exc:
                self.store.finish_action(action, ActionState.ERROR, now, error=str(exc))
                continue
            if action.kind == "JOB" and (
                self._flex_waits(action, now) or not self._reserve(action, spec, now)
            ):
                continue  # waits for capacity, or for a running one to end
            try:
                pid = self.launcher.start(spec)
            except OSError as exc:
                self.store.finish_action(action, ActionState.ERROR, now, error=f"could not start: {exc}")
                continue
            if action.kind == "JOB":
                self.store.set_pid(action.action_id, pid)
            else:
                self.store.mark_started(
                    action.action_id,
                    host=self.host,
                    pid=pid,
                    supervisor=self.owner,
                    log_path=str(spec.log_path),
                    now=now,
                )
            log.info(
                "%s %s: run %s started (attempt %d, pid %d, log %s)",
                action.kind.lower(),
                action.name,
                action.action_id,
                action.attempt,
                pid,
                spec.log_path,
            )

    def _reserve(self, action: ActionRecord, spec: LaunchSpec, now: datetime) -> bool:
        """Whether a job run may start now: up to the job's MaxConcurrentRuns run at once
        (runs beyond it wait, queued, as with Glue's job run queuing), and runs that
        move the bookmark one at a time, since each commit builds on the one before."""
        limit = self.project.jobs[action.name].MaxConcurrentRuns
        exclusive = moves_bookmark(action.arguments)
        if exclusive:
            lease = self.state.get_lease(action.name)
            if lease is not None and lease.expires_at > now:  # a run started by hand
                return False
        reserved = self.store.reserve_start(
            action,
            limit=limit,
            exclusive=exclusive,
            host=self.host,
            supervisor=self.owner,
            log_path=str(spec.log_path),
            now=now,
        )
        if not reserved and exclusive and limit > 1 and action.action_id not in self._told_serial:
            self._told_serial.add(action.action_id)
            log.info(
                "job %s: run %s waits for the running one: with job-bookmark-enable, runs of a job "
                "move its bookmark one at a time (MaxConcurrentRuns %d applies to runs without it)",
                action.name,
                action.action_id,
                limit,
            )
        return reserved

    def _flex_waits(self, action: ActionRecord, now: datetime) -> bool:
        """Whether a FLEX run waits: while standard runs hold its Spark (running on the
        same master, or queued to), as Glue's Flex runs wait for capacity. After
        ``capacity.FLEX_FORCED_START_MINUTES`` it is started anyway, as Glue forces a start."""
        job = self.project.jobs.get(action.name)
        if job is None or execution_class(action, job) != "FLEX":
            return False
        waited = (now - action.queued_at).total_seconds() / 60
        if waited >= capacity.FLEX_FORCED_START_MINUTES:
            if action.action_id not in self._told_forced:
                self._told_forced.add(action.action_id)
                log.info(
                    "job %s: FLEX run %s waited %.0f minutes: forced start",
                    job.Name,
                    action.action_id,
                    waited,
                )
            return False
        master = self._master(job)
        for other in self.store.active_actions():
            held = self.project.jobs.get(other.name) if other.kind == "JOB" else None
            if (
                held is not None
                and other.action_id != action.action_id
                and not held.python_shell
                and execution_class(other, held) != "FLEX"
                and self._master(held) == master
            ):
                return True
        return False

    def _master(self, job: JobDefinition) -> str:
        """The Spark master a job's runs use: its own, else the settings'."""
        return job.Spark.master or self.settings.spark_master

    def _stop_unstarted(self, action: ActionRecord, now: datetime) -> None:
        self.store.finish_action(
            action, ActionState.STOPPED, now, error="its workflow run was stopped before it started"
        )

    def _spec(self, action: ActionRecord) -> LaunchSpec:
        log_path = run_logs.log_path(self.settings.home, action.kind, action.name, action.action_id)
        if action.kind == "CRAWLER":
            if action.name not in self.project.crawlers:
                raise ConfigError(f"crawler {action.name!r} is no longer declared in {self.project.path}")
            return LaunchSpec(
                action.action_id,
                "CRAWLER",
                action.name,
                0,
                {"argv": ["crawler", "run", action.name, "--crawl-id", action.action_id]},
                {"SPARKMARK_CONFIG": str(self.project.path)},
                log_path,
            )
        job = self.project.job(action.name)
        if not is_url(job.Script) and not Path(job.Script).is_file():
            raise ConfigError(f"job {job.Name!r}: script {str(job.Script)!r} does not exist")
        arguments = self._arguments(action)
        if action.workflow_run_id:
            run = self.store.workflow_run(action.workflow_run_id)
            arguments["--WORKFLOW_NAME"] = run.workflow
            arguments["--WORKFLOW_RUN_ID"] = run.run_id
        master = self._master(job)
        sized = (
            {}
            if job.python_shell
            else capacity.spark_conf(master, arguments, job.WorkerType, job.NumberOfWorkers)
        )
        request = RunRequest(
            script=str(job.Script),
            arguments=[part for key, value in arguments.items() for part in (key, value)],
            **job.Streaming.request_options(),
            run_id=action.action_id,
            attempt=action.attempt,
            config=str(self.project.path),
            spark_master=job.Spark.master or None,
            spark_conf={**sized, **job.Spark.conf},  # the job's own settings win
            command=job.Command,
            max_capacity=job.MaxCapacity,
        )
        document = {"run": request.model_dump(mode="json")}
        python = None
        if not job.python_shell:  # a Python shell job runs on Glue's Python, not a Spark
            runtime = runtimes.for_version(self.settings.runtimes_dir, job.GlueVersion, job=job.Name)
            python = None if runtime.own else runtime.python
        return LaunchSpec(action.action_id, "JOB", job.Name, action.attempt, document, {}, log_path, python)

    def _arguments(self, action: ActionRecord) -> dict[str, str]:
        """The run's arguments as they were given. Values masked in the state store come
        back from their sealed copy; a run queued before sealing existed gets them from
        the definitions they were declared in, or goes without."""
        job = self.project.job(action.name)
        # Only a run with a masked value has a sealed copy: the others need no look-up.
        masked = any(MASK in v for v in action.arguments.values())
        sealed = self.store.sealed_arguments(action) if masked else None
        opened = self.sealer.open(sealed) if sealed else {}
        declared = dict(job.DefaultArguments)
        if action.trigger and action.trigger in self.project.triggers:
            for a in self.project.triggers[action.trigger].Actions:
                if a.JobName == action.name:
                    declared.update(a.Arguments)
        out = {}
        for key, value in action.arguments.items():
            if key in opened:
                out[key] = opened[key]
            elif MASK in value:
                if key in declared:
                    out[key] = declared[key]
            else:
                out[key] = value
        out["--JOB_NAME"] = job.Name
        return out

    # ------------------------------------------------------------------ workflow runs


def execution_class(action: ActionRecord, job: JobDefinition) -> str:
    """A run's execution class: its own (StartJobRun's), else its job's, else STANDARD."""
    return action.execution_class or job.ExecutionClass or "STANDARD"
