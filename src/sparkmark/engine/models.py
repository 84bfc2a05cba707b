"""Typed records of what the state store holds."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class RunState(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    TIMEOUT = "TIMEOUT"


class BookmarkOption(StrEnum):
    ENABLE = "job-bookmark-enable"
    DISABLE = "job-bookmark-disable"
    PAUSE = "job-bookmark-pause"


class VersionKind(StrEnum):
    COMMIT = "COMMIT"  # a run's job.commit()
    RESET = "RESET"  # back to nothing processed
    REWIND = "REWIND"  # back to the state just after an earlier run
    COMPACT = "COMPACT"  # the same state, folded into one version; older ones retired


Lineage = tuple[tuple[int, int], ...]
"""The version ranges whose per-file entries make up a bookmark version's state.

A commit extends its parent's last range; a reset starts empty; a rewind copies
the lineage of the version it rewinds to. Its length grows only with rewinds.
"""


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    job_name: str
    attempt: int
    state: RunState
    bookmark_option: BookmarkOption
    started_at: datetime
    ended_at: datetime | None
    arguments: dict[str, str]
    error: str | None
    metrics: dict[str, Any]
    base_version: int
    committed_version: int | None
    previous_run_id: str | None


@dataclass(frozen=True)
class JobSummary:
    """A job as the state store knows it: how many runs it has, and its latest."""

    job_name: str
    runs: int
    latest: RunRecord


def new_run_id() -> str:
    """A run id in Glue's shape: ``jr_`` and 64 hex digits."""
    return "jr_" + secrets.token_hex(32)


@dataclass(frozen=True)
class Lease:
    job_name: str
    run_id: str
    owner: str
    acquired_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class BookmarkVersion:
    """One immutable version of a job's bookmark, shaped like Glue's JobBookmarkEntry."""

    job_name: str
    version: int
    kind: VersionKind
    run: int
    attempt: int
    run_id: str | None
    previous_run_id: str | None
    created_at: datetime
    lineage: Lineage
    rewound_to: int | None
    ctx_states: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class FileEntry:
    """The identity of a processed file: same path, mtime and size (and, on object
    stores, ETag) means same content."""

    path: str
    mtime_ms: int
    size: int
    etag: str | None = None
    content_sha256: str | None = None  # of the bytes read (modifiedFiles=new-bytes)
    version: int | None = field(default=None, compare=False)  # the version that recorded it

    def same_content(self, mtime_ms: int, size: int, etag: str | None) -> bool:
        """A listed file is the one processed: its mtime and size are unchanged, and
        so is its ETag when both sides have one (an object rewritten within the same
        second with the same size is still seen as modified)."""
        return unchanged(self.mtime_ms, self.size, self.etag, mtime_ms, size, etag)


def unchanged(
    mtime_ms: int, size: int, etag: str | None, now_mtime_ms: int, now_size: int, now_etag: str | None
) -> bool:
    """A file recorded as (mtime_ms, size, etag) is unchanged if it now has the same
    mtime and size, and the same ETag when both sides have one."""
    if mtime_ms != now_mtime_ms or size != now_size:
        return False
    return etag is None or now_etag is None or etag == now_etag


Recorded = tuple[int, int, str | None, str | None, int | None]  # mtime, size, etag, sha256, version


class ProcessedFiles(Mapping[str, FileEntry]):
    """Each path's latest processed entry, kept as the store's rows: a run compares
    100,000s of listed files with it, and builds a ``FileEntry`` only when asked."""

    def __init__(self, rows: dict[str, Recorded]):
        self.rows = rows

    @classmethod
    def of(cls, entries: Mapping[str, FileEntry]) -> ProcessedFiles:
        if isinstance(entries, ProcessedFiles):
            return entries
        return cls({p: (e.mtime_ms, e.size, e.etag, e.content_sha256, e.version) for p, e in entries.items()})

    def __getitem__(self, path: str) -> FileEntry:
        return FileEntry(path, *self.rows[path])

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, path: object) -> bool:
        return path in self.rows


@dataclass(frozen=True)
class CommittedFile:
    """A row of ``sparkmark bookmark files``."""

    path: str
    mtime_ms: int
    size: int
    version: int
    run_id: str | None
    committed_at: datetime


@dataclass(frozen=True)
class CompactionResult:
    version: BookmarkVersion
    rows_before: int
    rows_after: int
    dropped_missing: int


@dataclass
class CtxCommit:
    """What one source adds to the bookmark when the run commits."""

    ctx: str
    state: dict[str, Any]
    files: list[FileEntry] = field(default_factory=list)
    dirs: dict[str, int] = field(default_factory=dict)  # folder marks: mtime when fully processed
    dir_digests: dict[str, str] = field(default_factory=dict)  # and the digest of its files then


class OutputState(StrEnum):
    """Where a sink's write is in the exactly-once protocol."""

    STAGING = "STAGING"  # recorded before the first byte is written
    STAGED = "STAGED"  # fully written to the hidden staging place
    COMMITTED = "COMMITTED"  # part of a committed run: must be published
    PUBLISHED = "PUBLISHED"  # visible in the target
    DISCARDED = "DISCARDED"  # its run did not commit; the staged data is gone


class OutputKind(StrEnum):
    FILES = "files"
    JDBC = "jdbc"
    TABLE = "table"  # an Iceberg or Delta table
    KEYED = "keyed"  # items put by key into a key-value table (its plan names the sink kind)


@dataclass(frozen=True)
class OutputRecord:
    """One write of a run through an exactly-once sink."""

    run_id: str
    seq: int
    job_name: str
    ctx: str
    kind: OutputKind
    target: str
    state: OutputState
    plan: dict[str, Any]
    updated_at: datetime
    run_state: RunState | None = None

    @property
    def key(self) -> str:
        """The write's name in file names and staging places: ``<run id>-<seq>``."""
        return f"{self.run_id}-{self.seq}"
