"""A run's error, said in a few lines: no JVM stack trace, and a hint where there is one."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Mapping
from typing import Any

from ..connectors import missing_connector
from ..engine.masking import mask_text

_UNREADABLE = re.compile(
    r"(?:FileNotFoundException: (?:File )?(\S+?) \(Permission denied\)"
    r"|AccessDeniedException: (\S+))"
)
# Spark 4 names the file it failed to read; Spark 3.5 says that a file does not exist.
_READ_FILE = re.compile(r"reading file (\S+?)\.? |SparkFileNotFoundException: File (\S+) does not exist")


# Py4J's words when the JVM it talks to is gone; the exception is then a connection
# error that says nothing of why.
_JVM_GONE = (
    "Answer from Java side is empty",
    "Error while sending or receiving",
    "An error occurred while trying to connect to the Java server",
    "Java gateway process exited",
)
SPARK_OOM_EXIT = 52  # Spark's SparkExitCode.OOM: a JVM that died of OutOfMemoryError


def jvm_ended() -> str | None:
    """Why the Spark JVM this process launched has ended, from its exit status; None
    while it runs, or when this process did not launch one (Spark Connect, a cluster's
    driver elsewhere). Called only once Py4J has lost the JVM."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None:
        return None
    try:  # the connection broke as the JVM went: give it a moment to be reaped
        code = proc.wait(timeout=3)
    except Exception:  # noqa: BLE001 - still running (TimeoutExpired), or not ours to wait for
        return None
    if code == SPARK_OOM_EXIT:
        return (
            "the Spark JVM ran out of memory (java.lang.OutOfMemoryError) and exited; give Spark "
            "more memory (spark.driver.memory) or read less per run (boundedFiles, boundedSize)"
        )
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        why = (
            " (the kernel's out-of-memory killer sends it, as does kill -9)"
            if -code == signal.SIGKILL
            else ""
        )
        return f"the Spark JVM was killed by {name}{why}"
    return f"the Spark JVM exited with status {code}"


def _jvm_gone(exc: BaseException, text: str) -> bool:
    names = {t.__name__ for t in type(exc).__mro__}
    if "Py4JJavaError" in names:  # the JVM answered with its own error: it is alive
        return False
    return bool(names & {"ConnectionError", "Py4JNetworkError"}) or any(m in text for m in _JVM_GONE)


def reading_of(sources: Mapping[str, Mapping[str, Any]]) -> str | None:
    """What a run was reading, for an error with no file of its own: the file, when a
    source read one, else how many files and the manifest that lists them."""
    parts = []
    for ctx, metrics in sources.items():
        count = metrics.get("files_read")
        if not count:
            continue
        manifest = metrics.get("manifest")
        file = _only_file(manifest) if count == 1 and manifest else None
        if file:
            parts.append(f"source {ctx}, file {file}")
        else:
            parts.append(f"source {ctx}, {count} files" + (f" (listed in {manifest})" if manifest else ""))
    return "; ".join(parts) or None


def _only_file(manifest: str) -> str | None:
    """The one file a manifest lists (``[{"path": folder, "files": [url]}]``)."""
    try:
        with open(manifest.removeprefix("file://"), encoding="utf-8") as f:
            document = json.load(f)
        return str(document[0]["files"][0])
    except (OSError, ValueError, LookupError, TypeError):
        return None


def describe_error(exc: BaseException, reading: str | None = None) -> str:
    """A run's error message: what went wrong in a few lines (no JVM stack trace), with
    a hint where we have one. ``reading`` says what the run was reading, for errors
    that name no file (a JVM that died)."""
    text = str(exc).strip() or type(exc).__name__
    if _jvm_gone(exc, text):
        ended = jvm_ended()
        if ended:
            during = f" while the run read {reading}" if reading else ""
            return mask_text(f"{ended}{during}; the run commits nothing ({type(exc).__name__}: {text[:300]})")
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
            (f"file {where.group(1) or where.group(2)}" if where else "a file chosen for this run")
            + " was deleted or replaced before Spark read it; the run commits nothing and "
            "the next run lists the source again. " + summary
        )
    return mask_text(f"{type(exc).__name__}: {summary}")
