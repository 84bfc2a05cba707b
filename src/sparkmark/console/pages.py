"""The console's pages. Each handler reads through the engine's stores and the
services (the same calls the CLI makes), and hands plain values to a template.

Handlers are synchronous: Starlette runs them in its thread pool, so a slow query
holds one worker, not the event loop.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ..engine.masking import mask_text
from ..engine.models import BookmarkVersion, RunRecord, RunState
from ..engine.names import check_name, check_run_id
from ..engine.preview import preview_job, preview_rewind
from ..engine.run_logs import error_path, log_path
from ..engine.schema import utcnow
from ..errors import ArgumentError, NotFound, SparkmarkError
from ..sources.registry import FILES, kind_of_metrics, kind_of_state
from ..sources.states import parse_state
from ..workflow import report
from .figures import glue_figures, rule_grid, source_figures
from .filters import ListFilter
from .graph import layout
from .security import ADMITTED, CSRF_FIELD, THROTTLED, NoSecrets, guard_of

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


def _page_number(request: Request, name: str = "page") -> int:
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


def _run_id(value: str) -> str:
    try:
        return check_run_id(value)
    except ArgumentError as exc:
        raise PageError(400, str(exc)) from None


def _require_job(app, job: str) -> None:
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
    return _redirect(request.url.path + ("?" + urlencode(kept) if kept else ""))


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


async def _checked_form(request: Request) -> dict[str, str]:
    form = await request.form()
    values = {k: str(v) for k, v in form.items()}
    if not guard_of(request).csrf_ok(request, values.get(CSRF_FIELD)):
        raise PageError(403, "the form's CSRF token is missing or wrong: reload the page and try again")
    return values


# ------------------------------------------------------------------ jobs


def _job_page_of(request: Request):
    """(job, state store, page number) of a page about one known job."""
    job = job_name_of(request)
    _require_job(request.app, job)
    return job, request.app.state.service.state, _page_number(request)


def _run(request: Request) -> RunRecord:
    run_id = _run_id(request.path_params["run_id"])
    try:
        return request.app.state.service.state.get_run(run_id)
    except NotFound:
        raise PageError(404, f"no run {run_id} in this state store") from None


def _manifest(run: RunRecord) -> list[dict[str, Any]]:
    """The files each source read, from the run's manifests (at most a few hundred shown)."""
    import fsspec

    shown = []
    for ctx, m in sorted((run.metrics.get("sources") or {}).items()):
        where = m.get("manifest")
        if not where:
            continue
        try:
            with fsspec.open(where, "r", encoding="utf-8") as f:
                document = json.load(f)
        except (OSError, ValueError):
            shown.append({"ctx": ctx, "path": where, "files": [], "total": None, "missing": True})
            continue
        # One entry per folder: {"path": folder, "files": [file, ...]}.
        paths = [
            str(p)
            for folder in (document if isinstance(document, list) else [])
            if isinstance(folder, dict)
            for p in folder.get("files") or []
        ]
        shown.append(
            {
                "ctx": ctx,
                "path": where,
                "files": paths[:MANIFEST_SHOWN],
                "total": len(paths),
                "missing": False,
            }
        )
    return shown


def _log(request: Request, run: RunRecord) -> tuple[str | None, str | None]:
    """(log path, its last LOG_BYTES, masked) of a run: the scheduler's for a run it
    started, else the copy a run from a terminal kept."""
    service = request.app.state.service
    try:
        kept = service.workflows.action(run.run_id).log_path
    except NotFound:
        kept = None
    stdout = Path(kept) if kept else log_path(service.settings.home, "JOB", run.job_name, run.run_id)
    if not stdout.exists() and not error_path(stdout).exists():
        return None, None
    parts = []
    for path, heading in ((stdout, None), (error_path(stdout), "stderr")):
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - LOG_BYTES))
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        if text:
            parts.append(f"--- {heading} ---\n{text}" if heading else text)
    if not parts:
        return str(stdout), None
    service.register_connection_secrets()  # a job that printed a connection's password
    return str(stdout), mask_text("\n".join(parts))


