"""Interactive sessions, as the server that runs them sees them: each one a warm process
(taken from the pool, or started for it when its Spark settings differ from the
pool's), its record and its statements' in the state store.

The manager is the one writer of those records: it creates a session's record, hands
the session a process, and writes what the process reports (statement states, outputs,
progress, the session's end). A watcher ends sessions idle beyond their
``IdleTimeout`` or older than their ``Timeout`` (status ``TIMEOUT``), sessions whose
stop was asked for elsewhere (the console), and marks ``FAILED`` a session whose
process died.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ..engine.owner import this_process
from ..engine.schema import utcnow
from ..engine.store import StateStore
from ..errors import ArgumentError, ConfigError, SparkmarkError
from ..pool.pool import Cancelled, Pool, WarmProcess, wait_ready
from ..pool.protocol import (
    BecomeSession,
    CancelStatement,
    Failed,
    ProcessEnded,
    RunStatement,
    SessionState,
    StatementOutput,
    StatementProgress,
    StatementState,
)
from ..sessions.records import (
    AVAILABLE,
    CANCELLED,
    CANCELLING,
    ENDED,
    FAILED,
    PROVISIONING,
    READY,
    RUNNING,
    STATEMENT_ENDED,
    STOPPED,
    STOPPING,
    TIMEOUT,
    SessionRecord,
    SessionStore,
    StatementRecord,
)
from ..settings import Settings

log = logging.getLogger("sparkmark.sessions")

COMMANDS = ("glueetl", "gluestreaming")
DEFAULT_MINUTES = 2880  # Glue's default IdleTimeout and Timeout for Spark sessions (48 hours)
WATCH_SECONDS = 1.0
# RunStatement answers once the statement has finished, or after this long: clients poll
# GetStatement at a fixed pace (dbt-glue and the Glue kernel once a second), so a short
# statement is found done on the first poll instead of the next one.
HOLD_SECONDS = 2.0


class SessionLimitExceeded(SparkmarkError):
    """This server runs as many sessions as ``[pool] max_sessions`` allows."""


class SessionStateError(SparkmarkError):
    """The session is not in a state that allows the operation (Glue's
    IllegalSessionStateException)."""


class SessionManager:
    def __init__(
        self,
        state: StateStore,
        settings: Settings,
        pool: Pool,
        environment: Callable[[], dict[str, str]] | None = None,
    ):
        self.store = SessionStore(state)
        self.settings = settings
        self.pool = pool
        # The environment a session's process gets (the Glue endpoint, how to sign).
        self.environment = environment or dict
        self.owner = this_process()
        self._processes: dict[str, WarmProcess] = {}
        self._finishing: dict[tuple[str, int], threading.Event] = {}
        self._lock = threading.Lock()
        self._create_lock = threading.Lock()
        self._cancels: dict[str, threading.Event] = {}  # set when a provisioning session is stopped
        # Each session's creation time: its identity beyond the Id. A session deleted and
        # created again under the same Id (dbt-glue does so) is another session, which a
        # late stop or a late message of the one before never touches.
        self._born: dict[str, datetime] = {}
        self._closed = threading.Event()
        self._adopt_orphans()
        threading.Thread(target=self._watch, name="sparkmark-sessions", daemon=True).start()

    def _adopt_orphans(self) -> None:
        """Sessions a server that is gone was running have no process any more."""
        from ..engine.owner import is_dead

        for record in self.store.all():
            if record.status not in ENDED and record.owner != self.owner and is_dead(record.owner):
                self.store.set_status(record.id, FAILED, error="the server that ran this session ended")

    # ------------------------------------------------------------------ sessions
    def create(self, session_id: str, definition: dict[str, Any]) -> SessionRecord:
        command = definition.get("Command") or {}
        if command.get("Name") not in COMMANDS:
            raise ArgumentError(
                f"Command.Name {command.get('Name')!r} is not served: sparkmark's sessions run "
                + " or ".join(COMMANDS)
            )
        arguments = {str(k): str(v) for k, v in (definition.get("DefaultArguments") or {}).items()}
        environment = self.environment()
        extra = self._jvm_settings(arguments, environment)
        pool = self._pool_of(definition.get("GlueVersion"))
        with self._create_lock:  # counted and created as one step: two creates cannot both pass
            running = [r for r in self.store.all() if r.owner == self.owner and r.status not in ENDED]
            if len(running) >= self.pool.config.max_sessions:
                raise SessionLimitExceeded(
                    f"this server runs {len(running)} sessions, its limit ([pool] max_sessions = "
                    f"{self.pool.config.max_sessions} in {self.settings.config}): stop or delete one first"
                )
            record = self.store.create(session_id, definition, self.owner)
            cancel = threading.Event()
            with self._lock:
                self._cancels[session_id] = cancel
                self._born[session_id] = record.created_on
        threading.Thread(
            target=self._provision,
            args=(session_id, arguments, extra, cancel, record.created_on, environment, pool),
            name=f"provision-{session_id}",
            daemon=True,
        ).start()
        return record

    def _pool_of(self, glue_version: Any) -> Pool:
        """The pool whose processes run the session's Glue version (``%glue_version``):
        the server's own, or its sibling in that version's runtime; a version with no
        runtime is refused in one line naming the command that adds it."""
        from .. import runtimes

        if glue_version in (None, ""):
            return self.pool
        try:
            runtime = runtimes.for_version(self.settings.runtimes_dir, str(glue_version))
        except ConfigError as exc:
            raise ArgumentError(str(exc)) from None
        return self.pool if runtime.own else self.pool.sibling(runtime.python)

    def _jvm_settings(self, arguments: dict[str, str], environment: dict[str, str]) -> dict[str, str] | None:
        """The environment of a process of the session's own, for arguments that shape
        the JVM; None when the pool's processes serve it. An Iceberg GlueCatalog its
        ``--conf`` declares is pointed at sparkmark's Glue endpoint and S3 endpoint, as
        under ``sparkmark run``, and signs with what the session signs with."""
        from ..table_formats import JVM_PARAMETERS, glue_conf, parse_formats, point_glue_catalogs

        if not any(arguments.get(a) for a in JVM_PARAMETERS):  # a session of the pool's
            return None

        if arguments.get("--extra-jars") or arguments.get("--user-jars-first"):
            raise ArgumentError(
                "--extra-jars is not served by sparkmark's sessions: put the jars in spark.jars "
                "(--conf spark.jars=…) or the project's connectors"
            )
        env: dict[str, str] = {}
        formats = parse_formats(arguments.get("--datalake-formats"))
        if formats:
            env["SPARKMARK_DATALAKE_FORMATS"] = ",".join(formats)
        confs = glue_conf(arguments.get("--conf"))
        if confs:
            merged = {**Settings.from_env().spark_conf_map(), **confs}
            region = environment.get("AWS_DEFAULT_REGION") or self.settings.aws_region or "us-east-1"
            glue_url = environment.get("AWS_ENDPOINT_URL_GLUE")
            point_glue_catalogs(merged, glue_url, region, self.settings.aws_endpoint_url_s3)
            env["SPARKMARK_SPARK_CONF"] = json.dumps(merged)
        return {**environment, **env}

    def _provision(
        self,
        session_id: str,
        arguments: dict[str, str],
        extra: dict[str, str] | None,
        cancel: threading.Event,
        born: datetime,
        environment: dict[str, str] | None = None,
        pool: Pool | None = None,
    ) -> None:
        pool = pool or self.pool
        try:
            if extra is None:
                process = pool.take(cancel=cancel)
            else:
                process = pool.start_process(extra, label=f"session-{session_id}"[:80])
                if not wait_ready(process, 600, cancel):
                    if cancel.is_set():
                        process.stop(grace_seconds=1)
                        raise Cancelled("stopped while it was provisioning")
                    raise RuntimeError(process.error or "the session's Spark did not start")
        except Cancelled:
            log.info("session %s: stopped while provisioning; its process is stopped", session_id)
            return
        except Exception as exc:  # noqa: BLE001 - the session fails with the reason
            self.store.set_status(
                session_id, FAILED, error=str(exc).splitlines()[0] if str(exc) else "failed", born=born
            )
            return
        finally:
            with self._lock:
                if self._cancels.get(session_id) is cancel:
                    self._cancels.pop(session_id, None)
        with self._lock:
            replaced = self._born.get(session_id) != born
            if not replaced:
                self._processes[session_id] = process
        if replaced:  # deleted (and perhaps created again) while it was provisioning
            process.stop(grace_seconds=1)
            return
        process.listen(lambda message: self._event(session_id, message, born))
        if self._stop_wanted(session_id):
            self._end(session_id, STOPPED, born=born)
            return
        process.send(BecomeSession(id=session_id, arguments=arguments, environment=environment or {}))

    def _stop_wanted(self, session_id: str) -> bool:
        try:
            record = self.store.get(session_id)
        except SparkmarkError:
            return True
        return record.stop_requested or record.status in (STOPPING, *ENDED)

    def _event(self, session_id: str, message: Any, born: datetime | None = None) -> None:
        """One ``pool.protocol`` event of the session's process."""
        with self._lock:
            if born is not None and self._born.get(session_id) != born:
                return  # a message of a session since deleted, about a process that is going
        if isinstance(message, SessionState):
            with self._lock:
                process = self._processes.get(session_id)
            self.store.set_status(
                session_id, message.status, error=message.error, pid=process.pid if process else None
            )
            if message.status == FAILED:
                self._end(session_id, FAILED, error=message.error)
        elif isinstance(message, StatementState):
            self.store.update_statement(
                session_id,
                message.id,
                state=message.state,
                output=message.output.document() if message.output is not None else None,
                progress=message.progress,
            )
            if message.state in STATEMENT_ENDED:
                with self._lock:
                    finishing = self._finishing.get((session_id, message.id))
                if finishing is not None:
                    finishing.set()
        elif isinstance(message, StatementProgress):
            self.store.update_statement(session_id, message.id, progress=message.value)
        elif isinstance(message, ProcessEnded):
            record = self._record(session_id)
            if record is not None and record.status not in ENDED and record.status != STOPPING:
                self._finish(session_id, FAILED, error=message.error or "its process ended")
        elif isinstance(message, Failed):
            log.warning("session %s: %s", session_id, message.error)

    def _record(self, session_id: str) -> SessionRecord | None:
        try:
            return self.store.get(session_id)
        except SparkmarkError:
            return None

    def get(self, session_id: str) -> SessionRecord:
        return self.store.get(session_id)

    def all(self) -> list[SessionRecord]:
        return self.store.all()

    def stop(self, session_id: str) -> None:
        """Glue's StopSession: the session ends (STOPPING, then STOPPED)."""
        record = self.store.get(session_id)
        if record.status in ENDED:
            raise SessionStateError(f"Session {session_id} is {record.status}: it cannot be stopped")
        if record.owner != self.owner:  # another server runs it: it stops it
            self.store.request_stop(session_id)
            return
        self.store.set_status(session_id, STOPPING, born=record.created_on)
        threading.Thread(
            target=self._end, args=(session_id, STOPPED), kwargs={"born": record.created_on}, daemon=True
        ).start()

    def delete(self, session_id: str) -> None:
        """Glue's DeleteSession: a running session is stopped first, then forgotten (a
        session another server runs is stopped by that server when it sees it gone)."""
        record = self.store.get(session_id)
        if record.status not in ENDED:
            self._end(session_id, STOPPED, born=record.created_on)
        self.store.delete(session_id)
        with self._lock:
            if self._born.get(session_id) == record.created_on:
                self._born.pop(session_id, None)

    def _end(
        self, session_id: str, status: str, error: str | None = None, born: datetime | None = None
    ) -> None:
        """End the session (the one created at ``born``, when given: never a newer one of
        the same Id): its process is stopped, its statements cancelled, its status set."""
        with self._lock:
            if born is not None and self._born.get(session_id, born) != born:
                return  # deleted and created again since: that one is not this one's to end
            process = self._processes.pop(session_id, None)
            provisioning = self._cancels.get(session_id)
        if provisioning is not None:
            provisioning.set()  # the process being started for it is stopped as it comes
        if process is not None:
            process.listen(None)
            process.stop(grace_seconds=3)
        self._finish(session_id, status, error, born)

    def _finish(
        self, session_id: str, status: str, error: str | None = None, born: datetime | None = None
    ) -> None:
        record = self._record(session_id)
        if record is None or (born is not None and record.created_on != born):
            return
        for statement in self.store.unfinished_statements(session_id):
            self.store.update_statement(
                session_id,
                statement.id,
                state=CANCELLED,
                output=StatementOutput.cancelled(statement.id).document(),
            )
        self.store.set_status(session_id, status, error=error, born=record.created_on)

    # ------------------------------------------------------------------ statements
    def run_statement(self, session_id: str, code: str) -> int:
        record = self.store.get(session_id)
        if record.status != READY:
            raise SessionStateError(
                f"Session {session_id} is {record.status}: statements run in a READY session"
            )
        with self._lock:
            process = self._processes.get(session_id)
        if process is None:
            raise SessionStateError(
                f"Session {session_id} is run by another sparkmark server ({record.owner})"
            )
        number = self.store.add_statement(session_id, code)
        done = threading.Event()
        with self._lock:
            self._finishing[(session_id, number)] = done
        try:
            if process.send(RunStatement(id=number, code=code)):
                done.wait(HOLD_SECONDS)
                return number
        finally:
            with self._lock:
                self._finishing.pop((session_id, number), None)
        self.store.update_statement(  # the process is gone: the statement cannot run
            session_id,
            number,
            state="ERROR",
            output=StatementOutput.not_run(number, "SessionEnded", "the session's process ended").document(),
        )
        return number

    def statement(self, session_id: str, number: int) -> StatementRecord:
        self.store.get(session_id)
        return self.store.statement(session_id, number)

    def statements(self, session_id: str) -> list[StatementRecord]:
        self.store.get(session_id)
        return self.store.statements(session_id)

    def cancel(self, session_id: str, number: int) -> None:
        found = self.statement(session_id, number)
        if found.state in STATEMENT_ENDED:
            return  # Glue answers a cancel of a finished statement without changing it
        with self._lock:
            process = self._processes.get(session_id)
        if found.state in (RUNNING, "WAITING"):
            self.store.update_statement(session_id, number, state=CANCELLING)
        if process is not None:
            process.send(CancelStatement(id=number))

    # ------------------------------------------------------------------ watching
    def _watch(self) -> None:
        while not self._closed.wait(WATCH_SECONDS):
            try:
                self.check_timeouts()
            except Exception:
                log.exception("sessions: checking the sessions failed")

    def check_timeouts(self, now: datetime | None = None) -> None:
        """End this process's sessions past their ``IdleTimeout`` (counted from their last
        statement's end, never while one runs) or their ``Timeout``, as of ``now``."""
        now = now or utcnow()
        with self._lock:
            mine = list(self._processes)
        for session_id in mine:
            record = self._record(session_id)
            if record is None:  # deleted through another server: its process goes too
                with self._lock:
                    process = self._processes.pop(session_id, None)
                if process is not None:
                    process.listen(None)
                    process.stop(grace_seconds=3)
                continue
            if record.stop_requested and record.status not in ENDED and record.status != STOPPING:
                log.info("session %s: stopped on request", session_id)
                self.store.set_status(session_id, STOPPING)
                self._end(session_id, STOPPED)
                continue
            if record.status != READY:
                continue
            definition = record.definition
            idle = int(definition.get("IdleTimeout") or DEFAULT_MINUTES)
            limit = int(definition.get("Timeout") or DEFAULT_MINUTES)
            busy = any(
                s.state in (RUNNING, "WAITING", CANCELLING)
                for s in self.store.unfinished_statements(session_id)
            )
            if now - record.created_on > timedelta(minutes=limit):
                log.info("session %s: timed out after %d minutes (Timeout)", session_id, limit)
                self._end(session_id, TIMEOUT, error=f"the session reached its Timeout of {limit} minutes")
            elif not busy and now - record.last_activity > timedelta(minutes=idle):
                log.info("session %s: idle for %d minutes (IdleTimeout)", session_id, idle)
                self._end(
                    session_id, TIMEOUT, error=f"the session was idle for its IdleTimeout of {idle} minutes"
                )

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            running = list(self._processes)
        for session_id in running:
            self._end(session_id, STOPPED)


__all__ = ["AVAILABLE", "PROVISIONING", "SessionManager", "SessionStateError"]
