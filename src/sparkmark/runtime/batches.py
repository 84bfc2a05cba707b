"""Micro-batches of a streaming query, each processed exactly once.

Spark's ``foreachBatch`` calls a function with each micro-batch and records the batch
as done in the query's checkpoint after the function returns; a crash in between makes
Spark replay the batch (same query id, same batch id, same records). On its own that is
at-least-once. Here each batch's writes, through the run's exactly-once sinks, are
staged as the batch's own, committed with a row naming the batch (query id, batch id)
in one transaction of the state store, then published. A replayed batch finds its row
and writes nothing again; a batch that died before its row is discarded and done again.

The batch function sees the records that parsed; the others are set aside with where
they came from (``<TempDir>/quarantine/<job>/stream-<query id>/batch-<id>``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fsspec.core import url_to_fs

from .. import outputs as run_outputs
from .. import spark_lines
from ..engine.faults import crash_point
from ..engine.manifest import private_parent
from ..engine.models import CtxCommit, OutputRecord, OutputState
from ..engine.names import check_name
from ..engine.storage import spark_base_path
from ..errors import OutputLost, SinkError, SourceError, SparkmarkError
from ..sources.streams import CORRUPT_COLUMN, HIDDEN, ORIGIN_COLUMN
from . import stopping

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .run import JobRun

log = logging.getLogger("sparkmark.stream")

DEFAULT_WINDOW = "100 seconds"  # Glue's default windowSize
DEFAULT_RETRIES = 3  # Glue's default batchMaxRetries
RECENT_BATCHES = 20  # batch summaries kept in the run's metrics


@dataclass(frozen=True)
class BatchOptions:
    """Glue's forEachBatch options, checked, with the run's bounds."""

    checkpoint: str
    window: str = DEFAULT_WINDOW
    max_retries: int = DEFAULT_RETRIES
    available_now: bool = False
    max_batches: int | None = None

    @classmethod
    def parse(
        cls,
        options: dict[str, Any],
        *,
        default_checkpoint: str | None,
        until_caught_up: bool = False,
        max_batches: int | None = None,
    ) -> BatchOptions:
        known = {"windowSize", "checkpointLocation", "batchMaxRetries", "trigger"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise SourceError(
                f"forEachBatch option(s) {', '.join(unknown)} not known; use {', '.join(sorted(known))}"
            )
        window = str(options.get("windowSize") or DEFAULT_WINDOW)
        if not re.fullmatch(
            r"\s*\d+(\.\d+)?\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\s*", window
        ):
            raise SourceError(f"windowSize must be a duration such as '100 seconds', got {window!r}")
        try:
            retries = int(options.get("batchMaxRetries", DEFAULT_RETRIES))
        except (TypeError, ValueError):
            retries = -1
        if not 0 <= retries <= 100:
            raise SourceError(
                f"batchMaxRetries must be a whole number from 0 to 100, got {options.get('batchMaxRetries')!r}"
            )
        checkpoint = options.get("checkpointLocation") or default_checkpoint
        if not checkpoint:
            raise SourceError("forEachBatch needs options['checkpointLocation'] (or the job's --TempDir)")
        trigger = str(options.get("trigger", "")).lower()
        if trigger not in ("", "availablenow", "processingtime"):
            raise SourceError(
                f"trigger must be 'availableNow' or 'processingTime', got {options.get('trigger')!r}"
            )
        return cls(
            checkpoint=str(checkpoint).rstrip("/") + "/",
            window=window,
            max_retries=retries,
            # A bounded run ends when its batches are done or nothing new is left to read.
            available_now=until_caught_up or trigger == "availablenow" or max_batches is not None,
            max_batches=max_batches,
        )


def read_checkpoint_offsets(checkpoint: str, batch_id: int) -> list[Any]:
    """Where batch ``batch_id`` ends, per source, as Spark wrote it in its offset log
    before running the batch: ``offsets/<id>`` holds a version line, the batch's
    metadata, then one offset (JSON) per source."""
    fs, root = url_to_fs(checkpoint)
    path = f"{root.rstrip('/')}/offsets/{batch_id}"
    with fs.open(path, "r", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    offsets: list[Any] = []
    for raw in lines[2:]:
        line = raw.strip()
        if not line or line == "-":
            offsets.append(None)
            continue
        try:
            offsets.append(json.loads(line))
        except ValueError:
            offsets.append(line)
    return offsets


def pending_batch(checkpoint: str) -> int | None:
    """The batch a checkpoint has planned (``offsets/N``) but not marked done
    (``commits/N``): Spark does it again first when the query restarts."""
    fs, root = url_to_fs(checkpoint)
    root = root.rstrip("/")

    def newest(folder: str) -> int | None:
        try:
            names = [p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/{folder}", detail=False)]
        except FileNotFoundError:
            return None
        ids = [int(n) for n in names if n.isdigit()]
        return max(ids) if ids else None

    planned, done = newest("offsets"), newest("commits")
    if planned is None or (done is not None and done >= planned):
        return None
    return planned


def read_query_id(checkpoint: str) -> str:
    """The query's id: stable for as long as its checkpoint lives."""
    fs, root = url_to_fs(checkpoint)
    with fs.open(f"{root.rstrip('/')}/metadata", "r", encoding="utf-8") as handle:
        return str(json.loads(handle.readline())["id"])


