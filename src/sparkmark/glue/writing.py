"""Glue's writers (``write_dynamic_frame``, ``write_data_frame``, ``getSink``)
translated onto sparkmark's sinks: a ``connection_type`` and its options become a
``FileSink`` or a ``JdbcSink``, written through ``runtime.write_sink`` in the context's
run (exactly-once with a transformation_ctx), or at once with none."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..engine import jdbc as jdbc_keys
from ..engine.options import parse_bool
from ..errors import SourceError
from ..runtime import write_sink
from ..sinks import registry as sink_registry
from ..sinks.files import NO_ROWS_KNOWN, FileSink
from ..sinks.jdbc import JdbcSink, split_actions
from ..sinks.tables import TableSink
from ..spark_lines import VariantType
from ..table_formats import UNAVAILABLE
from . import formats
from .reading import CUSTOM_JDBC, FILE_CONNECTIONS, JDBC_CONNECTIONS, REDSHIFT_NOTE, database

if TYPE_CHECKING:
    from .context import GlueContext
    from .dynamicframe import DynamicFrame

log = logging.getLogger("sparkmark.glue")

FILE_FORMATS = ("parquet", "orc", "json", "csv", "xml", "text", "avro")
# Text formats are compressed as the S3 connection option "compression" says (Glue's S3
# connection options); Parquet, ORC and Avro take theirs from format_options.
TEXT_FORMATS = ("json", "csv", "xml", "text")
TEXT_CODECS = ("none", "uncompressed", "gzip", "bzip2", "snappy", "lz4", "deflate", "zstd")


def variants_as_json(df: DataFrame) -> DataFrame:
    """CSV, XML and JDBC cannot hold VARIANT: unresolved choices are written as JSON text
    (JSON files take the value itself: a choice of long and string writes ``1`` or ``"a"``,
    as Glue writes it)."""
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
    options: dict | None = None,
) -> None:
    """Append through the staged JDBC sink. In a job run with a transformation_ctx the
    append is exactly-once: merged when the job commits. Glue's ``preactions`` and
    ``postactions`` run in the merge's transaction, before and after the rows."""
    given = options or {}
    sink = JdbcSink(
        target,
        table,
        mode="append",
        connection=connection,
        ctx=ctx or None,
        preactions=tuple(split_actions(given.get("preactions"))),
        postactions=tuple(split_actions(given.get("postactions"))),
    )
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
    df = frame if isinstance(frame, DataFrame) else frame.toDF()
    kind = (connection_type or "").lower()
    jdbc = kind in JDBC_CONNECTIONS or kind in CUSTOM_JDBC or kind == "redshift"
    if (kind in FILE_CONNECTIONS or jdbc) and (
        not df.columns or _asked_if_empty(gc, df, kind, format, ctx, options)
    ):
        # A run with nothing new: as on Glue, the write produces nothing and the run
        # goes on to commit (a frame with no field cannot even be written by Spark).
        log.info(
            "nothing to write to %s: the frame has no records", options.get("path") or options.get("dbtable")
        )
        return
    if kind in FILE_CONNECTIONS and (format or "").lower() in TABLE_FORMATS:
        _write_table_by_path(gc, df, options, format or "", ctx)
        return
    if kind in FILE_CONNECTIONS:
        _write_files(gc, df, options, format, format_options, catalog_target, ctx)
        return
    if jdbc:
        if kind == "redshift":
            log.info(REDSHIFT_NOTE)
        table = options.get("dbtable") or options.get("dbTable")
        if not table:
            raise SourceError("connection_options needs 'dbtable' for a JDBC target")
        append_jdbc(gc, df, database(gc, options, kind), table, ctx, options=options)
        return
    registered = sink_registry.by_connection_type(kind)
    if registered is not None:
        write_sink(registered.make(options, ctx=ctx), variants_as_json(df), gc.run)
        return
    raise SourceError(f"connection_type {connection_type!r} is not supported for writing")


def _asked_if_empty(
    gc: GlueContext, df: DataFrame, kind: str, format: str | None, ctx: str, options: dict
) -> bool:
    """Whether the frame has no records, when that must be known before the write. A
    staged file write finds out from the file Spark writes (``sinks.files``), without
    a Spark job of its own; JDBC, table formats, direct writes and writes that update
    the catalog ask first."""
    fmt = (format or "json").lower()
    fmt = "parquet" if fmt == "glueparquet" else fmt
    staged = gc.run is not None and bool(ctx) and kind in FILE_CONNECTIONS
    updates = parse_bool("enableUpdateCatalog", options.get("enableUpdateCatalog", False))
    if staged and fmt in NO_ROWS_KNOWN and not updates:
        return False
    return df.isEmpty()


