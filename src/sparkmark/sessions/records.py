"""Interactive sessions and their statements, as the state store keeps them: what each
session was asked to be (its command, arguments with secrets masked, timeouts), its
status and last activity, and each statement's code, state, output and progress. The
process that runs a session writes here; every door reads here (so the console, in
its own process, shows sessions and asks for one to stop through ``stop_requested``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)

from ..engine.masking import mask_arguments, mask_text
from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound
from ..state import components

metadata = MetaData()
sessions_table = Table(
    "sm_sessions",
    metadata,
    Column("id", String(255), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("definition", Text, nullable=False),  # what CreateSession was given (JSON, masked)
    Column("error", Text),
    Column("owner", String(255)),  # host:pid of the process that runs it
    Column("pid", Integer),  # the session's own process
    Column("stop_requested", Boolean, nullable=False, default=False),
    Column("created_on", UTCDateTime, nullable=False),
    Column("ready_on", UTCDateTime),
    Column("last_activity", UTCDateTime, nullable=False),
    Column("completed_on", UTCDateTime),
)
statements_table = Table(
    "sm_session_statements",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("id", Integer, primary_key=True),
    Column("code", Text, nullable=False),
    Column("state", String(16), nullable=False),
    Column("output", Text),  # Glue's StatementOutput (JSON)
    Column("progress", Float, nullable=False, default=0.0),
    Column("started_on", UTCDateTime),
    Column("completed_on", UTCDateTime),
)
COMPONENT = components.declare(
    "sessions", "sessions_schema_version", metadata, [sessions_table, statements_table]
)

# Glue's session and statement states.
PROVISIONING, READY, FAILED, TIMEOUT, STOPPING, STOPPED = (
    "PROVISIONING",
    "READY",
    "FAILED",
    "TIMEOUT",
    "STOPPING",
    "STOPPED",
)
ENDED = frozenset({FAILED, TIMEOUT, STOPPED})
WAITING, RUNNING, AVAILABLE, CANCELLING, CANCELLED, ERROR = (
    "WAITING",
    "RUNNING",
    "AVAILABLE",
    "CANCELLING",
    "CANCELLED",
    "ERROR",
)
STATEMENT_ENDED = frozenset({AVAILABLE, CANCELLED, ERROR})


@dataclass(frozen=True)
class SessionRecord:
    id: str
    status: str
    definition: dict[str, Any]
    created_on: datetime
    last_activity: datetime
    ready_on: datetime | None = None
    completed_on: datetime | None = None
    error: str | None = None
    owner: str | None = None
    pid: int | None = None
    stop_requested: bool = False


@dataclass(frozen=True)
class StatementRecord:
    session_id: str
    id: int
    code: str
    state: str
    output: dict[str, Any] | None = None
    progress: float = 0.0
    started_on: datetime | None = None
    completed_on: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def masked_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """What is stored of a CreateSession request: its default arguments with secret
    values masked (a password given as ``--db-password`` never lands in the store)."""
    kept = dict(definition)
    if isinstance(kept.get("DefaultArguments"), dict):
        kept["DefaultArguments"] = mask_arguments(kept["DefaultArguments"])
    return kept


class SessionStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    # ------------------------------------------------------------------ sessions
    def create(self, session_id: str, definition: dict[str, Any], owner: str) -> SessionRecord:
        now = utcnow()
        with self.state.begin() as conn:
            found = conn.execute(
                select(sessions_table.c.status).where(sessions_table.c.id == session_id)
            ).first()
            if found is not None:
                raise AlreadyExists(f"session {session_id!r} already exists (status {found[0]})")
            conn.execute(
                insert(sessions_table).values(
                    id=session_id,
                    status=PROVISIONING,
                    definition=json.dumps(masked_definition(definition), default=str),
                    owner=owner,
                    stop_requested=False,
                    created_on=now,
                    last_activity=now,
                )
            )
        return self.get(session_id)

    def get(self, session_id: str) -> SessionRecord:
        with self.state.connect() as conn:
            row = conn.execute(select(sessions_table).where(sessions_table.c.id == session_id)).first()
        if row is None:
            raise NotFound(f"Session {session_id} not found.")
        return _session(row)

    def all(self) -> list[SessionRecord]:
        with self.state.connect() as conn:
            rows = conn.execute(select(sessions_table).order_by(sessions_table.c.created_on)).all()
        return [_session(r) for r in rows]

    def set_status(
        self,
        session_id: str,
        status: str,
        *,
        error: str | None = None,
        pid: int | None = None,
        born: datetime | None = None,
    ) -> None:
        """Set a session's status; with ``born``, only the session created then (a session
        deleted and created again under its Id is left alone)."""
        now = utcnow()
        values: dict[str, Any] = {"status": status, "last_activity": now}
        if status == READY:
            values["ready_on"] = now
        if status in ENDED:
            values["completed_on"] = now
        if error is not None:
            values["error"] = mask_text(error)
        if pid is not None:
            values["pid"] = pid
        key = sessions_table.c.id == session_id
        if born is not None:
            key = key & (sessions_table.c.created_on == born)
        with self.state.begin() as conn:
            conn.execute(update(sessions_table).where(key).values(**values))

    def touch(self, session_id: str) -> None:
        with self.state.begin() as conn:
            conn.execute(
                update(sessions_table).where(sessions_table.c.id == session_id).values(last_activity=utcnow())
            )

    def request_stop(self, session_id: str) -> None:
        self.get(session_id)
        with self.state.begin() as conn:
            conn.execute(
                update(sessions_table).where(sessions_table.c.id == session_id).values(stop_requested=True)
            )

    def delete(self, session_id: str) -> None:
        with self.state.begin() as conn:
            conn.execute(delete(statements_table).where(statements_table.c.session_id == session_id))
            conn.execute(delete(sessions_table).where(sessions_table.c.id == session_id))

    # ------------------------------------------------------------------ statements
    def add_statement(self, session_id: str, code: str) -> int:
        now = utcnow()
        with self.state.begin() as conn:
            self.state.serialize(conn, f"session:{session_id}")
            last = conn.execute(
                select(func.max(statements_table.c.id)).where(statements_table.c.session_id == session_id)
            ).scalar()
            number = 0 if last is None else int(last) + 1
            conn.execute(
                insert(statements_table).values(
                    session_id=session_id, id=number, code=code, state=WAITING, progress=0.0
                )
            )
            conn.execute(
                update(sessions_table).where(sessions_table.c.id == session_id).values(last_activity=now)
            )
        return number

    def update_statement(
        self,
        session_id: str,
        number: int,
        *,
        state: str | None = None,
        output: dict[str, Any] | None = None,
        progress: float | None = None,
    ) -> None:
        now = utcnow()
        values: dict[str, Any] = {}
        if state is not None:
            values["state"] = state
            if state == RUNNING:
                values["started_on"] = now
            if state in STATEMENT_ENDED:
                values["completed_on"] = now
                values["progress"] = 1.0 if state == AVAILABLE else values.get("progress", 0.0)
        if output is not None:
            values["output"] = json.dumps(output, default=str)
        if progress is not None:
            values["progress"] = max(0.0, min(1.0, progress))
        if not values:
            return
        key = (statements_table.c.session_id == session_id) & (statements_table.c.id == number)
        if state is None:
            # a late progress sample never rewrites an ended statement's
            key = key & statements_table.c.state.not_in(list(STATEMENT_ENDED))
        with self.state.begin() as conn:
            conn.execute(update(statements_table).where(key).values(**values))
            if state is not None:
                conn.execute(
                    update(sessions_table).where(sessions_table.c.id == session_id).values(last_activity=now)
                )

    def statement(self, session_id: str, number: int) -> StatementRecord:
        key = (statements_table.c.session_id == session_id) & (statements_table.c.id == number)
        with self.state.connect() as conn:
            row = conn.execute(select(statements_table).where(key)).first()
        if row is None:
            raise NotFound(f"Statement {number} of session {session_id} not found.")
        return _statement(row)

    def statements(self, session_id: str) -> list[StatementRecord]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(statements_table)
                .where(statements_table.c.session_id == session_id)
                .order_by(statements_table.c.id)
            ).all()
        return [_statement(r) for r in rows]

    def unfinished_statements(self, session_id: str) -> list[StatementRecord]:
        return [s for s in self.statements(session_id) if s.state not in STATEMENT_ENDED]


def _session(row) -> SessionRecord:
    return SessionRecord(
        id=row.id,
        status=row.status,
        definition=json.loads(row.definition),
        created_on=row.created_on,
        last_activity=row.last_activity,
        ready_on=row.ready_on,
        completed_on=row.completed_on,
        error=row.error,
        owner=row.owner,
        pid=row.pid,
        stop_requested=bool(row.stop_requested),
    )


def _statement(row) -> StatementRecord:
    return StatementRecord(
        session_id=row.session_id,
        id=int(row.id),
        code=row.code,
        state=row.state,
        output=json.loads(row.output) if row.output else None,
        progress=float(row.progress or 0.0),
        started_on=row.started_on,
        completed_on=row.completed_on,
    )
