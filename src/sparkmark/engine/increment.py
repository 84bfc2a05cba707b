"""Which listed files a run must process: the file bookmark algorithm.

Pure logic over a listing and the committed per-file state; no Spark, no I/O.
A file is due when its path was never processed, or when its (mtime, size), or an
object's ETag, differs from the last time it was processed. Candidates are ordered oldest
first by (mtime, path), so bounds and bands cut deterministically and files that
share an mtime at the cut are split, never lost and never read twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .listing import ListedFile, Listing
from .models import FileEntry, ProcessedFiles, unchanged
from .options import MODIFIED_FILES, OPTION_NAMES, parse_bool, parse_choice, parse_count, parse_exclusions

DEFAULT_MAX_BAND_MS = 900_000
DEFAULT_MAX_FILES_IN_BAND = 1000


@dataclass(frozen=True)
class FileSourceOptions:
    """Glue's file-source options, with Glue's names and defaults."""

    recurse: bool = False
    exclusions: tuple[str, ...] = ()
    max_band_ms: int = DEFAULT_MAX_BAND_MS
    max_files_in_band: int = DEFAULT_MAX_FILES_IN_BAND
    bounded_files: int | None = None
    bounded_size: int | None = None
    skip_unchanged_partitions: bool = False
    modified_files: str = "reprocess"

    @classmethod
    def split(cls, options: Mapping[str, Any]) -> tuple[FileSourceOptions, dict[str, Any]]:
        """Separate the bookmark options from the ones Spark's reader takes."""
        ours = {k: v for k, v in options.items() if k in OPTION_NAMES and v is not None}
        rest = {k: v for k, v in options.items() if k not in OPTION_NAMES}
        parsed = cls(
            recurse=parse_bool("recurse", ours.get("recurse", False)),
            exclusions=parse_exclusions(ours["exclusions"]) if "exclusions" in ours else (),
            max_band_ms=parse_count("maxBand", ours.get("maxBand", DEFAULT_MAX_BAND_MS), allow_zero=True),
            max_files_in_band=parse_count(
                "maxFilesInBand", ours.get("maxFilesInBand", DEFAULT_MAX_FILES_IN_BAND)
            ),
            bounded_files=parse_count("boundedFiles", ours["boundedFiles"])
            if "boundedFiles" in ours
            else None,
            bounded_size=parse_count("boundedSize", ours["boundedSize"]) if "boundedSize" in ours else None,
            skip_unchanged_partitions=parse_bool(
                "skipUnchangedPartitions", ours.get("skipUnchangedPartitions", False)
            ),
            modified_files=parse_choice(
                "modifiedFiles", ours.get("modifiedFiles", "reprocess"), MODIFIED_FILES
            ),
        )
        return parsed, rest

    def listing_fingerprint(self, paths: list[str]) -> str:
        """Changes when what a listing can contain changes; directory marks recorded
        under another fingerprint are not trusted."""
        blob = json.dumps([sorted(paths), self.recurse, list(self.exclusions)])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"recurse": self.recurse}
        if self.exclusions:
            described["exclusions"] = list(self.exclusions)
        if self.bounded_files is not None:
            described["boundedFiles"] = self.bounded_files
        if self.bounded_size is not None:
            described["boundedSize"] = self.bounded_size
        described["maxBand"] = self.max_band_ms
        described["maxFilesInBand"] = self.max_files_in_band
        if self.skip_unchanged_partitions:
            described["skipUnchangedPartitions"] = True
        if self.modified_files != "reprocess":
            described["modifiedFiles"] = self.modified_files
        return described


@dataclass
class Increment:
    selected: list[ListedFile] = field(default_factory=list)
    new: int = 0
    modified: int = 0
    already_processed: int = 0
    late: int = 0
    deferred_by_band: int = 0
    deferred_by_bound: int = 0
    dir_marks: dict[str, int] = field(default_factory=dict)
    earlier: dict[str, FileEntry] = field(default_factory=dict)  # a modified file's last read

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.selected)


