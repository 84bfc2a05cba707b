"""A job's run: its transaction (``JobRun``) and the one path every source is read by."""

from .failures import describe_error
from .reading import read_source
from .run import JobRun, running_runs, started_runs

__all__ = ["JobRun", "describe_error", "read_source", "running_runs", "started_runs"]
