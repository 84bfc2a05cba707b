"""What a warm process and the process that started it say to each other: one JSON
object per line, over a socket pair the warm process inherits (its descriptor number
in ``SPARKMARK_POOL_FD``), so nothing of it shows in the process list or mixes with
what the process prints.

The parent sends ``op`` messages: ``session`` (become that session), ``statement``,
``cancel``, ``job`` (host one job run, then report and clean up), ``stop``. The warm
process answers with ``event`` messages: ``ready`` (Spark is up), ``statement`` (a
statement's state, output and progress), ``session`` (the session's state), ``job``
(a run ended, with its exit code), ``failed``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any

FD_ENV = "SPARKMARK_POOL_FD"
MAX_LINE = 64 * 1024 * 1024  # a statement's code or output larger than this is refused


class Channel:
    """One end of the socket pair: ``send`` from any thread, ``receive`` from one."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._lock = threading.Lock()
        self._reader = sock.makefile("rb")

    def send(self, message: dict[str, Any]) -> bool:
        data = json.dumps(message, default=str).encode("utf-8") + b"\n"
        with self._lock:
            try:
                self.sock.sendall(data)
                return True
            except OSError:
                return False

    def receive(self) -> dict[str, Any] | None:
        """The next message; None when the other end has gone."""
        try:
            line = self._reader.readline(MAX_LINE)
        except (OSError, ValueError):
            return None
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return {"event": "failed", "error": "the warm process sent a line that is not JSON"}
        return message if isinstance(message, dict) else None

    def close(self) -> None:
        for closing in (self._reader.close, self.sock.close):
            with contextlib.suppress(OSError):
                closing()
