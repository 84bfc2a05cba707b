"""The per-run manifest of the files a source read, in Glue's layout:
``<TempDir>/partitionlisting/<job>/<run id>/<ctx>.input-files.json``."""

from __future__ import annotations

import json
from collections import defaultdict

import fsspec

from .listing import ListedFile
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


def write_manifest(path: str, files: list[ListedFile]) -> None:
    """One entry per folder: ``{"path": folder, "files": [file, ...]}``."""
    by_dir: dict[str, list[str]] = defaultdict(list)
    for f in files:
        by_dir[f.dir].append(f.url)
    document = [{"path": d, "files": sorted(urls)} for d, urls in sorted(by_dir.items())]
    with fsspec.open(path, "w", encoding="utf-8", auto_mkdir=True) as out:
        json.dump(document, out, indent=1, ensure_ascii=False)
