"""The warm process: Spark started ahead of need, then given one piece of work at a time
by the process that started it (``pool.Pool``) over an inherited socket, in the typed
messages of ``pool.protocol``.

- ``session``: the process becomes that interactive session for the rest of its life.
  Statements run one at a time in the main thread, in one namespace that starts with
  ``spark`` and ``sc``; a reader thread takes the parent's messages, so a statement is
  cancelled (its Spark jobs too) while it runs.
- ``job``: the process hosts one job run through the job host (``host.run_request``),
  as a process of its own would: its output to the run's log files, its exit code to
  the run's exit file, relative paths resolved in the working directory that process
  would have had. It gets a new Spark session and a temporary directory of its own.
  Afterwards what a run may leave behind is cleared: cached data, persisted RDDs,
  global temporary views, local properties, modules the script brought, the
  environment, ``sys.argv``, the masking registry, the working directory and the
  temporary directory. What cannot be reset with certainty (a thread still running, a
  patched function, a SparkContext or Hadoop setting, any secret the run was given:
  ``pool.isolation``) makes the process ask to be replaced.

    python -m sparkmark.pool.worker        (started by the pool, never by hand)
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..engine.masking import mask_argv, mask_logging, mask_text, restore_known
from ..errors import first_line
from ..settings import Settings
from . import reset
from .isolation import ProcessState
from .protocol import (
    FD_ENV,
    ORDERS,
    BecomeSession,
    Channel,
    Failed,
    HostJob,
    JobEnded,
    Ready,
    Stop,
)

log = logging.getLogger("sparkmark.pool")


def resident_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


class Warm:
    def __init__(self, channel: Channel, settings: Settings):
        self.channel = channel
        self.settings = settings
        self.spark: Any = None
        self.runs = 0

    # ------------------------------------------------------------------ start
    def start(self) -> bool:
        from ..spark import create_session

        began = time.monotonic()
        try:
            self.spark = create_session("sparkmark-warm", self.settings.spark_master, self.settings)
            self.spark.range(1).count()  # the first job pays class loading; not the user's
            if self.settings.hive_enabled:
                # The metastore's first use makes its schema and the Hive client: seconds
                # a session's first statement or a job would otherwise pay.
                self.spark.sql("SHOW DATABASES").collect()
                self.spark.newSession().sql("SHOW DATABASES").collect()
        except Exception as exc:  # noqa: BLE001 - told to the parent in one line
            self.channel.send(Failed(error=mask_text(first_line(exc))))
            return False
        log.info("warm Spark up in %.1f s", time.monotonic() - began)
        self.channel.send(Ready(pid=os.getpid(), rss=self.rss()))
        return True

    def rss(self) -> int:
        pids = [os.getpid()]
        gateway = getattr(self.spark.sparkContext, "_gateway", None) if self.spark is not None else None
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            pids.append(proc.pid)
        return resident_bytes(pids)

    # ------------------------------------------------------------------ serve
    def serve(self) -> int:
        while True:
            message = self.channel.receive()
            if message is None or isinstance(message, Stop):
                return 0
            if isinstance(message, BecomeSession):
                from ..sessions.process import SessionProcess

                # The endpoint a session's boto3 talks to, and how it signs: this process
                # is the session's alone from here on.
                os.environ.update(message.environment)

                return SessionProcess(self.channel, self.spark, self.settings, message).serve()
            if isinstance(message, HostJob):
                code, dirty = self.job(message)
                self.runs += 1
                self.channel.send(JobEnded(code=code, rss=self.rss(), dirty=dirty))
                continue
            if isinstance(message, Failed):
                log.warning("warm process: %s", message.error)
                continue
            self.channel.send(Failed(error=f"a warm process that is not a session takes no {message.op!r}"))

    # ------------------------------------------------------------------ jobs
    def job(self, message: HostJob) -> tuple[int, str | None]:
        """Host one run; (its exit code, why this process should be replaced or None)."""
        from ..host import RunRequest, run_request
        from ..host.handover import EXIT_FILE_ENV, write_exit

        saved_env = dict(os.environ)
        saved_cwd = os.getcwd()
        saved_path = list(sys.path)
        saved_modules = set(sys.modules)
        saved_argv = list(sys.argv)
        hadoop_before = self._hadoop_settings()
        hooks = (sys.excepthook, sys.displayhook, threading.excepthook)
        before = ProcessState.take(self._context_settings)
        # The run resolves relative paths where the process it replaces would (the
        # launcher's folder), and has a temporary directory of its own (owner-only,
        # removed after it): what it writes there never reaches the next run.
        workdir = message.cwd if message.cwd and os.path.isdir(message.cwd) else saved_cwd
        run_temp = tempfile.mkdtemp(prefix="sparkmark-run-")
        saved_tempdir = tempfile.tempdir
        fresh = reset.fresh_session(self.spark)
        for key, value in (message.request.get("spark_conf") or {}).items():
            fresh.conf.set(key, value)  # the job's SQL settings, on its own session
        sync = self._catalog_sync(fresh)
        out_fd, err_fd = os.dup(1), os.dup(2)
        code = 1
        try:
            log_file = os.open(message.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            err_file = os.open(message.err, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(log_file, 1)
            os.dup2(err_file, 2)
            os.close(log_file)
            os.close(err_file)
            os.environ.update(message.env)
            os.environ.pop(EXIT_FILE_ENV, None)
            os.environ["TMPDIR"] = tempfile.tempdir = run_temp
            os.chdir(workdir)
            try:
                request = RunRequest.checked(message.request)
                # Its secret-named arguments are registered: masked in what this process
                # logs, and, being new since ``before``, they retire the process after.
                mask_argv(list(request.arguments))
                outcome = run_request(request, endpoint=endpoint_hook(message.endpoint))
                outcome.report(sys.stdout, sys.stderr)
                code = outcome.code
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception as exc:  # noqa: BLE001 - ends as the program would: one line, code 1
                print(f"error: {mask_text(first_line(exc))}", file=sys.stderr)
                code = 1
        finally:
            # The run's own hooks (a run fails itself on an uncaught exception) are the
            # run's; here the host catches everything, and the next run sets its own.
            sys.excepthook, sys.displayhook, threading.excepthook = hooks
            before.put_back()  # before the host's own code calls a patched function
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(out_fd, 1)
            os.dup2(err_fd, 2)
            os.close(out_fd)
            os.close(err_fd)
            write_exit(Path(message.exit), int(code))
            os.environ.clear()
            os.environ.update(saved_env)
            tempfile.tempdir = saved_tempdir
            with contextlib.suppress(OSError):
                os.chdir(saved_cwd)
            sys.path[:] = saved_path
            sys.argv[:] = saved_argv
            reset.forget_modules(saved_modules)
            if sync is not None:
                problem = sync.after()
                if problem:
                    log.warning("job run: %s", problem)
            reset.clear(fresh)
            reset.fresh_session(self.spark)  # what the next run starts from, even if it makes none
        residue = [before.residue(self._context_settings)]
        restore_known(before.secrets)  # whatever happens next, the run's secrets are unlisted
        shutil.rmtree(run_temp, ignore_errors=True)
        if self._hadoop_settings() != hadoop_before:
            residue.append("the run changed Spark's Hadoop settings")
        return code, "; ".join(r for r in residue if r) or None

    def _context_settings(self) -> str | None:
        """The SparkContext's own settings, as one text (a script can change them in place
        through ``sc._conf``, and they are the context's for its whole life)."""
        try:
            pairs = self.spark.sparkContext.getConf().getAll()
        except Exception:  # noqa: BLE001 - unknown: compared as a change, so the process is not kept
            return f"unknown {time.monotonic()}"
        return "\n".join(sorted(f"{k}={v}" for k, v in pairs))

    def _catalog_sync(self, spark: Any) -> Any:
        """This process's metastore brought up to the catalog before a run, and what the
        run made in Spark SQL copied to the catalog after it (``catalog.session_sync``)."""
        if not self.settings.hive_enabled:
            return None
        from ..catalog.session_sync import MetastoreSync

        try:
            return MetastoreSync(spark, self.settings)
        except Exception as exc:  # noqa: BLE001 - the run goes on; its catalog tables may lag
            log.warning("the warm process's metastore could not be brought up to the catalog: %s", exc)
            return None

    def _hadoop_settings(self) -> str:
        """The context's Hadoop settings, as one document (compared before and after)."""
        try:
            jvm = self.spark.sparkContext._jvm
            writer = jvm.java.io.StringWriter()
            self.spark.sparkContext._jsc.hadoopConfiguration().writeXml(writer)
            return str(writer.toString())
        except Exception:  # noqa: BLE001 - unknown: the process is not kept
            return f"unknown {time.monotonic()}"


