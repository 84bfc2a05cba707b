"""The one read path: every source, native or Glue's, bookmarked or not, is read here."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..engine.models import BookmarkOption
from ..sources.base import ReadContext, Source
from ..sources.registry import DELTA, FILES, ICEBERG, JDBC, kind_of_metrics
from ..sources.streams import StreamSource
from . import capture

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .run import JobRun

log = logging.getLogger("sparkmark.run")


def read_source(spark: SparkSession, source: Source, run: JobRun | None) -> DataFrame:
    """Read ``source`` for ``run`` (its bookmark decides what is new, and the state to
    commit is kept with the run), or, with no run, read all of it and keep nothing."""
    if run is None:
        return _sampled(source, source.read(ReadContext(spark=spark, ctx=source.ctx)).frame)
    run.require_running()
    began = time.monotonic()
    bookmark_ctx = run.claim_source(source.ctx, source.describe())
    context = ReadContext(
        spark=spark,
        ctx=source.ctx,
        bookmark_ctx=bookmark_ctx,
        commit_state=run.option is BookmarkOption.ENABLE,
        previous=run.previous_state(source.ctx),
        range=run.range if bookmark_ctx is not None else None,
        store=run.store,
        lineage=run.lineage,
        job_name=run.name,
        run_id=run.run_id,
        temp_dir=run.temp_dir,
    )
    outcome = source.read(context)
    metrics = dict(outcome.metrics)
    metrics["duration_seconds"] = round(time.monotonic() - began, 4)
    key = source.ctx if source.ctx is not None else f"(no ctx) {source.describe()}"
    run.record_source(key, metrics)
    kind = kind_of_metrics(metrics)
    if kind is FILES:
        log.info(
            "job %s ctx %s: %d files listed, %d to read (%d new, %d modified), %d already "
            "processed, %d deferred",
            run.name,
            key,
            metrics["files_listed"],
            metrics["files_read"],
            metrics["files_new"],
            metrics["files_modified"],
            metrics["files_skipped"],
            metrics["files_deferred"],
        )
    elif kind is JDBC:
        log.info(
            "job %s ctx %s: %s rows in range %s",
            run.name,
            key,
            metrics["rows_read"],
            metrics.get("key_range"),
        )
    elif kind in (ICEBERG, DELTA):
        log.info("job %s ctx %s: %s", run.name, key, kind.read(metrics))
    if isinstance(source, StreamSource):
        run.add_stream_source(source, bookmark_ctx)
    if outcome.commit is not None and bookmark_ctx is not None:
        run.stage_commit(outcome.commit)
    return _sampled(source, outcome.frame)


def _sampled(source: Source, frame: DataFrame) -> DataFrame:
    """An upgrade check's sample of a batch source (``capture``); the frame otherwise."""
    return frame if isinstance(source, StreamSource) else capture.sampled(frame)
