"""A job's run: its transaction (``JobRun``), how it starts, and the one path every
source is read by and every sink written by."""

from .failures import describe_error
from .reading import read_source
from .run import JobRun, running_runs, started_runs
from .starting import start_run
from .writing import Sink, write_sink

__all__ = [
    "JobRun",
    "Sink",
    "describe_error",
    "read_source",
    "running_runs",
    "start_run",
    "started_runs",
    "write_sink",
]
