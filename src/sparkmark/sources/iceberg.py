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
from typing import TYPE_CHECKING

from ..engine.models import CtxCommit
from ..errors import SourceError, first_line
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

    def _table(self, spark):
        """Iceberg's own table object, fresh: its snapshots are walked in the JVM, a few
        calls per snapshot read, whatever the length of the table's history."""
        jvm = spark.sparkContext._jvm
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, self.table)
        table.refresh()
        return table

    def _since(self, table, head, previous: int) -> list[tuple[int, str]] | None:
        """(snapshot id, operation) of the snapshots after ``previous`` up to ``head``,
        oldest first; None when ``previous`` is not an ancestor of ``head``."""
        chain = []
        snapshot = head
        while snapshot is not None and snapshot.snapshotId() != previous:
            chain.append((int(snapshot.snapshotId()), str(snapshot.operation())))
            parent = snapshot.parentId()
            snapshot = table.snapshot(parent) if parent is not None else None
        return None if snapshot is None else chain[::-1]

    def read(self, context: ReadContext) -> SourceOutcome:
        spark = context.spark
        try:
            table = self._table(spark)
        except Exception as exc:  # noqa: BLE001 - Spark's or Iceberg's error, in one line
            raise SourceError(f"{self.describe()} cannot be read: {first_line(exc)}") from None
        head = table.currentSnapshot()
        previous = context.previous.get("snapshot_id") if context.bookmark_ctx is not None else None
        bounds = context.range_states()
        if bounds is not None:  # a paused run with from/to: exactly what the run after "from" read
            previous = (bounds[0] or {}).get("snapshot_id")
            upper = (bounds[1] or {}).get("snapshot_id")
            head = table.snapshot(upper) if upper is not None else None
            if head is None:
                raise SourceError(
                    f"{self.describe()}: the bookmark's --job-bookmark-to version has "
                    + (
                        "no snapshot for this ctx"
                        if upper is None
                        else f"snapshot {upper}, no longer in the table"
                    )
                )
        current = int(head.snapshotId()) if head is not None else None
        reader = spark.read.format("iceberg")
        snapshots_read = 0
        frame: DataFrame
        if current is None:  # a table with no snapshot yet: nothing to read
            frame = spark.table(self.table).limit(0)
        elif previous is None:
            frame = reader.option("versionAsOf", str(current)).load(self.table)  # Spark 4: not snapshot-id
            counted = spark.sql(
                f"SELECT count(*) FROM {self.table}.history WHERE is_current_ancestor"
            ).first()
            snapshots_read = int(counted[0]) if counted is not None else 0
        elif previous == current:
            frame = spark.table(self.table).limit(0)
        else:
            read = self._since(table, head, int(previous))
            if read is None:
                raise SourceError(
                    f"{self.describe()}: the bookmarked snapshot {previous} is no longer in the table's "
                    f"history (expired, or rolled back past); reset the bookmark of ctx {self.ctx!r} to "
                    "read the table whole"
                )
            changed = [(sid, op) for sid, op in read if op not in READABLE]
            if changed:
                sid, op = changed[0]
                raise SourceError(
                    f"{self.describe()}: snapshot {sid} is {'an' if op[:1] in 'aeiou' else 'a'} {op}, which "
                    "changes rows an incremental read cannot take back; the bookmark stays at snapshot "
                    f"{previous}. Reset the bookmark of ctx {self.ctx!r} to read the table whole"
                )
            snapshots_read = len(read)
            frame = (
                reader.option("start-snapshot-id", previous)
                .option("end-snapshot-id", current)
                .load(self.table)
            )
        metrics = {
            "type": "iceberg",
            "table": self.table,
            "snapshots_read": snapshots_read,
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
                    "snapshots": snapshots_read,
                    "from_snapshot": previous,
                },
            }
            commit = CtxCommit(ctx=self.ctx or context.bookmark_ctx, state=state)
        return SourceOutcome(frame, commit, metrics)