def run_page(request: Request) -> Response:
    service = request.app.state.service
    try:
        run = _run(request)
    except PageError as exc:
        action = _queued(service, request.path_params["run_id"]) if exc.status == 404 else None
        if action is None or action.kind != "JOB":
            raise
        # Queued by Run job or a retry: the scheduler has not started it yet.
        return request.app.state.render(request, "run_queued.html", action=action)
    store = service.state
    log_path, log_text = _log(request, run)
    return request.app.state.render(
        request,
        "run.html",
        run=run,
        sources=source_rows(run),
        streaming=run.metrics.get("streaming"),
        **_glue_and_insight(service, run),
        manifests=_manifest(run),
        outputs=store.outputs(run_id=run.run_id),
        log_path=log_path,
        log_text=log_text,
        declared=run.job_name in service.project.jobs,
    )


def _queued(service, run_id: str):
    """The scheduler's record of a run that is queued or starting, or None."""
    try:
        return service.workflows.action(run_id)
    except NotFound:
        return None


def run_log(request: Request) -> Response:
    """A run's log, the last LOG_BYTES of it (polled by its page while it runs)."""
    run = _run(request)
    log_path, log_text = _log(request, run)
    return request.app.state.render(request, "run_log.html", run=run, log_path=log_path, log_text=log_text)


def run_live(request: Request) -> Response:
    """The part of a run's page that changes while it runs (polled by the page)."""
    run = _run(request)
    return request.app.state.render(
        request,
        "run_live.html",
        run=run,
        sources=source_rows(run),
        streaming=run.metrics.get("streaming"),
        **_glue_and_insight(request.app.state.service, run),
        declared=run.job_name in request.app.state.service.project.jobs,
    )


def _glue_and_insight(service, run: RunRecord) -> dict[str, Any]:
    """A run's Glue metrics (as it ended; while it runs, its latest report) and the
    insight of its failure."""
    from ..runtime.glue_metrics import NAMESPACE
    from ..runtime.metric_store import MetricStore

    values = dict(run.metrics.get("glue") or {})
    if run.state is RunState.RUNNING:
        for row in MetricStore(service.state).latest(NAMESPACE):
            if dict(row.dims).get("JobRunId") == run.run_id:
                values[row.name] = row.value
    return {"glue": glue_figures(values), "insight": run.metrics.get("insight")}


def metric_data_page(request: Request) -> Response:
    """What scripts put with CloudWatch's PutMetricData: each series' latest value."""
    from ..runtime.glue_metrics import NAMESPACE
    from ..runtime.metric_store import MetricStore

    q = (request.query_params.get("q") or "").strip().lower()
    rows = [
        r
        for r in MetricStore(request.app.state.service.state).latest()
        if r.namespace != NAMESPACE or not r.group
    ]
    if q:
        rows = [r for r in rows if q in f"{r.namespace} {r.name} {r.dims}".lower()]
    return request.app.state.render(request, "metric_data.html", rows=rows, q=q)


# ------------------------------------------------------------------ bookmarks


def version_changes(versions: list[BookmarkVersion], previous: BookmarkVersion | None, counts) -> list[dict]:
    """Each version against the one before it: files recorded and progress per source."""
    rows = []
    ordered = sorted(versions, key=lambda v: v.version)
    before = previous
    for v in ordered:
        changes = []
        for ctx, stored in sorted(v.ctx_states.items()):
            old = before.ctx_states.get(ctx) if before else None
            state = parse_state(stored)
            text = state.change(parse_state(old) if old else None, counts.get((v.version, ctx), 0))
            changes.append({"ctx": ctx, "text": text})
        rows.append({"version": v, "changes": changes})
        before = v
    rows.reverse()
    return rows


