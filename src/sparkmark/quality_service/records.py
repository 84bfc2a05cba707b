"""Data quality's resources as the state store keeps them: rulesets (their DQDL, target
table and the recommendation run they came from), ruleset evaluation runs and rule
recommendation runs (what they read, their state, and what they produced)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, MetaData, String, Table, Text, delete, insert, select, update

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound
from ..state import components

metadata = MetaData()
rulesets_table = Table(
    "sm_quality_rulesets",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("description", Text),
    Column("ruleset", Text, nullable=False),
    Column("target_table", Text),  # JSON: DataQualityTargetTable
    Column("recommendation_run_id", String(64)),
    Column("created", UTCDateTime, nullable=False),
    Column("modified", UTCDateTime, nullable=False),
)
runs_table = Table(
    "sm_quality_task_runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),  # evaluation | recommendation
    Column("request", Text, nullable=False),  # JSON: the Start call's parameters
    Column("state", String(16), nullable=False),
    Column("error", Text),
    Column("owner", String(255)),
    Column("statement", String(16)),
    Column("outcome", Text),  # JSON: result ids, or the recommended ruleset
    Column("client_token", String(255)),
    Column("started", UTCDateTime, nullable=False),
    Column("modified", UTCDateTime, nullable=False),
    Column("completed", UTCDateTime),
)
COMPONENT = components.declare(
    "quality_service", "quality_service_schema_version", metadata, [rulesets_table, runs_table]
)

# Glue's TaskStatusType
STARTING, RUNNING, STOPPING, STOPPED, SUCCEEDED, FAILED, TIMEOUT = (
    "STARTING",
    "RUNNING",
    "STOPPING",
    "STOPPED",
    "SUCCEEDED",
    "FAILED",
    "TIMEOUT",
)
ENDED = frozenset({STOPPED, SUCCEEDED, FAILED, TIMEOUT})
EVALUATION, RECOMMENDATION = "evaluation", "recommendation"


@dataclass(frozen=True)
class RulesetRecord:
    name: str
    description: str | None
    ruleset: str
    target_table: dict[str, Any] | None
    recommendation_run_id: str | None
    created: datetime
    modified: datetime


@dataclass(frozen=True)
class TaskRun:
    id: str
    kind: str
    request: dict[str, Any]
    state: str
    error: str | None
    owner: str | None
    statement: str | None
    outcome: dict[str, Any]
    started: datetime
    modified: datetime
    completed: datetime | None


def _ruleset(row: Any) -> RulesetRecord:
    return RulesetRecord(
        row.name,
        row.description,
        row.ruleset,
        json.loads(row.target_table) if row.target_table else None,
        row.recommendation_run_id,
        row.created,
        row.modified,
    )


def _run(row: Any) -> TaskRun:
    return TaskRun(
        row.id,
        row.kind,
        json.loads(row.request),
        row.state,
        row.error,
        row.owner,
        row.statement,
        json.loads(row.outcome) if row.outcome else {},
        row.started,
        row.modified,
        row.completed,
    )


class QualityServiceStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    # ------------------------------------------------------------------ rulesets
    def add_ruleset(
        self,
        name: str,
        ruleset: str,
        *,
        description: str | None = None,
        target_table: dict[str, Any] | None = None,
        recommendation_run_id: str | None = None,
    ) -> None:
        now = utcnow()
        with self.state.begin() as conn:
            if conn.execute(select(rulesets_table.c.name).where(rulesets_table.c.name == name)).first():
                raise AlreadyExists(f"ruleset {name} already exists")
            conn.execute(
                insert(rulesets_table).values(
                    name=name,
                    description=description,
                    ruleset=ruleset,
                    target_table=json.dumps(target_table) if target_table else None,
                    recommendation_run_id=recommendation_run_id,
                    created=now,
                    modified=now,
                )
            )

    def find_ruleset(self, name: str) -> RulesetRecord | None:
        with self.state.connect() as conn:
            row = conn.execute(select(rulesets_table).where(rulesets_table.c.name == name)).first()
        return _ruleset(row) if row is not None else None

    def ruleset(self, name: str) -> RulesetRecord:
        found = self.find_ruleset(name)
        if found is None:
            raise NotFound(f"Cannot find Data Quality Ruleset in account 000000000000 with name {name}")
        return found

    def rulesets(self) -> list[RulesetRecord]:
        with self.state.connect() as conn:
            rows = conn.execute(select(rulesets_table).order_by(rulesets_table.c.name)).all()
        return [_ruleset(r) for r in rows]

    def update_ruleset(self, name: str, **values: Any) -> None:
        self.ruleset(name)
        with self.state.begin() as conn:
            conn.execute(
                update(rulesets_table)
                .where(rulesets_table.c.name == name)
                .values(**values, modified=utcnow())
            )

    def delete_ruleset(self, name: str) -> None:
        self.ruleset(name)
        with self.state.begin() as conn:
            conn.execute(delete(rulesets_table).where(rulesets_table.c.name == name))

    # ------------------------------------------------------------------ runs
    def add_run(
        self,
        run_id: str,
        kind: str,
        request: dict[str, Any],
        owner: str,
        client_token: str | None,
        order: dict[str, Any] | None = None,
    ) -> TaskRun:
        """Record a run STARTING with the ``order`` its engine runs, in one statement (the
        engine may look for waiting runs at any moment); a ``client_token`` seen before
        gives that run back."""
        now = utcnow()
        with self.state.begin() as conn:
            if client_token:
                same = conn.execute(
                    select(runs_table).where(
                        runs_table.c.client_token == client_token, runs_table.c.kind == kind
                    )
                ).first()
                if same is not None:
                    return _run(same)  # Glue's idempotent retry: the same run, not another
            conn.execute(
                insert(runs_table).values(
                    id=run_id,
                    kind=kind,
                    request=json.dumps(request, default=str),
                    state=STARTING,
                    outcome=json.dumps({"order": order}, default=str) if order else None,
                    owner=owner,
                    client_token=client_token,
                    started=now,
                    modified=now,
                )
            )
        return self.run(run_id, kind)

    def run(self, run_id: str, kind: str) -> TaskRun:
        with self.state.connect() as conn:
            row = conn.execute(
                select(runs_table).where(runs_table.c.id == run_id, runs_table.c.kind == kind)
            ).first()
        if row is None:
            what = "evaluation" if kind == EVALUATION else "rule recommendation"
            raise NotFound(f"Data quality {what} run {run_id} not found")
        return _run(row)

    def runs(self, kind: str, states: frozenset[str] | None = None) -> list[TaskRun]:
        query = select(runs_table).where(runs_table.c.kind == kind)
        if states is not None:
            query = query.where(runs_table.c.state.in_(sorted(states)))
        with self.state.connect() as conn:
            rows = conn.execute(query.order_by(runs_table.c.started.desc(), runs_table.c.id)).all()
        return [_run(r) for r in rows]

    def set_run(self, run_id: str, *, only_from: frozenset[str] | None = None, **values: Any) -> bool:
        """Change a run; with ``only_from``, only while its state is one of those. Whether
        it changed."""
        if "outcome" in values:
            values["outcome"] = json.dumps(values["outcome"], default=str)
        if values.get("state") in ENDED:
            values.setdefault("completed", utcnow())
        query = update(runs_table).where(runs_table.c.id == run_id)
        if only_from is not None:
            query = query.where(runs_table.c.state.in_(sorted(only_from)))
        with self.state.begin() as conn:
            return conn.execute(query.values(**values, modified=utcnow())).rowcount > 0
