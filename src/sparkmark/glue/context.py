"""``awsglue.context``: GlueContext, translating Glue's readers and writers onto sparkmark."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from fsspec.core import url_to_fs
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType, VariantType

from ..connections import Connections
from ..engine import jdbc as jdbc_keys
from ..engine import storage
from ..engine.options import OPTION_NAMES, parse_bool
from ..engine.store import StateStore
from ..errors import SourceError, SparkmarkError
from ..job import Job as NativeJob
from ..runtime import JobRun, read_source
from ..settings import Settings
from ..sinks import files as file_sink
from ..sinks import jdbc as jdbc_sink
from ..sources.files import FileSource
from ..sources.jdbc import JdbcRequest, JdbcSource
from ..sources.registry import STREAM_CONNECTION_TYPES
from . import choice, formats
from .dynamicframe import DynamicFrame, ErrorStage

log = logging.getLogger("sparkmark.glue")

FILE_CONNECTIONS = ("s3", "file", "local")
STREAM_CONNECTIONS = STREAM_CONNECTION_TYPES
JDBC_CONNECTIONS = {"postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql", "sqlite": "sqlite"}
CUSTOM_JDBC = ("custom.jdbc", "marketplace.jdbc")  # Glue's JDBC connectors: any driver, by URL
REDSHIFT_NOTE = (
    "redshift: reading and writing over plain JDBC through the named connection; Redshift's "
    "UNLOAD/COPY path through redshift_tmp_dir is not used"
)


def _file_options(options: dict) -> dict:
    """Glue's file-source options among ``options`` (the engine's one table of them)."""
    return {k: options[k] for k in OPTION_NAMES if k in options}


class _GlueLogger:
    """Glue's logger: info / warn / error, onto Python logging."""

    def __init__(self, logger: logging.Logger):
        self._log = logger

    def info(self, msg):
        self._log.info(msg)

    def warn(self, msg):
        self._log.warning(msg)

    warning = warn

    def error(self, msg):
        self._log.error(msg)


