"""The scheduler: fires triggers, starts job and crawler runs, follows workflow runs.

One pass is :meth:`Scheduler.tick`; ``sparkmark scheduler`` calls it in a loop. The
clock is a function given to the scheduler, so schedules can be tested without
waiting for them.

Who does what:
- one scheduler **leads** (a lease in the state store, taken over when its owner dies
  or stops renewing it). Only the leader fires schedules and the conditional triggers
  that belong to no workflow, and it adopts workflow runs and job runs whose
  supervising process is gone;
- every workflow run and every job or crawler run has a **supervisor**: the process
  that starts its actions, watches them end and applies timeouts and retries. That is
  the leader, or a ``sparkmark workflow run`` / ``job run`` command that found no
  scheduler running and drives its own run in the foreground.

A trigger fires once per key (a schedule's window, a workflow run, an event), and the
firing is written in the same transaction as the runs it starts.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import cached_property

from ..crawler.store import CrawlerStore
from ..engine.masking import mask_arguments
from ..engine.owner import this_process
from ..engine.schema import utcnow
from ..engine.sealing import Sealer
from ..engine.store import StateStore
from ..errors import ConfigError
from ..settings import Settings
from .definition import LogicalKind, Project, TriggerDefinition, TriggerType
from .launcher import Launcher
from .records import ActionState, WorkflowRunRecord, WorkflowRunStatus, new_workflow_run_id
from .registry import ProjectSource
from .store import WorkflowStore
from .supervision import ActionSupervisor
from .table_optimizing import OptimizerRuns

log = logging.getLogger("sparkmark.scheduler")

Clock = Callable[[], datetime]


class Scheduler(ActionSupervisor):
    def __init__(
        self,
        project: Project,
        store: StateStore,
        *,
        clock: Clock | None = None,
        launcher: Launcher | None = None,
        owner: str | None = None,
        lease_seconds: float = 30.0,
        leading: bool = True,
        settings: Settings | None = None,
        source: ProjectSource | None = None,
    ):
        self.project = project
        self.source = source  # when given: definitions are read again when they change
        self.state = store
        self.store = WorkflowStore(store)
        self.crawlers = CrawlerStore(store)
        self.clock: Clock = clock or utcnow
        self.launcher = launcher or Launcher()
        self.owner = owner or this_process()
        self.lease_seconds = lease_seconds
        self.leading = leading  # False: only drive the runs this process supervises
        self.settings = settings or Settings.from_env()
        self.is_leader = False
        self.host = socket.gethostname()
        self._told_serial: set[str] = set()  # runs whose wait for the bookmark was logged
        self._told_forced: set[str] = set()  # FLEX runs whose forced start was logged
        self._synced = False
        self.optimizer_runs = OptimizerRuns(store, self.settings.home / "logs" / "optimizers")

    # ------------------------------------------------------------------ the pass

    def tick(self) -> bool:
        """One pass. Returns whether this scheduler led during it."""
        now = self.clock()
        self.is_leader = self.leading and self.store.lead(self.owner, now, self.lease_seconds)
        if self.leading and not self.is_leader:
            return False
        self.store.beat(self.owner, now, self.lease_seconds)
        if self.source is not None:
            try:
                current = self.source.current()  # read again only when something changed
            except ConfigError as exc:  # keep going on the last good definitions
                log.error("definitions not reloaded: %s", exc)
            else:
                if current is not self.project:
                    self.project, self._synced = current, False
        self.sync(now)
        if self.is_leader:
            self._adopt(now)
        self._watch(now)
        if self.is_leader:
            self._fire_schedules(now)
            self._fire_standalone(now)
            self.optimizer_runs.tick(now)
        self._advance_workflow_runs(now)
        self._launch(now)
        return self.is_leader

    def sync(self, now: datetime) -> None:
        """Record declared triggers and crawlers in the state store (once per process)."""
        if self._synced:
            return
        for trigger in self.project.triggers.values():
            self.store.sync_trigger(trigger.Name, start_on_creation=trigger.StartOnCreation, now=now)
        for crawler in self.project.crawlers.values():
            self.crawlers.save(crawler)
        self._synced = True

    def run(
        self,
        *,
        until: Callable[[], bool] | None = None,
        max_seconds: float | None = None,
        poll_seconds: float = 0.5,
    ) -> bool:
        """Tick until ``until()`` is true (True) or ``max_seconds`` pass (False); between
        passes, wait for a child process to end or ``poll_seconds``."""
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        try:
            while True:
                self.tick()
                if until is not None and until():
                    return True
                if deadline is not None and time.monotonic() > deadline:
                    return False
                if self.launcher.has_children():
                    self.launcher.wait_any(poll_seconds)
                else:
                    time.sleep(poll_seconds)
        finally:
            if self.is_leader:
                self.store.resign(self.owner)

    # ------------------------------------------------------------------ starting things

    def start_workflow_run(
        self,
        workflow: str,
        *,
        trigger: TriggerDefinition | None = None,
        key: str | None = None,
        supervisor: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> str | None:
        """Start a run of ``workflow`` through its start trigger. With ``key`` (a
        schedule's window) the start happens at most once per key."""
        definition = self.project.workflow(workflow)
        trigger = trigger or self.project.start_trigger(workflow)
        now = self.clock()
        run_id = new_workflow_run_id()
        with self.store.begin() as conn:
            if not self.store.fire(conn, trigger.Name, key or run_id, now, workflow_run_id=run_id):
                return None  # this window already started a run
            self.store.start_workflow_run(
                conn,
                run_id=run_id,
                workflow=workflow,
                properties={**definition.DefaultRunProperties, **(properties or {})},
                graph=self.project.graph(workflow),
                start_trigger=trigger.Name,
                supervisor=supervisor,
                now=now,
            )
            self._queue_actions(conn, trigger, now, workflow_run_id=run_id, supervisor=supervisor)
        log.info("workflow %s: run %s started by trigger %s", workflow, run_id, trigger.Name)
        return run_id

    def start_job_run(
        self,
        job: str,
        arguments: dict[str, str] | None = None,
        *,
        supervisor: str | None = None,
        timeout_minutes: float | None = None,
        execution_class: str | None = None,
    ) -> str:
        """Queue one run of a declared job, outside any workflow (with its own ExecutionClass)."""
        definition = self.project.job(job)
        now = self.clock()
        given = definition.arguments(arguments)
        with self.store.begin() as conn:
            return self.store.add_action(
                conn,
                kind="JOB",
                name=definition.Name,
                now=now,
                arguments=given,
                timeout_minutes=timeout_minutes or definition.Timeout,
                supervisor=supervisor,
                sealed=self._sealed(given),
                execution_class=execution_class,
            )

    @cached_property
    def sealer(self) -> Sealer:
        return Sealer.from_settings(self.settings)

    def _sealed(self, arguments: dict[str, str]) -> str | None:
        """The values the store will show masked, sealed so the run still receives them."""
        masked = mask_arguments(arguments)
        secret = {k: v for k, v in arguments.items() if masked.get(k) != v}
        return self.sealer.seal(secret) if secret else None

    def _queue_actions(
        self,
        conn,
        trigger: TriggerDefinition,
        now: datetime,
        *,
        workflow_run_id: str | None,
        supervisor: str | None,
    ) -> list[str]:
        ids = []
        for action in trigger.Actions:
            if action.JobName:
                job = self.project.job(action.JobName)
                given = job.arguments(action.Arguments)
                ids.append(
                    self.store.add_action(
                        conn,
                        kind="JOB",
                        name=job.Name,
                        now=now,
                        arguments=given,
                        timeout_minutes=action.Timeout or job.Timeout,
                        workflow_run_id=workflow_run_id,
                        trigger=trigger.Name,
                        supervisor=supervisor,
                        sealed=self._sealed(given),
                    )
                )
            else:
                ids.append(
                    self.store.add_action(
                        conn,
                        kind="CRAWLER",
                        name=action.CrawlerName or "",
                        now=now,
                        workflow_run_id=workflow_run_id,
                        trigger=trigger.Name,
                        supervisor=supervisor,
                    )
                )
        return ids

    def fire_now(self, trigger: TriggerDefinition, *, supervisor: str | None = None) -> str:
        """Fire a trigger by hand (Glue's StartTrigger on an ON_DEMAND trigger): start
        its workflow's run when it starts one, else queue its actions. Returns the
        workflow run id, or the firing's key."""
        if trigger.WorkflowName and trigger.is_start:
            run_id = self.start_workflow_run(trigger.WorkflowName, trigger=trigger, supervisor=supervisor)
            return run_id or ""
        now = self.clock()
        key = "manual-" + new_workflow_run_id()[3:19]
        with self.store.begin() as conn:
            self.store.fire(conn, trigger.Name, key, now)
            self._queue_actions(conn, trigger, now, workflow_run_id=None, supervisor=supervisor)
        return key

    def _fire(self, trigger: TriggerDefinition, key: str, now: datetime) -> bool:
        """Fire a trigger that is not inside a running workflow run."""
        if trigger.WorkflowName and trigger.is_start:
            return (
                self.start_workflow_run(trigger.WorkflowName, trigger=trigger, key=key, supervisor=self.owner)
                is not None
            )
        with self.store.begin() as conn:
            if not self.store.fire(conn, trigger.Name, key, now):
                return False
            self._queue_actions(conn, trigger, now, workflow_run_id=None, supervisor=self.owner)
        log.info("trigger %s fired (%s)", trigger.Name, key)
        return True

    # ------------------------------------------------------------------ leader's work

    def _adopt(self, now: datetime) -> None:
        """Take over runs whose supervisor is gone (a scheduler or command that died)."""
        for run in self.store.workflow_runs(
            statuses=(WorkflowRunStatus.RUNNING.value, WorkflowRunStatus.STOPPING.value)
        ):
            if run.supervisor != self.owner and self.store.supervisor_gone(run.supervisor, now):
                log.warning(
                    "workflow run %s: adopting it (its supervisor %s is gone)",
                    run.run_id,
                    run.supervisor or "was never set",
                )
                self.store.supervise(run.run_id, self.owner)
        for action in self.store.active_actions():
            if (
                action.workflow_run_id is None
                and action.supervisor != self.owner
                and self.store.supervisor_gone(action.supervisor, now)
            ):
                self.store.claim(action.action_id, self.owner)

    def _fire_schedules(self, now: datetime) -> None:
        rows = self.store.trigger_rows()
        for trigger in self.project.triggers.values():
            if trigger.Type is not TriggerType.SCHEDULED:
                continue
            state, watermark = rows.get(trigger.Name, ("CREATED", now))
            if state != "ACTIVATED" or watermark is None or watermark >= now:
                continue
            schedule = trigger.schedule
            assert schedule is not None
            window = schedule.latest_in(watermark, now)
            if window is not None:
                missed = schedule.count_in(watermark, window)
                if missed:
                    log.warning(
                        "trigger %s: %d earlier window(s) passed while no scheduler ran; "
                        "they are covered by this one firing",
                        trigger.Name,
                        missed,
                    )
                self._fire(trigger, window.isoformat(), now)
            with self.store.begin() as conn:
                self.store.advance_watermark(conn, trigger.Name, now)

    def _fire_standalone(self, now: datetime) -> None:
        """Conditional triggers outside workflows, on job and crawler completion events."""
        watching = [
            t
            for t in self.project.triggers.values()
            if t.Type is TriggerType.CONDITIONAL and not t.WorkflowName
        ]
        rows = self.store.trigger_rows()
        with self.store.connect() as conn:
            cursor = self.store.cursor(conn)
            after = self.store.events_after(conn, cursor)
        if not after:
            return
        new = [e for e in after if e.workflow_run_id is None]
        latest = None  # each job's latest standalone end: read once, for AND triggers
        for event in new:
            for trigger in watching:
                state, active_since = rows.get(trigger.Name, ("CREATED", None))
                if state != "ACTIVATED" or active_since is None or event.at < active_since:
                    continue  # off, or the run ended before the trigger was switched on
                if trigger.Predicate is None:
                    continue
                conditions = trigger.Predicate.Conditions
                if not any(c.node == (event.kind, event.name) for c in conditions):
                    continue
                if trigger.Predicate.Logical is LogicalKind.ANY:
                    hit = any(
                        c.node == (event.kind, event.name) and c.wanted == event.state for c in conditions
                    )
                else:
                    with self.store.connect() as conn:
                        if latest is None:
                            latest = self.store.latest_events(conn, standalone=True)
                        since = self.store.last_firing_seq(conn, trigger.Name)
                    hit = all(
                        (e := latest.get(c.node)) is not None
                        and e.seq <= event.seq
                        and e.seq > since
                        and e.state == c.wanted
                        for c in conditions
                    )
                if hit:
                    self._fire(trigger, f"event-{event.seq}", now)
        # Only now: a scheduler that dies above sees these events again, and the
        # firings already made are refused by their keys.
        with self.store.begin() as conn:
            self.store.set_cursor(conn, after[-1].seq)

    def _advance_workflow_runs(self, now: datetime) -> None:
        for run in self.store.workflow_runs(
            statuses=(WorkflowRunStatus.RUNNING.value, WorkflowRunStatus.STOPPING.value)
        ):
            if run.supervisor != self.owner:
                continue
            if run.status is WorkflowRunStatus.STOPPING:
                for action in run.actions:
                    if action.state is ActionState.WAITING:
                        self._stop_unstarted(action, now)
                if not any(a.state is ActionState.RUNNING for a in run.actions):
                    self.store.set_workflow_status(
                        run.run_id,
                        WorkflowRunStatus.STOPPED,
                        now,
                        only_from=(WorkflowRunStatus.STOPPING.value,),
                    )
                    log.info("workflow %s: run %s STOPPED", run.workflow, run.run_id)
                continue
            if run.workflow not in self.project.workflows:
                self.store.set_workflow_status(
                    run.run_id,
                    WorkflowRunStatus.ERROR,
                    now,
                    only_from=(WorkflowRunStatus.RUNNING.value,),
                    error=f"workflow {run.workflow!r} is no longer declared in {self.project.path}",
                )
                continue
            fired = self._fire_conditions(run, now)
            if fired:
                continue
            if not any(a.state.value in ("WAITING", "RUNNING") for a in run.actions):
                self.store.set_workflow_status(
                    run.run_id, WorkflowRunStatus.COMPLETED, now, only_from=(WorkflowRunStatus.RUNNING.value,)
                )
                log.info(
                    "workflow %s: run %s COMPLETED %s",
                    run.workflow,
                    run.run_id,
                    json.dumps(self.store.workflow_run(run.run_id).statistics),
                )

    def _fire_conditions(self, run: WorkflowRunRecord, now: datetime) -> bool:
        """Fire the run's conditional triggers whose predicate its finished actions meet."""
        states: dict[tuple[str, str], str] = {}
        for action in run.actions:  # in queue order: a later attempt or run wins
            if action.final:
                states[(action.kind, action.name)] = action.state.value
        fired_any = False
        with self.store.connect() as conn:
            fired = self.store.fired_in_run(conn, run.run_id)
        for trigger in self.project.workflow_triggers(run.workflow):
            if trigger.Type is not TriggerType.CONDITIONAL or trigger.Name in fired:
                continue
            if trigger.Predicate is None:
                continue
            met = [states.get(c.node) == c.wanted for c in trigger.Predicate.Conditions]
            if not (all(met) if trigger.Predicate.Logical is LogicalKind.AND else any(met)):
                continue
            with self.store.begin() as conn:
                if not self.store.fire(conn, trigger.Name, run.run_id, now, workflow_run_id=run.run_id):
                    continue
                self._queue_actions(conn, trigger, now, workflow_run_id=run.run_id, supervisor=run.supervisor)
            log.info("workflow %s: run %s: trigger %s fired", run.workflow, run.run_id, trigger.Name)
            fired_any = True
        return fired_any

    def stop_workflow_run(self, workflow: str, run_id: str) -> WorkflowRunRecord:
        """Ask a running workflow run to stop (``WorkflowRunStore.request_stop``)."""
        return self.store.request_stop(workflow, run_id, self.clock())


def pooled_launcher(
    settings: Settings, *, start: bool = False, endpoint: Callable[[], dict[str, str]] | None = None
) -> Launcher:
    """A launcher that runs the jobs it can on this process's warm Spark processes
    (``[pool]``, when ``jobs`` is on and ``size`` is above 0); ``start`` fills the pool now;
    ``endpoint`` gives the Glue endpoint's variables for the runs it hosts."""
    from ..pool.config import load_pool_config
    from ..pool.pool import shared_pool

    config = load_pool_config(settings.config)
    if not config.jobs or config.size == 0:
        return Launcher(endpoint=endpoint)  # Python shell runs are still told the endpoint
    return Launcher(shared_pool(settings, start=start), settings.spark_master, endpoint)


def lead_in_background(
    state: StateStore,
    settings: Settings,
    source: ProjectSource,
    stop: threading.Event,
    endpoint: Callable[[], dict[str, str]] | None = None,
    wake: threading.Event | None = None,
) -> threading.Thread:
    """A daemon thread that starts what a service queues (job runs, crawls, workflow
    runs, scheduled triggers): it leads whenever no other scheduler does, until ``stop``.
    Between passes it waits half a second, or until ``wake`` is set (the service queued
    something: a Python shell run starts at once instead of at the next pass)."""
    bell = wake or stop

    def loop() -> None:
        launcher = pooled_launcher(settings, endpoint=endpoint)
        scheduler = Scheduler(source.current(), state, settings=settings, source=source, launcher=launcher)
        while not stop.is_set():
            try:
                scheduler.tick()
            except Exception:  # keep scheduling: one bad pass must not end the service's scheduler
                log.exception("scheduler pass failed")
            if scheduler.launcher.has_children():
                scheduler.launcher.wait_any(0.5)
            else:
                bell.wait(0.5)
            if bell is not stop:
                bell.clear()
        if scheduler.is_leader:
            scheduler.store.resign(scheduler.owner)

    thread = threading.Thread(target=loop, name="sparkmark-scheduler", daemon=True)
    thread.start()
    return thread
