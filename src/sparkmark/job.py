"""The native API: a job run with bookmarked sources and an atomic commit.

from sparkmark import Job
job = Job.from_args()
df = job.read_files("data/orders", format="json", ctx="orders_src")
...
job.commit()
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from . import args as job_args
from . import outputs as run_outputs
from .connections import resolve_connection
from .connectors import missing_connector
from .engine import fileplan
from .engine import jdbc as jdbc_keys
from .engine.faults import crash_point, crash_when
from .engine.increment import FileSourceOptions
from .engine.manifest import manifest_path, quarantine_path, write_manifest
from .engine.masking import mask_arguments
from .engine.models import (
    BookmarkOption,
    BookmarkVersion,
    CtxCommit,
    OutputKind,
    OutputRecord,
    OutputState,
    RunRecord,
    RunState,
    new_run_id,
)
from .engine.names import check_name, check_run_id
from .engine.owner import this_process
from .engine.preview import script_identity
from .engine.publish import PublishError
from .engine.store import StateStore
from .errors import ArgumentError, RunFinished, SourceError
from .settings import Settings
from .sinks import files as file_sink
from .sinks import jdbc as jdbc_sink
from .sources import files as file_source
from .sources import jdbc as jdbc_source
from .spark import create_session

log = logging.getLogger("sparkmark.job")

BAD_RECORDS = ("quarantine", "fail", "keep")  # what read_files does with malformed JSON/CSV
CORRUPT_RECORD = "_corrupt_record"

_RUNNING: dict[str, Job] = {}
_STARTED: list[Job] = []
_RUNNING_LOCK = threading.Lock()
_hooks_installed = False


def running_jobs() -> list[Job]:
    """Jobs of this process whose run has not ended yet."""
    with _RUNNING_LOCK:
        return list(_RUNNING.values())


def started_jobs() -> list[Job]:
    """Every job run this process started, in order."""
    with _RUNNING_LOCK:
        return list(_STARTED)


_UNREADABLE = re.compile(
    r"(?:FileNotFoundException: (?:File )?(\S+?) \(Permission denied\)"
    r"|AccessDeniedException: (\S+))"
)
_READ_FILE = re.compile(r"reading file (\S+?)\.? ")


def describe_error(exc: BaseException) -> str:
    """A run's error message: what went wrong in a few lines (no JVM stack trace), with
    a hint where we have one."""
    text = str(exc).strip() or type(exc).__name__
    lines = [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("at ", "..."))
    ]
    summary = " | ".join(dict.fromkeys(lines[:6]))[:3000]
    missing = missing_connector(text)
    if missing:
        return f"{type(exc).__name__}: {missing}"
    unreadable = _UNREADABLE.search(text)
    if unreadable:
        path = unreadable.group(1) or unreadable.group(2)
        summary = (
            f"file {path} cannot be read (permission denied); the run commits nothing. Fix "
            "the file's permissions, or leave it out with exclusions, and re-run. " + summary
        )
    elif (
        "FileNotFoundException" in text
        or "FILE_NOT_EXIST" in text
        or ("does not exist" in text and "Path" in text)
    ):
        where = _READ_FILE.search(text)
        summary = (
            (f"file {where.group(1)}" if where else "a file chosen for this run")
            + " was deleted or replaced before Spark read it; the run commits nothing and "
            "the next run lists the source again. " + summary
        )
    return f"{type(exc).__name__}: {summary}"


class _Heartbeat(threading.Thread):
    def __init__(self, job: Job, interval: float):
        super().__init__(name=f"sparkmark-lease-{job.run_id[:10]}", daemon=True)
        self.job = job
        self.interval = interval
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                if not self.job.store.heartbeat(self.job.name, self.job.run_id, self.job.lease_seconds):
                    log.error(
                        "run %s lost the lease of job %s; its commit will be refused",
                        self.job.run_id,
                        self.job.name,
                    )
                    return
            except Exception as exc:  # noqa: BLE001 - keep trying: a blip must not kill the run
                log.warning("could not renew the lease of run %s: %s", self.job.run_id, exc)


class Job:
    """One run of a job. Creating it starts the run; ``commit()`` ends it."""

    def __init__(
        self,
        name: str,
        *,
        args: Mapping[str, str] | None = None,
        bookmark_option: BookmarkOption | str = BookmarkOption.DISABLE,
        bookmark_from: str | None = None,
        bookmark_to: str | None = None,
        temp_dir: str | None = None,
        spark: SparkSession | None = None,
        store: StateStore | None = None,
        settings: Settings | None = None,
        attempt: int | None = None,
        run_id: str | None = None,
    ):
        if not name or not str(name).strip():
            raise ArgumentError("a job needs a name (--JOB_NAME)")
        self.name = check_name("job name", str(name))
        try:
            self.bookmark_option = BookmarkOption(bookmark_option)
        except ValueError:
            raise ArgumentError(
                f"invalid bookmark option {bookmark_option!r}; use one of "
                + ", ".join(o.value for o in BookmarkOption)
            ) from None
        if (bookmark_from is None) != (bookmark_to is None):
            raise ArgumentError("--job-bookmark-from and --job-bookmark-to go together")
        if bookmark_from is not None and self.bookmark_option is not BookmarkOption.PAUSE:
            raise ArgumentError("--job-bookmark-from/--job-bookmark-to need job-bookmark-pause")
        self.settings = settings or Settings.from_env()
        self.store = store or StateStore.from_settings(self.settings)
        self.args: dict[str, str] = dict(args or {})
        self.args.setdefault("JOB_NAME", self.name)
        self.temp_dir = temp_dir or self.settings.temp_dir
        self.args.setdefault("TempDir", self.temp_dir)
        self.lease_seconds = self.settings.lease_seconds
        self._spark = spark
        self._pending: dict[str, CtxCommit] = {}
        self._metrics: dict[str, dict[str, Any]] = {}
        self._sinks: list[dict[str, Any]] = []
        self._outputs: list[OutputRecord] = []  # this run's exactly-once writes
        self._quality: dict[str, dict[str, Any]] = {}  # ruleset name → outcome summary
        self._databases: dict[str, jdbc_keys.Database] = {}  # by JDBC URL, with credentials
        self._started = time.monotonic()
        self._committed = False
        self._script = script_identity(sys.argv[0] if sys.argv else None)

        self._range: tuple[BookmarkVersion, BookmarkVersion] | None = None
        if bookmark_from is not None:
            if bookmark_to is None:
                raise ArgumentError("--job-bookmark-from needs --job-bookmark-to (a run id)")
            lower = self.store.version_after_run(self.name, bookmark_from)
            upper = self.store.version_after_run(self.name, bookmark_to)
            self._range = (lower, upper)

        given_id, given_attempt = _scheduled_run()
        self.run: RunRecord = self.store.start_run(
            job_name=self.name,
            run_id=run_id or given_id or new_run_id(),
            attempt=given_attempt if attempt is None else attempt,
            option=self.bookmark_option,
            arguments=mask_arguments(self.args),
            owner=this_process(),
            lease_seconds=self.lease_seconds,
        )
        self._base = (
            self.store.get_version(self.name, self.run.base_version) if self.run.base_version else None
        )
        with _RUNNING_LOCK:
            _RUNNING[self.run_id] = self
            _STARTED.append(self)
        _install_process_hooks()
        self._heartbeat = _Heartbeat(self, max(self.lease_seconds / 3, 0.05))
        self._heartbeat.start()
        # Holding the job's lease, finish what earlier runs of the job left half-done.
        run_outputs.recover(self.store, self.name, running_run=self.run_id)
        log.info(
            "job %s: run %s started (%s, bookmark version %d)",
            self.name,
            self.run_id,
            self.bookmark_option.value,
            self.run.base_version,
        )

    # ------------------------------------------------------------ creation

    @classmethod
    def from_args(
        cls,
        argv: Sequence[str] | None = None,
        *,
        spark: SparkSession | None = None,
        store: StateStore | None = None,
        settings: Settings | None = None,
    ) -> Job:
        """Start a run from Glue-style arguments (``sys.argv`` by default)."""
        argv = list(sys.argv if argv is None else argv)
        resolved = job_args.resolve(
            argv[1:], default_job_name=job_args.script_job_name(argv[0] if argv else None)
        )
        return cls(
            resolved.job_name,
            args=resolved.values,
            bookmark_option=resolved.bookmark_option,
            bookmark_from=resolved.bookmark_from,
            bookmark_to=resolved.bookmark_to,
            temp_dir=resolved.temp_dir,
            spark=spark,
            store=store,
            settings=settings,
        )

    # ------------------------------------------------------------ properties

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = SparkSession.getActiveSession() or create_session(
                self.name, self.settings.spark_master, self.settings
            )
        return self._spark

    @property
    def finished(self) -> bool:
        return self.run_id not in _RUNNING

    @property
    def metrics(self) -> dict[str, Any]:
        metrics = {
            "sources": dict(self._metrics),
            "sinks": list(self._sinks),
            "duration_seconds": round(time.monotonic() - self._started, 3),
        }
        if self._script is not None:
            metrics["script"] = self._script
        if self._quality:
            metrics["quality"] = dict(self._quality)
        return metrics

    # --------------------------------------------------------------- reading

    def _require_running(self) -> None:
        if self.finished:
            raise RunFinished(f"run {self.run_id} of job {self.name!r} has already ended; start a new run")

    def _claim_ctx(self, ctx: str | None, what: str) -> str | None:
        """Check a source's ctx; the ctx when the source is bookmarked in this run, else None."""
        if ctx is not None:
            check_name("transformation_ctx", ctx)
        if ctx is not None and ctx in self._metrics:
            raise SourceError(
                f"source ctx {ctx!r} was already read in run {self.run_id}; give each source "
                "its own ctx (transformation_ctx)"
            )
        if ctx is None and self.bookmark_option is not BookmarkOption.DISABLE:
            log.warning(
                "source %s has no ctx (transformation_ctx): it is read in full and not bookmarked",
                what,
            )
        return ctx if self.bookmark_option is not BookmarkOption.DISABLE else None

    def read_files(
        self,
        paths: str | Sequence[str],
        format: str = "json",
        ctx: str | None = None,
        schema: StructType | str | None = None,
        path_columns: Mapping[str, Mapping[str, str]] | None = None,
        **options: Any,
    ) -> DataFrame:
        """A DataFrame of the files under ``paths`` that this run must process.

        ``ctx`` names the source in the bookmark; without it the source is read
        in full and never bookmarked. ``options`` take Glue's file options
        (recurse, exclusions, maxBand, maxFilesInBand, boundedFiles, boundedSize)
        and any Spark reader option. ``path_columns`` adds constant columns to the
        files under each given path (a catalog partition's values).
        """
        self._require_running()
        began = time.monotonic()
        fmt = format.lower()
        if fmt not in file_source.FORMATS:
            raise SourceError(f"unsupported format {format!r}; use one of {', '.join(file_source.FORMATS)}")
        path_list = fileplan.as_path_list(paths)
        bad_records = str(options.pop("bad_records", "quarantine")).lower()
        if bad_records not in BAD_RECORDS:
            raise ArgumentError(f"bad_records must be one of {', '.join(BAD_RECORDS)}, got {bad_records!r}")
        opts, spark_options = FileSourceOptions.split(options)
        corrupt_column = None
        if fmt in ("json", "csv") and "mode" not in {k.lower() for k in spark_options}:
            if bad_records == "fail":
                spark_options["mode"] = "FAILFAST"
            else:
                corrupt_column = spark_options.setdefault("columnNameOfCorruptRecord", CORRUPT_RECORD)
        bookmark_ctx = self._claim_ctx(ctx, ", ".join(path_list))

        previous = (self._base.ctx_states.get(ctx) if (self._base and ctx) else None) or {}
        if bookmark_ctx is None:
            plan = fileplan.plan_files(
                path_list,
                opts,
                ctx=ctx,
                processed=None,
                known_dirs=None,
                high_water_ms=None,
                now_ms=fileplan.now_ms(),
            )
        elif self._range is not None:
            lower, upper = self._range
            plan = fileplan.plan_range(
                path_list,
                opts,
                ctx=bookmark_ctx,
                upper=self.store.processed_files(self.name, bookmark_ctx, upper.lineage),
                lower=self.store.processed_files(self.name, bookmark_ctx, lower.lineage),
            )
        else:
            plan = fileplan.plan_bookmarked(
                self.store,
                self.name,
                bookmark_ctx,
                path_list,
                opts,
                lineage=self._base.lineage if self._base else (),
                previous=previous,
                now_ms=fileplan.now_ms(),
            )
        plan.log_partitions()

        manifest = None
        if ctx is not None:
            manifest = manifest_path(self.temp_dir, self.name, self.run_id, ctx)
            write_manifest(manifest, plan.increment.selected)

        stored_schema = previous.get("schema")
        crash_when("reading", lambda: bool(self.spark.sparkContext.statusTracker().getActiveJobsIds()))
        df = file_source.read_selected(
            self.spark,
            plan.increment.selected,
            fmt=fmt,
            spark_options=spark_options,
            schema=schema,
            empty_schema=StructType.fromJson(json.loads(stored_schema)) if stored_schema else None,
            root_columns={fileplan.root_url(p): dict(cols) for p, cols in (path_columns or {}).items()},
            corrupt_column=corrupt_column if bad_records == "quarantine" else None,
        )
        metrics = plan.metrics()
        if bad_records == "quarantine" and corrupt_column in df.columns:
            df = self._quarantine(df, corrupt_column, ctx, metrics)
        metrics["manifest"] = manifest
        metrics["duration_seconds"] = round(time.monotonic() - began, 4)
        key = ctx if ctx is not None else f"(no ctx) {', '.join(path_list)}"
        self._metrics[key] = metrics
        log.info(
            "job %s ctx %s: %d files listed, %d to read (%d new, %d modified), %d already "
            "processed, %d deferred",
            self.name,
            key,
            metrics["files_listed"],
            metrics["files_read"],
            metrics["files_new"],
            metrics["files_modified"],
            metrics["files_skipped"],
            metrics["files_deferred"],
        )
        if bookmark_ctx is not None and self.bookmark_option is BookmarkOption.ENABLE:
            self._pending[bookmark_ctx] = fileplan.ctx_commit(
                plan,
                previous=previous,
                schema_json=df.schema.json() if plan.increment.selected else None,
                run_id=self.run_id,
            )
        return df

    def _quarantine(self, df: DataFrame, column: str, ctx: str | None, metrics: dict[str, Any]) -> DataFrame:
        """Set malformed records aside, with their file, under the run's TempDir; the
        rest goes on. The records count as processed: the bookmark passes them."""
        from pyspark.sql import functions as F

        df = df.persist()  # Spark refuses to filter raw JSON/CSV on the corrupt column alone
        bad = df.filter(F.col(column).isNotNull())
        count = bad.count()
        metrics["records_quarantined"] = count
        if count:
            where = quarantine_path(self.temp_dir, self.name, self.run_id, ctx or "no_ctx")
            bad.select(
                F.col(file_source.SOURCE_FILE).alias("file"), F.col(column).alias("record")
            ).write.mode("append").json(where)
            metrics["quarantine"] = where
            log.warning(
                "job %s ctx %s: %d malformed records set aside in %s (file, record); "
                "the rest of their files is read",
                self.name,
                ctx,
                count,
                where,
            )
        return df.filter(F.col(column).isNull()).drop(column, file_source.SOURCE_FILE)

    def read_table(
        self,
        name: str,
        predicate: str | None = None,
        ctx: str | None = None,
        format: str | None = None,
        **options: Any,
    ) -> DataFrame:
        """A DataFrame of the new files of catalog table ``DB.TABLE``.

        ``predicate`` (Spark SQL over the partition keys) prunes partitions before any
        file is listed; the partition values are added as columns.
        """
        from .catalog.reading import read_table, split_name
        from .catalog.store import CatalogStore

        table = CatalogStore(self.store).table(*split_name(name))
        if table.parameters.get("connectionName"):  # a crawled JDBC table
            keys = options.pop("keys", None) or (table.parameters.get("primaryKey") or "").split(",")
            return self.read_jdbc(
                connection=table.parameters["connectionName"],
                table=table.parameters["dbtable"],
                ctx=ctx,
                keys=[k for k in keys if k] or None,
                **options,
            )

        def reader(paths, fmt, columns, table_options):
            return self.read_files(
                paths, format=fmt, ctx=ctx, path_columns=columns, **{**table_options, **options}
            )

        df, _table, _count = read_table(
            self.spark, CatalogStore(self.store), name, [predicate or ""], reader, fmt=format
        )
        return df

    def _database(self, url, connection, user, password) -> jdbc_keys.Database:
        if connection is not None:
            resolved = resolve_connection(connection)
            url, user = url or resolved.url, user or resolved.user
            password = password or resolved.password
        if not url:
            raise ArgumentError("give a JDBC url or connection=NAME")
        database = jdbc_keys.parse_database(url, user, password)
        self._databases[database.jdbc_url] = database
        return database

    def read_jdbc(
        self,
        url: str | None = None,
        table: str | None = None,
        ctx: str | None = None,
        keys: Sequence[str] | str | None = None,
        keys_sort_order: str = "asc",
        user: str | None = None,
        password: str | None = None,
        hashfield: str | None = None,
        hashexpression: str | None = None,
        hashpartitions: int = 7,
        lag: float | None = None,
        on_null_key: str = "raise",
        query: str | None = None,
        connection: str | None = None,
        fetchsize: int | None = None,
    ) -> DataFrame:
        """A DataFrame of the rows past this source's bookmark.

        The run's upper bound is the last key in the table now (the first, for
        ``keys_sort_order="desc"``); the run reads ``last < key <= upper`` and the
        commit records ``upper``. ``keys`` default to the table's primary key.
        """
        self._require_running()
        began = time.monotonic()
        database = self._database(url, connection, user, password)
        request = jdbc_source.JdbcRequest.build(
            database,
            table=table,
            query=query,
            keys=keys,
            keys_sort_order=keys_sort_order,
            hashfield=hashfield,
            hashexpression=hashexpression,
            hashpartitions=hashpartitions,
            lag=lag,
            on_null_key=on_null_key,
            fetchsize=fetchsize,
        )
        bookmark_ctx = self._claim_ctx(ctx, table or "query")
        bookmarked = bookmark_ctx is not None
        previous = (self._base.ctx_states.get(ctx) if (self._base and ctx) else None) or {}
        bounds = None
        if bookmark_ctx is not None and self._range is not None:
            lower, upper = self._range
            bounds = (lower.ctx_states.get(bookmark_ctx), upper.ctx_states.get(bookmark_ctx))
        outcome = jdbc_source.read(
            self.spark,
            request,
            ctx=ctx,
            previous=previous,
            bookmarked=bookmarked,
            commit_state=bookmarked and self.bookmark_option is BookmarkOption.ENABLE,
            bounds=bounds,
            run_id=self.run_id,
        )
        metrics = dict(outcome.metrics)
        metrics["duration_seconds"] = round(time.monotonic() - began, 4)
        key = ctx if ctx is not None else f"(no ctx) {table or 'query'}"
        self._metrics[key] = metrics
        log.info(
            "job %s ctx %s: %s rows in range %s", self.name, key, metrics["rows_read"], metrics["key_range"]
        )
        if outcome.commit is not None and bookmark_ctx is not None:
            self._pending[bookmark_ctx] = outcome.commit
        return outcome.frame

    def write_jdbc(
        self,
        df: DataFrame,
        url: str | None = None,
        table: str | None = None,
        mode: str = "append",
        keys: Sequence[str] | None = None,
        user: str | None = None,
        password: str | None = None,
        connection: str | None = None,
        ctx: str | None = None,
    ) -> dict[str, Any]:
        """Write ``df`` to a database table: append, overwrite, or upsert by ``keys``
        (default: the target's primary key), in one transaction.

        With ``ctx`` the write is exactly-once: the rows wait in a staging table and
        are merged after the bookmark commit, in one transaction with a row that
        records the write, so a retry never applies them twice. Without ``ctx`` they
        are merged now, as on Glue.
        """
        self._require_running()
        if not table:
            raise ArgumentError("write_jdbc needs table=")
        database = self._database(url, connection, user, password)
        keys = list(keys) if keys else None
        if ctx is None:
            result = jdbc_sink.write(df, database, table, mode=mode, keys=keys)
            self._sinks.append(result)
            return result
        self._claim_sink(ctx)
        # Committed writes of earlier runs to this database may have waited for its password.
        run_outputs.recover(
            self.store, self.name, running_run=self.run_id, known=self._databases, only_url=database.jdbc_url
        )
        record = self.store.stage_output(
            self.run_id,
            ctx=ctx,
            kind=OutputKind.JDBC,
            target=f"{database.display} {table}",
            plan={
                "jdbc_url": database.jdbc_url,
                "user": database.user,
                "connection": connection,
                "table": table,
                "mode": mode,
            },
        )
        try:
            staged = jdbc_sink.stage(
                df, database, table, mode=mode, keys=keys, stage_name=jdbc_sink.stage_name_for(record.key)
            )
        except BaseException:
            self.store.set_output(record.run_id, record.seq, OutputState.DISCARDED)
            raise
        plan = {**record.plan, **staged}
        self.store.set_output(record.run_id, record.seq, OutputState.STAGED, plan=plan)
        self._outputs.append(self.store.get_output(record.run_id, record.seq))
        log.info(
            "job %s: %d rows for %s staged as write %s; they are merged when the run commits",
            self.name,
            staged["rows_staged"],
            table,
            record.key,
        )
        return {"table": table, "mode": mode, "ctx": ctx, "rows_staged": staged["rows_staged"]}

    def evaluate_quality(
        self,
        df: DataFrame,
        ruleset: str,
        *,
        name: str = "default",
        reference: Mapping[str, DataFrame] | None = None,
        row_level: bool = True,
        filtered_rows: str = "pass",
    ):
        """Evaluate a DQDL ruleset on ``df`` (see ``sparkmark.quality.evaluate``) and keep
        the result with this run under ``name``; DetectAnomalies compares with the values
        earlier successful runs of the job recorded under the same name."""
        self._require_running()
        from .quality import evaluate
        from .quality.store import QualityStore

        check_name("ruleset name", name)
        store = QualityStore(self.store)
        result = evaluate(
            df,
            ruleset,
            reference=dict(reference or {}),
            name=name,
            row_level=row_level,
            filtered_rows=filtered_rows,
            history=lambda metric: store.history(self.name, name, metric),
        )
        document = result.to_dict()
        store.save(self.name, self.run_id, document)
        self._quality[name] = {
            "passed": result.passed,
            "score": document["score"],
            "failed_rules": [o.rule for o in result.failed()],
        }
        log.info(
            "job %s: data quality %s: %d of %d rules passed",
            self.name,
            name,
            sum(o.passed for o in result.outcomes),
            len(result.outcomes),
        )
        return result

    def write_files(
        self,
        df: DataFrame,
        path: str,
        format: str = "parquet",
        mode: str = "append",
        partition_by: Sequence[str] | str | None = None,
        ctx: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Write ``df`` under ``path`` (modes append, overwrite, overwrite_partitions).

        With ``ctx`` the write is exactly-once: Spark writes to a hidden staging folder
        of ``path`` and the files are published only after the bookmark commit, with
        the run id in their names. A run that fails or crashes publishes nothing, and
        the next run finishes publishing a committed run's files. Without ``ctx`` the
        files are written in place at once, as on Glue. ``options`` go to Spark's writer.
        """
        self._require_running()
        fmt = format.lower()
        columns = [partition_by] if isinstance(partition_by, str) else list(partition_by or ())
        file_sink.check(fmt, mode, columns)
        root = fileplan.root_url(fileplan.as_path_list(path)[0])
        if ctx is None:
            file_sink.write_now(df, root, fmt=fmt, mode=mode, partition_by=columns, options=options)
            self._sinks.append({"path": root, "mode": mode, "format": fmt})
            return {"path": root, "mode": mode}
        self._claim_sink(ctx)
        record = self.store.stage_output(
            self.run_id,
            ctx=ctx,
            kind=OutputKind.FILES,
            target=root,
            plan={"root": root, "key": None, "mode": mode, "format": fmt},
        )
        try:
            plan = file_sink.stage(
                df, root, record.key, fmt=fmt, mode=mode, partition_by=columns, options=options
            )
        except BaseException:
            run_outputs.discard_output(self.store, record)
            raise
        self.store.set_output(record.run_id, record.seq, OutputState.STAGED, plan=plan.to_json())
        self._outputs.append(self.store.get_output(record.run_id, record.seq))
        log.info(
            "job %s: %d files for %s staged as write %s; they are published when the run commits",
            self.name,
            len(plan.files),
            root,
            record.key,
        )
        return {"path": root, "mode": mode, "ctx": ctx, "files_staged": len(plan.files)}

    def _claim_sink(self, ctx: str) -> None:
        check_name("transformation_ctx", ctx)
        if any(o.ctx == ctx for o in self._outputs):
            raise SourceError(
                f"sink ctx {ctx!r} was already written in run {self.run_id}; give each sink "
                "its own ctx (transformation_ctx)"
            )

    def _publish(self) -> None:
        """Publish this run's committed writes; a failure leaves them for the next run."""
        problems = []
        for record in self._outputs:
            try:
                self._sinks.append(run_outputs.publish_output(self.store, record, self._databases))
            except Exception as exc:  # noqa: BLE001 - each write's problem is reported; the others still publish
                problems.append(f"{record.ctx} -> {record.target}: {exc}")
        if problems:
            raise PublishError(
                f"run {self.run_id} of job {self.name!r} committed, but publishing its output "
                "failed: " + "; ".join(problems) + ". Nothing is lost: the next run of the job, "
                f"or `sparkmark outputs recover {self.name}`, finishes publishing it"
            )

    def _discard(self, why: str) -> None:
        for record in self._outputs:
            try:
                if not run_outputs.discard_output(self.store, record, self._databases):
                    continue
                log.warning(
                    "job %s: write %s (%s -> %s) discarded: %s",
                    self.name,
                    record.key,
                    record.ctx,
                    record.target,
                    why,
                )
            except Exception as exc:  # noqa: BLE001 - discarding goes on for the other writes; this one is logged
                log.error(
                    "job %s: could not discard write %s yet (%s); the next run will: %s",
                    self.name,
                    record.key,
                    record.target,
                    exc,
                )

    # ------------------------------------------------------------ ending

    def _end(self) -> None:
        self._heartbeat.stopped.set()
        with _RUNNING_LOCK:
            _RUNNING.pop(self.run_id, None)

    def commit(self) -> RunRecord:
        """Persist every source's new state atomically and mark the run SUCCEEDED.

        With bookmarks disabled or paused the run succeeds and the bookmark stays.
        """
        if self.finished:
            if self._committed:
                log.warning("run %s was already committed; this commit does nothing", self.run_id)
                return self.run
            raise RunFinished(
                f"run {self.run_id} already ended as {self.store.get_run(self.run_id).state}; "
                "it cannot commit"
            )
        crash_point("staged")
        try:
            if self.bookmark_option is BookmarkOption.ENABLE:
                version = self.store.commit(self.run, self._pending.values(), metrics=self.metrics)
                log.info(
                    "job %s: run %s committed bookmark version %d",
                    self.name,
                    self.run_id,
                    version.version,
                )
            else:
                self.store.finish_run(
                    self.run_id, RunState.SUCCEEDED, metrics=self.metrics, commit_outputs=True
                )
        except Exception as exc:
            self.fail(exc)
            raise
        crash_point("committed")
        self._committed = True
        self._end()
        try:
            self._publish()
        finally:
            self.run = self.store.get_run(self.run_id)
        return self.run

    def finish_without_commit(self) -> RunRecord:
        """End a run whose script finished without calling commit(): as on Glue, the
        run succeeds and the bookmark does not advance."""
        if self.finished:
            return self.run
        log.warning(
            "job %s: run %s ended without job.commit(); the bookmark did not advance",
            self.name,
            self.run_id,
        )
        self._end()
        # With bookmarks on, the next run reads this run's input again: publishing its
        # output too would write it twice.
        publish = self.bookmark_option is not BookmarkOption.ENABLE
        self.run = self.store.finish_run(
            self.run_id, RunState.SUCCEEDED, metrics=self.metrics, commit_outputs=publish
        )
        if publish:
            self._publish()
        else:
            self._discard("the run ended without job.commit(), so the next run reads its input again")
        return self.run

    def fail(self, error: BaseException | str, state: RunState = RunState.FAILED) -> RunRecord:
        """End the run without committing anything."""
        if self.finished:
            return self.run
        self._end()
        message = error if isinstance(error, str) else describe_error(error)
        try:
            self.run = self.store.finish_run(self.run_id, state, error=message, metrics=self.metrics)
        except RunFinished:
            self.run = self.store.get_run(self.run_id)
        log.error("job %s: run %s %s: %s", self.name, self.run_id, state.value, message)
        self._discard(f"run {self.run_id} ended {state.value} without committing")
        return self.run

    def __enter__(self) -> Job:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            if not self.finished:
                self.commit()
        elif isinstance(exc, KeyboardInterrupt):
            self.fail(exc, RunState.STOPPED)
        else:
            self.fail(exc)  # and the exception goes on

    def __repr__(self) -> str:
        return f"Job(name={self.name!r}, run_id={self.run_id!r}, option={self.bookmark_option.value})"


_SCHEDULED_TAKEN = False


def _scheduled_run() -> tuple[str | None, int]:
    """The run id and attempt a scheduler chose for this process (``SPARKMARK_RUN_ID``,
    ``SPARKMARK_ATTEMPT``). The id goes to the first run the process starts only."""
    global _SCHEDULED_TAKEN  # noqa: PLW0603 - one scheduled run id per process
    attempt = int(os.environ.get("SPARKMARK_ATTEMPT", "0") or 0)
    run_id = os.environ.get("SPARKMARK_RUN_ID") or None
    if run_id is None or _SCHEDULED_TAKEN:
        return None, attempt
    _SCHEDULED_TAKEN = True
    return check_run_id(run_id), attempt


def _install_process_hooks() -> None:
    """For scripts run with plain ``python``: an uncaught exception fails the run, and
    a run still open at exit ends like a Glue run that never called commit()."""
    global _hooks_installed  # noqa: PLW0603 - the hooks are per process
    if _hooks_installed:
        return
    _hooks_installed = True
    previous_hook = sys.excepthook

    def _excepthook(exc_type, exc, tb):
        for job in running_jobs():
            job.fail(exc, RunState.STOPPED if exc_type is KeyboardInterrupt else RunState.FAILED)
        previous_hook(exc_type, exc, tb)

    sys.excepthook = _excepthook

    @atexit.register
    def _at_exit():
        for job in running_jobs():
            with contextlib.suppress(Exception):  # the store may be gone at interpreter exit
                job.finish_without_commit()
