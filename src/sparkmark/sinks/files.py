"""File sinks: Spark writes a run's output to the hidden staging folder of the
output, and the engine's publish protocol makes it visible after the commit."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fsspec.core import url_to_fs

from ..engine import publish
from ..engine.faults import crash_when
from ..engine.storage import require_s3a, spark_base_path
from ..errors import SinkError

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame

log = logging.getLogger("sparkmark.sinks")

FORMATS = ("parquet", "orc", "json", "csv", "text", "xml")


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
