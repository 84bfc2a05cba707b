"""One crawl: discover tables under each target, infer their schemas, apply the policies."""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import fsspec

from ..catalog.hive import HiveCatalog
from ..catalog.models import Column, Partition, Table
from ..connections import Connections
from ..engine.fileplan import root_url
from ..engine.globs import ExclusionMatcher
from ..engine.listing import FileLister, ListedFile, Listing
from ..engine.store import StateStore
from ..errors import SourceError
from . import csv_dialect
from .classifiers import Classifier, resolve
from .classify import JSON_DOCUMENT_BYTES, recognise
from .definition import CrawlerDefinition
from .definition import DeleteBehaviorKind as DeleteBehavior
from .definition import RecrawlBehaviorKind as RecrawlBehavior
from .definition import UpdateBehaviorKind as UpdateBehavior
from .folder_bookmark import FolderBookmark
from .store import CrawlerStore, CrawlRecord

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger("sparkmark.crawler")

SAMPLE_FILES = 20
DEPRECATED = "DEPRECATED_BY_CRAWLER"


@dataclass
class Found:
    name: str
    root: str
    files: list[ListedFile]
    classification: str
    partition_names: list[str]
    partitions: dict[tuple[str, ...], str] = field(default_factory=dict)
    classifier: Classifier | None = None  # the custom classifier that recognised its files


@dataclass
class Crawl:
    crawl_id: str
    summary: dict[str, Any] = field(
        default_factory=lambda: {
            "tables_created": [],
            "tables_updated": [],
            "tables_deleted": [],
            "tables_deprecated": [],
            "partitions_added": 0,
            "partitions_deleted": 0,
            "schema_changes_logged": [],
            "deletions_logged": [],
            "files_listed": 0,
            "folders_skipped": 0,
        }
    )
    errors: list[dict[str, str]] = field(default_factory=list)
    classifiers: list[Classifier] = field(default_factory=list)  # the crawler's, tried first, in order

    def error(self, path: str, message: str) -> None:
        log.warning("crawl %s: %s: %s", self.crawl_id, path, message)
        self.errors.append({"path": path, "error": message})


def table_name(prefix: str, folder_url: str) -> str:
    """The table a folder becomes: its name in lower case, each run of characters other
    than letters, digits and ``_`` (a hyphen, a dot) one ``_``, as Glue's crawler names
    it: AWS's CDK workflow sample crawls ``covid-data/`` and reads ``covid_data``, and
    a file ``persons.json`` is the table ``persons_json``."""
    base = folder_url.rstrip("/").rsplit("/", 1)[-1]
    return (prefix + re.sub(r"[^0-9a-zA-Z_]+", "_", base)).lower().strip("_") or "table"


def _segments(f: ListedFile, root: str) -> list[str]:
    rel = f.dir[len(root) :].strip("/")
    return rel.split("/") if rel else []


