"""Everything a warm process and the process that started it say to each other, as
typed messages: one JSON object per line, over a socket pair the warm process inherits
(its descriptor number in ``SPARKMARK_POOL_FD``), so nothing of it shows in the process
list or mixes with what the process prints.

Orders go from the parent to the warm process (:data:`Order`, told apart by ``op``):

- :class:`HostJob`: host one job run, then report and clean up;
- :class:`BecomeSession`: become that interactive session for the rest of its life;
- :class:`RunStatement` and :class:`CancelStatement`: a session's statements;
- :class:`Stop`.

Events come back (:data:`Event`, told apart by ``event``):

- :class:`Ready`: Spark is up;
- :class:`JobEnded`: a hosted run ended, with its exit code;
- :class:`SessionState`: the session's state;
- :class:`StatementState` (with Glue's :class:`StatementOutput`) and
  :class:`StatementProgress`;
- :class:`Failed`;
- :class:`ProcessEnded`: made by the parent's reader when the process is gone (never
  sent over the socket).

A line that is not one of these is not guessed at: the reader gets a :class:`Failed`
that says what was wrong with it. ``docs/design/warm-processes.md`` explains the choices.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

FD_ENV = "SPARKMARK_POOL_FD"
MAX_LINE = 64 * 1024 * 1024  # a statement's code or output larger than this is refused


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------------- Glue's output


class StatementOutput(BaseModel):
    """Glue's ``StatementOutput`` of one statement: ``Status`` ``ok`` with
    ``Data.TextPlain``, ``error`` with ``ErrorName``, ``ErrorValue`` and ``Traceback``,
    or ``CANCELLED``/``ERROR`` when the statement did not run to its end."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ExecutionCount: int
    Status: Literal["ok", "error", "CANCELLED", "ERROR"]
    Data: dict[str, str] | None = None
    ErrorName: str | None = None
    ErrorValue: str | None = None
    Traceback: list[str] | None = None

    @classmethod
    def cancelled(cls, number: int) -> StatementOutput:
        return cls(ExecutionCount=number, Status="CANCELLED")

    @classmethod
    def not_run(cls, number: int, name: str, why: str) -> StatementOutput:
        """A statement its session could not run (its process had ended)."""
        return cls(ExecutionCount=number, Status="ERROR", ErrorName=name, ErrorValue=why)

    def document(self) -> dict[str, Any]:
        """As Glue's API shows it (fields it does not have are left out)."""
        return self.model_dump(exclude_none=True)


# ---------------------------------------------------------------------- orders


class HostJob(Message):
    op: Literal["job"] = "job"
    request: dict[str, Any]  # a host.RunRequest's document, checked by the warm process
    log: str  # where the run's standard output goes
    err: str  # … its standard error
    exit: str  # the file its exit code is written to
    env: dict[str, str] = Field(default_factory=dict)  # the run's own environment
    # The working directory the run's process would have had (the launcher's): relative
    # paths in a hosted run resolve where they would in a process of its own.
    cwd: str = ""
    # The Glue endpoint the run's boto3 talks to unless the run chose one: URL, region
    # and, where the parent signs with its home's token, the key to sign with.
    endpoint: dict[str, str] = Field(default_factory=dict)


class BecomeSession(Message):
    op: Literal["session"] = "session"
    id: str
    arguments: dict[str, str] = Field(default_factory=dict)
    environment: dict[str, str] = Field(default_factory=dict)


class RunStatement(Message):
    op: Literal["statement"] = "statement"
    id: int
    code: str


class CancelStatement(Message):
    op: Literal["cancel"] = "cancel"
    id: int


class Stop(Message):
    op: Literal["stop"] = "stop"


Order = Annotated[HostJob | BecomeSession | RunStatement | CancelStatement | Stop, Field(discriminator="op")]


# ---------------------------------------------------------------------- events


class Ready(Message):
    event: Literal["ready"] = "ready"
    pid: int
    rss: int = 0  # resident bytes, the JVM's included


class JobEnded(Message):
    event: Literal["job"] = "job"
    code: int
    rss: int = 0
    dirty: str | None = None  # why this process must not host another run


class SessionState(Message):
    event: Literal["session"] = "session"
    status: str
    error: str | None = None


class StatementState(Message):
    event: Literal["statement"] = "statement"
    id: int
    state: str
    output: StatementOutput | None = None
    progress: float | None = None


class StatementProgress(Message):
    event: Literal["progress"] = "progress"
    id: int
    value: float


class Failed(Message):
    event: Literal["failed"] = "failed"
    error: str


class ProcessEnded(Message):
    event: Literal["ended"] = "ended"
    code: int | None = None
    error: str | None = None


Event = Annotated[
    Ready | JobEnded | SessionState | StatementState | StatementProgress | Failed | ProcessEnded,
    Field(discriminator="event"),
]

ORDERS: TypeAdapter[Order] = TypeAdapter(Order)
EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def parse_line(adapter: TypeAdapter[Any], line: bytes) -> Any:
    """The message ``line`` holds, or a :class:`Failed` saying in one line why it is
    not one."""
    try:
        return adapter.validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(message)"
        return Failed(error=f"a message the other end sent was refused: {where}: {first.get('msg')}")


class Channel:
    """One end of the socket pair: ``send`` from any thread, ``receive`` from one.
    ``reads`` is what comes in at this end: :data:`ORDERS` in a warm process,
    :data:`EVENTS` in its parent."""

    def __init__(self, sock: socket.socket, reads: TypeAdapter[Any]):
        self.sock = sock
        self.reads = reads
        self._lock = threading.Lock()
        self._reader = sock.makefile("rb")

    def send(self, message: Message) -> bool:
        data = message.model_dump_json().encode("utf-8") + b"\n"
        with self._lock:
            try:
                self.sock.sendall(data)
                return True
            except OSError:
                return False

    def receive(self) -> Any:
        """The next message (an :data:`Order` or an :data:`Event`, as ``reads`` says);
        None when the other end has gone."""
        try:
            line = self._reader.readline(MAX_LINE)
        except (OSError, ValueError):
            return None
        if not line:
            return None
        if not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # the rest of it is not the next message
                try:
                    line = self._reader.readline(MAX_LINE)
                except (OSError, ValueError):
                    return None
            return Failed(error=f"a message over {MAX_LINE} bytes was refused")
        return parse_line(self.reads, line)

    def close(self) -> None:
        for closing in (self._reader.close, self.sock.close):
            with contextlib.suppress(OSError):
                closing()
