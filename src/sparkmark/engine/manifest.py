"""The per-run manifest of the files a source read, in Glue's layout:
``<TempDir>/partitionlisting/<job>/<run id>/<ctx>.input-files.json``."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import fsspec

from ..state.handle import private_dir, private_file
from .listing import ListedFile
from .masking import mask_document
from .names import check_name, check_run_id


def manifest_path(temp_dir: str, job_name: str, run_id: str, ctx: str) -> str:
    """Glue's layout; every segment is checked, so no name can climb out of TempDir."""
    check_name("job name", job_name)
    check_run_id(run_id)
    check_name("transformation_ctx", ctx)
    return f"{temp_dir.rstrip('/')}/partitionlisting/{job_name}/{run_id}/{ctx}.input-files.json"


def quarantine_path(temp_dir: str, job_name: str, run_id: str, ctx: str) -> str:
    """Where a run sets aside a source's malformed records, beside its manifests."""
    check_name("job name", job_name)
    check_run_id(run_id)
    check_name("transformation_ctx", ctx)
    return f"{temp_dir.rstrip('/')}/quarantine/{job_name}/{run_id}/{ctx}"


def private_parent(url: str) -> None:
    """On the local disk, make the folders of ``url`` below TempDir's ``partitionlisting``
    or ``quarantine`` owner-only (0700), whatever the umask: they name the job's input
    and hold its malformed records."""
    local = url.removeprefix("file://")
    if "://" in local:
        return  # object storage: access is the bucket's policy
    path = Path(local)
    for marker in ("partitionlisting", "quarantine"):
        if marker in path.parts:
            top = Path(*path.parts[: path.parts.index(marker) + 1])
            private_dir(top)
            for folder in path.parents:
                if folder == top or top not in folder.parents:
                    break
                private_dir(folder)
            return


def write_manifest(path: str, files: list[ListedFile]) -> None:
    """One entry per folder: ``{"path": folder, "files": [file, ...]}``; on the local disk
    the file is 0600 in 0700 folders."""
    by_dir: dict[str, list[str]] = defaultdict(list)
    for f in files:
        by_dir[f.dir].append(f.url)
    document = mask_document([{"path": d, "files": sorted(urls)} for d, urls in sorted(by_dir.items())])
    private_parent(path)
    local = path.removeprefix("file://")
    if "://" not in local:
        fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1, ensure_ascii=False)
        private_file(Path(local))
        return
    with fsspec.open(path, "w", encoding="utf-8", auto_mkdir=True) as out:
        json.dump(document, out, indent=1, ensure_ascii=False)
