"""Starting job and crawler runs as processes, and watching them end.

Each run is a ``sparkmark`` process in its own session: a job's is handed its
``host.RunRequest`` (script, arguments, run id, attempt, project, Spark settings) as
one document on its standard input, a crawler's its command line the same way, so
neither shows in the process list. Each runs in its own session (so a timeout or a stop ends it with everything it started), with
its output in a log file under ``$SPARKMARK_HOME/logs``. The process writes its exit
status to a file beside the log, so a scheduler that restarts while the process
runs can still learn how it ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.owner import is_dead
from ..engine.run_logs import error_path
from ..host.handover import ARGV_PIPE_ENV, EXIT_FILE_ENV, exit_path, read_exit
from ..pool.protocol import HostJob
from ..state.handle import private_dir, private_file
from ..table_formats import JVM_PARAMETERS
from .capacity import PYTHON_SHELL


@dataclass(frozen=True)
class LaunchSpec:
    action_id: str
    kind: str  # JOB or CRAWLER
    name: str
    attempt: int
    document: dict[str, Any]  # {"run": a RunRequest} or {"argv": the command line after the program name}
    env: dict[str, str]
    log_path: Path
    # The runtime's interpreter, for a job whose GlueVersion is not sparkmark's own Spark.
    python: str | None = None


# Spark SQL settings fixed when Spark starts (the others are set on the run's own session).
STATIC_SQL = (
    "spark.sql.extensions",
    "spark.sql.catalog.",
    "spark.sql.catalogImplementation",
    "spark.sql.warehouse.dir",
    "spark.sql.hive.",
    "spark.sql.queryExecutionListeners",
    "spark.sql.streaming.streamingQueryListeners",
    "spark.sql.ui.",
    "spark.sql.event.",
    "spark.sql.legacy.sessionInitWithConfigDefaults",
    "spark.sql.sources.schemaStringLengthThreshold",
    "spark.sql.filesourceTableRelationCacheSize",
    "spark.sql.codegen.cache.maxEntries",
    "spark.sql.globalTempDatabase",
    "spark.sql.broadcastExchange.maxThreadThreshold",
)


def session_settings(conf: dict[str, str]) -> bool:
    """Whether every setting is one a running Spark takes on a session (SQL settings that
    are not fixed at start)."""
    return all(k.startswith("spark.sql.") and not k.startswith(STATIC_SQL) for k in conf)


def python_shell(spec: LaunchSpec) -> bool:
    """Whether the spec is a Python shell job's run (plain Python, no Spark)."""
    request = spec.document.get("run") if spec.kind == "JOB" else None
    return isinstance(request, dict) and request.get("command") == PYTHON_SHELL


def poolable(spec: LaunchSpec, master: str) -> bool:
    """Whether a job run may be hosted by a warm process: a batch run whose Spark is the
    pool's (no master, table formats, jars or settings fixed at start of its own; its
    SQL settings are set on its session)."""
    request = spec.document.get("run") if spec.kind == "JOB" else None
    if not isinstance(request, dict):
        return False
    arguments = list(request.get("arguments") or [])
    return (
        request.get("command") != PYTHON_SHELL
        and session_settings(dict(request.get("spark_conf") or {}))
        and request.get("spark_master") in (None, "", master)
        and not request.get("remote")
        and not request.get("until_caught_up")
        and request.get("max_batches") is None
        and not any(a in JVM_PARAMETERS for a in arguments[::2])
    )