TABLE_FORMATS = ("delta", "iceberg", "hudi")
# Glue's own options of a write, which are not the table format's
GLUE_WRITE_OPTIONS = ("path", "partitionKeys", "enableUpdateCatalog", "updateBehavior", "catalogDatabase",
                      "catalogTableName", "mode")  # fmt: skip


def format_options_of(options: dict) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in GLUE_WRITE_OPTIONS}


def _write_table_by_path(gc: GlueContext, df: DataFrame, options: dict, fmt: str, ctx: str) -> None:
    """``format="delta"`` to an S3 path: a Delta table there, appended to (created by the
    first write). Iceberg tables are written through their catalog; Hudi has no bundle."""
    fmt = fmt.lower()
    if fmt in UNAVAILABLE:
        raise SourceError(f"format {fmt!r}: {UNAVAILABLE[fmt]}")
    if fmt == "iceberg":
        raise SourceError(
            "format 'iceberg' is written through its catalog: use glueContext.write_data_frame.from_catalog "
            "(the table must exist) or Spark's writeTo('glue_catalog.db.table')"
        )
    path = options.get("path")
    if not path:
        raise SourceError("connection_options needs 'path' for a Delta target")
    sink = TableSink(
        "delta",
        path=str(path),
        mode=str(options.get("mode", "append")),
        partition_by=tuple(options.get("partitionKeys") or ()),
        options=format_options_of(options),
        ctx=ctx or None,
    )
    write_sink(sink, df, gc.run)


def write_table(
    gc: GlueContext, df: DataFrame, database: str, table_name: str, options: dict, ctx: str
) -> bool:
    """A catalog table in a table format (Iceberg through the session's catalog over the
    Glue catalog, Delta at its location), appended to; False for any other table."""
    from .reading import iceberg_table_name

    table = gc.catalog_store().table(database, table_name)
    if table.classification not in ("iceberg", "delta"):
        return False
    if not df.columns or df.isEmpty():
        log.info("nothing to write to %s.%s: the frame has no records", database, table_name)
        return True
    if table.classification == "iceberg":
        sink = TableSink(
            "iceberg",
            table=iceberg_table_name(gc, database, table_name, "writing"),
            mode=str(options.get("mode", "append")),
            options=format_options_of(options),
            ctx=ctx or None,
        )
    else:
        sink = TableSink(
            "delta",
            path=table.location,
            mode=str(options.get("mode", "append")),
            partition_by=tuple(options.get("partitionKeys") or [c.name for c in table.partition_keys]),
            options=format_options_of(options),
            ctx=ctx or None,
        )
    write_sink(sink, df, gc.run)
    return True


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
    if spark_fmt not in ("parquet", "json"):  # JSON writes a choice's value as it is: 1 or "a"
        df = variants_as_json(df)
    keys = list(options.get("partitionKeys") or [])
    writer_options = formats.translate(formats.WRITE, spark_fmt, dict(format_options or {}))
    if spark_fmt in TEXT_FORMATS and options.get("compression"):
        codec = str(options["compression"]).lower()
        if codec not in TEXT_CODECS:
            raise SourceError(
                f"compression {options['compression']!r} for {fmt} is not one of {', '.join(TEXT_CODECS)}"
            )
        writer_options["compression"] = codec
    target = catalog_target or (
        (options.get("catalogDatabase"), options.get("catalogTableName"))
        if options.get("catalogTableName")
        else None
    )
    updated: tuple[str, str] | None = None
    if parse_bool("enableUpdateCatalog", options.get("enableUpdateCatalog", False)) and target:
        database_name, table_name = target
        if not database_name or not table_name:
            raise SourceError("enableUpdateCatalog needs catalogDatabase and catalogTableName")
        updated = (database_name, table_name)
        df = gc.hive_catalog().conform(df, database_name, table_name, keys)
    sink = FileSink(path, fmt=spark_fmt, partition_by=tuple(keys), options=writer_options, ctx=ctx or None)
    # With a ctx in a run, exactly-once: staged now, published when the job commits.
    write_sink(sink, df, gc.run)
    if updated is not None:
        gc.hive_catalog().record_write(
            df,
            *updated,
            path,
            spark_fmt,
            keys,
            str(options.get("updateBehavior", "UPDATE_IN_DATABASE")),
        )


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
