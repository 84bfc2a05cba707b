"""How a scheduler hands a run to the process it starts, and learns how it ended.

The work comes on the process's standard input as one JSON document (``{"run": a
RunRequest}`` or ``{"argv": [...]}``), so a run's arguments, a password among them
perhaps, never appear in its argv, which any local user can read. The process writes
its exit status, and for a run that failed the one line saying why, to a file beside
its log, so that a scheduler that restarted meanwhile still learns how it ended.

Nothing here imports more than the standard library: a Python shell job's process reads
its request through it before anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

EXIT_FILE_ENV = "SPARKMARK_EXIT_FILE"
ARGV_PIPE_ENV = "SPARKMARK_ARGV_ON_STDIN"


def launched_document() -> dict[str, Any] | None:
    """What a launcher sent through stdin, when this process was started so: ``{"run":
    request}`` for a job, ``{"argv": [...]}`` for another command."""
    if not os.environ.pop(ARGV_PIPE_ENV, None):
        return None
    document = json.loads(sys.stdin.read() or "{}")
    argv = document.get("argv") if isinstance(document, dict) else None
    if not isinstance(document, dict) or not (
        isinstance(document.get("run"), dict)
        or (isinstance(argv, list) and all(isinstance(a, str) for a in argv))
    ):
        raise ValueError('the document sent on stdin is neither {"run": {...}} nor {"argv": [...]}')
    return document


def exit_path(log_path: Path) -> Path:
    return log_path.with_suffix(".exit")


def write_exit(path: Path, code: int, error: str | None = None) -> None:
    """A run's exit status (and why it failed, in one line), where its scheduler reads it."""
    document: dict[str, Any] = {"code": code}
    if error:
        document["error"] = error
    with contextlib.suppress(OSError):
        path.write_text(json.dumps(document), encoding="utf-8")


def record_exit(code: int, error: str | None = None) -> None:
    """Called by a launched process as it exits."""
    target = os.environ.get(EXIT_FILE_ENV)
    if target:
        write_exit(Path(target), code, error)


def _exit_document(log_path: str | None) -> dict[str, Any] | None:
    if not log_path:
        return None
    try:
        document = json.loads(exit_path(Path(log_path)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def read_exit(log_path: str | None) -> int | None:
    document = _exit_document(log_path)
    try:
        return int(document["code"]) if document is not None else None
    except (KeyError, TypeError, ValueError):
        return None


def read_exit_error(log_path: str | None) -> str | None:
    """The one line a process that failed left beside its exit status, if any."""
    document = _exit_document(log_path)
    error = document.get("error") if document is not None else None
    return error if isinstance(error, str) and error else None