def lag_of(latest: Any, end: Any) -> int | None:
    """Records between a batch's end and the latest offsets, for offsets counted in
    records (Kafka's ``{topic: {partition: offset}}``); None for other offsets (Kinesis
    sequence numbers do not count records)."""
    if not isinstance(latest, dict) or not isinstance(end, dict):
        return None
    total, compared = 0, False
    for topic, parts in latest.items():
        if not isinstance(parts, dict):
            return None
        done = end.get(topic) or {}
        if not isinstance(done, dict):
            return None
        for part, offset in parts.items():
            if isinstance(offset, int) and isinstance(done.get(part), int):
                total += max(offset - done[part], 0)
                compared = True
    return total if compared else None


@dataclass
class BatchScope:
    """The writes of one attempt at one micro-batch."""

    query_id: str
    batch_id: int
    outputs: list[OutputRecord] = field(default_factory=list)
    sinks: int = 0

    def next_sink_ctx(self) -> str:
        """The ctx of a write without one: its place among the batch's writes."""
        self.sinks += 1
        return f"batch_sink_{self.sinks}"


class MicroBatches:
    """Runs ``function`` on each micro-batch of ``frame`` for ``run``; ``start()``
    blocks until the query ends (caught up, enough batches, stopped, or failed)."""

    def __init__(
        self, run: JobRun, frame: DataFrame, function: Callable[[DataFrame, int], Any], options: BatchOptions
    ):
        self.run = run
        self.frame = frame
        self.function = function
        self.options = options
        self.sources = run.stream_sources()
        self.error: BaseException | None = None
        self.done = 0  # batches processed by this run
        self.replayed = 0  # batches found already committed (replayed after a crash)
        self.records = 0
        self.quarantined = 0
        self.recent: list[dict[str, Any]] = []
        self.latest: dict[str, Any] = {}
        self.last_offsets: list[Any] = []
        self.last_batch: int | None = None
        self.query_id: str | None = None
        self._enough = threading.Event()
        self._lock = threading.Lock()

    # ------------------------------------------------------------ the query

    def start(self) -> None:
        if type(self.frame).__module__.startswith("pyspark.sql.connect"):
            raise SourceError(
                "streaming jobs need a classic Spark session: over Spark Connect the batch "
                "function would run in the server's Python workers, away from the run that "
                "commits each batch; run this job without --remote / SPARK_REMOTE"
            )
        if CORRUPT_COLUMN not in self.frame.columns and any(
            getattr(source, "classification", None) for source, _ in self.sources
        ):
            log.warning(
                "the frame given to forEachBatch lost the column %s (a select before forEachBatch?): "
                "records that do not parse reach the batch function as rows of nulls",
                CORRUPT_COLUMN,
            )
        private_parent(self.options.checkpoint)
        # A source that plans a batch by reading ahead a bounded number of records
        # (Kinesis) shows an available-now query only the next batch: the query is run
        # again from its checkpoint until a run finds nothing new.
        reads_ahead = any(getattr(source, "reads_ahead", False) for source, _ in self.sources)
        try:
            failures = redone = 0
            while True:
                pending = pending_batch(self.options.checkpoint)
                before = self.done
                try:
                    self._run_query()
                except _ReportingFailure:
                    failures += 1
                    if failures > REPORTING_RESTARTS:
                        raise SourceError(
                            "the streaming query failed: Spark's Kafka source could not report a "
                            "replayed batch's progress (SPARK-55271), again after restarts"
                        ) from None
                    log.warning(
                        "job %s: Spark's Kafka source failed to report the progress of a batch "
                        "replayed after a restart (SPARK-55271, after the batch was done): "
                        "starting the query again from its checkpoint",
                        self.run.name,
                    )
                    continue
                if not self.options.available_now or self._enough.is_set():
                    break
                if pending is not None and redone < REPORTING_RESTARTS:
                    # Spark ends an available-now query that restarts with a batch planned
                    # but not marked done once that batch is done again: go on to catch up.
                    redone += 1
                    log.info(
                        "job %s: the query redid batch %d, which its last run left unfinished, and "
                        "stopped there; starting it again to catch up",
                        self.run.name,
                        pending,
                    )
                    continue
                if reads_ahead and self.done > before:  # new batches: there may be more
                    log.info(
                        "job %s: the stream is read ahead one batch at a time; starting the query "
                        "again until it finds nothing new",
                        self.run.name,
                    )
                    continue
                break
        finally:
            self._stage_commit()
        log.info(
            "job %s: streaming query %s ended after %d batches (%d records, %d replayed batches skipped)",
            self.run.name,
            self.query_id,
            self.done,
            self.records,
            self.replayed,
        )

    def _run_query(self) -> None:
        writer = self.frame.writeStream.foreachBatch(self._batch).option(
            "checkpointLocation", spark_base_path(self.options.checkpoint)
        )
        if self.options.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.options.window)
        query = writer.start()
        self.query_id = str(query.id)
        log.info(
            "job %s: streaming query %s started (%s, checkpoint %s)",
            self.run.name,
            self.query_id,
            "until caught up" if self.options.available_now else f"every {self.options.window}",
            self.options.checkpoint,
        )
        try:
            with stopping.watched():
                while not query.awaitTermination(1):
                    self._progress(query)
                    signum = stopping.take_request()
                    if signum is not None:
                        log.warning("job %s: stopping streaming query %s", self.run.name, self.query_id)
                        query.stop()
                        raise stopping.RunStopped(signum)
                    if self._enough.is_set():
                        query.stop()
        except BaseException as exc:
            with contextlib.suppress(Exception):
                query.stop()
            if self.error is not None:
                raise self.error from None
            if isinstance(exc, (KeyboardInterrupt, SparkmarkError)):
                raise
            if _SPARK_55271 in str(exc):
                raise _ReportingFailure() from None
            if not self._enough.is_set():  # else: the batch past --max-batches was refused
                raise SourceError(_query_failure(exc)) from None
        finally:
            with contextlib.suppress(Exception):
                self._progress(query)
        if self.error is not None:
            raise self.error

    def _progress(self, query) -> None:
        for progress in query.recentProgress:
            try:
                sources = spark_lines.progress_document(progress).get("sources") or []
            except (AttributeError, TypeError, ValueError):
                continue
            for i, source in enumerate(sources):
                latest = _as_json(source.get("latestOffset"))
                if latest is not None:
                    self.latest[str(i)] = latest
        if self.query_id is not None:
            self.run.record_stream(self.summary())

    # ------------------------------------------------------------ one batch

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        try:
            self._process(df, int(batch_id))
        except _Enough:
            raise
        except BaseException as exc:
            self.error = exc
            raise

    def _process(self, df: DataFrame, batch_id: int) -> None:
        run = self.run
        if self._enough.is_set():
            raise _Enough()  # past --max-batches: the batch is left for the next run
        query_id = self.query_id or read_query_id(self.options.checkpoint)
        self.query_id = query_id
        done = run.store.committed_batch(run.name, query_id, batch_id)
        if done is not None:
            self.replayed += 1
            log.warning(
                "job %s: batch %d of streaming query %s was committed by run %s before a "
                "restart; its writes are not repeated",
                run.name,
                batch_id,
                query_id,
                done.run_id,
            )
            self._publish_left(done.run_id, done.outputs)
            # The bookmark says where the checkpoint stands, replayed batches included: a
            # run killed after committing a batch never recorded it, so the next one does.
            with self._lock:
                self.last_offsets = read_checkpoint_offsets(self.options.checkpoint, batch_id)
                self.last_batch = batch_id
            # Spark reports a batch's progress from its executed plan: one that nothing ran
            # on fails the query when it is reported. Count it (replays only).
            df.count()
            return
        began = time.monotonic()
        offsets = read_checkpoint_offsets(self.options.checkpoint, batch_id)
        df = df.persist()
        try:
            # One pass fills the cache and counts the records and the malformed ones.
            from pyspark.sql import functions as F

            malformed = F.count(F.col(CORRUPT_COLUMN)) if CORRUPT_COLUMN in df.columns else F.lit(0)
            counts = df.agg(F.count(F.lit(1)).alias("records"), malformed.alias("malformed")).first()
            records, bad = (int(counts["records"]), int(counts["malformed"])) if counts else (0, 0)
            quarantined = self._quarantine(df, query_id, batch_id, bad) if bad else 0
            clean = df
            if CORRUPT_COLUMN in df.columns:
                clean = df.filter(df[CORRUPT_COLUMN].isNull())
            clean = clean.drop(*[c for c in HIDDEN if c in clean.columns])
            attempts = self._call(clean, query_id, batch_id)
        finally:
            df.unpersist()
        scope = attempts[-1]
        crash_point("batch_staged")
        for output in scope.outputs:  # the batch's offsets never move past output that is gone
            missing = run_outputs.gone(output, self.run.databases, self.run.connections)
            if missing:
                raise OutputLost(
                    f"batch {batch_id}'s write to {output.target}: {missing} before the batch's commit. "
                    "Nothing was committed, so the batch is read again"
                )
        metrics = {
            "numRecords": records,
            "records_quarantined": quarantined,
            "attempts": len(attempts),
            "duration_ms": int((time.monotonic() - began) * 1000),
        }
        run.store.commit_batch(
            run.run_id,
            query_id=query_id,
            batch_id=batch_id,
            outputs=[o.seq for o in scope.outputs],
            offsets={str(i): o for i, o in enumerate(offsets)},
            metrics=metrics,
        )
        published = self._publish(scope.outputs, batch_id)
        crash_point("batch_committed")
        with self._lock:
            self.done += 1
            self.records += records
            self.quarantined += quarantined
            self.last_offsets = offsets
            self.last_batch = batch_id
            self.recent = [
                {"batch_id": batch_id, **metrics, "writes": published},
                *self.recent,
            ][:RECENT_BATCHES]
        log.info(
            "job %s: batch %d: %d records, %d quarantined, %d writes published (%d ms)",
            run.name,
            batch_id,
            records,
            quarantined,
            len(published),
            metrics["duration_ms"],
        )
        run.record_stream(self.summary())
        if self.options.max_batches is not None and self.done >= self.options.max_batches:
            self._enough.set()

    def _call(self, clean: DataFrame, query_id: str, batch_id: int) -> list[BatchScope]:
        """The batch function, retried up to batchMaxRetries times; each failed attempt's
        staged writes are discarded."""
        attempts: list[BatchScope] = []
        for attempt in range(self.options.max_retries + 1):
            scope = BatchScope(query_id, batch_id)
            attempts.append(scope)
            try:
                with self.run.batch_scope(scope):
                    self.function(clean, batch_id)
                return attempts
            except Exception as exc:
                for record in scope.outputs:
                    with contextlib.suppress(Exception):
                        run_outputs.discard_output(
                            self.run.store, record, self.run.databases, self.run.connections
                        )
                if attempt >= self.options.max_retries:
                    raise
                log.warning(
                    "job %s: batch %d failed (attempt %d of %d), retrying: %s",
                    self.run.name,
                    batch_id,
                    attempt + 1,
                    self.options.max_retries + 1,
                    str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                )
        return attempts

    def _quarantine(self, df: DataFrame, query_id: str, batch_id: int, count: int) -> int:
        from pyspark.sql import functions as F

        bad = df.filter(F.col(CORRUPT_COLUMN).isNotNull())
        where = quarantine_url(self.run.temp_dir, self.run.name, query_id, batch_id)
        private_parent(f"{where}/part")
        columns = [F.col(CORRUPT_COLUMN).alias("record")]
        if ORIGIN_COLUMN in df.columns:
            columns.insert(0, F.col(f"{ORIGIN_COLUMN}.*"))
        # Overwritten whole: a replayed batch sets aside the same records once.
        bad.select(*columns).write.mode("overwrite").json(spark_base_path(where))
        log.warning(
            "job %s: batch %d: %d malformed records set aside in %s, with where each came from",
            self.run.name,
            batch_id,
            count,
            where,
        )
        return count

    def _publish(self, outputs: list[OutputRecord], batch_id: int) -> list[dict[str, Any]]:
        results = []
        for record in outputs:
            committed = self.run.store.get_output(record.run_id, record.seq)
            try:
                results.append(
                    run_outputs.publish_output(
                        self.run.store, committed, self.run.databases, self.run.connections
                    )
                )
            except OutputLost as exc:
                raise OutputLost(
                    f"batch {batch_id} committed, but its write to {record.target} is lost: {exc}"
                ) from None
            except Exception as exc:  # noqa: BLE001 - one line naming the write; the next run publishes it
                raise SinkError(
                    f"batch {batch_id} committed, but publishing its write to {record.target} failed: "
                    f"{exc}. Nothing is lost: the next run of job {self.run.name!r} publishes it"
                ) from None
        return results

    def _publish_left(self, run_id: str, seqs: list[int]) -> None:
        for seq in seqs:
            record = self.run.store.get_output(run_id, seq)
            if record.state is OutputState.COMMITTED:
                run_outputs.publish_output(self.run.store, record, self.run.databases, self.run.connections)

    # ------------------------------------------------------------ what the run keeps

    def summary(self) -> dict[str, Any]:
        with self._lock:
            end = {str(i): o for i, o in enumerate(self.last_offsets)}
            lag = None
            if self.latest and end:
                lags = [lag_of(self.latest.get(i), o) for i, o in end.items()]
                lag = sum(v for v in lags if v is not None) if any(v is not None for v in lags) else None
            return {
                "query_id": self.query_id,
                "checkpoint": self.options.checkpoint,
                "batches": self.done,
                "batches_replayed": self.replayed,
                "numRecords": self.records,
                "records_quarantined": self.quarantined,
                "last_batch": self.last_batch,
                "offsets": end,
                "latest_offsets": dict(self.latest),
                "lag": lag,
                "recent_batches": list(self.recent),
            }

    def _stage_commit(self) -> None:
        """What the bookmark records of each stream source when the run commits: where
        the query's checkpoint stood after this run's last batch."""
        summary = self.summary()
        if summary["last_batch"] is None:
            return
        for i, (source, ctx) in enumerate(self.sources):
            if ctx is None:
                continue
            state = {
                "type": source.kind,
                "source": source.describe(),
                "query_id": summary["query_id"],
                "checkpoint": summary["checkpoint"],
                "last_batch": summary["last_batch"],
                "offsets": summary["offsets"].get(str(i)),
                "latest_offsets": summary["latest_offsets"].get(str(i)),
                "lag": lag_of(summary["latest_offsets"].get(str(i)), summary["offsets"].get(str(i))),
                "last_run": {"batches": summary["batches"], "records": summary["numRecords"]},
            }
            self.run.stage_commit(CtxCommit(ctx, state))


