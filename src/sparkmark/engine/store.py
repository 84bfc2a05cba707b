"""The state store: runs, leases and bookmark versions, on SQLAlchemy Core.

One database handle, ``StateStore``, carries the three concerns, each in its own
module: runs and leases (``run_store``), bookmark versions and per-file state
(``bookmark_store``), and outputs (``output_store``), over the persistence floor's
handle (``state.handle``). Their tables are the bookmark component (``schema``); the
services register components of their own and open them on the same handle.

SQLite (the default, one file under ``$SPARKMARK_HOME``) and PostgreSQL are
supported. Every state change is one transaction. Nothing is ever updated in
place except a run's own row and the job's lease: bookmark versions, their
per-source summaries and their per-file entries are insert-only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy import insert, select

from ..settings import Settings
from ..state.handle import StoreHandle
from . import schema as t
from .batch_store import BatchStore
from .bookmark_store import BookmarkStore
from .output_store import OutputStore
from .run_store import RunStore
from .schema import utcnow

log = logging.getLogger("sparkmark.state")

__all__ = ["StateStore"]


class StateStore(StoreHandle, RunStore, BookmarkStore, OutputStore, BatchStore):
    """A handle on one state store, its bookmark tables brought up to this release."""

    def __init__(self, url: str):
        super().__init__(url, (t.BOOKMARKS,))
        # Read first: a store has its id from its first open on, and a read takes no
        # write lock (every SQLite write transaction is BEGIN IMMEDIATE).
        with self.engine.connect() as conn:
            known = t.read_store_id(conn)
        if known is None:
            with self.engine.begin() as conn:
                known = t.store_identity(conn)
        self.store_id: str = known
        if self.fresh:
            log.info("created a new state store at %s (id %s)", self.display_url, self.store_id)

    # ------------------------------------------------------------ identity

    def known_runs(self, run_ids: Iterable[str]) -> set[str]:
        """Which of ``run_ids`` this store has a record of."""
        wanted = sorted(set(run_ids))
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                found.update(
                    conn.execute(select(t.runs.c.run_id).where(t.runs.c.run_id.in_(chunk))).scalars()
                )
        return found

    def adopted_writes(self, keys: Iterable[str]) -> set[str]:
        """Which of the write ``keys`` were taken over with ``sparkmark outputs adopt``."""
        wanted = sorted(set(keys))
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                found.update(
                    conn.execute(
                        select(t.adopted_writes.c.output_key).where(t.adopted_writes.c.output_key.in_(chunk))
                    ).scalars()
                )
        return found

    def adopt_writes(self, keys: Iterable[str], target: str) -> None:
        now = utcnow()
        with self.engine.begin() as conn:
            have = set(
                conn.execute(
                    select(t.adopted_writes.c.output_key).where(t.adopted_writes.c.target == target)
                ).scalars()
            )
            rows = [{"output_key": k, "target": target, "adopted_at": now} for k in sorted(set(keys) - have)]
            if rows:
                conn.execute(insert(t.adopted_writes), rows)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> StateStore:
        return cls((settings or Settings.from_env()).state_url)
