"""A run's error, said in a few lines: no JVM stack trace, and a hint where there is one."""

from __future__ import annotations

import re

from ..connectors import missing_connector
from ..engine.masking import mask_text

_UNREADABLE = re.compile(
    r"(?:FileNotFoundException: (?:File )?(\S+?) \(Permission denied\)"
    r"|AccessDeniedException: (\S+))"
)
_READ_FILE = re.compile(r"reading file (\S+?)\.? ")


def describe_error(exc: BaseException) -> str:
    """A run's error message: what went wrong in a few lines (no JVM stack trace), with
    a hint where we have one."""
    text = str(exc).strip() or type(exc).__name__
    lines = [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("at ", "..."))
    ]
    summary = " | ".join(dict.fromkeys(lines[:6]))[:3000]
    missing = missing_connector(text)
    if missing:
        return mask_text(f"{type(exc).__name__}: {missing}")
    unreadable = _UNREADABLE.search(text)
    if unreadable:
        path = unreadable.group(1) or unreadable.group(2)
        summary = (
            f"file {path} cannot be read (permission denied); the run commits nothing. Fix "
            "the file's permissions, or leave it out with exclusions, and re-run. " + summary
        )
    elif (
        "FileNotFoundException" in text
        or "FILE_NOT_EXIST" in text
        or ("does not exist" in text and "Path" in text)
    ):
        where = _READ_FILE.search(text)
        summary = (
            (f"file {where.group(1)}" if where else "a file chosen for this run")
            + " was deleted or replaced before Spark read it; the run commits nothing and "
            "the next run lists the source again. " + summary
        )
    return mask_text(f"{type(exc).__name__}: {summary}")
