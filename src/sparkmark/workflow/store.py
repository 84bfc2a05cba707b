"""What the scheduler keeps in the state store: triggers' states, firings, workflow
runs, the job and crawler runs it starts (actions), their completion events, and
who leads.

Every decision the scheduler takes is one transaction here, so a scheduler that is
killed and started again finds exactly what was decided: a firing is a row keyed by
(trigger, key), inserted with the actions it starts, and a second insert of the
same key is refused by the database.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..engine.masking import mask_arguments, mask_text
from ..engine.store import StateStore
from ..errors import NotFound
from .leadership import Leadership
from .records import (
    ACTIVE,
    COMPONENT,
    ActionRecord,
    ActionState,
    EventRecord,
    actions,
    events,
    firings,
    meta,
    moves_bookmark,
    new_action_id,
    sealed_arguments,
    triggers,
)
from .run_store import WorkflowRunStore


class WorkflowStore(Leadership, WorkflowRunStore):
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def begin(self):
        """A transaction on the scheduler's tables (the scheduler's decisions are each one)."""
        return self.state.begin()

    def connect(self):
        return self.state.connect()

    def cursor(self, conn: Connection) -> int:
        value = conn.execute(select(meta.c.value).where(meta.c.key == "event_cursor")).scalar()
        return int(value) if value else 0

    def set_cursor(self, conn: Connection, seq: int) -> None:
        if (
            conn.execute(update(meta).where(meta.c.key == "event_cursor").values(value=str(seq))).rowcount
            == 0
        ):
            conn.execute(insert(meta).values(key="event_cursor", value=str(seq)))

    # ----------------------------------------------------------------- triggers

    def sync_trigger(self, name: str, *, start_on_creation: bool, now: datetime) -> str:
        """Record a declared trigger the first time it is seen; returns its state."""
        with self.begin() as conn:
            state = conn.execute(select(triggers.c.state).where(triggers.c.name == name)).scalar()
            if state is None:
                state = "ACTIVATED" if start_on_creation else "CREATED"
                conn.execute(insert(triggers).values(name=name, state=state, watermark=now, updated_at=now))
            return state

    def trigger_rows(self) -> dict[str, tuple[str, datetime | None]]:
        with self.connect() as conn:
            return {r.name: (r.state, r.watermark) for r in conn.execute(select(triggers))}

    def set_trigger_state(self, name: str, state: str, now: datetime) -> None:
        """Activate or deactivate. Activation evaluates schedules from now on: windows
        that passed while the trigger was off are not fired."""
        with self.begin() as conn:
            values: dict[str, Any] = {"state": state, "updated_at": now}
            if state == "ACTIVATED":
                values["watermark"] = now
            if conn.execute(update(triggers).where(triggers.c.name == name).values(**values)).rowcount == 0:
                conn.execute(insert(triggers).values(name=name, **{"watermark": now, **values}))

    def firings(self, trigger: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        query = select(firings).order_by(firings.c.id.desc()).limit(limit)
        if trigger:
            query = query.where(firings.c.trigger == trigger)
        with self.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def fire(
        self,
        conn: Connection,
        trigger: str,
        key: str,
        now: datetime,
        *,
        status: str = "FIRED",
        workflow_run_id: str | None = None,
    ) -> bool:
        """Record a firing once; False when (trigger, key) already fired. Runs inside the
        caller's transaction, in a savepoint, so a duplicate rolls back nothing else."""
        exists = conn.execute(
            select(firings.c.id).where(firings.c.trigger == trigger, firings.c.fire_key == key)
        ).first()
        if exists:
            return False
        try:
            with conn.begin_nested():
                conn.execute(
                    insert(firings).values(
                        trigger=trigger,
                        fire_key=key,
                        status=status,
                        fired_at=now,
                        workflow_run_id=workflow_run_id,
                    )
                )
        except IntegrityError:
            return False
        return True

    def advance_watermark(self, conn: Connection, name: str, watermark: datetime) -> None:
        conn.execute(update(triggers).where(triggers.c.name == name).values(watermark=watermark))

    # ----------------------------------------------------------------- actions

    def add_action(
        self,
        conn: Connection,
        *,
        kind: str,
        name: str,
        now: datetime,
        arguments: dict[str, str] | None = None,
        timeout_minutes: float | None = None,
        workflow_run_id: str | None = None,
        trigger: str | None = None,
        supervisor: str | None = None,
        attempt: int = 0,
        first_id: str | None = None,
        sealed: str | None = None,
        execution_class: str | None = None,
    ) -> str:
        """Queue an action; ``arguments`` are stored masked, and ``sealed`` (the secret
        values, sealed by the caller) beside them for the run to receive."""
        first = first_id or new_action_id(kind)
        action_id = first if attempt == 0 else f"{first}_attempt_{attempt}"
        conn.execute(
            insert(actions).values(
                action_id=action_id,
                kind=kind,
                name=name,
                attempt=attempt,
                first_id=first,
                state=ActionState.WAITING.value,
                final=False,
                workflow_run_id=workflow_run_id,
                trigger=trigger,
                arguments=json.dumps(mask_arguments(arguments or {})),
                timeout_minutes=timeout_minutes,
                supervisor=supervisor,
                queued_at=now,
                execution_class=execution_class,
            )
        )
        if sealed is not None and attempt == 0:
            conn.execute(insert(sealed_arguments).values(first_id=first, sealed=sealed))
        return action_id

    def sealed_arguments(self, action: ActionRecord) -> str | None:
        """The sealed secret arguments of ``action``'s run, if it has any."""
        with self.connect() as conn:
            return conn.execute(
                select(sealed_arguments.c.sealed).where(sealed_arguments.c.first_id == action.first_id)
            ).scalar()

    @staticmethod
    def _action(row) -> ActionRecord:
        return ActionRecord(
            row.action_id,
            row.kind,
            row.name,
            row.attempt,
            row.first_id,
            ActionState(row.state),
            bool(row.final),
            row.workflow_run_id,
            row.trigger,
            json.loads(row.arguments),
            row.timeout_minutes,
            row.supervisor,
            row.host,
            row.pid,
            row.queued_at,
            row.started_at,
            row.ended_at,
            row.error,
            row.log_path,
            row.execution_class,
        )

    def action(self, action_id: str) -> ActionRecord:
        with self.connect() as conn:
            row = conn.execute(select(actions).where(actions.c.action_id == action_id)).first()
        if row is None:
            raise NotFound(f"unknown job or crawler run {action_id!r}")
        return self._action(row)

    def active_actions(self) -> list[ActionRecord]:
        with self.connect() as conn:
            rows = conn.execute(
                select(actions)
                .where(actions.c.state.in_(ACTIVE))
                .order_by(actions.c.queued_at, actions.c.action_id)
            ).all()
        return [self._action(r) for r in rows]

    def actions_of(
        self,
        *,
        workflow_run_id: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        first_id: str | None = None,
        limit: int | None = None,
    ) -> list[ActionRecord]:
        query = select(actions).order_by(actions.c.queued_at, actions.c.attempt)
        if first_id:
            query = query.where(actions.c.first_id == first_id)
        if workflow_run_id:
            query = query.where(actions.c.workflow_run_id == workflow_run_id)
        if kind:
            query = query.where(actions.c.kind == kind)
        if name:
            query = query.where(actions.c.name == name)
        with self.connect() as conn:
            rows = conn.execute(query).all()
        records = [self._action(r) for r in rows]
        return records[-limit:] if limit else records

    def reserve_start(
        self,
        action: ActionRecord,
        *,
        limit: int,
        exclusive: bool,
        host: str,
        supervisor: str,
        log_path: str,
        now: datetime,
    ) -> bool:
        """Mark a waiting job run RUNNING, before its process starts, when that keeps the
        job within ``limit`` running runs and, for a run that moves the bookmark
        (``exclusive``), when no other such run is running. Schedulers that share the
        store decide one at a time, so together they never start more than ``limit``."""
        with self.begin() as conn:
            self.state.serialize(conn, f"sparkmark-start:{action.kind}:{action.name}")
            running = conn.execute(
                select(actions.c.arguments).where(
                    actions.c.kind == action.kind,
                    actions.c.name == action.name,
                    actions.c.state == ActionState.RUNNING.value,
                )
            ).all()
            if len(running) >= limit:
                return False
            if exclusive and any(moves_bookmark(json.loads(r.arguments)) for r in running):
                return False
            return (
                conn.execute(
                    update(actions)
                    .where(
                        actions.c.action_id == action.action_id, actions.c.state == ActionState.WAITING.value
                    )
                    .values(
                        state=ActionState.RUNNING.value,
                        host=host,
                        supervisor=supervisor,
                        log_path=log_path,
                        started_at=now,
                    )
                ).rowcount
                == 1
            )

    def set_pid(self, action_id: str, pid: int) -> None:
        with self.begin() as conn:
            conn.execute(update(actions).where(actions.c.action_id == action_id).values(pid=pid))

    def mark_started(
        self, action_id: str, *, host: str, pid: int, supervisor: str, log_path: str, now: datetime
    ) -> bool:
        with self.begin() as conn:
            return self._mark_running(
                conn, action_id, host=host, pid=pid, supervisor=supervisor, log_path=log_path, started_at=now
            )

    @staticmethod
    def _mark_running(conn, action_id: str, **values: Any) -> bool:
        """WAITING → RUNNING, only from WAITING: two schedulers never both start it."""
        return (
            conn.execute(
                update(actions)
                .where(actions.c.action_id == action_id, actions.c.state == ActionState.WAITING.value)
                .values(state=ActionState.RUNNING.value, **values)
            ).rowcount
            == 1
        )

    def claim(self, action_id: str, supervisor: str) -> None:
        with self.begin() as conn:
            conn.execute(
                update(actions).where(actions.c.action_id == action_id).values(supervisor=supervisor)
            )

    def finish_action(
        self,
        action: ActionRecord,
        state: ActionState,
        now: datetime,
        *,
        error: str | None = None,
        retry: bool = False,
    ) -> str | None:
        """End an action. With ``retry`` the next attempt is queued in the same
        transaction and no event is recorded; otherwise the end is an event that
        conditional triggers see. Returns the retry's id."""
        with self.begin() as conn:
            done = conn.execute(
                update(actions)
                .where(actions.c.action_id == action.action_id, actions.c.state.in_(ACTIVE))
                .values(
                    state=state.value, ended_at=now, error=mask_text(error or "") or None, final=not retry
                )
            ).rowcount
            if not done:
                return None
            if retry:
                return self.add_action(
                    conn,
                    kind=action.kind,
                    name=action.name,
                    now=now,
                    arguments=action.arguments,
                    timeout_minutes=action.timeout_minutes,
                    workflow_run_id=action.workflow_run_id,
                    trigger=action.trigger,
                    supervisor=action.supervisor,
                    attempt=action.attempt + 1,
                    first_id=action.first_id,
                    execution_class=action.execution_class,
                )
            conn.execute(
                insert(events).values(
                    action_id=action.action_id,
                    kind=action.kind,
                    name=action.name,
                    state=state.value,
                    workflow_run_id=action.workflow_run_id,
                    at=now,
                )
            )
        return None

    def events_after(self, conn: Connection, seq: int) -> list[EventRecord]:
        rows = conn.execute(select(events).where(events.c.seq > seq).order_by(events.c.seq)).all()
        return [
            EventRecord(r.seq, r.action_id, r.kind, r.name, r.state, r.workflow_run_id, r.at) for r in rows
        ]

    def latest_events(self, conn: Connection, *, standalone: bool) -> dict[tuple[str, str], EventRecord]:
        """The latest final state of each job and crawler, outside workflows or in any."""
        query = select(events).order_by(events.c.seq)
        if standalone:
            query = query.where(events.c.workflow_run_id.is_(None))
        latest: dict[tuple[str, str], EventRecord] = {}
        for r in conn.execute(query):
            latest[(r.kind, r.name)] = EventRecord(
                r.seq, r.action_id, r.kind, r.name, r.state, r.workflow_run_id, r.at
            )
        return latest

    def last_firing_seq(self, conn: Connection, trigger: str) -> int:
        keys = (
            conn.execute(
                select(firings.c.fire_key).where(
                    firings.c.trigger == trigger, firings.c.fire_key.like("event-%")
                )
            )
            .scalars()
            .all()
        )
        return max((int(k.removeprefix("event-")) for k in keys), default=0)
