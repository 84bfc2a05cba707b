"""The process of one interactive session: a warm process that was told to become it.

Statements run one at a time in the main thread, in the session's one namespace, which
starts as a Glue session's does: ``spark`` and ``sc``, ``sys.argv`` holding the
session's arguments and ``--SESSION_ID``, ``import awsglue`` resolving to sparkmark's
façade. A reader thread takes the parent's messages meanwhile: a statement queues; a
cancel of the running statement cancels its Spark jobs (its job group) and interrupts
it; a stop ends the process.

With ``--enable-glue-datacatalog`` (as on Glue, where it makes the Glue catalog the
session's metastore) the session's metastore and sparkmark's catalog are kept as one
(``catalog.session_sync``): tables the Glue API made are in the metastore before each
statement, and what a statement did in Spark SQL is in the catalog after it.
"""

from __future__ import annotations

import _thread
import builtins
import contextlib
import logging
import queue
import signal
import sys
import threading
from typing import Any

from ..engine.masking import looks_secret, mask_arguments, mask_document, mask_text, register_secret
from ..errors import first_line
from ..pool.protocol import (
    BecomeSession,
    CancelStatement,
    Channel,
    Failed,
    RunStatement,
    SessionState,
    StatementOutput,
    StatementProgress,
    StatementState,
)
from ..sessions.records import AVAILABLE, CANCELLED, READY, RUNNING
from ..settings import Settings
from . import statement

log = logging.getLogger("sparkmark.sessions")

PROGRESS_SECONDS = 0.5


