"""Table sinks: writes to an Iceberg or a Delta Lake table, exactly-once in a run.

A staged write keeps the frame as Parquet in the table's hidden folder
(``LOCATION/_sparkmark/staging/<key>``), which neither format lists: Iceberg reads only
the files its metadata names, and Delta's VACUUM passes over folders whose names start
with ``_``. After the bookmark commits, ``apply`` moves the rows into the table with one
commit of the format, marked with the write's key so that applying it again (a retry
after a crash between the table's commit and the state store's record of it) changes
nothing:

- Iceberg: the snapshot's summary holds ``sparkmark.write-key``; ``apply`` first looks
  for a snapshot of the table with that key and does nothing when there is one.
- Delta: the write is one of Delta's idempotent writes, ``txnAppId`` the write's key and
  ``txnVersion`` 1; Delta itself skips a write whose application id has that version.

A write without a run (or without a ctx) is the format's own write, visible at once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from fsspec.core import url_to_fs

from ..engine.faults import crash_point
from ..engine.models import OutputKind, OutputRecord, OutputState
from ..engine.storage import require_s3a, spark_base_path
from ..errors import OutputLost, SinkError

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame, SparkSession

    from ..engine.store import StateStore

log = logging.getLogger("sparkmark.sinks")

FORMATS = ("iceberg", "delta")
MODES = ("append", "overwrite", "overwrite_partitions")
WRITE_KEY = "sparkmark.write-key"  # the Iceberg snapshot summary property of a staged write
CONTROL = "_sparkmark"


def _quote(identifier: str) -> str:
    return ".".join(f"`{part.replace('`', '``')}`" for part in identifier.split("."))


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def location(spark: SparkSession, table: str) -> str:
    """Where a table of a Spark catalog keeps its files (``DESCRIBE TABLE EXTENDED``)."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {_quote(table)}").collect()
    except Exception as exc:  # noqa: BLE001 - Spark's analysis errors, shown in one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SinkError(f"cannot write table {table}: {first}") from None
    for row in rows:
        if row[0] == "Location" and row[1]:
            return str(row[1]).rstrip("/")
    raise SinkError(f"table {table} has no location that Spark reports; it cannot be written exactly-once")


def _as_store_url(url: str) -> str:
    """s3a:// (as Spark reports a location) is s3:// for sparkmark's file systems."""
    return "s3://" + url.partition("://")[2] if url.startswith(("s3a://", "s3n://")) else url


def staging_url(table_location: str, key: str) -> str:
    return f"{_as_store_url(table_location)}/{CONTROL}/staging/{key}"


def _snapshot_with_key(spark: SparkSession, table: str, key: str) -> int | None:
    found = spark.sql(
        f"SELECT snapshot_id FROM {_quote(table)}.snapshots "
        f"WHERE summary[{_literal(WRITE_KEY)}] = {_literal(key)} LIMIT 1"
    ).first()
    return None if found is None else int(found[0])


def _delta_version(spark: SparkSession, path: str) -> int | None:
    try:
        row = spark.sql(f"DESCRIBE HISTORY delta.`{spark_base_path(path)}` LIMIT 1").first()
    except Exception:  # noqa: BLE001 - no table there yet
        return None
    return None if row is None else int(row["version"])


def _write(df: DataFrame, plan: Mapping[str, Any], key: str | None) -> dict[str, Any]:
    """One commit of the table's format with ``df``'s rows; with ``key``, at most once."""
    from pyspark.sql import functions as F

    spark = df.sparkSession
    fmt, mode, table, path = plan["format"], plan["mode"], plan.get("table"), plan.get("path")
    partition_by = list(plan.get("partition_by") or ())
    options = {str(k): str(v) for k, v in (plan.get("options") or {}).items()}
    if fmt == "iceberg":
        assert table is not None
        if key is not None:
            done = _snapshot_with_key(spark, table, key)
            if done is not None:
                log.info(
                    "write %s to %s was already applied (snapshot %d); not applying it again",
                    key,
                    table,
                    done,
                )
                return {"table": table, "mode": mode, "already_applied": True, "snapshot": done}
            options[f"snapshot-property.{WRITE_KEY}"] = key
        v2 = df.writeTo(table).options(**options)
        if mode == "append":
            v2.append()
        elif mode == "overwrite_partitions":
            v2.overwritePartitions()
        else:
            v2.overwrite(F.lit(True))
        rows = df.count() if key is not None else None
        return {"table": table, "mode": mode, **({"rows_written": rows} if rows is not None else {})}
    before = _delta_version(spark, path) if key is not None and path else None
    writer = df.write.format("delta").options(**options)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    if key is not None:
        writer = writer.option("txnAppId", key).option("txnVersion", "1")
    if mode == "overwrite_partitions":
        writer = writer.option("partitionOverwriteMode", "dynamic").mode("overwrite")
    else:
        writer = writer.mode(mode)
    if path:
        require_s3a(spark, path)
        writer.save(spark_base_path(path))
    else:
        assert table is not None
        writer.saveAsTable(table)
    shown = path or table
    if key is not None and path and before is not None and _delta_version(spark, path) == before:
        log.info(
            "write %s to %s was already applied (Delta's transaction %s); not applying it again",
            key,
            shown,
            key,
        )
        return {"path": shown, "mode": mode, "already_applied": True}
    return {"path": shown, "mode": mode}