class GlueContext:
    def __init__(self, sparkContext: SparkContext | SparkSession | None = None, **options):
        if isinstance(sparkContext, SparkSession):
            self.spark_session = sparkContext
        else:
            self.spark_session = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        self._sc = self.spark_session.sparkContext
        self.settings = Settings.from_env()
        storage.prepare_spark(self.spark_session, self.settings)
        self._job: NativeJob | None = None
        from ..catalog.hive import sync_metastore

        sync_metastore(self.spark_session, self.state_store())
        self.create_dynamic_frame = _DynamicFrameReader(self)
        self.create_data_frame = _DataFrameReader(self)
        self.write_dynamic_frame = _DynamicFrameWriter(self)
        self.write_data_frame = _DataFrameWriter(self)

    def bind_job(self, job: NativeJob) -> None:
        """The native run that the façade's Job.init() started: reads are bookmarked in
        it and writes with a transformation_ctx are published when it commits."""
        self._job = job

    @property
    def _run(self) -> JobRun | None:
        return self._job.job_run if self._job is not None else None

    @property
    def connections(self) -> Connections:
        if self._job is not None:
            return self._job.connections
        return Connections.from_settings(self.settings)

    @property
    def sparkContext(self) -> SparkContext:
        return self._sc

    def get_logger(self) -> _GlueLogger:
        return _GlueLogger(logging.getLogger("sparkmark.glue.script"))

    # Glue's flat spellings of the readers and writers (``create_dynamic_frame_from_options``
    # is ``create_dynamic_frame.from_options``), with Glue's parameters.

    def create_dynamic_frame_from_options(
        self,
        connection_type,
        connection_options=None,
        format=None,
        format_options=None,
        transformation_ctx="",
        push_down_predicate="",
        **kwargs,
    ) -> DynamicFrame:
        return self.create_dynamic_frame.from_options(
            connection_type,
            connection_options,
            format,
            format_options,
            transformation_ctx,
            push_down_predicate or None,
            **kwargs,
        )

    def create_dynamic_frame_from_catalog(
        self,
        database=None,
        table_name=None,
        redshift_tmp_dir="",
        transformation_ctx="",
        push_down_predicate="",
        additional_options=None,
        catalog_id=None,
        **kwargs,
    ) -> DynamicFrame:
        database, table_name = kwargs.pop("name_space", database), kwargs.pop("table_name", table_name)
        return self.create_dynamic_frame.from_catalog(
            database,
            table_name,
            redshift_tmp_dir,
            transformation_ctx,
            push_down_predicate,
            additional_options,
            catalog_id,
            **kwargs,
        )

    def create_dynamic_frame_from_rdd(
        self, data, name, schema=None, sample_ratio=None, transformation_ctx=""
    ) -> DynamicFrame:
        return self.create_dynamic_frame.from_rdd(data, name, schema, sample_ratio, transformation_ctx)

    def create_data_frame_from_options(
        self,
        connection_type,
        connection_options=None,
        format=None,
        format_options=None,
        transformation_ctx="",
        **kwargs,
    ) -> DataFrame:
        return self.create_data_frame.from_options(
            connection_type, connection_options, format, format_options, transformation_ctx, **kwargs
        )

    def create_data_frame_from_catalog(
        self,
        database,
        table_name,
        transformation_ctx="",
        push_down_predicate="",
        additional_options=None,
        **kwargs,
    ) -> DataFrame:
        return self.create_data_frame.from_catalog(
            database, table_name, transformation_ctx, push_down_predicate, additional_options, **kwargs
        )

    def write_dynamic_frame_from_options(
        self,
        frame,
        connection_type,
        connection_options=None,
        format=None,
        format_options=None,
        transformation_ctx="",
        **kwargs,
    ) -> DynamicFrame:
        return self.write_dynamic_frame.from_options(
            frame, connection_type, connection_options, format, format_options, transformation_ctx, **kwargs
        )

    def write_dynamic_frame_from_catalog(
        self,
        frame,
        database=None,
        table_name=None,
        redshift_tmp_dir="",
        transformation_ctx="",
        additional_options=None,
        catalog_id=None,
        **kwargs,
    ) -> DynamicFrame:
        database = kwargs.pop("name_space", database)
        return self.write_dynamic_frame.from_catalog(
            frame,
            database,
            table_name,
            redshift_tmp_dir,
            transformation_ctx,
            additional_options,
            catalog_id,
            **kwargs,
        )

    def write_dynamic_frame_from_jdbc_conf(
        self,
        frame,
        catalog_connection,
        connection_options=None,
        redshift_tmp_dir="",
        transformation_ctx="",
        catalog_id=None,
        **kwargs,
    ) -> DynamicFrame:
        return self.write_dynamic_frame.from_jdbc_conf(
            frame, catalog_connection, connection_options, redshift_tmp_dir, transformation_ctx, **kwargs
        )

    def write_from_options(
        self,
        frame_or_dfc,
        connection_type,
        connection_options=None,
        format=None,
        format_options=None,
        transformation_ctx="",
        **kwargs,
    ):
        """A DynamicFrame, or each frame of a DynamicFrameCollection, to one target."""
        for frame in _frames(frame_or_dfc):
            self.write_dynamic_frame.from_options(
                frame,
                connection_type,
                connection_options,
                format,
                format_options,
                transformation_ctx,
                **kwargs,
            )
        return frame_or_dfc

    def write_from_jdbc_conf(
        self,
        frame_or_dfc,
        catalog_connection,
        connection_options=None,
        redshift_tmp_dir="",
        transformation_ctx="",
        catalog_id=None,
        **kwargs,
    ):
        for frame in _frames(frame_or_dfc):
            self.write_dynamic_frame.from_jdbc_conf(
                frame,
                catalog_connection,
                connection_options,
                redshift_tmp_dir,
                transformation_ctx,
                **kwargs,
            )
        return frame_or_dfc

    def extract_jdbc_conf(self, connection_name: str, catalog_id: str | None = None) -> dict[str, str]:
        """A named connection's settings, as Glue returns them (url, user, password,
        vendor); the password is the resolved one, for the script's own use."""
        resolved = self.connections.resolve(connection_name)
        vendor = resolved.url.split(":")[1] if resolved.url.startswith("jdbc:") else ""
        return {
            "url": resolved.url,
            "user": resolved.user or "",
            "password": resolved.password or "",
            "vendor": vendor,
            "fullUrl": resolved.url,
        }

    def getSource(
        self, connection_type: str, format: str | None = None, transformation_ctx: str = "", **options
    ) -> DataSource:
        return DataSource(self, connection_type, options, format, transformation_ctx)

    def getSink(
        self, connection_type: str, format: str | None = None, transformation_ctx: str = "", **options
    ) -> DataSink:
        return DataSink(self, connection_type, options, format, transformation_ctx)

    def add_ingestion_time_columns(self, frame, time_granularity: str = "hour"):
        """Glue's ingestion-time partition columns: ``ingest_year``, ``ingest_month``,
        ``ingest_day``, then ``ingest_hour`` and ``ingest_minute`` down to the
        granularity (``day``, ``hour`` or ``minute``), as zero-padded strings of the time
        the rows are processed (UTC)."""
        levels = {"day": 3, "hour": 4, "minute": 5}
        depth = levels.get(str(time_granularity).lower())
        if depth is None:
            raise SourceError(f"time_granularity must be day, hour or minute, got {time_granularity!r}")
        df = frame.toDF() if isinstance(frame, DynamicFrame) else frame
        zone = self.spark_session.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
        now = F.to_utc_timestamp(F.current_timestamp(), zone)
        columns = [("ingest_year", "yyyy"), ("ingest_month", "MM"), ("ingest_day", "dd"),
                   ("ingest_hour", "HH"), ("ingest_minute", "mm")][:depth]  # fmt: skip
        for name, pattern in columns:
            df = df.withColumn(name, F.date_format(now, pattern))
        return DynamicFrame(df, self, frame.name) if isinstance(frame, DynamicFrame) else df

    def purge_table(
        self,
        database: str,
        table_name: str,
        options: dict | None = None,
        transformation_ctx: str = "",
        catalog_id: str | None = None,
    ) -> None:
        """``purge_s3_path`` over a catalog table's files: every partition's folder, or
        those ``options["partitionPredicate"]`` selects, or the table's location."""
        from ..catalog.reading import prune

        opts = dict(options or {})
        store = self._catalog_store()
        table = store.table(database.lower(), table_name.lower())
        folders = [table.location]
        if table.partition_keys:
            parts = store.partitions(table.database, table.name)
            predicate = str(opts.pop("partitionPredicate", "") or "")
            folders = [p.location for p in prune(self.spark_session, table, parts, [predicate])]
        for folder in folders:
            self.purge_s3_path(folder, opts, transformation_ctx)

    def purge_s3_path(self, s3_path: str, options: dict | None = None, transformation_ctx: str = "") -> None:
        """Delete the files under ``s3_path`` older than ``retentionPeriod`` hours (default
        168). ``excludeStorageClasses`` is accepted; local and fsspec stores have none."""
        opts = dict(options or {})
        hours = float(opts.get("retentionPeriod", 168))
        cutoff_ms = (time.time() - hours * 3600) * 1000
        fs, root = url_to_fs(s3_path)
        from ..engine.listing import mtime_ms

        removed = 0
        for path, info in fs.find(root, detail=True).items():
            modified = mtime_ms(info)
            if modified is not None and modified < cutoff_ms:
                fs.rm(path)
                removed += 1
        log.info("purge_s3_path %s: removed %d files older than %s hours", s3_path, removed, hours)

    def forEachBatch(self, frame, batch_function, options: dict | None = None) -> None:
        """Run ``batch_function(batch_df, batch_id)`` on every micro-batch of a streaming
        DataFrame. Glue's options: ``windowSize`` (the trigger interval, default
        "100 seconds"), ``checkpointLocation`` (default ``<TempDir>/<JOB_NAME>/checkpoint/``),
        ``batchMaxRetries`` (default 3). In a job run, writes through this context inside
        the function are exactly-once per batch. Returns when the query ends: caught up
        (``sparkmark run --until-caught-up``, or ``{"trigger": "availableNow"}``), after
        ``--max-batches``, on a stop signal, or on failure."""
        opts = dict(options or {})
        df = frame.toDF() if isinstance(frame, DynamicFrame) else frame
        if not df.isStreaming:
            raise SourceError(
                "forEachBatch needs a streaming DataFrame (create_data_frame.from_options with kafka or kinesis)"
            )
        if self._job is not None:
            self._job.stream_batches(df, batch_function, opts)
            return
        from ..runtime.batches import BatchOptions

        parsed = BatchOptions.parse(
            opts,
            default_checkpoint=None,
            until_caught_up=self.settings.stream_until_caught_up,
            max_batches=self.settings.stream_max_batches,
        )
        log.warning("forEachBatch without Job.init(): batches are at-least-once (no run keeps their writes)")
        writer = df.writeStream.foreachBatch(batch_function).option("checkpointLocation", parsed.checkpoint)
        if parsed.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=parsed.window)
        writer.start().awaitTermination()

    def _read_stream(self, connection_type: str, options: dict, ctx: str) -> DataFrame:
        """Glue's streaming sources: a DataFrame whose micro-batches forEachBatch processes."""
        from ..sources.streams import stream_source

        if self._job is not None:
            return self._job.read_stream(connection_type, ctx=ctx or None, **options)
        source = stream_source(
            connection_type, options, ctx=None, connections=self.connections, settings=self.settings
        )
        return read_source(self.spark_session, source, None)

    # ------------------------------------------------------------ reading

    def _read_files(
        self,
        paths: list[str],
        fmt: str | None,
        options: dict,
        format_options: dict,
        ctx: str | None,
        push_down_predicate: str | None = None,
    ) -> tuple[DataFrame, bool]:
        """Read files through the run's bookmark when there is one. Returns the frame and
        whether its JSON needs choice typing."""
        fmt = (fmt or "json").lower()
        spark_opts: dict[str, Any] = {}
        file_opts = _file_options(options)
        for key in options:
            if key in formats.ACCEPTED_NO_OP:
                log.info("connection option %s is accepted; Spark sizes its own input splits", key)
        json_records = False
        spark_opts.update(formats.translate(formats.READ, fmt, format_options))
        if fmt == "csv":
            spark_fmt = "csv"
        elif fmt == "json":
            if format_options.get("jsonPath") not in (None, "", "$[*]"):
                raise SourceError("jsonPath supports '$[*]' (a top-level array of records) only")
            multiline = parse_bool(
                "multiline", format_options.get("multiline", format_options.get("multiLine", False))
            )
            spark_fmt = "text"
            if multiline or format_options.get("jsonPath") == "$[*]":
                spark_opts["wholetext"] = "true"
            json_records = True
        elif fmt in ("parquet", "glueparquet", "orc"):
            spark_fmt = "parquet" if fmt == "glueparquet" else fmt
        elif fmt == "xml":
            spark_fmt = "xml"
        elif fmt == "avro":
            spark_fmt = "avro"  # read in Python with fastavro (sources/avro.py)
        else:
            raise SourceError(f"unsupported format {fmt!r}")
        if self._job is None and ctx:
            log.warning(
                "source %s has transformation_ctx %r but Job.init() was not called: "
                "it is read in full and not bookmarked",
                ", ".join(paths),
                ctx,
            )
        source = FileSource(paths, format=spark_fmt, ctx=ctx or None, options={**file_opts, **spark_opts})
        df = read_source(self.spark_session, source, self._run)
        if push_down_predicate:
            df = df.where(push_down_predicate)
        return df, json_records

    def _to_records(self, df: DataFrame, json_records: bool) -> tuple[DataFrame, DataFrame | None]:
        """Typed records and the error records of rows that were not JSON records."""
        if not json_records or "value" not in df.columns:
            return df, None
        keep = [c for c in df.columns if c != "value"]
        lines = df
        first = df.select(F.ltrim("value")).where(F.length("value") > 0).first()
        if first is not None and (first[0] or "").startswith("["):  # files holding arrays of records
            lines = df.select(
                F.explode(F.expr("cast(try_parse_json(value) as array<variant>)")).alias("__sm_el"), *keep
            )
            lines = lines.select(F.to_json("__sm_el").alias("value"), *keep)
        else:
            lines = df.where(F.length(F.trim("value")) > 0)
        return choice.parse_records(lines, "value", keep)

    def _database(self, options: dict, connection_type: str) -> jdbc_keys.Database:
        """The database the options name: their url/user/password, or a named connection's
        (``connectionName``, with ``useConnectionProperties`` or no url of their own)."""
        url, user, password = options.get("url"), options.get("user"), options.get("password")
        name = options.get("connectionName")
        if name and (
            parse_bool("useConnectionProperties", options.get("useConnectionProperties", False)) or not url
        ):
            resolved = self.connections.resolve(str(name))
            url, user, password = url or resolved.url, user or resolved.user, password or resolved.password
        if not url:
            raise SourceError(
                f"connection_type {connection_type!r} needs connection_options['url'] or 'connectionName'"
            )
        database = jdbc_keys.parse_database(url, user, password)
        expected = JDBC_CONNECTIONS.get(connection_type)
        if expected is not None and database.dialect.name != expected:
            raise SourceError(f"url {database.display} is not a {connection_type} URL")
        return database

    def _read_jdbc(self, connection_type: str, options: dict, ctx: str | None) -> DataFrame:
        if connection_type == "redshift":
            log.info(REDSHIFT_NOTE)
            return self._read_custom_jdbc(connection_type, options, ctx)
        if connection_type in CUSTOM_JDBC:
            return self._read_custom_jdbc(connection_type, options, ctx)
        if connection_type not in JDBC_CONNECTIONS:
            raise SourceError(
                f"connection_type {connection_type!r} is not supported: use s3, postgresql, mysql, "
                "sqlite, or custom.jdbc with a driver on Spark's classpath"
            )
        table = options.get("dbtable")
        keys = options.get("jobBookmarkKeys")
        if isinstance(keys, str):
            keys = json.loads(keys) if keys.strip().startswith("[") else [keys]
        kwargs = {
            "table": table,
            "keys": keys,
            "keys_sort_order": options.get("jobBookmarkKeysSortOrder", "asc"),
            "hashfield": options.get("hashfield"),
            "hashexpression": options.get("hashexpression"),
            "hashpartitions": int(options.get("hashpartitions", 7)),
        }
        database = self._database(options, connection_type)
        run = self._run
        if run is not None:
            run.add_database(database)
        request = JdbcRequest.build(database, query=None, lag=None, on_null_key="raise", **kwargs)
        return read_source(self.spark_session, JdbcSource(request, ctx=ctx or None), run)

    def _read_custom_jdbc(self, connection_type: str, options: dict, ctx: str | None) -> DataFrame:
        """``custom.jdbc`` / ``marketplace.jdbc``: Glue's connector options over the same
        bookmarked JDBC read (``dbTable`` or ``query``, ``filterPredicate``,
        ``partitionColumn`` with ``numPartitions``)."""
        if options.get("className"):
            from ..spark import driver_class

            driver_class(self.spark_session, (str(options["className"]),), connection_type)
        mapping = _type_mapping(options.get("dataTypeMapping"))
        table, query = options.get("dbTable") or options.get("dbtable"), options.get("query")
        where = options.get("filterPredicate")
        if where:
            source = f"({query}) sm_q" if query else table
            query, table = f"SELECT * FROM {source} WHERE {where}", None
        keys = options.get("jobBookmarkKeys")
        if isinstance(keys, str):
            keys = json.loads(keys) if keys.strip().startswith("[") else [keys]
        partition = options.get("partitionColumn")
        database = self._database(options, connection_type)
        run = self._run
        if run is not None:
            run.add_database(database)
        request = JdbcRequest.build(
            database,
            table=table,
            query=query,
            keys=keys or ([partition] if partition and query else None),
            keys_sort_order=options.get("jobBookmarkKeysSortOrder", "asc"),
            hashfield=partition,
            hashexpression=None,
            hashpartitions=int(options.get("numPartitions", 7)),
            lag=None,
            on_null_key="raise",
        )
        df = read_source(self.spark_session, JdbcSource(request, ctx=ctx or None), run)
        return _apply_type_mapping(df, mapping) if mapping else df

    def _from_options(
        self,
        connection_type: str,
        connection_options: dict,
        format: str | None,
        format_options: dict | None,
        transformation_ctx: str,
        push_down_predicate: str | None = None,
    ) -> tuple[DataFrame, bool]:
        kind = (connection_type or "").lower()
        options = dict(connection_options or {})
        if kind in STREAM_CONNECTIONS:
            raise SourceError(
                f"{kind} is a streaming source: read it with glueContext.create_data_frame.from_options "
                "and process it with glueContext.forEachBatch"
            )
        if kind in FILE_CONNECTIONS:
            paths = options.get("paths") or ([options["path"]] if "path" in options else [])
            if not paths:
                raise SourceError("connection_options needs 'paths' (a list of folders or files)")
            return self._read_files(
                list(paths),
                format,
                options,
                dict(format_options or {}),
                transformation_ctx,
                push_down_predicate,
            )
        return self._read_jdbc(kind, options, transformation_ctx), False

    # ------------------------------------------------------------ catalog

    def state_store(self) -> StateStore:
        """The run's state store, or, before Job.init(), the one the settings name."""
        return self._job.store if self._job is not None else StateStore.from_settings(self.settings)

    def _catalog_store(self):
        from ..catalog.store import CatalogStore

        return CatalogStore(self.state_store())

    def _stream_table(self, database: str, table_name: str, options: dict) -> tuple[str, dict] | None:
        """A streaming catalog table (``typeOfData`` kafka or kinesis, as Glue keeps it):
        its connection options, with the table's columns as the records' schema."""
        table = self._catalog_store().table(database.lower(), table_name.lower())
        kind = str(table.parameters.get("typeOfData", "")).lower()
        if kind not in STREAM_CONNECTIONS:
            return None
        from ..sources.streams import accepts

        from_table = {
            k: v
            for k, v in table.parameters.items()
            if k not in ("typeOfData", "classification") and accepts(kind, k)
        }
        merged = {"classification": table.classification, **from_table, **options}
        if table.columns and "schema" not in merged and "inferSchema" not in options:
            merged["schema"] = ", ".join(f"`{c.name}` {c.type}" for c in table.columns)
        return kind, merged

    def _from_catalog(
        self, database: str, table_name: str, push_down_predicate: str, options: dict, ctx: str
    ) -> tuple[DataFrame, bool]:
        from ..catalog.reading import read_table

        database, table_name = database.lower(), table_name.lower()  # Glue's names are case-insensitive
        name = f"{database}.{table_name}"
        predicates = [push_down_predicate, options.get("catalogPartitionPredicate", "")]
        store = self._catalog_store()
        found = store.table(database, table_name)
        classification = found.classification
        if found.parameters.get("connectionName"):  # a crawled JDBC table
            resolved = self.connections.resolve(found.parameters["connectionName"])
            keys = options.get("jobBookmarkKeys") or [
                k for k in (found.parameters.get("primaryKey") or "").split(",") if k
            ]
            jdbc_options = {
                "url": resolved.url,
                "user": resolved.user,
                "password": resolved.password,
                "dbtable": found.parameters["dbtable"],
                "jobBookmarkKeys": keys or None,
                **{
                    k: options[k]
                    for k in ("jobBookmarkKeysSortOrder", "hashfield", "hashexpression", "hashpartitions")
                    if k in options
                },
            }
            kind = "mysql" if classification == "mysql" else classification
            return self._read_jdbc(kind, jdbc_options, ctx), False
        fmt = "text" if classification == "json" else classification
        spark_opts = (
            {"wholetext": "true"}
            if classification == "json" and parse_bool("multiline", options.get("multiline", False))
            else {}
        )
        file_opts = _file_options(options)

        def reader(paths, fmt_, columns, table_options):
            merged = {**table_options, **spark_opts, **file_opts}
            schema = merged.pop("schema", None)
            source = FileSource(
                paths, format=fmt_, ctx=ctx or None, schema=schema, path_columns=columns, options=merged
            )
            return read_source(self.spark_session, source, self._run)

        df, _table, _n = read_table(self.spark_session, store, name, predicates, reader, fmt=fmt)
        return df, classification == "json"

    def _update_catalog(
        self,
        df: DataFrame,
        database: str,
        name: str,
        path: str,
        fmt: str,
        partition_keys: list[str],
        update_behavior: str,
    ) -> None:
        from ..catalog.hive import HiveCatalog
        from ..catalog.models import Column, Partition, Table
        from ..engine.fileplan import root_url

        catalog = HiveCatalog(self.spark_session, self._catalog_store())
        location = root_url(path)
        columns = tuple(
            Column(f.name, f.dataType.simpleString())
            for f in df.schema.fields
            if f.name not in partition_keys
        )
        keys = tuple(Column(k, "string") for k in partition_keys)
        classification = "parquet" if fmt == "glueparquet" else fmt
        table = Table(database, name, location, classification, columns, keys, {"written_by": "sparkmark"})
        try:
            existing = catalog.table(database, name)
        except SparkmarkError:
            existing = None
        catalog.ensure_database(database)
        if existing is None:
            catalog.create_table(table)
        elif update_behavior == "UPDATE_IN_DATABASE" and (existing.columns, existing.partition_keys) != (
            columns,
            keys,
        ):
            catalog.replace_table(table)
        else:
            table = existing
        if keys:
            values = {
                tuple(str(v) for v in r)
                for r in df.select(*[F.col(f"`{k}`") for k in partition_keys]).distinct().collect()
            }
            known = {p.values for p in catalog.store.partitions(database, name)}
            fresh = [
                Partition(
                    v, location + "/" + "/".join(f"{k}={x}" for k, x in zip(partition_keys, v, strict=False))
                )
                for v in sorted(values)
                if v not in known
            ]
            if fresh:
                catalog.add_partitions(table, fresh)

    # ------------------------------------------------------------ writing

    def _append_jdbc(
        self,
        df: DataFrame,
        database: jdbc_keys.Database,
        table: str,
        ctx: str = "",
        connection: str | None = None,
    ) -> None:
        """Append through the staged JDBC sink. In a job run with a transformation_ctx the
        append is exactly-once: merged when the job commits."""
        df = _variants_as_json(df)
        if self._job is not None:
            self._job.write_jdbc(
                df,
                url=database.jdbc_url,
                table=table,
                user=database.user,
                password=database.password,
                connection=connection,
                ctx=ctx or None,
            )
            return
        jdbc_sink.write(df, database, table, mode="append", keys=None)

    def _write(
        self,
        frame: DynamicFrame | DataFrame,
        connection_type: str,
        options: dict,
        format: str | None,
        format_options: dict | None,
        catalog_target: tuple[str, str] | None = None,
        ctx: str = "",
    ) -> None:
        df = frame.toDF() if isinstance(frame, DynamicFrame) else frame
        kind = (connection_type or "").lower()
        if (kind in FILE_CONNECTIONS or kind in JDBC_CONNECTIONS) and (not df.columns or df.isEmpty()):
            # A run with nothing new: as on Glue, the write produces nothing and the run
            # goes on to commit (a frame with no field cannot even be written by Spark).
            log.info(
                "nothing to write to %s: the frame has no records",
                options.get("path") or options.get("dbtable"),
            )
            return
        if kind in FILE_CONNECTIONS:
            path = options.get("path")
            if not path:
                raise SourceError("connection_options needs 'path' for a file target")
            fmt = (format or "json").lower()
            fopts = dict(format_options or {})
            spark_fmt = "parquet" if fmt == "glueparquet" else fmt
            if spark_fmt not in ("parquet", "orc", "json", "csv", "xml", "text"):
                raise SourceError(f"unsupported output format {fmt!r}")
            if spark_fmt != "parquet":
                df = _variants_as_json(df)
            writer_options = formats.translate(formats.WRITE, spark_fmt, fopts)
            keys = list(options.get("partitionKeys") or [])
            if self._job is not None:
                # With a ctx, exactly-once: staged now, published when the job commits.
                self._job.write_files(
                    df, path, format=spark_fmt, partition_by=keys, ctx=ctx or None, **writer_options
                )
            else:
                file_sink.write_now(
                    df, path, fmt=spark_fmt, mode="append", partition_by=keys, options=writer_options
                )
            target = catalog_target or (
                (options.get("catalogDatabase"), options.get("catalogTableName"))
                if options.get("catalogTableName")
                else None
            )
            if parse_bool("enableUpdateCatalog", options.get("enableUpdateCatalog", False)) and target:
                database, table_name = target
                if not database or not table_name:
                    raise SourceError("enableUpdateCatalog needs catalogDatabase and catalogTableName")
                self._update_catalog(
                    df,
                    database,
                    table_name,
                    path,
                    spark_fmt,
                    list(options.get("partitionKeys") or []),
                    str(options.get("updateBehavior", "UPDATE_IN_DATABASE")),
                )
            return
        if kind in JDBC_CONNECTIONS:
            table = options.get("dbtable")
            if not table:
                raise SourceError("connection_options needs 'dbtable' for a JDBC target")
            self._append_jdbc(df, self._database(options, kind), table, ctx)
            return
        raise SourceError(f"connection_type {connection_type!r} is not supported for writing")