def endpoint_hook(endpoint: dict[str, str]):
    """What points a hosted run's boto3 at the Glue endpoint its parent chose for it, when
    the script first imports boto3: nothing when the run chose an endpoint itself
    (``AWS_ENDPOINT_URL_GLUE``) or the parent has none; a CloudWatch endpoint the run
    chose is kept."""

    def hook(env) -> None:
        if not endpoint or os.environ.get("AWS_ENDPOINT_URL_GLUE"):
            return None
        for name, value in endpoint.items():
            if name == "AWS_ENDPOINT_URL_CLOUDWATCH" and os.environ.get(name):
                continue
            env.set(name, value)
        log.info("boto3's Glue client talks to sparkmark at %s", endpoint.get("AWS_ENDPOINT_URL_GLUE"))
        return None

    return hook


def main() -> int:
    fd = os.environ.pop(FD_ENV, None)
    if fd is None:
        print("error: a warm process is started by sparkmark's pool, not by hand", file=sys.stderr)
        return 2
    channel = Channel(socket.socket(fileno=int(fd)), ORDERS)
    settings = Settings.from_env()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    mask_logging()
    for noisy in ("py4j", "sqlalchemy", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    warm = Warm(channel, settings)
    if not warm.start():
        return 1
    return warm.serve()


if __name__ == "__main__":
    raise SystemExit(main())
