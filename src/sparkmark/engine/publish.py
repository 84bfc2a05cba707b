"""Staged file output and how it is published: the file half of exactly-once.

Everything a write keeps beside its output lives in the output folder's hidden
``_sparkmark`` folder, which Spark, Hive and sparkmark's listings skip::

    ROOT/_sparkmark/staging/<key>/...        the write's files, as Spark wrote them
    ROOT/_sparkmark/runs/<key>.pending       present from staging until published
    ROOT/_sparkmark/runs/<key>.published     the record of a published write

``<key>`` is ``<run id>-<seq>``; published files carry it in their names
(``part-00000-<key>-c000.snappy.parquet``). Publishing moves each staged file to
its place, removes what an overwrite replaces, writes the ``.published`` record
and only then deletes ``.pending``. Every step can be repeated, so a publish cut
off half-way is finished by running it again.

A sparkmark reader of ROOT does not list files whose key has a ``.pending``
record: it never sees part of a write.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from fsspec.core import url_to_fs
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem

from ..errors import OutputLost, SparkmarkError
from .faults import crash_point
from .names import is_hidden

log = logging.getLogger("sparkmark.publish")

CONTROL = "_sparkmark"
MODES = ("append", "overwrite", "overwrite_partitions")
_SPARK_PART = re.compile(r"^(part-\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(.*)$")
KEY_IN_NAME = re.compile(r"jr_[0-9a-f]{64}-\d+")


class PublishError(SparkmarkError):
    """A committed write could not be published."""


@dataclass
class FileOutputPlan:
    """What publishing one write does; stored with the write's output record."""

    root: str  # protocol-qualified output folder
    key: str
    mode: str
    format: str
    files: list[tuple[str, str]] = field(default_factory=list)  # (staged, published), relative
    remove: list[str] = field(default_factory=list)  # relative paths an overwrite replaces
    store: str | None = None  # the id of the state store that made the write

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["files"] = [list(pair) for pair in self.files]
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> FileOutputPlan:
        return cls(
            doc["root"],
            doc["key"],
            doc["mode"],
            doc["format"],
            [tuple(pair) for pair in doc.get("files", ())],
            list(doc.get("remove", ())),
            doc.get("store"),
        )


def _is_local(fs) -> bool:
    if isinstance(fs, DirFileSystem):  # s3:// mapped onto a local folder
        fs = fs.fs
    return isinstance(fs, LocalFileSystem)


def _fs(root: str):
    fs, path = url_to_fs(root)
    return fs, path.rstrip("/")


def staging_url(root: str, key: str) -> str:
    fs, path = _fs(root)
    return fs.unstrip_protocol(f"{path}/{CONTROL}/staging/{key}")


def published_name(spark_name: str, key: str) -> str:
    """``part-00003-<uuid>-c000.snappy.parquet`` becomes ``part-00003-<key>-c000.snappy.parquet``."""
    match = _SPARK_PART.match(spark_name)
    if match:
        return f"{match.group(1)}-{key}{match.group(2)}"
    return f"{key}-{spark_name}"


def visible_files(fs, folder: str) -> list[str]:
    """Data files under ``folder``, relative to it, leaving out hidden names at any depth."""
    if not fs.exists(folder):
        return []
    found = []
    for path in fs.find(folder):
        rel = path[len(folder) + 1 :]
        if not any(is_hidden(part) for part in rel.split("/")):
            found.append(rel)
    return sorted(found)


def plan_output(root: str, key: str, *, mode: str, fmt: str, store: str | None = None) -> FileOutputPlan:
    """The plan of a write whose files Spark has finished writing to the staging folder."""
    fs, path = _fs(root)
    staging = f"{path}/{CONTROL}/staging/{key}"
    plan = FileOutputPlan(fs.unstrip_protocol(path), key, mode, fmt, store=store)
    seen: set[str] = set()
    for rel in visible_files(fs, staging):
        folder, _, name = rel.rpartition("/")
        dst = (folder + "/" if folder else "") + published_name(name, key)
        if dst in seen:
            raise PublishError(f"two staged files of write {key} would both be published as {dst}")
        seen.add(dst)
        plan.files.append((rel, dst))
    if mode == "overwrite":
        plan.remove = visible_files(fs, path)
    elif mode == "overwrite_partitions":
        folders = sorted({dst.rpartition("/")[0] for _, dst in plan.files})
        for folder in folders:
            plan.remove.extend(
                f"{folder}/{rel}" if folder else rel
                for rel in _ls_files(fs, f"{path}/{folder}" if folder else path)
            )
    return plan


def _ls_files(fs, folder: str) -> list[str]:
    """The visible files directly in ``folder`` (an overwritten partition's old files)."""
    try:
        entries = fs.ls(folder, detail=True)
    except FileNotFoundError:
        return []
    names = []
    for entry in entries:
        name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
        if entry["type"] != "directory" and not is_hidden(name):
            names.append(name)
    return sorted(names)


def _write_atomically(fs, path: str, text: str) -> None:
    if not _is_local(fs):
        fs.pipe_file(path, text.encode())  # an object store's PUT is all or nothing
        return
    folder, _, name = path.rpartition("/")
    tmp = f"{folder}/.{name}.tmp"
    fs.makedirs(folder, exist_ok=True)
    fs.pipe_file(tmp, text.encode())
    fs.mv(tmp, path)


