"""What every bookmarked source does, and what it is given to do it.

A source is read in one step, ``read(context)``: it plans against the state its ctx
committed last (``context.previous``, or the two states of a paused range), reads
exactly that with Spark, and returns the frame with the state to commit when the run
commits. The run loop (``runtime.reading.read_source``) is the one caller: it claims
the ctx in the run, builds the context, and keeps the outcome's metrics and commit.
The same source is read without a run (Glue's GlueContext before Job.init) through the
same call, with a context that bookmarks nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..engine.models import BookmarkVersion, CtxCommit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..engine.store import StateStore


@dataclass(frozen=True)
class ReadContext:
    """What a source needs to know about the run reading it."""

    spark: SparkSession
    ctx: str | None  # the source's name in the bookmark, as given (None: unnamed)
    bookmark_ctx: str | None = None  # the ctx it is bookmarked under in this run, or None
    commit_state: bool = False  # whether the run records the source's new state (enable)
    previous: dict[str, Any] = field(default_factory=dict)  # the ctx's last committed state
    range: tuple[BookmarkVersion, BookmarkVersion] | None = None  # pause with from/to
    store: StateStore | None = None
    lineage: tuple[tuple[int, int], ...] = ()
    job_name: str | None = None
    run_id: str | None = None  # None: read outside any run
    temp_dir: str | None = None

    @property
    def in_run(self) -> bool:
        return self.run_id is not None

    def range_states(self) -> tuple[dict | None, dict | None] | None:
        """In a paused run with from/to: the states the ctx had at the two versions (None
        for a version without one); None in any other run."""
        if self.bookmark_ctx is None or self.range is None:
            return None
        lower, upper = self.range
        return lower.ctx_states.get(self.bookmark_ctx), upper.ctx_states.get(self.bookmark_ctx)


@dataclass
class SourceOutcome:
    frame: DataFrame
    commit: CtxCommit | None  # what the bookmark gains when the run commits
    metrics: dict[str, Any] = field(default_factory=dict)


class Source(Protocol):
    """A bookmarked source: files under paths, or a database table or query."""

    ctx: str | None

    def describe(self) -> str:
        """What the source reads, for messages (paths, or a table)."""
        ...

    def read(self, context: ReadContext) -> SourceOutcome: ...
