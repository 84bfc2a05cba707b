"""One Athena query, run in the Athena engine's Spark (a session's process, whose Spark
SQL shares the Glue catalog: ``catalog.session_sync``).

:func:`run` takes the order the server wrote (the Spark SQL, what it writes, where the
results go), runs it, writes the results where Athena writes them under the query's
result location (``<id>.csv`` and ``<id>.csv.metadata`` for rows, ``<id>.txt`` for
DDL and SHOW, ``<id>-manifest.csv`` for the files a CTAS, INSERT or UNLOAD wrote) and
prints one line, ``SPARKMARK_ATHENA {json}``: the columns, the row count, the bytes
the scans read, and the error in one line if it failed. A cancel interrupts it
(KeyboardInterrupt is never caught here).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from . import results

MARK = "SPARKMARK_ATHENA "
SMALL = 10_000  # rows taken at once; a larger result is streamed
# SHOW's and DESCRIBE's one result column, as Athena names it, from Spark's columns.
SHOWN = {
    "tables": ("tab_name", ["tableName"]),
    "databases": ("database_name", ["namespace", "databaseName"]),
    "schemas": ("database_name", ["namespace", "databaseName"]),
    "partitions": ("partition", ["partition"]),
    "columns": ("field", ["col_name"]),
    "create": ("createtab_stmt", ["createtab_stmt"]),
    "tblproperties": ("prpt_name", ["key", "value"]),
    "describe": ("col_name", ["col_name", "data_type", "comment"]),
    "explain": ("Query Plan", ["plan"]),
}
_HIDDEN = re.compile(r"(^|/)[._][^/]*$")


def _fs(url: str):
    import fsspec

    return fsspec.core.url_to_fs(url)


def _open(url: str, mode: str):
    """A result file open for writing, its folder made where folders exist."""
    fs, path = _fs(url)
    fs.makedirs(fs._parent(path), exist_ok=True)
    return fs.open(path, mode, **({"encoding": "utf-8"} if "b" not in mode else {}))


def _files(location: str) -> list[str]:
    """The data files under a folder (Spark's _SUCCESS and hidden files left out), as
    ``s3://`` or local URLs."""
    from ..engine.storage import canonical, is_s3

    fs, root = _fs(location)
    if not fs.exists(root):
        return []
    found = [p for p in fs.find(root) if not _HIDDEN.search(p[len(root) :] or p)]
    if is_s3(location):
        return sorted(canonical("s3://" + p) for p in found)
    scheme = "file://" if location.startswith("file://") else ""
    return sorted(scheme + p for p in found)


def _write_text(url: str, text: str) -> None:
    with _open(url, "w") as out:
        out.write(text)


def _scanned(frame: Any) -> int:
    """Bytes the query's file scans read: the ``filesSize`` metric of each scan in the
    executed plan (0 where a scan keeps none)."""
    total = 0
    try:
        plan = frame._jdf.queryExecution().executedPlan()
        stack = [plan]
        while stack:
            node = stack.pop()
            name = node.getClass().getSimpleName()
            if name == "AdaptiveSparkPlanExec":
                stack.append(node.executedPlan())
                continue
            if "QueryStage" in name:  # an adaptive plan's stage: its plan is under it
                stack.append(node.plan())
            metric = node.metrics().get("filesSize")
            if metric.isDefined():
                total += int(metric.get().value())
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
    except Exception:  # noqa: BLE001 - statistics only
        return total
    return total


def _as_text(frame: Any) -> Any:
    """The query's rows with its top-level timestamps already Athena's text (in the
    session's time zone, never this Python's)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    stamps = (TimestampType, TimestampNTZType)
    if not any(isinstance(f.dataType, stamps) for f in frame.schema.fields):
        return frame
    return frame.select(
        *[
            F.date_format(F.col(f"`{f.name}`"), "yyyy-MM-dd HH:mm:ss.SSS").alias(f.name)
            if isinstance(f.dataType, stamps)
            else F.col(f"`{f.name}`")
            for f in frame.schema.fields
        ]
    )


def _rows(spark: Any, order: dict[str, Any]) -> dict[str, Any]:
    clock = order["clock"]
    source = spark.sql(order["sql"])
    columns = [
        results.column_info(f.name, f.dataType.simpleString(), f.nullable) for f in source.schema.fields
    ]
    frame = _as_text(source)
    clock.lap("planning")
    base = order["output"]
    count = 0
    with _open(base + ".csv", "w") as out:
        out.write(results.csv_line([c["Name"] for c in columns]))
        # A small result is taken in one job; a large one is streamed, a partition at a
        # time, so the driver never holds it whole.
        limited = frame.limit(SMALL + 1)
        first = limited.collect()
        ran = limited if len(first) <= SMALL else frame  # the plan whose scans are counted
        clock.lap("execution")
        for row in first if ran is limited else frame.toLocalIterator():
            out.write(results.csv_line([results.text(v) for v in row]))
            count += 1
    _write_bytes(base + ".csv.metadata", results.metadata_document(columns))
    clock.lap("writing")
    scanned = _scanned(ran)
    clock.lap("statistics")
    return {"columns": columns, "rows": count, "scanned": scanned, "file": base + ".csv"}


def _write_bytes(url: str, data: bytes) -> None:
    with _open(url, "wb") as out:
        out.write(data)


def _shown(spark: Any, order: dict[str, Any]) -> dict[str, Any]:
    frame = spark.sql(order["sql"])
    label, wanted = SHOWN.get(order.get("show") or "", ("result", []))
    names = [n for n in wanted if n in frame.columns] or frame.columns[:1]
    lines = []
    for row in frame.toLocalIterator():
        parts = [str(row[n]) if row[n] is not None else "" for n in names]
        if order.get("show") == "tblproperties":
            lines.append("\t".join(parts))
        else:
            lines.extend("\t".join(parts).splitlines() or [""])
    base = order["output"]
    _write_text(base + ".txt", "".join(f"{line}\n" for line in lines))
    columns = [results.column_info(label, "string")]
    return {"columns": columns, "rows": len(lines), "scanned": 0, "file": base + ".txt", "text": True}


def _ddl(spark: Any, order: dict[str, Any]) -> dict[str, Any]:
    spark.sql(order["sql"]).collect()
    if order.get("created"):
        _skip_header(spark, *order["created"])
    if order.get("partitions"):
        sync_partitions(spark, *order["partitions"])
    base = order["output"]
    _write_text(base + ".txt", "")
    return {"columns": [], "rows": 0, "scanned": 0, "file": base + ".txt", "text": True}


def _option(value: Any) -> str | None:
    """A Scala Option's value as text, or None."""
    return str(value.get()) if value.isDefined() else None


_TEXT_SERDES = ("LazySimpleSerDe", "OpenCSVSerde")


def _skip_header(spark: Any, database: str, name: str) -> None:
    """A text table with ``skip.header.line.count`` = 1, as Athena reads it: Spark's Hive
    reader ignores the property (its first lines would be rows), so the table is made
    again as Spark's CSV table with a header, over the same files and columns."""
    jvm = spark._jvm
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Some(database))
    table = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident)
    skip = table.properties().get("skip.header.line.count")
    serde = _option(table.storage().serde()) or ""
    if not skip.isDefined() or not any(s in serde for s in _TEXT_SERDES):
        return
    if str(skip.get()).strip() == "0":
        return
    if str(skip.get()).strip() != "1":
        raise AthenaFailure(
            f"NOT_SUPPORTED: skip.header.line.count = {skip.get()}: one header line is read here"
        )
    props = table.storage().properties()
    delim = _option(props.get("field.delim")) or _option(props.get("separatorChar")) or ","
    if "'" in str(delim) or "\\" in str(delim):
        raise AthenaFailure(f"NOT_SUPPORTED: the field delimiter {delim!r} with skip.header.line.count")
    parts = [c.name for c in spark.catalog.listColumns(name, database) if c.isPartition]
    fields = spark.table(f"`{database}`.`{name}`").schema.fields
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)
    location = str(table.storage().locationUri().get())
    spark.sql(f"DROP TABLE `{database}`.`{name}`")
    partitioned = f" PARTITIONED BY ({', '.join(f'`{p}`' for p in parts)})" if parts else ""
    spark.sql(
        f"CREATE TABLE `{database}`.`{name}` ({columns}) USING csv "
        f"OPTIONS (header 'true', sep '{delim}'){partitioned} "
        f"LOCATION '{location}' TBLPROPERTIES ('skip.header.line.count'='1')"
    )


