"""Where a run's output is kept, and keeping it.

A run's stdout is ``<home>/logs/<kind>s/<name>/<run id>.log`` and its stderr is beside
it with ``.err``, private to the owner: the scheduler's launcher writes there for the
processes it starts, and a run from a terminal keeps a copy there of what it printed
(``Capture``), so both are read the same way (as CloudWatch Logs' streams, on the
console).
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from ..state.handle import private_dir, private_file
from .masking import MaskingFilter


def log_path(home: Path, kind: str, name: str, run_id: str) -> Path:
    """Where run ``run_id`` of job or crawler ``name`` keeps its stdout."""
    return home / "logs" / ("jobs" if kind.upper() == "JOB" else "crawlers") / name / f"{run_id}.log"


def error_path(path: Path) -> Path:
    """Where the run whose stdout is ``path`` keeps its stderr."""
    return path.with_suffix(".err")


class _Tee(io.TextIOBase):
    """Writes to the terminal's stream and to a file."""

    def __init__(self, shown: TextIO, kept: TextIO):
        self.shown, self.kept = shown, kept

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.shown.write(text)

    def flush(self) -> None:
        self.kept.flush()
        self.shown.flush()

    def isatty(self) -> bool:
        return self.shown.isatty()

    def writable(self) -> bool:
        return True

    @property
    def buffer(self):  # bytes written here reach the terminal only
        return self.shown.buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.shown, "encoding", "utf-8")

    def fileno(self) -> int:
        return self.shown.fileno()


class Capture:
    """While open, what this process prints (``print``, and sparkmark's log records at
    the level the log is set to, masked) is also written to two files, and Spark's own
    log (of a session started meanwhile, see :func:`jvm_log`) to the second. Each run
    started meanwhile gets them at its log path as soon as it starts (hard links, so the
    console can follow a run from a terminal while it runs; a copy at the end where the
    file system refuses links)."""

    active: Capture | None = None  # the one open in this process, if any

    def __init__(self, home: Path):
        self.home = home
        parent = home / "logs" / ".terminal"  # beside the runs' logs: one file system
        try:
            private_dir(parent)
            self._dir = Path(tempfile.mkdtemp(prefix="run-", dir=parent))
        except OSError:
            self._dir = Path(tempfile.mkdtemp(prefix="sparkmark-run-"))
        private_dir(self._dir)
        self.out_file = self._dir / "out"
        self.err_file = self._dir / "err"
        self._linked: set[tuple[str, str]] = set()

    def __enter__(self) -> Capture:
        # Appending, line by line: Spark's log appender writes to the same stderr file.
        self._out = open(self.out_file, "a", encoding="utf-8", buffering=1)
        self._err = open(self.err_file, "a", encoding="utf-8", buffering=1)
        for path in (self.out_file, self.err_file):
            private_file(path)
        self._saved = sys.stdout, sys.stderr
        sys.stdout = _Tee(sys.stdout, self._out)
        sys.stderr = _Tee(sys.stderr, self._err)
        self._handler = logging.StreamHandler(self._err)
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._handler.addFilter(MaskingFilter())  # as every handler of sparkmark's log
        logging.getLogger("sparkmark").addHandler(self._handler)
        Capture.active = self
        return self

    def __exit__(self, *_exc) -> None:
        Capture.active = None
        logging.getLogger("sparkmark").removeHandler(self._handler)
        sys.stdout, sys.stderr = self._saved
        self._out.close()
        self._err.close()

    def link(self, name: str, run_id: str) -> None:
        """Give run ``run_id`` of job ``name`` this capture's files as its log, now."""
        target = log_path(self.home, "JOB", name, run_id)
        try:
            private_dir(target.parent)
            for source, destination in ((self.out_file, target), (self.err_file, error_path(target))):
                destination.unlink(missing_ok=True)
                os.link(source, destination)
        except OSError:
            return  # copied when the capture is kept
        self._linked.add((name, run_id))

    def keep(self, runs: list[tuple[str, str]]) -> None:
        """Copy what was captured to the log path of each (job name, run id) that has no
        link to it yet."""
        for name, run_id in runs:
            if (name, run_id) in self._linked:
                continue
            target = log_path(self.home, "JOB", name, run_id)
            private_dir(target.parent)
            for source, destination in ((self.out_file, target), (self.err_file, error_path(target))):
                shutil.copyfile(source, destination)
                private_file(destination)

    def discard(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


def run_started(name: str, run_id: str) -> None:
    """A run began in this process: when the process's output is being captured (a run
    from a terminal), the run's log is that capture from now on."""
    if Capture.active is not None:
        Capture.active.link(name, run_id)


def jvm_log() -> Path | None:
    """Where a Spark session started now should write its own log, or None to leave
    Spark's logging alone: a run from a terminal sends it to the run's stderr log and
    shows only Spark's errors on the terminal."""
    return Capture.active.err_file if Capture.active is not None else None
