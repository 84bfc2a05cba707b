"""``sparkmark console``: the web console served by uvicorn, on 127.0.0.1 unless told
otherwise, with a scheduler thread that starts the workflow runs started from it
whenever no other scheduler leads."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .. import binding
from ..settings import Settings


def check_binding(host: str, token: str | None) -> None:
    binding.check_binding(
        host,
        token,
        service="console",
        how="give it a token (SPARKMARK_CONSOLE_TOKEN or --token-file) that every request must carry",
    )


def _server(settings: Settings, host: str, port: int, token: str | None):
    import uvicorn

    from ..api.service import Service
    from .app import create_app

    app = create_app(Service(settings), token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off")
    return uvicorn.Server(config), app


@dataclass
class Running:
    url: str
    server: Any
    thread: threading.Thread
    stop_scheduler: threading.Event
    store: str  # the state store's URL, password hidden

    def stop(self) -> None:
        self.stop_scheduler.set()
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _bound_port(server) -> int:
    for s in server.servers:
        for sock in s.sockets:
            return int(sock.getsockname()[1])
    raise RuntimeError("the console has no socket")


def start(settings: Settings, host: str, port: int, token: str | None, *, scheduler: bool = True) -> Running:
    """Serve in a daemon thread of this process; :meth:`Running.stop` ends it."""
    check_binding(host, token)
    server, app = _server(settings, host, port, token)
    stop = threading.Event()
    if scheduler:
        from ..workflow.scheduler import lead_in_background

        service = app.state.service
        lead_in_background(service.state, service.settings, service.source, stop)
    thread = threading.Thread(target=server.run, name="sparkmark-console", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            stop.set()
            from ..errors import ConfigError

            raise ConfigError(f"the console could not listen on {host}:{port} (is the port taken?)")
        threading.Event().wait(0.02)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{shown}:{_bound_port(server)}"
    return Running(url, server, thread, stop, app.state.service.state.display_url)
