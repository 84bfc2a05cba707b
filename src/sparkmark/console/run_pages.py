"""A job run's pages: the run (its sources, outputs, metrics and log), its log alone, its live state, and a metric's datapoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..engine.masking import mask_text
from ..engine.models import RunRecord, RunState
from ..engine.run_logs import error_path, log_path
from ..errors import NotFound
from .figures import glue_figures
from .pages import LOG_BYTES, MANIFEST_SHOWN, PageError, run_of, source_rows


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
        run = run_of(request)
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
    run = run_of(request)
    log_path, log_text = _log(request, run)
    return request.app.state.render(request, "run_log.html", run=run, log_path=log_path, log_text=log_text)


def run_live(request: Request) -> Response:
    """The part of a run's page that changes while it runs (polled by the page)."""
    run = run_of(request)
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
