"""The per-file state under bookmark versions: each path's latest processed entry in a
lineage, the folders' marks, a version's committed files and pages of them, and the
writing of a commit's files. A file is stored as its folder's number and its name
(``schema.files``); the folder's path is in ``schema.folders`` once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import Connection, Engine, and_, false, func, insert, literal, or_, select, tuple_

from . import rows
from . import schema as t
from .models import BookmarkVersion, CommittedFile, FileEntry, Lineage, ProcessedFiles, Recorded
from .schema import split_path

IN_LIST = 500  # folder numbers in one IN (...)


def lineage_clause(column, lineage: Lineage):
    if not lineage:
        return false()
    return or_(*[column.between(lo, hi) for lo, hi in lineage])


def _chunks(values: list, size: int) -> Iterator[list]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


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
        vf, src = t.version_files.c, t.sources.c
        query = (
            select(vf.version, src.ctx, vf.files)
            .join_from(t.version_files, t.sources, src.source_id == vf.source_id)
            .where(src.job_name == job_name, vf.version.in_(wanted))
        )
        with self.engine.connect() as conn:
            return {(version, ctx): count for version, ctx, count in conn.execute(query)}

    # -- writing ---------------------------------------------------------------------

    def _write_files(self, conn: Connection, source_id: int, version: int, files: Iterable[FileEntry]) -> int:
        """Record ``files`` under ``version``: their folders are numbered once per
        source, each file is a row of (folder, name). Returns how many were written."""
        entries = list(files)
        if not entries:
            return 0
        split = [split_path(f.path) for f in entries]
        ids = self._folder_ids(conn, source_id, {folder for folder, _ in split})
        rows.copy_many(
            conn,
            t.files,
            ("folder_id", "name", "version", "mtime_ms", "size", "etag", "content_sha256"),
            (
                (ids[folder], name, version, f.mtime_ms, f.size, f.etag, f.content_sha256)
                for (folder, name), f in zip(split, entries, strict=True)
            ),
        )
        conn.execute(insert(t.version_files).values(source_id=source_id, version=version, files=len(entries)))
        return len(entries)

    @staticmethod
    def _known_folders(conn: Connection, source_id: int, paths: Iterable[str]) -> dict[str, int]:
        """The numbers of those of ``paths`` (each ending in "/") that are the source's
        folders, looked up on the folders' (source, path) key."""
        fo = t.folders.c
        found: dict[str, int] = {}
        for chunk in _chunks(sorted(paths), IN_LIST):
            query = select(fo.path, fo.folder_id).where(fo.source_id == source_id, fo.path.in_(chunk))
            found.update(conn.execute(query).all())
        return found

    def _folder_ids(self, conn: Connection, source_id: int, paths: set[str]) -> dict[str, int]:
        """The numbers of ``paths`` among the source's folders, numbering the new ones."""
        found = self._known_folders(conn, source_id, paths)
        missing = paths - found.keys()
        if missing:
            rows.insert_many(conn, t.folders, ({"source_id": source_id, "path": p} for p in sorted(missing)))
            found.update(self._known_folders(conn, source_id, missing))
        return found

    # -- reading ---------------------------------------------------------------------

    @staticmethod
    def _folders(conn: Connection, source_id: int) -> dict[int, str]:
        fo = t.folders.c
        return dict(conn.execute(select(fo.folder_id, fo.path).where(fo.source_id == source_id)).all())

    @staticmethod
    def _source_folders(source_id: int):
        return select(t.folders.c.folder_id).where(t.folders.c.source_id == source_id).scalar_subquery()

    def _latest_files(
        self, conn: Connection, source_id: int, lineage: Lineage, folders: dict[int, str] | None = None
    ) -> dict[str, Recorded]:
        """Each path's latest (mtime, size, etag, sha256, version) in ``lineage``, of the
        whole source or of the folders given (number → path). The rows come in key
        order (folder, name, version), so a path's last row is its latest."""
        paths = self._folders(conn, source_id) if folders is None else folders
        fi = t.files.c
        query = select(
            fi.folder_id, fi.name, fi.mtime_ms, fi.size, fi.etag, fi.content_sha256, fi.version
        ).where(lineage_clause(fi.version, lineage))
        if folders is None:
            selections = [query.where(fi.folder_id.in_(self._source_folders(source_id)))]
        else:
            selections = [query.where(fi.folder_id.in_(chunk)) for chunk in _chunks(sorted(folders), IN_LIST)]
        latest: dict[str, Recorded] = {}
        for selection in selections:
            ordered = selection.order_by(fi.folder_id, fi.name, fi.version)
            for folder_id, name, mtime, size, etag, sha, version in conn.execute(ordered):
                latest[paths[folder_id] + name] = (mtime, size, etag, sha, version)
        return latest

    def _committed(self, job_name: str):
        """Per-file rows with their folder's path and the run and time of the version
        that recorded each."""
        fi, fo, bv = t.files.c, t.folders.c, t.bookmark_versions.c
        return (
            select(
                fo.path.label("folder"), fi.name, fi.mtime_ms, fi.size, fi.version, bv.run_id, bv.created_at
            )
            .join_from(t.files, t.folders, fo.folder_id == fi.folder_id)
            .join(t.bookmark_versions, and_(bv.job_name == job_name, bv.version == fi.version))
        )

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
        """One page of ``ctx``'s per-file state in ``version``, in order of folder then
        name: the paths after ``after`` (whose text holds ``contains``, when given), each
        with its latest entry. Walks the folders' (source, path) index and each folder's
        range of the files' key, so a page costs its own rows."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not version.lineage:
                return []
            fi, fo = t.files.c, t.folders.c
            query = (
                select(fo.path, fi.name, func.max(fi.version).label("version"))
                .join_from(t.files, t.folders, fo.folder_id == fi.folder_id)
                .where(fo.source_id == source_id, lineage_clause(fi.version, version.lineage))
            )
            if after is not None:
                query = query.where(
                    tuple_(fo.path, fi.name) > tuple_(*(literal(v) for v in split_path(after)))
                )
            if contains:
                query = query.where((fo.path + fi.name).contains(contains, autoescape=True))
            page = conn.execute(
                query.group_by(fo.path, fi.name).order_by(fo.path, fi.name).limit(limit)
            ).all()
            if not page:
                return []
            wanted = {(folder, name): v for folder, name, v in page}
            found = conn.execute(
                self._committed(job_name).where(
                    fo.source_id == source_id,
                    fi.version.in_(set(wanted.values())),
                    tuple_(fo.path, fi.name).in_(list(wanted)),
                )
            ).all()
        files = [
            CommittedFile(r.folder + r.name, r.mtime_ms, r.size, r.version, r.run_id, r.created_at)
            for r in found
            if wanted.get((r.folder, r.name)) == r.version
        ]
        return sorted(files, key=lambda f: split_path(f.path))

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
        conn: Connection, table, key: str, values: tuple[str, ...], source_id: int, lineage: Lineage
    ) -> dict[str, tuple]:
        """Each key's latest row of a per-source table keyed by version (the folders'
        marks) in ``lineage``: later versions overwrite earlier ones."""
        c = table.c
        query = select(c[key], *[c[v] for v in values]).where(
            c.source_id == source_id, lineage_clause(c.version, lineage)
        )
        return {row[0]: tuple(row[1:]) for row in conn.execute(query.order_by(c.version)).all()}

    def processed_files(
        self, job_name: str, ctx: str, lineage: Lineage, folders: Iterable[str] | None = None
    ) -> ProcessedFiles:
        """Each path's latest processed (mtime, size) in a version with this lineage.

        With ``folders``, only the entries of files directly in those folders are read
        (each folder's number found on the folders' key, then its range of the files'
        key): what a listing compares, folder by folder."""
        with self.engine.connect() as conn:
            source_id = self._source(conn, job_name, ctx)
            if source_id is None or not lineage:
                return ProcessedFiles({})
            if folders is None:
                return ProcessedFiles(self._latest_files(conn, source_id, lineage))
            known = self._known_folders(conn, source_id, {f.rstrip("/") + "/" for f in folders})
            wanted = {folder_id: path for path, folder_id in known.items()}
            if not wanted:
                return ProcessedFiles({})
            return ProcessedFiles(self._latest_files(conn, source_id, lineage, wanted))

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
            fi, fo = t.files.c, t.folders.c
            found = conn.execute(
                self._committed(job_name)
                .where(fo.source_id == source_id, lineage_clause(fi.version, version.lineage))
                .order_by(fi.version)
            )
            latest: dict[str, CommittedFile] = {}
            for r in found:
                path = r.folder + r.name
                latest[path] = CommittedFile(path, r.mtime_ms, r.size, r.version, r.run_id, r.created_at)
        return sorted(latest.values(), key=lambda f: f.path)
