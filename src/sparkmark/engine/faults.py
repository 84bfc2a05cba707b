"""Crash points for the reliability tests.

Setting ``SPARKMARK_CRASH_AT=<point>`` makes the process kill itself with SIGKILL
when it reaches that point, to prove that a crash there loses and duplicates
nothing. Unset (always, outside the tests), each point costs one comparison with
None. The points, in the order a run meets them:

  listing     after the first folder of a file source was listed
  reading     as soon as Spark runs a job after a file source was planned
  writing     once Spark has written a part file of an exactly-once file sink
  staged      in job.commit(), before the state store is touched
  commit      inside the bookmark commit's transaction, before it commits
  committed   right after the commit, before any output is published
  publishing  after the first file of a file sink was moved into place
  applying    inside a JDBC sink's merge transaction, before it commits
  applied     after a table sink's commit (Iceberg, Delta), before it is marked published
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from ..errors import ConfigError

POINTS = (
    "listing",
    "reading",
    "writing",
    "staged",
    "commit",
    "committed",
    "publishing",
    "applying",
)
# After a table sink's commit (Iceberg, Delta), before the write is marked published.
TABLE_POINTS = ("applied",)
# In a streaming micro-batch: its writes staged but the batch not committed; the batch
# committed and published but not yet marked done in Spark's checkpoint.
STREAM_POINTS = ("batch_staged", "batch_committed")
ARMED: str | None = None


def arm(point: str | None) -> None:
    """Die at ``point`` from now on (``SPARKMARK_CRASH_AT``, passed down from Settings)."""
    global ARMED  # noqa: PLW0603 - one crash point per process
    if point is not None and point not in POINTS + TABLE_POINTS + STREAM_POINTS:
        raise ConfigError(
            f"SPARKMARK_CRASH_AT must be one of {', '.join(POINTS + TABLE_POINTS + STREAM_POINTS)}, got {point!r}"
        )
    ARMED = point


def crash_point(name: str) -> None:
    """Die here when armed for ``name``."""
    if ARMED is not None and name == ARMED:
        _die()


def crash_when(name: str, condition: Callable[[], bool]) -> None:
    """When armed for ``name``: watch ``condition`` from a thread and die once it holds
    (for points inside a Spark action, which the driver does not step through)."""
    if ARMED is None or name != ARMED:
        return

    def watch() -> None:
        while True:
            try:
                if condition():
                    _die()
            except Exception:  # noqa: BLE001 - the condition may look at things not there yet
                pass
            time.sleep(0.005)

    threading.Thread(target=watch, name=f"sparkmark-crash-{name}", daemon=True).start()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
