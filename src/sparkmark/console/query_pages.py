"""The query editor: Athena's SQL run on the catalog from the console, with the
catalog's databases and tables beside it, a query's results, and the history of queries
(from every door: the console, the Athena API, its clients)."""

from __future__ import annotations

import uuid
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from ..errors import NotFound
from .pages import PageError, checked_form, redirect_to

SHOWN_ROWS = 100
HISTORY = 50


def _output(request: Request) -> str:
    """Where the console's queries write results: the form's location, else a folder of
    the project's home."""
    return f"file://{request.app.state.service.settings.home}/athena-results/"


def _catalog(service) -> list[tuple[str, list[str]]]:
    return [(db, sorted(t.name for t in service.catalog.tables(db))) for db in service.catalog.databases()]


def query_page(request: Request) -> Response:
    service = request.app.state.service
    history = service.athena.store.queries()[:HISTORY]
    database = request.query_params.get("database") or (history[0].database if history else None) or "default"
    return request.app.state.render(
        request,
        "query.html",
        catalog=_catalog(service),
        history=history,
        database=database,
        sql=request.query_params.get("sql", ""),
        output=_output(request),
    )


async def query_start(request: Request) -> Response:
    form = await checked_form(request)
    sql = form.get("sql", "").strip()
    if not sql:
        raise PageError(400, "the query is empty: write a query in the editor")
    service = request.app.state.service
    record = service.athena.start(
        str(uuid.uuid4()),
        sql,
        workgroup="primary",
        database=form.get("database") or "default",
        catalog="AwsDataCatalog",
        output_location=form.get("output") or _output(request),
    )
    return redirect_to(f"/query/{quote(record.id, safe='')}")


def _record(request: Request):
    try:
        return request.app.state.service.athena.store.query(request.path_params["query_id"])
    except NotFound:
        raise PageError(404, f"no query {request.path_params['query_id']!r}") from None


def query_result_page(request: Request) -> Response:
    record = _record(request)
    rows: list[list[str | None]] = []
    more = False
    missing = None
    if record.state == "SUCCEEDED" and record.outcome.get("file") and record.outcome.get("columns"):
        try:
            rows, more = request.app.state.service.athena.result_rows(record, 0, SHOWN_ROWS + 1)
        except FileNotFoundError:
            missing = record.outcome["file"]
    header = [c["Name"] for c in record.outcome.get("columns") or []]
    if rows and not record.outcome.get("text"):
        rows = rows[1:]  # the CSV's header row
    return request.app.state.render(
        request,
        "query_result.html",
        query=record,
        header=header,
        rows=rows[:SHOWN_ROWS],
        more=more or len(rows) > SHOWN_ROWS,
        missing=missing,
        catalog=_catalog(request.app.state.service),
    )


async def query_stop(request: Request) -> Response:
    record = _record(request)
    await checked_form(request)
    request.app.state.service.athena.stop(record.id)
    return redirect_to(f"/query/{quote(record.id, safe='')}")
