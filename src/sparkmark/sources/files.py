"""File sources: list, choose this run's files, and read exactly those with Spark."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import reduce
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from ..engine.increment import FileSourceOptions, Increment, plan_increment, range_increment
from ..engine.listing import FileLister, Listing, ListedFile, spark_base_path, spark_path
from ..engine.globs import ExclusionMatcher
from ..engine.models import CtxCommit, FileEntry
from ..errors import SourceError

log = logging.getLogger("sparkmark.files")

FORMATS = ("csv", "json", "parquet", "orc", "xml", "text", "avro")
SOURCE_FILE = "_sm_source_file"  # beside malformed records: the file they came from


@dataclass
class FilePlan:
    """What a file source decided for this run, before Spark reads anything."""

    ctx: str | None
    paths: list[str]
    options: FileSourceOptions
    listing: Listing
    increment: Increment
    missing_in_range: list[str] = field(default_factory=list)

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
            "files_late": inc.late,
            "files_deferred": inc.deferred_by_band + inc.deferred_by_bound,
            "partitions_listed": lst.dirs_listed,
            "partitions_skipped": len(lst.skipped_dirs),
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


def as_path_list(paths: str | list[str] | tuple[str, ...]) -> list[str]:
    if isinstance(paths, str):
        paths = [paths]
    # Local paths are kept absolute, so the bookmark reads the same from any folder.
    result = [str(p) if "://" in str(p) else os.path.abspath(str(p)) for p in paths]
    if not result:
        raise SourceError("read_files needs at least one path")
    return result


def plan_files(
    paths: list[str],
    options: FileSourceOptions,
    *,
    ctx: str | None,
    processed: dict[str, FileEntry] | Callable[[Listing], dict[str, FileEntry]] | None,
    known_dirs: dict[str, int] | None,
    high_water_ms: int | None,
    now_ms: int,
) -> FilePlan:
    """List and choose. ``processed=None`` means no bookmark: every listed file.
    ``processed`` may be a function of the listing, to load only what it needs."""
    lister = FileLister(
        recurse=options.recurse,
        exclusions=ExclusionMatcher(options.exclusions),
        known_dirs=known_dirs,
        skip_unchanged_dirs=options.skip_unchanged_partitions and known_dirs is not None,
    )
    listing = lister.list(paths)
    if processed is None:
        inc = Increment(selected=sorted(listing.files, key=lambda f: (f.mtime_ms, f.url)))
        inc.new = len(inc.selected)
    else:
        state = processed(listing) if callable(processed) else processed
        inc = plan_increment(
            listing, state, options=options, now_ms=now_ms, high_water_ms=high_water_ms
        )
    return FilePlan(ctx, paths, options, listing, inc)


def plan_range(
    paths: list[str],
    options: FileSourceOptions,
    *,
    ctx: str,
    upper: dict[str, FileEntry],
    lower: dict[str, FileEntry],
) -> FilePlan:
    lister = FileLister(recurse=options.recurse, exclusions=ExclusionMatcher(options.exclusions))
    listing = lister.list(paths)
    inc, missing = range_increment(listing, upper, lower)
    for path in missing:
        log.warning("file %s is in the bookmark range but no longer exists; it is not read", path)
    return FilePlan(ctx, paths, options, listing, inc, missing)


def read_selected(
    spark: SparkSession,
    files: list[ListedFile],
    *,
    fmt: str,
    spark_options: dict[str, Any],
    schema: StructType | str | None,
    empty_schema: StructType | None,
    root_columns: dict[str, dict[str, str]] | None = None,
    corrupt_column: str | None = None,
) -> DataFrame:
    """Read exactly ``files`` with Spark, keeping Hive partition columns of each root.

    ``root_columns`` maps a root (as listed) to constant columns for its files: the
    values of a catalog partition whose folder is that root. ``corrupt_column`` (JSON
    and CSV) makes sure malformed records arrive in that column, with the path of
    their file in ``SOURCE_FILE``."""
    if not files:
        if isinstance(schema, str):
            schema = StructType.fromDDL(schema)
        return spark.createDataFrame([], schema or empty_schema or StructType([]))
    if fmt == "avro":
        from .avro import read_avro

        by_root: dict[str, list[tuple[str, str]]] = {}
        for f in files:
            by_root.setdefault(f.root, []).append((f.url, f.root))
        parts = []
        for root, group in by_root.items():
            parts.append(_with_root_columns(read_avro(spark, group), root, root_columns))
        return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    # Spark drops files that sit beside partition folders when both are read in one
    # load, so files are grouped by root and by the partition columns of their folder.
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for f in files:
        groups.setdefault((f.root, partition_columns(f)), []).append(spark_path(f.url))
    frames = []
    for (root, _columns), group in groups.items():
        reader = spark.read.format(fmt)
        for key, value in spark_options.items():
            reader = reader.option(key, value)
        reader = reader.option("basePath", spark_base_path(root))
        group_schema = schema
        if corrupt_column is not None and (schema is not None or fmt == "csv"):
            # JSON inference adds the column only when it met a malformed record; CSV
            # never does, and a given schema must be told about it.
            if group_schema is None:
                group_schema = reader.load(group).schema
            elif isinstance(group_schema, str):
                group_schema = StructType.fromDDL(group_schema)
            if corrupt_column not in group_schema.fieldNames():
                group_schema = StructType(group_schema.fields + [StructField(corrupt_column, StringType())])
        if group_schema is not None:
            reader = reader.schema(group_schema)
        frame = reader.load(group)
        if corrupt_column is not None and corrupt_column in frame.columns:
            frame = frame.withColumn(SOURCE_FILE, F.col("_metadata.file_path"))
        frames.append(_with_root_columns(frame, root, root_columns))
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def _with_root_columns(frame: DataFrame, root: str,
                       root_columns: dict[str, dict[str, str]] | None) -> DataFrame:
    for name, value in ((root_columns or {}).get(root) or {}).items():
        frame = frame.withColumn(name, F.lit(value))
    return frame


def partition_columns(f: ListedFile) -> tuple[str, ...]:
    """The Hive partition column names in a file's folder path below its root."""
    relative = f.dir[len(f.root):].strip("/")
    return tuple(part.split("=", 1)[0] for part in relative.split("/") if "=" in part)


def ctx_commit(plan: FilePlan, *, previous: dict[str, Any] | None, schema_json: str | None,
               run_id: str) -> CtxCommit:
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
        "high_water_mtime": (
            datetime.fromtimestamp(high / 1000, timezone.utc).isoformat() if high else None
        ),
        "files_committed": int(previous.get("files_committed") or 0) + len(selected),
        "last_run": {
            "run_id": run_id,
            "files": len(selected),
            "bytes": plan.increment.bytes,
            "deferred": plan.increment.deferred_by_band + plan.increment.deferred_by_bound,
        },
        "schema": schema_json or previous.get("schema"),
    }
    return CtxCommit(
        ctx=plan.ctx or "",
        state=state,
        files=[FileEntry(f.url, f.mtime_ms, f.size) for f in selected],
        dirs=dict(plan.increment.dir_marks),
    )


def now_ms() -> int:
    return int(time.time() * 1000)
