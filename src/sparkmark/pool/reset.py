"""What a job run on a shared Spark context starts from and leaves behind.

Before: a new session of its own on the running context (its own temporary views, SQL
settings, functions and current database), made the one a script's
``SparkSession.builder.getOrCreate()`` and ``SparkContext()`` find. After: the
context's cached tables and frames, persisted RDDs, global temporary views and the
thread's local properties cleared, and the modules the run imported from its own
folders forgotten, so the next run imports its own.

The warm processes (``pool.worker``) and the pytest plugin's ``run_glue_job``
(``testing.glue_job``) reset every run this way.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any


def make_default(session: Any) -> None:
    """Make ``session`` the one scripts get: Spark's default and active session, and
    PySpark's."""
    from pyspark.sql import SparkSession

    jvm = session.sparkContext._jvm
    jvm.org.apache.spark.sql.SparkSession.setDefaultSession(session._jsparkSession)
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)
    SparkSession._instantiatedSession = session
    SparkSession._activeSession = session


def fresh_session(spark: Any) -> Any:
    """A new session on ``spark``'s context, made the one scripts get."""
    fresh = spark.newSession()
    make_default(fresh)
    return fresh


def clear(session: Any) -> None:
    """What a run leaves on the shared context: cached tables and frames, persisted
    RDDs, global temporary views, the thread's local properties."""
    sc = session.sparkContext
    with contextlib.suppress(Exception):
        session.catalog.clearCache()
    with contextlib.suppress(Exception):
        for rdd in list(sc._jsc.getPersistentRDDs().values()):
            rdd.unpersist(True)
    with contextlib.suppress(Exception):
        session._jsparkSession.sharedState().globalTempViewManager().clear()
    with contextlib.suppress(Exception):
        sc.setJobGroup("", "")
        sc._jsc.sc().clearJobGroup()
        for key in list(sc._jsc.sc().getLocalProperties().stringPropertyNames()):
            sc.setLocalProperty(key, None)


def forget_modules(before: set[str]) -> None:
    """Modules imported since ``before`` from the run's own folders (a helper beside the
    script, an extra Python file) are forgotten; libraries installed in the environment
    stay loaded."""
    installed = tuple(str(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p)
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if where is None:
            continue
        try:
            path = str(Path(where).resolve())
        except OSError:
            continue
        if not path.startswith(installed) and "/sparkmark/" not in path:
            sys.modules.pop(name, None)
