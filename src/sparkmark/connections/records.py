"""Named connections defined at run time (through the Glue API), kept in the state store
beside the ones ``sparkmark.toml`` declares: where the database or broker is, who to be,
and the password sealed (``sealing.py``) so it never lies in the store in clear. A
connection may instead name a secret held elsewhere (``secret_id``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Column, MetaData, String, Table, Text, delete, insert, select, update

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound
from ..state import components

metadata = MetaData()
connections_table = Table(
    "sm_connections",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("kind", String(32), nullable=False),  # jdbc, kafka, …
    Column("url", Text, nullable=False),  # a JDBC URL, or a broker list
    Column("user_name", String(255)),
    Column("sealed_password", Text),  # sealing.Sealer's token of {"password": …}
    Column("secret_id", Text),  # a secret holding username and password, instead
    Column("properties", Text, nullable=False),  # the other settings, as given (JSON)
    Column("description", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
COMPONENT = components.declare("connections", "connections_schema_version", metadata, [connections_table])


@dataclass(frozen=True)
class StoredConnection:
    name: str
    kind: str
    url: str
    user: str | None = None
    sealed_password: str | None = None
    secret_id: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def __repr__(self) -> str:  # the sealed password stays out of logs and tracebacks
        return (
            f"StoredConnection(name={self.name!r}, kind={self.kind!r}, url={self.url!r}, user={self.user!r})"
        )


class ConnectionStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def put(self, connection: StoredConnection, *, create: bool) -> None:
        now = utcnow()
        values = {
            "kind": connection.kind,
            "url": connection.url,
            "user_name": connection.user,
            "sealed_password": connection.sealed_password,
            "secret_id": connection.secret_id,
            "properties": json.dumps(connection.properties, sort_keys=True),
            "description": connection.description,
            "updated_at": now,
        }
        key = connections_table.c.name == connection.name
        with self.state.begin() as conn:
            there = conn.execute(select(connections_table.c.name).where(key)).first() is not None
            if create and there:
                raise AlreadyExists(f"connection {connection.name!r} already exists")
            if not create and not there:
                raise NotFound(f"no connection {connection.name!r}")
            if there:
                conn.execute(update(connections_table).where(key).values(**values))
            else:
                conn.execute(insert(connections_table).values(name=connection.name, created_at=now, **values))

    def get(self, name: str) -> StoredConnection | None:
        with self.state.connect() as conn:
            row = conn.execute(select(connections_table).where(connections_table.c.name == name)).first()
        return None if row is None else _connection(row)

    def all(self) -> list[StoredConnection]:
        with self.state.connect() as conn:
            rows = conn.execute(select(connections_table).order_by(connections_table.c.name)).all()
        return [_connection(r) for r in rows]

    def delete(self, name: str) -> bool:
        with self.state.begin() as conn:
            done = conn.execute(delete(connections_table).where(connections_table.c.name == name))
        return bool(done.rowcount)


def _connection(row) -> StoredConnection:
    return StoredConnection(
        row.name,
        row.kind,
        row.url,
        row.user_name,
        row.sealed_password,
        row.secret_id,
        json.loads(row.properties),
        row.description,
        row.created_at,
        row.updated_at,
    )
