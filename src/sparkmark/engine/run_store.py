"""Runs and leases in the state store: a run starts by taking a lease, renews it while it
works, and ends by releasing it.

A run that moves the bookmark (``job-bookmark-enable``) takes the job's own lease: one
such run at a time, since its commit must be based on the version it started from. A
run that leaves the bookmark alone (``-disable``, ``-pause``) takes a lease of its
own, so several may run at once (the scheduler keeps them within the job's
MaxConcurrentRuns); each is renewed and taken over when its process dies, like the
job's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import ConcurrentRunsExceeded, RunFinished, StateStoreError, UnknownJob
from . import rows
from . import schema as t
from .masking import mask_document, mask_text
from .models import BookmarkOption, JobSummary, Lease, RunRecord, RunState
from .owner import is_dead
from .schema import utcnow

log = logging.getLogger("sparkmark.state")


class RunStore:
    """The runs and leases concern of ``StateStore`` (one database handle for all three)."""

    engine: Engine
    dialect: str

    def start_run(
        self,
        *,
        job_name: str,
        run_id: str,
        attempt: int,
        option: BookmarkOption,
        arguments: Mapping[str, str],
        owner: str,
        lease_seconds: float,
        metrics: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        """Take a lease and record a RUNNING run (with its first ``metrics``), atomically:
        the job's lease when the run moves the bookmark, a lease of the run's own otherwise.

        Raises ConcurrentRunsExceeded when another run holds the job's unexpired lease. A
        lease that expired, or whose process died, is taken over; its run is marked FAILED.
        """
        now = utcnow()
        expires = now + timedelta(seconds=lease_seconds)
        try:
            with self.engine.begin() as conn:
                self._expire_shared(conn, job_name, now)
                if option is BookmarkOption.ENABLE:
                    self._take_lease(conn, job_name, run_id, owner, now, expires)
                else:
                    conn.execute(
                        insert(t.shared_leases).values(
                            run_id=run_id, job_name=job_name, owner=owner, acquired_at=now, expires_at=expires
                        )
                    )
                latest = rows.latest_version_number(conn, job_name)
                previous = _previous_run(conn, job_name)
                conn.execute(
                    insert(t.runs).values(
                        run_id=run_id,
                        job_name=job_name,
                        attempt=attempt,
                        state=RunState.RUNNING.value,
                        bookmark_option=option.value,
                        started_at=now,
                        arguments=rows.to_json(dict(arguments)),
                        metrics=rows.to_json(dict(metrics or {})),
                        base_version=latest,
                        previous_run_id=previous,
                    )
                )
        except IntegrityError:
            with self.engine.connect() as conn:
                taken = conn.execute(select(t.runs.c.run_id).where(t.runs.c.run_id == run_id)).first()
            if taken:
                raise StateStoreError(f"run id {run_id} is already recorded; use a new run id") from None
            # Another writer inserted the lease between our read and our insert.
            lease = self.get_lease(job_name)
            raise ConcurrentRunsExceeded(
                job_name,
                lease.run_id if lease else "another run",
                lease.expires_at.isoformat() if lease else "unknown",
            ) from None
        return self.get_run(run_id)

    def record_ended_run(
        self,
        *,
        job_name: str,
        run_id: str,
        attempt: int,
        option: BookmarkOption,
        arguments: Mapping[str, str],
        state: RunState,
        started_at: datetime,
        error: str | None,
        ended_at: datetime | None = None,
    ) -> RunRecord:
        """Record a run that has already ended without taking a lease or moving the
        bookmark: a script that started no run of its own (plain Python, as a Python
        shell job is, or one that failed before ``Job.init``) is one run of its job, with
        one record every door reads, ended at ``ended_at`` (when its end was seen) or now."""
        with self.engine.begin() as conn:
            previous = _previous_run(conn, job_name)
            conn.execute(
                insert(t.runs).values(
                    run_id=run_id,
                    job_name=job_name,
                    attempt=attempt,
                    state=state.value,
                    bookmark_option=option.value,
                    started_at=started_at,
                    ended_at=max(ended_at or utcnow(), started_at),
                    arguments=rows.to_json(dict(arguments)),
                    error=error,
                    metrics=rows.to_json({}),
                    base_version=rows.latest_version_number(conn, job_name),
                    previous_run_id=previous,
                )
            )
        return self.get_run(run_id)

    def _take_lease(self, conn, job_name, run_id, owner, now, expires) -> None:
        row = conn.execute(select(t.leases).where(t.leases.c.job_name == job_name)).first()
        if row is None:
            conn.execute(
                insert(t.leases).values(
                    job_name=job_name,
                    run_id=run_id,
                    owner=owner,
                    acquired_at=now,
                    expires_at=expires,
                )
            )
            return
        held_until = row.expires_at
        owner_died = is_dead(row.owner)
        if held_until > now and not owner_died:
            raise ConcurrentRunsExceeded(job_name, row.run_id, held_until.isoformat())
        taken = conn.execute(
            update(t.leases)
            .where(t.leases.c.job_name == job_name, t.leases.c.run_id == row.run_id)
            .values(run_id=run_id, owner=owner, acquired_at=now, expires_at=expires)
        ).rowcount
        if taken != 1:
            raise ConcurrentRunsExceeded(job_name, "another run", "unknown")
        if held_until > now:
            why = f"its process {row.owner} is gone"
        else:
            why = f"it stopped renewing its lease, which expired at {held_until.isoformat()}"
        log.warning(
            "job %s: taking over the lease of run %s (owner %s): %s; run %s takes the job over",
            job_name,
            row.run_id,
            row.owner,
            why,
            run_id,
        )
        conn.execute(
            update(t.runs)
            .where(t.runs.c.run_id == row.run_id, t.runs.c.state == RunState.RUNNING.value)
            .values(
                state=RunState.FAILED.value,
                ended_at=now,
                error=f"the run was taken over by run {run_id}: {why}",
            )
        )

    def _expire_shared(self, conn, job_name: str, now) -> None:
        """Release the run leases of ``job_name`` whose runs are gone (lease expired, or
        process dead), marking those runs FAILED."""
        for row in conn.execute(select(t.shared_leases).where(t.shared_leases.c.job_name == job_name)).all():
            if row.expires_at > now and not is_dead(row.owner):
                continue
            why = (
                f"its process {row.owner} is gone"
                if row.expires_at > now
                else f"it stopped renewing its lease, which expired at {row.expires_at.isoformat()}"
            )
            log.warning("job %s: run %s is marked FAILED: %s", job_name, row.run_id, why)
            conn.execute(t.shared_leases.delete().where(t.shared_leases.c.run_id == row.run_id))
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == row.run_id, t.runs.c.state == RunState.RUNNING.value)
                .values(state=RunState.FAILED.value, ended_at=now, error=f"the run ended unseen: {why}")
            )

    def heartbeat(self, job_name: str, run_id: str, lease_seconds: float) -> bool:
        """Extend this run's lease (the job's, or its own). False when the run no longer
        holds a lease."""
        expires = utcnow() + timedelta(seconds=lease_seconds)
        with self.engine.begin() as conn:
            renewed = conn.execute(
                update(t.leases)
                .where(t.leases.c.job_name == job_name, t.leases.c.run_id == run_id)
                .values(expires_at=expires)
            ).rowcount
            if not renewed:
                renewed = conn.execute(
                    update(t.shared_leases)
                    .where(t.shared_leases.c.run_id == run_id)
                    .values(expires_at=expires)
                ).rowcount
            return renewed == 1

    def run_lease(self, job_name: str, run_id: str) -> Lease | None:
        """The lease ``run_id`` holds, the job's or its own; None when it holds none."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.leases).where(t.leases.c.job_name == job_name, t.leases.c.run_id == run_id)
            ).first()
            if row is None:
                row = conn.execute(select(t.shared_leases).where(t.shared_leases.c.run_id == run_id)).first()
        if row is None:
            return None
        return Lease(row.job_name, row.run_id, row.owner, row.acquired_at, row.expires_at)

    def get_lease(self, job_name: str) -> Lease | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(t.leases).where(t.leases.c.job_name == job_name)).first()
        if row is None:
            return None
        return Lease(row.job_name, row.run_id, row.owner, row.acquired_at, row.expires_at)

    def finish_run(
        self,
        run_id: str,
        state: RunState,
        *,
        error: str | None = None,
        metrics: Mapping[str, Any] | None = None,
        commit_outputs: bool = False,
    ) -> RunRecord:
        """End a RUNNING run without a bookmark commit, and release its lease.

        With ``commit_outputs`` (a successful run whose bookmark does not move) its
        staged outputs become COMMITTED in the same transaction."""
        if state is RunState.RUNNING:
            raise ValueError("finish_run needs a final state")
        with self.engine.begin() as conn:
            run = rows.run_row(conn, run_id)
            if run.state != RunState.RUNNING.value:
                raise RunFinished(f"run {run_id} already ended as {run.state}")
            values: dict[str, Any] = {
                "state": state.value,
                "ended_at": utcnow(),
                "error": mask_text(error or "") or None,
            }
            if metrics is not None:
                values["metrics"] = rows.to_json(mask_document(dict(metrics)))
            conn.execute(update(t.runs).where(t.runs.c.run_id == run_id).values(**values))
            if commit_outputs:
                rows.commit_outputs(conn, run_id)
            conn.execute(
                t.leases.delete().where(t.leases.c.job_name == run.job_name, t.leases.c.run_id == run_id)
            )
            conn.execute(t.shared_leases.delete().where(t.shared_leases.c.run_id == run_id))
        return self.get_run(run_id)

    def add_run_metrics(self, run_id: str, extra: Mapping[str, Any]) -> None:
        """Keep ``extra`` with an ended run's metrics (its last sample, after its commit)."""
        with self.engine.begin() as conn:
            metrics = {**json.loads(rows.run_row(conn, run_id).metrics), **mask_document(dict(extra))}
            kept = rows.to_json(metrics)
            conn.execute(update(t.runs).where(t.runs.c.run_id == run_id).values(metrics=kept))

    @staticmethod
    def _run_record(row) -> RunRecord:
        return RunRecord(
            run_id=row.run_id,
            job_name=row.job_name,
            attempt=row.attempt,
            state=RunState(row.state),
            bookmark_option=BookmarkOption(row.bookmark_option),
            started_at=row.started_at,
            ended_at=row.ended_at,
            arguments=json.loads(row.arguments),
            error=row.error,
            metrics=json.loads(row.metrics),
            base_version=row.base_version,
            committed_version=row.committed_version,
            previous_run_id=row.previous_run_id,
        )

    def get_run(self, run_id: str) -> RunRecord:
        with self.engine.connect() as conn:
            return self._run_record(rows.run_row(conn, run_id))

    def list_runs(self, job_name: str, limit: int | None = None, offset: int = 0) -> list[RunRecord]:
        """The job's runs, newest first; ``limit`` and ``offset`` page through them."""
        with self.engine.connect() as conn:
            return self._page_of_runs(conn, [t.runs.c.job_name == job_name], limit, offset)

    def _page_of_runs(self, conn, where: list[Any], limit: int | None, offset: int) -> list[RunRecord]:
        query = select(t.runs).where(*where).order_by(t.runs.c.started_at.desc(), t.runs.c.run_id)
        if limit:
            query = query.limit(limit)
        if offset:
            query = query.offset(offset)
        return [self._run_record(row) for row in conn.execute(query).all()]

    def find_runs(
        self,
        job_name: str | None = None,
        *,
        states: Iterable[RunState] = (),
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[list[RunRecord], int]:
        """Runs that match, newest first, a page of them and how many match in all:
        of ``job_name`` (every job when None), in one of ``states`` (any when empty),
        and alive at some moment from ``since`` to ``until`` (a run still going is
        alive until now)."""
        r = t.runs.c
        where = _alive_between(since, until)
        if job_name is not None:
            where.append(r.job_name == job_name)
        wanted = sorted({s.value for s in states})
        if wanted:
            where.append(r.state.in_(wanted))
        with self.engine.connect() as conn:
            found = self._page_of_runs(conn, where, limit, offset)
            if limit and (offset or len(found) == limit):
                total = conn.execute(select(func.count()).select_from(t.runs).where(*where)).scalar_one()
            else:
                total = offset + len(found)
        return found, total

    def run_spans(
        self, since: datetime, until: datetime, limit: int
    ) -> tuple[list[tuple[str, str, RunState, datetime, datetime | None]], int]:
        """(run id, job, state, start, end) of every job's runs alive at some moment from
        ``since`` to ``until``, newest first, at most ``limit`` of them, and how many there
        are: the few columns a timeline draws, without a run's arguments and metrics."""
        r = t.runs.c
        where = _alive_between(since, until)
        query = (
            select(r.run_id, r.job_name, r.state, r.started_at, r.ended_at)
            .where(*where)
            .order_by(r.started_at.desc(), r.run_id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            found = conn.execute(query).all()
            total = len(found)
            if total == limit:
                total = conn.execute(select(func.count()).select_from(t.runs).where(*where)).scalar_one()
        return [(row[0], row[1], RunState(row[2]), row[3], row[4]) for row in found], total

    def count_runs(self, job_name: str) -> int:
        with self.engine.connect() as conn:
            return conn.execute(
                select(func.count()).select_from(t.runs).where(t.runs.c.job_name == job_name)
            ).scalar_one()

    def job_summaries(self) -> list[JobSummary]:
        """Every job the store has runs of: its run count and its latest run, by name."""
        r = t.runs.c
        latest = (
            select(r.job_name, func.max(r.started_at).label("started"), func.count().label("runs"))
            .group_by(r.job_name)
            .subquery()
        )
        query = (
            select(t.runs, latest.c.runs)
            .join(latest, and_(r.job_name == latest.c.job_name, r.started_at == latest.c.started))
            .order_by(r.job_name, r.run_id)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        found: dict[str, JobSummary] = {}
        for row in rows:  # two runs started in the same instant: either is the latest
            found.setdefault(row.job_name, JobSummary(row.job_name, row.runs, self._run_record(row)))
        return list(found.values())

    def latest_finished(self, per_job: int) -> dict[str, list[RunRecord]]:
        """Each job's ``per_job`` latest finished runs, newest first, in one query."""
        r = t.runs.c
        rank = (
            func.row_number()
            .over(partition_by=r.job_name, order_by=(r.started_at.desc(), r.run_id))
            .label("rank")
        )
        ranked = select(t.runs, rank).where(r.state != RunState.RUNNING.value).subquery()
        query = select(ranked).where(ranked.c.rank <= per_job).order_by(ranked.c.job_name, ranked.c.rank)
        found: dict[str, list[RunRecord]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query).all():
                found.setdefault(row.job_name, []).append(self._run_record(row))
        return found

    def run_counts(self) -> dict[tuple[str, RunState], int]:
        """How many runs each job has in each state."""
        r = t.runs.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(r.job_name, r.state, func.count()).group_by(r.job_name, r.state)).all()
        return {(row[0], RunState(row[1])): int(row[2]) for row in rows}

    def run_states(self, run_ids: Iterable[str]) -> dict[str, RunState]:
        """The state of each of ``run_ids`` that the store knows."""
        wanted = sorted(set(run_ids))
        if not wanted:
            return {}
        with self.engine.connect() as conn:
            found = conn.execute(
                select(t.runs.c.run_id, t.runs.c.state).where(t.runs.c.run_id.in_(wanted))
            ).all()
        return {run_id: RunState(state) for run_id, state in found}

    def job_exists(self, job_name: str) -> bool:
        with self.engine.connect() as conn:
            return rows.job_exists(conn, job_name)

    def require_job(self, job_name: str) -> None:
        if not self.job_exists(job_name):
            raise UnknownJob(job_name)


def _alive_between(since: datetime | None, until: datetime | None) -> list[Any]:
    """Conditions on runs alive at some moment from ``since`` to ``until`` (a run still
    going is alive until now); an end left None is open."""
    r = t.runs.c
    where: list[Any] = []
    if until is not None:
        where.append(r.started_at <= until)
    if since is not None:
        where.append(or_(r.ended_at.is_(None), r.ended_at >= since))
    return where


def _previous_run(conn, job_name: str) -> str | None:
    """The job's latest run before the one being recorded."""
    return conn.execute(
        select(t.runs.c.run_id)
        .where(t.runs.c.job_name == job_name)
        .order_by(t.runs.c.started_at.desc())
        .limit(1)
    ).scalar()
