"""Stopping a run with a signal: SIGTERM (a scheduler's stop, a container's shutdown)
and SIGINT (Ctrl-C) end the run as STOPPED.

The first signal cancels Spark's running jobs and raises ``RunStopped`` in the main
thread, so the run is recorded STOPPED, its staged output discarded and its lease
released; ``sparkmark run`` then exits with 128 + the signal's number (143 for
SIGTERM, 130 for SIGINT). A second signal exits at once, with the same code.

While a run commits, a signal waits until the commit and publishing are over: a
stop never lands between the bookmark commit and the writes it makes visible.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

_installed = False
_received: int | None = None
_deferring = 0
_watching = 0
_deferred: int | None = None


class RunStopped(KeyboardInterrupt):
    """The process was asked to stop. A KeyboardInterrupt, so that code which already
    treats Ctrl-C as a stop (the run's end, Spark's own handling) does the same."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _cancel_spark_jobs() -> None:
    context = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    active = getattr(getattr(context, "SparkContext", None), "_active_spark_context", None)
    if active is not None:
        with contextlib.suppress(Exception):  # the JVM may be going down with us
            active.cancelAllJobs()


def _handler(signum: int, _frame) -> None:
    global _received, _deferred  # noqa: PLW0603 - signal state is per process
    if _received is not None:
        os._exit(128 + signum)  # the second signal: no more waiting
    _received = signum
    if _deferring or _watching:
        _deferred = signum
        return
    _cancel_spark_jobs()
    raise RunStopped(signum)


def install() -> None:
    """Handle SIGTERM and SIGINT from now on (main thread only; a no-op elsewhere).
    Called again once Spark has started, since PySpark sets its own SIGINT handler."""
    global _installed  # noqa: PLW0603
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        signal.signal(signum, _handler)
    _installed = True


def reinstall() -> None:
    """Take SIGINT back after PySpark's SparkContext replaced the handler."""
    if _installed:
        install()


def uninstall() -> None:
    global _installed, _received, _deferred
    if _installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _installed, _received, _deferred = False, None, None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a stop signal until the block is over, then stop."""
    global _deferring, _deferred  # noqa: PLW0603
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        pending, _deferred = _deferred, None
        if pending is not None and not _deferring:
            raise RunStopped(pending)


@contextlib.contextmanager
def watched() -> Iterator[None]:
    """While the main thread waits in a loop that asks ``take_request()`` (a streaming
    query's wait): a stop signal is recorded for the loop, not raised inside a call
    into Spark's JVM, which would log the interruption as an error."""
    global _watching  # noqa: PLW0603
    _watching += 1
    try:
        yield
    finally:
        _watching -= 1


def take_request() -> int | None:
    """The stop signal received while watched, once; None when there was none."""
    global _deferred
    if _deferring:
        return None  # a commit holds it: it is raised when the commit is over
    pending, _deferred = _deferred, None
    return pending
