"""File sources: read exactly the files a run's plan chose (engine/fileplan.py) with Spark."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from .. import spark_lines
from ..engine import fileplan
from ..engine.appends import plan_appends
from ..engine.faults import crash_when
from ..engine.increment import FileSourceOptions
from ..engine.listing import ListedFile
from ..engine.manifest import manifest_path, private_parent, quarantine_path, write_manifest
from ..engine.names import some_of
from ..engine.storage import require_s3a, spark_base_path, spark_path
from ..errors import ArgumentError, SourceError
from .base import ReadContext, SourceOutcome

log = logging.getLogger("sparkmark.sources.files")

FORMATS = ("csv", "json", "parquet", "orc", "xml", "text", "avro")
SOURCE_FILE = "_sm_source_file"  # beside malformed records: the file they came from


def struct_from_ddl(ddl: str) -> StructType:
    """A schema given as DDL (``"id BIGINT, name STRING"``)."""
    schema = spark_lines.struct_from_ddl(ddl)
    if not isinstance(schema, StructType):
        raise SourceError(f"schema {ddl!r} is not a list of columns, e.g. 'id BIGINT, name STRING'")
    return schema


def read_selected(
    spark: SparkSession,
    files: list[ListedFile],
    *,
    fmt: str,
    spark_options: dict[str, Any],
    schema: StructType | str | None,
    empty_schema: StructType | None,
    root_columns: dict[str, dict[str, str]] | None = None,
    corrupt_column: str | None = None,
    folder_columns: bool = True,
) -> DataFrame:
    """Read exactly ``files`` with Spark, keeping Hive partition columns of each root
    (``key=value`` folders below it) unless ``folder_columns`` is false.

    ``root_columns`` maps a root (as listed) to constant columns for its files: the
    values of a catalog partition whose folder is that root. ``corrupt_column`` (JSON
    and CSV) makes sure malformed records arrive in that column, with the path of
    their file in ``SOURCE_FILE``."""
    if not files:
        if isinstance(schema, str):
            schema = struct_from_ddl(schema)
        return spark.createDataFrame([], schema or empty_schema or StructType([]))
    if fmt == "xml" and not spark_lines.XML_SOURCE:
        raise SourceError(spark_lines.needs_spark4("format xml (Spark's own XML source)"))
    if fmt == "avro":
        from .avro import read_avro

        by_root: dict[str, list[tuple[str, str]]] = {}
        for f in files:
            by_root.setdefault(f.root, []).append((f.url, f.root))
        parts = []
        for root, pairs in by_root.items():
            parts.append(_with_root_columns(read_avro(spark, pairs), root, root_columns))
        return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    # Spark drops files that sit beside partition folders when both are read in one
    # load, so files are grouped by root and by the partition columns of their folder.
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for f in files:
        groups.setdefault((f.root, partition_columns(f)), []).append(spark_path(f.url))
    frames = []
    for (root, _columns), group in groups.items():
        require_s3a(spark, root)
        reader = spark.read.format(fmt)
        for key, value in spark_options.items():
            reader = reader.option(key, value)
        if folder_columns:
            reader = reader.option("basePath", spark_base_path(root))
        group_schema = struct_from_ddl(schema) if isinstance(schema, str) else schema
        if corrupt_column is not None and (group_schema is not None or fmt == "csv"):
            # JSON inference adds the column only when it met a malformed record; CSV
            # never does, and a given schema must be told about it.
            if group_schema is None:
                group_schema = reader.load(group).schema
            if corrupt_column not in group_schema.fieldNames():
                group_schema = StructType(group_schema.fields + [StructField(corrupt_column, StringType())])
        if group_schema is not None:
            reader = reader.schema(group_schema)
        frame = reader.load(group)
        if corrupt_column is not None and corrupt_column in frame.columns:
            frame = frame.withColumn(SOURCE_FILE, F.col("_metadata.file_path"))
        frames.append(_with_root_columns(frame, root, root_columns))
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def _with_root_columns(
    frame: DataFrame, root: str, root_columns: dict[str, dict[str, str]] | None
) -> DataFrame:
    for name, value in ((root_columns or {}).get(root) or {}).items():
        frame = frame.withColumn(name, F.lit(value))
    return frame


def partition_columns(f: ListedFile) -> tuple[str, ...]:
    """The Hive partition column names in a file's folder path below its root."""
    relative = f.dir[len(f.root) :].strip("/")
    return tuple(part.split("=", 1)[0] for part in relative.split("/") if "=" in part)


def _ignores_corrupt_files(options: Mapping[str, Any]) -> bool:
    return any(k.lower() == "ignorecorruptfiles" and str(v).lower() == "true" for k, v in options.items())


# ---------------------------------------------------------------- the file source

BAD_RECORDS = ("quarantine", "fail", "keep")  # what a read does with malformed JSON/CSV
CORRUPT_RECORD = "_corrupt_record"