def _after_write(spark: Any, database: str, name: str) -> None:
    """The written table in the Glue catalog now (the session's copy after the statement
    would come too late for the partitions), with its partitions."""
    from ..catalog.session_sync import active

    sync = active()
    if sync is not None:
        sync.after()
    sync_partitions(spark, database, name)


def sync_partitions(spark: Any, database: str, name: str) -> None:
    """The table's partitions in the Glue catalog as the session's metastore has them,
    after a statement that adds or drops some (MSCK REPAIR, ALTER TABLE … PARTITION,
    CTAS, INSERT INTO): Athena's DDL changes the Glue catalog's partitions."""
    from ..catalog.models import Partition
    from ..catalog.session_sync import active
    from ..catalog.store import CatalogStore
    from ..engine.storage import canonical
    from ..engine.store import StateStore
    from ..settings import Settings

    jvm = spark._jvm
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Some(database))
    catalog = spark._jsparkSession.sessionState().catalog()
    keys = [c.name for c in spark.catalog.listColumns(name, database) if c.isPartition]
    if not keys:
        return
    listed = catalog.listPartitions(ident, jvm.scala.Option.empty())
    have = {}
    for i in range(listed.size()):
        part = listed.apply(i)
        spec = part.spec()
        values = tuple(str(spec.get(k).get()) for k in keys)
        have[values] = canonical(str(part.location().toString()))
    sync = active()  # the session's own catalog store, rather than a store opened for each call
    store = sync.store if sync is not None else CatalogStore(StateStore.from_settings(Settings.from_env()))
    kept = {p.values: p for p in store.partitions(database, name)}
    store.drop_partitions(database, name, [p for v, p in kept.items() if v not in have])
    store.put_partitions(database, name, [Partition(v, loc) for v, loc in have.items() if v not in kept])


