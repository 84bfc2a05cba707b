"""A Delta Lake table as a bookmarked source: a run reads the versions committed since
the version its ctx committed last, and commits the version it read up to. The first
run reads the table as of its current version.

The rows a range of versions added are read from the table's change data feed when the
table has one (``delta.enableChangeDataFeed``), else from the data files those
versions added (the files of the current version that the bookmarked one did not have).
Only versions that add rows can be read so. The policy for the others, between the
bookmark and the current version:

- ``WRITE`` in append mode, ``STREAMING UPDATE`` in append mode, ``CREATE TABLE``: read
  (their added rows);
- ``OPTIMIZE``, ``VACUUM …``, table property and column changes: nothing to read;
- anything else (``WRITE`` that overwrites, ``DELETE``, ``UPDATE``, ``MERGE``, ``RESTORE``
  …): the run fails in one line that names the version and its operation, and the
  bookmark stays where it was; resetting the ctx's bookmark makes the next run read the
  table whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine.models import CtxCommit
from ..engine.storage import require_s3a, spark_base_path
from ..errors import SourceError, first_line
from ..sinks.tables import delta_version
from .base import ReadContext, SourceOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

APPENDS = ("WRITE", "STREAMING UPDATE", "CREATE TABLE", "CREATE TABLE AS SELECT")
NO_CHANGE = (
    "OPTIMIZE",
    "VACUUM START",
    "VACUUM END",
    "SET TBLPROPERTIES",
    "UNSET TBLPROPERTIES",
    "ADD COLUMNS",
    "CHANGE COLUMN",
    "UPGRADE PROTOCOL",
)
CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def _appends(operation: str, parameters: dict[str, str]) -> bool:
    if operation == "WRITE":
        return parameters.get("mode", "").strip('"') == "Append"
    if operation == "STREAMING UPDATE":
        return parameters.get("outputMode", "").strip('"') == "Append"
    return operation in APPENDS


@dataclass
class DeltaSource:
    path: str  # the table's location
    ctx: str | None = None

    def describe(self) -> str:
        return f"Delta table {self.path}"

    @property
    def _where(self) -> str:
        """The table's folder as Spark names it (``s3a://`` for ``s3://``)."""
        return spark_base_path(self.path)

    def _ref(self) -> str:
        return "delta.`" + self._where.replace("`", "``") + "`"

    def read(self, context: ReadContext) -> SourceOutcome:
        spark = context.spark
        require_s3a(spark, self.path)
        latest = delta_version(self.path)  # from the log's file names: no Spark job
        previous = context.previous.get("version") if context.bookmark_ctx is not None else None
        bounds = context.range_states()
        if bounds is not None:  # a paused run with from/to: exactly what the run after "from" read
            previous = (bounds[0] or {}).get("version")
        # the history from the bookmarked version on (it must still be there), with room for
        # versions committed since the log was listed
        wanted = None if previous is None else max(latest - int(previous) + 1, 1) + 16
        try:
            found = spark.sql(
                f"DESCRIBE HISTORY {self._ref()}" + (f" LIMIT {wanted}" if wanted else " LIMIT 1")
            )
        except Exception as exc:  # noqa: BLE001 - Spark's analysis error, in one line
            raise SourceError(
                f"{self.describe()} cannot be read as a Delta table: {first_line(exc)}"
            ) from None
        history = sorted(
            found.select("version", "operation", "operationParameters").collect(), key=lambda r: r.version
        )
        current = history[-1].version if history else None
        if bounds is not None:
            current = (bounds[1] or {}).get("version")
            if current is None or not any(v.version == current for v in history):
                raise SourceError(
                    f"{self.describe()}: the bookmark's --job-bookmark-to version has "
                    + (
                        "no table version for this ctx"
                        if current is None
                        else f"version {current}, no longer in the table's history"
                    )
                )
        reader = spark.read.format("delta")
        read: list[Any] = []
        frame: DataFrame
        if current is None or previous == current:
            frame = reader.load(self._where).limit(0)
        elif previous is None:
            frame = reader.option("versionAsOf", current).load(self._where)
            read = list(range(int(current) + 1))  # every version up to the current one
        else:
            read = [v for v in history if previous < v.version <= current]
            if previous > current or not any(v.version == previous for v in history):
                raise SourceError(
                    f"{self.describe()}: the bookmarked version {previous} is no longer in the table's "
                    f"history; reset the bookmark of ctx {self.ctx!r} to read the table whole"
                )
            changed = [
                v
                for v in read
                if v.operation not in NO_CHANGE
                and not _appends(v.operation, dict(v.operationParameters or {}))
            ]
            if changed:
                first = changed[0]
                raise SourceError(
                    f"{self.describe()}: version {first.version} is a {first.operation}, which changes rows an "
                    f"incremental read cannot take back; the bookmark stays at version {previous}. Reset the "
                    f"bookmark of ctx {self.ctx!r} to read the table whole"
                )
            frame = self._added(context, previous, current)
        metrics = {"type": "delta", "table": self.path, "versions_read": len(read), "version": current}
        commit = None
        if context.commit_state and context.bookmark_ctx is not None and current is not None:
            state = {
                "type": "delta",
                "table": self.path,
                "version": current,
                "last_run": {"run_id": context.run_id, "versions": len(read), "from_version": previous},
            }
            commit = CtxCommit(ctx=self.ctx or context.bookmark_ctx, state=state)
        return SourceOutcome(frame, commit, metrics)

    def _added(self, context: ReadContext, previous: int, current: int) -> DataFrame:
        """The rows versions ``previous`` (exclusive) to ``current`` added: from the
        change data feed when the table keeps one, else from the files they added."""
        from pyspark.sql import functions as F

        spark = context.spark
        properties = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {self._ref()}").collect()}
        if properties.get("delta.enableChangeDataFeed", "false").lower() == "true":
            feed = (
                spark.read.format("delta")
                .option("readChangeFeed", "true")
                .option("startingVersion", previous + 1)
                .option("endingVersion", current)
                .load(self._where)
            )
            return feed.where(F.col("_change_type") == "insert").drop(*CDF_COLUMNS)
        before = set(
            spark.read.format("delta").option("versionAsOf", previous).load(self._where).inputFiles()
        )
        now = spark.read.format("delta").option("versionAsOf", current).load(self._where)
        added = [f for f in now.inputFiles() if f not in before]
        if not added:
            return now.limit(0)
        return now.where(F.col("_metadata.file_path").isin(added)).select(*now.columns)