def for_each_batch(
    run: JobRun | None,
    df: DataFrame,
    function: Callable[[DataFrame, int], Any],
    options: dict[str, Any],
    *,
    until_caught_up: bool,
    max_batches: int | None,
) -> dict[str, Any]:
    """Run ``function(batch_df, batch_id)`` on each micro-batch of the streaming ``df``
    until the query ends, with Glue's option names (windowSize, checkpointLocation,
    batchMaxRetries, trigger). In ``run`` each batch is exactly-once; with no run the
    batches are Spark's own, at-least-once, and nothing is kept. The checkpoint is
    ``checkpointLocation``, or ``<TempDir>/<job>/checkpoint/`` in a run. Returns the
    query's summary (empty with no run)."""
    if not df.isStreaming:
        raise SourceError(
            "forEachBatch needs a streaming DataFrame (a kafka or kinesis source read as a stream)"
        )
    if run is not None:
        run.require_running()
    default_checkpoint = f"{run.temp_dir.rstrip('/')}/{run.name}/checkpoint/" if run is not None else None
    parsed = BatchOptions.parse(
        options,
        default_checkpoint=default_checkpoint,
        until_caught_up=until_caught_up,
        max_batches=max_batches,
    )
    if run is not None:
        batches = MicroBatches(run, df, function, parsed)
        batches.start()
        return batches.summary()
    log.warning("forEachBatch without a job run: batches are at-least-once (no run keeps their writes)")
    writer = df.writeStream.foreachBatch(function).option("checkpointLocation", parsed.checkpoint)
    if parsed.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=parsed.window)
    writer.start().awaitTermination()
    return {}