# JDBC type names (java.sql.Types) for the Spark types the JDBC reader gives them.
_JDBC_TYPE_NAMES: dict[str, tuple[str, ...]] = {
    "boolean": ("BOOLEAN", "BIT"),
    "tinyint": ("TINYINT",),
    "smallint": ("SMALLINT",),
    "int": ("INTEGER",),
    "bigint": ("BIGINT",),
    "float": ("REAL",),
    "double": ("DOUBLE", "FLOAT"),
    "string": ("VARCHAR", "CHAR", "LONGVARCHAR", "NVARCHAR", "NCHAR", "CLOB"),
    "date": ("DATE",),
    "timestamp": ("TIMESTAMP", "TIMESTAMP_WITH_TIMEZONE"),
    "binary": ("BINARY", "VARBINARY", "LONGVARBINARY", "BLOB"),
}
_GLUE_TARGETS = {
    "STRING": "string", "INT": "int", "INTEGER": "int", "LONG": "bigint", "BIGINT": "bigint",
    "SHORT": "smallint", "BYTE": "tinyint", "FLOAT": "float", "DOUBLE": "double",
    "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp", "BINARY": "binary",
}  # fmt: skip


def _type_mapping(raw) -> dict[str, str]:
    """Glue's ``dataTypeMapping`` (JDBC type name → Glue type), checked."""
    if not raw:
        return {}
    mapping = json.loads(raw) if isinstance(raw, str) else dict(raw)
    checked = {}
    for jdbc, glue in mapping.items():
        target = _GLUE_TARGETS.get(str(glue).upper()) or (
            str(glue).lower() if str(glue).upper().startswith("DECIMAL") else None
        )
        if target is None:
            raise SourceError(f"dataTypeMapping: {glue!r} is not a Glue type ({', '.join(_GLUE_TARGETS)})")
        checked[str(jdbc).upper()] = target
    return checked