def discover(listing: Listing, target_root: str, level: int, prefix: str, crawl: Crawl) -> list[Found]:
    by_table: dict[str, list[ListedFile]] = {}
    for f in listing.files:
        segs = _segments(f, target_root)
        if len(segs) < level - 1:
            crawl.error(f.url, f"file above the table level {level}; not part of any table")
            continue
        key = "/".join([target_root, *segs[: level - 1]]).rstrip("/")
        by_table.setdefault(key, []).append(f)
    found = []
    for root, files in sorted(by_table.items()):
        usable = []
        for f in files:
            if f.size == 0:
                crawl.error(f.url, "empty file; skipped")
                continue
            try:
                kind, by = recognise(f.url, crawl.classifiers)
            except OSError as exc:
                crawl.error(f.url, f"cannot be read: {exc}")
                continue
            if kind is None:
                crawl.error(f.url, "format not recognised; skipped")
                continue
            usable.append((f, (kind, by)))
        if not usable:
            continue
        chosen_kind = Counter(k for _, k in usable).most_common(1)[0][0]
        kind, classifier = chosen_kind
        for f, k in usable:
            if k != chosen_kind:
                crawl.error(f.url, f"{_label(k)} file in a {_label(chosen_kind)} table; skipped")
        segments = {f.url: _segments(f, root) for f, k in usable if k == chosen_kind}
        depth = Counter(len(segs) for segs in segments.values()).most_common(1)[0][0]
        chosen = []
        for f, k in usable:
            if k != chosen_kind:
                continue
            if len(segments[f.url]) != depth:
                crawl.error(
                    f.url, f"at a different folder depth than the table's partitions ({depth}); skipped"
                )
            else:
                chosen.append(f)
        names = []
        for i in range(depth):
            folders = [segments[f.url][i] for f in chosen]
            keys = {s.split("=", 1)[0] for s in folders if "=" in s}
            plain = any("=" not in s for s in folders)
            names.append(keys.pop() if len(keys) == 1 and not plain else f"partition_{i}")
        partitions = {}
        for f in chosen:
            values = tuple(
                s.split("=", 1)[1] if "=" in s and names[i] == s.split("=", 1)[0] else s
                for i, s in enumerate(segments[f.url])
            )
            partitions[values] = f.dir
        found.append(Found(table_name(prefix, root), root, chosen, kind, names, partitions, classifier))
    return found


def _label(kind: tuple[str, Classifier | None]) -> str:
    fmt, by = kind
    return fmt if by is None else f"{fmt} (classifier {by.name})"


SIMILAR = 0.7  # the share of fields two files must share to be one table's


def file_fields(kind: str, url: str) -> frozenset[str] | None:
    """The field names of one file, read from its first part as Glue's crawler reads a
    file (the first 1,000 records or first megabyte): JSON objects' keys, a Parquet
    file's schema, a CSV header. None when that is not known without reading the file
    through Spark (other formats, a headerless CSV)."""
    try:
        if kind == "json":
            names: set[str] = set()
            with fsspec.open(url, "rt", encoding="utf-8", errors="replace") as fh:
                text = fh.read(1 << 20)
            for line in text.splitlines()[:1000]:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    names.update(k.lower() for k in record)
            return frozenset(names) or None
        if kind == "parquet":
            import pyarrow.parquet as pq

            with fsspec.open(url, "rb") as fh:
                return frozenset(n.lower() for n in pq.read_schema(fh).names)
        if kind == "csv":
            with fsspec.open(url, "rt", encoding="utf-8", errors="replace") as fh:
                lines = [line.rstrip("\r\n") for _, line in zip(range(CSV_SAMPLE_LINES), fh, strict=False)]
            dialect = csv_dialect.detect(lines)
            return frozenset(dialect.names) if dialect is not None and dialect.has_header else None
    except (OSError, ValueError):
        return None
    return None


