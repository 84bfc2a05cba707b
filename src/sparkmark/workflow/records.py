"""The scheduler's tables in the state store (triggers, firings, workflow runs,
actions, their events, sealed arguments, who leads), and the records read from them."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from ..engine.schema import UTCDateTime
from ..state import components

metadata = MetaData()

triggers = Table(
    "sm_wf_triggers",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("state", String(16), nullable=False),  # CREATED, ACTIVATED, DEACTIVATED
    Column("watermark", UTCDateTime),  # schedules are evaluated up to here
    Column("updated_at", UTCDateTime, nullable=False),
)
firings = Table(
    "sm_wf_firings",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trigger", String(255), nullable=False),
    Column("fire_key", String(255), nullable=False),
    Column("status", String(16), nullable=False),  # FIRED, COALESCED
    Column("fired_at", UTCDateTime, nullable=False),
    Column("workflow_run_id", String(80)),
    UniqueConstraint("trigger", "fire_key", name="sm_wf_firings_once"),
)
workflow_runs = Table(
    "sm_wf_runs",
    metadata,
    Column("run_id", String(80), primary_key=True),
    Column("workflow", String(255), nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("completed_at", UTCDateTime),
    Column("properties", Text, nullable=False),  # JSON object of strings
    Column("graph", Text, nullable=False),  # JSON: the workflow's nodes and edges at start
    Column("start_trigger", String(255)),
    Column("supervisor", String(255)),  # host:pid of the process driving the run
    Column("error", Text),
)
actions = Table(
    "sm_wf_actions",
    metadata,
    Column("action_id", String(96), primary_key=True),  # the job run id, or the crawl id
    Column("kind", String(8), nullable=False),  # JOB, CRAWLER
    Column("name", String(255), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("first_id", String(96), nullable=False),  # attempt 0's id
    Column("state", String(16), nullable=False),
    Column("final", Boolean, nullable=False),  # the last attempt: its end is an event
    Column("workflow_run_id", String(80)),
    Column("trigger", String(255)),
    Column("arguments", Text, nullable=False),  # JSON, masked
    Column("timeout_minutes", Float),
    Column("supervisor", String(255)),
    Column("host", String(255)),  # where the process runs
    Column("pid", Integer),
    Column("queued_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime),
    Column("ended_at", UTCDateTime),
    Column("error", Text),
    Column("log_path", Text),
    Column("execution_class", String(8)),  # a run's own ExecutionClass (StartJobRun's); version 3
    Index("sm_wf_actions_by_run", "workflow_run_id"),
    Index("sm_wf_actions_by_state", "state"),
)
# A run's secret-named argument values, sealed (engine/sealing.py) under a key the
# store never holds; one row for all attempts of a run. `actions.arguments` keeps them
# masked. Added in version 2.
sealed_arguments = Table(
    "sm_wf_sealed_arguments",
    metadata,
    Column("first_id", String(96), primary_key=True),
    Column("sealed", Text, nullable=False),
)
events = Table(
    "sm_wf_events",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("action_id", String(96), nullable=False),
    Column("kind", String(8), nullable=False),
    Column("name", String(255), nullable=False),
    Column("state", String(16), nullable=False),
    Column("workflow_run_id", String(80)),
    Column("at", UTCDateTime, nullable=False),
)
supervisors = Table(
    "sm_wf_supervisors",
    metadata,
    Column("owner", String(255), primary_key=True),  # host:pid
    Column("expires_at", UTCDateTime, nullable=False),
)
meta = Table(
    "sm_wf_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
    Column("owner", String(255)),
    Column("expires_at", UTCDateTime),
)


def _supervisors_and_sealed_arguments(conn: Connection) -> None:
    """Version 2: the sealed arguments of queued runs. Stores written at version 1
    before supervisors beat (their table, and where an action's process runs) get them
    here too."""
    components.create(conn, supervisors, sealed_arguments)
    components.add_column(conn, actions.name, Column("host", String(255)))


def _execution_class(conn: Connection) -> None:
    """Version 3: the ExecutionClass a run was started with (FLEX or STANDARD), when it
    gave its own."""
    components.add_column(conn, actions.name, Column("execution_class", String(8)))


COMPONENT = components.declare(
    "workflows",
    "workflow_schema_version",
    metadata,
    [triggers, firings, workflow_runs, actions, events, meta],
    _supervisors_and_sealed_arguments,  # 2
    _execution_class,  # 3
)


class WorkflowRunStatus(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    ERROR = "ERROR"


class ActionState(StrEnum):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    STOPPED = "STOPPED"
    CANCELLED = "CANCELLED"  # a crawl that was stopped
    ERROR = "ERROR"  # could not be started at all


ACTIVE = (ActionState.WAITING.value, ActionState.RUNNING.value)


@dataclass(frozen=True)
class ActionRecord:
    action_id: str
    kind: str
    name: str
    attempt: int
    first_id: str
    state: ActionState
    final: bool
    workflow_run_id: str | None
    trigger: str | None
    arguments: dict[str, str]
    timeout_minutes: float | None
    supervisor: str | None
    host: str | None
    pid: int | None
    queued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    error: str | None
    log_path: str | None
    execution_class: str | None = None  # the run's own, when StartJobRun gave one

    @property
    def previous_id(self) -> str | None:
        if self.attempt == 0:
            return None
        return self.first_id if self.attempt == 1 else f"{self.first_id}_attempt_{self.attempt - 1}"


@dataclass(frozen=True)
class WorkflowRunRecord:
    run_id: str
    workflow: str
    status: WorkflowRunStatus
    started_at: datetime
    completed_at: datetime | None
    properties: dict[str, str]
    graph: dict[str, Any]
    start_trigger: str | None
    supervisor: str | None
    error: str | None
    actions: list[ActionRecord] = field(default_factory=list)

    @property
    def statistics(self) -> dict[str, int]:
        """Glue's WorkflowRunStatistics, counted over the run's actions (every attempt)."""
        count = lambda *states: sum(1 for a in self.actions if a.state.value in states)  # noqa: E731
        return {
            "TotalActions": len(self.actions),
            "TimeoutActions": count("TIMEOUT"),
            "FailedActions": count("FAILED"),
            "StoppedActions": count("STOPPED", "CANCELLED"),
            "SucceededActions": count("SUCCEEDED"),
            "RunningActions": count("RUNNING"),
            "ErroredActions": count("ERROR"),
            "WaitingActions": count("WAITING"),
        }


@dataclass(frozen=True)
class EventRecord:
    seq: int
    action_id: str
    kind: str
    name: str
    state: str
    workflow_run_id: str | None
    at: datetime


def moves_bookmark(arguments: dict[str, str]) -> bool:
    """Whether a job run with these arguments commits bookmark versions (Glue's default
    option is job-bookmark-disable)."""
    return arguments.get("--job-bookmark-option") == "job-bookmark-enable"


def new_workflow_run_id() -> str:
    return "wr_" + secrets.token_hex(32)


def new_action_id(kind: str) -> str:
    return ("jr_" if kind == "JOB" else "cr_") + secrets.token_hex(32 if kind == "JOB" else 16)