def _apply_type_mapping(df: DataFrame, mapping: dict[str, str]) -> DataFrame:
    """Cast each column whose JDBC type the mapping names (a value that does not convert
    becomes null, as any Glue cast)."""
    cols = []
    for f in df.schema.fields:
        simple = "decimal" if f.dataType.simpleString().startswith("decimal") else f.dataType.simpleString()
        names = ("DECIMAL", "NUMERIC") if simple == "decimal" else _JDBC_TYPE_NAMES.get(simple, ())
        target = next((mapping[n] for n in names if n in mapping), None)
        col = F.col(f"`{f.name}`")
        cols.append(col.try_cast(target).alias(f.name) if target else col)
    return df.select(*cols)


def _frames(frame_or_dfc) -> list:
    """The frames of a DynamicFrame or of a DynamicFrameCollection."""
    from .dynamicframe import DynamicFrameCollection

    if isinstance(frame_or_dfc, DynamicFrameCollection):
        return list(frame_or_dfc.values())
    return [frame_or_dfc]


def _variants_as_json(df: DataFrame) -> DataFrame:
    """Text formats and JDBC cannot hold VARIANT: unresolved choices are written as JSON text."""
    cols = []
    for f in df.schema.fields:
        col = F.col(f"`{f.name}`")
        cols.append(F.to_json(col).alias(f.name) if isinstance(f.dataType, VariantType) else col)
    return df.select(*cols)


