"""Warm Spark processes kept ready, so that an interactive session or a small job
starts on a running JVM.

A :class:`WarmProcess` is one ``python -m sparkmark.pool.worker`` in its own process
group, its output in ``$SPARKMARK_HOME/logs/pool/``, talking over a socket pair
(the typed messages of :mod:`.protocol`). The :class:`Pool` keeps ``size`` of them ready; :meth:`Pool.take`
hands one out (starting one when none is ready) and starts its replacement. A process
given to a session is that session's until it ends. One that hosted a job comes back
(:meth:`Pool.give_back`) unless it failed, grew past ``max_memory``, hosted
``max_runs`` runs or was left with what it cannot reset; then it is stopped and
replaced. A ready process unused for ``idle_minutes`` is stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..settings import Settings
from ..state.handle import private_dir
from .config import PoolConfig, load_pool_config
from .protocol import EVENTS, FD_ENV, Channel, Failed, HostJob, JobEnded, Message, ProcessEnded, Ready, Stop

log = logging.getLogger("sparkmark.pool")

Listener = Callable[[Any], None]  # given each protocol.Event


class WarmProcess:
    """One warm process, from its start to its end."""

    def __init__(
        self,
        env: dict[str, str],
        log_dir: Path,
        label: str,
        folder: Path | None = None,
        python: str = sys.executable,
    ):
        parent_end, child_end = socket.socketpair()
        private_dir(log_dir)
        self.folder = folder  # the process's own files (its metastore), removed when it ends
        self.log_path = log_dir / f"{label}.log"
        self.ready = threading.Event()
        self.ended = threading.Event()
        self.error: str | None = None
        self.runs = 0
        self.rss = 0
        self.dirty: str | None = None
        self.idle_since = time.monotonic()
        self._listener: Listener | None = None
        self._lock = threading.Lock()
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with open(fd, "ab") as out:
            self.proc = subprocess.Popen(
                [python, "-m", "sparkmark.pool.worker"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env={**env, FD_ENV: str(child_end.fileno())},
                pass_fds=(child_end.fileno(),),
                start_new_session=True,
                close_fds=True,
            )
        child_end.close()
        self.pid = self.proc.pid
        self.channel = Channel(parent_end, EVENTS)
        threading.Thread(target=self._read, name=f"warm-{self.pid}", daemon=True).start()

    def _read(self) -> None:
        while True:
            message = self.channel.receive()
            if message is None:
                break
            if isinstance(message, Ready):
                self.rss = message.rss
                self.ready.set()
                continue
            if isinstance(message, Failed) and not self.ready.is_set():
                self.error = message.error or "the warm process failed to start Spark"
                break
            if isinstance(message, JobEnded):
                self.runs += 1
                self.rss = message.rss
                self.dirty = message.dirty or None
            with self._lock:
                listener = self._listener
            if listener is not None:
                listener(message)
        code = self.proc.wait()
        if self.error is None:
            self.error = f"the warm process ended (exit code {code}); its log: {self.log_path}"
        self.ended.set()
        self.ready.set()  # whoever waits for it learns it ended
        with self._lock:
            listener = self._listener
        if listener is not None:
            listener(ProcessEnded(code=code, error=self.error))

    def listen(self, listener: Listener | None) -> None:
        with self._lock:
            self._listener = listener

    def send(self, message: Message) -> bool:
        return self.channel.send(message)

    @property
    def alive(self) -> bool:
        return not self.ended.is_set() and self.proc.poll() is None

    def wait_ready(self, seconds: float) -> bool:
        """True when Spark is up in it; False when it ended or did not come up in time."""
        return self.ready.wait(seconds) and self.alive

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Ask it to end, then end its whole process group (its JVM too)."""
        self.send(Stop())
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace_seconds)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                self.proc.wait(timeout=grace_seconds)
                break
            except subprocess.TimeoutExpired:
                continue
        self.channel.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


