"""The job host: runs a job script in this process, as ``__main__``, for one typed
``RunRequest``, and says how it ended (``HostOutcome``). ``sparkmark run`` and
``sparkmark studio run`` are thin commands over it, and the scheduler hands a job's
process one request document on its standard input instead of loose settings."""

from .request import RunRequest
from .script import HostOutcome, RunLine, run_request

__all__ = ["HostOutcome", "RunLine", "RunRequest", "run_request"]
