"""The Data Catalog (databases, a table with its partitions and schema versions) and the crawlers."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..errors import NotFound, SparkmarkError
from .filters import ListFilter
from .pages import PARTITIONS_PAGE, PageError, filtered, page_number


def catalog_page(request: Request) -> Response:
    wanted = filtered(request, [])
    if not isinstance(wanted, ListFilter):
        return wanted
    catalog = request.app.state.service.catalog
    databases = []
    for db in catalog.databases():
        tables = catalog.tables(db)
        shown = [t for t in tables if wanted.name_matches(f"{db}.{t.name}")]
        if shown or not wanted.q:
            databases.append((db, shown))
    return request.app.state.render(request, "catalog.html", databases=databases, wanted=wanted)


def table_page(request: Request) -> Response:
    catalog = request.app.state.service.catalog
    db, name = request.path_params["database"], request.path_params["table"]
    try:
        table = catalog.table(db, name)
    except NotFound:
        raise PageError(404, f"no table {db}.{name} in the catalog") from None
    except SparkmarkError as exc:
        raise PageError(400, str(exc)) from None
    page = page_number(request)
    partitions = catalog.partitions(db, name)
    pages = max(1, -(-len(partitions) // PARTITIONS_PAGE))
    shown = partitions[(page - 1) * PARTITIONS_PAGE : page * PARTITIONS_PAGE]
    versions = catalog.versions(db, name)
    numbers = [v.version for v in versions]
    diff_lines = None
    a, b = request.query_params.get("from"), request.query_params.get("to")
    if a or b:
        if not (a and b and a.isdigit() and b.isdigit()):
            raise PageError(400, "from and to are schema version numbers")
        picked = {v.version: v for v in versions}
        if int(a) not in picked or int(b) not in picked:
            raise PageError(404, f"table {db}.{name} has schema versions {numbers}")
        from ..catalog.store import diff

        diff_lines = diff(picked[int(a)], picked[int(b)]) or ["no difference"]
    return request.app.state.render(
        request,
        "table.html",
        table=table,
        partitions=shown,
        partition_count=len(partitions),
        page=page,
        pages=pages,
        versions=versions,
        diff_from=a,
        diff_to=b,
        diff_lines=diff_lines,
    )


CRAWL_STATES = ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "NOT RUN"]


def crawlers_page(request: Request) -> Response:
    wanted = filtered(request, CRAWL_STATES)
    if not isinstance(wanted, ListFilter):
        return wanted
    crawlers = request.app.state.service.crawlers
    rows = []
    for name in crawlers.names():
        if not wanted.name_matches(name):
            continue
        found = crawlers.crawls(name, limit=1)
        last = found[0] if found else None
        if wanted.states and (last.state if last else "NOT RUN") not in wanted.states:
            continue
        rows.append((name, last))
    return request.app.state.render(
        request, "crawlers.html", crawlers=rows, wanted=wanted, states=CRAWL_STATES
    )


def crawler_page(request: Request) -> Response:
    crawlers = request.app.state.service.crawlers
    name = request.path_params["name"]
    try:
        definition, _ = crawlers.get(name)
    except NotFound:
        raise PageError(404, f"no crawler named {name!r}") from None
    return request.app.state.render(
        request, "crawler.html", name=name, definition=definition, crawls=crawlers.crawls(name, limit=50)
    )


# ------------------------------------------------------------------ sign-in
