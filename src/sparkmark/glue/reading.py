"""Glue's readers (``create_dynamic_frame``, ``create_data_frame``, ``getSource``)
translated onto sparkmark's sources: a ``connection_type`` and its options become a
file, JDBC or stream source, read through ``runtime.read_source`` in the context's run
(or in full, with none)."""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from .. import spark_lines
from ..catalog.models import GLUE_KEY
from ..engine import jdbc as jdbc_keys
from ..engine.options import OPTION_NAMES, parse_bool
from ..errors import SourceError
from ..runtime import read_source
from ..sources.files import FileSource
from ..sources.grok import GrokPattern
from ..sources.jdbc import JdbcRequest, JdbcSource, apply_type_mapping, type_mapping
from ..sources.json_path import parse_path
from ..sources.registry import (
    STREAM_CONNECTION_TYPES,
    SourceKind,
    made_from_options,
    stream_accepts,
    stream_source,
)
from . import choice, formats

if TYPE_CHECKING:
    from .context import GlueContext
    from .dynamicframe import DynamicFrame

log = logging.getLogger("sparkmark.glue")

FILE_CONNECTIONS = ("s3", "file", "local")
JDBC_CONNECTIONS = jdbc_keys.CONNECTION_TYPES
CUSTOM_JDBC = ("custom.jdbc", "marketplace.jdbc")  # Glue's JDBC connectors: any driver, by URL
REDSHIFT_NOTE = (
    "redshift: reading and writing over plain JDBC through the named connection; Redshift's "
    "UNLOAD/COPY path through redshift_tmp_dir is not used"
)


def file_options(options: dict) -> dict:
    """Glue's file-source options among ``options`` (the engine's one table of them)."""
    return {k: options[k] for k in OPTION_NAMES if k in options}


def bookmark_keys(options: dict) -> list[str] | None:
    """``jobBookmarkKeys``: a list, a JSON list, or one column's name."""
    keys = options.get("jobBookmarkKeys")
    if isinstance(keys, str):
        return json.loads(keys) if keys.strip().startswith("[") else [keys]
    return keys


def read_stream(gc: GlueContext, connection_type: str, options: dict, ctx: str) -> DataFrame:
    """Glue's streaming sources: a DataFrame whose micro-batches forEachBatch processes."""
    source = stream_source(
        connection_type, options, ctx=ctx or None, connections=gc.connections, settings=gc.settings
    )
    return read_source(gc.spark_session, source, gc.run)


def read_files(
    gc: GlueContext,
    paths: list[str],
    fmt: str | None,
    options: dict,
    format_options: dict,
    ctx: str | None,
    push_down_predicate: str | None = None,
    text_csv: bool = False,
) -> tuple[DataFrame, bool]:
    """Read files through the run's bookmark when there is one. With ``text_csv`` (a
    DynamicFrame's read) a CSV's fields are text, an empty one ``""``, as Glue reads them. Returns the frame and
    whether its JSON needs choice typing."""
    fmt = (fmt or "json").lower()
    spark_opts: dict[str, Any] = {}
    for key in options:
        if key in formats.ACCEPTED_NO_OP:
            log.info("connection option %s is accepted; Spark sizes its own input splits", key)
    json_records = False
    json_path = None
    spark_opts.update(formats.translate(formats.READ, fmt, format_options))
    if fmt == "csv":
        spark_fmt = "csv"
    elif fmt == "json":
        json_path = parse_path(format_options["jsonPath"]) if format_options.get("jsonPath") else None
        multiline = parse_bool(
            "multiline", format_options.get("multiline", format_options.get("multiLine", False))
        )
        spark_fmt = "text"
        if multiline or json_path is not None:
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
    if gc.run is None and ctx:
        log.warning(
            "source %s has transformation_ctx %r but Job.init() was not called: "
            "it is read in full and not bookmarked",
            ", ".join(paths),
            ctx,
        )
    # Glue's from_options adds no column for key=value folders; AWS's page on managing
    # partitions sends readers who want them to from_catalog. A push_down_predicate still
    # picks rows by those folders' values.
    source = FileSource(
        paths,
        format=spark_fmt,
        ctx=ctx or None,
        options={**file_options(options), **spark_opts},
        folder_columns=False,
        folder_filter=push_down_predicate or None,
    )
    df = read_source(gc.spark_session, source, gc.run)
    if json_path is not None:
        df = json_path.select(df)
    if spark_fmt == "csv" and spark_opts.get("header") != "true":
        df = glue_column_names(df)
    if spark_fmt == "csv" and text_csv:
        # The file's fields, as text (from_options adds no folder column).
        df = choice.text_fields(df, [f.name for f in df.schema.fields if f.dataType == StringType()])
    return df, json_records


