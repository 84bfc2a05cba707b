"""The one write path, the mirror of ``reading.py``: every sink, native or Glue's,
in a run or not, is written here.

A sink is a target and its options (``sinks.files.FileSink``, ``sinks.jdbc.JdbcSink``).
With no run the frame is written at once and nothing is kept. In a run, the write is
the run's: every write first checks that the target holds no writes of runs this state
store has no record of (``engine.ownership``), since writing on would publish again the
input those runs read. A write with a ctx (or any write inside a micro-batch, which
gets one) is exactly-once: staged under a write key, recorded with the run, and
published only after the bookmark commits; a write without a ctx is visible at once,
as on Glue. The guard is decided here and nowhere else.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from ..engine.models import OutputKind, OutputRecord, OutputState
from ..engine.store import StateStore
from . import capture

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .run import JobRun

log = logging.getLogger("sparkmark.run")


class Sink(Protocol):
    """A write target. ``target`` names it in messages and in the run's outputs."""

    @property
    def ctx(self) -> str | None: ...

    @property
    def kind(self) -> OutputKind: ...

    @property
    def unit(self) -> str:
        """What a staged write counts: "files", "rows"."""

    @property
    def target(self) -> str: ...

    def check(self) -> None:
        """Refuse options that cannot be written, before anything is."""

    def join(self, run: JobRun, staged: bool) -> None:
        """What the run must know of this target before writing it (a database's
        credentials, and the committed writes of earlier runs that waited for them)."""

    def guard(self, store: StateStore) -> None:
        """Refuse a target that holds writes ``store`` did not make."""

    def write_now(self, df: DataFrame) -> dict[str, Any]:
        """Write at once; the result says what was written."""

    def plan(self) -> dict[str, Any]:
        """The write's plan as recorded before it is staged."""

    def stage(self, df: DataFrame, record: OutputRecord, store: StateStore) -> tuple[dict[str, Any], int]:
        """Stage the write of ``record``: its plan as staged, and how many of the sink's
        units it staged."""

    def discard(self, store: StateStore, record: OutputRecord) -> None:
        """Undo a staging that failed part way."""

    def result(self, staged: int, ctx: str) -> dict[str, Any]:
        """What a staged write returns to the caller."""


def write_sink(sink: Sink, df: DataFrame, run: JobRun | None) -> dict[str, Any]:
    """Write ``df`` to ``sink``: at once with no run; in ``run``, guarded, and staged
    until the commit when the sink has a ctx or a micro-batch is writing."""
    sink.check()
    if capture.current() is not None:  # an upgrade check's run: nothing is written
        return capture.write(sink.target, sink.kind.value, df)
    if run is None:
        return sink.write_now(df)
    run.require_running()
    ctx = run.batch_sink_ctx(sink.ctx)
    if ctx is not None:
        run.claim_sink(ctx)
    sink.join(run, staged=ctx is not None)
    sink.guard(run.store)
    if ctx is None:
        result = sink.write_now(df)
        run.record_sink(result)
        return result
    store = run.store
    record = store.stage_output(run.run_id, ctx=ctx, kind=sink.kind, target=sink.target, plan=sink.plan())
    try:
        plan, staged = sink.stage(df, record, store)
    except BaseException:
        sink.discard(store, record)
        raise
    store.set_output(record.run_id, record.seq, OutputState.STAGED, plan=plan)
    run.add_output(store.get_output(record.run_id, record.seq))
    log.info(
        "job %s: %d %s for %s staged as write %s; they are %s when the %s commits",
        run.name,
        staged,
        sink.unit,
        sink.target,
        record.key,
        "published" if sink.kind is OutputKind.FILES else "merged",
        "batch" if run.current_batch is not None else "run",
    )
    return sink.result(staged, ctx)
