"""Row-level steps that more than one concern of the state store takes inside its own
transactions (a commit ends the run, commits its outputs and adds a version at once)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from ..errors import UnknownRun
from . import schema as t
from .models import OutputState
from .schema import utcnow

INSERT_BATCH = 5000


def to_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def latest_version_number(conn: Connection, job_name: str) -> int:
    return (
        conn.execute(
            select(func.max(t.bookmark_versions.c.version)).where(t.bookmark_versions.c.job_name == job_name)
        ).scalar()
        or 0
    )


def run_row(conn: Connection, run_id: str):
    row = conn.execute(select(t.runs).where(t.runs.c.run_id == run_id)).first()
    if row is None:
        raise UnknownRun(run_id)
    return row


def job_of_run(engine, run_id: str) -> str:
    with engine.connect() as conn:
        return run_row(conn, run_id).job_name


def commit_outputs(conn: Connection, run_id: str) -> None:
    conn.execute(
        update(t.outputs)
        .where(t.outputs.c.run_id == run_id, t.outputs.c.state == OutputState.STAGED.value)
        .values(state=OutputState.COMMITTED.value, updated_at=utcnow())
    )


def insert_many(conn: Connection, table, rows: Iterable[dict]) -> None:
    batch: list[dict] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= INSERT_BATCH:
            conn.execute(insert(table), batch)
            batch = []
    if batch:
        conn.execute(insert(table), batch)


def copy_many(conn: Connection, table, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
    """Insert ``rows`` (tuples in the order of ``columns``) in the connection's
    transaction: through PostgreSQL's COPY when the driver is psycopg (a 10,000-row
    commit in a fraction of the time a multi-row INSERT takes), as INSERTs otherwise."""
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        names = ", ".join(f'"{c}"' for c in columns)
        raw = conn.connection.driver_connection
        with raw.cursor() as cursor, cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:  # type: ignore[union-attr]
            for row in rows:
                copy.write_row(row)
        return
    insert_many(conn, table, (dict(zip(columns, row, strict=True)) for row in rows))


def job_exists(conn: Connection, job_name: str) -> bool:
    for table in (t.runs, t.bookmark_versions):
        found = conn.execute(select(table.c.job_name).where(table.c.job_name == job_name).limit(1)).first()
        if found:
            return True
    return False
