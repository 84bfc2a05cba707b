"""What a run's sources and sinks hand it while it works, kept until the run ends: the
ctx each source claimed and the state it will commit, its metrics, the streams it reads,
the micro-batch whose function is running, the databases it reaches, the outputs its
sinks staged, and its data-quality outcomes. :class:`runtime.run.JobRun` is a ledger
and what ends it (the commit, the publish, a failure)."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from .. import outputs as run_outputs
from ..connections import Connections
from ..engine import jdbc as jdbc_keys
from ..engine.masking import register_secret
from ..engine.models import BookmarkOption, BookmarkVersion, CtxCommit, OutputRecord
from ..engine.names import check_name
from ..engine.store import StateStore
from ..errors import SinkError

log = logging.getLogger("sparkmark.run")


class RunLedger:
    """The run's books, filled in through these methods only (the run sets the fields)."""

    name: str
    store: StateStore
    option: BookmarkOption
    base: BookmarkVersion | None
    connections: Connections
    outputs: list[OutputRecord]
    _sources: dict[str, Any]
    _pending: dict[str, CtxCommit]
    _sinks: list[dict[str, Any]]
    _quality: dict[str, dict[str, Any]]
    _streams: list[tuple[Any, str | None]]
    _stream_metrics: dict[str, Any] | None
    _batch: threading.local
    _databases: dict[str, jdbc_keys.Database]

    @property
    def run_id(self) -> str:  # the run's, once it is recorded
        raise NotImplementedError

    # ------------------------------------------------------------ sources

    def claim_source(self, ctx: str | None, what: str) -> str | None:
        """Check a source's ctx; the ctx when the source is bookmarked in this run, else None."""
        if ctx is not None:
            check_name("transformation_ctx", ctx)
        if ctx is not None and ctx in self._sources:
            # Glue does not refuse this: both reads share the ctx's bookmark state.
            log.warning(
                "source %s reuses ctx %r, already read in run %s: both reads share one bookmark "
                "state, so each starts from what the other left, and a change to either source "
                "moves the bookmark of both; give each source its own transformation_ctx",
                what,
                ctx,
                self.run_id,
            )
        if ctx is None and self.option is not BookmarkOption.DISABLE:
            log.warning(
                "source %s has no ctx (transformation_ctx): it is read in full and not bookmarked", what
            )
        return ctx if self.option is not BookmarkOption.DISABLE else None

    def previous_state(self, ctx: str | None) -> dict[str, Any]:
        """The state ``ctx`` committed last, as this run's bookmark version has it."""
        if self.base is None or ctx is None:
            return {}
        return dict(self.base.ctx_states.get(ctx) or {})

    @property
    def lineage(self) -> tuple[tuple[int, int], ...]:
        return self.base.lineage if self.base else ()

    def record_source(self, key: str, metrics: dict[str, Any]) -> None:
        name, n = key, 1
        while name in self._sources:  # a ctx read again: its metrics as "ctx#2", "ctx#3"...
            n += 1
            name = f"{key}#{n}"
        self._sources[name] = metrics

    def add_stream_source(self, source: Any, ctx: str | None) -> None:
        """A streaming source this run reads (its progress lives in a checkpoint)."""
        self._streams.append((source, ctx))

    def stream_sources(self) -> list[tuple[Any, str | None]]:
        return list(self._streams)

    def record_stream(self, summary: dict[str, Any]) -> None:
        """The streaming query's progress so far (batches, records, offsets, lag)."""
        self._stream_metrics = summary

    # ------------------------------------------------------------ micro-batches

    @property
    def current_batch(self) -> Any:
        """The micro-batch (``runtime.batches.BatchScope``) whose function runs in this
        thread, or None."""
        return getattr(self._batch, "scope", None)

    @contextlib.contextmanager
    def batch_scope(self, scope: Any):
        """While a micro-batch's function runs: its writes are the batch's, published
        when the batch commits, not when the run does."""
        self._batch.scope = scope
        try:
            yield scope
        finally:
            self._batch.scope = None

    def batch_sink_ctx(self, ctx: str | None) -> str | None:
        """In a micro-batch every write is exactly-once: one without a ctx gets one."""
        scope = self.current_batch
        if scope is None or ctx is not None:
            return ctx
        return scope.next_sink_ctx()

    def stage_commit(self, commit: CtxCommit) -> None:
        """What a source adds to the bookmark when this run commits. A ctx read twice
        commits what both reads processed, with the later read's summary."""
        earlier = self._pending.get(commit.ctx)
        if earlier is not None:
            files = {f.path: f for f in earlier.files}
            files.update({f.path: f for f in commit.files})
            commit = CtxCommit(
                commit.ctx, commit.state, list(files.values()), {**earlier.dirs, **commit.dirs}
            )
        self._pending[commit.ctx] = commit

    # ------------------------------------------------------------ sinks

    def add_database(self, database: jdbc_keys.Database) -> None:
        """A database this run reads or writes; its credentials stay in memory, for
        publishing and discarding this run's staged writes."""
        register_secret(database.password)
        self._databases[database.jdbc_url] = database

    @property
    def databases(self) -> dict[str, jdbc_keys.Database]:
        return dict(self._databases)

    def recover_outputs(self, only_url: str) -> None:
        """Finish the committed writes of earlier runs to the database at ``only_url``,
        which may have waited for the credentials this run now has."""
        run_outputs.recover(
            self.store,
            self.name,
            running_run=self.run_id,
            known=self.databases,
            only_url=only_url,
            connections=self.connections,
        )

    def record_sink(self, result: dict[str, Any]) -> None:
        self._sinks.append(result)

    def claim_sink(self, ctx: str) -> None:
        check_name("transformation_ctx", ctx)
        scope = self.current_batch
        if any(o.ctx == ctx for o in (scope.outputs if scope is not None else self.outputs)):
            raise SinkError(
                f"sink ctx {ctx!r} was already written in run {self.run_id}; give each sink "
                "its own ctx (transformation_ctx)"
            )

    def add_output(self, record: OutputRecord) -> None:
        scope = self.current_batch
        (scope.outputs if scope is not None else self.outputs).append(record)

    def record_quality(self, name: str, summary: dict[str, Any]) -> None:
        self._quality[name] = summary