class FileSource:
    """Files under ``paths``: the ones this run must process, as Glue's bookmark picks
    them (new or modified since the state ``ctx`` committed, within band and bounds).

    ``options`` take Glue's file options (the table in ``engine.options``),
    ``bad_records`` and any Spark reader option. Read outside a run, it reads every
    file and quarantines nothing (malformed records are kept, as Spark keeps them).
    """

    def __init__(
        self,
        paths: str | Sequence[str],
        *,
        format: str = "json",
        ctx: str | None = None,
        schema: StructType | str | None = None,
        path_columns: Mapping[str, Mapping[str, str]] | None = None,
        options: Mapping[str, Any] | None = None,
        folder_columns: bool = True,
        folder_filter: str | None = None,
    ):
        """``folder_columns=False`` reads no column from ``key=value`` folder names (Glue's
        ``from_options``); ``folder_filter`` is then a predicate over those folder values
        that picks rows before the folder columns are left out."""
        self.fmt = format.lower()
        if self.fmt not in FORMATS:
            raise SourceError(f"unsupported format {format!r}; use one of {', '.join(FORMATS)}")
        self.ctx = ctx
        self.paths = fileplan.as_path_list(paths)
        self.schema = schema
        self.folder_columns = folder_columns
        self.folder_filter = folder_filter or None
        self.path_columns = {fileplan.root_url(p): dict(c) for p, c in (path_columns or {}).items()}
        remaining = dict(options or {})
        self.bad_records = str(remaining.pop("bad_records", "quarantine")).lower()
        if self.bad_records not in BAD_RECORDS:
            raise ArgumentError(
                f"bad_records must be one of {', '.join(BAD_RECORDS)}, got {self.bad_records!r}"
            )
        self.options, self.spark_options = FileSourceOptions.split(remaining)

    def describe(self) -> str:
        return ", ".join(self.paths)

    def _plan(self, context: ReadContext) -> fileplan.FilePlan:
        ctx, store = context.bookmark_ctx, context.store
        if ctx is None or store is None or context.job_name is None:
            return fileplan.plan_files(
                self.paths,
                self.options,
                ctx=ctx,
                processed=None,
                known_dirs=None,
                high_water_ms=None,
                now_ms=fileplan.now_ms(),
            )
        if context.range is not None:
            lower, upper = context.range
            return fileplan.plan_range(
                self.paths,
                self.options,
                ctx=ctx,
                upper=store.processed_files(context.job_name, ctx, upper.lineage),
                lower=store.processed_files(context.job_name, ctx, lower.lineage),
            )
        return fileplan.plan_bookmarked(
            store,
            context.job_name,
            ctx,
            self.paths,
            self.options,
            lineage=context.lineage,
            previous=context.previous,
            now_ms=fileplan.now_ms(),
        )

    def _say_modified(self, plan: fileplan.FilePlan, context: ReadContext) -> None:
        """A WARN line for each file changed since it was read, naming the run that read
        it; with modifiedFiles=fail, the run stops here, before reading anything."""
        earlier = plan.increment.earlier
        if not earlier:
            return
        runs: dict[int, str] = {}
        for url, entry in sorted(earlier.items()):
            version = entry.version
            if version is not None and version not in runs and context.store is not None:
                found = context.store.get_version(context.job_name or "", version)
                runs[version] = (found.run_id if found else None) or f"bookmark version {version}"
            previous = runs.get(version, "an earlier run") if version is not None else "an earlier run"
            policy = self.options.modified_files
            then = {
                "reprocess": "it is read whole again (modifiedFiles=reprocess, Glue's rule), so rows "
                "read before are read twice; use modifiedFiles=new-bytes for append-only files",
                "new-bytes": "only the bytes past those read are read, if the rest is unchanged",
                "fail": "the run stops (modifiedFiles=fail)",
            }[policy]
            log.warning(
                "job %s ctx %s: file %s changed since %s read it (%d -> %d bytes): %s",
                context.job_name,
                self.ctx,
                url,
                previous,
                entry.size,
                next((f.size for f in plan.increment.selected if f.url == url), -1),
                then,
            )
        if self.options.modified_files == "fail":
            shown = some_of(sorted(earlier))
            raise SourceError(
                f"source {self.ctx}: {len(earlier)} file(s) changed since they were read ({shown}) and "
                "modifiedFiles=fail; nothing was read. Replace them with new files, or choose "
                "modifiedFiles=reprocess or new-bytes"
            )

    def read(self, context: ReadContext) -> SourceOutcome:
        spark_options = dict(self.spark_options)
        # Quarantine needs a run to file the records under; outside one they are kept.
        bad_records = self.bad_records if context.in_run else "keep"
        corrupt_column = None
        if self.fmt in ("json", "csv") and "mode" not in {k.lower() for k in spark_options}:
            if bad_records == "fail":
                spark_options["mode"] = "FAILFAST"
            elif context.in_run:
                corrupt_column = spark_options.setdefault("columnNameOfCorruptRecord", CORRUPT_RECORD)
        plan = self._plan(context)
        plan.log_partitions()
        self._say_modified(plan, context)
        to_read, digests, appended = plan.increment.selected, None, None
        root_columns = self.path_columns
        if self.options.modified_files == "new-bytes" and context.bookmark_ctx is not None and context.in_run:
            appended = plan_appends(
                plan.increment.selected,
                plan.increment.earlier,
                temp_dir=context.temp_dir or "",
                job_name=context.job_name or "",
                run_id=context.run_id or "",
                ctx=context.bookmark_ctx,
                csv_header=self.fmt == "csv"
                and str(self.spark_options.get("header", "false")).lower() == "true",
            )
            to_read, digests = appended.to_read, appended.digests
            root_columns = {**root_columns, **{t: root_columns.get(o, {}) for t, o in appended.roots.items()}}
            for url, why in appended.reread.items():
                log.warning(
                    "job %s ctx %s: file %s is read whole again: %s", context.job_name, self.ctx, url, why
                )

        manifest = None
        if self.ctx is not None and context.in_run:
            manifest = manifest_path(
                context.temp_dir or "", context.job_name or "", context.run_id or "", self.ctx
            )
            write_manifest(manifest, plan.increment.selected)

        # A 0-byte file holds no rows; Parquet, ORC and Avro readers cannot open one (the
        # whole read would fail), so it is left out of Spark's read, counted, said, and
        # recorded as read like any other: the bookmark passes it.
        empty = [f for f in to_read if f.size == 0]
        if empty:
            shown = some_of([f.url for f in empty])
            log.warning(
                "job %s ctx %s: %d empty file(s) (0 bytes) have no rows and are recorded as read: %s",
                context.job_name,
                self.ctx,
                len(empty),
                shown,
            )
            if self.fmt in ("parquet", "orc", "avro"):
                to_read = [f for f in to_read if f.size > 0]
        stored_schema = context.previous.get("schema")
        spark = context.spark
        crash_when("reading", lambda: bool(spark.sparkContext.statusTracker().getActiveJobsIds()))
        df = read_selected(
            spark,
            to_read,
            fmt=self.fmt,
            spark_options=spark_options,
            schema=self.schema,
            empty_schema=StructType.fromJson(json.loads(stored_schema)) if stored_schema else None,
            root_columns=root_columns,
            corrupt_column=corrupt_column if bad_records == "quarantine" else None,
            folder_columns=self.folder_columns or self.folder_filter is not None,
        )
        if not self.folder_columns and self.folder_filter is not None and to_read:
            df = df.where(self.folder_filter).drop(*{n for f in to_read for n in partition_columns(f)})
        metrics = plan.metrics()
        metrics["files_empty"] = len(empty)
        if _ignores_corrupt_files(spark_options) and to_read:
            # Spark skips a corrupt file without a word under this option: count the files
            # that gave no row (unreadable, or empty of rows) so the run says so.
            read_paths = {r[0] for r in df.select(F.input_file_name()).distinct().collect()}
            silent = [f.url for f in to_read if f.size > 0 and spark_path(f.url) not in read_paths]
            metrics["files_without_rows"] = len(silent)
            for url in silent:
                log.warning(
                    "job %s ctx %s: file %s gave no rows (ignoreCorruptFiles: unreadable, or no rows)",
                    context.job_name,
                    self.ctx,
                    url,
                )
        if appended is not None:
            metrics["files_appended"] = len(appended.appended)
            metrics["bytes_appended"] = sum(appended.appended.values())
            metrics["bytes_read"] = sum(f.size for f in to_read)
        if bad_records == "quarantine" and corrupt_column is not None and corrupt_column in df.columns:
            df = self._quarantine(df, corrupt_column, context, metrics)
        metrics["manifest"] = manifest
        commit = None
        if context.bookmark_ctx is not None and context.commit_state:
            commit = fileplan.ctx_commit(
                plan,
                previous=context.previous,
                schema_json=df.schema.json() if plan.increment.selected else None,
                run_id=context.run_id or "",
                digests=digests,
            )
        return SourceOutcome(df, commit, metrics)

    def _quarantine(
        self, df: DataFrame, column: str, context: ReadContext, metrics: dict[str, Any]
    ) -> DataFrame:
        """Set malformed records aside, with their file, under the run's TempDir; the
        rest goes on. The records count as processed: the bookmark passes them."""
        # Spark refuses to filter raw JSON/CSV on the corrupt column alone, so the records are
        # read once and kept. As rows (a local checkpoint), not in Spark's columnar cache:
        # that cache sets aside a buffer per column before it holds a row, which for a
        # CSV of 10,000 columns is more than a default driver's heap.
        df = df.localCheckpoint(eager=True)
        bad = df.filter(F.col(column).isNotNull())
        count = bad.count()
        metrics["records_quarantined"] = count
        if count:
            where = quarantine_path(
                context.temp_dir or "", context.job_name or "", context.run_id or "", self.ctx or "no_ctx"
            )
            private_parent(f"{where}/part")  # 0700 folders before Spark writes the records
            bad.select(F.col(SOURCE_FILE).alias("file"), F.col(column).alias("record")).write.mode(
                "append"
            ).json(spark_base_path(where))
            metrics["quarantine"] = where
            log.warning(
                "job %s ctx %s: %d malformed records set aside in %s (file, record); "
                "the rest of their files is read",
                context.job_name,
                self.ctx,
                count,
                where,
            )
        return df.filter(F.col(column).isNull()).drop(column, SOURCE_FILE)
