"""The native API: a job run with bookmarked sources and an atomic commit.

    from sparkmark import Job
    job = Job.from_args()
    df = job.read_files("data/orders", format="json", ctx="orders_src")
    ...
    job.commit()

``Job`` is the user's handle; the run itself (lease, pending source states, staged
outputs, commit and publish) is its ``job_run``, a ``runtime.JobRun``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from . import args as job_args
from .engine import jdbc as jdbc_keys
from .engine import storage
from .engine.models import BookmarkOption, RunRecord, RunState
from .engine.store import StateStore
from .errors import ArgumentError
from .runtime import describe_error, read_source, start_run, write_sink
from .settings import Settings
from .sinks.files import FileSink
from .sinks.jdbc import JdbcSink
from .sources.files import FileSource
from .sources.jdbc import JdbcRequest, JdbcSource
from .spark import create_session

log = logging.getLogger("sparkmark.job")

__all__ = ["Job", "describe_error"]


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
        self.settings = settings or Settings.from_env()
        self.job_run = start_run(
            name,
            settings=self.settings,
            args=args,
            option=bookmark_option,
            bookmark_from=bookmark_from,
            bookmark_to=bookmark_to,
            temp_dir=temp_dir,
            spark=spark,
            store=store,
            attempt=attempt,
            run_id=run_id,
        )
        self.name = self.job_run.name
        self.bookmark_option = self.job_run.option
        self.store = self.job_run.store
        self.args: dict[str, str] = self.job_run.args
        self.temp_dir = self.job_run.temp_dir
        self.lease_seconds = self.job_run.lease_seconds
        self.connections = self.job_run.connections
        self._spark = spark

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
        import sys

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
    def run(self) -> RunRecord:
        """The run's record, as the state store has it."""
        return self.job_run.record

    @property
    def run_id(self) -> str:
        return self.job_run.run_id

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            active = SparkSession.getActiveSession()
            if active is not None:
                storage.prepare_spark(active, self.settings)
            self._spark = active or create_session(
                self.name, self.settings.spark_master, self._session_settings()
            )
            from .catalog.hive import sync_metastore

            sync_metastore(self._spark, self.store)
        return self._spark

    def _session_settings(self) -> Settings:
        """The settings a session started for this job gets (``session_settings``)."""
        return session_settings(self.settings, self.args)

    @property
    def finished(self) -> bool:
        return self.job_run.finished

    @property
    def metrics(self) -> dict[str, Any]:
        return self.job_run.metrics

    # --------------------------------------------------------------- reading

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
        (recurse, exclusions, maxBand, maxFilesInBand, boundedFiles, boundedSize,
        skipUnchangedPartitions), ``bad_records`` (quarantine, fail or keep) and any
        Spark reader option. ``path_columns`` adds constant columns to the files under
        each given path (a catalog partition's values).
        """
        self.job_run.require_running()
        source = FileSource(
            paths, format=format, ctx=ctx, schema=schema, path_columns=path_columns, options=options
        )
        return read_source(self.spark, source, self.job_run)

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
        self.job_run.require_running()
        database = _database(self, url, connection, user, password)
        request = JdbcRequest.build(
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
        return read_source(self.spark, JdbcSource(request, ctx=ctx), self.job_run)

    def read_stream(self, kind: str, ctx: str | None = None, **options: Any) -> DataFrame:
        """A streaming DataFrame of a Kafka topic (``kind="kafka"``) or a Kinesis stream
        (``kind="kinesis"``), with Glue's connection option names (``topicName``,
        ``startingOffsets``, ``classification``, ``inferSchema``…; ``streamName``,
        ``startingPosition``…). Process it with ``for_each_batch``: the query's checkpoint
        keeps its position, and ``ctx`` names it in the bookmark."""
        from .sources.registry import stream_source

        self.job_run.require_running()
        made = stream_source(
            kind, dict(options), ctx=ctx, connections=self.connections, settings=self.settings
        )
        return read_source(self.spark, made, self.job_run)

    def read(self, connection_type: str, ctx: str | None = None, **options: Any) -> DataFrame:
        """A DataFrame of any source kind the registry makes from Glue's connection
        options (``sources/registry.py``), bookmarked under ``ctx`` as that kind does."""
        from .sources.registry import made_from_options

        self.job_run.require_running()
        kind = made_from_options(connection_type)
        if kind is None:
            raise ArgumentError(f"connection_type {connection_type!r} is read with read_files or read_jdbc")
        made = kind.make(options, ctx=ctx, connections=self.connections, settings=self.settings)
        return read_source(self.spark, made, self.job_run)

    def for_each_batch(
        self,
        df: DataFrame,
        function: Any,
        *,
        checkpoint: str | None = None,
        window: str | None = None,
        max_retries: int | None = None,
        until_caught_up: bool = False,
    ) -> dict[str, Any]:
        """Run ``function(batch_df, batch_id)`` on each micro-batch of the streaming ``df``.
        Writes made through this job inside it are exactly-once per batch, even when a
        batch is replayed after a crash. Blocks until the query ends: caught up (with
        ``until_caught_up`` or ``sparkmark run --until-caught-up``), after
        ``--max-batches``, stopped, or failed. Returns the query's summary."""
        options: dict[str, Any] = {}
        if checkpoint is not None:
            options["checkpointLocation"] = checkpoint
        if window is not None:
            options["windowSize"] = window
        if max_retries is not None:
            options["batchMaxRetries"] = max_retries
        if until_caught_up:
            options["trigger"] = "availableNow"
        return self.stream_batches(df, function, options)

    def stream_batches(self, df: DataFrame, function: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """``for_each_batch`` with Glue's option names (windowSize, checkpointLocation,
        batchMaxRetries)."""
        from .runtime.batches import for_each_batch

        return for_each_batch(
            self.job_run,
            df,
            function,
            dict(options),
            until_caught_up=self.settings.stream_until_caught_up,
            max_batches=self.settings.stream_max_batches,
        )

    # --------------------------------------------------------------- writing

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
        self.job_run.require_running()
        if not table:
            raise ArgumentError("write_jdbc needs table=")
        sink = JdbcSink(
            _database(self, url, connection, user, password),
            table,
            mode=mode,
            keys=tuple(keys) if keys else None,
            connection=connection,
            ctx=ctx,
        )
        return write_sink(sink, df, self.job_run)

    def evaluate_quality(
        self,
        df: DataFrame,
        ruleset: str,
        *,
        name: str = "default",
        reference: Mapping[str, DataFrame] | None = None,
        row_level: bool = True,
        filtered_rows: str = "pass",
        publish_metrics: bool = False,
    ):
        """Evaluate a DQDL ruleset on ``df`` (see ``sparkmark.quality.evaluate``) and keep
        the result with this run under ``name``; dynamic rules and DetectAnomalies compare
        with the values earlier successful runs of the job recorded under the same name.
        ``publish_metrics`` puts the counts of passed and failed rules in the metric
        store under Glue's names (Glue's ``enableDataQualityCloudWatchMetrics``)."""
        from .quality.runs import evaluate_in_run

        return evaluate_in_run(
            self.job_run,
            df,
            ruleset,
            name=name,
            reference=reference,
            row_level=row_level,
            filtered_rows=filtered_rows,
            cloudwatch_metrics=publish_metrics,
        )

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
        self.job_run.require_running()
        columns = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
        sink = FileSink(path, fmt=format.lower(), mode=mode, partition_by=columns, options=options, ctx=ctx)
        return write_sink(sink, df, self.job_run)

    # ------------------------------------------------------------ ending

    def commit(self) -> RunRecord:
        """Persist every source's new state atomically and mark the run SUCCEEDED.

        With bookmarks disabled or paused the run succeeds and the bookmark stays.
        """
        return self.job_run.commit()

    def finish_without_commit(self) -> RunRecord:
        """End a run whose script finished without calling commit(): as on Glue, the
        run succeeds and the bookmark does not advance."""
        return self.job_run.finish_without_commit()

    def fail(self, error: BaseException | str, state: RunState = RunState.FAILED) -> RunRecord:
        """End the run without committing anything."""
        return self.job_run.fail(error, state)

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


def session_settings(settings: Settings, args: Mapping[str, Any]) -> Settings:
    """The settings a session started for a job gets: with the connectors its arguments
    show it needs (an ``s3://`` input), fetched before Spark starts."""
    from .connectors import needed_by

    needs = needed_by(str(v) for v in args.values())
    if not needs:
        return settings
    given = [n for n in (settings.connector_needs or "").split(",") if n]
    return settings.model_copy(update={"connector_needs": ",".join(dict.fromkeys([*given, *needs]))})


def _database(job: Job, url, connection, user, password) -> jdbc_keys.Database:
    """The database a JDBC read or write of ``job`` reaches: its URL and credentials,
    from the call or its named connection; kept with the run for publishing."""
    if connection is not None:
        resolved = job.connections.resolve(connection)
        url, user = url or resolved.url, user or resolved.user
        password = password or resolved.password
    if not url:
        raise ArgumentError("give a JDBC url or connection=NAME")
    database = jdbc_keys.parse_database(url, user, password)
    job.job_run.add_database(database)
    return database
