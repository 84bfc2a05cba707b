"""Serving an application over HTTP: the one place that knows uvicorn.

The Glue API endpoint and the console are each a Starlette application behind
:class:`~sparkmark.access.RequestGuard`; this module checks where they may listen,
turns TLS on when a certificate is given, and runs the server in a daemon thread of
the calling process (or in the foreground).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .access import HostPolicy, Limits, check_binding
from .errors import ConfigError
from .settings import Settings

log = logging.getLogger("sparkmark.serving")


@dataclass(frozen=True)
class Listen:
    """Where and how one server listens, resolved from the settings at the entry point."""

    host: str
    port: int
    token: str
    certfile: Path | None = None
    keyfile: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    max_body: int = 10 * 1024 * 1024
    body_seconds: float = 30.0
    max_inflight: int = 64 * 1024 * 1024

    @classmethod
    def of(cls, settings: Settings, host: str, port: int, token: str) -> Listen:
        if bool(settings.tls_certfile) != bool(settings.tls_keyfile):
            raise ConfigError(
                "TLS needs both SPARKMARK_TLS_CERTFILE and SPARKMARK_TLS_KEYFILE (or --certfile and --keyfile)"
            )
        for path in (settings.tls_certfile, settings.tls_keyfile):
            if path is not None and not Path(path).is_file():
                raise ConfigError(f"the TLS file {path} does not exist")
        return cls(
            host=host,
            port=port,
            token=token,
            certfile=settings.tls_certfile,
            keyfile=settings.tls_keyfile,
            allowed_hosts=tuple(settings.allowed_host_names),
            max_body=settings.max_request_bytes,
            body_seconds=settings.request_body_seconds,
            max_inflight=settings.max_inflight_bytes,
        )

    @property
    def tls(self) -> bool:
        return self.certfile is not None

    @property
    def hosts(self) -> HostPolicy:
        return HostPolicy(self.host, self.allowed_hosts)

    @property
    def limits(self) -> Limits:
        return Limits(self.max_body, self.body_seconds, self.max_inflight)

    def check(self, service: str, how: str) -> None:
        check_binding(self.host, self.token, service=service, how=how)


@dataclass
class Running:
    url: str
    server: Any
    thread: threading.Thread | None
    token: str
    on_stop: list[Callable[[], None]] = field(default_factory=list)

    def stop(self) -> None:
        for callback in self.on_stop:
            callback()
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)


def _server(app, listen: Listen):
    import uvicorn

    config = uvicorn.Config(
        app,
        host=listen.host,
        port=listen.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ssl_certfile=str(listen.certfile) if listen.certfile else None,
        ssl_keyfile=str(listen.keyfile) if listen.keyfile else None,
        timeout_keep_alive=5,
        # A TLS connection a client keeps open would hold a stop for 30 s (the TLS
        # shutdown's own timeout): waiting 5 s for open connections is enough.
        timeout_graceful_shutdown=5,
        limit_concurrency=200,
    )
    return uvicorn.Server(config)


def _url(server, listen: Listen) -> str:
    port = next(int(sock.getsockname()[1]) for s in server.servers for sock in s.sockets)
    shown = "127.0.0.1" if listen.host in ("0.0.0.0", "::", "") else listen.host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"{'https' if listen.tls else 'http'}://{shown}:{port}"


def start_in_thread(app, listen: Listen, name: str) -> Running:
    """Serve ``app`` in a daemon thread of this process; returns once it listens."""
    server = _server(app, listen)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise ConfigError(
                f"the {name} could not listen on {listen.host}:{listen.port} (is the port taken?)"
            )
        threading.Event().wait(0.02)
    return Running(_url(server, listen), server, thread, listen.token)


def serve_forever(app, listen: Listen, on_started: Callable[[str], None]) -> None:
    """Serve ``app`` in the foreground until interrupted; ``on_started(url)`` once listening."""
    server = _server(app, listen)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            on_started(_url(server, listen))
        await task

    asyncio.run(main())