class _DynamicFrameReader:
    def __init__(self, ctx: GlueContext):
        self._ctx = ctx

    def from_options(
        self,
        connection_type: str,
        connection_options: dict | None = None,
        format: str | None = None,
        format_options: dict | None = None,
        transformation_ctx: str = "",
        push_down_predicate: str | None = None,
        **kwargs,
    ) -> DynamicFrame:
        df, json_records = self._ctx._from_options(
            connection_type,
            connection_options or {},
            format,
            format_options,
            transformation_ctx,
            push_down_predicate,
        )
        records, bad = self._ctx._to_records(df, json_records)
        stages = (ErrorStage(transformation_ctx or "from_options", bad),) if bad is not None else ()
        return DynamicFrame(records, self._ctx, transformation_ctx, errors=stages)

    def from_rdd(
        self,
        data,
        name: str,
        schema: StructType | None = None,
        sample_ratio: float | None = None,
        transformation_ctx: str = "",
    ) -> DynamicFrame:
        df = self._ctx.spark_session.createDataFrame(data, schema, sample_ratio)  # type: ignore[call-overload]
        return DynamicFrame(df, self._ctx, name)

    def from_catalog(
        self,
        database: str,
        table_name: str,
        redshift_tmp_dir: str = "",
        transformation_ctx: str = "",
        push_down_predicate: str = "",
        additional_options: dict | None = None,
        catalog_id: str | None = None,
        **kwargs,
    ) -> DynamicFrame:
        df, json_records = self._ctx._from_catalog(
            database, table_name, push_down_predicate, dict(additional_options or {}), transformation_ctx
        )
        records, bad = self._ctx._to_records(df, json_records)
        stages = (ErrorStage(transformation_ctx or "from_catalog", bad),) if bad is not None else ()
        return DynamicFrame(records, self._ctx, transformation_ctx or table_name, errors=stages)