def folder_digest(lines: list[str]) -> str:
    return hashlib.blake2b("\n".join(sorted(lines)).encode(), digest_size=16).hexdigest()


EMPTY_FOLDER = folder_digest([])


def folder_digests(files: list[ListedFile]) -> dict[str, str]:
    """Per folder, a digest of its listed files' names, mtimes, sizes and ETags: the
    same digest means the same files, unchanged, whatever order they were listed in."""
    by_dir: dict[str, list[str]] = {}
    for f in files:
        by_dir.setdefault(f.dir, []).append(f"{f.url}\0{f.mtime_ms}\0{f.size}\0{f.etag or ''}")
    return {d: folder_digest(lines) for d, lines in by_dir.items()}


def _order(f: ListedFile) -> tuple[int, str]:
    return (f.mtime_ms, f.url)


def plan_increment(
    listing: Listing,
    processed: Mapping[str, FileEntry],
    *,
    options: FileSourceOptions,
    now_ms: int,
    high_water_ms: int | None = None,
    settled: frozenset[str] | set[str] = frozenset(),
) -> Increment:
    """Choose the files this run processes, oldest first, within the run's bounds.
    ``settled`` folders hold exactly the files their mark recorded as processed: their
    files are counted as already processed without a per-file comparison."""
    inc = Increment()
    candidates: list[ListedFile] = []
    recorded = ProcessedFiles.of(processed)
    rows = recorded.rows
    for f in listing.files:
        if f.dir in settled:
            inc.already_processed += 1
            continue
        row = rows.get(f.url)
        if row is not None and unchanged(row[0], row[1], row[2], f.mtime_ms, f.size, f.etag):
            inc.already_processed += 1
            continue
        candidates.append(f)
        if row is None:
            inc.new += 1
            if high_water_ms is not None and f.mtime_ms < high_water_ms:
                inc.late += 1
        else:
            inc.modified += 1
            inc.earlier[f.url] = recorded[f.url]
    candidates.sort(key=_order)

    deferred: list[ListedFile] = []
    band_start = now_ms - options.max_band_ms
    in_band = [f for f in candidates if f.mtime_ms >= band_start]
    if len(in_band) > options.max_files_in_band:
        keep = {id(f) for f in in_band[: options.max_files_in_band]}
        too_recent = [f for f in in_band if id(f) not in keep]
        inc.deferred_by_band = len(too_recent)
        deferred.extend(too_recent)
        dropped = {id(f) for f in too_recent}
        candidates = [f for f in candidates if id(f) not in dropped]

    limit = len(candidates)
    if options.bounded_files is not None:
        limit = min(limit, options.bounded_files)
    if options.bounded_size is not None:
        total = 0
        for i, f in enumerate(candidates[:limit]):
            total += f.size
            if total > options.bounded_size and i > 0:
                limit = i
                break
    inc.deferred_by_bound = len(candidates) - limit
    deferred.extend(candidates[limit:])
    inc.selected = candidates[:limit]

    waiting_dirs = {f.dir for f in deferred}
    inc.dir_marks = {d: m for d, m in listing.leaf_dirs.items() if d not in waiting_dirs}
    return inc


def range_increment(
    listing: Listing, upper: Mapping[str, FileEntry], lower: Mapping[str, FileEntry]
) -> tuple[Increment, list[str]]:
    """Pause with from/to: the files processed after ``lower`` up to ``upper``.

    Returns the increment and the paths of the range that are no longer listed.
    """
    wanted = {path: entry for path, entry in upper.items() if lower.get(path) != entry}
    inc = Increment()
    for f in sorted(listing.files, key=_order):
        if f.url in wanted:
            inc.selected.append(f)
            if not wanted[f.url].same_content(f.mtime_ms, f.size, f.etag):
                inc.modified += 1
            else:
                inc.new += 1
        else:
            inc.already_processed += 1
    listed = {f.url for f in listing.files}
    missing = sorted(p for p in wanted if p not in listed)
    return inc, missing
