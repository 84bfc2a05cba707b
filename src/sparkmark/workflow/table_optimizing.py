"""The leading scheduler's part in Glue's table optimizers: each enabled optimizer that is
due (catalog.table_optimizers) is run by ``sparkmark catalog optimize`` in a process of
its own, one at a time per optimizer; a run whose process ends without recording its end
is kept as failed, with the end of what it printed."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path

from ..catalog.kept_documents import KeptDocuments
from ..catalog.table_optimizers import UNFINISHED, Optimizer, TableOptimizers, as_time
from ..engine.store import StateStore

log = logging.getLogger("sparkmark.scheduler.optimizers")

EVERY = timedelta(minutes=1)  # how often due optimizers are looked for
STALE = timedelta(hours=6)  # a run in progress this long, with no process here, has ended


class OptimizerRuns:
    def __init__(self, state: StateStore, logs: Path, command: list[str] | None = None):
        """``command`` runs one optimizer (its name, ``--type`` and ``--started`` follow):
        ``sparkmark catalog optimize`` with this Python unless given."""
        self.state = state
        self.logs = logs
        self.command = command or [sys.executable, "-m", "sparkmark", "catalog", "optimize"]
        self.children: dict[tuple[str, str, str], tuple[subprocess.Popen, datetime, Path]] = {}
        self._looked: datetime | None = None

    @cached_property
    def optimizers(self) -> TableOptimizers:
        """Made on the first pass that leads (a scheduler that only queues runs never needs it)."""
        return TableOptimizers(KeptDocuments(self.state))

    def tick(self, now: datetime) -> None:
        self._reap()
        if self._looked is not None and now - self._looked < EVERY:
            return
        self._looked = now
        for optimizer in self.optimizers.due(now):
            self._start(optimizer, now)
        self._close_stale(now)

    def _start(self, optimizer: Optimizer, now: datetime) -> None:
        key = (optimizer.database, optimizer.table, optimizer.kind)
        if key in self.children:
            return
        self.optimizers.record(*key, {"startTimestamp": now, "eventType": "starting"})
        self.logs.mkdir(parents=True, exist_ok=True)
        log_path = self.logs / f"{optimizer.database}.{optimizer.table}.{optimizer.kind}.log"
        with open(log_path, "wb") as out:
            child = subprocess.Popen(
                [
                    *self.command,
                    f"{optimizer.database}.{optimizer.table}",
                    "--type",
                    optimizer.kind,
                    "--started",
                    now.isoformat(),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        log.info("table optimizer %s of %s.%s started (log %s)", optimizer.kind, *key[:2], log_path)
        self.children[key] = (child, now, log_path)

    def _reap(self) -> None:
        for key, (child, started, log_path) in list(self.children.items()):
            code = child.poll()
            if code is None:
                continue
            del self.children[key]
            self._fail_if_unfinished(key, started, f"its process ended with exit code {code}", log_path)

    def _fail_if_unfinished(
        self, key: tuple[str, str, str], started: datetime, why: str, log_path: Path | None
    ) -> None:
        run = self.optimizers.run(*key, started)
        if run is None or run.get("eventType") not in UNFINISHED:
            return
        tail = ""
        if log_path is not None and log_path.exists():
            with open(log_path, "rb") as f:
                f.seek(max(0, log_path.stat().st_size - 65536))
                lines = f.read().decode(errors="replace").strip().splitlines()
            tail = ": " + lines[-1][:500] if lines else ""
        self.optimizers.record(
            *key, {**run, "startTimestamp": started, "eventType": "failed", "error": why + tail}
        )

    def _close_stale(self, now: datetime) -> None:
        """A run still in progress long after it started, with no process of ours running
        it (the scheduler that ran it stopped), is kept as failed so the optimizer runs again."""
        for optimizer in self.optimizers.all():
            key = (optimizer.database, optimizer.table, optimizer.kind)
            if key in self.children:
                continue
            runs = self.optimizers.runs(*key)
            if (
                runs
                and runs[0].get("eventType") in UNFINISHED
                and now - as_time(runs[0]["startTimestamp"]) >= STALE
            ):
                self._fail_if_unfinished(
                    key, as_time(runs[0]["startTimestamp"]), "the scheduler running it stopped", None
                )
