"""The endpoint: a Starlette app behind sparkmark's request guard, on 127.0.0.1 unless
told otherwise.

``sparkmark api`` runs it in the foreground, with a scheduler thread that starts
what the API queues (job runs, crawls, workflow runs, scheduled triggers) whenever no
other scheduler leads. ``sparkmark run`` starts one on demand, in a thread of the
run's own process, when none is running, and points ``AWS_ENDPOINT_URL_GLUE`` at it.

Every request is signed (SigV4) with the endpoint's token as the secret access key:
the configured ``SPARKMARK_API_TOKEN``, or the home's own token
(``$SPARKMARK_HOME/token``), which every sparkmark process of the same home reads.
Host and Origin are checked, and the body's size and pace are limited, before the
signature is looked at (:mod:`sparkmark.access`).

A running endpoint writes ``$SPARKMARK_HOME/api.json`` (its URL and process id, never
its token), so other sparkmark processes on the machine find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import serving
from ..access import FailureLimiter, RequestGuard, client_address, resolve_token, token_path
from ..settings import Settings
from . import auth, iceberg_rest, protocol, sts
from .service import Service

if TYPE_CHECKING:
    from ..app.application import App

log = logging.getLogger("sparkmark.api")

# Operations register themselves on import.
from . import (  # noqa: E402, F401
    athena,
    catalog,
    classifiers,
    cloudwatch,
    connections,
    crawlers,
    functions,
    jobs,
    logs,
    quality,
    schema_registry,
    security,
    sessions,
    table_optimizers,
    tags,
    workflows,
)

HOW_TO_TOKEN = "set SPARKMARK_API_TOKEN (clients sign with it as their secret access key)"


def _refusal(status: int, code: str, message: str):
    body = protocol.render_error(protocol.GlueApiError(code, message, status))
    return body, [(b"content-type", protocol.CONTENT_TYPE.encode()), (b"x-amzn-errortype", code.encode())]


def create_app(service: Service, listen: serving.Listen, also_accept: Sequence[str] = ()):
    """The endpoint's application; requests signed with ``listen.token`` (or one of the
    ``also_accept`` secret keys) are served."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    secrets = [listen.token, *also_accept]
    limiter = FailureLimiter()

    def check(request: Request, body: bytes, url: str | None = None) -> None:
        """The request's signature, or GlueApiError; wrong signatures are counted per
        address and credential."""
        try:
            auth.check_signature(
                secrets,
                method=request.method,
                url=url or str(request.url),
                headers=request.headers,
                body=body,
            )
        except protocol.GlueApiError:
            # Counted only when a credential was presented, under its access key id:
            # an unsigned request (any web page's <img>) is never counted, and a
            # correctly signed one never gets here, whatever others did.
            presented = auth.access_key(request.headers)
            if presented and limiter.failed(client_address(request.scope), presented):
                raise protocol.GlueApiError(
                    "ThrottlingException",
                    "too many requests with a wrong signature from this address: wait a minute",
                    429,
                ) from None
            raise

    def as_sent(request: Request) -> str:
        """The request's URL with its path as the client sent and signed it (a REST
        path's %1F or %2F stays encoded), not as decoded."""
        raw = request.scope.get("raw_path") or request.url.path.encode()
        query = request.url.query
        return f"{request.url.scheme}://{request.url.netloc}{raw.decode('latin-1')}" + (
            f"?{query}" if query else ""
        )

    async def signed(request: Request, body: bytes) -> None:
        """For REST paths: signed over the path as sent (a namespace's %1F stays as the
        client signed it), not as decoded; or, as the REST catalog's own clients
        authenticate, the endpoint's token as a bearer token (``token`` in Iceberg's
        catalog properties)."""
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            given = header[7:].strip()
            if any(hmac.compare_digest(given.encode(), s.encode()) for s in secrets if s):
                return
            if limiter.failed(client_address(request.scope), given[:16]):
                raise protocol.GlueApiError(
                    "ThrottlingException", "too many wrong tokens: wait a minute", 429
                )
            raise protocol.GlueApiError(
                "AccessDeniedException", "the bearer token is not the endpoint's token", 403
            )
        check(request, body, as_sent(request))

    async def glue(request: Request) -> Response:
        body = await request.body()
        headers = {"Content-Type": protocol.CONTENT_TYPE}
        name = "?"
        kind = "glue"
        # STS is called in the query protocol and answered in XML, its errors too.
        querying = request.headers.get("x-amz-target") is None and sts.is_sts(
            request.headers.get("content-type"), body
        )
        try:
            check(request, body)
            if querying:
                name = "sts"
                return Response(sts.answer(body, auth.access_key(request.headers)), media_type="text/xml")
            kind, name = protocol.target_of(request.headers.get("x-amz-target"))
            headers = {"Content-Type": protocol.content_type(kind)}
            op = protocol.operation(name, kind)
            params = protocol.parse_request(op, body)
            result = await asyncio.to_thread(service.call, name, params, kind)
            return Response(protocol.render_response(op, result), headers=headers)
        except protocol.GlueApiError as exc:
            log.info("%s: %s %s", name, exc.code, exc.message)
            if querying:
                return Response(sts.error(exc), status_code=exc.status, media_type="text/xml")
            extra = {"x-amzn-ErrorType": exc.code}
            query_code = protocol.query_error(kind, exc.code) if kind != "glue" else None
            if query_code:
                extra["x-amzn-query-error"] = query_code
            return Response(protocol.render_error(exc), status_code=exc.status, headers={**headers, **extra})
        except Exception:  # an endpoint answers every request, with Glue's error shape
            log.exception("%s failed", name)
            code = "InternalServerException" if kind == "athena" else "InternalServiceException"
            failure = protocol.GlueApiError(code, f"{name} failed inside sparkmark", 500)
            return Response(protocol.render_error(failure), status_code=500, headers=headers)

    async def athena_rest(request: Request) -> Response:
        """Athena's API over REST-JSON (the protocol of newer SDKs' model of Athena)."""
        body = await request.body()
        name = request.scope["route"].name
        headers = {"Content-Type": "application/json"}
        try:
            check(request, body, as_sent(request))
            op = protocol.operation(name, "athena")
            params = protocol.parse_request(
                op,
                athena.rest_body(
                    op, dict(request.path_params), list(request.query_params.multi_items()), body
                ),
            )
            result = await asyncio.to_thread(service.call, name, params, "athena")
            return Response(protocol.render_response(op, result), headers=headers)
        except protocol.GlueApiError as exc:
            log.info("%s: %s %s", name, exc.code, exc.message)
            return Response(
                protocol.render_error(exc),
                status_code=exc.status,
                headers={**headers, "x-amzn-ErrorType": exc.code},
            )
        except Exception:  # every request is answered, in the protocol's error shape
            log.exception("%s failed", name)
            failure = protocol.GlueApiError("InternalServerException", f"{name} failed inside sparkmark", 500)
            return Response(protocol.render_error(failure), status_code=500, headers=headers)

    async def health(_request: Request) -> Response:
        return JSONResponse({"service": "sparkmark-glue-api", "status": "ok"})

    async def metrics(request: Request) -> Response:
        """The project's metrics for Prometheus, for a bearer of the endpoint's token
        (Prometheus cannot sign with SigV4: ``authorization: credentials_file``)."""
        from ..app.prometheus import exposition

        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header[:7].lower() == "bearer " else ""
        if not given or not any(hmac.compare_digest(given.encode(), s.encode()) for s in secrets if s):
            if given and limiter.failed(client_address(request.scope), given):
                return PlainTextResponse("too many wrong tokens: wait a minute\n", status_code=429)
            return PlainTextResponse(
                "the metrics need the endpoint's token as a bearer token (Authorization: Bearer TOKEN)\n",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        body, content_type = await asyncio.to_thread(exposition, service)
        return Response(body, media_type=content_type)

    app = Starlette(
        routes=[
            Route("/", glue, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            iceberg_rest.route(service, signed),
            *[
                Route(path, athena_rest, methods=[method], name=operation)
                for operation, (method, path) in athena.REST_ROUTES.items()
            ],
        ]
    )
    return RequestGuard(
        app, hosts=listen.hosts, limits=listen.limits, refuse=_refusal, name="Glue API endpoint"
    )


def listen_of(settings: Settings, host: str, port: int) -> serving.Listen:
    """Where the endpoint listens and the token it checks, from the settings."""
    listen = serving.Listen.of(settings, host, port, resolve_token(settings.api_token_value, settings.home))
    listen.check("Glue API endpoint", HOW_TO_TOKEN)
    return listen


def endpoint_file(settings: Settings) -> Path:
    return settings.home / "api.json"


def start_in_thread(
    settings: Settings, host: str = "127.0.0.1", port: int = 0, also_accept: Sequence[str] = ()
) -> serving.Running:
    """Serve in a daemon thread of this process (for ``sparkmark run`` and tests)."""
    listen = listen_of(settings, host, port)
    service = Service(settings)
    running = serving.start_in_thread(create_app(service, listen, also_accept), listen, "Glue API endpoint")
    service.glue_url, service.glue_token = running.url, listen.token
    return running


def serve(settings: Settings, host: str, port: int, *, scheduler: bool = True) -> None:
    """Serve in the foreground until interrupted, recording the endpoint for others."""
    listen = listen_of(settings, host, port)
    service = Service(settings)
    service.start_services(scheduler=scheduler, endpoint=RunsEndpoint(service))
    record = endpoint_file(settings)
    from ..pool.config import load_pool_config
    from ..pool.pool import close_shared

    if load_pool_config(settings.config).prestart:
        service.pool  # noqa: B018 - started now, so the first session or job finds Spark up

    def started(url: str) -> None:
        service.glue_url, service.glue_token = url, listen.token  # for sessions' boto3 and GlueCatalogs
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
        log.info("Glue API endpoint on %s (AWS_ENDPOINT_URL_GLUE=%s)", url, url)
        print(f"Glue API endpoint: {url}", flush=True)
        if not settings.api_token_value:
            print(
                f"Clients sign with the token in {token_path(settings.home)} as their secret access "
                "key (any access key id); `sparkmark aws-profile` writes an AWS profile that does",
                flush=True,
            )

    try:
        serving.serve_forever(create_app(service, listen, own_secret()), listen, started)
    finally:
        service.close()  # its scheduler, sessions, warm processes and store end with it
        close_shared()
        with contextlib.suppress(OSError):
            if json.loads(record.read_text(encoding="utf-8")).get("pid") == os.getpid():
                record.unlink()


def own_secret() -> list[str]:
    """The secret key of this process's own AWS credentials, if it has any: a session it
    runs keeps them (it may need them for S3) and signs its Glue calls with them, so the
    server accepts them as it accepts its token. They are the operator's, not a client's."""
    import botocore.session

    found = botocore.session.get_session().get_credentials()
    return [found.get_frozen_credentials().secret_key] if found is not None else []


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
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1):
            return url
    except (OSError, ValueError):
        return None


class RunsEndpoint:
    """The Glue endpoint that job runs hosted by this process's warm processes talk to,
    as the variables of :meth:`App.endpoint_environment`: this server's own when it
    serves plain HTTP, else one that another process serves for the home, else one
    started in this process (on loopback, plain HTTP, for this home's token and this
    process's own AWS credentials) the first time a run needs one."""

    def __init__(self, app: App):
        self.app = app
        self._lock = threading.Lock()
        self._url: str | None = None
        self._token: str | None = None
        self.started: serving.Running | None = None

    def __call__(self) -> dict[str, str]:
        with self._lock:
            if self._url is None:
                self._url, self._token = self._find()
        return self.app.endpoint_environment(self._url, self._token)

    def _find(self) -> tuple[str, str]:
        own = self.app.glue_url
        if own and own.startswith("http://"):
            return own, self.app.glue_token or ""
        settings = self.app.settings.model_copy(update={"tls_certfile": None, "tls_keyfile": None})
        token = resolve_token(settings.api_token_value, settings.home)
        found = running_endpoint(settings)
        if found is not None and found.startswith("http://"):
            return found, token
        self.started = start_in_thread(settings, also_accept=own_secret())
        log.info("Glue API endpoint for hosted runs on %s", self.started.url)
        return self.started.url, token

    def stop(self) -> None:
        if self.started is not None:
            self.started.stop()
