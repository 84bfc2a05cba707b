"""Starting a run: a job's name, bookmark option and range checked, the settings'
state store, connections and crash points resolved, and the ``JobRun`` begun. The
native ``Job`` and the Glue façade's ``Job.init()`` both start their runs here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..connections import Connections
from ..engine import faults, storage
from ..engine.models import BookmarkOption
from ..engine.names import check_name
from ..engine.store import StateStore
from ..errors import ArgumentError
from ..settings import Settings
from .run import JobRun
from .run_metrics import MetricsSetup

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def bookmark_option(value: BookmarkOption | str) -> BookmarkOption:
    try:
        return BookmarkOption(value)
    except ValueError:
        raise ArgumentError(
            f"invalid bookmark option {value!r}; use one of " + ", ".join(o.value for o in BookmarkOption)
        ) from None


def start_run(
    name: str,
    *,
    settings: Settings,
    args: Mapping[str, str] | None = None,
    option: BookmarkOption | str = BookmarkOption.DISABLE,
    bookmark_from: str | None = None,
    bookmark_to: str | None = None,
    temp_dir: str | None = None,
    spark: SparkSession | None = None,
    store: StateStore | None = None,
    attempt: int | None = None,
    run_id: str | None = None,
) -> JobRun:
    """Begin a run of job ``name``: its lease taken, its record written. ``args`` are
    the job's arguments as the run records them (``JOB_NAME`` and ``TempDir`` added
    when absent). With ``spark``, that session is prepared for the settings' object
    store; without, the store's settings wait for the session the run starts later."""
    if not name or not str(name).strip():
        raise ArgumentError("a job needs a name (--JOB_NAME)")
    name = check_name("job name", str(name))
    option = bookmark_option(option)
    if (bookmark_from is None) != (bookmark_to is None):
        raise ArgumentError("--job-bookmark-from and --job-bookmark-to go together")
    if bookmark_from is not None and option is not BookmarkOption.PAUSE:
        raise ArgumentError("--job-bookmark-from/--job-bookmark-to need job-bookmark-pause")
    store = store or StateStore.from_settings(settings)
    values = dict(args or {})
    values.setdefault("JOB_NAME", name)
    temp_dir = temp_dir or settings.temp_dir
    values.setdefault("TempDir", temp_dir)
    if spark is not None:
        storage.prepare_spark(spark, settings)
    else:
        storage.configure(settings)
    faults.arm(settings.crash_at)
    return JobRun(
        name,
        store=store,
        option=option,
        args=values,
        temp_dir=temp_dir,
        lease_seconds=settings.lease_seconds,
        connections=Connections.from_settings(settings),
        bookmark_from=bookmark_from,
        bookmark_to=bookmark_to,
        attempt=attempt,
        run_id=run_id,
        metrics_setup=MetricsSetup.from_settings(settings),
    )