class PooledRun:
    """A job run hosted by a warm process, seen as the launcher sees a process: ``pid``
    (the warm process's: ending its group ends the run), ``poll`` and ``wait``."""

    def __init__(self, process: WarmProcess, pool: Pool, message: HostJob):
        self.process = process
        self.pool = pool
        self.pid = process.pid
        self.returncode: int | None = None
        self._done = threading.Event()
        process.listen(self._event)
        threading.Thread(target=self._send, args=(message,), daemon=True).start()

    def _send(self, message: HostJob) -> None:
        if not self.process.wait_ready(600) or not self.process.send(message):
            log.warning("pool: warm process %d could not take its job: %s", self.pid, self.process.error)
            self.process.stop(grace_seconds=1)
            self._finish(1)

    def _event(self, message: Any) -> None:
        if isinstance(message, JobEnded):
            self._finish(message.code)
            self.pool.give_back(self.process)
        elif isinstance(message, ProcessEnded):
            self._finish(-9 if message.code is None else message.code or 1)

    def _finish(self, code: int) -> None:
        if not self._done.is_set():
            self.returncode = code
            self._done.set()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired("warm process job", timeout or 0)
        return int(self.returncode if self.returncode is not None else 1)


class Cancelled(RuntimeError):
    """What a process was being started for is no longer wanted."""


