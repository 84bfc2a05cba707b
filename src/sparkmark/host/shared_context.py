"""A script hosted in a process whose Spark is already running shares that Spark.

Glue scripts make their context with a bare ``SparkContext()``, which on Glue runs in
a fresh process. In a process that already has one (a test session, a notebook, a warm
process that runs one job after another) PySpark refuses a second context. While
``sharing()`` is in effect, ``SparkContext(...)`` gives the running context instead, and
its arguments (master, app name, conf) are ignored with one log line, as they would be
by ``SparkContext.getOrCreate``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("sparkmark.run")


class _Sharing:
    """How many ``sharing()`` blocks are open, and whether SparkContext is wrapped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.installed = False


_state = _Sharing()


def _install() -> None:
    """Wrap SparkContext's construction once; the wrapper defers to PySpark outside
    ``sharing()`` (the class keeps its own ``__new__``, which is never removed again:
    taking a ``__new__`` back off a class leaves object's argument check behind)."""
    from pyspark import SparkContext

    if _state.installed:
        return
    original_init = SparkContext.__init__

    def __new__(cls, *args: Any, **kwargs: Any):
        running = SparkContext._active_spark_context
        if _state.depth and running is not None and cls is SparkContext:
            return running
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if (
            _state.depth
            and self is SparkContext._active_spark_context
            and getattr(self, "_jsc", None) is not None
        ):
            if args or kwargs:
                log.info("SparkContext(...) in a hosted script: the running context is used as it is")
            return
        original_init(self, *args, **kwargs)

    SparkContext.__new__ = __new__  # type: ignore[method-assign]
    SparkContext.__init__ = __init__  # type: ignore[method-assign]
    _state.installed = True


@contextmanager
def sharing() -> Iterator[None]:
    """While open, ``SparkContext()`` gives the running context when there is one."""
    with _state.lock:
        _install()
        _state.depth += 1
    try:
        yield
    finally:
        with _state.lock:
            _state.depth -= 1