def apply(spark: SparkSession | None, plan: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Move a committed write's staged rows into its table, at most once."""
    if spark is None:
        raise SinkError(
            f"publishing the write {key} to {plan.get('table') or plan.get('path')} needs Spark: "
            "run the job again (its start publishes it)"
        )
    staging = plan["staging"]
    if plan["format"] == "iceberg":
        done = _snapshot_with_key(spark, plan["table"], key)
        if done is not None:
            log.info("write %s to %s was already applied (snapshot %d)", key, plan["table"], done)
            return {"table": plan["table"], "mode": plan["mode"], "already_applied": True}
    if not staged_files(staging):
        raise OutputLost(
            f"the staged rows of the write to {plan.get('table') or plan.get('path')} ({staging}) are gone, "
            "and the write was not applied; they cannot be recovered. Rewind the job's bookmark to before "
            "that run (`sparkmark bookmark rewind`) and re-run it"
        )
    df = spark.read.parquet(spark_base_path(staging))
    result = _write(df, plan, key)
    crash_point("applied")
    rows = int(plan.get("rows_staged", 0))
    log.info("wrote %d rows to %s (%s)", rows, plan.get("table") or plan.get("path"), plan["mode"])
    return {**result, "rows_written": rows}


def staging_of(plan: Mapping[str, Any], key: str) -> str | None:
    """Where a write's rows are staged: recorded once staged; before that (a run that died
    while staging), found again from the table's location when Spark runs here."""
    if plan.get("staging"):
        return str(plan["staging"])
    if plan.get("path"):
        return staging_url(plan["path"], key)
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None or not plan.get("table"):
        return None
    try:
        return staging_url(location(spark, plan["table"]), key)
    except SinkError:
        return None


def discard(store: StateStore, record: OutputRecord) -> bool:
    """Mark a write that will never commit DISCARDED (only from STAGING or STAGED), then
    remove its staged rows."""
    if not store.set_output(
        record.run_id, record.seq, OutputState.DISCARDED, expect=(OutputState.STAGING, OutputState.STAGED)
    ):
        return False
    staging = staging_of(record.plan, record.key)
    if staging:
        remove_staging(staging)
    return True


def staged_files(staging: str) -> list[str]:
    fs, path = url_to_fs(staging)
    if not fs.exists(path):
        return []
    return [p for p in fs.find(path) if p.endswith(".parquet")]


def remove_staging(staging: str) -> None:
    fs, path = url_to_fs(staging)
    try:
        if fs.exists(path):
            fs.rm(path, recursive=True)
    except OSError as exc:
        log.warning("could not remove the staged rows at %s: %s", staging, exc)


@dataclass(frozen=True)
class TableSink:
    """An Iceberg table (``table``, as its Spark catalog names it) or a Delta table (its
    folder ``path``, or ``table``), for ``runtime.write_sink``: modes append, overwrite
    and overwrite_partitions; ``options`` go to the format's writer."""

    format: str
    table: str | None = None
    path: str | None = None
    mode: str = "append"
    partition_by: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    ctx: str | None = None
    kind: ClassVar[OutputKind] = OutputKind.TABLE
    unit: ClassVar[str] = "rows"

    @property
    def target(self) -> str:
        return self.table or self.path or ""

    def check(self) -> None:
        if self.format not in FORMATS:
            raise SinkError(f"table format {self.format!r} is not one of {', '.join(FORMATS)}")
        if self.mode not in MODES:
            raise SinkError(f"write mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.format == "iceberg" and not self.table:
            raise SinkError(
                "an Iceberg write needs the table, as its Spark catalog names it (catalog.db.table)"
            )
        if not self.table and not self.path:
            raise SinkError("a Delta write needs the table's path or its name")

    def join(self, run: Any, staged: bool) -> None:
        """A table needs nothing of the run."""

    def guard(self, store: StateStore) -> None:
        """A table's earlier writes are not checked against the store (docs/table-formats.md)."""

    def plan(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "table": self.table,
            "path": self.path,
            "mode": self.mode,
            "partition_by": list(self.partition_by),
            "options": {str(k): str(v) for k, v in self.options.items()},
        }

    def write_now(self, df: DataFrame) -> dict[str, Any]:
        return _write(df, self.plan(), None)

    def stage(self, df: DataFrame, record: OutputRecord, store: StateStore) -> tuple[dict[str, Any], int]:
        spark = df.sparkSession
        where = self.path or location(spark, self.table or "")
        staging = staging_url(where, record.key)
        require_s3a(spark, staging)
        df.write.mode("overwrite").parquet(spark_base_path(staging))
        rows = spark.read.parquet(spark_base_path(staging)).count()
        return {**self.plan(), "staging": staging, "rows_staged": rows}, rows

    def discard(self, store: StateStore, record: OutputRecord) -> None:
        discard(store, record)

    def result(self, staged: int, ctx: str) -> dict[str, Any]:
        return {"table": self.target, "mode": self.mode, "ctx": ctx, "rows_staged": staged}
