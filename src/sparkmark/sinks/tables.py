"""Table sinks: writes to an Iceberg or a Delta Lake table, exactly-once in a run.

An append to an Iceberg table is staged as Iceberg stages writes (write-audit-publish:
a snapshot under ``wap.id`` = the write's key, not made current) and published after the
bookmark commits by cherry-picking it; a retry first walks the branch since the snapshot
that was current at staging time, for the staged snapshot or its cherry-picked copy.

Any other write keeps the frame as Parquet in the table's hidden folder
(``LOCATION/_sparkmark/staging/<key>``), which neither format lists: Iceberg reads only
the files its metadata names, and Delta's VACUUM passes over folders whose names start
with ``_``. After the bookmark commits, ``apply`` moves the rows into the table with one
commit of the format, marked with the write's key so that applying it again (a retry
after a crash between the table's commit and the state store's record of it) changes
nothing:

- Iceberg (an overwrite): the snapshot's summary holds ``sparkmark.write-key``; ``apply``
  first looks for a snapshot of the table with that key and does nothing when there is one.
- Delta: the commit's user metadata (``userMetadata``) is the write's key; ``apply`` first
  reads the table's commit files after the version it had when the write was staged, and
  does nothing when one of them carries the key. (Delta's own idempotent writes,
  ``txnAppId``/``txnVersion``, do the same check, but by rebuilding the table's whole
  state at every write: several times the cost of the append itself, bench/table_formats.py.)

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
from ..engine.publish import CONTROL
from ..engine.storage import parquet_rows, require_s3a, spark_base_path
from ..errors import OutputLost, SinkError, first_line
from . import delta_files

if TYPE_CHECKING:  # PySpark is imported only where it runs
    from pyspark.sql import DataFrame, SparkSession

    from ..engine.store import StateStore

log = logging.getLogger("sparkmark.sinks")

FORMATS = ("iceberg", "delta")
MODES = ("append", "overwrite", "overwrite_partitions")
WRITE_KEY = "sparkmark.write-key"  # the Iceberg snapshot summary property of a staged write


def _quote(identifier: str) -> str:
    return ".".join(f"`{part.replace('`', '``')}`" for part in identifier.split("."))


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def location(spark: SparkSession, table: str) -> str:
    """Where a table of a Spark catalog keeps its files (``DESCRIBE TABLE EXTENDED``)."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {_quote(table)}").collect()
    except Exception as exc:  # noqa: BLE001 - Spark's analysis errors, shown in one line
        raise SinkError(f"cannot write table {table}: {first_line(exc)}") from None
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


def delta_commits(path: str, after: int) -> list[tuple[int, str]]:
    """(version, file) of the Delta table's commit files after version ``after``."""
    fs, root = url_to_fs(_as_store_url(path))
    log_dir = f"{root.rstrip('/')}/_delta_log"
    if not fs.exists(log_dir):
        return []
    found = []
    for name in fs.ls(log_dir, detail=False):
        base = name.rsplit("/", 1)[-1]
        stem = base.removesuffix(".json")
        if stem != base and stem.isdigit() and int(stem) > after:
            found.append((int(stem), name))
    return sorted(found)


def delta_version(path: str) -> int:
    """The Delta table's latest version from its log's file names; -1 with no table."""
    commits = delta_commits(path, -1)
    return commits[-1][0] if commits else -1


def _delta_commit_with_key(path: str, after: int, key: str) -> int | None:
    """The version after ``after`` whose commit carries ``key`` as its user metadata."""
    import json

    fs, _ = url_to_fs(_as_store_url(path))
    for version, name in delta_commits(path, after):
        with fs.open(name, "rt") as handle:
            for line in handle:
                if (
                    '"commitInfo"' in line
                    and json.loads(line).get("commitInfo", {}).get("userMetadata") == key
                ):
                    return version
    return None


def _write(df: DataFrame, plan: Mapping[str, Any], key: str | None) -> dict[str, Any]:
    """One commit of the table's format with ``df``'s rows, marked with ``key`` when given
    (Iceberg: a snapshot summary property; Delta: the commit's user metadata)."""
    from pyspark.sql import functions as F

    spark = df.sparkSession
    fmt, mode, table, path = plan["format"], plan["mode"], plan.get("table"), plan.get("path")
    partition_by = list(plan.get("partition_by") or ())
    options = {str(k): str(v) for k, v in (plan.get("options") or {}).items()}
    if fmt == "iceberg":
        assert table is not None
        if key is not None:
            options[f"snapshot-property.{WRITE_KEY}"] = key
        v2 = df.writeTo(table).options(**options)
        if mode == "append":
            v2.append()
        elif mode == "overwrite_partitions":
            v2.overwritePartitions()
        else:
            v2.overwrite(F.lit(True))
        return {"table": table, "mode": mode}
    writer = df.write.format("delta").options(**options)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    if key is not None:
        writer = writer.option("userMetadata", key)
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
    return {"path": path or table, "mode": mode}