def glue_column_names(df: DataFrame) -> DataFrame:
    """A CSV read without a header names its columns as Glue's reader does: ``col0``,
    ``col1`` … where Spark's says ``_c0``, ``_c1`` …"""
    renamed = {c: "col" + c[2:] for c in df.columns if re.fullmatch(r"_c\d+", c)}
    taken = set(df.columns) - set(renamed)
    if not renamed or taken & set(renamed.values()):
        return df  # a column of the file's own is called colN: leave Spark's names
    return df.withColumnsRenamed(renamed)


def to_records(df: DataFrame, json_records: bool) -> tuple[DataFrame, DataFrame | None]:
    """Typed records and the error records of rows that were not JSON records."""
    if not json_records or "value" not in df.columns:
        return df, None
    keep = [c for c in df.columns if c != "value"]
    # A document that is an array holds records: each element is one. Decided row by
    # row (a cheap test of the first character, then a parse of only those rows), so no
    # Spark job looks at the input first. An array that is not valid JSON stays whole, to
    # become an error record.
    elements = spark_lines.json_array_elements("value")
    records = F.when(F.ltrim("value").startswith("["), F.coalesce(elements, F.array("value"))).otherwise(
        F.array("value")
    )
    lines = df.where(F.length(F.trim("value")) > 0).select(F.explode(records).alias("value"), *keep)
    return choice.parse_records(lines, "value", keep)


def database(gc: GlueContext, options: dict, connection_type: str) -> jdbc_keys.Database:
    """The database the options name: their url/user/password, or a named connection's
    (``connectionName``, with ``useConnectionProperties`` or no url of their own)."""
    url, user, password = options.get("url"), options.get("user"), options.get("password")
    name = options.get("connectionName")
    if name and (
        parse_bool("useConnectionProperties", options.get("useConnectionProperties", False)) or not url
    ):
        resolved = gc.connections.resolve(str(name))
        url, user, password = url or resolved.url, user or resolved.user, password or resolved.password
    if not url:
        raise SourceError(
            f"connection_type {connection_type!r} needs connection_options['url'] or 'connectionName'"
        )
    found = jdbc_keys.parse_database(url, user, password)
    expected = JDBC_CONNECTIONS.get(connection_type)
    if expected is not None and found.dialect.name != expected:
        raise SourceError(f"url {found.display} is not a {connection_type} URL")
    return found


def _read_request(gc: GlueContext, request: JdbcRequest, ctx: str | None) -> DataFrame:
    if gc.run is not None:
        gc.run.add_database(request.database)
    elif ctx:
        log.warning(
            "source %s %s has transformation_ctx %r but Job.init() was not called: "
            "it is read in full and not bookmarked",
            request.database.display,
            request.table or "(query)",
            ctx,
        )
    return read_source(gc.spark_session, JdbcSource(request, ctx=ctx or None), gc.run)


def read_jdbc(gc: GlueContext, connection_type: str, options: dict, ctx: str | None) -> DataFrame:
    if connection_type == "redshift":
        log.info(REDSHIFT_NOTE)
        return read_custom_jdbc(gc, connection_type, options, ctx)
    if connection_type in CUSTOM_JDBC:
        return read_custom_jdbc(gc, connection_type, options, ctx)
    if connection_type not in JDBC_CONNECTIONS:
        raise SourceError(
            f"connection_type {connection_type!r} is not supported: use s3, dynamodb, postgresql, mysql, "
            "sqlite, or custom.jdbc with a driver on Spark's classpath"
        )
    request = JdbcRequest.build(
        database(gc, options, connection_type),
        table=options.get("dbtable"),
        query=None,
        keys=bookmark_keys(options),
        keys_sort_order=options.get("jobBookmarkKeysSortOrder", "asc"),
        hashfield=options.get("hashfield"),
        hashexpression=options.get("hashexpression"),
        hashpartitions=int(options.get("hashpartitions", 7)),
        lag=None,
        on_null_key="raise",
    )
    return _read_request(gc, request, ctx)