def bookmark_page(request: Request) -> Response:
    job, store, page = _job_page_of(request)
    app = request.app
    versions = store.history(job, limit=VERSIONS_PAGE + 1, offset=(page - 1) * VERSIONS_PAGE)
    more = len(versions) > VERSIONS_PAGE
    previous = versions[VERSIONS_PAGE] if more else None
    versions = versions[:VERSIONS_PAGE]
    counts = store.files_recorded(job, [v.version for v in versions])
    current = store.latest_version(job)
    ctxs = sorted(current.ctx_states) if current else []
    files_ctx = request.query_params.get("ctx") or (
        next((c for c in ctxs if current and kind_of_state(current.ctx_states[c]) is FILES), None)
    )
    contains = request.query_params.get("q") or None
    after = request.query_params.get("after") or None
    files = []
    if current and files_ctx:
        if files_ctx not in current.ctx_states:
            raise PageError(404, f"job {job!r} has no source {files_ctx!r} in its current bookmark")
        files = store.file_page(job, files_ctx, current, contains=contains, after=after, limit=FILES_PAGE)
    next_files = None
    if len(files) == FILES_PAGE:
        next_files = urlencode({"ctx": files_ctx, "q": contains or "", "after": files[-1].path})
    return app.state.render(
        request,
        "bookmark.html",
        job=job,
        current=current,
        entry=report.bookmark_entry(current, job),
        history=version_changes(versions, previous, counts),
        page=page,
        more=more,
        ctxs=ctxs,
        files_ctx=files_ctx,
        contains=contains or "",
        files=files,
        next_files=next_files,
        lease=store.get_lease(job),
    )


def rewind_confirm(request: Request) -> Response:
    job = job_name_of(request)
    app = request.app
    _require_job(app, job)
    run_id = request.query_params.get("run_id") or None
    if run_id:
        _run_id(run_id)
    store = app.state.service.state
    try:
        preview = preview_rewind(store, job, run_id)
    except NotFound as exc:
        raise PageError(404, str(exc)) from None
    return app.state.render(
        request,
        "rewind.html",
        job=job,
        run_id=run_id,
        preview=preview,
        now=preview_job(store, job),
        lease=store.get_lease(job),
    )


async def rewind_do(request: Request) -> Response:
    job = job_name_of(request)
    form = await _checked_form(request)
    run_id = form.get("run_id") or None
    if run_id:
        _run_id(run_id)

    def act() -> None:
        store = request.app.state.service.state
        _require_job(request.app, job)
        if run_id:
            store.rewind(job, run_id)
        else:
            store.reset(job)

    from starlette.concurrency import run_in_threadpool

    try:
        await run_in_threadpool(act)
    except NotFound as exc:
        raise PageError(404, str(exc)) from None
    return _redirect(f"/jobs/{job}/bookmark")


# ------------------------------------------------------------------ workflows


WORKFLOW_STATUSES = ["RUNNING", "COMPLETED", "STOPPING", "STOPPED", "ERROR"]


def _filtered(request: Request, states: list[str]) -> ListFilter | Response:
    """The list's filter, or the redirect that drops the form's empty fields."""
    tidied = tidy_query(request)
    if tidied is not None:
        return tidied
    return ListFilter.of(request.query_params, states, getlist=request.query_params.getlist)


def workflows_page(request: Request) -> Response:
    wanted = _filtered(request, WORKFLOW_STATUSES)
    if not isinstance(wanted, ListFilter):
        return wanted
    service = request.app.state.service
    project = service.project
    since, until = wanted.window(utcnow())
    runs = service.workflows.workflow_runs(statuses=wanted.states or None, since=since, until=until, limit=50)
    return request.app.state.render(
        request,
        "workflows.html",
        workflows=[
            w for w in sorted(project.workflows.values(), key=lambda w: w.Name) if wanted.name_matches(w.Name)
        ],
        runs=[r for r in runs if wanted.name_matches(r.workflow)],
        wanted=wanted,
        states=WORKFLOW_STATUSES,
    )


def _workflow(request: Request):
    name = request.path_params["name"]
    workflow = request.app.state.service.project.workflows.get(name)
    if workflow is None:
        raise PageError(404, f"no workflow named {name!r} in sparkmark.toml or the registry")
    return workflow


def workflow_page(request: Request) -> Response:
    workflow = _workflow(request)
    service = request.app.state.service
    graph = service.project.graph(workflow.Name)
    return request.app.state.render(
        request,
        "workflow.html",
        workflow=workflow,
        graph=layout(graph, workflow=workflow.Name),
        runs=service.workflows.workflow_runs(workflow=workflow.Name, limit=50),
    )


def _workflow_run(request: Request):
    workflow = _workflow(request)
    run_id = request.path_params["run_id"]
    try:
        return workflow, request.app.state.service.workflows.workflow_run(run_id, workflow.Name)
    except NotFound:
        raise PageError(404, f"workflow {workflow.Name!r} has no run {run_id!r}") from None