def _refuse_nonempty(location: str, what: str) -> None:
    if _files(location):
        raise AthenaFailure(
            f"HIVE_PATH_ALREADY_EXISTS: Target directory for {what} already exists: {location}. "
            "Use a new location, or empty it first"
        )


class AthenaFailure(Exception):
    """A failure already in Athena's words."""


def _writer(order: dict[str, Any], frame: Any) -> Any:
    """The Spark writer of a CTAS's or UNLOAD's rows, as its properties say."""
    write = order["write"]
    writer = frame.write.format(write["format"])
    if write.get("partitioned_by"):
        writer = writer.partitionBy(*write["partitioned_by"])
    if write.get("compression"):
        writer = writer.option("compression", write["compression"])
    if write.get("delimiter") and write["format"] == "csv":
        writer = writer.option("sep", write["delimiter"])
    return writer


def _rows_in(spark: Any, order: dict[str, Any], location: str) -> int:
    """The rows a CTAS or UNLOAD wrote, read back from its files (a Parquet file's count
    is in its footer), rather than by running its query a second time."""
    from ..engine.storage import spark_base_path

    files = [spark_base_path(f) for f in _files(location)]
    if not files:
        return 0
    write = order["write"]
    reader = spark.read.format(write["format"])
    if write["format"] == "csv":
        reader = reader.option("multiLine", "true").option("sep", write.get("delimiter") or ",")
    return int(reader.load(files).count())


def _ctas(spark: Any, order: dict[str, Any]) -> dict[str, Any]:
    from ..engine.storage import spark_base_path

    write = order["write"]
    database, name = write["table"]
    if spark.catalog.tableExists(f"`{database}`.`{name}`"):
        raise AthenaFailure(f"TABLE_ALREADY_EXISTS: Table '{database}.{name}' already exists")
    location = write["location"].rstrip("/") + "/"
    _refuse_nonempty(location, f"table '{database}.{name}'")
    frame = spark.sql(order["sql"])
    if not write.get("with_data", True):
        frame = frame.limit(0)
    _writer(order, frame).option("path", spark_base_path(location)).mode("errorifexists").saveAsTable(
        f"`{database}`.`{name}`"
    )
    return _manifested(order, location, _rows_in(spark, order, location), _scanned(frame))


def _manifested(
    order: dict[str, Any], location: str, count: int, scanned: int, before: set[str] | None = None
) -> dict[str, Any]:
    files = [f for f in _files(location) if before is None or f not in before]
    base = order["output"]
    _write_text(base + "-manifest.csv", results.manifest(files))
    _write_bytes(base + ".metadata", results.metadata_document([]))
    return {
        "columns": [],
        "rows": 0,
        "update_count": count,
        "scanned": scanned,
        "manifest": base + "-manifest.csv",
        "file": None,
    }