def mark_pending(plan: FileOutputPlan) -> None:
    """Say, in the output folder, that write ``plan.key`` is not published yet."""
    fs, path = _fs(plan.root)
    _write_atomically(fs, f"{path}/{CONTROL}/runs/{plan.key}.pending", json.dumps(plan.to_json(), indent=1))


def publish(plan: FileOutputPlan) -> int:
    """Make a committed write visible. Safe to repeat after a crash at any step.
    Returns the number of files moved by this call."""
    fs, path = _fs(plan.root)
    staging = f"{path}/{CONTROL}/staging/{plan.key}"
    runs = f"{path}/{CONTROL}/runs"
    if not fs.exists(f"{runs}/{plan.key}.pending") and fs.exists(f"{runs}/{plan.key}.published"):
        return 0
    if not fs.exists(f"{runs}/{plan.key}.pending"):
        mark_pending(plan)  # readers must skip the files while they appear
    moved = 0
    made: set[str] = set()
    for src, dst in plan.files:
        source, target = f"{staging}/{src}", f"{path}/{dst}"
        if fs.exists(source):
            folder = target.rpartition("/")[0]
            if folder not in made:
                fs.makedirs(folder, exist_ok=True)
                made.add(folder)
            fs.mv(source, target)
            moved += 1
            crash_point("publishing")
        elif not fs.exists(target):
            raise OutputLost(
                f"staged file {source} of committed write {plan.key} is missing and was never "
                f"published to {plan.root}; its rows are lost from the output. Rewind the job's "
                "bookmark to before that run (`sparkmark bookmark reset JOB --run-id <the run before it>`) and re-run it"
            )
    for rel in plan.remove:
        with contextlib.suppress(FileNotFoundError):
            fs.rm(f"{path}/{rel}")
    record = {
        "key": plan.key,
        "mode": plan.mode,
        "files": [dst for _, dst in plan.files],
        "removed": len(plan.remove),
        "store": plan.store,
    }
    # Last of the data: a plain reader that wants all of a write waits for _SUCCESS.
    fs.pipe_file(f"{path}/_SUCCESS", b"")
    _write_atomically(fs, f"{runs}/{plan.key}.published", json.dumps(record, indent=1))
    _remove(fs, f"{runs}/{plan.key}.pending")
    _remove(fs, staging, recursive=True)
    log.info("published write %s: %d files into %s", plan.key, len(plan.files), plan.root)
    return moved


def missing_staged(plan: FileOutputPlan) -> list[str]:
    """The staged files of a write (not yet published) that are no longer there, found
    with one listing of its staging folder."""
    fs, path = _fs(plan.root)
    staging = f"{path}/{CONTROL}/staging/{plan.key}"
    fs.invalidate_cache(path)  # an object store's listing may be cached from the staging
    try:
        present = set(visible_files(fs, staging))
    except (FileNotFoundError, PermissionError):
        present = set()
    return [fs.unstrip_protocol(f"{staging}/{src}") for src, _ in plan.files if src not in present]


def discard(root: str, key: str) -> None:
    """Drop a write that will never be published: its staged files and its record."""
    fs, path = _fs(root)
    _remove(fs, f"{path}/{CONTROL}/staging/{key}", recursive=True)
    _remove(fs, f"{path}/{CONTROL}/runs/{key}.pending")


def _remove(fs, target: str, recursive: bool = False) -> None:
    with contextlib.suppress(FileNotFoundError):
        fs.rm(target, recursive=recursive)


def write_keys(root: str) -> list[str]:
    """The keys of every write recorded in ``root`` (published or pending)."""
    fs, path = _fs(root)
    try:
        entries = fs.ls(f"{path}/{CONTROL}/runs", detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return []
    keys = set()
    for entry in entries:
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        stem = name.removesuffix(".published").removesuffix(".pending")
        if stem != name and KEY_IN_NAME.fullmatch(stem):
            keys.add(stem)
    return sorted(keys)


def _record(fs, path: str, key: str) -> dict[str, Any] | None:
    for suffix in (".published", ".pending"):
        try:
            return json.loads(fs.cat_file(f"{path}/{CONTROL}/runs/{key}{suffix}"))
        except (FileNotFoundError, ValueError):
            continue
    return None


def recorded_store(root: str, key: str) -> str | None:
    """The id of the state store that made write ``key`` in ``root``, when recorded."""
    fs, path = _fs(root)
    record = _record(fs, path, key)
    return record.get("store") if record else None


def drop_write(root: str, key: str) -> int:
    """Remove the files write ``key`` published into ``root``, and its records.
    Returns the number of files removed."""
    fs, path = _fs(root)
    record = _record(fs, path, key) or {}
    removed = 0
    for entry in record.get("files", ()):
        rel = entry[1] if isinstance(entry, list) else entry  # a pending record holds pairs
        try:
            fs.rm(f"{path}/{rel}")
            removed += 1
        except FileNotFoundError:
            pass
    _remove(fs, f"{path}/{CONTROL}/staging/{key}", recursive=True)
    _remove(fs, f"{path}/{CONTROL}/runs/{key}.pending")
    _remove(fs, f"{path}/{CONTROL}/runs/{key}.published")
    return removed


def pending_keys(fs, root_path: str) -> set[str]:
    """Keys of the writes into ``root_path`` that are not published yet."""
    try:
        entries = fs.ls(f"{root_path.rstrip('/')}/{CONTROL}/runs", detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    keys = set()
    for entry in entries:
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(".pending"):
            keys.add(name[: -len(".pending")])
    return keys
