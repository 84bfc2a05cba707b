"""Listing a file source with fsspec: in bulk, in parallel across directories.

A listing walks each root breadth-first. Every directory of a level is listed
with one ``ls`` call, and on object stores the directories of a level are listed in
parallel. Local folders are read with ``scandir`` in this thread: their calls take
microseconds, and threads would only contend for the interpreter.
Hive-style partition folders (``name=value``) are always descended, like
Spark's partition discovery; other sub-folders only with ``recurse``.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from ..errors import SourceError
from .faults import crash_point
from .globs import ExclusionMatcher
from .names import is_hidden, some_of
from .publish import CONTROL, KEY_IN_NAME, pending_keys

log = logging.getLogger("sparkmark.listing")

_PARTITION_DIR = re.compile(r"^[^=/]+=[^/]*$")
_GLOB_CHARS = re.compile(r"[*?\[{]")


def mtime_ms(info: dict[str, Any]) -> int | None:
    """The modification time in fsspec's ``info`` dict, whatever the backend calls it."""
    keys = (
        "mtime",
        "LastModified",
        "last_modified",
        "updated",
        "modificationTime",
        "mtime_ns",
        "created",
    )  # object stores with immutable objects report only a creation time
    for key in keys:
        value = info.get(key)
        if value is None:
            continue
        if key == "mtime_ns":
            return int(value) // 1_000_000
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
        if key == "modificationTime":  # HDFS reports milliseconds
            return int(value)
        return int(float(value) * 1000)
    return None


class ListedFile(NamedTuple):
    """One listed file (a tuple: a listing makes one per file, 100,000s of them)."""

    url: str  # the file's identity in the bookmark: protocol-qualified
    root: str  # the root URL it was found under (Spark's basePath)
    dir: str
    mtime_ms: int
    size: int
    etag: str | None = None  # object stores: changes with the content, whatever the mtime

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]


@dataclass
class Listing:
    files: list[ListedFile] = field(default_factory=list)
    excluded: int = 0
    hidden: int = 0
    dirs_listed: int = 0
    unpublished: int = 0  # files of a sparkmark write still being published
    bad_names: list[str] = field(default_factory=list)  # entries whose names are not UTF-8, as bytes
    skipped_dirs: list[str] = field(default_factory=list)
    leaf_dirs: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    flat_pages: int = 0  # object-store pages of flat listings (their folders were not listed one by one)


def etag(info: dict[str, Any]) -> str | None:
    """An object store's entity tag, without its quotes; None on a file system."""
    value = info.get("ETag") or info.get("etag")
    return str(value).strip('"') if value else None


def _listed(url: str, root: str, folder: str, info: dict[str, Any]) -> ListedFile:
    return ListedFile(url, root, folder, mtime_ms(info) or 0, int(info.get("size") or 0), etag(info))


# A directory entry, whatever the file system: (name within the directory, is a
# directory, mtime in ms, size, ETag). A plain tuple: a listing makes one per file.
Entry = tuple[str, bool, int | None, int, str | None]


def _entry(info: dict[str, Any]) -> Entry:
    return (
        info["name"].rstrip("/").rsplit("/", 1)[-1],
        info["type"] == "directory",
        mtime_ms(info),
        int(info.get("size") or 0),
        etag(info),
    )


def _not_utf8(name: str) -> bool:
    """A name the file system gave as bytes that are not UTF-8 (Python keeps them as
    surrogate escapes). Spark cannot open such a file; nothing downstream can name it."""
    if name.isascii():
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _local_entries(path: str) -> list[Entry]:
    """A local directory's entries from one ``scandir`` and a ``stat`` each, without
    fsspec's per-entry dictionaries. Symbolic links are followed, as fsspec does, and
    mtimes are taken the way fsspec reports them (float seconds), so a bookmark reads
    the same through either path."""
    entries: list[Entry] = []
    with os.scandir(path) as found:
        for e in found:
            try:
                st = e.stat()
            except FileNotFoundError:  # removed, or a dangling link: nothing to read
                continue
            entries.append((e.name, stat.S_ISDIR(st.st_mode), int(st.st_mtime * 1000), st.st_size, None))
    return entries


# An object store's prefix is listed flat (no delimiter, 1,000 keys a page, one page
# after another) when it holds at most FLAT_LIMIT keys: 11 requests for 10,100 keys where
# a walk of 100 partitions makes 101. Beyond that, the first pages are dropped and its
# folders are listed level by level, in parallel.
FLAT_PAGE = 1000
FLAT_LIMIT = 20 * FLAT_PAGE


@dataclass
class _FlatTree:
    """A flat listing of a prefix, seen as folders: each folder's entries, as ``ls``
    would give them (a folder's own mtime is unknown on an object store)."""

    folders: dict[str, builtins.list[Entry]]
    keys: int

    def entries(self, path: str) -> builtins.list[Entry]:
        return self.folders.get(path.rstrip("/"), [])