def _iceberg(spark: SparkSession, table: str):
    """Iceberg's own Table object for ``table`` (the one Spark's catalog holds), fresh."""
    jvm: Any = spark.sparkContext._jvm
    found = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    found.refresh()
    return found


def _stage_wap(df: DataFrame, table: str, key: str) -> dict[str, Any]:
    """An append to an Iceberg table staged as Iceberg stages it (write-audit-publish): a
    snapshot committed to the table's metadata under ``wap.id`` = ``key`` and not made
    current. Publishing cherry-picks it: no row is written twice."""
    spark = df.sparkSession
    iceberg = _iceberg(spark, table)
    if str(iceberg.properties().get("write.wap.enabled")).lower() != "true":
        iceberg.updateProperties().set("write.wap.enabled", "true").commit()
        log.info("table %s: write.wap.enabled set, so that exactly-once appends can be staged in it", table)
    head = iceberg.currentSnapshot()
    spark.conf.set("spark.wap.id", key)
    try:
        df.writeTo(table).option(f"snapshot-property.{WRITE_KEY}", key).append()
    finally:
        spark.conf.unset("spark.wap.id")
    iceberg.refresh()
    jvm: Any = spark.sparkContext._jvm
    iterables = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables
    last = iterables.getLast(iceberg.snapshots(), None)
    staged = last is not None and str(last.summary().get("wap.id")) == key
    return {
        "wap_snapshot": int(last.snapshotId()) if staged else None,
        "base_snapshot": int(head.snapshotId()) if head is not None else None,
        "rows_staged": int(str(last.summary().get("added-records") or 0)) if staged else 0,
    }


def _published_wap(iceberg, plan: Mapping[str, Any], key: str) -> int | None:
    """The snapshot on the table's current branch, since the one current when the write
    was staged, that is the staged snapshot or its cherry-picked copy; None if none is."""
    base, staged = plan.get("base_snapshot"), plan["wap_snapshot"]
    snapshot = iceberg.currentSnapshot()
    while snapshot is not None and snapshot.snapshotId() != base:
        if snapshot.snapshotId() == staged or str(snapshot.summary().get("published-wap-id")) == key:
            return int(snapshot.snapshotId())
        parent = snapshot.parentId()
        snapshot = iceberg.snapshot(parent) if parent is not None else None
    return None


def _apply_wap(spark: SparkSession, plan: Mapping[str, Any], key: str) -> dict[str, Any]:
    table, staged = plan["table"], plan["wap_snapshot"]
    rows = int(plan.get("rows_staged", 0))
    if staged is None:
        return {"table": table, "mode": plan["mode"], "rows_written": 0}
    iceberg = _iceberg(spark, table)
    done = _published_wap(iceberg, plan, key)
    if done is not None:
        log.info("write %s to %s was already applied (snapshot %d); not applying it again", key, table, done)
        return {"table": table, "mode": plan["mode"], "already_applied": True}
    if iceberg.snapshot(staged) is None:
        raise OutputLost(
            f"the staged snapshot {staged} of the write to {table} is gone (expired), and the write was not "
            "applied; its rows cannot be recovered. Rewind the job's bookmark to before that run "
            "(`sparkmark bookmark reset JOB --run-id <the run before it>`) and re-run it"
        )
    iceberg.manageSnapshots().cherrypick(staged).commit()
    crash_point("applied")
    log.info("wrote %d rows to %s (append; staged snapshot %d published)", rows, table, staged)
    return {"table": table, "mode": plan["mode"], "rows_written": rows}


def missing(plan: Mapping[str, Any]) -> str | None:
    """What of a staged write is no longer there, in a few words; None when all of it is."""
    if "wap_snapshot" in plan:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        staged = plan["wap_snapshot"]
        if staged is None or spark is None or _iceberg(spark, plan["table"]).snapshot(staged) is not None:
            return None
        return f"its staged snapshot {staged} no longer exists"
    if plan.get("delta_actions"):
        return delta_files.missing(plan["staging"])
    if staged_files(plan["staging"]):
        return None
    return f"its staged rows at {plan['staging']} no longer exist"


def finish(plan: Mapping[str, Any]) -> None:
    """After a write is marked published: remove its staged Parquet rows (a staged Iceberg
    snapshot is the table's own, and now part of its history)."""
    if plan.get("staging"):
        remove_staging(plan["staging"])


def applied_as(spark: SparkSession, plan: Mapping[str, Any], key: str) -> str | None:
    """Where the table already holds write ``key`` (an earlier attempt that committed
    before its record said so), or None."""
    if plan["format"] == "iceberg":
        snapshot = _snapshot_with_key(spark, plan["table"], key)
        return None if snapshot is None else f"snapshot {snapshot}"
    version = _delta_commit_with_key(plan["path"], int(plan.get("version_before", -1)), key)
    return None if version is None else f"version {version}"