def read_custom_jdbc(gc: GlueContext, connection_type: str, options: dict, ctx: str | None) -> DataFrame:
    """``custom.jdbc`` / ``marketplace.jdbc``: Glue's connector options over the same
    bookmarked JDBC read (``dbTable`` or ``query``, ``filterPredicate``,
    ``partitionColumn`` with ``numPartitions``)."""
    if options.get("className"):
        from ..spark import driver_class

        driver_class(gc.spark_session, (str(options["className"]),), connection_type)
    mapping = type_mapping(options.get("dataTypeMapping"))
    table, query = options.get("dbTable") or options.get("dbtable"), options.get("query")
    where = options.get("filterPredicate")
    if where:
        source = f"({query}) sm_q" if query else table
        query, table = f"SELECT * FROM {source} WHERE {where}", None
    keys = bookmark_keys(options)
    partition = options.get("partitionColumn")
    request = JdbcRequest.build(
        database(gc, options, connection_type),
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
    df = _read_request(gc, request, ctx)
    return apply_type_mapping(df, mapping) if mapping else df


def read_registered(gc: GlueContext, kind: SourceKind, options: dict, ctx: str | None) -> DataFrame:
    """A source of a kind the registry makes from Glue's options, read for the context's run."""
    made = kind.make(options, ctx=ctx or None, connections=gc.connections, settings=gc.settings)
    return read_source(gc.spark_session, made, gc.run)


def from_options(
    gc: GlueContext,
    connection_type: str,
    connection_options: dict,
    format: str | None,
    format_options: dict | None,
    transformation_ctx: str,
    push_down_predicate: str | None = None,
    text_csv: bool = False,
) -> tuple[DataFrame, bool]:
    kind = (connection_type or "").lower()
    options = dict(connection_options or {})
    if kind in STREAM_CONNECTION_TYPES:
        raise SourceError(
            f"{kind} is a streaming source: read it with glueContext.create_data_frame.from_options "
            "and process it with glueContext.forEachBatch"
        )
    if kind in FILE_CONNECTIONS and (format or "").lower() in ("delta", "iceberg", "hudi"):
        return read_table_by_path(gc, options, (format or "").lower(), transformation_ctx), False
    registered = made_from_options(kind)
    if registered is not None:  # a kind the registry makes from Glue's options
        return read_registered(gc, registered, options, transformation_ctx), False
    if kind in FILE_CONNECTIONS:
        paths = options.get("paths") or ([options["path"]] if "path" in options else [])
        if not paths:
            raise SourceError("connection_options needs 'paths' (a list of folders or files)")
        return read_files(
            gc,
            list(paths),
            format,
            options,
            dict(format_options or {}),
            transformation_ctx,
            push_down_predicate,
            text_csv=text_csv,
        )
    return read_jdbc(gc, kind, options, transformation_ctx), False


def read_table_by_path(gc: GlueContext, options: dict, fmt: str, ctx: str) -> DataFrame:
    """``format="delta"`` at a path: the Delta table there, bookmarked by version with a
    ctx in a run (``sources/delta.py``). Iceberg is read through its catalog."""
    from ..sources.delta import DeltaSource
    from ..table_formats import UNAVAILABLE

    if fmt in UNAVAILABLE:
        raise SourceError(f"format {fmt!r}: {UNAVAILABLE[fmt]}")
    if fmt == "iceberg":
        raise SourceError(
            "format 'iceberg' is read through its catalog: use create_data_frame.from_catalog or "
            "spark.table('glue_catalog.db.table')"
        )
    paths = options.get("paths") or ([options["path"]] if "path" in options else [])
    if len(paths) != 1:
        raise SourceError("a Delta table is read from one path: connection_options={'path': 's3://…/table/'}")
    return read_source(gc.spark_session, DeltaSource(str(paths[0]).rstrip("/"), ctx=ctx or None), gc.run)


def stream_table(gc: GlueContext, database: str, table_name: str, options: dict) -> tuple[str, dict] | None:
    """A streaming catalog table (``typeOfData`` kafka or kinesis, as Glue keeps it):
    its connection options, with the table's columns as the records' schema."""
    table = gc.catalog_store().table(database.lower(), table_name.lower())
    kind = str(table.parameters.get("typeOfData", "")).lower()
    if kind not in STREAM_CONNECTION_TYPES:
        return None
    from_table = {
        k: v
        for k, v in table.parameters.items()
        if k not in ("typeOfData", "classification") and stream_accepts(kind, k)
    }
    merged = {"classification": table.classification, **from_table, **options}
    reference = schema_reference(table)
    if reference is not None:
        merged.update(registry_decoding(gc, reference, table))
    infer = parse_bool("inferSchema", options.get("inferSchema", False))
    if table.columns and "schema" not in merged and not infer:
        merged["schema"] = ", ".join(f"`{c.name}` {c.type}" for c in table.columns)
    return kind, merged


def schema_reference(table) -> dict | None:
    """The table's ``StorageDescriptor.SchemaReference`` (a Glue Schema Registry schema
    its records are written with), as CreateTable gave it."""
    try:
        extra = json.loads(table.parameters.get(GLUE_KEY, "{}"))
    except ValueError:
        return None
    return (extra.get("StorageDescriptor") or {}).get("SchemaReference") or None


JSON_SCHEMA_TYPES = {"string": "string", "integer": "bigint", "number": "double", "boolean": "boolean"}


def registry_decoding(gc: GlueContext, reference: dict, table) -> dict[str, str]:
    """Options that decode a stream's registry-encoded records: read as the version the
    reference names (or the latest), from any version of the schema."""
    from ..catalog.schema_registry import SchemaRegistryStore
    from ..sources import registry_records

    schema, reader, versions = SchemaRegistryStore(gc.catalog_store().state).reference(reference)
    writers = {v.version_id: v.definition for v in versions}
    options = {
        registry_records.OPTION: registry_records.plan(schema.data_format, reader.definition, writers),
        "classification": "avro" if schema.data_format == "AVRO" else "json",
    }
    if schema.data_format == "JSON" and not table.columns:
        properties = json.loads(reader.definition).get("properties") or {}
        options["schema"] = ", ".join(
            f"`{name}` {JSON_SCHEMA_TYPES.get(str(spec.get('type')), 'string')}"
            for name, spec in properties.items()
        )
    return options


def from_catalog(
    gc: GlueContext,
    database: str,
    table_name: str,
    push_down_predicate: str,
    options: dict,
    ctx: str,
    text_csv: bool = False,
) -> tuple[DataFrame, bool]:
    """A catalog table's new data. With ``text_csv`` (a DynamicFrame's read) a CSV table's
    columns are read as text and given the catalog's types, a column holding values that
    do not convert becoming a choice of the catalog's type and string, as Glue's
    DynamicFrame reads one (the crawler typed it from a sample)."""
    from ..catalog.reading import read_table

    database, table_name = database.lower(), table_name.lower()  # Glue's names are case-insensitive
    predicates = [push_down_predicate, options.get("catalogPartitionPredicate", "")]
    store = gc.catalog_store()
    found = store.table(database, table_name)
    classification = found.classification
    if classification == "iceberg":  # beyond Glue: bookmarked by snapshot
        return read_iceberg(gc, database, table_name, ctx), False
    if classification == "delta":  # beyond Glue: bookmarked by version
        from ..sources.delta import DeltaSource

        return read_source(gc.spark_session, DeltaSource(found.location, ctx=ctx or None), gc.run), False
    registered = made_from_options(classification)
    if registered is not None:  # a table of a kind the registry makes: its parameters are its options
        given = {**found.parameters, "location": found.location, **options}
        return read_registered(gc, registered, given, ctx), False
    if found.parameters.get("connectionName"):  # a crawled JDBC table
        resolved = gc.connections.resolve(found.parameters["connectionName"])
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
        return read_jdbc(gc, kind, jdbc_options, ctx), False
    # A custom classifier's table: grok lines, or JSON records under a path in each document
    grok = found.parameters.get("input.format")
    json_path = parse_path(found.parameters["jsonPath"]) if found.parameters.get("jsonPath") else None
    fmt = "text" if classification == "json" or grok else classification
    spark_opts = (
        {"wholetext": "true"}
        if classification == "json"
        and (json_path is not None or parse_bool("multiline", options.get("multiline", False)))
        else {}
    )
    file_opts = file_options(options)

    as_text = text_csv and classification == "csv"

    def reader(paths, fmt_, columns, table_options):
        merged = {**table_options, **spark_opts, **file_opts}
        schema = merged.pop("schema", None)
        if as_text:
            schema = ", ".join(f"`{c.name.replace('`', '``')}` string" for c in found.columns)
        source = FileSource(
            paths, format=fmt_, ctx=ctx or None, schema=schema, path_columns=columns, options=merged
        )
        return read_source(gc.spark_session, source, gc.run)

    df, _table, _n = read_table(
        gc.spark_session, store, f"{database}.{table_name}", predicates, reader, fmt=fmt
    )
    if as_text:
        df = choice.type_by_catalog(df, {c.name: c.type for c in found.columns if c.name in df.columns})
    if grok:
        return GrokPattern.compile(grok, found.parameters.get("input.grokCustomPatterns")).read(df), False
    if json_path is not None and classification == "json":
        df = json_path.select(df)
    return df, classification == "json"


def iceberg_table_name(gc: GlueContext, database: str, table_name: str, doing: str = "reading") -> str:
    """A catalog's Iceberg table as the session's Iceberg catalog over the Glue catalog
    (the one whose ``catalog-impl`` is GlueCatalog) names it, or one line saying how to
    declare that catalog."""
    from ..table_formats import GLUE_CATALOG, glue_catalogs

    names = glue_catalogs(gc.spark_session.sparkContext.getConf().getAll())
    if not names:
        raise SourceError(
            f"{database}.{table_name} is an Iceberg table: {doing} it needs an Iceberg catalog over the Glue "
            "catalog (--datalake-formats iceberg and --conf spark.sql.catalog.glue_catalog="
            "org.apache.iceberg.spark.SparkCatalog --conf spark.sql.catalog.glue_catalog.catalog-impl="
            f"{GLUE_CATALOG}, as AWS's Iceberg page gives them)"
        )
    return f"{names[0]}.{database}.{table_name}"


def read_iceberg(gc: GlueContext, database: str, table_name: str, ctx: str | None) -> DataFrame:
    """An Iceberg table of the catalog; with a ctx in a run, only the snapshots committed
    since the bookmark (``sources/iceberg.py``)."""
    from ..sources.iceberg import IcebergSource

    source = IcebergSource(iceberg_table_name(gc, database, table_name), ctx=ctx or None)
    return read_source(gc.spark_session, source, gc.run)


class DataFrameReader:
    """``glueContext.create_data_frame``: streams for kafka and kinesis."""

    def __init__(self, gc: GlueContext):
        self._gc = gc

    def from_options(
        self,
        connection_type: str,
        connection_options: dict | None = None,
        format: str | None = None,
        format_options: dict | None = None,
        transformation_ctx: str = "",
        **kwargs,
    ) -> DataFrame:
        if (connection_type or "").lower() in STREAM_CONNECTION_TYPES:
            options = dict(connection_options or {})
            if format and "classification" not in options:
                options["classification"] = format
            return read_stream(self._gc, connection_type.lower(), options, transformation_ctx)
        df, json_records = from_options(
            self._gc, connection_type, connection_options or {}, format, format_options, transformation_ctx
        )
        records, bad = to_records(df, json_records)
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
        streaming = stream_table(self._gc, database, table_name, dict(additional_options or {}))
        if streaming is not None:
            kind, options = streaming
            return read_stream(self._gc, kind, options, transformation_ctx)
        df, json_records = from_catalog(
            self._gc,
            database,
            table_name,
            push_down_predicate,
            dict(additional_options or {}),
            transformation_ctx,
        )
        records, _bad = to_records(df, json_records)
        return records


class DataSource:
    """``glueContext.getSource(...)``: ``setFormat`` then ``getFrame``."""

    def __init__(
        self, gc: GlueContext, connection_type: str, options: dict, fmt: str | None, transformation_ctx: str
    ):
        self._gc, self._type, self._options = gc, connection_type, options
        self._format, self._tctx = fmt, transformation_ctx
        self._format_options: dict[str, Any] = {}

    def setFormat(self, format: str, **options) -> None:
        self._format, self._format_options = format, options

    def getFrame(self) -> DynamicFrame:
        return self._gc.create_dynamic_frame.from_options(
            self._type, self._options, self._format, self._format_options, self._tctx
        )
