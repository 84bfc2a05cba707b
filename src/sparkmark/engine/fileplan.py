"""A file source's plan for one run: list its paths and choose the files to read,
against the bookmark, without Spark. The same plan serves a run and a preview."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from .globs import ExclusionMatcher
from .increment import (
    EMPTY_FOLDER,
    FileSourceOptions,
    Increment,
    folder_digests,
    plan_increment,
    range_increment,
)
from .listing import FileLister, Listing
from .models import CtxCommit, FileEntry
from .storage import canonical

if TYPE_CHECKING:
    from .store import StateStore

log = logging.getLogger("sparkmark.files")

FOLDER_LOOKUP_LIMIT = 200  # folders whose entries are read by prefix rather than all at once


@dataclass
class FilePlan:
    """What a file source decided for this run, before Spark reads anything."""

    ctx: str | None
    paths: list[str]
    options: FileSourceOptions
    listing: Listing
    increment: Increment
    missing_in_range: list[str] = field(default_factory=list)
    known_dirs: dict[str, int] = field(default_factory=dict)  # folder marks already recorded
    known_digests: dict[str, str | None] = field(default_factory=dict)  # and their digests
    digests: dict[str, str] = field(default_factory=dict)  # the listed folders' digests
    settled: set[str] = field(default_factory=set)  # listed folders unchanged since their mark

    def metrics(self) -> dict[str, Any]:
        inc, lst = self.increment, self.listing
        return {
            "files_listed": len(lst.files),
            "files_new": inc.new,
            "files_modified": inc.modified,
            "files_read": len(inc.selected),
            "files_skipped": inc.already_processed,
            "files_excluded": lst.excluded,
            "files_hidden": lst.hidden,
            "files_unpublished": lst.unpublished,
            "files_bad_names": len(lst.bad_names),
            "files_late": inc.late,
            "files_deferred": inc.deferred_by_band + inc.deferred_by_bound,
            "partitions_listed": lst.dirs_listed,
            "partitions_skipped": len(lst.skipped_dirs),
            "partitions_unchanged": len(self.settled),
            "bytes_read": inc.bytes,
            "listing_seconds": round(lst.seconds, 4),
        }

    def log_partitions(self) -> None:
        """Glue-style per-partition lines: how much of each listed folder this run reads."""
        listed = Counter(f.dir for f in self.listing.files)
        chosen = Counter(f.dir for f in self.increment.selected)
        for folder, total in sorted(listed.items()):
            share = 100.0 * chosen.get(folder, 0) / total
            log.info(
                "After final job bookmarks filter, processing %.2f%% of %d files in partition %s",
                share,
                total,
                folder,
            )


def root_url(path: str) -> str:
    """A root path as the lister names it (protocol-qualified, no trailing slash)."""
    from fsspec.core import url_to_fs

    fs, bare = url_to_fs(path)
    return fs.unstrip_protocol(bare.rstrip("/"))


def as_path_list(paths: str | Sequence[str]) -> list[str]:
    if isinstance(paths, str):
        paths = [paths]
    # Local paths are kept absolute, so the bookmark reads the same from any folder;
    # s3a:// and s3n:// are s3://, so one object has one identity.
    result = [canonical(str(p)) if "://" in str(p) else os.path.abspath(str(p)) for p in paths]
    if not result:
        raise SourceError("read_files needs at least one path")
    return result


def plan_files(
    paths: list[str],
    options: FileSourceOptions,
    *,
    ctx: str | None,
    processed: Mapping[str, FileEntry] | Callable[[Listing, set[str]], Mapping[str, FileEntry]] | None,
    known_dirs: dict[str, int] | None,
    high_water_ms: int | None,
    now_ms: int,
    known_digests: dict[str, str | None] | None = None,
) -> FilePlan:
    """List and choose. ``processed=None`` means no bookmark: every listed file.
    ``processed`` may be a function of the listing and of the settled folders (those
    whose files are exactly the ones their mark recorded), to load only what it needs."""
    lister = FileLister(
        recurse=options.recurse,
        exclusions=ExclusionMatcher(options.exclusions),
        known_dirs=known_dirs,
        skip_unchanged_dirs=options.skip_unchanged_partitions and known_dirs is not None,
    )
    listing = lister.list(paths)
    known_digests = known_digests or {}
    digests = folder_digests(listing.files) if processed is not None else {}
    settled: set[str] = set()
    if processed is None:
        inc = Increment(selected=sorted(listing.files, key=lambda f: (f.mtime_ms, f.url)))
        inc.new = len(inc.selected)
    else:
        settled = {
            d
            for d in listing.leaf_dirs
            if known_digests.get(d) is not None and known_digests[d] == digests.get(d, EMPTY_FOLDER)
        }
        state = processed(listing, settled) if callable(processed) else processed
        inc = plan_increment(
            listing, state, options=options, now_ms=now_ms, high_water_ms=high_water_ms, settled=settled
        )
    return FilePlan(
        ctx,
        paths,
        options,
        listing,
        inc,
        known_dirs=known_dirs or {},
        known_digests=known_digests,
        digests=digests,
        settled=settled,
    )


def plan_bookmarked(
    store: StateStore,
    job_name: str,
    ctx: str,
    paths: list[str],
    options: FileSourceOptions,
    *,
    lineage: tuple,
    previous: dict[str, Any],
    now_ms: int,
) -> FilePlan:
    """The plan of a bookmarked source against the bookmark version whose lineage is
    given and whose state for ``ctx`` is ``previous``."""
    same_listing = previous.get("listing_fingerprint") == options.listing_fingerprint(paths)
    marks = store.dir_marks(job_name, ctx, lineage) if same_listing else {}

    def processed_for(listing: Listing, settled: set[str]) -> Mapping[str, FileEntry]:
        # Read only the entries of the folders left to compare, when they are few: the
        # others were skipped unlisted, or are settled by their digest.
        folders = {f.dir for f in listing.files if f.dir not in settled}
        if (listing.skipped_dirs or settled) and len(folders) <= FOLDER_LOOKUP_LIMIT:
            return store.processed_files(job_name, ctx, lineage, folders)
        return store.processed_files(job_name, ctx, lineage)

    return plan_files(
        paths,
        options,
        ctx=ctx,
        processed=processed_for,
        known_dirs={d: m for d, (m, _) in marks.items()},
        known_digests={d: h for d, (_, h) in marks.items()},
        high_water_ms=previous.get("high_water_mtime_ms"),
        now_ms=now_ms,
    )


def plan_range(
    paths: list[str],
    options: FileSourceOptions,
    *,
    ctx: str,
    upper: Mapping[str, FileEntry],
    lower: Mapping[str, FileEntry],
) -> FilePlan:
    lister = FileLister(recurse=options.recurse, exclusions=ExclusionMatcher(options.exclusions))
    listing = lister.list(paths)
    inc, missing = range_increment(listing, upper, lower)
    for path in missing:
        log.warning("file %s is in the bookmark range but no longer exists; it is not read", path)
    return FilePlan(ctx, paths, options, listing, inc, missing)


def ctx_commit(
    plan: FilePlan,
    *,
    previous: dict[str, Any] | None,
    schema_json: str | None,
    run_id: str,
    digests: dict[str, str] | None = None,
) -> CtxCommit:
    """The bookmark entry a file source adds when the run commits."""
    previous = previous or {}
    selected = plan.increment.selected
    high = max([f.mtime_ms for f in selected] + [previous.get("high_water_mtime_ms") or 0])
    state = {
        "type": "files",
        "paths": plan.paths,
        "options": plan.options.describe(),
        "listing_fingerprint": plan.options.listing_fingerprint(plan.paths),
        "high_water_mtime_ms": high or None,
        "high_water_mtime": (datetime.fromtimestamp(high / 1000, UTC).isoformat() if high else None),
        "files_committed": int(previous.get("files_committed") or 0) + len(selected),
        "last_run": {
            "run_id": run_id,
            "files": len(selected),
            "bytes": plan.increment.bytes,
            "deferred": plan.increment.deferred_by_band + plan.increment.deferred_by_bound,
        },
        "schema": schema_json or previous.get("schema"),
    }
    marks = {
        d: m
        for d, m in plan.increment.dir_marks.items()
        if (plan.known_dirs.get(d), plan.known_digests.get(d)) != (m, plan.digests.get(d, EMPTY_FOLDER))
    }
    return CtxCommit(
        ctx=plan.ctx or "",
        state=state,
        files=[FileEntry(f.url, f.mtime_ms, f.size, f.etag, (digests or {}).get(f.url)) for f in selected],
        # A folder's mark is recorded when it changes; the unchanged ones stay in force
        # from the versions that recorded them (the store reads the latest in the lineage).
        dirs=marks,
        dir_digests={d: plan.digests.get(d, EMPTY_FOLDER) for d in marks},
    )


def now_ms() -> int:
    return int(time.time() * 1000)
