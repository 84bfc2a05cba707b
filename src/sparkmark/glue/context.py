"""``awsglue.context``: GlueContext, translating Glue's readers and writers onto sparkmark."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..connections import Connections
from ..engine import storage
from ..engine.store import StateStore
from ..errors import SourceError
from ..settings import Settings
from .dynamicframe import DynamicFrame, DynamicFrameReader, DynamicFrameWriter, frames
from .reading import DataFrameReader, DataSource
from .writing import DataSink

if TYPE_CHECKING:
    from ..catalog.hive import HiveCatalog
    from ..catalog.store import CatalogStore
    from ..runtime import JobRun

log = logging.getLogger("sparkmark.glue")


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
        self.run: JobRun | None = None  # the run Job.init() started
        from ..catalog.hive import sync_metastore

        sync_metastore(self.spark_session, self.state_store())
        self.create_dynamic_frame = DynamicFrameReader(self)
        self.create_data_frame = DataFrameReader(self)
        self.write_dynamic_frame = DynamicFrameWriter(self)
        self.write_data_frame = DynamicFrameWriter(self)

    def bind_run(self, run: JobRun) -> None:
        """The run that the façade's Job.init() started: reads are bookmarked in it and
        writes with a transformation_ctx are published when it commits."""
        self.run = run

    @property
    def connections(self) -> Connections:
        return self.run.connections if self.run is not None else Connections.from_settings(self.settings)

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
        for frame in frames(frame_or_dfc):
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
        for frame in frames(frame_or_dfc):
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
        store = self.catalog_store()
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
        from ..sinks.files import purge

        purge(s3_path, float(dict(options or {}).get("retentionPeriod", 168)))

    def forEachBatch(self, frame, batch_function, options: dict | None = None) -> None:
        """Run ``batch_function(batch_df, batch_id)`` on every micro-batch of a streaming
        DataFrame. Glue's options: ``windowSize`` (the trigger interval, default
        "100 seconds"), ``checkpointLocation`` (default ``<TempDir>/<JOB_NAME>/checkpoint/``),
        ``batchMaxRetries`` (default 3). In a job run, writes through this context inside
        the function are exactly-once per batch. Returns when the query ends: caught up
        (``sparkmark run --until-caught-up``, or ``{"trigger": "availableNow"}``), after
        ``--max-batches``, on a stop signal, or on failure."""
        from ..runtime.batches import for_each_batch

        for_each_batch(
            self.run,
            frame.toDF() if isinstance(frame, DynamicFrame) else frame,
            batch_function,
            dict(options or {}),
            until_caught_up=self.settings.stream_until_caught_up,
            max_batches=self.settings.stream_max_batches,
        )

    # ------------------------------------------------------------ catalog

    def state_store(self) -> StateStore:
        """The run's state store, or, before Job.init(), the one the settings name."""
        return self.run.store if self.run is not None else StateStore.from_settings(self.settings)

    def catalog_store(self) -> CatalogStore:
        from ..catalog.store import CatalogStore

        return CatalogStore(self.state_store())

    def hive_catalog(self) -> HiveCatalog:
        from ..catalog.hive import HiveCatalog

        return HiveCatalog(self.spark_session, self.catalog_store())