class _DataFrameReader:
    def __init__(self, ctx: GlueContext):
        self._ctx = ctx

    def from_options(
        self,
        connection_type: str,
        connection_options: dict | None = None,
        format: str | None = None,
        format_options: dict | None = None,
        transformation_ctx: str = "",
        **kwargs,
    ) -> DataFrame:
        if (connection_type or "").lower() in STREAM_CONNECTIONS:
            options = dict(connection_options or {})
            if format and "classification" not in options:
                options["classification"] = format
            return self._ctx._read_stream(connection_type.lower(), options, transformation_ctx)
        df, json_records = self._ctx._from_options(
            connection_type, connection_options or {}, format, format_options, transformation_ctx
        )
        records, bad = self._ctx._to_records(df, json_records)
        if bad is not None and bad.limit(1).count():
            log.warning("%d input rows are not JSON records and were left out", bad.count())
        return records

    def from_catalog(
        self,
        database: str,
        table_name: str,
        transformation_ctx: str = "",
        push_down_predicate: str = "",
        additional_options: dict | None = None,
        **kwargs,
    ) -> DataFrame:
        streaming = self._ctx._stream_table(database, table_name, dict(additional_options or {}))
        if streaming is not None:
            kind, options = streaming
            return self._ctx._read_stream(kind, options, transformation_ctx)
        df, json_records = self._ctx._from_catalog(
            database, table_name, push_down_predicate, dict(additional_options or {}), transformation_ctx
        )
        records, _bad = self._ctx._to_records(df, json_records)
        return records