class Launcher:
    """Runs processes and remembers the ones it started. With a pool, a job run its Spark
    allows is hosted by a warm process instead (``pool.Pool.host_job``), told the Glue
    endpoint its boto3 should talk to by ``endpoint`` (the door that serves it knows)."""

    def __init__(
        self,
        pool: Any = None,
        master: str = "local[*]",
        endpoint: Callable[[], dict[str, str]] | None = None,
    ) -> None:
        self._children: dict[str, Any] = {}  # subprocess.Popen, or pool.PooledRun
        self.pool = pool
        self.master = master
        self.endpoint = endpoint

    def start(self, spec: LaunchSpec) -> int:
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.pool is not None and poolable(spec, self.master):
            pool = self.pool if spec.python is None else self.pool.sibling(spec.python)
            private_dir(spec.log_path.parent)
            exit_path(spec.log_path).unlink(missing_ok=True)
            hosted = pool.host_job(
                lambda: HostJob(
                    request=spec.document["run"],
                    log=str(spec.log_path),
                    err=str(error_path(spec.log_path)),
                    exit=str(exit_path(spec.log_path)),
                    env=spec.env,
                    cwd=os.getcwd(),
                    endpoint=self.endpoint() if self.endpoint is not None else {},
                )
            )
            if hosted is not None:
                self._children[spec.action_id] = hosted
                return int(hosted.pid)
        exit_file = exit_path(spec.log_path)
        exit_file.unlink(missing_ok=True)
        env = {**os.environ, **spec.env, EXIT_FILE_ENV: str(exit_file), ARGV_PIPE_ENV: "1"}
        program = [spec.python or sys.executable, "-m", "sparkmark"]
        if python_shell(spec):
            # Plain Python, no JVM: its boto3 is pointed at the door's Glue endpoint here
            # (a Spark run's process finds one itself, as `sparkmark run` does).
            program = [sys.executable, "-m", "sparkmark.host.python_shell"]
            if self.endpoint is not None and not env.get("AWS_ENDPOINT_URL_GLUE"):
                env.update(
                    {
                        k: v
                        for k, v in self.endpoint().items()
                        if k == "AWS_ENDPOINT_URL_GLUE" or not env.get(k)
                    }
                )
        env.pop("PYSPARK_SUBMIT_ARGS", None)  # each run builds its own Spark arguments
        private_dir(spec.log_path.parent)
        fd = os.open(spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        err_fd = os.open(error_path(spec.log_path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with open(fd, "ab") as log, open(err_fd, "ab") as err:
            private_file(spec.log_path)  # made by an earlier version under a loose umask
            child = subprocess.Popen(
                program,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=err,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        assert child.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it died at once: its exit status says why
            child.stdin.write(json.dumps(spec.document).encode())
        with contextlib.suppress(BrokenPipeError):
            child.stdin.close()
        self._children[spec.action_id] = child
        return child.pid

    def exit_status(self, action_id: str, pid: int | None, log_path: str | None) -> int | bool | None:
        """None while the process runs; its exit status when it ended; False when it
        ended and its status is unknown (killed before it could write it)."""
        child = self._children.get(action_id)
        if child is not None:
            code = child.poll()
            if code is None:
                return None
            self._children.pop(action_id, None)
            return code
        if pid is not None and not is_dead(f"{socket.gethostname()}:{pid}") and not _is_zombie(pid):
            return None
        recorded = read_exit(log_path)
        return False if recorded is None else recorded

    def kill(self, action_id: str, pid: int | None, grace_seconds: float = 5.0) -> None:
        """End the run's whole process group: SIGTERM, and SIGKILL if it is still there
        after ``grace_seconds``."""
        if pid is None:
            return
        child = self._children.pop(action_id, None)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            if self._ended(child, pid, grace_seconds):
                break

    @staticmethod
    def _ended(child: subprocess.Popen | None, pid: int, seconds: float) -> bool:
        if child is not None:
            try:
                child.wait(timeout=seconds)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + seconds  # a process this launcher did not start
        while time.monotonic() < deadline:
            if is_dead(f"{socket.gethostname()}:{pid}") or _is_zombie(pid):
                return True
            time.sleep(0.05)
        return False

    def has_children(self) -> bool:
        return bool(self._children)

    def wait_any(self, seconds: float) -> None:
        """Wait up to ``seconds`` for this launcher's oldest child to end (the others'
        ends are seen on the next pass)."""
        children = list(self._children.values())
        if children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                children[0].wait(timeout=seconds)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def log_tail(log_path: str | None, lines: int = 8) -> str:
    """The last lines a launched process wrote: its stderr's (where failures are told),
    or its stdout's when it wrote nothing there."""
    if not log_path:
        return ""
    for path in (error_path(Path(log_path)), Path(log_path)):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        kept = [line for line in text.splitlines() if line.strip()]
        if kept:
            return "\n".join(kept[-lines:])
    return ""
