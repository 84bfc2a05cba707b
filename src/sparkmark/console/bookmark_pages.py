"""A job's bookmark: its versions, what each changed, and rewinding it."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from ..engine.models import BookmarkVersion
from ..engine.preview import preview_job, preview_rewind
from ..errors import NotFound
from ..sources.registry import FILES, kind_of_state
from ..sources.states import parse_state
from ..workflow import report
from .pages import (
    FILES_PAGE,
    VERSIONS_PAGE,
    PageError,
    checked_form,
    checked_run_id,
    job_name_of,
    job_page_of,
    redirect_to,
    require_job,
)


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
    job, store, page = job_page_of(request)
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
    require_job(app, job)
    run_id = request.query_params.get("run_id") or None
    if run_id:
        checked_run_id(run_id)
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
    form = await checked_form(request)
    run_id = form.get("run_id") or None
    if run_id:
        checked_run_id(run_id)

    def act() -> None:
        store = request.app.state.service.state
        require_job(request.app, job)
        if run_id:
            store.rewind(job, run_id)
        else:
            store.reset(job)

    from starlette.concurrency import run_in_threadpool

    try:
        await run_in_threadpool(act)
    except NotFound as exc:
        raise PageError(404, str(exc)) from None
    return redirect_to(f"/jobs/{job}/bookmark")


# ------------------------------------------------------------------ workflows
