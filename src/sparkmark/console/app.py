"""The console as a Starlette application: routes, templates, the token and CSRF
checks, and error pages. Every failure is a page with one line, never a traceback."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..access import RequestGuard
from ..engine.masking import mask_text
from ..errors import SparkmarkError
from ..serving import Listen
from . import (
    bookmark_pages,
    catalog_pages,
    jobs,
    pages,
    quality_pages,
    query_pages,
    run_pages,
    session_pages,
    studio,
    timeline_page,
    workflow_pages,
)
from .figures import crawl_figures
from .security import ADMITTED, CSRF_FIELD, SAFE_METHODS, THROTTLED, Guard, NoSecrets

log = logging.getLogger("sparkmark.console")
HERE = Path(__file__).parent
OPEN_PATHS = ("/login", "/health", "/static/")


def _masked(value: Any) -> Any:
    """Every value a template prints passes here: text is masked (secret-named
    arguments' values, URL and DSN passwords, …) before it reaches a page."""
    if isinstance(value, NoSecrets):  # built by the console from names, ids and times only
        return value
    if isinstance(value, Markup):  # already HTML (a macro, tojson): masked, kept as HTML
        return Markup(mask_text(str(value)))
    if isinstance(value, str):
        return mask_text(value)
    return value


def when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if value else "-"


def when_ms(value: int | None) -> str:
    return when(datetime.fromtimestamp(value / 1000, UTC)) if value is not None else "-"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    return f"{minutes} min {secs} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        finalize=_masked,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=when, when_ms=when_ms, seconds=seconds, duration=pages.duration, totals=pages.totals
    )
    env.filters.update(error_head=pages.error_head, short=lambda s, n=12: (s or "")[:n])
    return env


class _Checks(BaseHTTPMiddleware):
    """The token on every request, and a CSRF cookie for forms."""

    async def dispatch(self, request: Request, call_next) -> Response:
        guard: Guard = request.app.state.guard
        path = request.url.path
        verdict = ADMITTED if path.startswith(OPEN_PATHS) else guard.check(request)
        if verdict != ADMITTED:
            if verdict == THROTTLED:
                return HTMLResponse(
                    request.app.state.error_html(
                        429, "too many wrong tokens from this address: wait a minute"
                    ),
                    status_code=429,
                )
            if request.method in SAFE_METHODS and "text/html" in request.headers.get("accept", ""):
                return RedirectResponse("/login?" + urlencode({"next": path}), status_code=303)
            return HTMLResponse(
                request.app.state.error_html(401, "this console needs its token: sign in at /login"),
                status_code=401,
            )
        began = time.perf_counter()
        response = await call_next(request)
        # The page's server time, for browsers' network panels and bench/console.py.
        response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - began) * 1000:.1f}"
        made = getattr(request.state, "new_csrf", None)
        if made:
            guard.set_csrf(response, made)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