class _DynamicFrameWriter:
    def __init__(self, ctx: GlueContext):
        self._ctx = ctx

    def from_options(
        self,
        frame,
        connection_type: str,
        connection_options: dict | None = None,
        format: str | None = None,
        format_options: dict | None = None,
        transformation_ctx: str = "",
        **kwargs,
    ) -> DynamicFrame:
        """With a transformation_ctx, in a job run, the write is exactly-once: its output
        appears when ``job.commit()`` commits the bookmark, never before, never twice."""
        self._ctx._write(
            frame,
            connection_type,
            dict(connection_options or {}),
            format,
            format_options,
            ctx=transformation_ctx,
        )
        return frame

    def from_jdbc_conf(
        self,
        frame,
        catalog_connection: str,
        connection_options: dict | None = None,
        redshift_tmp_dir: str = "",
        transformation_ctx: str = "",
        **kwargs,
    ) -> DynamicFrame:
        """Write through a named connection (``[connections.NAME]`` in sparkmark.toml)."""
        options = dict(connection_options or {})
        if redshift_tmp_dir:
            log.info(REDSHIFT_NOTE)
        resolved = self._ctx.connections.resolve(catalog_connection)
        database = jdbc_keys.parse_database(resolved.url, resolved.user, resolved.password)
        table = options.get("dbtable")
        if not table:
            raise SourceError("from_jdbc_conf needs connection_options['dbtable']")
        self._ctx._append_jdbc(
            frame.toDF() if isinstance(frame, DynamicFrame) else frame,
            database,
            table,
            transformation_ctx,
            connection=catalog_connection,
        )
        return frame

    def from_catalog(
        self,
        frame,
        database: str,
        table_name: str,
        redshift_tmp_dir: str = "",
        transformation_ctx: str = "",
        additional_options: dict | None = None,
        catalog_id: str | None = None,
        **kwargs,
    ) -> DynamicFrame:
        """Append to a catalog table's location, in its format and partitioning; with
        ``enableUpdateCatalog`` the new partitions (and, with ``updateBehavior``
        UPDATE_IN_DATABASE, the new schema) are registered."""
        options = dict(additional_options or {})
        database, table_name = database.lower(), table_name.lower()
        table = self._ctx._catalog_store().table(database, table_name)
        keys = options.get("partitionKeys") or [c.name for c in table.partition_keys]
        self._ctx._write(
            frame,
            "s3",
            {
                **options,
                "path": table.location,
                "partitionKeys": keys,
                "enableUpdateCatalog": options.get("enableUpdateCatalog", False),
            },
            table.classification,
            {},
            catalog_target=(database, table_name),
            ctx=transformation_ctx,
        )
        return frame


