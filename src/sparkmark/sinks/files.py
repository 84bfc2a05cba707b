"""File sinks: Spark writes a run's output to the hidden staging folder of the
output, and the engine's publish protocol makes it visible after the commit."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from fsspec.core import url_to_fs

from ..engine import fileplan, ownership, publish
from ..engine.faults import crash_when
from ..engine.listing import mtime_ms
from ..engine.models import OutputKind, OutputRecord, OutputState
from ..engine.storage import require_s3a, spark_base_path
from ..errors import SinkError

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame

    from ..engine.store import StateStore

log = logging.getLogger("sparkmark.sinks")

FORMATS = ("parquet", "orc", "json", "csv", "text", "xml", "avro")


def check(fmt: str, mode: str, partition_by: Sequence[str]) -> None:
    if fmt not in FORMATS:
        raise SinkError(f"unsupported output format {fmt!r}; use one of {', '.join(FORMATS)}")
    if mode not in publish.MODES:
        raise SinkError(f"write mode must be one of {', '.join(publish.MODES)}, got {mode!r}")
    if mode == "overwrite_partitions" and not partition_by:
        raise SinkError("mode overwrite_partitions needs partition_by=[...]")


def _nothing_to_write(df: DataFrame, root: str) -> bool:
    """A frame without columns (a read of nothing but empty files, before any schema was
    known) has nothing to write; Parquet and ORC would refuse it, and a job that failed
    here could never move past those files. The output is left as it is."""
    if df.schema.fields:
        return False
    log.info("write to %s: the frame has no columns (its input had no rows); nothing is written", root)
    return True


# Formats whose file of no rows is recognised after the write (so a frame is not asked
# whether it is empty, a Spark job of its own, before it is written).
NO_ROWS_KNOWN = ("parquet", "orc", "json", "csv", "text")
NO_ROWS_MAX_BYTES = 64 * 1024  # a file of no rows is its schema or a header at most


def wrote_no_rows(fs: Any, folder: str, fmt: str, options: Mapping[str, Any]) -> bool:
    """Whether Spark's write into ``folder`` holds no rows: for a frame without records
    Spark writes one file (a Parquet or ORC file of only the schema, an empty or
    header-only text file), where Glue writes nothing. Read only when the write is one
    small file."""
    files = publish.visible_files(fs, folder)
    if not files:
        return True
    if len(files) != 1 or fmt not in NO_ROWS_KNOWN:
        return False
    path = f"{folder}/{files[0]}"
    size = int(fs.size(path))
    if size == 0:
        return True
    if size > NO_ROWS_MAX_BYTES:
        return False
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with fs.open(path, "rb") as f:
            return bool(pq.ParquetFile(f).metadata.num_rows == 0)
    if fmt == "orc":
        from pyarrow import orc

        with fs.open(path, "rb") as f:
            return bool(orc.ORCFile(f).nrows == 0)
    with fs.open(path, "rb", compression="infer") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    header = fmt == "csv" and str(options.get("header", "false")).lower() == "true"
    return len(lines) <= (1 if header else 0)


def _writer(df: DataFrame, fmt: str, partition_by: Sequence[str], options: Mapping[str, Any]):
    missing = [c for c in partition_by if c not in df.columns]
    if missing:
        raise SinkError(f"partition column(s) {', '.join(missing)} are not columns of the DataFrame")
    writer = df.write.format(fmt)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    for name, value in options.items():
        writer = writer.option(name, str(value).lower() if isinstance(value, bool) else str(value))
    return writer


def stage(
    df: DataFrame,
    root: str,
    key: str,
    *,
    fmt: str,
    mode: str,
    partition_by: Sequence[str],
    options: Mapping[str, Any],
    store: str | None = None,
) -> publish.FileOutputPlan:
    """Write ``df`` into the staging folder of write ``key`` and return its plan; the
    output folder itself is untouched."""
    require_s3a(df.sparkSession, root)
    staging = publish.staging_url(root, key)
    fs, staging_path = url_to_fs(staging)
    crash_when("writing", lambda: any("/part-" in p for p in fs.find(staging_path)))
    if _nothing_to_write(df, root):
        mode = "append"  # no files to publish, and none of the output's to replace
    else:
        _writer(df, fmt, partition_by, options).mode("overwrite").save(spark_base_path(staging))
        if wrote_no_rows(fs, staging_path, fmt, options):
            # A frame of no records (a run with nothing new): as on Glue, nothing is
            # written, and an overwrite leaves the output as it is.
            log.info("write to %s: the frame has no records; nothing is written", root)
            fs.rm(staging_path, recursive=True)
            mode = "append"
    plan = publish.plan_output(root, key, mode=mode, fmt=fmt, store=store)
    publish.mark_pending(plan)
    return plan


def write_now(
    df: DataFrame, root: str, *, fmt: str, mode: str, partition_by: Sequence[str], options: Mapping[str, Any]
) -> None:
    """A plain Spark write, visible at once (a sink without a ctx, as on Glue)."""
    if _nothing_to_write(df, root):
        return
    require_s3a(df.sparkSession, root)
    writer = _writer(df, fmt, partition_by, options)
    if mode == "overwrite_partitions":
        writer = writer.option("partitionOverwriteMode", "dynamic").mode("overwrite")
    else:
        writer = writer.mode(mode)
    writer.save(spark_base_path(root))


@dataclass(frozen=True)
class FileSink:
    """Files under ``path`` (its root folder), in ``fmt``, for ``runtime.write_sink``:
    modes append, overwrite and overwrite_partitions; ``options`` go to Spark's writer."""

    path: str
    fmt: str = "parquet"
    mode: str = "append"
    partition_by: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    ctx: str | None = None
    kind: ClassVar[OutputKind] = OutputKind.FILES
    unit: ClassVar[str] = "files"

    @property
    def target(self) -> str:
        return fileplan.root_url(fileplan.as_path_list(self.path)[0])

    def check(self) -> None:
        check(self.fmt, self.mode, self.partition_by)

    def join(self, run: Any, staged: bool) -> None:
        """A folder needs nothing of the run."""

    def guard(self, store: StateStore) -> None:
        root = self.target
        ownership.check_output(
            store, root, publish.write_keys(root), recorded_by=lambda key: publish.recorded_store(root, key)
        )

    def write_now(self, df: DataFrame) -> dict[str, Any]:
        root = self.target
        write_now(
            df, root, fmt=self.fmt, mode=self.mode, partition_by=self.partition_by, options=self.options
        )
        return {"path": root, "mode": self.mode, "format": self.fmt}

    def plan(self) -> dict[str, Any]:
        return {"root": self.target, "key": None, "mode": self.mode, "format": self.fmt}

    def stage(self, df: DataFrame, record: OutputRecord, store: StateStore) -> tuple[dict[str, Any], int]:
        plan = stage(
            df,
            self.target,
            record.key,
            fmt=self.fmt,
            mode=self.mode,
            partition_by=self.partition_by,
            options=self.options,
            store=store.store_id,
        )
        return plan.to_json(), len(plan.files)

    def discard(self, store: StateStore, record: OutputRecord) -> None:
        if store.set_output(
            record.run_id, record.seq, OutputState.DISCARDED, expect=(OutputState.STAGING, OutputState.STAGED)
        ):
            publish.discard(self.target, record.key)

    def result(self, staged: int, ctx: str) -> dict[str, Any]:
        return {"path": self.target, "mode": self.mode, "ctx": ctx, "files_staged": staged}


def purge(url: str, retention_hours: float = 168) -> int:
    """Delete the files under ``url`` last modified more than ``retention_hours`` ago
    (Glue's ``purge_s3_path``). Returns how many were removed."""
    cutoff_ms = (time.time() - retention_hours * 3600) * 1000
    fs, root = url_to_fs(url)
    removed = 0
    for path, info in fs.find(root, detail=True).items():
        modified = mtime_ms(info)
        if modified is not None and modified < cutoff_ms:
            fs.rm(path)
            removed += 1
    log.info("purge %s: removed %d files older than %s hours", url, removed, retention_hours)
    return removed