def _flat_tree(fs: Any, root: str, limit: int) -> _FlatTree | None:
    """The prefix under ``root`` listed flat, or None when the store is not S3 or the
    prefix holds more than ``limit`` keys."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if limit <= 0 or not {"s3", "s3a"} & set(protocols) or not hasattr(fs, "_lsdir"):
        return None
    from fsspec.asyn import sync

    base = root.rstrip("/")
    found = sync(fs.loop, fs._lsdir, base, delimiter="", max_items=limit + 1)
    if len(found) > limit:
        return None
    files_in: dict[str, builtins.list[Entry]] = {}
    known: set[str] = set()  # every folder below the root that holds a key
    for info in found:
        name = str(info["name"])
        marker = name.endswith("/") or info.get("type") == "directory"  # a folder's own object
        name = name.rstrip("/")
        if not name.startswith(base + "/"):
            continue
        folder = name if marker else name.rpartition("/")[0]
        if not marker:
            leaf = name.rpartition("/")[2]
            entry = (leaf, False, mtime_ms(info), int(info.get("size") or 0), etag(info))
            files_in.setdefault(folder, []).append(entry)
        while folder != base and folder not in known:
            known.add(folder)
            folder = folder.rpartition("/")[0]
    folders: dict[str, builtins.list[Entry]] = {base: [], **{f: [] for f in known}}
    for folder, entries in files_in.items():
        folders[folder].extend(entries)
    for folder in known:
        parent, _, leaf = folder.rpartition("/")
        folders[parent].append((leaf, True, None, 0, None))
    return _FlatTree(folders, len(found))


class FileLister:
    """Lists the files of a source.

    ``known_dirs`` maps leaf directories to the mtime they had when every file in
    them was processed; a leaf directory whose mtime is unchanged is skipped
    without listing it (only when ``skip_unchanged_dirs`` is on).
    """

    def __init__(
        self,
        *,
        recurse: bool = False,
        exclusions: ExclusionMatcher | None = None,
        known_dirs: dict[str, int] | None = None,
        skip_unchanged_dirs: bool = False,
        parallelism: int = 16,
        flat_limit: int = FLAT_LIMIT,
    ):
        self.recurse = recurse
        self.exclusions = exclusions or ExclusionMatcher(())
        self.known_dirs = known_dirs or {}
        self.skip_unchanged_dirs = skip_unchanged_dirs
        self.parallelism = parallelism
        self.flat_limit = flat_limit

    def list(self, paths: list[str]) -> Listing:
        started = time.perf_counter()
        listing = Listing()
        with ThreadPoolExecutor(max_workers=self.parallelism) as pool:
            for path in paths:
                self._list_root(path, listing, pool)
        listing.seconds = time.perf_counter() - started
        if listing.bad_names:
            shown = some_of(listing.bad_names, 5)
            log.warning(
                "%d entries are skipped because their names are not UTF-8, which Spark cannot open: %s. "
                "They are not recorded as read: rename them (in UTF-8) and the next run reads them",
                len(listing.bad_names),
                shown,
            )
        return listing

    def _list_root(self, path: str, listing: Listing, pool: ThreadPoolExecutor) -> None:
        try:
            fs, root = url_to_fs(path)
        except (ImportError, ValueError) as exc:
            raise SourceError(f"cannot open the file system of {path!r}: {exc}") from None
        roots = [root]
        if _GLOB_CHARS.search(root) and not fs.exists(root):
            roots = sorted(fs.glob(root))
            if not roots:
                raise SourceError(f"no path matches the input pattern {path!r}")
        for one in roots:
            try:
                info = fs.info(one)
            except FileNotFoundError:
                raise SourceError(
                    f"input path {path!r} does not exist; check the path, or create it before running the job"
                ) from None
            root_url = fs.unstrip_protocol(one.rstrip("/")) if info["type"] == "directory" else None
            if info["type"] != "directory":
                url = fs.unstrip_protocol(info["name"])
                parent = url.rsplit("/", 1)[0]
                listing.files.append(_listed(url, parent, parent, info))
                continue
            self._walk(fs, one.rstrip("/"), root_url, mtime_ms(info), listing, pool)

    def _walk(self, fs, root, root_url, root_mtime, listing, pool) -> None:
        frontier: list[tuple[str, int | None]] = [(root, root_mtime)]
        unpublished: set[str] = set()
        excluding = bool(self.exclusions)
        local = isinstance(fs, LocalFileSystem)
        ls = _local_entries if local else (lambda d: [_entry(i) for i in fs.ls(d, detail=True)])
        tree = None if local else _flat_tree(fs, root, self.flat_limit)
        if tree is not None:  # the whole prefix in a few pages: its folders are read from them
            listing.flat_pages += max(1, -(-tree.keys // FLAT_PAGE))
            local = True  # nothing left to ask the store: no threads
            ls = tree.entries
        append = listing.files.append
        while frontier:
            if local:  # one thread: a local stat is too short to gain from threads that share the GIL
                results = ((d, self._ls(ls, d[0])) for d in frontier)
            else:
                results = pool.map(lambda d: (d, self._ls(ls, d[0])), frontier)
            frontier = []
            for (dir_path, dir_mtime), entries in results:
                listing.dirs_listed += 1
                crash_point("listing")
                dir_url = fs.unstrip_protocol(dir_path)
                has_subdirs = False
                if dir_path == root and any(e[0] == CONTROL for e in entries):
                    # The folder is a sparkmark output: skip its writes not yet published.
                    unpublished = pending_keys(fs, root)
                for name, is_dir, mtime, size, tag in entries:
                    if is_hidden(name):
                        listing.hidden += 1
                        continue
                    if _not_utf8(name):
                        escaped = os.fsencode(dir_path + "/" + name).decode("utf-8", "backslashreplace")
                        listing.bad_names.append(escaped)
                        has_subdirs = True  # not complete: never mark this folder done
                        continue
                    if is_dir:
                        has_subdirs = True
                        if not (self.recurse or _PARTITION_DIR.match(name)):
                            continue
                        child = dir_path + "/" + name
                        child_url = dir_url + "/" + name
                        if (
                            self.skip_unchanged_dirs
                            and mtime is not None
                            and self.known_dirs.get(child_url) == mtime
                        ):
                            log.info("Skipping partition %s as it has no new files detected", child_url)
                            listing.skipped_dirs.append(child_url)
                            continue
                        frontier.append((child, mtime))
                        continue
                    if unpublished:
                        key = KEY_IN_NAME.search(name)
                        if key and key.group(0) in unpublished:
                            listing.unpublished += 1
                            has_subdirs = True  # not complete: never mark this folder done
                            continue
                    url = dir_url + "/" + name
                    if excluding and self.exclusions.excludes(
                        url, dir_path + "/" + name, url[len(root_url) + 1 :]
                    ):
                        listing.excluded += 1
                        continue
                    append(ListedFile(url, root_url, dir_url, mtime or 0, size, tag))
                if not has_subdirs and dir_mtime is not None:
                    listing.leaf_dirs[dir_url] = dir_mtime

    @staticmethod
    def _ls(ls: Callable[[str], builtins.list[Entry]], path: str) -> builtins.list[Entry]:
        try:
            return ls(path)
        except FileNotFoundError:
            # Removed between the parent's listing and ours: nothing in it to read.
            log.warning("directory %s disappeared while it was being listed", path)
            return []


def _one_listing_of(dir_urls: builtins.list[str]) -> _FlatTree | None:
    """Folders of one object store under one prefix, listed flat in one go (a few pages)
    rather than one by one; None when they are few, not on S3, or too many keys."""
    if len(dir_urls) < 3 or not all(u.startswith(("s3://", "s3a://")) for u in dir_urls):
        return None
    common = os.path.commonpath([u.split("://", 1)[1] for u in dir_urls])
    if "/" not in common:  # a bucket's whole content: walk the folders instead
        return None
    fs, path = url_to_fs(dir_urls[0].split("://", 1)[0] + "://" + common)
    try:  # a listing without a delimiter is never served from s3fs's folder cache
        return _flat_tree(fs, path, FLAT_LIMIT)
    except FileNotFoundError:
        return None


def changed_since_listed(
    files: builtins.list[tuple[str, int, int, str | None]], *, growth_ok: bool = False
) -> builtins.list[str]:
    """Of ``files`` (url, mtime in ms, size, ETag as listed), those whose folder now lists
    them otherwise: replaced or rewritten since they were listed. One listing per folder.
    A file that is gone is not counted (Spark read it, or said it could not); with
    ``growth_ok``, neither is one that only grew (append-only files read by byte range)."""
    by_dir: dict[str, builtins.list[tuple[str, int, int, str | None]]] = {}
    for entry in files:
        by_dir.setdefault(entry[0].rsplit("/", 1)[0], []).append(entry)
    changed = []
    tree = _one_listing_of(list(by_dir))
    for dir_url, entries in by_dir.items():
        fs, dir_path = url_to_fs(dir_url)
        fs.invalidate_cache(dir_path)
        try:
            if tree is not None:
                found = {e[0]: e for e in tree.entries(dir_path) if not e[1]}
            elif isinstance(fs, LocalFileSystem):
                found = {e[0]: e for e in _local_entries(dir_path)}
            else:
                found = {e[0]: e for e in (_entry(i) for i in fs.ls(dir_path, detail=True))}
        except FileNotFoundError:
            continue
        for url, mtime, size, tag in entries:
            now = found.get(url.rsplit("/", 1)[-1])
            if now is None:
                continue
            _name, _is_dir, now_mtime, now_size, now_tag = now
            if (now_mtime or 0, now_size, now_tag) == (mtime, size, tag):
                continue
            if growth_ok and now_size > size and now_tag is None and tag is None:
                continue
            changed.append(url)
    return changed
