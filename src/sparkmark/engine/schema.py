"""The bookmark component's tables and their numbered migrations: runs, leases,
bookmark versions, per-file state, outputs and micro-batches.

Its version is the ``schema_version`` row of ``sm_schema_info`` (``state.components``
runs the steps). Opening a store applies every step newer than the stored version
inside one transaction; a store written by a newer sparkmark is refused rather than
guessed at.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    func,
    inspect,
    select,
    tuple_,
)

from ..state import components


class UTCDateTime(TypeDecorator):
    """Datetimes stored as UTC and always returned timezone-aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the state store")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


metadata = MetaData()
schema_info = components.schema_info  # the versions' table, shared by every component

runs = Table(
    "sm_runs",
    metadata,
    Column("run_id", String(80), primary_key=True),
    Column("job_name", String(255), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    Column("bookmark_option", String(32), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    Column("arguments", Text, nullable=False),  # JSON, secrets masked
    Column("error", Text),
    Column("metrics", Text, nullable=False),  # JSON
    Column("base_version", Integer, nullable=False),
    Column("committed_version", Integer),
    Column("previous_run_id", String(80)),
    Index("ix_sm_runs_job_started", "job_name", "started_at"),
)

leases = Table(
    "sm_leases",
    metadata,
    Column("job_name", String(255), primary_key=True),
    Column("run_id", String(80), nullable=False),
    Column("owner", String(255), nullable=False),
    Column("acquired_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)

# Runs that do not move the bookmark (job-bookmark-disable or -pause) may run side by
# side, up to the job's MaxConcurrentRuns: each holds a lease of its own here, renewed
# like the job's, so a run whose process died is still found out. (Version 9.)
shared_leases = Table(
    "sm_shared_leases",
    metadata,
    Column("run_id", String(80), primary_key=True),
    Column("job_name", String(255), nullable=False),
    Column("owner", String(255), nullable=False),
    Column("acquired_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Index("ix_sm_shared_leases_job", "job_name"),
)

bookmark_versions = Table(
    "sm_bookmark_versions",
    metadata,
    Column("job_name", String(255), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("run", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("run_id", String(80)),
    Column("previous_run_id", String(80)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("lineage", Text, nullable=False),  # JSON list of [lo, hi]
    Column("rewound_to", Integer),
)

ctx_states = Table(
    "sm_ctx_states",
    metadata,
    Column("job_name", String(255), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("ctx", String(255), primary_key=True),
    Column("state", Text, nullable=False),  # JSON summary, bounded in size
)

sources = Table(
    "sm_sources",
    metadata,
    Column("source_id", Integer, primary_key=True, autoincrement=True),
    Column("job_name", String(255), nullable=False),
    Column("ctx", String(255), nullable=False),
    UniqueConstraint("job_name", "ctx", name="uq_sm_sources_job_ctx"),
)

# Versions 1 to 9 kept one row per file a commit processed here, the whole path in each
# row and twice more in indexes; version 10 moved them into sm_folders and sm_files.
file_entries = Table(
    "sm_file_entries",
    metadata,
    Column("source_id", Integer, ForeignKey("sm_sources.source_id"), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("path", Text, primary_key=True),
    Column("mtime_ms", BigInteger, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("etag", String(128)),  # version 4: object stores' entity tag
    Column("content_sha256", String(64)),  # version 5: modifiedFiles=new-bytes sources
    sqlite_with_rowid=False,
)

# The folders of a source's processed files, each path once (ending in "/"): a file's
# row names its folder by number. (Version 10.)
folders = Table(
    "sm_folders",
    metadata,
    Column("folder_id", Integer, primary_key=True, autoincrement=True),
    Column("source_id", Integer, ForeignKey("sm_sources.source_id"), nullable=False),
    Column("path", Text, nullable=False),
    UniqueConstraint("source_id", "path", name="uq_sm_folders_source_path"),
)

# One row per file a commit processed: its folder's number and its name. Rows are only
# ever inserted; which rows make up a version's state is decided by that version's
# lineage. The key is the one index, so a folder's files are one range of it and a row
# holds the name once. (Version 10.)
files = Table(
    "sm_files",
    metadata,
    Column("folder_id", Integer, ForeignKey("sm_folders.folder_id"), primary_key=True),
    Column("name", Text, primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("mtime_ms", BigInteger, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("etag", String(128)),  # object stores' entity tag
    Column("content_sha256", String(64)),  # modifiedFiles=new-bytes sources
    sqlite_with_rowid=False,
)

# How many file rows each version recorded for each source, written with them, so that
# a version's count is not a scan of every row. (Version 10.)
version_files = Table(
    "sm_version_files",
    metadata,
    Column("source_id", Integer, ForeignKey("sm_sources.source_id"), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("files", Integer, nullable=False),
)

# Leaf directories whose every file was processed, with the directory mtime seen.
dir_entries = Table(
    "sm_dir_entries",
    metadata,
    Column("source_id", Integer, ForeignKey("sm_sources.source_id"), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("dir", Text, primary_key=True),
    Column("mtime_ms", BigInteger, nullable=False),
    Column("files_digest", String(32)),  # version 8: the files the mark covers
    sqlite_with_rowid=False,
)


# What a run writes through an exactly-once sink, from before its first byte until it
# is published or discarded. Its state moves STAGING -> STAGED -> COMMITTED (in the
# bookmark commit's transaction) -> PUBLISHED, or to DISCARDED.
outputs = Table(
    "sm_outputs",
    metadata,
    Column("run_id", String(80), ForeignKey("sm_runs.run_id"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("job_name", String(255), nullable=False),
    Column("ctx", String(255), nullable=False),
    Column("kind", String(16), nullable=False),  # files | jdbc
    Column("target", Text, nullable=False),  # folder URL or table, no credentials
    Column("state", String(16), nullable=False),
    Column("plan", Text, nullable=False),  # JSON: what publishing needs, no credentials
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_sm_outputs_job_state", "job_name", "state"),
)

# Writes found in an output folder or table that this store has no run for, taken
# over on purpose with ``sparkmark outputs adopt`` (see engine/ownership.py).
adopted_writes = Table(
    "sm_adopted_writes",
    metadata,
    Column("output_key", String(120), primary_key=True),
    Column("target", Text, nullable=False),
    Column("adopted_at", UTCDateTime, nullable=False),
)

# Micro-batches of streaming queries whose writes were committed, one row each. A batch
# that the stream processes again after a crash (same query id and batch id: Spark
# replays what its checkpoint planned but did not mark done) finds its row and writes
# nothing twice. ``offsets`` is where the batch ended, as the source's checkpoint has it.
stream_batches = Table(
    "sm_stream_batches",
    metadata,
    Column("job_name", String(255), primary_key=True),
    Column("query_id", String(64), primary_key=True),
    Column("batch_id", BigInteger, primary_key=True),
    Column("run_id", String(80), ForeignKey("sm_runs.run_id"), nullable=False),
    Column("committed_at", UTCDateTime, nullable=False),
    Column("outputs", Text, nullable=False),  # JSON list of the batch's output seqs in its run
    Column("offsets", Text, nullable=False),  # JSON: the batch's end offsets per source
    Column("metrics", Text, nullable=False),  # JSON: records, duration, attempts
)

_V1_TABLES = (runs, leases, bookmark_versions, ctx_states, sources, file_entries, dir_entries)


def _v1(conn: Connection) -> None:
    components.create(conn, schema_info, *_V1_TABLES)


def _v2(conn: Connection) -> None:
    """Look up a source's entries by path prefix (the folders a run listed) without
    reading all of them. On PostgreSQL text_pattern_ops serves LIKE 'prefix%'.
    Written as DDL so that the table definitions above stay exactly version 1's."""
    ops = " text_pattern_ops" if conn.dialect.name == "postgresql" else ""
    conn.exec_driver_sql(
        f"CREATE INDEX IF NOT EXISTS ix_sm_file_entries_path ON sm_file_entries (source_id, path{ops})"
    )


def _v3(conn: Connection) -> None:
    """Exactly-once sinks: the outputs table."""
    metadata.create_all(conn, tables=[outputs])


def _v4(conn: Connection) -> None:
    """Objects on S3 are identified by their ETag as well as size and LastModified. A
    store created by this version has the column from version 1's step already."""
    columns = {c["name"] for c in inspect(conn).get_columns("sm_file_entries")}
    if "etag" not in columns:
        conn.exec_driver_sql("ALTER TABLE sm_file_entries ADD COLUMN etag VARCHAR(128)")


def _v5(conn: Connection) -> None:
    """State identity: writes of unknown runs adopted on purpose. Append-only files:
    the digest of what was read of a file, to check its prefix when it grows."""
    metadata.create_all(conn, tables=[adopted_writes])
    columns = {c["name"] for c in inspect(conn).get_columns("sm_file_entries")}
    if "content_sha256" not in columns:
        conn.exec_driver_sql("ALTER TABLE sm_file_entries ADD COLUMN content_sha256 VARCHAR(64)")


def _v6(conn: Connection) -> None:
    """Streaming: the committed micro-batches."""
    metadata.create_all(conn, tables=[stream_batches])


def _v7(conn: Connection) -> None:
    """Page through a source's files in path order (the console): on PostgreSQL the
    path index of version 2 is text_pattern_ops, which serves LIKE 'prefix%' but not
    ORDER BY path, so a page sorted every row. SQLite's path index already holds the
    version (the table's key), so it needs nothing more."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "CREATE INDEX IF NOT EXISTS ix_sm_file_entries_path_order ON sm_file_entries (source_id, path, version)"
        )


def _v8(conn: Connection) -> None:
    """A folder's mark carries a digest of its files' names, mtimes and sizes: a listing
    whose folder has the same digest needs none of that folder's per-file rows."""
    columns = {c["name"] for c in inspect(conn).get_columns("sm_dir_entries")}
    if "files_digest" not in columns:
        conn.exec_driver_sql("ALTER TABLE sm_dir_entries ADD COLUMN files_digest VARCHAR(32)")


def _v9(conn: Connection) -> None:
    """Leases of runs that leave the bookmark alone, so several may run at once."""
    metadata.create_all(conn, tables=[shared_leases])


def split_path(path: str) -> tuple[str, str]:
    """A file's path as (its folder, ending in "/", and its name): folder + name is the path."""
    cut = path.rfind("/") + 1
    return path[:cut], path[cut:]


def _v10(conn: Connection) -> None:
    """Per-file state by folder number and name (sm_folders, sm_files), with each
    version's count (sm_version_files): a row holds its name once, where version 9 held
    the whole path three times on PostgreSQL and twice on SQLite. The rows are moved in
    path order, a source at a time."""
    metadata.create_all(conn, tables=[folders, files, version_files])
    if not conn.dialect.has_table(conn, file_entries.name):
        return
    old = file_entries.c
    conn.execute(
        version_files.insert().from_select(
            ["source_id", "version", "files"],
            select(old.source_id, old.version, func.count()).group_by(old.source_id, old.version),
        )
    )
    known: dict[tuple[int, str], int] = {}
    query = select(
        old.source_id, old.path, old.version, old.mtime_ms, old.size, old.etag, old.content_sha256
    ).order_by(old.source_id, old.path, old.version)
    after: tuple | None = None
    while True:  # pages of the old key's order, so a large store is never held whole
        page = query if after is None else query.where(tuple_(old.source_id, old.path, old.version) > after)
        rows = conn.execute(page.limit(20_000)).all()
        if not rows:
            break
        batch = []
        for row in rows:
            folder, name = split_path(row.path)
            folder_id = known.get((row.source_id, folder))
            if folder_id is None:
                folder_id = conn.execute(
                    folders.insert()
                    .values(source_id=row.source_id, path=folder)
                    .returning(folders.c.folder_id)
                ).scalar_one()
                known[(row.source_id, folder)] = folder_id
            batch.append(
                {
                    "folder_id": folder_id,
                    "name": name,
                    "version": row.version,
                    "mtime_ms": row.mtime_ms,
                    "size": row.size,
                    "etag": row.etag,
                    "content_sha256": row.content_sha256,
                }
            )
        conn.execute(files.insert(), batch)
        last = rows[-1]
        after = (last.source_id, last.path, last.version)
    file_entries.drop(conn)


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _v1,
    2: _v2,
    3: _v3,
    4: _v4,
    5: _v5,
    6: _v6,
    7: _v7,
    8: _v8,
    9: _v9,
    10: _v10,
}
BOOKMARKS = components.register(
    components.Component(
        name="bookmarks",
        key="schema_version",
        metadata=metadata,
        steps=MIGRATIONS,
        retired=frozenset({file_entries.name}),  # moved into sm_folders and sm_files by step 10
    )
)
SCHEMA_VERSION = BOOKMARKS.version


def stored_version(conn: Connection) -> int:
    return components.stored_version(conn, BOOKMARKS)


def read_store_id(conn: Connection) -> str | None:
    """The store's identity, or None before it has one."""
    found = conn.execute(select(schema_info.c.value).where(schema_info.c.name == "store_id")).scalar()
    return None if found is None else str(found)


def store_identity(conn: Connection) -> str:
    """The store's identity, made the first time it is asked for and written into every
    output it publishes: outputs tell this store from another one, or from a fresh one
    that replaced it."""
    found = read_store_id(conn)
    if found is None:
        found = uuid.uuid4().hex
        conn.execute(schema_info.insert().values(name="store_id", value=found))
    return str(found)
