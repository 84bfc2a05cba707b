"""Glue's table optimizers for Iceberg tables, kept beside the catalog and run here.

An optimizer is one of three kinds for one table, as Glue's ``CreateTableOptimizer``
takes it:

- ``compaction``: Iceberg's ``rewrite_data_files`` (binpack, or sort by the table's sort
  order), checked every hour, when the table has at least ``minInputFiles`` data files;
- ``retention``: ``expire_snapshots`` older than ``snapshotRetentionPeriodInDays``,
  keeping ``numberOfSnapshotsToRetain``, every ``runRateInHours``;
- ``orphan_file_deletion``: ``remove_orphan_files`` older than
  ``orphanFileRetentionPeriodInDays`` under ``location``, every ``runRateInHours``.

Definitions and runs are kept documents (``kept_documents``). What runs an optimizer is
the leading scheduler (``workflow.scheduler``), through ``sparkmark catalog optimize``: a
Spark with Iceberg whose GlueCatalog is this catalog. This module holds the rules: which
settings are valid, when an optimizer is due, the statements a run makes and the metrics
Glue reports from their results."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..errors import ArgumentError
from .kept_documents import KeptDocuments

OPTIMIZER = "table-optimizer"
RUN = "table-optimizer-run"
TYPES = ("compaction", "retention", "orphan_file_deletion")
STRATEGIES = ("binpack", "sort", "z-order")
RUNS_KEPT = 100  # per optimizer, newest first
UNFINISHED = ("starting", "in_progress")  # run states before its end

# Glue's defaults ("Optimizing Iceberg tables" in AWS's guide).
COMPACTION_CHECK = timedelta(hours=1)
DEFAULT_MIN_INPUT_FILES = 100
DEFAULT_RETENTION_DAYS = 5
DEFAULT_SNAPSHOTS_KEPT = 1
DEFAULT_RUN_RATE_HOURS = 24
DEFAULT_ORPHAN_DAYS = 3


def key(database: str, table: str, kind: str) -> str:
    return f"{database}/{table}/{kind}"


def _iceberg(config: dict[str, Any], section: str) -> dict[str, Any]:
    return dict((config.get(section) or {}).get("icebergConfiguration") or {})


def _positive(name: str, value: Any, *, zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise ArgumentError(
            f"{name} must be a whole number {'of 0 or more' if zero else 'above 0'}, got {value!r}"
        )


def check_configuration(kind: str, config: dict[str, Any]) -> None:
    """One line for a setting this optimizer cannot run with."""
    if kind not in TYPES:
        raise ArgumentError(f"optimizer type {kind!r} is not one of {', '.join(TYPES)}")
    if kind == "compaction":
        given = _iceberg(config, "compactionConfiguration")
        strategy = given.get("strategy", "binpack")
        if strategy not in STRATEGIES:
            raise ArgumentError(f"compaction strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
        if strategy == "z-order":
            raise ArgumentError(
                "z-order compaction is not supported: Iceberg's rewrite_data_files needs the columns "
                "to order by named; use sort (by the table's sort order) or binpack"
            )
        _positive("minInputFiles", given.get("minInputFiles"))
        _positive("deleteFileThreshold", given.get("deleteFileThreshold"))
    elif kind == "retention":
        given = _iceberg(config, "retentionConfiguration")
        _positive("snapshotRetentionPeriodInDays", given.get("snapshotRetentionPeriodInDays"))
        _positive("numberOfSnapshotsToRetain", given.get("numberOfSnapshotsToRetain"))
        _positive("runRateInHours", given.get("runRateInHours"))
        if given.get("cleanExpiredFiles") is False:
            raise ArgumentError(
                "cleanExpiredFiles=false is not supported: Iceberg's expire_snapshots procedure, "
                "which runs retention here, always deletes the files only expired snapshots used"
            )
    else:
        given = _iceberg(config, "orphanFileDeletionConfiguration")
        _positive("orphanFileRetentionPeriodInDays", given.get("orphanFileRetentionPeriodInDays"))
        _positive("runRateInHours", given.get("runRateInHours"))


def interval(kind: str, config: dict[str, Any]) -> timedelta:
    """How often the optimizer runs (compaction: how often it looks at the table)."""
    if kind == "compaction":
        return COMPACTION_CHECK
    section = "retentionConfiguration" if kind == "retention" else "orphanFileDeletionConfiguration"
    return timedelta(hours=_iceberg(config, section).get("runRateInHours") or DEFAULT_RUN_RATE_HOURS)


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def statement(
    catalog: str, database: str, table: str, kind: str, config: dict[str, Any], now: datetime
) -> str:
    """The Iceberg procedure call a run makes (``now`` is the run's start, in UTC)."""
    name = _sql_string(f"{database}.{table}")
    if kind == "compaction":
        given = _iceberg(config, "compactionConfiguration")
        options = {
            "min-input-files": str(given.get("minInputFiles") or DEFAULT_MIN_INPUT_FILES),
        }
        if given.get("deleteFileThreshold"):
            options["delete-file-threshold"] = str(given["deleteFileThreshold"])
        pairs = ", ".join(f"{_sql_string(k)}, {_sql_string(v)}" for k, v in options.items())
        strategy = given.get("strategy", "binpack")
        return (
            f"CALL {catalog}.system.rewrite_data_files(table => {name}, strategy => "
            f"{_sql_string(strategy)}, options => map({pairs}))"
        )
    if kind == "retention":
        given = _iceberg(config, "retentionConfiguration")
        days = given.get("snapshotRetentionPeriodInDays") or DEFAULT_RETENTION_DAYS
        keep = given.get("numberOfSnapshotsToRetain") or DEFAULT_SNAPSHOTS_KEPT
        older = (now - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
        return (
            f"CALL {catalog}.system.expire_snapshots(table => {name}, "
            f"older_than => TIMESTAMP {_sql_string(older)}, retain_last => {int(keep)})"
        )
    given = _iceberg(config, "orphanFileDeletionConfiguration")
    days = given.get("orphanFileRetentionPeriodInDays") or DEFAULT_ORPHAN_DAYS
    older = (now - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
    where = f", location => {_sql_string(given['location'])}" if given.get("location") else ""
    return (
        f"CALL {catalog}.system.remove_orphan_files(table => {name}, "
        f"older_than => TIMESTAMP {_sql_string(older)}{where})"
    )


def run_metrics(kind: str, result: dict[str, Any], hours: float) -> dict[str, Any]:
    """Glue's metrics of a run, from the procedure's result (its one row, or for orphan
    files the number of rows)."""
    common = {"NumberOfDpus": 0, "DpuHours": 0.0, "JobDurationInHour": round(hours, 6)}
    if kind == "compaction":
        files = int(result.get("rewritten_data_files_count") or 0)
        size = int(result.get("rewritten_bytes_count") or 0)
        return {
            "metrics": {
                "NumberOfBytesCompacted": str(size),
                "NumberOfFilesCompacted": str(files),
                "NumberOfDpus": "0",
                "JobDurationInHour": str(round(hours, 6)),
            },
            "compactionMetrics": {
                "IcebergMetrics": {"NumberOfBytesCompacted": size, "NumberOfFilesCompacted": files, **common}
            },
        }
    if kind == "retention":
        return {
            "retentionMetrics": {
                "IcebergMetrics": {
                    "NumberOfDataFilesDeleted": int(result.get("deleted_data_files_count") or 0),
                    "NumberOfManifestFilesDeleted": int(result.get("deleted_manifest_files_count") or 0),
                    "NumberOfManifestListsDeleted": int(result.get("deleted_manifest_lists_count") or 0),
                    **common,
                }
            }
        }
    return {
        "orphanFileDeletionMetrics": {
            "IcebergMetrics": {"NumberOfOrphanFilesDeleted": int(result.get("orphan_files") or 0), **common}
        }
    }


@dataclass(frozen=True)
class Optimizer:
    database: str
    table: str
    kind: str
    configuration: dict[str, Any]
    created_at: datetime

    @property
    def enabled(self) -> bool:
        return bool(self.configuration.get("enabled"))


class TableOptimizers:
    """Optimizer definitions and their runs in the state store."""

    def __init__(self, kept: KeptDocuments):
        self.kept = kept

    def get(self, database: str, table: str, kind: str) -> Optimizer | None:
        found = self.kept.get(OPTIMIZER, key(database, table, kind))
        if found is None:
            return None
        return Optimizer(database, table, kind, found.document, found.created_at)

    def all(self) -> list[Optimizer]:
        out = []
        for found in self.kept.all(OPTIMIZER):
            database, table, kind = found.name.split("/", 2)
            out.append(Optimizer(database, table, kind, found.document, found.created_at))
        return out

    def create(self, database: str, table: str, kind: str, configuration: dict[str, Any]) -> None:
        check_configuration(kind, configuration)
        self.kept.create(OPTIMIZER, key(database, table, kind), configuration)

    def update(self, database: str, table: str, kind: str, configuration: dict[str, Any]) -> None:
        check_configuration(kind, configuration)
        self.kept.put(OPTIMIZER, key(database, table, kind), configuration)

    def delete(self, database: str, table: str, kind: str) -> None:
        self.kept.delete(OPTIMIZER, key(database, table, kind))
        for run in self._run_documents(database, table, kind):
            self.kept.delete(RUN, run.name)

    def _run_documents(self, database: str, table: str, kind: str):
        """The optimizer's kept runs, newest first (a run is named by its start)."""
        return self.kept.all(RUN, prefix=key(database, table, kind) + "/")[::-1]

    def runs(self, database: str, table: str, kind: str) -> list[dict[str, Any]]:
        """The optimizer's runs, newest first."""
        return [d.document for d in self._run_documents(database, table, kind)]

    def run(self, database: str, table: str, kind: str, started: datetime) -> dict[str, Any] | None:
        """The run that started at ``started``."""
        found = self.kept.get(RUN, f"{key(database, table, kind)}/{started.isoformat()}")
        return None if found is None else found.document

    def record(self, database: str, table: str, kind: str, run: dict[str, Any]) -> None:
        """Keep a run (its start names it: a later record of the same start replaces it),
        and at most RUNS_KEPT of them."""
        started: datetime = run["startTimestamp"]
        self.kept.put(RUN, f"{key(database, table, kind)}/{started.isoformat()}", run)
        for stale in self._run_documents(database, table, kind)[RUNS_KEPT:]:
            self.kept.delete(RUN, stale.name)

    def due(self, now: datetime) -> list[Optimizer]:
        """Enabled optimizers whose last run started at least their interval ago (or never)."""
        out = []
        for optimizer in self.all():
            if not optimizer.enabled:
                continue
            runs = self.runs(optimizer.database, optimizer.table, optimizer.kind)
            if runs and runs[0].get("eventType") in UNFINISHED:
                continue
            last = as_time(runs[0]["startTimestamp"]) if runs else None
            if last is None or now - last >= interval(optimizer.kind, optimizer.configuration):
                out.append(optimizer)
        return out


def as_time(value: Any) -> datetime:
    """A run's time as kept (a kept document holds it as text) or as given."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