def wait_ready(process: WarmProcess, seconds: float, cancel: threading.Event | None = None) -> bool:
    """Whether ``process``'s Spark came up within ``seconds``; False as soon as it ended
    or ``cancel`` was set."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if process.wait_ready(max(0.0, min(left, 0.2))):
            return True
        if left <= 0 or process.ended.is_set() or (cancel is not None and cancel.is_set()):
            return False


class Pool:
    """Up to ``config.size`` warm processes kept ready for this server."""

    def __init__(
        self,
        config: PoolConfig,
        home: Path,
        env: dict[str, str] | None = None,
        python: str = sys.executable,
    ):
        self.config = config
        self.home = home
        self.python = python  # the runtime its processes run in (runtimes.py)
        self.tag = "" if python == sys.executable else f"-{Path(python).parent.parent.name}"
        self._siblings: dict[str, Pool] = {}
        self.log_dir = home / "logs" / "pool"
        self.env = dict(os.environ if env is None else env)
        self._ready: list[WarmProcess] = []
        self._starting: list[WarmProcess] = []
        self._busy: list[WarmProcess] = []  # hosting a job: they come back
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._count = 0
        self._wakeup = threading.Event()
        self._start_lock = threading.Lock()
        # Not filled until first needed (or prestart), and after its processes were let go idle.
        self._dormant = not config.prestart
        self._keeper = threading.Thread(target=self._keep, name="sparkmark-pool", daemon=True)
        self._keeper.start()

    # ------------------------------------------------------------------ processes
    def spark_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a warm process: this server's, with the pool's driver memory
        added to the Spark settings, and ``extra`` (a session's own table formats or
        Spark settings) over it."""
        env = dict(self.env)
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        try:
            confs = json.loads(env.get("SPARKMARK_SPARK_CONF") or "{}")
        except ValueError:
            confs = {}
        confs.setdefault("spark.driver.memory", self.config.memory)
        env["SPARKMARK_SPARK_CONF"] = json.dumps(confs)
        env.update(extra or {})
        return env

    def start_process(self, extra: dict[str, str] | None = None, label: str = "warm") -> WarmProcess:
        """A new warm process (not one of the pool's: for a session whose Spark settings
        differ from the pool's).

        With the embedded Derby metastore (the default), which one process at a time may
        open, each warm process has a metastore of its own in its folder: a copy of the
        catalog that the sessions and jobs it runs keep in step with the state store
        (``catalog.session_sync``). A metastore on a database server is shared as it is."""
        with self._lock:
            self._count += 1
            number = self._count
        # A sibling's processes are named for its runtime: their folders (a metastore each) never meet.
        name = f"{label}{self.tag}-{os.getpid()}-{number}"
        env = self.spark_env(extra)
        folder = None
        if not env.get("SPARKMARK_METASTORE_URL"):
            folder = self.home / "pool" / name
            folder.mkdir(parents=True, exist_ok=True)
            env["SPARKMARK_METASTORE_URL"] = f"jdbc:derby:;databaseName={folder / 'metastore'};create=true"
        process = WarmProcess(env, self.log_dir, name, folder, self.python)
        log.info("pool: started warm process %d (log %s)", process.pid, process.log_path)
        return process

    def take(self, wait_seconds: float = 300.0, cancel: threading.Event | None = None) -> WarmProcess:
        """A warm process whose Spark is up (the longest ready first), or a new one when
        none is; its replacement is started. Raises RuntimeError when none comes up, and
        :class:`Cancelled` (after stopping the process it waited for) when ``cancel`` is
        set meanwhile: a session deleted while it was provisioning."""
        deadline = time.monotonic() + wait_seconds
        self._dormant = False
        while True:
            with self._lock:
                ready = [p for p in self._ready if p.alive]
                self._ready = ready
                chosen = ready.pop(0) if ready else None
                starting = [p for p in self._starting if p.alive]
                self._starting = starting
                candidate = starting.pop(0) if chosen is None and starting else None
            if chosen is not None:
                self._wake()
                return chosen
            if candidate is None:
                candidate = self.start_process()
            self._wake()
            if wait_ready(candidate, max(0.0, deadline - time.monotonic()), cancel):
                return candidate
            if cancel is not None and cancel.is_set():
                candidate.stop(grace_seconds=1)
                raise Cancelled("the process was no longer wanted")
            error = candidate.error or "a warm process did not start in time"
            candidate.stop(grace_seconds=1)
            if time.monotonic() >= deadline or candidate.ended.is_set():
                raise RuntimeError(error)

    def give_back(self, process: WarmProcess) -> None:
        """A process that hosted a job: kept ready again, or replaced."""
        why = None
        if not process.alive:
            why = process.error or "it ended"
        elif process.dirty:
            why = process.dirty
        elif process.runs >= self.config.max_runs:
            why = f"it hosted {process.runs} runs (max_runs)"
        elif process.rss > self.config.max_memory_bytes:
            why = f"it grew to {process.rss // 2**20} MiB (max_memory {self.config.max_memory})"
        if why is not None or self._closed.is_set():
            with self._lock:
                if process in self._busy:
                    self._busy.remove(process)
            if why:
                log.info("pool: warm process %d replaced: %s", process.pid, why)
            threading.Thread(target=process.stop, daemon=True).start()
            self._wake()
            return
        process.listen(None)
        process.idle_since = time.monotonic()
        with self._lock:
            if process in self._busy:
                self._busy.remove(process)
            self._ready.append(process)

    def fill(self) -> None:
        """Start keeping ``size`` processes ready now: the missing ones are started before
        this returns, so work sent next finds them starting."""
        self._dormant = False
        self._top_up()
        self._wake()

    def _top_up(self) -> bool:
        """Start the processes the pool lacks; False when one could not be started."""
        with self._start_lock:
            with self._lock:
                self._starting = [p for p in self._starting if p.alive]
                self._busy = [p for p in self._busy if p.alive]
                wanted = self.config.size - len(self._ready) - len(self._starting) - len(self._busy)
                if self._dormant or self._closed.is_set():
                    wanted = 0
            for _ in range(max(0, wanted)):
                try:
                    process = self.start_process()
                except OSError as exc:
                    log.warning("pool: could not start a warm process: %s", exc)
                    return False
                with self._lock:
                    self._starting.append(process)
        return True

    def host_job(self, order: Callable[[], HostJob]) -> PooledRun | None:
        """Run a job on a warm process that is ready, or on the one starting (the job
        waits for its Spark); None when the pool has none (the job starts a process of
        its own, and the pool fills for the next). ``order`` makes the job's order, only
        once a process takes it (the endpoint it names may have to be started)."""
        with self._lock:
            ready = [p for p in self._ready if p.alive]
            starting = [p for p in self._starting if p.alive]
            chosen = ready.pop(0) if ready else (starting.pop(0) if starting else None)
            self._ready, self._starting = ready, starting
            if chosen is not None:
                self._busy.append(chosen)
            self._dormant = False
        self._wake()
        if chosen is None:
            log.info("pool: no warm process for this job (ready %d, starting %d)", len(ready), len(starting))
            return None
        log.info("pool: job on warm process %d", chosen.pid)
        try:
            message = order()
        except Exception:
            self.give_back(chosen)
            raise
        return PooledRun(chosen, self, message)

    def sibling(self, python: str) -> Pool:
        """The pool of another runtime (a Glue version whose Spark is not this pool's):
        the same settings, its processes run by ``python``, kept ready from its first job
        on (never started ahead, whatever ``prestart`` says)."""
        if python == self.python:
            return self
        with self._lock:
            found = self._siblings.get(python)
            if found is None or found.closed:
                config = self.config.model_copy(update={"prestart": False})
                found = self._siblings[python] = Pool(config, self.home, self.env, python)
        return found

    def ready_count(self) -> int:
        with self._lock:
            return sum(1 for p in self._ready if p.alive and p.ready.is_set())

    # ------------------------------------------------------------------ keeping
    def _wake(self) -> None:
        self._wakeup.set()

    def _keep(self) -> None:
        """Keep ``size`` processes ready or starting; stop the ones idle too long. A pool
        whose processes fail to start waits before trying again."""
        backoff = 1.0
        while not self._closed.is_set():
            idle_limit = self.config.idle_minutes * 60
            now = time.monotonic()
            retired: list[WarmProcess] = []
            with self._lock:
                failed = [p for p in self._starting if not p.alive]
                self._starting = [p for p in self._starting if p.alive]
                promoted = [p for p in self._starting if p.ready.is_set()]
                for p in promoted:
                    self._starting.remove(p)
                    p.idle_since = now
                    self._ready.append(p)
                kept = []
                for p in self._ready:
                    if not p.alive or now - p.idle_since > idle_limit:
                        retired.append(p)
                    else:
                        kept.append(p)
                self._ready = kept
                self._busy = [p for p in self._busy if p.alive]
                wanted = self.config.size - len(self._ready) - len(self._starting) - len(self._busy)
                if any(now - p.idle_since > idle_limit for p in retired):
                    self._dormant = True
                if self._dormant:
                    wanted = 0
            for p in retired:
                if p.alive:
                    log.info("pool: warm process %d stopped after %.0f min unused", p.pid, idle_limit / 60)
                p.stop(grace_seconds=2)
            if failed:
                log.warning("pool: a warm process did not start: %s", failed[0].error)
                self._closed.wait(backoff)  # a Spark that cannot start is not retried at once
                backoff = min(backoff * 2, 60.0)
                continue
            if wanted > 0 and not self._top_up():
                self._closed.wait(backoff)
                backoff = min(backoff * 2, 60.0)
                continue
            if not failed and wanted <= 0:
                backoff = 1.0
            self._wakeup.wait(1.0)
            self._wakeup.clear()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        self._closed.set()
        self._wake()
        with self._lock:
            everything = self._ready + self._starting
            self._ready, self._starting = [], []
            siblings = list(self._siblings.values())
            self._siblings.clear()
        for sibling in siblings:
            sibling.close()
        for process in everything:
            with contextlib.suppress(Exception):
                process.stop(grace_seconds=2)


_shared: dict[str, Pool] = {}
_shared_lock = threading.Lock()


def shared_pool(settings: Settings, *, start: bool = False) -> Pool:
    """The pool of this process for the settings' home, made on first use from the
    project file's ``[pool]``; ``start`` fills it now (work is coming)."""
    key = str(settings.home.resolve())
    with _shared_lock:
        pool = _shared.get(key)
        if pool is None or pool.closed:
            env = dict(settings.environ or os.environ)
            # the warm processes answer to this server's home, project and state store
            env.update(
                SPARKMARK_HOME=str(settings.home),
                SPARKMARK_CONFIG=str(settings.config),
                SPARKMARK_STATE_URL=settings.state_url,
            )
            pool = Pool(load_pool_config(settings.config), settings.home, env)
            _shared[key] = pool
    if start:
        pool.fill()
    return pool


def close_home(settings: Settings) -> None:
    """Close the pool of the settings' home, if this process has one."""
    with _shared_lock:
        pool = _shared.pop(str(settings.home.resolve()), None)
    if pool is not None:
        pool.close()


def close_shared() -> None:
    with _shared_lock:
        pools = list(_shared.values())
        _shared.clear()
    for pool in pools:
        pool.close()