def apply(spark: SparkSession | None, plan: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Move a committed write's staged rows into its table, at most once: a table that
    already holds the write's key (looked for in the snapshots, or in the Delta commits
    since the write was staged) is left as it is."""
    target = plan.get("table") or plan.get("path")
    if spark is None:
        raise SinkError(
            f"publishing the write {key} to {target} needs Spark: run the job again (its start publishes it)"
        )
    if "wap_snapshot" in plan:
        return _apply_wap(spark, plan, key)
    done = applied_as(spark, plan, key)
    if done is not None:
        log.info("write %s to %s was already applied (%s); not applying it again", key, target, done)
        return {"table": target, "mode": plan["mode"], "already_applied": True}
    staging = plan["staging"]
    if plan.get("delta_actions"):
        return _apply_delta_files(spark, plan, key)
    if not staged_files(staging):
        raise OutputLost(
            f"the staged rows of the write to {target} ({staging}) are gone, and the write was not applied; "
            "they cannot be recovered. Rewind the job's bookmark to before that run "
            "(`sparkmark bookmark reset JOB --run-id <the run before it>`) and re-run it"
        )
    result = _write(spark.read.parquet(spark_base_path(staging)), plan, key)
    crash_point("applied")
    rows = int(plan.get("rows_staged", 0))
    log.info("wrote %d rows to %s (%s)", rows, target, plan["mode"])
    return {**result, "rows_written": rows}


def _apply_delta_files(spark: SparkSession, plan: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Commit a Delta append whose files the run wrote into the table (``delta_files``)."""
    target, staging = plan["path"], plan["staging"]
    added = delta_files.staged_actions(staging)  # read once, for the check and the commit
    gone = delta_files.missing(staging, added)
    if gone is not None:
        raise OutputLost(
            f"the write to {target} cannot be applied: {gone}. Its rows cannot be recovered; rewind the "
            "job's bookmark to before that run (`sparkmark bookmark reset JOB --run-id <the run before it>`) "
            "and re-run it"
        )
    rows = int(plan.get("rows_staged", 0))
    version = delta_files.commit(spark, plan, key, added or [])  # missing() vouched for them
    if version is None:  # the table's schema changed since: Delta's writer takes the rows
        _write(delta_files.staged_frame(spark, staging), plan, key)
        crash_point("applied")
        delta_files.remove_files(staging)
        log.info("wrote %d rows to %s (append, by Delta's writer)", rows, target)
        return {"path": target, "mode": plan["mode"], "rows_written": rows}
    crash_point("applied")
    log.info("wrote %d rows to %s (append; the staged files committed as version %d)", rows, target, version)
    return {"path": target, "mode": plan["mode"], "rows_written": rows}


def staging_of(plan: Mapping[str, Any], key: str) -> str | None:
    """Where a write's rows are staged: recorded once staged; before that (a run that died
    while staging), found again from the table's location when Spark runs here."""
    if plan.get("staging"):
        return str(plan["staging"])
    if plan.get("format") == "iceberg" and plan.get("mode") == "append":
        return None  # staged as an Iceberg snapshot, which stays unpublished in the table's metadata
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
        if record.plan.get("format") == "delta":
            delta_files.remove_files(staging)  # files a Delta transaction wrote into the table
        remove_staging(staging)
    return True


def staged_files(staging: str) -> list[str]:
    fs, path = url_to_fs(staging)
    if not fs.exists(path):
        return []
    return [p for p in fs.find(path) if p.endswith(".parquet")]


def staged_rows(staging: str) -> int:
    """The rows of a staged write, from its Parquet files' footers (no Spark job)."""
    fs, _ = url_to_fs(staging)
    return sum(parquet_rows(fs, path) for path in staged_files(staging))


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
        if self.format == "iceberg" and self.mode == "append" and self.table:
            staged = _stage_wap(df, self.table, record.key)
            return {**self.plan(), **staged}, int(staged["rows_staged"])
        where = self.path or location(spark, self.table or "")
        staging = staging_url(where, record.key)
        require_s3a(spark, staging)
        txn = self._delta_transaction(df, where)
        if txn is not None:
            files = delta_files.stage(df, txn, staging)
            return {**self.plan(), "staging": staging, "path": where, **files}, int(files["rows_staged"])
        df.write.mode("overwrite").parquet(spark_base_path(staging))
        rows = staged_rows(staging)
        plan = {**self.plan(), "staging": staging, "rows_staged": rows}
        if (
            self.format == "delta"
        ):  # written by its folder; its key is looked for in the commits after this one
            plan.update(path=where, version_before=delta_version(where))
        return plan, rows

    def _delta_transaction(self, df: DataFrame, where: str) -> Any | None:
        """The Delta transaction an append writes its files in (``delta_files``); None
        for any other write, which is staged as Parquet."""
        if self.format != "delta" or self.mode != "append" or self.options:
            return None
        return delta_files.writable(df, where, self.partition_by)

    def discard(self, store: StateStore, record: OutputRecord) -> None:
        discard(store, record)

    def result(self, staged: int, ctx: str) -> dict[str, Any]:
        return {"table": self.target, "mode": self.mode, "ctx": ctx, "rows_staged": staged}
