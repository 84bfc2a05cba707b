"""Glue's interactive-session operations: CreateSession, GetSession, ListSessions,
StopSession, DeleteSession, RunStatement, GetStatement, ListStatements and
CancelStatement, over the application's sessions (``sessions.manager``).

Sessions run code: like every operation here, they are served only to a caller whose
request is signed with the endpoint's token.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..sessions.manager import SessionLimitExceeded, SessionStateError
from ..sessions.records import SessionRecord, StatementRecord
from .protocol import GlueApiError
from .service import Service, handler, page

# Fields of CreateSession shown back by GetSession as they were given.
ECHOED = (
    "Description",
    "Role",
    "Command",
    "DefaultArguments",
    "Connections",
    "MaxCapacity",
    "SecurityConfiguration",
    "GlueVersion",
    "NumberOfWorkers",
    "WorkerType",
    "IdleTimeout",
    "SessionType",
)


def _illegal(exc: SessionStateError) -> GlueApiError:
    return GlueApiError("IllegalSessionStateException", str(exc))


def session_doc(record: SessionRecord) -> dict[str, Any]:
    given = record.definition
    doc: dict[str, Any] = {k: given.get(k) for k in ECHOED if given.get(k) is not None}
    doc.update(Id=record.id, CreatedOn=record.created_on, Status=record.status)
    if record.error:
        doc["ErrorMessage"] = record.error
    if record.completed_on is not None:
        doc["CompletedOn"] = record.completed_on
    if record.ready_on is not None:
        end = record.completed_on or datetime.now(record.ready_on.tzinfo)
        doc["ExecutionTime"] = round((end - record.ready_on).total_seconds(), 3)
    return doc


def _millis(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


def statement_doc(record: StatementRecord) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "Id": record.id,
        "Code": record.code,
        "State": record.state,
        "Progress": record.progress,
        "StartedOn": _millis(record.started_on),
        "CompletedOn": _millis(record.completed_on),
    }
    if record.output is not None:
        doc["Output"] = record.output
    return doc


@handler("CreateSession")
def create_session(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    definition = {k: v for k, v in p.items() if k not in ("Id", "Tags", "RequestOrigin")}
    try:
        record = svc.sessions.create(p["Id"], definition)
    except SessionLimitExceeded as exc:  # Glue's answer past its sessions quota
        raise GlueApiError("ResourceNumberLimitExceededException", str(exc)) from None
    return {"Session": session_doc(record)}


@handler("GetSession")
def get_session(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"Session": session_doc(svc.sessions.get(p["Id"]))}


@handler("ListSessions")
def list_sessions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    records = svc.sessions.all()
    wanted = p.get("Tags") or {}
    if wanted:
        tagged = {r.id for r in records if _has_tags(svc.tags.tags("session", r.id), wanted)}
        records = [r for r in records if r.id in tagged]
    chunk, token = page(records, p)
    return {"Ids": [r.id for r in chunk], "Sessions": [session_doc(r) for r in chunk], "NextToken": token}


def _has_tags(have: dict[str, str], wanted: dict[str, str]) -> bool:
    return all(have.get(k) == v for k, v in wanted.items())


@handler("StopSession")
def stop_session(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    try:
        svc.sessions.stop(p["Id"])
    except SessionStateError as exc:
        raise _illegal(exc) from None
    return {"Id": p["Id"]}


@handler("DeleteSession")
def delete_session(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.sessions.delete(p["Id"])
    return {"Id": p["Id"]}


@handler("RunStatement")
def run_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"Id": svc.sessions.run_statement(p["SessionId"], p["Code"])}
    except SessionStateError as exc:
        raise _illegal(exc) from None


@handler("GetStatement")
def get_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"Statement": statement_doc(svc.sessions.statement(p["SessionId"], p["Id"]))}


@handler("ListStatements")
def list_statements(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page(svc.sessions.statements(p["SessionId"]), p)
    return {"Statements": [statement_doc(s) for s in chunk], "NextToken": token}


@handler("CancelStatement")
def cancel_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.sessions.cancel(p["SessionId"], p["Id"])
    return {}