def _true(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


class SessionProcess:
    def __init__(self, channel: Channel, spark: Any, settings: Settings, message: BecomeSession):
        self.channel = channel
        self.spark = spark
        self.settings = settings
        self.id = message.id
        self.arguments: dict[str, str] = dict(message.arguments)
        # The Glue endpoint the session's boto3 talks to, and how it signs (the server's).
        self.environment: dict[str, str] = dict(message.environment)
        # The session's secret-named arguments (--my_password …) are registered, so every
        # statement's output masks them wherever they are printed.
        mask_arguments(self.arguments)
        self.queue: queue.Queue[RunStatement | None] = queue.Queue()
        self.cancelled: set[int] = set()
        self.running: int | None = None
        self.stopping = False
        self.lock = threading.Lock()
        self.namespace: dict[str, Any] = {}
        self.sync: Any = None

    # ------------------------------------------------------------------ set-up
    def _argv(self) -> list[str]:
        argv = ["glue-session", "--SESSION_ID", self.id]
        for key, value in self.arguments.items():
            argv += [key if key.startswith("--") else f"--{key}", value]
        return argv

    def _setup(self) -> None:
        from ..glue import shim
        from ..host.shared_context import sharing

        for name, value in self.environment.items():  # set in the process by pool/worker.py
            if looks_secret(name):
                register_secret(value)  # a statement that prints it shows it masked
        shim.install(self.settings)
        self._sharing = sharing()
        self._sharing.__enter__()  # a notebook's SparkContext() is the running one
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a cancel interrupts the statement
        sys.argv[:] = self._argv()
        self._install_modules()
        extra = self.arguments.get("--extra-py-files")
        if extra:
            for path in (p.strip() for p in extra.split(",")):
                if path:
                    self.spark.sparkContext.addPyFile(path)
        if _true(self.arguments.get("--enable-glue-datacatalog", "false")):
            from ..catalog.session_sync import MetastoreSync

            self.sync = MetastoreSync(self.spark, self.settings)
            # dbt-glue rebuilds a table as DROP TABLE, then CREATE TABLE … LOCATION … AS SELECT
            # into the same folder, which succeeds on Glue; Spark refuses a non-empty folder
            # unless told, and then replaces its files.
            self.spark.conf.set("spark.sql.legacy.allowNonEmptyLocationInCTAS", "true")
        self.namespace = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "spark": self.spark,
            "sc": self.spark.sparkContext,
        }

    def _install_modules(self) -> None:
        """``--additional-python-modules`` and the ``--datalake-formats`` formats' Python
        packages, installed as for a job and first on the session's path."""
        from .. import python_modules
        from ..table_formats import parse_formats

        arguments = {k.removeprefix("--"): v for k, v in self.arguments.items()}
        formats = parse_formats(arguments.get("datalake-formats"))
        for folder in reversed(python_modules.for_run(arguments, formats, self.settings.home)):
            sys.path.insert(0, str(folder))

    # ------------------------------------------------------------------ serving
    def serve(self) -> int:
        try:
            self._setup()
        except Exception as exc:  # noqa: BLE001 - the session fails, in one line
            self.channel.send(SessionState(status="FAILED", error=mask_text(first_line(exc))))
            return 1
        self.channel.send(SessionState(status=READY))
        threading.Thread(target=self._read, name="session-reader", daemon=True).start()
        while True:
            try:
                item = self.queue.get()
                if item is None:
                    break
                self._statement(item.id, item.code)
            except KeyboardInterrupt:  # a cancel that came between statements
                continue
        return 0

    def _read(self) -> None:
        while True:
            message = self.channel.receive()
            if isinstance(message, RunStatement):
                self.queue.put(message)
            elif isinstance(message, CancelStatement):
                self._cancel(message.id)
            elif isinstance(message, Failed):
                log.warning("session %s: %s", self.id, message.error)
            else:  # Stop, another order, or the parent gone: the session ends
                self.stopping = True
                with self.lock:
                    if self.running is not None:
                        self.spark.sparkContext.cancelJobGroup(self._group(self.running))
                        _thread.interrupt_main()
                self.queue.put(None)
                return

    def _group(self, number: int) -> str:
        return f"session-{self.id}-statement-{number}"

    def _cancel(self, number: int) -> None:
        with self.lock:
            self.cancelled.add(number)
            if self.running == number:
                self.spark.sparkContext.cancelJobGroup(self._group(number))
                _thread.interrupt_main()

    def _send(
        self, number: int, state: str, output: StatementOutput | None = None, progress: float | None = None
    ) -> None:
        self.channel.send(StatementState(id=number, state=state, output=output, progress=progress))

    def _statement(self, number: int, code: str) -> None:
        if number in self.cancelled:
            self._send(number, CANCELLED, output=StatementOutput.cancelled(number))
            return
        sc = self.spark.sparkContext
        with self.lock:
            self.running = number
        self._send(number, RUNNING)
        done = threading.Event()
        reporter = threading.Thread(target=self._progress, args=(number, done), daemon=True)
        reporter.start()
        output: StatementOutput
        try:
            sc.setJobGroup(self._group(number), f"statement {number} of session {self.id}", True)
            if self.sync is not None:
                self.sync.before()
            output = statement.run(code, self.namespace, number)
            if self.sync is not None:
                problem = self.sync.after()
                if problem:
                    text = (output.Data or {}).get("TextPlain", "") + f"\nsparkmark: {problem}\n"
                    output = output.model_copy(update={"Data": {"TextPlain": text}})
        except KeyboardInterrupt:
            output = StatementOutput.cancelled(number)
        finally:
            with self.lock:
                self.running = None
            done.set()
            # the reporter's last sample must not land after the statement's end
            reporter.join()
            statement.flush_streams()
        if number in self.cancelled or output.Status == CANCELLED:
            self._send(number, CANCELLED, output=StatementOutput.cancelled(number))
            return
        if not self.stopping:
            shown = {**output.document(), "Data": {"TextPlain": (output.Data or {}).get("TextPlain", "")}}
            self._send(
                number, AVAILABLE, output=StatementOutput.model_validate(mask_document(shown)), progress=1.0
            )

    def _progress(self, number: int, done: threading.Event) -> None:
        """The running statement's share of finished tasks, over the Spark jobs of its
        group, sent when it moves."""
        tracker = self.spark.sparkContext.statusTracker()
        group = self._group(number)
        last = -1.0
        while not done.wait(PROGRESS_SECONDS):
            total = finished = 0
            with contextlib.suppress(Exception):
                for job in tracker.getJobIdsForGroup(group):
                    info = tracker.getJobInfo(job)
                    for stage in info.stageIds if info else []:
                        s = tracker.getStageInfo(stage)
                        if s is not None:
                            total += s.numTasks
                            finished += s.numCompletedTasks
            value = round(finished / total, 3) if total else 0.0
            if value != last:
                last = value
                self.channel.send(StatementProgress(id=number, value=min(value, 0.99)))
