"""Append-only files (``modifiedFiles=new-bytes``): read only what a file gained since
it was last read, once the part that was read is found unchanged.

A file read under this policy has the SHA-256 of the bytes read recorded in its
bookmark entry. When it has grown, its first ``recorded size`` bytes are hashed
again: the same digest, and a recorded part that ends with a newline, mean an
append, and the bytes past it are copied to a file under the run's TempDir (after
the header line, for CSV with a header) for Spark to read in its place. Anything
else (a file that shrank, a changed prefix, a last line cut in the middle, an entry
recorded without a digest) is a rewrite: the file is read whole again, and a WARN
line says why. The hashing continues into the new bytes, so each changed file is
read once to check it and record its new digest.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

import fsspec

from .listing import ListedFile
from .manifest import private_parent
from .models import FileEntry
from .names import check_name, check_run_id

log = logging.getLogger("sparkmark.files")

CHUNK = 1 << 20


@dataclass
class AppendPlan:
    """What to read for a new-bytes source: each chosen file, or its appended part."""

    to_read: list[ListedFile] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # every chosen file's new digest
    appended: dict[str, int] = field(default_factory=dict)  # url -> bytes read of it (tails)
    reread: dict[str, str] = field(default_factory=dict)  # url -> why it is read whole
    roots: dict[str, str] = field(default_factory=dict)  # tail root -> the file's own root


def tail_root(temp_dir: str, job_name: str, run_id: str, ctx: str) -> str:
    check_name("job name", job_name)
    check_run_id(run_id)
    check_name("transformation_ctx", ctx)
    return f"{temp_dir.rstrip('/')}/appended/{job_name}/{run_id}/{ctx}"


def _digest_whole(url: str) -> str:
    digest = hashlib.sha256()
    with fsspec.open(url, "rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _header_line(url: str) -> bytes:
    with fsspec.open(url, "rb") as source:
        line = source.readline()
    return line if line.endswith(b"\n") else line + b"\n"


def plan_appends(
    selected: list[ListedFile],
    earlier: dict[str, FileEntry],
    *,
    temp_dir: str,
    job_name: str,
    run_id: str,
    ctx: str,
    csv_header: bool,
) -> AppendPlan:
    """Split the chosen files into appended parts to read and files read whole."""
    plan = AppendPlan()
    root = tail_root(temp_dir, job_name, run_id, ctx)
    for f in selected:
        before = earlier.get(f.url)
        if before is None:
            plan.digests[f.url] = _digest_whole(f.url)
            plan.to_read.append(f)
            continue
        why, digest, tail = _check_prefix(f, before)
        plan.digests[f.url] = digest
        if why is not None:
            plan.reread[f.url] = why
            plan.to_read.append(f)
            continue
        relative = f.url[len(f.root) :].lstrip("/")
        target = f"{root}/{relative}"
        private_parent(target)
        with fsspec.open(target, "wb", auto_mkdir=True) as out:
            if csv_header:
                out.write(_header_line(f.url))
            out.write(tail)
        plan.appended[f.url] = len(tail)
        plan.roots[root] = f.root
        tail_dir = root + ("/" + relative.rpartition("/")[0] if "/" in relative else "")
        plan.to_read.append(f._replace(url=target, root=root, dir=tail_dir, etag=None))
    return plan


def _check_prefix(f: ListedFile, before: FileEntry) -> tuple[str | None, str, bytes]:
    """(why the file must be read whole or None, its new digest, the appended bytes)."""
    if before.content_sha256 is None:
        return (
            "its last read recorded no digest (it was read under another policy)",
            _digest_whole(f.url),
            b"",
        )
    if f.size <= before.size:
        return f"it is now {f.size} bytes, not more than the {before.size} read", _digest_whole(f.url), b""
    digest = hashlib.sha256()
    with fsspec.open(f.url, "rb") as source:
        left = before.size
        last = b""
        while left > 0:
            chunk = source.read(min(CHUNK, left))
            if not chunk:
                break
            digest.update(chunk)
            last = chunk[-1:]
            left -= len(chunk)
        prefix_ok = left == 0 and digest.hexdigest() == before.content_sha256
        tail = source.read()
    digest.update(tail)
    if not prefix_ok:
        return f"its first {before.size} bytes changed since they were read", digest.hexdigest(), b""
    if before.size and last != b"\n":
        return "the part read ended in the middle of a line", digest.hexdigest(), b""
    return None, digest.hexdigest(), tail
