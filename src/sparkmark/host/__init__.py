"""The job host: runs a job script in this process, as ``__main__``, for one typed
``RunRequest``, and says how it ended (``HostOutcome``). ``sparkmark run`` and
``sparkmark studio run`` are thin commands over it, and the scheduler hands a job's
process one request document on its standard input instead of loose settings. A Python
shell job's process runs ``host.python_shell`` instead, with no Spark at all.

The names are loaded when first asked for: ``python -m sparkmark.host.python_shell``
must not pay for PySpark's imports."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .request import RunRequest
    from .script import HostOutcome, RunLine, run_request

__all__ = ["HostOutcome", "RunLine", "RunRequest", "run_request"]


def __getattr__(name: str) -> Any:
    if name == "RunRequest":
        from .request import RunRequest

        return RunRequest
    if name in ("HostOutcome", "RunLine", "run_request"):
        from . import script

        return getattr(script, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