def create_app(service, listen: Listen) -> RequestGuard:
    """The console over ``service`` (the state store, definitions and stores of one
    project); every request carries ``listen.token``, and passes the request guard."""
    env = _environment()
    from ..args import as_passed

    temp_dir = str(service.settings.temp_dir)
    env.filters.update(as_passed=lambda args: as_passed(args, temp_dir), crawl_figures=crawl_figures)

    def render(request: Request, template: str, status_code: int = 200, **data: Any) -> HTMLResponse:
        data.update(
            request=request,
            csrf_field=CSRF_FIELD,
            csrf=Guard.csrf_token(request),
            path=request.url.path,
            store=service.state.display_url,
            signed_in=request.app.state.guard.required,
        )
        return HTMLResponse(env.get_template(template).render(**data), status_code=status_code)

    def error_html(status: int, message: str) -> str:
        return env.get_template("error.html").render(
            status=status, message=message, path="", store=service.state.display_url, signed_in=False
        )

    async def page_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, pages.PageError):
            status, message = exc.status, exc.message
        elif isinstance(exc, SparkmarkError):
            status, message = 400, str(exc).strip().splitlines()[0]
        else:
            status = int(getattr(exc, "status_code", 500))
            message = {404: "no such page", 405: "that method is not allowed here"}.get(
                status, "the console could not answer this request"
            )
        return HTMLResponse(error_html(status, message), status_code=status)

    async def server_error(request: Request, exc: Exception) -> Response:
        log.error("console: %s %s failed: %s", request.method, request.url.path, mask_text(repr(exc)))
        return HTMLResponse(error_html(500, "the console could not answer this request"), status_code=500)

    routes = [
        Route("/", jobs.jobs_page),
        Route("/jobs/{job}", jobs.job_page),
        Route("/jobs/{job}/script", jobs.script_page),
        Route("/jobs/{job}/run", jobs.run_job, methods=["POST"]),
        Route("/runs/{run_id}/retry", jobs.retry_run, methods=["POST"]),
        Route("/runs/{run_id}/log", run_pages.run_log),
        Route("/timeline", timeline_page.timeline_page),
        Route("/jobs/{job}/bookmark", bookmark_pages.bookmark_page),
        Route("/jobs/{job}/bookmark/rewind", bookmark_pages.rewind_confirm, methods=["GET"]),
        Route("/jobs/{job}/bookmark/rewind", bookmark_pages.rewind_do, methods=["POST"]),
        Route("/runs/{run_id}", run_pages.run_page),
        Route("/runs/{run_id}/live", run_pages.run_live),
        Route("/workflows", workflow_pages.workflows_page),
        Route("/workflows/{name}", workflow_pages.workflow_page),
        Route("/workflows/{name}/start", workflow_pages.workflow_start, methods=["POST"]),
        Route("/workflows/{name}/runs/{run_id}", workflow_pages.workflow_run_page),
        Route("/workflows/{name}/runs/{run_id}/live", workflow_pages.workflow_run_live),
        Route("/workflows/{name}/runs/{run_id}/stop", workflow_pages.workflow_stop, methods=["POST"]),
        Route("/quality", quality_pages.quality_page),
        Route("/quality-annotations", quality_pages.annotate, methods=["POST"]),
        Route("/rulesets", quality_pages.rulesets_page),
        Route("/rulesets/{name}", quality_pages.ruleset_page),
        Route("/recommendations/{run_id}", quality_pages.recommendation_page),
        Route("/quality/{job}", quality_pages.quality_job_page),
        Route("/quality/{job}/results/{result_id}", quality_pages.quality_result_page),
        Route("/query", query_pages.query_page),
        Route("/query", query_pages.query_start, methods=["POST"]),
        Route("/query/{query_id}", query_pages.query_result_page),
        Route("/query/{query_id}/stop", query_pages.query_stop, methods=["POST"]),
        Route("/catalog", catalog_pages.catalog_page),
        Route("/catalog/{database}/{table}", catalog_pages.table_page),
        Route("/crawlers", catalog_pages.crawlers_page),
        Route("/crawlers/{name}", catalog_pages.crawler_page),
        Route("/sessions", session_pages.sessions_page),
        Route("/sessions/{session_id}", session_pages.session_page),
        Route("/sessions/{session_id}/stop", session_pages.session_stop, methods=["POST"]),
        Route("/studio", studio.studio_page),
        Route("/studio/new", studio.studio_new, methods=["POST"]),
        Route("/studio/import", studio.studio_import, methods=["POST"]),
        Route("/studio/jobs/{name}", studio.editor_page),
        Route("/studio/api/model", studio.model_json),
        Route("/studio/api/browse", studio.browse_json),
        Route("/studio/api/jobs/{name}", studio.job_json, methods=["GET"]),
        Route("/studio/api/jobs/{name}", studio.save_json, methods=["PUT"]),
        Route("/studio/api/jobs/{name}/check", studio.check_json, methods=["POST"]),
        Route("/studio/api/jobs/{name}/run", studio.run_json, methods=["POST"]),
        Route("/studio/api/jobs/{name}/runs/latest", studio.latest_run_json),
        Route("/studio/api/jobs/{name}/preview", studio.preview_json, methods=["POST"]),
        Route("/login", pages.login_page, methods=["GET"]),
        Route("/login", pages.login_do, methods=["POST"]),
        Route("/health", pages.health),
        Route("/metrics", pages.metrics),
        Route("/metric-data", run_pages.metric_data_page),
        Route("/favicon.ico", pages.no_icon),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(_Checks)],
        exception_handlers={
            pages.PageError: page_error,
            SparkmarkError: page_error,
            404: page_error,
            405: page_error,
            500: server_error,
            Exception: server_error,
        },
    )
    app.state.service = service
    app.state.guard = Guard(listen.token, listen.hosts, secure=listen.tls)
    app.state.render = render
    app.state.error_html = error_html

    def refuse(status: int, _code: str, message: str):
        return error_html(status, message).encode("utf-8"), [(b"content-type", b"text/html; charset=utf-8")]

    return RequestGuard(app, hosts=listen.hosts, limits=listen.limits, refuse=refuse, name="console")