def _insert(spark: Any, order: dict[str, Any]) -> dict[str, Any]:
    database, name = order["write"]["table"]
    found = spark.sql(f"DESCRIBE FORMATTED `{database}`.`{name}`").collect()
    location = next((r["data_type"] for r in found if r["col_name"] == "Location"), None)
    before = set(_files(location)) if location else set()
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    spark.sql(order["sql"]).collect()
    _after_write(spark, database, name)
    count = 0
    if location:
        from ..engine.storage import parquet_rows

        fs, _ = _fs(location)
        for url in _files(location):
            if url not in before and url.endswith(".parquet"):
                count += parquet_rows(fs, _fs(url)[1])
    return _manifested(order, location or "", count, 0, before) if location else {"columns": [], "rows": 0}


def _unload(spark: Any, order: dict[str, Any]) -> dict[str, Any]:
    from ..engine.storage import spark_base_path

    location = order["write"]["location"].rstrip("/") + "/"
    _refuse_nonempty(location, "UNLOAD")
    frame = spark.sql(order["sql"])
    _writer(order, frame).mode("errorifexists").save(spark_base_path(location))
    return _manifested(order, location, _rows_in(spark, order, location), _scanned(frame))


RUNNERS = {"query": _rows, "show": _shown, "ddl": _ddl, "ctas": _ctas, "insert": _insert, "unload": _unload}


def _one_line(exc: BaseException, database: str) -> str:
    text = str(exc).strip()
    java = getattr(exc, "java_exception", None)
    if java is not None:  # py4j's own first line names only the call that failed
        text = str(java.getMessage() or java.toString()).strip()
    found = re.search(r"\[UNRESOLVED_ROUTINE\][^`]*`([^`]+)`", text)
    if found:
        return (
            f"FUNCTION_NOT_FOUND: function {found.group(1).split('.')[-1].lower()} has no Spark SQL "
            "counterpart here (docs/athena.md lists the translated functions)"
        )
    found = re.search(r"\[TABLE_OR_VIEW_NOT_FOUND\][^`]*`([^`]+)`(\.`([^`]+)`)?(\.`([^`]+)`)?", text)
    if found:
        parts = [g for g in (found.group(1), found.group(3), found.group(5)) if g]
        named = ".".join(parts[-2:]) if len(parts) > 1 else f"{database}.{parts[0]}"
        return f"TABLE_NOT_FOUND: Table '{named}' does not exist"
    found = re.search(r"\[SCHEMA_NOT_FOUND\][^`]*`([^`]+)`", text)
    if found:
        return f"SCHEMA_NOT_FOUND: Schema '{found.group(1).split('.')[-1]}' does not exist"
    first = text.splitlines()[0] if text else type(exc).__name__
    return first if isinstance(exc, AthenaFailure) else f"GENERIC_INTERNAL_ERROR: {first}"


def run(spark: Any, order_json: str) -> None:
    """Run one order and print its outcome line."""
    from ..engine import storage
    from ..settings import Settings

    order = json.loads(order_json)
    order["clock"] = clock = Clock()
    storage.configure(Settings.from_env())
    database = order.get("database") or "default"
    try:
        if spark.catalog.databaseExists(database):
            spark.catalog.setCurrentDatabase(database)
        elif order.get("needs_database", True):
            raise AthenaFailure(f"SCHEMA_NOT_FOUND: Schema '{database}' does not exist")
        else:  # CREATE DATABASE and its kind: no other query's database is left current
            spark.catalog.setCurrentDatabase("default")
        clock.lap("setup")
        outcome = RUNNERS[order["kind"]](spark, order)
        outcome["ok"] = True
    except Exception as exc:  # noqa: BLE001 - the query fails with the reason, in one line
        outcome = {"ok": False, "error": _one_line(exc, database)}
    outcome["timings"] = clock.laps
    print(MARK + json.dumps(outcome), flush=True)


class Clock:
    """The milliseconds each part of a query took, for its statistics."""

    def __init__(self) -> None:
        self.laps: dict[str, int] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0) + int((now - self._last) * 1000)
        self._last = now


def outcome_of(text: str) -> dict[str, Any] | None:
    """The outcome line in a statement's printed output."""
    from ..sessions.owned import marked

    return marked(text, MARK)