class _ReportingFailure(Exception):
    """Spark 4.1's Kafka source fails the progress report of a batch replayed after a
    restart (its latest offsets are not known yet), after the batch is done."""


# The NullPointerException of SPARK-55271, raised by KafkaMicroBatchStream.metrics.
_SPARK_55271 = 'because the return value of "scala.Option.get()" is null'
REPORTING_RESTARTS = 3


class _Enough(Exception):
    """Ends the query at --max-batches; the batch it stops is replayed by the next run."""


def quarantine_url(temp_dir: str, job_name: str, query_id: str, batch_id: int) -> str:
    check_name("job name", job_name)
    if not re.fullmatch(r"[0-9a-fA-F-]{1,64}", query_id):
        raise SourceError(f"unexpected streaming query id {query_id!r}")
    return f"{temp_dir.rstrip('/')}/quarantine/{job_name}/stream-{query_id}/batch-{batch_id}"


def _as_json(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


_KNOWN_FAILURES = (
    ("UnknownTopicOrPartition", "the topic does not exist (deleted?)"),
    ("Timeout of", "the Kafka brokers did not answer"),
    ("TimeoutException", "the Kafka brokers did not answer"),
    ("OffsetOutOfRange", "offsets recorded in the checkpoint no longer exist in the topic (retention); "
     "set failOnDataLoss to false to go on from the earliest offset kept, losing the records in between"),
    ("Some data may have been lost", "offsets recorded in the checkpoint no longer exist in the topic "
     "(retention or a deleted topic); set failOnDataLoss to false to go on from the earliest offset "
     "kept, losing the records in between"),
)  # fmt: skip


def _query_failure(exc: BaseException) -> str:
    text = str(exc)
    for marker, meaning in _KNOWN_FAILURES:
        if marker in text:
            return f"the streaming query failed: {meaning}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return f"the streaming query failed: {first[:400]}"
