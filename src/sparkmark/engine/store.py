"""The state store: runs, leases and bookmark versions, on SQLAlchemy Core.

SQLite (the default, one file under ``$SPARKMARK_HOME``) and PostgreSQL are
supported. Every state change is one transaction. Nothing is ever updated in
place except a run's own row and the job's lease: bookmark versions, their
per-source summaries and their per-file entries are insert-only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    and_,
    create_engine,
    event,
    false,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError as SAArgumentError
from sqlalchemy.exc import IntegrityError, OperationalError

from ..errors import (
    BookmarkConflict,
    ConcurrentRunsExceeded,
    ConfigError,
    LeaseLost,
    NotFound,
    RunFinished,
    StateStoreError,
    UnknownJob,
    UnknownRun,
)
from ..settings import Settings
from . import schema as t
from .faults import crash_point
from .models import (
    BookmarkOption,
    BookmarkVersion,
    CommittedFile,
    CompactionResult,
    CtxCommit,
    FileEntry,
    Lease,
    Lineage,
    OutputKind,
    OutputRecord,
    OutputState,
    RunRecord,
    RunState,
    VersionKind,
)
from .owner import is_dead
from .schema import utcnow

log = logging.getLogger("sparkmark.state")

_INSERT_BATCH = 5000


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def private_dir(path: Path) -> None:
    """Create ``path`` (and parents) readable by its owner only; the state directory holds
    run arguments and bookmark state that are nobody else's business."""
    if path.exists():
        return
    path.mkdir(parents=True, mode=0o700)
    path.chmod(0o700)  # mkdir's mode is filtered by the umask


def extend_lineage(parent: Lineage, version: int) -> Lineage:
    """The lineage of a commit at ``version`` whose parent has lineage ``parent``."""
    if parent and parent[-1][1] == version - 1:
        return parent[:-1] + ((parent[-1][0], version),)
    return parent + ((version, version),)


def _lineage_clause(column, lineage: Lineage):
    if not lineage:
        return false()
    return or_(*[column.between(lo, hi) for lo, hi in lineage])