def _run_graph(service, run) -> Any:
    doc = report.workflow_run(run, graph=True, firings=service.workflows.run_firings(run.run_id))
    states = {}
    for node in doc["Graph"]["Nodes"]:
        state, _started, _ended, detail = report.node_state(node)
        states[node["UniqueId"]] = (state, detail)
    return layout(doc["Graph"], states, run.workflow)


def workflow_run_page(request: Request) -> Response:
    workflow, run = _workflow_run(request)
    service = request.app.state.service
    return request.app.state.render(
        request, "workflow_run.html", workflow=workflow, run=run, graph=_run_graph(service, run)
    )


def workflow_run_live(request: Request) -> Response:
    workflow, run = _workflow_run(request)
    service = request.app.state.service
    return request.app.state.render(
        request, "workflow_run_live.html", workflow=workflow, run=run, graph=_run_graph(service, run)
    )


async def workflow_start(request: Request) -> Response:
    workflow = _workflow(request)
    form = await _checked_form(request)
    properties: dict[str, str] = {}
    for line in (form.get("properties") or "").splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise PageError(400, f"run property {line.strip()!r} is not NAME=VALUE")
        properties[key.strip()] = value.strip()
    from starlette.concurrency import run_in_threadpool

    service = request.app.state.service
    run_id = await run_in_threadpool(
        lambda: service.scheduler().start_workflow_run(workflow.Name, supervisor=None, properties=properties)
    )
    return _redirect(f"/workflows/{workflow.Name}/runs/{run_id}")


async def workflow_stop(request: Request) -> Response:
    workflow, run = _workflow_run(request)
    await _checked_form(request)
    if run.status.value != "RUNNING":
        raise PageError(409, f"workflow run {run.run_id} is {run.status.value}, not RUNNING")
    from starlette.concurrency import run_in_threadpool

    service = request.app.state.service
    await run_in_threadpool(lambda: service.scheduler().stop_workflow_run(workflow.Name, run.run_id))
    return _redirect(f"/workflows/{workflow.Name}/runs/{run.run_id}")


# ------------------------------------------------------------------ data quality


def quality_page(request: Request) -> Response:
    wanted = _filtered(request, ["PASSED", "FAILED"])
    if not isinstance(wanted, ListFilter):
        return wanted
    service = request.app.state.service
    rulesets = [
        r
        for r in service.quality.rulesets()
        if (wanted.name_matches(r.job_name) or wanted.name_matches(r.ruleset))
        and (not wanted.states or ("PASSED" if r.last_passed else "FAILED") in wanted.states)
    ]
    return request.app.state.render(
        request, "quality.html", rulesets=rulesets, wanted=wanted, states=["PASSED", "FAILED"]
    )


def quality_job_page(request: Request) -> Response:
    job = job_name_of(request)
    service = request.app.state.service
    results = service.quality.find(job_name=job, limit=200)
    if not results:
        raise PageError(404, f"job {job!r} has no data quality results")
    by_ruleset: dict[str, list] = {}
    for r in results:
        by_ruleset.setdefault(r.ruleset, []).append(r)
    charts = {
        name: {
            "labels": [r.evaluated_at.strftime("%Y-%m-%d %H:%M") for r in reversed(rs)],
            "scores": [round(r.score, 4) for r in reversed(rs)],
        }
        for name, rs in by_ruleset.items()
    }
    grids = {name: rule_grid(rs) for name, rs in by_ruleset.items()}
    return request.app.state.render(
        request, "quality_job.html", job=job, by_ruleset=by_ruleset, charts=charts, grids=grids
    )


def quality_result_page(request: Request) -> Response:
    job = job_name_of(request)
    raw = request.path_params["result_id"]
    if not raw.isdigit():
        raise PageError(400, "a result id is a whole number")
    found = request.app.state.service.quality.find(job_name=job, result_id=int(raw), limit=1)
    if not found:
        raise PageError(404, f"job {job!r} has no data quality result {raw}")
    result = found[0]
    rules = sorted(result.rules, key=lambda r: (r.get("outcome") == "Passed", r.get("rule", "")))
    return request.app.state.render(request, "quality_result.html", job=job, result=result, rules=rules)


# ------------------------------------------------------------------ catalog


