"""Bookmark versions: commits, resets, rewinds and compaction add versions; nothing is
updated in place. The per-file state under them is read by ``file_store``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import (
    BookmarkConflict,
    ConcurrentRunsExceeded,
    LeaseLost,
    NotFound,
    RunFinished,
    StateStoreError,
    UnknownJob,
    UnknownRun,
)
from . import rows
from . import schema as t
from .faults import crash_point
from .file_store import FileStateStore
from .masking import mask_document
from .models import (
    BookmarkVersion,
    CompactionResult,
    CtxCommit,
    FileEntry,
    Lineage,
    RunRecord,
    RunState,
    VersionKind,
)
from .schema import utcnow

log = logging.getLogger("sparkmark.state")


def extend_lineage(parent: Lineage, version: int) -> Lineage:
    """The lineage of a commit at ``version`` whose parent has lineage ``parent``."""
    if parent and parent[-1][1] == version - 1:
        return parent[:-1] + ((parent[-1][0], version),)
    return parent + ((version, version),)


class BookmarkStore(FileStateStore):
    """The bookmark versions concern of ``StateStore``: commits, resets, rewinds and
    compaction add versions (one database handle for all its concerns)."""

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
            number = rows.latest_version_number(conn, job_name)
            return self._version(conn, job_name, number) if number else None

    def get_version(self, job_name: str, version: int) -> BookmarkVersion | None:
        with self.engine.connect() as conn:
            return self._find_version(conn, job_name, version)

    def history(self, job_name: str, limit: int | None = None, offset: int = 0) -> list[BookmarkVersion]:
        """The job's bookmark versions, newest first; ``limit`` and ``offset`` page through them."""
        query = (
            select(t.bookmark_versions.c.version)
            .where(t.bookmark_versions.c.job_name == job_name)
            .order_by(t.bookmark_versions.c.version.desc())
        )
        if limit:
            query = query.limit(limit)
        if offset:
            query = query.offset(offset)
        with self.engine.connect() as conn:
            numbers = list(conn.execute(query).scalars())
            return [self._version(conn, job_name, n) for n in numbers]

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
                row = rows.run_row(conn, run.run_id)
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
                current = rows.latest_version_number(conn, run.job_name)
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
                        lineage=rows.to_json([list(p) for p in lineage]),
                        rewound_to=None,
                    )
                )
                self._insert_ctx_states(conn, run.job_name, new_version, states)
                for c in commits:
                    source_id = self._source(conn, run.job_name, c.ctx, create=True)
                    assert source_id is not None
                    self._write_files(conn, source_id, new_version, c.files)
                    rows.insert_many(
                        conn,
                        t.dir_entries,
                        (
                            {
                                "source_id": source_id,
                                "version": new_version,
                                "dir": d,
                                "mtime_ms": m,
                                "files_digest": c.dir_digests.get(d),
                            }
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
                        metrics=rows.to_json(mask_document(dict(metrics))),
                    )
                )
                rows.commit_outputs(conn, run.run_id)
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

    @staticmethod
    def _insert_ctx_states(conn, job_name: str, version: int, states: Mapping[str, dict]) -> None:
        if states:
            conn.execute(
                insert(t.ctx_states),
                [
                    {"job_name": job_name, "version": version, "ctx": ctx, "state": rows.to_json(state)}
                    for ctx, state in sorted(states.items())
                ],
            )

    def _add_version(
        self, job_name: str, kind: VersionKind, target: BookmarkVersion | None
    ) -> BookmarkVersion:
        with self.engine.begin() as conn:
            if not rows.job_exists(conn, job_name):
                raise UnknownJob(job_name)
            current = rows.latest_version_number(conn, job_name)
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
                    lineage=rows.to_json([list(p) for p in (target.lineage if target else ())]),
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
            if not rows.job_exists(conn, job_name):
                raise UnknownJob(job_name)
            holder = conn.execute(
                select(t.leases.c.run_id, t.leases.c.expires_at).where(t.leases.c.job_name == job_name)
            ).first()
            if holder is not None and holder.expires_at > utcnow():
                raise ConcurrentRunsExceeded(job_name, holder.run_id, holder.expires_at.isoformat())
            current_number = rows.latest_version_number(conn, job_name)
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
                    lineage=rows.to_json([[version, version]]),
                    rewound_to=current_number,
                )
            )
            self._insert_ctx_states(conn, job_name, version, current.ctx_states)
            fi, de = t.files.c, t.dir_entries.c
            before = after = dropped = 0
            sources = conn.execute(
                select(t.sources.c.source_id, t.sources.c.ctx).where(t.sources.c.job_name == job_name)
            ).all()
            for source_id, ctx in sources:
                latest = self._latest_files(conn, source_id, current.lineage)
                own = fi.folder_id.in_(self._source_folders(source_id))
                before += conn.execute(select(func.count()).select_from(t.files).where(own)).scalar_one()
                kept = {p: v for p, v in latest.items() if keep is None or keep(ctx, p)}
                dropped += len(latest) - len(kept)
                after += len(kept)
                dirs = self._latest(
                    conn, t.dir_entries, "dir", ("mtime_ms", "files_digest"), source_id, current.lineage
                )
                # A folder some of whose files were dropped no longer matches its digest.
                thinned = {p.rsplit("/", 1)[0] for p in latest if p not in kept}
                conn.execute(t.files.delete().where(own))
                conn.execute(t.version_files.delete().where(t.version_files.c.source_id == source_id))
                conn.execute(t.dir_entries.delete().where(de.source_id == source_id))
                self._write_files(
                    conn,
                    source_id,
                    version,
                    (FileEntry(p, m, z, e, h) for p, (m, z, e, h, _) in kept.items()),
                )
                rows.insert_many(
                    conn,
                    t.dir_entries,
                    (
                        {
                            "source_id": source_id,
                            "version": version,
                            "dir": d,
                            "mtime_ms": m,
                            "files_digest": None if d in thinned else h,
                        }
                        for d, (m, h) in dirs.items()
                    ),
                )
            result = self._version(conn, job_name, version)
        return CompactionResult(result, before, after, dropped)