class StateStore:
    """A handle on one state store. Cheap to keep open; thread-safe like an Engine."""

    def __init__(self, url: str):
        try:
            parsed = make_url(url)
        except SAArgumentError:
            raise ConfigError(
                f"SPARKMARK_STATE_URL is not a database URL: {url!r} "
                "(expected e.g. sqlite:///path/state.db or postgresql+psycopg://host/db)"
            ) from None
        self.url = parsed
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ConfigError(
                f"state store backend {self.dialect!r} is not supported; use sqlite or postgresql"
            )
        self.engine = self._make_engine(parsed)
        try:
            with self.engine.begin() as conn:
                if self.dialect == "postgresql":
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7357111)")
                t.migrate(conn)
        except OperationalError as exc:
            raise StateStoreError(
                f"cannot open the state store at {self.display_url}: {exc.orig}".strip()
            ) from None

    def ensure_tables(self, component: str, metadata, version: int = 1) -> None:
        """Create a service's own tables (catalog, crawlers…) once, recording their
        version under ``component`` in the schema table. The engine knows nothing of
        what they hold."""
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7357111)")
            found = conn.execute(
                select(t.schema_info.c.value).where(t.schema_info.c.name == component)
            ).scalar()
            if found is None:
                metadata.create_all(conn)
                conn.execute(insert(t.schema_info).values(name=component, value=str(version)))
            elif int(found) > version:
                raise StateStoreError(
                    f"the state store's {component} is at version {found}, newer than this "
                    f"sparkmark understands ({version}); upgrade sparkmark"
                )

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> StateStore:
        return cls((settings or Settings.from_env()).state_url)

    @property
    def display_url(self) -> str:
        """The URL with any password hidden, safe for logs."""
        return self.url.render_as_string(hide_password=True)

    @staticmethod
    def _make_engine(url) -> Engine:
        if url.get_backend_name() != "sqlite":
            return create_engine(url, pool_pre_ping=True)
        if url.database and url.database != ":memory:":
            private_dir(Path(url.database).parent)
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            # Take the write lock up front so two writers queue instead of deadlocking.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ runs

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
    ) -> RunRecord:
        """Take the job's lease and record a RUNNING run, atomically.

        Raises ConcurrentRunsExceeded when another run holds an unexpired lease.
        A lease that expired is taken over, and the run that held it is marked FAILED.
        """
        now = utcnow()
        expires = now + timedelta(seconds=lease_seconds)
        try:
            with self.engine.begin() as conn:
                self._take_lease(conn, job_name, run_id, owner, now, expires)
                latest = self._latest_version_number(conn, job_name)
                previous = conn.execute(
                    select(t.runs.c.run_id)
                    .where(t.runs.c.job_name == job_name)
                    .order_by(t.runs.c.started_at.desc())
                    .limit(1)
                ).scalar()
                conn.execute(
                    insert(t.runs).values(
                        run_id=run_id,
                        job_name=job_name,
                        attempt=attempt,
                        state=RunState.RUNNING.value,
                        bookmark_option=option.value,
                        started_at=now,
                        arguments=_json(dict(arguments)),
                        metrics=_json({}),
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

    def heartbeat(self, job_name: str, run_id: str, lease_seconds: float) -> bool:
        """Extend this run's lease. False when the lease is no longer this run's."""
        with self.engine.begin() as conn:
            return (
                conn.execute(
                    update(t.leases)
                    .where(t.leases.c.job_name == job_name, t.leases.c.run_id == run_id)
                    .values(expires_at=utcnow() + timedelta(seconds=lease_seconds))
                ).rowcount
                == 1
            )

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
            run = self._run_row(conn, run_id)
            if run.state != RunState.RUNNING.value:
                raise RunFinished(f"run {run_id} already ended as {run.state}")
            values: dict[str, Any] = {"state": state.value, "ended_at": utcnow(), "error": error}
            if metrics is not None:
                values["metrics"] = _json(dict(metrics))
            conn.execute(update(t.runs).where(t.runs.c.run_id == run_id).values(**values))
            if commit_outputs:
                self._commit_outputs(conn, run_id)
            conn.execute(
                t.leases.delete().where(t.leases.c.job_name == run.job_name, t.leases.c.run_id == run_id)
            )
        return self.get_run(run_id)

    def _run_row(self, conn: Connection, run_id: str):
        row = conn.execute(select(t.runs).where(t.runs.c.run_id == run_id)).first()
        if row is None:
            raise UnknownRun(run_id)
        return row

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
            return self._run_record(self._run_row(conn, run_id))

    def list_runs(self, job_name: str, limit: int | None = None) -> list[RunRecord]:
        query = (
            select(t.runs)
            .where(t.runs.c.job_name == job_name)
            .order_by(t.runs.c.started_at.desc(), t.runs.c.run_id)
        )
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [self._run_record(r) for r in rows]

    def job_exists(self, job_name: str) -> bool:
        with self.engine.connect() as conn:
            return self._job_exists(conn, job_name)

    @staticmethod
    def _job_exists(conn: Connection, job_name: str) -> bool:
        for table in (t.runs, t.bookmark_versions):
            found = conn.execute(
                select(table.c.job_name).where(table.c.job_name == job_name).limit(1)
            ).first()
            if found:
                return True
        return False

    def require_job(self, job_name: str) -> None:
        if not self.job_exists(job_name):
            raise UnknownJob(job_name)

    # ------------------------------------------------------------- bookmarks

    @staticmethod
    def _latest_version_number(conn: Connection, job_name: str) -> int:
        return (
            conn.execute(
                select(func.max(t.bookmark_versions.c.version)).where(
                    t.bookmark_versions.c.job_name == job_name
                )
            ).scalar()
            or 0
        )

    def _version(self, conn: Connection, job_name: str, version: int) -> BookmarkVersion:
        """A version that must exist (its number was just read or written)."""
        found = self._find_version(conn, job_name, version)
        if found is None:
            raise StateStoreError(
                f"bookmark version {version} of job {job_name!r} is missing from the state store"
            )
        return found

    def _find_version(self, conn: Connection, job_name: str, version: int) -> BookmarkVersion | None:
        row = conn.execute(
            select(t.bookmark_versions).where(
                t.bookmark_versions.c.job_name == job_name,
                t.bookmark_versions.c.version == version,
            )
        ).first()
        if row is None:
            return None
        states = {
            r.ctx: json.loads(r.state)
            for r in conn.execute(
                select(t.ctx_states.c.ctx, t.ctx_states.c.state).where(
                    t.ctx_states.c.job_name == job_name, t.ctx_states.c.version == version
                )
            )
        }
        return BookmarkVersion(
            job_name=row.job_name,
            version=row.version,
            kind=VersionKind(row.kind),
            run=row.run,
            attempt=row.attempt,
            run_id=row.run_id,
            previous_run_id=row.previous_run_id,
            created_at=row.created_at,
            lineage=tuple(tuple(pair) for pair in json.loads(row.lineage)),
            rewound_to=row.rewound_to,
            ctx_states=states,
        )

    def latest_version(self, job_name: str) -> BookmarkVersion | None:
        with self.engine.connect() as conn:
            number = self._latest_version_number(conn, job_name)
            return self._version(conn, job_name, number) if number else None

    def get_version(self, job_name: str, version: int) -> BookmarkVersion | None:
        with self.engine.connect() as conn:
            return self._find_version(conn, job_name, version)

    def history(self, job_name: str) -> list[BookmarkVersion]:
        with self.engine.connect() as conn:
            numbers = conn.execute(
                select(t.bookmark_versions.c.version)
                .where(t.bookmark_versions.c.job_name == job_name)
                .order_by(t.bookmark_versions.c.version.desc())
            ).scalars()
            return [self._version(conn, job_name, n) for n in list(numbers)]

    def version_after_run(self, job_name: str, run_id: str) -> BookmarkVersion:
        """The bookmark as it stood just after ``run_id``.

        For a run that committed, that is its commit. For one that did not (it
        failed, or ran paused), it is the last version created before the run ended,
        as Glue reads "the last successful run before and including" a run id.
        """
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.runs).where(t.runs.c.run_id == run_id, t.runs.c.job_name == job_name)
            ).first()
            if row is None:
                raise UnknownRun(run_id, job_name)
            compacted_at = self._last_compaction(conn, job_name)
            if row.committed_version is not None and row.committed_version >= compacted_at:
                return self._version(conn, job_name, row.committed_version)
            if compacted_at and row.started_at < self._version(conn, job_name, compacted_at).created_at:
                raise NotFound(
                    f"run {run_id} is older than the compaction of job {job_name!r} at bookmark "
                    f"version {compacted_at}; states before it can no longer be restored"
                )
            cutoff = row.ended_at or row.started_at
            number = conn.execute(
                select(func.max(t.bookmark_versions.c.version)).where(
                    t.bookmark_versions.c.job_name == job_name,
                    t.bookmark_versions.c.created_at <= cutoff,
                )
            ).scalar()
            if not number:
                return BookmarkVersion(job_name, 0, VersionKind.RESET, 0, 0, None, None, cutoff, (), None, {})
            return self._version(conn, job_name, number)

    @staticmethod
    def _last_compaction(conn: Connection, job_name: str) -> int:
        bv = t.bookmark_versions.c
        return (
            conn.execute(
                select(func.max(bv.version)).where(
                    bv.job_name == job_name, bv.kind == VersionKind.COMPACT.value
                )
            ).scalar()
            or 0
        )

    def commit(
        self,
        run: RunRecord,
        ctx_commits: Iterable[CtxCommit],
        *,
        metrics: Mapping[str, Any],
    ) -> BookmarkVersion:
        """Add the run's bookmark version and mark the run SUCCEEDED, atomically.

        Optimistic: the new version must directly follow the one the run started
        from, and the run must still hold the job's lease. Cost is proportional to
        the files this run processed, not to the files ever tracked.
        """
        new_version = run.base_version + 1
        commits = list(ctx_commits)
        now = utcnow()
        try:
            with self.engine.begin() as conn:
                row = self._run_row(conn, run.run_id)
                if row.state != RunState.RUNNING.value:
                    raise RunFinished(f"run {run.run_id} already ended as {row.state}; it cannot commit")
                holder = conn.execute(
                    select(t.leases.c.run_id).where(t.leases.c.job_name == run.job_name)
                ).scalar()
                if holder is not None and holder != run.run_id:
                    raise LeaseLost(
                        f"run {run.run_id} lost the lease of job {run.job_name!r} to run "
                        f"{holder} (it stopped renewing for longer than the lease time); "
                        "nothing was committed. Re-run the job"
                    )
                current = self._latest_version_number(conn, run.job_name)
                if current != run.base_version:
                    raise BookmarkConflict(
                        f"the bookmark of job {run.job_name!r} moved from version "
                        f"{run.base_version} to {current} while run {run.run_id} was working "
                        "(a reset, a rewind or another run); nothing was committed. "
                        "Re-run the job to process data against the new bookmark"
                    )
                parent = self._version(conn, run.job_name, current) if current else None
                lineage = extend_lineage(parent.lineage if parent else (), new_version)
                states = dict(parent.ctx_states) if parent else {}
                for c in commits:
                    states[c.ctx] = c.state
                conn.execute(
                    insert(t.bookmark_versions).values(
                        job_name=run.job_name,
                        version=new_version,
                        kind=VersionKind.COMMIT.value,
                        run=(parent.run if parent else 0) + 1,
                        attempt=run.attempt,
                        run_id=run.run_id,
                        previous_run_id=parent.run_id if parent else None,
                        created_at=now,
                        lineage=_json([list(p) for p in lineage]),
                        rewound_to=None,
                    )
                )
                self._insert_ctx_states(conn, run.job_name, new_version, states)
                for c in commits:
                    source_id = self._source(conn, run.job_name, c.ctx, create=True)
                    self._insert_many(
                        conn,
                        t.file_entries,
                        (
                            {
                                "source_id": source_id,
                                "version": new_version,
                                "path": f.path,
                                "mtime_ms": f.mtime_ms,
                                "size": f.size,
                            }
                            for f in c.files
                        ),
                    )
                    self._insert_many(
                        conn,
                        t.dir_entries,
                        (
                            {"source_id": source_id, "version": new_version, "dir": d, "mtime_ms": m}
                            for d, m in c.dirs.items()
                        ),
                    )
                conn.execute(
                    update(t.runs)
                    .where(t.runs.c.run_id == run.run_id)
                    .values(
                        state=RunState.SUCCEEDED.value,
                        ended_at=now,
                        committed_version=new_version,
                        metrics=_json(dict(metrics)),
                    )
                )
                self._commit_outputs(conn, run.run_id)
                conn.execute(
                    t.leases.delete().where(
                        t.leases.c.job_name == run.job_name, t.leases.c.run_id == run.run_id
                    )
                )
                crash_point("commit")
        except IntegrityError:
            raise BookmarkConflict(
                f"another writer added bookmark version {new_version} of job "
                f"{run.job_name!r} at the same moment; nothing was committed. Re-run the job"
            ) from None
        with self.engine.connect() as conn:
            return self._version(conn, run.job_name, new_version)

    # --------------------------------------------------------------- outputs

    def stage_output(
        self, run_id: str, *, ctx: str, kind: OutputKind, target: str, plan: Mapping[str, Any]
    ) -> OutputRecord:
        """Record a write before its first byte: its run must be RUNNING. Returns the
        record with the write's sequence number within the run."""
        with self.engine.begin() as conn:
            run = self._run_row(conn, run_id)
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
                    plan=_json(dict(plan)),
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
            values["plan"] = _json(dict(plan))
        query = update(t.outputs).where(t.outputs.c.run_id == run_id, t.outputs.c.seq == seq)
        if expect is not None:
            query = query.where(t.outputs.c.state.in_([s.value for s in expect]))
        with self.engine.begin() as conn:
            return conn.execute(query.values(**values)).rowcount == 1

    @staticmethod
    def _commit_outputs(conn: Connection, run_id: str) -> None:
        conn.execute(
            update(t.outputs)
            .where(t.outputs.c.run_id == run_id, t.outputs.c.state == OutputState.STAGED.value)
            .values(state=OutputState.COMMITTED.value, updated_at=utcnow())
        )

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

    @staticmethod
    def _insert_many(conn: Connection, table, rows: Iterable[dict]) -> None:
        batch: list[dict] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= _INSERT_BATCH:
                conn.execute(insert(table), batch)
                batch = []
        if batch:
            conn.execute(insert(table), batch)

    @staticmethod
    def _insert_ctx_states(conn, job_name: str, version: int, states: Mapping[str, dict]) -> None:
        if states:
            conn.execute(
                insert(t.ctx_states),
                [
                    {"job_name": job_name, "version": version, "ctx": ctx, "state": _json(state)}
                    for ctx, state in sorted(states.items())
                ],
            )

    @staticmethod
    def _source(conn: Connection, job_name: str, ctx: str, *, create: bool = False) -> int | None:
        found = conn.execute(
            select(t.sources.c.source_id).where(t.sources.c.job_name == job_name, t.sources.c.ctx == ctx)
        ).scalar()
        if found is not None or not create:
            return found
        return conn.execute(
            insert(t.sources).values(job_name=job_name, ctx=ctx).returning(t.sources.c.source_id)
        ).scalar_one()

    def _add_version(
        self, job_name: str, kind: VersionKind, target: BookmarkVersion | None
    ) -> BookmarkVersion:
        with self.engine.begin() as conn:
            if not self._job_exists(conn, job_name):
                raise UnknownJob(job_name)
            current = self._latest_version_number(conn, job_name)
            parent = self._version(conn, job_name, current) if current else None
            version = current + 1
            conn.execute(
                insert(t.bookmark_versions).values(
                    job_name=job_name,
                    version=version,
                    kind=kind.value,
                    run=target.run if target else 0,
                    attempt=target.attempt if target else 0,
                    run_id=target.run_id if target else None,
                    previous_run_id=parent.run_id if parent else None,
                    created_at=utcnow(),
                    lineage=_json([list(p) for p in (target.lineage if target else ())]),
                    rewound_to=target.version if target else None,
                )
            )
            self._insert_ctx_states(conn, job_name, version, target.ctx_states if target else {})
            return self._version(conn, job_name, version)

    def reset(self, job_name: str) -> BookmarkVersion:
        """Add a version with nothing processed. Earlier versions stay readable."""
        return self._add_version(job_name, VersionKind.RESET, None)

    def rewind(self, job_name: str, run_id: str) -> BookmarkVersion:
        """Add a version whose state equals the state just after ``run_id``."""
        target = self.version_after_run(job_name, run_id)
        if target.version == 0:
            return self.reset(job_name)
        return self._add_version(job_name, VersionKind.REWIND, target)

    def compact(self, job_name: str, keep: Callable[[str, str], bool] | None = None) -> CompactionResult:
        """Fold the current state into one new version and delete older per-file rows.

        The new version has the same state (less the files ``keep(ctx, path)``
        rejects); the rows of superseded entries and of earlier versions are
        deleted, so versions before it can no longer be restored. Refused while a
        run of the job holds the lease.
        """
        with self.engine.begin() as conn:
            if not self._job_exists(conn, job_name):
                raise UnknownJob(job_name)
            holder = conn.execute(
                select(t.leases.c.run_id, t.leases.c.expires_at).where(t.leases.c.job_name == job_name)
            ).first()
            if holder is not None and holder.expires_at > utcnow():
                raise ConcurrentRunsExceeded(job_name, holder.run_id, holder.expires_at.isoformat())
            current_number = self._latest_version_number(conn, job_name)
            if not current_number:
                raise NotFound(f"job {job_name!r} has no bookmark version to compact")
            current = self._version(conn, job_name, current_number)
            version = current_number + 1
            conn.execute(
                insert(t.bookmark_versions).values(
                    job_name=job_name,
                    version=version,
                    kind=VersionKind.COMPACT.value,
                    run=current.run,
                    attempt=current.attempt,
                    run_id=current.run_id,
                    previous_run_id=current.previous_run_id,
                    created_at=utcnow(),
                    lineage=_json([[version, version]]),
                    rewound_to=current_number,
                )
            )
            self._insert_ctx_states(conn, job_name, version, current.ctx_states)
            fe, de = t.file_entries.c, t.dir_entries.c
            before = after = dropped = 0
            sources = conn.execute(
                select(t.sources.c.source_id, t.sources.c.ctx).where(t.sources.c.job_name == job_name)
            ).all()
            for source_id, ctx in sources:
                latest = self._latest(
                    conn, t.file_entries, "path", ("mtime_ms", "size"), source_id, current.lineage
                )
                before += conn.execute(
                    select(func.count()).select_from(t.file_entries).where(fe.source_id == source_id)
                ).scalar_one()
                kept = {p: v for p, v in latest.items() if keep is None or keep(ctx, p)}
                dropped += len(latest) - len(kept)
                after += len(kept)
                dirs = self._latest(conn, t.dir_entries, "dir", ("mtime_ms",), source_id, current.lineage)
                conn.execute(t.file_entries.delete().where(fe.source_id == source_id))
                conn.execute(t.dir_entries.delete().where(de.source_id == source_id))
                self._insert_many(
                    conn,
                    t.file_entries,
                    (
                        {"source_id": source_id, "version": version, "path": p, "mtime_ms": m, "size": z}
                        for p, (m, z) in kept.items()
                    ),
                )
                self._insert_many(
                    conn,
                    t.dir_entries,
                    (
                        {"source_id": source_id, "version": version, "dir": d, "mtime_ms": m}
                        for d, (m,) in dirs.items()
                    ),
                )
            result = self._version(conn, job_name, version)
        return CompactionResult(result, before, after, dropped)

    # ------------------------------------------------------------ file state

    @staticmethod
    def _latest(
        conn: Connection,
        table,
        key: str,
        values: tuple[str, ...],
        source_id: int,
        lineage: Lineage,
        where=None,
    ) -> dict[str, tuple]:
        """Each key's latest row in ``lineage``: later versions overwrite earlier ones."""
        c = table.c
        query = select(c[key], *[c[v] for v in values]).where(
            c.source_id == source_id, _lineage_clause(c.version, lineage)
        )
        if where is not None:
            query = query.where(where)
        rows = conn.execute(query.order_by(c.version))
        return {row[0]: tuple(row[1:]) for row in rows}

    def processed_files(
        self, job_name: str, ctx: str, lineage: Lineage, folders: Iterable[str] | None = None
    ) -> dict[str, FileEntry]:
        """Each path's latest processed (mtime, size) in a version with this lineage.

        With ``folders``, only entries below those folders are read (at least those:
        a lookup by exact path never needs more)."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not lineage:
                return {}
            where = None if folders is None else self._below(list(folders))
            latest = self._latest(
                conn, t.file_entries, "path", ("mtime_ms", "size"), source_id, lineage, where
            )
        return {p: FileEntry(p, m, z) for p, (m, z) in latest.items()}

    def _below(self, folders: list[str]):
        path = t.file_entries.c.path
        if not folders:
            return false()
        terms = []
        for folder in folders:
            prefix = folder.rstrip("/") + "/"
            if self.dialect == "sqlite":  # binary order: exactly the paths under the folder
                terms.append(and_(path >= prefix, path < prefix[:-1] + "0"))
            else:
                escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                terms.append(path.like(escaped + "%", escape="\\"))
        return or_(*terms)

    def processed_dirs(self, job_name: str, ctx: str, lineage: Lineage) -> dict[str, int]:
        """Each fully processed leaf folder's mtime in a version with this lineage."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not lineage:
                return {}
            latest = self._latest(conn, t.dir_entries, "dir", ("mtime_ms",), source_id, lineage)
        return {d: m for d, (m,) in latest.items()}

    def committed_files(self, job_name: str, ctx: str, version: BookmarkVersion) -> list[CommittedFile]:
        """The per-file state of ``ctx`` in ``version``: each path's latest entry."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not version.lineage:
                return []
            fe, bv = t.file_entries.c, t.bookmark_versions.c
            rows = conn.execute(
                select(fe.path, fe.mtime_ms, fe.size, fe.version, bv.run_id, bv.created_at)
                .join_from(
                    t.file_entries,
                    t.bookmark_versions,
                    and_(bv.job_name == job_name, bv.version == fe.version),
                )
                .where(fe.source_id == source_id, _lineage_clause(fe.version, version.lineage))
                .order_by(fe.version)
            )
            latest: dict[str, CommittedFile] = {}
            for r in rows:
                latest[r.path] = CommittedFile(r.path, r.mtime_ms, r.size, r.version, r.run_id, r.created_at)
        return sorted(latest.values(), key=lambda f: f.path)
