"""An Iceberg table as a bookmarked source: a run reads the snapshots committed since
the snapshot its ctx committed last, as Iceberg's incremental append scan
(``start-snapshot-id`` exclusive, ``end-snapshot-id`` inclusive), and commits the
snapshot it read up to. The first run reads the table as of its current snapshot.

Only snapshots that add rows can be read incrementally without loss or repeats. The
policy for the others, between the bookmark and the current snapshot:

- ``append``: read (its added rows);
- ``replace`` (a compaction, or a rewrite of files that changes no row): nothing to read;
- ``overwrite`` and ``delete`` (rows changed or removed): the run fails in one line that
  names the snapshot and its operation, and the bookmark stays where it was; resetting
  the ctx's bookmark (``sparkmark bookmark reset``) makes the next run read the table
  whole;
- a bookmarked snapshot that is no longer in the table's history (expired, or the table
  rolled back past it): the run fails in one line the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine.models import CtxCommit
from ..errors import SourceError
from .base import ReadContext, SourceOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

READABLE = ("append", "replace")  # operations an incremental read may pass over


@dataclass
class IcebergSource:
    table: str  # a Spark identifier: catalog.database.table
    ctx: str | None = None

    def describe(self) -> str:
        return f"Iceberg table {self.table}"

    def _history(self, context: ReadContext) -> list[Any]:
        """The table's snapshots on its current branch, oldest first."""
        return context.spark.sql(
            f"SELECT s.snapshot_id, s.parent_id, s.operation, s.summary FROM {self.table}.snapshots s "
            f"JOIN {self.table}.history h ON s.snapshot_id = h.snapshot_id "
            "WHERE h.is_current_ancestor ORDER BY h.made_current_at"
        ).collect()

    def read(self, context: ReadContext) -> SourceOutcome:
        spark = context.spark
        history = self._history(context)
        current = history[-1].snapshot_id if history else None
        previous = context.previous.get("snapshot_id") if context.bookmark_ctx is not None else None
        reader = spark.read.format("iceberg")
        read: list[Any] = []
        frame: DataFrame
        if current is None:  # a table with no snapshot yet: nothing to read
            frame = spark.table(self.table).limit(0)
        elif previous is None:
            frame = reader.option("versionAsOf", str(current)).load(self.table)  # Spark 4: not snapshot-id
            read = history
        elif previous == current:
            frame = spark.table(self.table).limit(0)
        else:
            ids = [s.snapshot_id for s in history]
            if previous not in ids:
                raise SourceError(
                    f"{self.describe()}: the bookmarked snapshot {previous} is no longer in the table's "
                    f"history (expired, or rolled back past); reset the bookmark of ctx {self.ctx!r} to "
                    "read the table whole"
                )
            read = history[ids.index(previous) + 1 :]
            changed = [s for s in read if s.operation not in READABLE]
            if changed:
                first = changed[0]
                raise SourceError(
                    f"{self.describe()}: snapshot {first.snapshot_id} is an {first.operation}, which changes "
                    "rows an incremental read cannot take back; the bookmark stays at snapshot "
                    f"{previous}. Reset the bookmark of ctx {self.ctx!r} to read the table whole"
                )
            frame = (
                reader.option("start-snapshot-id", previous)
                .option("end-snapshot-id", current)
                .load(self.table)
            )
        metrics = {
            "type": "iceberg",
            "table": self.table,
            "snapshots_read": len(read),
            "snapshot_id": current,
        }
        commit = None
        if context.commit_state and context.bookmark_ctx is not None and current is not None:
            state = {
                "type": "iceberg",
                "table": self.table,
                "snapshot_id": current,
                "last_run": {
                    "run_id": context.run_id,
                    "snapshots": len(read),
                    "from_snapshot": previous,
                },
            }
            commit = CtxCommit(ctx=self.ctx or context.bookmark_ctx, state=state)
        return SourceOutcome(frame, commit, metrics)