class _DataFrameWriter(_DynamicFrameWriter):
    pass


class DataSource:
    """``glueContext.getSource(...)``: ``setFormat`` then ``getFrame``."""

    def __init__(
        self, ctx: GlueContext, connection_type: str, options: dict, fmt: str | None, transformation_ctx: str
    ):
        self._ctx, self._type, self._options = ctx, connection_type, options
        self._format, self._tctx = fmt, transformation_ctx
        self._format_options: dict[str, Any] = {}

    def setFormat(self, format: str, **options) -> None:
        self._format, self._format_options = format, options

    def getFrame(self) -> DynamicFrame:
        return self._ctx.create_dynamic_frame.from_options(
            self._type, self._options, self._format, self._format_options, self._tctx
        )


class DataSink:
    """``glueContext.getSink(...)``: ``setFormat``, ``setCatalogInfo``, ``writeFrame``."""

    def __init__(
        self, ctx: GlueContext, connection_type: str, options: dict, fmt: str | None, transformation_ctx: str
    ):
        self._ctx, self._type, self._options = ctx, connection_type, options
        self._format, self._tctx = fmt, transformation_ctx
        self._format_options: dict[str, Any] = {}

    def setFormat(self, format: str, **options) -> None:
        self._format, self._format_options = format, options

    def setCatalogInfo(
        self, catalogDatabase: str, catalogTableName: str, catalogId: str | None = None
    ) -> None:
        """With ``enableUpdateCatalog=True`` in the sink's options, writeFrame creates or
        updates this catalog table and registers the partitions it wrote."""
        self._options = {
            **self._options,
            "catalogDatabase": catalogDatabase,
            "catalogTableName": catalogTableName,
        }

    def writeFrame(self, dynamic_frame: DynamicFrame, info: str = "") -> DynamicFrame:
        self._ctx._write(
            dynamic_frame, self._type, self._options, self._format, self._format_options, ctx=self._tctx
        )
        return dynamic_frame
