"""Committed micro-batches of streaming queries in the state store.

A streaming query names each micro-batch by its query id (stable for one checkpoint)
and a batch id. A batch's writes are staged as outputs of the run processing it, then
committed with the batch's row in one transaction, then published. Spark records the
batch as done in its checkpoint only after that; a batch it replays after a crash finds
its row here and writes nothing again."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import RunFinished, StateStoreError
from . import rows
from . import schema as t
from .models import OutputState, RunState
from .schema import utcnow


@dataclass(frozen=True)
class BatchRecord:
    job_name: str
    query_id: str
    batch_id: int
    run_id: str
    committed_at: datetime
    outputs: list[int]
    offsets: dict[str, Any]
    metrics: dict[str, Any]


class BatchStore:
    """The streaming concern of ``StateStore``."""

    engine: Engine

    @staticmethod
    def _batch_record(row) -> BatchRecord:
        return BatchRecord(
            job_name=row.job_name,
            query_id=row.query_id,
            batch_id=int(row.batch_id),
            run_id=row.run_id,
            committed_at=row.committed_at,
            outputs=list(json.loads(row.outputs)),
            offsets=json.loads(row.offsets),
            metrics=json.loads(row.metrics),
        )

    def committed_batch(self, job_name: str, query_id: str, batch_id: int) -> BatchRecord | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.stream_batches).where(
                    t.stream_batches.c.job_name == job_name,
                    t.stream_batches.c.query_id == query_id,
                    t.stream_batches.c.batch_id == batch_id,
                )
            ).first()
        return self._batch_record(row) if row is not None else None

    def commit_batch(
        self,
        run_id: str,
        *,
        query_id: str,
        batch_id: int,
        outputs: Iterable[int],
        offsets: Mapping[str, Any],
        metrics: Mapping[str, Any],
    ) -> BatchRecord:
        """Record batch ``batch_id`` of ``query_id`` as done and its staged writes (output
        seqs of ``run_id``) as COMMITTED, in one transaction. The run must be RUNNING."""
        seqs = sorted(set(outputs))
        try:
            return self._commit_batch(run_id, query_id, batch_id, seqs, offsets, metrics)
        except IntegrityError:
            earlier = self.committed_batch(rows.job_of_run(self.engine, run_id), query_id, batch_id)
            raise StateStoreError(
                f"batch {batch_id} of streaming query {query_id} was already committed"
                + (f" by run {earlier.run_id}" if earlier else "")
                + "; it is not committed twice"
            ) from None

    def _commit_batch(self, run_id, query_id, batch_id, seqs, offsets, metrics) -> BatchRecord:
        with self.engine.begin() as conn:
            run = rows.run_row(conn, run_id)
            if run.state != RunState.RUNNING.value:
                raise RunFinished(f"run {run_id} already ended as {run.state}; it cannot commit a batch")
            conn.execute(
                insert(t.stream_batches).values(
                    job_name=run.job_name,
                    query_id=query_id,
                    batch_id=batch_id,
                    run_id=run_id,
                    committed_at=utcnow(),
                    outputs=rows.to_json(seqs),
                    offsets=rows.to_json(dict(offsets)),
                    metrics=rows.to_json(dict(metrics)),
                )
            )
            if seqs:
                conn.execute(
                    update(t.outputs)
                    .where(
                        t.outputs.c.run_id == run_id,
                        t.outputs.c.seq.in_(seqs),
                        t.outputs.c.state == OutputState.STAGED.value,
                    )
                    .values(state=OutputState.COMMITTED.value, updated_at=utcnow())
                )
            job_name = run.job_name
        found = self.committed_batch(job_name, query_id, batch_id)
        assert found is not None
        return found

    def stream_batches(
        self, job_name: str, *, query_id: str | None = None, limit: int | None = None
    ) -> list[BatchRecord]:
        """A job's committed batches, newest first."""
        query = select(t.stream_batches).where(t.stream_batches.c.job_name == job_name)
        if query_id is not None:
            query = query.where(t.stream_batches.c.query_id == query_id)
        query = query.order_by(t.stream_batches.c.committed_at.desc(), t.stream_batches.c.batch_id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [self._batch_record(r) for r in conn.execute(query).all()]
