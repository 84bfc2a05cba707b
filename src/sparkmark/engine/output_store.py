"""A run's writes in the state store: each is recorded before its first byte, staged,
committed with the run, then published or discarded."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Engine, func, insert, select, update

from ..errors import NotFound, RunFinished
from . import rows
from . import schema as t
from .models import OutputKind, OutputRecord, OutputState, RunState
from .schema import utcnow

log = logging.getLogger("sparkmark.state")


class OutputStore:
    """The outputs concern of ``StateStore`` (one database handle for all three)."""

    engine: Engine
    dialect: str

    def stage_output(
        self, run_id: str, *, ctx: str, kind: OutputKind, target: str, plan: Mapping[str, Any]
    ) -> OutputRecord:
        """Record a write before its first byte: its run must be RUNNING. Returns the
        record with the write's sequence number within the run."""
        with self.engine.begin() as conn:
            run = rows.run_row(conn, run_id)
            if run.state != RunState.RUNNING.value:
                raise RunFinished(f"run {run_id} already ended as {run.state}; it cannot write")
            seq = (
                conn.execute(select(func.max(t.outputs.c.seq)).where(t.outputs.c.run_id == run_id)).scalar()
                or 0
            ) + 1
            conn.execute(
                insert(t.outputs).values(
                    run_id=run_id,
                    seq=seq,
                    job_name=run.job_name,
                    ctx=ctx,
                    kind=OutputKind(kind).value,
                    target=target,
                    state=OutputState.STAGING.value,
                    plan=rows.to_json(dict(plan)),
                    updated_at=utcnow(),
                )
            )
        return self.get_output(run_id, seq)

    def set_output(
        self,
        run_id: str,
        seq: int,
        state: OutputState,
        *,
        plan: Mapping[str, Any] | None = None,
        expect: Iterable[OutputState] | None = None,
    ) -> bool:
        """Move an output to ``state`` (and replace its plan). With ``expect``, only from
        one of those states; False when the output was not in one of them."""
        values: dict[str, Any] = {"state": state.value, "updated_at": utcnow()}
        if plan is not None:
            values["plan"] = rows.to_json(dict(plan))
        query = update(t.outputs).where(t.outputs.c.run_id == run_id, t.outputs.c.seq == seq)
        if expect is not None:
            query = query.where(t.outputs.c.state.in_([s.value for s in expect]))
        with self.engine.begin() as conn:
            return conn.execute(query.values(**values)).rowcount == 1

    @staticmethod
    def _output_record(row) -> OutputRecord:
        return OutputRecord(
            run_id=row.run_id,
            seq=row.seq,
            job_name=row.job_name,
            ctx=row.ctx,
            kind=OutputKind(row.kind),
            target=row.target,
            state=OutputState(row.state),
            plan=json.loads(row.plan),
            updated_at=row.updated_at,
            run_state=RunState(row.run_state) if getattr(row, "run_state", None) else None,
        )

    def _outputs_query(self):
        return select(t.outputs, t.runs.c.state.label("run_state")).join(
            t.runs, t.runs.c.run_id == t.outputs.c.run_id
        )

    def get_output(self, run_id: str, seq: int) -> OutputRecord:
        with self.engine.connect() as conn:
            row = conn.execute(
                self._outputs_query().where(t.outputs.c.run_id == run_id, t.outputs.c.seq == seq)
            ).first()
        if row is None:
            raise NotFound(f"run {run_id} has no output number {seq}")
        return self._output_record(row)

    def outputs(
        self,
        job_name: str | None = None,
        *,
        run_id: str | None = None,
        states: Iterable[OutputState] | None = None,
    ) -> list[OutputRecord]:
        """A job's (or a run's) outputs, oldest first, with their run's state."""
        query = self._outputs_query()
        if job_name is not None:
            query = query.where(t.outputs.c.job_name == job_name)
        if run_id is not None:
            query = query.where(t.outputs.c.run_id == run_id)
        if states is not None:
            query = query.where(t.outputs.c.state.in_([s.value for s in states]))
        with self.engine.connect() as conn:
            rows = conn.execute(
                query.order_by(t.runs.c.started_at, t.outputs.c.run_id, t.outputs.c.seq)
            ).all()
        return [self._output_record(r) for r in rows]
