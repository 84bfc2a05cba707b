"""Workflow runs in the state store: started with their first actions, read with
their actions and statistics, their status and supervisor set, and the run
properties their jobs share. ``WorkflowStore`` holds this concern."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, insert, or_, select, update

from ..engine.masking import mask_text
from ..engine.store import StateStore
from ..errors import NotFound, SparkmarkError
from .records import (
    ACTIVE,
    ActionRecord,
    WorkflowRunRecord,
    WorkflowRunStatus,
    actions,
    firings,
    workflow_runs,
)


class WorkflowRunStore:
    """The workflow runs concern of ``WorkflowStore``."""

    state: StateStore

    if TYPE_CHECKING:  # WorkflowStore's, which holds this concern

        def begin(self) -> Any: ...

        def connect(self) -> Any: ...

        def actions_of(self, *, workflow_run_id: str | None = None) -> list[ActionRecord]: ...

    def start_workflow_run(
        self,
        conn: Connection,
        *,
        run_id: str,
        workflow: str,
        properties: dict[str, str],
        graph: dict[str, Any],
        start_trigger: str | None,
        supervisor: str | None,
        now: datetime,
    ) -> str:
        conn.execute(
            insert(workflow_runs).values(
                run_id=run_id,
                workflow=workflow,
                status=WorkflowRunStatus.RUNNING.value,
                started_at=now,
                properties=json.dumps(properties),
                graph=json.dumps(graph),
                start_trigger=start_trigger,
                supervisor=supervisor,
            )
        )
        return run_id

    def _workflow_run(self, row, with_actions: bool) -> WorkflowRunRecord:
        acts = self.actions_of(workflow_run_id=row.run_id) if with_actions else []
        return WorkflowRunRecord(
            row.run_id,
            row.workflow,
            WorkflowRunStatus(row.status),
            row.started_at,
            row.completed_at,
            json.loads(row.properties),
            json.loads(row.graph),
            row.start_trigger,
            row.supervisor,
            row.error,
            acts,
        )

    def workflow_run(self, run_id: str, workflow: str | None = None) -> WorkflowRunRecord:
        with self.connect() as conn:
            row = conn.execute(select(workflow_runs).where(workflow_runs.c.run_id == run_id)).first()
        if row is None or (workflow and row.workflow != workflow):
            where = f" of workflow {workflow!r}" if workflow else ""
            raise NotFound(
                f"unknown workflow run {run_id!r}{where}: list them with `sparkmark workflow runs NAME`"
            )
        return self._workflow_run(row, with_actions=True)

    def workflow_runs(
        self,
        workflow: str | None = None,
        *,
        statuses: tuple[str, ...] | None = None,
        limit: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[WorkflowRunRecord]:
        """Runs newest first; with ``since`` and ``until``, those alive at some moment
        between them."""
        query = select(workflow_runs).order_by(workflow_runs.c.started_at.desc())
        if until is not None:
            query = query.where(workflow_runs.c.started_at <= until)
        if since is not None:
            query = query.where(
                or_(workflow_runs.c.completed_at.is_(None), workflow_runs.c.completed_at >= since)
            )
        if workflow:
            query = query.where(workflow_runs.c.workflow == workflow)
        if statuses:
            query = query.where(workflow_runs.c.status.in_(statuses))
        if limit:
            query = query.limit(limit)
        with self.connect() as conn:
            rows = conn.execute(query).all()
        return [self._workflow_run(r, with_actions=True) for r in rows]

    def set_workflow_status(
        self,
        run_id: str,
        status: WorkflowRunStatus,
        now: datetime,
        *,
        only_from: tuple[str, ...],
        error: str | None = None,
    ) -> bool:
        values: dict[str, Any] = {"status": status.value}
        if status in (WorkflowRunStatus.COMPLETED, WorkflowRunStatus.STOPPED, WorkflowRunStatus.ERROR):
            values["completed_at"] = now
        if error:
            values["error"] = mask_text(error)
        with self.begin() as conn:
            return (
                conn.execute(
                    update(workflow_runs)
                    .where(workflow_runs.c.run_id == run_id, workflow_runs.c.status.in_(only_from))
                    .values(**values)
                ).rowcount
                == 1
            )

    def supervise(self, run_id: str, supervisor: str) -> None:
        with self.begin() as conn:
            conn.execute(
                update(workflow_runs).where(workflow_runs.c.run_id == run_id).values(supervisor=supervisor)
            )
            conn.execute(
                update(actions)
                .where(actions.c.workflow_run_id == run_id, actions.c.state.in_(ACTIVE))
                .values(supervisor=supervisor)
            )

    def run_firings(self, workflow_run_id: str) -> list[dict[str, Any]]:
        with self.connect() as conn:
            return [
                dict(r._mapping)
                for r in conn.execute(
                    select(firings).where(firings.c.workflow_run_id == workflow_run_id).order_by(firings.c.id)
                )
            ]

    def fired_in_run(self, conn: Connection, workflow_run_id: str) -> set[str]:
        return set(
            conn.execute(
                select(firings.c.trigger).where(firings.c.workflow_run_id == workflow_run_id)
            ).scalars()
        )

    # ----------------------------------------------------------------- run properties

    def run_properties(self, workflow: str, run_id: str) -> dict[str, str]:
        return self.workflow_run(run_id, workflow).properties

    def put_run_properties(self, workflow: str, run_id: str, values: dict[str, str]) -> dict[str, str]:
        """Merge ``values`` into the run's properties (Glue's put_workflow_run_properties)."""
        bad = [k for k, v in values.items() if not isinstance(v, str) or not isinstance(k, str)]
        if bad:
            raise SparkmarkError(f"run properties are strings; {bad[0]!r} is not")
        with self.begin() as conn:
            row = conn.execute(
                select(workflow_runs.c.properties, workflow_runs.c.workflow).where(
                    workflow_runs.c.run_id == run_id
                )
            ).first()
            if row is None or row.workflow != workflow:
                raise NotFound(f"unknown workflow run {run_id!r} of workflow {workflow!r}")
            merged = {**json.loads(row.properties), **values}
            conn.execute(
                update(workflow_runs)
                .where(workflow_runs.c.run_id == run_id)
                .values(properties=json.dumps(merged))
            )
        return merged

    def request_stop(self, workflow: str, run_id: str, now: datetime) -> WorkflowRunRecord:
        """Ask a running workflow run to stop: no trigger fires in it any more, runs
        not started are not started, and running ones are stopped by its supervisor."""
        run = self.workflow_run(run_id, workflow)
        if run.status is not WorkflowRunStatus.RUNNING:
            raise SparkmarkError(
                f"workflow run {run_id} is {run.status.value}, not RUNNING; "
                "only a running workflow run can be stopped"
            )
        self.set_workflow_status(
            run_id, WorkflowRunStatus.STOPPING, now, only_from=(WorkflowRunStatus.RUNNING.value,)
        )
        return self.workflow_run(run_id)
