"""Interactive sessions: the list, one session's statements, stopping it."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from ..engine.schema import utcnow
from ..errors import NotFound
from .filters import ListFilter
from .pages import PageError, checked_form, filtered, redirect_to

SESSION_STATES = ["PROVISIONING", "READY", "FAILED", "TIMEOUT", "STOPPING", "STOPPED"]


def sessions_page(request: Request) -> Response:
    wanted = filtered(request, SESSION_STATES)
    if not isinstance(wanted, ListFilter):
        return wanted
    records = request.app.state.service.session_records
    rows = [
        (r, len(records.statements(r.id)))
        for r in reversed(records.all())
        if wanted.name_matches(r.id) and (not wanted.states or r.status in wanted.states)
    ]
    return request.app.state.render(
        request, "sessions.html", sessions=rows, now=utcnow(), wanted=wanted, states=SESSION_STATES
    )


def _session(request: Request):
    records = request.app.state.service.session_records
    try:
        return records.get(request.path_params["session_id"])
    except NotFound:
        raise PageError(404, f"no session {request.path_params['session_id']!r}") from None


def session_page(request: Request) -> Response:
    record = _session(request)
    statements = request.app.state.service.session_records.statements(record.id)
    return request.app.state.render(
        request, "session.html", session=record, statements=statements, now=utcnow()
    )


async def session_stop(request: Request) -> Response:
    record = _session(request)
    await checked_form(request)
    if record.status in ("STOPPED", "FAILED", "TIMEOUT"):
        raise PageError(409, f"session {record.id} is {record.status}: there is nothing to stop")
    request.app.state.service.session_records.request_stop(record.id)
    return redirect_to(f"/sessions/{quote(record.id, safe='')}")


# ------------------------------------------------------------------ timeline
