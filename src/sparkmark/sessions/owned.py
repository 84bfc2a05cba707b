"""Sessions a server keeps for its own work (the Athena engine's queries, data quality's
evaluation and recommendation runs): one warm Spark each, made READY when work comes,
made again when it ended, and a statement run there and waited for."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..errors import ArgumentError, SparkmarkError
from .records import ENDED, READY, STATEMENT_ENDED, StatementRecord

POLL_SECONDS = 0.05


def ready(sessions: Any, session_id: str, definition: dict[str, Any], what: str) -> None:
    """The session ``session_id`` READY: created from ``definition`` when it does not
    exist, has ended, or belongs to another server. ``what`` names it in errors."""
    try:
        found = sessions.get(session_id)
        if found.status in ENDED or found.owner != sessions.owner:
            sessions.delete(session_id)
            found = None
    except SparkmarkError:
        found = None
    if found is None:
        sessions.create(session_id, definition)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        record = sessions.get(session_id)
        if record.status == READY:
            return
        if record.status in ENDED:
            raise ArgumentError(f"{what}'s Spark did not start: {record.error or record.status}")
        time.sleep(0.1)
    raise ArgumentError(f"{what}'s Spark did not start in 10 minutes")


def run(
    sessions: Any, session_id: str, code: str, started: Callable[[int], None] | None = None
) -> StatementRecord:
    """Run ``code`` as a statement of the session and wait for it to end; ``started``
    is told the statement's number as soon as it is known (to cancel it)."""
    number = sessions.run_statement(session_id, code)
    if started is not None:
        started(number)
    while True:
        statement = sessions.statement(session_id, number)
        if statement.state in STATEMENT_ENDED:
            return statement
        time.sleep(POLL_SECONDS)


def text_of(statement: StatementRecord) -> str:
    """What the statement printed."""
    return ((statement.output or {}).get("Data") or {}).get("TextPlain", "") or ""


def error_of(statement: StatementRecord) -> str:
    """The statement's error in one line, or its last printed line."""
    error = (
        (statement.output or {}).get("ErrorValue")
        or text_of(statement).strip().splitlines()[-1:]
        or ["no outcome"]
    )
    return error if isinstance(error, str) else error[0]


def marked(text: str, mark: str) -> dict[str, Any] | None:
    """The JSON a statement printed after ``mark`` on its last such line (what work run
    in the session reports), or None when it printed none (it failed first)."""
    for line in reversed(text.splitlines()):
        if line.startswith(mark):
            found: dict[str, Any] = json.loads(line[len(mark) :])
            return found
    return None
