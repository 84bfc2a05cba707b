"""Glue's writers (``write_dynamic_frame``, ``write_data_frame``, ``getSink``)
translated onto sparkmark's sinks: a ``connection_type`` and its options become a
``FileSink`` or a ``JdbcSink``, written through ``runtime.write_sink`` in the context's
run (exactly-once with a transformation_ctx), or at once with none."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import VariantType

from ..engine import jdbc as jdbc_keys
from ..engine.options import parse_bool
from ..errors import SourceError
from ..runtime import write_sink
from ..sinks.files import FileSink
from ..sinks.jdbc import JdbcSink
from . import formats
from .dynamicframe import DynamicFrame
from .reading import FILE_CONNECTIONS, JDBC_CONNECTIONS, REDSHIFT_NOTE, database

if TYPE_CHECKING:
    from .context import GlueContext

log = logging.getLogger("sparkmark.glue")

FILE_FORMATS = ("parquet", "orc", "json", "csv", "xml", "text")


def frames(frame_or_dfc) -> list:
    """The frames of a DynamicFrame or of a DynamicFrameCollection."""
    from .dynamicframe import DynamicFrameCollection

    if isinstance(frame_or_dfc, DynamicFrameCollection):
        return list(frame_or_dfc.values())
    return [frame_or_dfc]


def variants_as_json(df: DataFrame) -> DataFrame:
    """Text formats and JDBC cannot hold VARIANT: unresolved choices are written as JSON text."""
    cols = []
    for f in df.schema.fields:
        col = F.col(f"`{f.name}`")
        cols.append(F.to_json(col).alias(f.name) if isinstance(f.dataType, VariantType) else col)
    return df.select(*cols)


def append_jdbc(
    gc: GlueContext,
    df: DataFrame,
    target: jdbc_keys.Database,
    table: str,
    ctx: str = "",
    connection: str | None = None,
) -> None:
    """Append through the staged JDBC sink. In a job run with a transformation_ctx the
    append is exactly-once: merged when the job commits."""
    sink = JdbcSink(target, table, mode="append", connection=connection, ctx=ctx or None)
    write_sink(sink, variants_as_json(df), gc.run)


def write(
    gc: GlueContext,
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
            "nothing to write to %s: the frame has no records", options.get("path") or options.get("dbtable")
        )
        return
    if kind in FILE_CONNECTIONS:
        _write_files(gc, df, options, format, format_options, catalog_target, ctx)
        return
    if kind in JDBC_CONNECTIONS:
        table = options.get("dbtable")
        if not table:
            raise SourceError("connection_options needs 'dbtable' for a JDBC target")
        append_jdbc(gc, df, database(gc, options, kind), table, ctx)
        return
    raise SourceError(f"connection_type {connection_type!r} is not supported for writing")


def _write_files(
    gc: GlueContext,
    df: DataFrame,
    options: dict,
    format: str | None,
    format_options: dict | None,
    catalog_target: tuple[str, str] | None,
    ctx: str,
) -> None:
    path = options.get("path")
    if not path:
        raise SourceError("connection_options needs 'path' for a file target")
    fmt = (format or "json").lower()
    spark_fmt = "parquet" if fmt == "glueparquet" else fmt
    if spark_fmt not in FILE_FORMATS:
        raise SourceError(f"unsupported output format {fmt!r}")
    if spark_fmt != "parquet":
        df = variants_as_json(df)
    keys = list(options.get("partitionKeys") or [])
    sink = FileSink(
        path,
        fmt=spark_fmt,
        partition_by=tuple(keys),
        options=formats.translate(formats.WRITE, spark_fmt, dict(format_options or {})),
        ctx=ctx or None,
    )
    # With a ctx in a run, exactly-once: staged now, published when the job commits.
    write_sink(sink, df, gc.run)
    target = catalog_target or (
        (options.get("catalogDatabase"), options.get("catalogTableName"))
        if options.get("catalogTableName")
        else None
    )
    if parse_bool("enableUpdateCatalog", options.get("enableUpdateCatalog", False)) and target:
        database_name, table_name = target
        if not database_name or not table_name:
            raise SourceError("enableUpdateCatalog needs catalogDatabase and catalogTableName")
        gc.hive_catalog().record_write(
            df,
            database_name,
            table_name,
            path,
            spark_fmt,
            keys,
            str(options.get("updateBehavior", "UPDATE_IN_DATABASE")),
        )


class DynamicFrameWriter:
    """``glueContext.write_dynamic_frame`` (and ``write_data_frame``)."""

    def __init__(self, gc: GlueContext):
        self._gc = gc

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
        write(
            self._gc,
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
        resolved = self._gc.connections.resolve(catalog_connection)
        target = jdbc_keys.parse_database(resolved.url, resolved.user, resolved.password)
        table = options.get("dbtable")
        if not table:
            raise SourceError("from_jdbc_conf needs connection_options['dbtable']")
        append_jdbc(
            self._gc,
            frame.toDF() if isinstance(frame, DynamicFrame) else frame,
            target,
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
        table = self._gc.catalog_store().table(database, table_name)
        keys = options.get("partitionKeys") or [c.name for c in table.partition_keys]
        write(
            self._gc,
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


class DataSink:
    """``glueContext.getSink(...)``: ``setFormat``, ``setCatalogInfo``, ``writeFrame``."""

    def __init__(
        self, gc: GlueContext, connection_type: str, options: dict, fmt: str | None, transformation_ctx: str
    ):
        self._gc, self._type, self._options = gc, connection_type, options
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
        write(
            self._gc,
            dynamic_frame,
            self._type,
            self._options,
            self._format,
            self._format_options,
            ctx=self._tctx,
        )
        return dynamic_frame
