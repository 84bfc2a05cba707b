"""The endpoint: a Starlette app served by uvicorn, on 127.0.0.1 unless told otherwise.

``sparkmark api`` runs it in the foreground, with a scheduler thread that starts
what the API queues (job runs, crawls, workflow runs, scheduled triggers) whenever no
other scheduler leads. ``sparkmark run`` starts one on demand, in a thread of the
run's own process, when none is running, and points ``AWS_ENDPOINT_URL_GLUE`` at it.

A running endpoint writes ``$SPARKMARK_HOME/api.json`` (its URL and process id, never
its token), so other sparkmark processes on the machine find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import binding
from ..errors import ConfigError
from ..settings import Settings
from . import auth, protocol
from .service import Service

log = logging.getLogger("sparkmark.api")

# Operations register themselves on import.
from . import catalog, crawlers, jobs, quality, workflows  # noqa: E402, F401


def create_app(service: Service, token: str | None = None):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def glue(request: Request) -> Response:
        body = await request.body()
        headers = {"Content-Type": protocol.CONTENT_TYPE}
        name = "?"
        try:
            auth.check_signature(
                token, method=request.method, url=str(request.url), headers=request.headers, body=body
            )
            name = protocol.operation_name(request.headers.get("x-amz-target"))
            op = protocol.operation(name)
            params = protocol.parse_request(op, body)
            result = await asyncio.to_thread(service.call, name, params)
            return Response(protocol.render_response(op, result), headers=headers)
        except protocol.GlueApiError as exc:
            log.info("%s: %s %s", name, exc.code, exc.message)
            return Response(
                protocol.render_error(exc),
                status_code=exc.status,
                headers={**headers, "x-amzn-ErrorType": exc.code},
            )
        except Exception:  # an endpoint answers every request, with Glue's error shape
            log.exception("%s failed", name)
            failure = protocol.GlueApiError(
                "InternalServiceException", f"{name} failed inside sparkmark", 500
            )
            return Response(protocol.render_error(failure), status_code=500, headers=headers)

    async def health(_request: Request) -> Response:
        return JSONResponse({"service": "sparkmark-glue-api", "status": "ok"})

    return Starlette(routes=[Route("/", glue, methods=["POST"]), Route("/health", health, methods=["GET"])])


def check_binding(host: str, token: str | None) -> None:
    binding.check_binding(
        host,
        token,
        service="Glue API endpoint",
        how="set SPARKMARK_API_TOKEN (clients sign with it as their secret access key)",
    )


@dataclass
class Running:
    url: str
    server: Any
    thread: threading.Thread | None

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)


def endpoint_file(settings: Settings) -> Path:
    return settings.home / "api.json"


def _server(service: Service, host: str, port: int, token: str | None):
    import uvicorn

    config = uvicorn.Config(
        create_app(service, token),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    return uvicorn.Server(config)


def _bound_port(server) -> int:
    for s in server.servers:
        for sock in s.sockets:
            return int(sock.getsockname()[1])
    raise RuntimeError("the endpoint has no socket")


def start_in_thread(settings: Settings, host: str = "127.0.0.1", port: int = 0) -> Running:
    """Serve in a daemon thread of this process (for ``sparkmark run`` and tests)."""
    check_binding(host, settings.api_token_value)
    server = _server(Service(settings), host, port, settings.api_token_value)
    thread = threading.Thread(target=server.run, name="sparkmark-glue-api", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise ConfigError(f"the Glue API endpoint could not start on {host}:{port}")
        threading.Event().wait(0.02)
    return Running(f"http://{host}:{_bound_port(server)}", server, thread)


def serve(settings: Settings, host: str, port: int, *, scheduler: bool = True) -> None:
    """Serve in the foreground until interrupted, recording the endpoint for others."""
    token = settings.api_token_value
    check_binding(host, token)
    service = Service(settings)
    server = _server(service, host, port, token)
    stop = threading.Event()
    if scheduler:
        from ..workflow.scheduler import lead_in_background

        lead_in_background(service.state, service.settings, service.source, stop)
    record = endpoint_file(settings)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            url = f"http://{shown}:{_bound_port(server)}"
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
            log.info("Glue API endpoint on %s (AWS_ENDPOINT_URL_GLUE=%s)", url, url)
            print(f"Glue API endpoint: {url}", flush=True)
        await task

    try:
        asyncio.run(main())
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            if json.loads(record.read_text(encoding="utf-8")).get("pid") == os.getpid():
                record.unlink()


def running_endpoint(settings: Settings) -> str | None:
    """The URL of an endpoint another process serves on this machine, if one answers."""
    try:
        found = json.loads(endpoint_file(settings).read_text(encoding="utf-8"))
        url = str(found["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    host_port = url.split("//", 1)[-1]
    host, _, port = host_port.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return url
    except (OSError, ValueError):
        return None