def similar(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two files' schemas are one table's when they share at least 70% of their fields
    (Glue's crawler groups "similar" schemas and names no rule; 70% is the figure AWS's
    support gives)."""
    return len(a & b) >= SIMILAR * len(a | b)


def by_schema(found: Found, prefix: str, combine: bool) -> list[Found]:
    """A folder whose sampled files (with no partition folders) have dissimilar schemas
    is a table per file, named after the file (``persons.json`` → ``persons_json``), as
    Glue's crawler makes them; ``TableGroupingPolicy: CombineCompatibleSchemas`` keeps
    one table."""
    if combine or found.partition_names or len(found.files) < 2:
        return [found]
    # Decided from the files the schema is read from (the newest SAMPLE_FILES), so a flat
    # folder of many files costs a crawl no more reads than its schema does.
    fields = [file_fields(found.classification, f.url) for f in _sample(found)]
    known = [f for f in fields if f is not None]
    if len(known) < len(fields) or all(similar(a, b) for a in known for b in known):
        return [found]
    log.info("%s: its files' schemas differ; a table per file", found.root)
    return [
        Found(table_name(prefix, f.url), f.url, [f], found.classification, [], {(): f.dir}, found.classifier)
        for f in sorted(found.files, key=lambda f: f.url)
    ]


def _sample(found: Found) -> list[ListedFile]:
    return sorted(found.files, key=lambda f: (-f.mtime_ms, f.url))[:SAMPLE_FILES]


CSV_SAMPLE_RECORDS = 1000  # Glue's crawler types a CSV from each file's first 1,000
CSV_SAMPLE_BYTES = 1 << 20  # records or first megabyte, whichever comes first


def _csv_head(url: str) -> list[str]:
    """A CSV file's first part, as Glue's crawler samples it: the first 1,000 records or
    the first megabyte (a header line is kept besides)."""
    with fsspec.open(url, "rt", encoding="utf-8", errors="replace") as fh:
        text = fh.read(CSV_SAMPLE_BYTES)
    lines = text.splitlines()
    if len(text) == CSV_SAMPLE_BYTES and lines:
        lines = lines[:-1]  # the last line was cut at the megabyte
    return lines[: CSV_SAMPLE_RECORDS + 1]


def _csv_schema(spark: SparkSession, urls: list[str], options: dict[str, str]) -> StructType | None:
    """The schema Spark infers from the files' first parts (their header once), or None
    where the session cannot read lines (Spark Connect)."""
    header = options.get("header") == "true"
    lines: list[str] = []
    for i, url in enumerate(urls):
        head = _csv_head(url)
        lines += head[1:] if header and i > 0 else head
    try:
        rdd = spark.sparkContext.parallelize(lines, 1)
    except Exception:  # noqa: BLE001 - no RDDs here (Spark Connect): Spark reads the files
        return None
    return spark.read.options(**options).csv(rdd).schema  # type: ignore[arg-type]  # an RDD of rows: PySpark takes it, its stubs do not say so


def _read_schema(spark: SparkSession, kind: str, urls: list[str], options: dict[str, str]) -> StructType:
    from ..engine.storage import spark_path

    if kind == "csv":
        sampled = _csv_schema(spark, urls, options)
        if sampled is not None:
            return sampled
    paths = [spark_path(u) for u in urls]
    if kind == "avro":
        from ..sources.avro import read_avro

        return read_avro(spark, [(u, u.rsplit("/", 1)[0]) for u in urls]).schema
    reader = spark.read.format(kind).options(**options)
    if kind in ("parquet", "orc"):
        reader = reader.option("mergeSchema", "true")
    if kind == "json":
        reader = reader.option("mode", "PERMISSIVE")
    df = reader.load(paths)
    return df.schema


def json_field_order(urls: list[str], limit: int = 1 << 20) -> dict[str, int]:
    """Where each top-level field of the sampled JSON records first appears (the first
    megabyte of each file, a record to a line): Spark's reader sorts fields by name, a
    Glue table keeps the records' order."""
    order: dict[str, int] = {}
    for url in urls:
        with fsspec.open(url, "rt", encoding="utf-8", errors="replace", compression="infer") as fh:
            for line in fh.read(limit).splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a partial last line, or a record over several lines
                if isinstance(record, dict):
                    for key in record:
                        order.setdefault(key, len(order))
    return order


CSV_SAMPLE_LINES = 50  # the lines of the newest file the CSV classifier looks at


def session(spark: SparkSession | Callable[[], SparkSession]) -> SparkSession:
    """The crawl's Spark session, started on first need when given as a function."""
    return spark() if callable(spark) else spark


def infer(
    spark: SparkSession | Callable[[], SparkSession],
    found: Found,
    crawl: Crawl,
    xml_row_tag: str,
) -> tuple[list[Column], dict[str, str]] | None:
    sample = _sample(found)
    options: dict[str, str] = {}
    dialect = None
    by = found.classifier
    csv_rules = by.csv_rules() if by is not None else None
    if by is not None and by.kind == "GrokClassifier":
        return grok_columns(by), grok_parameters(by)
    if by is not None and by.kind == "JsonClassifier":
        return _json_path_columns(session(spark), [f.url for f in sample], by, crawl)
    if by is not None and by.kind == "XMLClassifier":
        xml_row_tag = by.spec.RowTag
    if found.classification == "csv":
        with fsspec.open(sample[0].url, "rt", encoding="utf-8", errors="replace") as fh:
            lines = [line.rstrip("\r\n") for _, line in zip(range(CSV_SAMPLE_LINES), fh, strict=False)]
        dialect = csv_dialect.detect(lines, csv_rules)
        if dialect is None:
            crawl.error(
                sample[0].url,
                "not CSV by Glue's rules (no delimiter of , | tab ; Ctrl-A splits every row into "
                "the same two or more columns)",
            )
            return None
        options = {
            "header": str(dialect.has_header).lower(),
            "sep": dialect.delimiter,
            "quote": dialect.quote,
            "escape": dialect.quote,  # a quote inside a quoted field is doubled (RFC 4180)
            "inferSchema": "true",
        }
    if found.classification == "xml":
        options = {"rowTag": xml_row_tag}
    urls = [f.url for f in sample]
    from . import arrow_schema  # pyarrow: imported when a crawl infers, not by every command

    arrow = arrow_schema.infer_columns(found.classification, urls)
    if arrow is not None:  # read without Spark, typed as Spark would
        return [Column(n.lower(), t) for n, t in arrow if n not in found.partition_names], {}
    active = session(spark)
    try:
        schema = _read_schema(active, found.classification, urls, options)
    except Exception:  # noqa: BLE001 - find the files that cannot be read, record them, go on
        good = []
        for url in urls:
            try:
                _read_schema(active, found.classification, [url], options)
                good.append(url)
            except Exception as exc:  # noqa: BLE001 - a corrupt file is recorded, not fatal
                crawl.error(
                    url, f"cannot be read as {found.classification}: {str(exc).splitlines()[0][:300]}"
                )
        if not good:
            return None
        schema = _read_schema(active, found.classification, good, options)
    fields = [f for f in schema.fields if f.name not in found.partition_names]
    if any(f.name == "_corrupt_record" for f in fields):
        crawl.error(found.root, "some records in the sample are not valid JSON")
        fields = [f for f in fields if f.name != "_corrupt_record"]
    params = {
        f"option.{k}": v for k, v in options.items() if k in ("header", "sep", "quote", "escape", "rowTag")
    }
    if dialect is not None and dialect.has_header:
        params["skip.header.line.count"] = "1"  # as Glue's crawler sets it; Athena and Trino read it
    if dialect is not None:
        names = list(dialect.names)
        fields = [f for i, f in enumerate(schema.fields) if i < len(names)]
        columns = [Column(names[i], _glue_type(f.dataType)) for i, f in enumerate(fields)]
    elif found.classification == "json":
        order = json_field_order(urls)
        fields.sort(key=lambda f: order.get(f.name, len(order)))  # stable: Spark's order after
        columns = [Column(f.name.lower(), _glue_type(f.dataType)) for f in fields]
    else:  # typed formats keep their files' types; names are lower-cased, as Glue's catalog keeps them
        columns = [Column(f.name.lower(), _typed_format_type(f.dataType)) for f in fields]
    return columns, params


def grok_columns(by: Classifier) -> list[Column]:
    """A grok classifier's table: a column per field of its pattern, typed as the pattern
    says (string unless ``%{PATTERN:name:type}``)."""
    from ..sources.grok import GrokPattern

    pattern = GrokPattern.compile(by.spec.GrokPattern, by.spec.CustomPatterns)
    return [Column(name.lower(), kind) for name, kind in pattern.fields]


def grok_parameters(by: Classifier) -> dict[str, str]:
    """The SerDe parameters Glue's ``GrokSerDe`` (and Athena's) read a grok table with."""
    params = {"input.format": by.spec.GrokPattern, "grokClassifier": by.name}
    if by.spec.CustomPatterns:
        params["input.grokCustomPatterns"] = by.spec.CustomPatterns
    return params


def _json_path_columns(
    spark: SparkSession, urls: list[str], by: Classifier, crawl: Crawl
) -> tuple[list[Column], dict[str, str]] | None:
    """A JSON classifier's table: the records its ``JsonPath`` finds in the sampled
    documents (the first 1,000 of them), typed as Spark types JSON, in the order their
    fields first appear."""
    from ..sources.json_path import parse_path

    path = parse_path(by.spec.JsonPath)
    records: list[str] = []
    order: dict[str, int] = {}
    for url in urls:
        try:
            with fsspec.open(url, "rt", encoding="utf-8", errors="replace", compression="infer") as fh:
                document = json.loads(fh.read(JSON_DOCUMENT_BYTES))
        except (OSError, ValueError) as exc:
            crawl.error(url, f"not one JSON document for classifier {by.name}: {str(exc).splitlines()[0]}")
            continue
        for record in path.records(document):
            if isinstance(record, dict) and len(records) < CSV_SAMPLE_RECORDS:
                records.append(json.dumps(record))
                for key in record:
                    order.setdefault(key, len(order))
    if not records:
        return None
    rdd = spark.sparkContext.parallelize(records, 1)
    schema = spark.read.json(rdd).schema
    fields = sorted(schema.fields, key=lambda f: order.get(f.name, len(order)))
    return [Column(f.name.lower(), _glue_type(f.dataType)) for f in fields], {"jsonPath": path.text}


def _glue_type(data_type) -> str:
    """The catalog type Glue's crawler gives a text format's column: whole numbers
    bigint, fractions double, and dates and timestamps strings (Glue's CSV and JSON
    classifiers type no value as a date)."""
    from pyspark.sql.types import (
        ByteType,
        DateType,
        DecimalType,
        FloatType,
        IntegerType,
        ShortType,
        TimestampNTZType,
        TimestampType,
    )

    if isinstance(data_type, (ByteType, ShortType, IntegerType)):
        return "bigint"
    if isinstance(data_type, (FloatType, DecimalType)):
        return "double"
    if isinstance(data_type, (DateType, TimestampType, TimestampNTZType)):
        return "string"
    return data_type.simpleString()


def _typed_format_type(data_type) -> str:
    """A typed format's column as Glue's catalog types it: Parquet's timestamps without
    a time zone are ``timestamp`` (Glue and Athena have no ``timestamp_ntz``)."""
    return data_type.simpleString().replace("timestamp_ntz", "timestamp")


def run_crawl(
    spark: SparkSession | Callable[[], SparkSession],
    state: StateStore,
    catalog: HiveCatalog,
    crawler_store: CrawlerStore,
    definition: CrawlerDefinition,
    *,
    connections: Connections,
    crawl_id: str | None = None,
    classifiers: Mapping[str, Classifier] | None = None,
) -> CrawlRecord:
    crawl = Crawl(crawl_id or "cr_" + secrets.token_hex(16))
    crawl.classifiers = resolve(definition.Classifiers, classifiers or {})
    crawler_store.begin(definition.Name, crawl.crawl_id)
    began = time.monotonic()
    outcome = "FAILED"
    try:
        _crawl(spark, state, catalog, definition, crawl, connections)
        outcome = "SUCCEEDED"
    except KeyboardInterrupt:
        outcome = "CANCELLED"
        raise
    except Exception as exc:
        crawl.error("(crawl)", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        crawl.summary["duration_seconds"] = round(time.monotonic() - began, 3)
        crawler_store.finish(definition.Name, crawl.crawl_id, outcome, crawl.summary, crawl.errors)
    return crawler_store.crawls(definition.Name, limit=1)[0]


def _crawl(
    spark, state, catalog, definition: CrawlerDefinition, crawl: Crawl, connections: Connections
) -> None:
    policy = definition.effective_policy
    new_folders_only = definition.RecrawlPolicy.RecrawlBehavior is RecrawlBehavior.CRAWL_NEW_FOLDERS_ONLY
    catalog.ensure_database(definition.DatabaseName)
    existing = {t.name: t for t in catalog.store.tables(definition.DatabaseName)}
    bookmark = FolderBookmark(state, definition) if new_folders_only else None
    try:
        _crawl_targets(
            spark, catalog, definition, policy, crawl, existing, bookmark, new_folders_only, connections
        )
    except BaseException as exc:
        if bookmark:
            bookmark.fail(exc)
        raise


def _crawl_targets(
    spark, catalog, definition, policy, crawl, existing, bookmark, new_folders_only, connections: Connections
) -> None:
    seen_tables: set[str] = set()
    crawled_roots = []
    for target in definition.Targets.S3Targets:
        root = root_url(target.Path)
        lister = FileLister(
            recurse=True,
            exclusions=ExclusionMatcher(target.Exclusions),
            known_dirs=bookmark.known(root) if bookmark else None,
            skip_unchanged_dirs=bookmark is not None,
        )
        try:
            listing = lister.list([target.Path])
        except SourceError:
            crawl.error(target.Path, "target folder does not exist")
            continue
        crawled_roots.append(root)
        crawl.summary["files_listed"] += len(listing.files)
        crawl.summary["folders_skipped"] += len(listing.skipped_dirs)
        for folder in discover(listing, root, definition.table_level, definition.TablePrefix, crawl):
            for found in by_schema(folder, definition.TablePrefix, definition.combine_compatible_schemas):
                seen_tables.add(found.name)
                _apply(
                    spark,
                    catalog,
                    definition,
                    policy,
                    crawl,
                    found,
                    existing.get(found.name),
                    new_folders_only,
                )
        if bookmark:
            bookmark.record(root, listing)
    for target in definition.Targets.JdbcTargets:
        from .jdbc_targets import crawl_jdbc_target

        try:
            created, updated = crawl_jdbc_target(
                connections,
                catalog.store,
                definition.DatabaseName,
                definition.TablePrefix,
                target.ConnectionName,
                target.Path,
                target.Exclusions,
                crawl.crawl_id,
            )
        except Exception as exc:  # noqa: BLE001 - one unreachable target does not stop the crawl
            crawl.error(f"jdbc:{target.ConnectionName}/{target.Path}", f"{type(exc).__name__}: {exc}")
            continue
        crawl.summary["tables_created"].extend(created)
        crawl.summary["tables_updated"].extend(updated)
        seen_tables.update(t.split(".", 1)[1] for t in created + updated)
    for ddb_target in definition.Targets.DynamoDBTargets:
        from .dynamodb_targets import crawl_dynamodb_target

        try:
            created, updated = crawl_dynamodb_target(
                catalog.store, definition.DatabaseName, definition.TablePrefix, ddb_target.Path,
                ddb_target.scanAll, ddb_target.scanRate, crawl.crawl_id,
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - one unreachable table does not stop the crawl
            crawl.error(f"dynamodb:{ddb_target.Path}", str(exc))
            continue
        crawl.summary["tables_created"].extend(created)
        crawl.summary["tables_updated"].extend(updated)
        seen_tables.update(t.split(".", 1)[1] for t in created + updated)
    delta_paths = [p for t in definition.Targets.DeltaTargets for p in t.DeltaTables]
    iceberg_paths = [p for t in definition.Targets.IcebergTargets for p in t.Paths]
    if delta_paths or iceberg_paths:
        from .table_targets import crawl_table_targets

        depth = max((t.MaximumTraversalDepth for t in definition.Targets.IcebergTargets), default=10)
        created, updated, seen = crawl_table_targets(
            catalog.store, definition.DatabaseName, definition.TablePrefix, delta_paths, iceberg_paths,
            depth, crawl.crawl_id, definition.Name, crawl.error, table_name,
        )  # fmt: skip
        crawl.summary["tables_created"].extend(created)
        crawl.summary["tables_updated"].extend(updated)
        seen_tables.update(seen)
    if bookmark:
        bookmark.commit(crawl.summary)
    if new_folders_only:
        return  # deletions are not looked for when only new folders are listed
    for name, table in existing.items():
        if table.parameters.get("connectionName") or table.classification in ("delta", "iceberg", "dynamodb"):
            continue  # JDBC and table-format tables are refreshed by their own targets
        under_target = any(table.location == r or table.location.startswith(r + "/") for r in crawled_roots)
        if name in seen_tables or not under_target:
            continue
        _delete(catalog, policy.DeleteBehavior, crawl, table)


def _apply(
    spark,
    catalog: HiveCatalog,
    definition,
    policy,
    crawl: Crawl,
    found: Found,
    old: Table | None,
    new_folders_only: bool,
) -> None:
    inferred = infer(spark, found, crawl, definition.configuration.get("XmlRowTag", "row"))
    if inferred is None:
        crawl.error(found.root, "no readable file; table not created or updated")
        return
    columns, params = inferred
    table = Table(
        definition.DatabaseName,
        found.name,
        found.root,
        found.classification,
        tuple(columns),
        tuple(Column(n, "string") for n in found.partition_names),
        {**params, "crawler": definition.Name, "crawl_id": crawl.crawl_id},
    )
    if old is None:
        catalog.create_table(table, crawl.crawl_id)
        crawl.summary["tables_created"].append(table.qualified)
        current = table
    else:
        changed = (
            old.columns != table.columns
            or old.partition_keys != table.partition_keys
            or old.classification != table.classification
        )
        current = old
        if DEPRECATED in old.parameters and policy.UpdateBehavior is UpdateBehavior.UPDATE_IN_DATABASE:
            changed = True  # the folder is back: the table is current again
        if changed and policy.UpdateBehavior is UpdateBehavior.UPDATE_IN_DATABASE:
            catalog.replace_table(table, crawl.crawl_id)
            crawl.summary["tables_updated"].append(table.qualified)
            current = table
        elif changed:
            crawl.summary["schema_changes_logged"].append(table.qualified)
            log.info(
                "crawl %s: schema of %s changed; UpdateBehavior LOG leaves it as it is",
                crawl.crawl_id,
                table.qualified,
            )
    if current.partition_keys != table.partition_keys:
        return  # the layout changed and was not applied: its partitions would not fit
    known = {p.values for p in catalog.store.partitions(current.database, current.name)}
    fresh = [Partition(v, loc) for v, loc in sorted(found.partitions.items()) if v not in known and v]
    if fresh:
        catalog.add_partitions(current, fresh)
        crawl.summary["partitions_added"] += len(fresh)
    if new_folders_only or not current.partition_keys:
        return
    gone = [
        p
        for p in catalog.store.partitions(current.database, current.name)
        if p.values not in found.partitions
    ]
    if not gone:
        return
    if policy.DeleteBehavior is DeleteBehavior.DELETE_FROM_DATABASE:
        catalog.drop_partitions(current, gone)
        crawl.summary["partitions_deleted"] += len(gone)
    else:
        crawl.summary["deletions_logged"].extend(f"{current.qualified} {list(p.values)}" for p in gone)


def _delete(catalog: HiveCatalog, behavior: DeleteBehavior, crawl: Crawl, table: Table) -> None:
    if behavior is DeleteBehavior.DELETE_FROM_DATABASE:
        catalog.drop_table(table.database, table.name)
        crawl.summary["tables_deleted"].append(table.qualified)
    elif behavior is DeleteBehavior.DEPRECATE_IN_DATABASE:
        if DEPRECATED not in table.parameters:
            catalog.set_parameters(table, {DEPRECATED: datetime.now(UTC).isoformat()})
            crawl.summary["tables_deprecated"].append(table.qualified)
    else:
        crawl.summary["deletions_logged"].append(table.qualified)
