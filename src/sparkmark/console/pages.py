"""What the console's pages share (page numbers, names from the path, checked forms, the
errors a page answers with), and the sign-in, health and metrics pages. Each area's
pages are a module of their own (``run_pages``, ``bookmark_pages``, ``workflow_pages``,
``quality_pages``, ``catalog_pages``, ``session_pages``, ``timeline_page``).

Handlers are synchronous: Starlette runs them in its thread pool, so a slow query
holds one worker, not the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ..engine.models import RunRecord
from ..engine.names import check_name, check_run_id
from ..errors import ArgumentError, NotFound
from ..sources.registry import kind_of_metrics
from .figures import source_figures
from .filters import ListFilter
from .security import ADMITTED, CSRF_FIELD, THROTTLED, guard_of

RUNS_PAGE = 50


VERSIONS_PAGE = 25


FILES_PAGE = 50


PARTITIONS_PAGE = 100


MANIFEST_SHOWN = 200


LOG_BYTES = 64 * 1024


class PageError(Exception):
    """A request the console answers with an error page (404 unknown, 400 malformed)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# ------------------------------------------------------------------ helpers


def page_number(request: Request, name: str = "page") -> int:
    raw = request.query_params.get(name, "1")
    if not raw.isdigit() or not 1 <= int(raw) <= 1_000_000:
        raise PageError(400, f"{name} must be a whole number from 1")
    return int(raw)


def job_name_of(request: Request, key: str = "job") -> str:
    """The job name in the URL, checked as run names are (a bad one is a 400 page)."""
    try:
        return check_name("job name", request.path_params[key])
    except ArgumentError as exc:
        raise PageError(400, str(exc)) from None


def checked_run_id(value: str) -> str:
    try:
        return check_run_id(value)
    except ArgumentError as exc:
        raise PageError(400, str(exc)) from None


def require_job(app, job: str) -> None:
    if not app.state.service.state.job_exists(job) and job not in app.state.service.project.jobs:
        raise PageError(404, f"no job named {job!r} in this state store or sparkmark.toml")


def duration(run: RunRecord) -> float | None:
    if run.ended_at is None:
        return None
    return (run.ended_at - run.started_at).total_seconds()


def source_rows(run: RunRecord) -> list[dict[str, Any]]:
    """One row per source of a run: what it read, in the unit it reads in, and each of
    its metrics with its unit."""
    rows = []
    for ctx, m in sorted((run.metrics.get("sources") or {}).items()):
        kind = kind_of_metrics(m)
        rows.append(
            {"ctx": ctx, "type": kind.name, "read": kind.read(m), "metrics": m, "figures": source_figures(m)}
        )
    return rows


def totals(run: RunRecord) -> str:
    files = rows = 0
    for m in (run.metrics.get("sources") or {}).values():
        files += int(m.get("files_read") or 0)
        rows += int(m.get("rows_read") or 0)
    streaming = run.metrics.get("streaming") or {}
    parts = []
    if files:
        parts.append(f"{files} files")
    if rows:
        parts.append(f"{rows} rows")
    if streaming.get("numRecords"):
        parts.append(f"{streaming['numRecords']} records")
    return ", ".join(parts) or "-"


def error_head(text: str | None, lines: int = 3, chars: int = 200) -> str:
    """An error's first lines (and characters), for a table cell; the run's page has all of it."""
    if not text:
        return ""
    kept = text.strip().splitlines()
    head = "\n".join(kept[:lines])
    if len(head) > chars:
        head = head[:chars].rstrip()
    return head + (" …" if head != text.strip() else "")


def tidy_query(request: Request) -> RedirectResponse | None:
    """A filter form sends its empty fields too (``?q=x&state=&tag=``): the page
    answers with the same query without them, so the URL says only what was chosen."""
    pairs = list(request.query_params.multi_items())
    kept = [(k, v) for k, v in pairs if v.strip()]
    if len(kept) == len(pairs):
        return None
    return redirect_to(request.url.path + ("?" + urlencode(kept) if kept else ""))


def redirect_to(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


async def checked_form(request: Request) -> dict[str, str]:
    form = await request.form()
    values = {k: str(v) for k, v in form.items()}
    if not guard_of(request).csrf_ok(request, values.get(CSRF_FIELD)):
        raise PageError(403, "the form's CSRF token is missing or wrong: reload the page and try again")
    return values


# ------------------------------------------------------------------ jobs


def job_page_of(request: Request):
    """(job, state store, page number) of a page about one known job."""
    job = job_name_of(request)
    require_job(request.app, job)
    return job, request.app.state.service.state, page_number(request)


def run_of(request: Request) -> RunRecord:
    run_id = checked_run_id(request.path_params["run_id"])
    try:
        return request.app.state.service.state.get_run(run_id)
    except NotFound:
        raise PageError(404, f"no run {run_id} in this state store") from None


def filtered(request: Request, states: list[str]) -> ListFilter | Response:
    """The list's filter, or the redirect that drops the form's empty fields."""
    tidied = tidy_query(request)
    if tidied is not None:
        return tidied
    return ListFilter.of(request.query_params, states, getlist=request.query_params.getlist)


def _signed_in_to(request: Request, given: str) -> Response | None:
    """The redirect that signs the browser in, or None when ``given`` is not the token."""
    guard = guard_of(request)
    verdict = guard.presented(request, given)
    if verdict == THROTTLED:
        raise PageError(429, "too many wrong tokens from this address: wait a minute and try again")
    if verdict != ADMITTED:
        return None
    target = request.query_params.get("next", "/")
    if not target.startswith("/") or target.startswith("//"):  # only a page of this console
        target = "/"
    return guard.sign_in(redirect_to(target))


def login_page(request: Request) -> Response:
    """The sign-in form; with ``?token=…`` (the URL the console prints), signs in at once."""
    given = request.query_params.get("token")
    if given:
        return _signed_in_to(request, given) or request.app.state.render(
            request, "login.html", status_code=401, failed=True
        )
    return request.app.state.render(request, "login.html", failed=False)


async def login_do(request: Request) -> Response:
    form = await checked_form(request)
    return _signed_in_to(request, form.get("token", "")) or request.app.state.render(
        request, "login.html", status_code=401, failed=True
    )


def health(_request: Request) -> Response:
    return PlainTextResponse("ok")


async def metrics(request: Request) -> Response:
    """The project's metrics for Prometheus (the token as a bearer token, as on every page)."""
    from ..app.prometheus import exposition

    body, content_type = await asyncio.to_thread(exposition, request.app.state.service)
    return Response(body, media_type=content_type)


def no_icon(_request: Request) -> Response:
    return Response(status_code=204)


# ------------------------------------------------------------------ interactive sessions
