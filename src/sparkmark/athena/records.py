"""Athena's resources as the state store keeps them: query executions (the SQL, where
its results went, its state and statistics; never the rows, which are in the result
location as on Athena), workgroups, named queries and prepared statements.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete, insert, select, update

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound
from ..state import components

metadata = MetaData()
queries_table = Table(
    "sm_athena_queries",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("query", Text, nullable=False),
    Column("statement_type", String(16), nullable=False),
    Column("workgroup", String(128), nullable=False),
    Column("database", String(255)),
    Column("catalog", String(255)),
    Column("output_location", Text),  # the result folder, as given or the workgroup's
    Column("state", String(16), nullable=False),
    Column("reason", Text),  # StateChangeReason
    Column("error_category", Integer),
    Column("owner", String(255)),  # host:pid of the server that runs it
    Column("statement", Integer),  # the engine session's statement that runs it
    Column("outcome", Text),  # JSON: columns, row count, scanned bytes, files
    Column("request_token", String(128)),
    Column("submitted", UTCDateTime, nullable=False),
    Column("started", UTCDateTime),
    Column("completed", UTCDateTime),
)
workgroups_table = Table(
    "sm_athena_workgroups",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("description", Text),
    Column("state", String(16), nullable=False),
    Column("configuration", Text, nullable=False),  # WorkGroupConfiguration (JSON)
    Column("created", UTCDateTime, nullable=False),
)
named_table = Table(
    "sm_athena_named_queries",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("description", Text),
    Column("database", String(255), nullable=False),
    Column("query", Text, nullable=False),
    Column("workgroup", String(128), nullable=False),
)
prepared_table = Table(
    "sm_athena_prepared_statements",
    metadata,
    Column("workgroup", String(128), primary_key=True),
    Column("name", String(256), primary_key=True),
    Column("query", Text, nullable=False),
    Column("description", Text),
    Column("updated", UTCDateTime, nullable=False),
)
COMPONENT = components.declare(
    "athena",
    "athena_schema_version",
    metadata,
    [queries_table, workgroups_table, named_table, prepared_table],
)

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
ENDED = frozenset({SUCCEEDED, FAILED, CANCELLED})
PRIMARY = "primary"  # every account's workgroup, which cannot be deleted


@dataclass(frozen=True)
class QueryRecord:
    id: str
    query: str
    statement_type: str
    workgroup: str
    database: str | None
    catalog: str | None
    output_location: str | None
    state: str
    reason: str | None
    error_category: int | None
    owner: str | None
    statement: int | None
    outcome: dict[str, Any]
    submitted: datetime
    started: datetime | None
    completed: datetime | None


@dataclass(frozen=True)
class WorkGroup:
    name: str
    description: str | None
    state: str
    configuration: dict[str, Any]
    created: datetime


@dataclass(frozen=True)
class NamedQuery:
    id: str
    name: str
    description: str | None
    database: str
    query: str
    workgroup: str


@dataclass(frozen=True)
class PreparedStatement:
    workgroup: str
    name: str
    query: str
    description: str | None
    updated: datetime


def _query(row: Any) -> QueryRecord:
    m = row._mapping
    return QueryRecord(
        **{k: m[k] for k in QueryRecord.__dataclass_fields__ if k != "outcome"},
        outcome=json.loads(m["outcome"]) if m["outcome"] else {},
    )


class AthenaStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    # ------------------------------------------------------------------ queries
    def add_query(self, record: dict[str, Any]) -> QueryRecord:
        values = {**record, "outcome": json.dumps(record["outcome"]) if record.get("outcome") else None}
        with self.state.begin() as conn:
            conn.execute(insert(queries_table).values(submitted=utcnow(), **values))
        return self.query(record["id"])

    def query(self, query_id: str) -> QueryRecord:
        with self.state.connect() as conn:
            row = conn.execute(select(queries_table).where(queries_table.c.id == query_id)).first()
        if row is None:
            raise NotFound(f"QueryExecution {query_id} was not found")
        return _query(row)

    def by_token(self, token: str) -> QueryRecord | None:
        with self.state.connect() as conn:
            row = conn.execute(select(queries_table).where(queries_table.c.request_token == token)).first()
        return _query(row) if row is not None else None

    def queries(
        self, workgroup: str | None = None, states: frozenset[str] | None = None
    ) -> list[QueryRecord]:
        """Newest first."""
        q = select(queries_table).order_by(queries_table.c.submitted.desc(), queries_table.c.id)
        if workgroup is not None:
            q = q.where(queries_table.c.workgroup == workgroup)
        if states is not None:
            q = q.where(queries_table.c.state.in_(sorted(states)))
        with self.state.connect() as conn:
            return [_query(r) for r in conn.execute(q).all()]

    def set_query(self, query_id: str, *, only_from: frozenset[str] | None = None, **values: Any) -> bool:
        """Change a query's record; with ``only_from``, only while its state is one of
        them (a cancel never overwritten by a late success). True when it changed."""
        if "outcome" in values and values["outcome"] is not None:
            values["outcome"] = json.dumps(values["outcome"])
        if values.get("state") in ENDED:
            values.setdefault("completed", utcnow())
        if values.get("state") == RUNNING:
            values.setdefault("started", utcnow())
        stmt = update(queries_table).where(queries_table.c.id == query_id)
        if only_from is not None:
            stmt = stmt.where(queries_table.c.state.in_(sorted(only_from)))
        with self.state.begin() as conn:
            return bool(conn.execute(stmt.values(**values)).rowcount)

    # ------------------------------------------------------------------ workgroups
    def workgroup(self, name: str) -> WorkGroup:
        with self.state.connect() as conn:
            row = conn.execute(select(workgroups_table).where(workgroups_table.c.name == name)).first()
        if row is None:
            if name == PRIMARY:
                return WorkGroup(PRIMARY, None, "ENABLED", {}, datetime(2017, 5, 18, tzinfo=utcnow().tzinfo))
            raise NotFound(f"WorkGroup {name} is not found.")
        m = row._mapping
        return WorkGroup(
            m["name"], m["description"], m["state"], json.loads(m["configuration"]), m["created"]
        )

    def workgroups(self) -> list[WorkGroup]:
        with self.state.connect() as conn:
            names = [r[0] for r in conn.execute(select(workgroups_table.c.name)).all()]
        return [self.workgroup(n) for n in sorted({PRIMARY, *names})]

    def put_workgroup(self, group: WorkGroup, *, create: bool) -> None:
        values = {
            "description": group.description,
            "state": group.state,
            "configuration": json.dumps(group.configuration),
        }
        with self.state.begin() as conn:
            found = conn.execute(
                select(workgroups_table.c.name).where(workgroups_table.c.name == group.name)
            ).first()
            if create and (found is not None or group.name == PRIMARY):
                raise AlreadyExists(f"WorkGroup {group.name} is already created")
            if found is None:
                if not create and group.name != PRIMARY:
                    raise NotFound(f"WorkGroup {group.name} is not found.")
                conn.execute(
                    insert(workgroups_table).values(name=group.name, created=group.created, **values)
                )
            else:
                conn.execute(
                    update(workgroups_table).where(workgroups_table.c.name == group.name).values(**values)
                )

    def delete_workgroup(self, name: str) -> None:
        with self.state.begin() as conn:
            gone = conn.execute(delete(workgroups_table).where(workgroups_table.c.name == name)).rowcount
            if not gone:
                raise NotFound(f"WorkGroup {name} is not found.")
            conn.execute(delete(named_table).where(named_table.c.workgroup == name))
            conn.execute(delete(prepared_table).where(prepared_table.c.workgroup == name))

    # ------------------------------------------------------------------ named queries
    def add_named(self, named: NamedQuery) -> None:
        with self.state.begin() as conn:
            conn.execute(insert(named_table).values(**named.__dict__))

    def named(self, named_id: str) -> NamedQuery:
        with self.state.connect() as conn:
            row = conn.execute(select(named_table).where(named_table.c.id == named_id)).first()
        if row is None:
            raise NotFound(f"NamedQuery {named_id} was not found")
        return NamedQuery(**dict(row._mapping))

    def all_named(self, workgroup: str) -> list[NamedQuery]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(named_table).where(named_table.c.workgroup == workgroup).order_by(named_table.c.id)
            ).all()
        return [NamedQuery(**dict(r._mapping)) for r in rows]

    def update_named(self, named_id: str, **values: Any) -> None:
        with self.state.begin() as conn:
            if not conn.execute(
                update(named_table).where(named_table.c.id == named_id).values(**values)
            ).rowcount:
                raise NotFound(f"NamedQuery {named_id} was not found")

    def delete_named(self, named_id: str) -> None:
        with self.state.begin() as conn:
            if not conn.execute(delete(named_table).where(named_table.c.id == named_id)).rowcount:
                raise NotFound(f"NamedQuery {named_id} was not found")

    # ------------------------------------------------------------------ prepared statements
    def put_prepared(
        self, workgroup: str, name: str, query: str, description: str | None, *, create: bool
    ) -> None:
        key = (prepared_table.c.workgroup == workgroup) & (prepared_table.c.name == name)
        with self.state.begin() as conn:
            found = conn.execute(select(prepared_table.c.name).where(key)).first()
            if create and found is not None:
                raise AlreadyExists(f"Prepared statement {name} already exists in WorkGroup {workgroup}")
            if not create and found is None:
                raise NotFound(f"Prepared statement {name} was not found in WorkGroup {workgroup}")
            values = {"query": query, "description": description, "updated": utcnow()}
            if found is None:
                conn.execute(insert(prepared_table).values(workgroup=workgroup, name=name, **values))
            else:
                conn.execute(update(prepared_table).where(key).values(**values))

    def prepared(self, workgroup: str, name: str) -> PreparedStatement:
        key = (prepared_table.c.workgroup == workgroup) & (prepared_table.c.name == name)
        with self.state.connect() as conn:
            row = conn.execute(select(prepared_table).where(key)).first()
        if row is None:
            raise NotFound(f"Prepared statement {name} was not found in WorkGroup {workgroup}")
        return PreparedStatement(**dict(row._mapping))

    def all_prepared(self, workgroup: str) -> list[PreparedStatement]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(prepared_table)
                .where(prepared_table.c.workgroup == workgroup)
                .order_by(prepared_table.c.name)
            ).all()
        return [PreparedStatement(**dict(r._mapping)) for r in rows]

    def delete_prepared(self, workgroup: str, name: str) -> None:
        key = (prepared_table.c.workgroup == workgroup) & (prepared_table.c.name == name)
        with self.state.begin() as conn:
            if not conn.execute(delete(prepared_table).where(key)).rowcount:
                raise NotFound(f"Prepared statement {name} was not found in WorkGroup {workgroup}")
