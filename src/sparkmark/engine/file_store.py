"""The per-file state under bookmark versions, as runs and doors read it: each path's
latest processed entry in a lineage, the folders' marks, a version's committed files
and pages of them. Reads only; ``bookmark_store`` writes."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, Engine, and_, false, func, insert, or_, select

from . import schema as t
from .models import BookmarkVersion, CommittedFile, Lineage, ProcessedFiles


def lineage_clause(column, lineage: Lineage):
    if not lineage:
        return false()
    return or_(*[column.between(lo, hi) for lo, hi in lineage])


class FileStateStore:
    """The per-file state concern of ``StateStore`` (one database handle for all its concerns)."""

    engine: Engine
    dialect: str

    def files_recorded(self, job_name: str, versions: Iterable[int]) -> dict[tuple[int, str], int]:
        """How many per-file rows each of ``versions`` recorded, by (version, ctx): the
        files a commit added or saw modified (a compaction records its whole state)."""
        wanted = sorted(set(versions))
        if not wanted:
            return {}
        fe, src = t.file_entries.c, t.sources.c
        query = (
            select(fe.version, src.ctx, func.count())
            .join_from(t.file_entries, t.sources, src.source_id == fe.source_id)
            .where(src.job_name == job_name, fe.version.in_(wanted))
            .group_by(fe.version, src.ctx)
        )
        with self.engine.connect() as conn:
            return {(version, ctx): count for version, ctx, count in conn.execute(query)}

    def file_page(
        self,
        job_name: str,
        ctx: str,
        version: BookmarkVersion,
        *,
        contains: str | None = None,
        after: str | None = None,
        limit: int = 50,
    ) -> list[CommittedFile]:
        """One page of ``ctx``'s per-file state in ``version``, in path order: the paths
        after ``after`` (whose text holds ``contains``, when given), each with its latest
        entry. Walks the (source, path) index, so a page costs its own rows."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not version.lineage:
                return []
            fe = t.file_entries.c
            query = select(fe.path, func.max(fe.version).label("version")).where(
                fe.source_id == source_id, lineage_clause(fe.version, version.lineage)
            )
            if after is not None:
                query = query.where(fe.path > after)
            if contains:
                query = query.where(fe.path.contains(contains, autoescape=True))
            found = dict(conn.execute(query.group_by(fe.path).order_by(fe.path).limit(limit)).all())
            if not found:
                return []
            # Each path's latest row, looked up on the primary key (source, version, path):
            # the page's versions times its paths, the pairs kept below.
            rows = conn.execute(
                self._committed(job_name, source_id).where(
                    fe.version.in_(set(found.values())), fe.path.in_(list(found))
                )
            ).all()
        files = [
            CommittedFile(r.path, r.mtime_ms, r.size, r.version, r.run_id, r.created_at)
            for r in rows
            if found.get(r.path) == r.version
        ]
        return sorted(files, key=lambda f: f.path)

    @staticmethod
    def _committed(job_name: str, source_id: int):
        """A source's per-file rows, each with the run and time of the version that recorded it."""
        fe, bv = t.file_entries.c, t.bookmark_versions.c
        return (
            select(fe.path, fe.mtime_ms, fe.size, fe.version, bv.run_id, bv.created_at)
            .join_from(
                t.file_entries,
                t.bookmark_versions,
                and_(bv.job_name == job_name, bv.version == fe.version),
            )
            .where(fe.source_id == source_id)
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

    @staticmethod
    def _latest(
        conn: Connection,
        table,
        key: str,
        values: tuple[str, ...],
        source_id: int,
        lineage: Lineage,
        where=None,
        by_key: bool = False,
    ) -> dict[str, tuple]:
        """Each key's latest row in ``lineage``: later versions overwrite earlier ones.

        ``by_key``: ``where`` narrows the key to a range, to be read through the key's
        index. The rows then come in key order and the latest version of each key is
        kept here: ordered by version, SQLite would walk the table's (source, version)
        key instead, which the lineage covers whole, and read every row of the source."""
        c = table.c
        query = select(c[key], *[c[v] for v in values], c.version).where(
            c.source_id == source_id, lineage_clause(c.version, lineage)
        )
        if where is not None:
            query = query.where(where)
        if not by_key:
            return {row[0]: tuple(row[1:-1]) for row in conn.execute(query.order_by(c.version)).all()}
        latest: dict[str, tuple] = {}
        newest: dict[str, int] = {}
        for row in conn.execute(query.order_by(c[key])).all():
            if row[-1] >= newest.get(row[0], -1):
                newest[row[0]] = row[-1]
                latest[row[0]] = tuple(row[1:-1])
        return latest

    def processed_files(
        self, job_name: str, ctx: str, lineage: Lineage, folders: Iterable[str] | None = None
    ) -> ProcessedFiles:
        """Each path's latest processed (mtime, size) in a version with this lineage.

        With ``folders``, only entries below those folders are read (at least those:
        a lookup by exact path never needs more)."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not lineage:
                return ProcessedFiles({})
            columns = ("mtime_ms", "size", "etag", "content_sha256", "version")
            if folders is None:
                return ProcessedFiles(self._latest(conn, t.file_entries, "path", columns, source_id, lineage))
            # One range query a folder, each a seek in the (source, path) index.
            latest: dict[str, tuple] = {}
            for folder in folders:
                where = self._below(folder)
                latest.update(
                    self._latest(
                        conn, t.file_entries, "path", columns, source_id, lineage, where, by_key=True
                    )
                )
        return ProcessedFiles(latest)

    def _below(self, folder: str):
        """The paths under ``folder``, as one index range (one seek per folder: an OR of
        several ranges made SQLite read every row of the source)."""
        path = t.file_entries.c.path
        prefix = folder.rstrip("/") + "/"
        if self.dialect == "sqlite":  # binary order: exactly the paths under the folder
            return and_(path >= prefix, path < prefix[:-1] + "0")
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return path.like(escaped + "%", escape="\\")

    def processed_dirs(self, job_name: str, ctx: str, lineage: Lineage) -> dict[str, int]:
        """Each fully processed leaf folder's mtime in a version with this lineage."""
        return {d: m for d, (m, _) in self.dir_marks(job_name, ctx, lineage).items()}

    def dir_marks(self, job_name: str, ctx: str, lineage: Lineage) -> dict[str, tuple[int, str | None]]:
        """Each fully processed leaf folder's (mtime, digest of its files) in a version
        with this lineage; the digest is None in marks recorded before it existed."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not lineage:
                return {}
            latest = self._latest(
                conn, t.dir_entries, "dir", ("mtime_ms", "files_digest"), source_id, lineage
            )
        return {d: (m, h) for d, (m, h) in latest.items()}

    def committed_files(self, job_name: str, ctx: str, version: BookmarkVersion) -> list[CommittedFile]:
        """The per-file state of ``ctx`` in ``version``: each path's latest entry."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not version.lineage:
                return []
            fe = t.file_entries.c
            rows = conn.execute(
                self._committed(job_name, source_id)
                .where(lineage_clause(fe.version, version.lineage))
                .order_by(fe.version)
            )
            latest: dict[str, CommittedFile] = {}
            for r in rows:
                latest[r.path] = CommittedFile(r.path, r.mtime_ms, r.size, r.version, r.run_id, r.created_at)
        return sorted(latest.values(), key=lambda f: f.path)