def catalog_page(request: Request) -> Response:
    wanted = _filtered(request, [])
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
    page = _page_number(request)
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
    wanted = _filtered(request, CRAWL_STATES)
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
    return guard.sign_in(_redirect(target))


def login_page(request: Request) -> Response:
    """The sign-in form; with ``?token=…`` (the URL the console prints), signs in at once."""
    given = request.query_params.get("token")
    if given:
        return _signed_in_to(request, given) or request.app.state.render(
            request, "login.html", status_code=401, failed=True
        )
    return request.app.state.render(request, "login.html", failed=False)


async def login_do(request: Request) -> Response:
    form = await _checked_form(request)
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


SESSION_STATES = ["PROVISIONING", "READY", "FAILED", "TIMEOUT", "STOPPING", "STOPPED"]


def sessions_page(request: Request) -> Response:
    wanted = _filtered(request, SESSION_STATES)
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
    await _checked_form(request)
    if record.status in ("STOPPED", "FAILED", "TIMEOUT"):
        raise PageError(409, f"session {record.id} is {record.status}: there is nothing to stop")
    request.app.state.service.session_records.request_stop(record.id)
    return _redirect(f"/sessions/{quote(record.id, safe='')}")


# ------------------------------------------------------------------ timeline

TIMELINE_ITEMS = 1000  # drawn, of each kind, newest
TIMELINE_LISTED = 200  # rows of the table under the chart, newest


def timeline_page(request: Request) -> Response:
    """Runs of jobs, crawls and workflow runs in a time range, as a Gantt chart and a
    table (the chart's bars link to the runs; the table reads without the chart)."""
    from datetime import timedelta

    from . import timeline

    tidied = tidy_query(request)
    if tidied is not None:
        return tidied
    service = request.app.state.service
    params = dict(request.query_params)
    chosen = any(params.get(k) for k in ("last", "since", "until"))
    if not chosen:
        params["last"] = "24h"
    wanted = ListFilter.of(params, TIMELINE_STATES, getlist=request.query_params.getlist)
    now = utcnow()
    since, until = wanted.window(now)
    until = until or now
    if since is None:
        since = until - timedelta(days=1)
    items: list[timeline.Item] = []
    spans, total = service.state.run_spans(since, until, TIMELINE_ITEMS)
    for run_id, job, state, started, ended in spans:
        if job.startswith("crawler:"):
            continue
        items.append(
            timeline.Item("job", job, started, ended, state.value, f"/runs/{run_id}", run_id[:14],
                          f"/jobs/{quote(job, safe='')}")
        )  # fmt: skip
    for c in service.crawlers.crawls_between(since, until, limit=TIMELINE_ITEMS):
        href = f"/crawlers/{quote(c.crawler, safe='')}"
        items.append(
            timeline.Item(
                "crawler", c.crawler, c.started_at, c.ended_at, c.state, href, c.crawl_id[:14], href
            )
        )
    for w in service.workflows.workflow_runs(since=since, until=until, limit=TIMELINE_ITEMS):
        base = f"/workflows/{quote(w.workflow, safe='')}"
        items.append(
            timeline.Item("workflow", w.workflow, w.started_at, w.completed_at, w.status.value,
                          f"{base}/runs/{w.run_id}", w.run_id[:14], base)
        )  # fmt: skip
    items = [
        i for i in items if wanted.name_matches(i.name) and (not wanted.states or i.state in wanted.states)
    ]
    if not chosen and items:  # the last day by default: the axis starts where its runs do
        first = min(i.started for i in items)
        since = max(since, first - (until - first) * 0.03)
    listed = sorted(items, key=lambda i: i.started, reverse=True)
    chart = timeline.layout(items, since, until)
    return request.app.state.render(
        request,
        "timeline.html",
        chart=chart,
        bars=NoSecrets(timeline.bars_svg(chart)),
        items=listed[:TIMELINE_LISTED],
        shown=len(items),
        wanted=wanted,
        states=TIMELINE_STATES,
        capped=total > TIMELINE_ITEMS,
    )


TIMELINE_STATES = sorted(
    {s.value for s in RunState}
    | {"SUCCEEDED", "FAILED", "CANCELLED", "COMPLETED", "STOPPED", "ERROR", "STOPPING"}
)
