"""Data quality results, kept per job run and per ruleset in the state store."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    insert,
    select,
    update,
)

from ..engine.models import RunState
from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..state import components

metadata = MetaData()
results = Table(
    "sm_quality_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_name", String(255), nullable=False, index=True),
    Column("run_id", String(80)),
    Column("ruleset", String(255), nullable=False),
    Column("evaluated_at", UTCDateTime, nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("score", Float, nullable=False),
    Column("rules", Text, nullable=False),  # JSON: each rule's outcome, reason, metrics, labels
    Column("metrics", Text, nullable=False),  # JSON: every metric by name
    # an evaluation run's (the API's, on a catalog table): its id, and the table it read
    Column("evaluation_run_id", String(64)),
    Column("data_source", Text),  # JSON: Glue's DataSource
)


def _evaluation_runs(conn: Connection) -> None:
    """Step 2: results of the API's evaluation runs say which run and which table."""
    components.add_column(conn, results.name, Column("evaluation_run_id", String(64)))
    components.add_column(conn, results.name, Column("data_source", Text))


# A statistic's data point kept out of (EXCLUDE) or put back into (INCLUDE) the history
# that dynamic rules and DetectAnomalies learn from: one metric of one stored result.
annotations_table = Table(
    "sm_quality_annotations",
    metadata,
    Column("result_id", Integer, primary_key=True),
    Column("metric", String(512), primary_key=True),
    Column("inclusion", String(8), nullable=False),
    Column("updated", UTCDateTime, nullable=False),
)
COMPONENT = components.declare(
    "quality", "quality_schema_version", metadata, [results], _evaluation_runs, [annotations_table]
)
EXCLUDE, INCLUDE = "EXCLUDE", "INCLUDE"


@dataclass(frozen=True)
class StoredResult:
    job_name: str
    run_id: str | None
    ruleset: str
    evaluated_at: datetime
    passed: bool
    score: float
    rules: list[dict[str, Any]]
    metrics: dict[str, Any]
    id: int = 0
    evaluation_run_id: str | None = None
    data_source: dict[str, Any] | None = None


@dataclass(frozen=True)
class RulesetSummary:
    job_name: str
    ruleset: str
    results: int
    last_score: float
    last_passed: bool
    last_evaluated_at: datetime


class QualityStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def save(
        self,
        job_name: str,
        run_id: str | None,
        document: dict[str, Any],
        *,
        evaluation_run_id: str | None = None,
        data_source: dict[str, Any] | None = None,
    ) -> int:
        """Keep one evaluation's result; its number."""
        with self.state.begin() as conn:
            done = conn.execute(
                insert(results).values(
                    evaluation_run_id=evaluation_run_id,
                    data_source=json.dumps(data_source) if data_source else None,
                    job_name=job_name,
                    run_id=run_id,
                    ruleset=document["ruleset"],
                    evaluated_at=datetime.fromisoformat(document["evaluated_at"]),
                    passed=bool(document["passed"]),
                    score=float(document["score"]),
                    rules=json.dumps(document["rules"], default=str),
                    metrics=json.dumps(document["metrics"], default=str),
                )
            )
            return int(done.inserted_primary_key[0])

    def results(self, job_name: str, ruleset: str | None = None, limit: int = 50) -> list[StoredResult]:
        return self.find(job_name=job_name, ruleset=ruleset, limit=limit)

    def find(
        self,
        *,
        job_name: str | None = None,
        ruleset: str | None = None,
        run_id: str | None = None,
        result_id: int | None = None,
        evaluation_run_id: str | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        limit: int | None = 50,
    ) -> list[StoredResult]:
        """Stored results, newest first, matching every filter given."""
        query = select(results)
        for column, value in (
            (results.c.job_name, job_name),
            (results.c.ruleset, ruleset),
            (results.c.run_id, run_id),
            (results.c.id, result_id),
            (results.c.evaluation_run_id, evaluation_run_id),
        ):
            if value is not None:
                query = query.where(column == value)
        if after is not None:
            query = query.where(results.c.evaluated_at > after)
        if before is not None:
            query = query.where(results.c.evaluated_at < before)
        query = query.order_by(results.c.evaluated_at.desc(), results.c.id.desc())
        if limit:
            query = query.limit(limit)
        with self.state.connect() as conn:
            rows = conn.execute(query).all()
        return [
            StoredResult(
                r.job_name,
                r.run_id,
                r.ruleset,
                r.evaluated_at,
                r.passed,
                r.score,
                json.loads(r.rules),
                json.loads(r.metrics),
                r.id,
                r.evaluation_run_id,
                json.loads(r.data_source) if r.data_source else None,
            )
            for r in rows
        ]

    def rulesets(self) -> list[RulesetSummary]:
        """Every (job, ruleset) with results: how many, and the newest's score and outcome."""
        c = results.c
        newest = (
            select(c.job_name, c.ruleset, func.max(c.id).label("last"), func.count().label("n"))
            .group_by(c.job_name, c.ruleset)
            .subquery()
        )
        query = (
            select(newest.c.job_name, newest.c.ruleset, newest.c.n, c.score, c.passed, c.evaluated_at)
            .join(results, c.id == newest.c.last)
            .order_by(newest.c.job_name, newest.c.ruleset)
        )
        with self.state.connect() as conn:
            return [RulesetSummary(*row) for row in conn.execute(query)]

    def earlier_metrics(
        self, job_name: str, ruleset: str, limit: int = 100, data_source: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Every metric of the ruleset's latest ``limit`` evaluations in this job (or, for
        the API's evaluation runs, on this data source), oldest first, leaving out the
        runs that did not succeed."""
        query = select(results.c.id, results.c.metrics, results.c.run_id).where(
            results.c.job_name == job_name, results.c.ruleset == ruleset
        )
        if data_source is not None:
            query = query.where(results.c.data_source == json.dumps(data_source))
        query = query.order_by(results.c.evaluated_at.desc(), results.c.id.desc()).limit(limit)
        with self.state.connect() as conn:
            rows = conn.execute(query).all()
        excluded: dict[int, set[str]] = {}
        for (result_id, metric), (inclusion, _when) in self.annotations_of([r.id for r in rows]).items():
            if inclusion == EXCLUDE:
                excluded.setdefault(result_id, set()).add(metric)
        states = self.state.run_states([r.run_id for r in rows if r.run_id])
        kept = []
        for row in reversed(rows):
            if row.run_id and states.get(row.run_id, RunState.SUCCEEDED) is not RunState.SUCCEEDED:
                continue
            metrics = json.loads(row.metrics)
            for metric in excluded.get(row.id, ()):
                if metric in metrics:
                    metrics[metric] = math.nan  # keeps its place, takes no part
            kept.append(metrics)
        return kept

    def annotate(self, result_id: int, metrics: list[str], inclusion: str) -> None:
        """Keep ``metrics`` of a result out of the history (EXCLUDE) or in it (INCLUDE)."""
        now = utcnow()
        with self.state.begin() as conn:
            for metric in metrics:
                where = (annotations_table.c.result_id == result_id) & (annotations_table.c.metric == metric)
                if conn.execute(select(annotations_table.c.metric).where(where)).first():
                    conn.execute(
                        update(annotations_table).where(where).values(inclusion=inclusion, updated=now)
                    )
                else:
                    conn.execute(
                        insert(annotations_table).values(
                            result_id=result_id, metric=metric, inclusion=inclusion, updated=now
                        )
                    )

    def annotations_of(self, result_ids: list[int]) -> dict[tuple[int, str], tuple[str, datetime]]:
        """Every annotation of these results: (result, metric) → (inclusion, when). The
        ids are asked for 500 at a time (a database's limit on a statement's parameters)."""
        found: dict[tuple[int, str], tuple[str, datetime]] = {}
        with self.state.connect() as conn:
            for start in range(0, len(result_ids), 500):
                chunk = result_ids[start : start + 500]
                query = select(annotations_table).where(annotations_table.c.result_id.in_(chunk))
                for r in conn.execute(query):
                    found[(r.result_id, r.metric)] = (r.inclusion, r.updated)
        return found


def values_of(evaluations: list[dict[str, Any]], metric: str) -> list[float]:
    """One metric's numbers out of a list of evaluations' metrics, in their order; an
    excluded value is NaN."""
    found = (m.get(metric) for m in evaluations)
    return [float(v) for v in found if isinstance(v, (int, float)) and not isinstance(v, bool)]
