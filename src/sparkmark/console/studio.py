"""The visual job editor's pages and the JSON it talks to.

Pages: ``/studio`` lists visual jobs, starts a new one and imports get-job JSON;
``/studio/jobs/NAME`` is the editor (a React Flow app built into
``static/studio/``). The JSON under ``/studio/api/`` gives the node model (from
botocore's Glue model), checks a graph and generates its script, saves it, runs it,
follows its run, and previews a node's data. Everything that changes state or runs code
(save, run, preview) is a POST or PUT carrying the CSRF token in ``X-CSRF-Token``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..engine.names import check_name
from ..errors import ArgumentError, GraphError, NotFound
from ..studio import jobs as visual
from ..studio.codegen import SUPPORTED, TARGETS, generate
from ..studio.graph import SOURCES, JobGraph, graph_from_job, parse_document
from ..studio.model import node_fields
from .pages import PageError, job_name_of
from .security import guard_of

_NODE = re.compile(r"node (\S+) \(")


def _problems(exc: GraphError) -> list[dict[str, Any]]:
    out = []
    for p in exc.problems:
        found = _NODE.search(p)
        out.append({"node": found.group(1) if found else None, "message": p})
    return out


def _guarded(request: Request) -> None:
    if not guard_of(request).csrf_ok(request, request.headers.get("x-csrf-token")):
        raise PageError(403, "the request's CSRF token is missing or wrong: reload the page")


async def _nodes(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise PageError(400, "the body is not JSON") from None
    nodes = body.get("nodes") if isinstance(body, dict) else None
    if not isinstance(nodes, dict):
        raise PageError(400, 'the body must be {"nodes": {NODE_ID: {NODE_TYPE: {...}}}}')
    return body


def _graph(name: str, nodes: dict[str, Any]) -> JobGraph:
    return graph_from_job({"Name": name, "CodeGenConfigurationNodes": nodes}, name)


# ------------------------------------------------------------------ pages


def studio_page(request: Request, problems: list[str] | None = None, status: int = 200) -> Response:
    service = request.app.state.service
    search = request.query_params.get("q", "").strip()
    rows = [
        {"name": n, "nodes": len(glue.get("CodeGenConfigurationNodes") or {})}
        for n, glue in sorted(visual.visual_jobs(service).items())
        if search.lower() in n.lower()
    ]
    return request.app.state.render(
        request, "studio.html", status_code=status, jobs=rows, problems=problems or [], search=search
    )


async def studio_new(request: Request) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    if not guard_of(request).csrf_ok(request, form.get("csrf")):
        raise PageError(403, "the form's CSRF token is missing or wrong: reload the page and try again")
    try:
        name = check_name("job name", form.get("name", "").strip())
    except ArgumentError as exc:
        return studio_page(request, [str(exc)], 400)
    service = request.app.state.service
    if name in service.project.jobs:
        return studio_page(request, [f"a job named {name!r} exists already"], 400)
    return RedirectResponse(f"/studio/jobs/{name}", status_code=303)


async def studio_import(request: Request) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    if not guard_of(request).csrf_ok(request, form.get("csrf")):
        raise PageError(403, "the form's CSRF token is missing or wrong: reload the page and try again")
    service = request.app.state.service
    try:
        document = json.loads(form.get("document") or "")
    except ValueError as exc:
        return studio_page(request, [f"the document is not JSON: {exc}"], 400)
    try:
        graphs = parse_document(document, default_name=form.get("name") or "imported_job")
        if form.get("name"):
            graphs = [JobGraph(form["name"], graphs[0].nodes, graphs[0].job)] if len(graphs) == 1 else graphs
        saved = []
        for graph in graphs:
            nodes = {n.id: {n.type: n.spec} for n in graph.nodes.values()}
            await run_in_threadpool(visual.save_visual_job, service, graph.name, nodes, create=True)
            saved.append(graph.name)
    except GraphError as exc:
        return studio_page(request, exc.problems, 400)
    return RedirectResponse(f"/studio/jobs/{saved[0]}", status_code=303)


def editor_page(request: Request) -> Response:
    name = job_name_of(request, "name")
    return request.app.state.render(request, "studio_editor.html", job=name)


# ------------------------------------------------------------------ JSON


def model_json(request: Request) -> Response:
    types = {}
    for kind in sorted(SUPPORTED):
        category = "source" if kind in SOURCES else "target" if kind in TARGETS else "transform"
        types[kind] = {"category": category, "fields": node_fields(kind)}
    return JSONResponse({"types": types})


def job_json(request: Request) -> Response:
    name = job_name_of(request, "name")
    service = request.app.state.service
    graph = visual.load_visual_job(service, name)
    nodes = {n.id: {n.type: n.spec} for n in graph.nodes.values()} if graph else {}
    return JSONResponse(
        {"name": name, "saved": graph is not None, "nodes": nodes, "run": _latest_run(service, name)}
    )


def _latest_run(service, name: str) -> dict[str, Any] | None:
    actions = service.workflows.actions_of(kind="JOB", name=name, limit=1)
    if actions:
        a = actions[-1]
        return {"id": a.action_id, "state": a.state.value, "error": a.error}
    runs = service.state.list_runs(name, limit=1) if service.state.job_exists(name) else []
    if runs:
        return {"id": runs[0].run_id, "state": runs[0].state.value, "error": runs[0].error}
    return None


def latest_run_json(request: Request) -> Response:
    name = job_name_of(request, "name")
    return JSONResponse({"run": _latest_run(request.app.state.service, name)})


async def check_json(request: Request) -> Response:
    name = job_name_of(request, "name")
    body = await _nodes(request)
    try:
        script = generate(_graph(name, body["nodes"]))
    except GraphError as exc:
        return JSONResponse({"problems": _problems(exc), "script": None})
    return JSONResponse({"problems": [], "script": script})


async def save_json(request: Request) -> Response:
    name = job_name_of(request, "name")
    _guarded(request)
    body = await _nodes(request)
    service = request.app.state.service
    try:
        path = await run_in_threadpool(visual.save_visual_job, service, name, body["nodes"], create=True)
    except GraphError as exc:
        return JSONResponse({"problems": _problems(exc)}, status_code=400)
    return JSONResponse({"saved": True, "script": str(path)})


async def run_json(request: Request) -> Response:
    name = job_name_of(request, "name")
    _guarded(request)
    service = request.app.state.service
    if visual.load_visual_job(service, name) is None:
        raise PageError(404, f"no saved visual job {name!r}: save it first")
    try:
        run_id = await run_in_threadpool(visual.start_visual_job, service, name)
    except NotFound as exc:
        raise PageError(404, str(exc)) from None
    return JSONResponse({"run_id": run_id})


async def preview_json(request: Request) -> Response:
    name = job_name_of(request, "name")
    _guarded(request)
    body = await _nodes(request)
    node = body.get("node")
    if not isinstance(node, str):
        raise PageError(400, 'the body must name the node to preview: {"node": NODE_ID, ...}')
    settings = request.app.state.service.settings

    def compute() -> dict[str, Any]:
        from pyspark.sql import SparkSession

        from ..glue import shim
        from ..spark import create_session, use_this_python
        from ..studio.preview import preview

        shim.install(settings)  # the script imports awsglue: sparkmark's façade
        use_this_python()
        if SparkSession.getActiveSession() is None:
            create_session("sparkmark-console-preview", settings.spark_master, settings)
        return preview(_graph(name, body["nodes"]), node)

    try:
        return JSONResponse(await run_in_threadpool(compute))
    except GraphError as exc:
        return JSONResponse({"problems": _problems(exc)}, status_code=400)


# ------------------------------------------------------------------ the path browser

BROWSE_ENTRIES = 500


def _roots(settings) -> list[dict[str, Any]]:
    """Where browsing starts: the project's folder and sparkmark's home, and the S3
    endpoint's buckets when one is configured."""
    project = settings.config.resolve().parent
    roots = [
        {"name": f"project ({project})", "path": str(project), "dir": True},
        {"name": f"sparkmark home ({settings.home})", "path": str(settings.home), "dir": True},
    ]
    if settings.aws_endpoint_url_s3:
        roots.append({"name": f"S3 ({settings.aws_endpoint_url_s3})", "path": "s3://", "dir": True})
    return roots


def _within_roots(settings, path: str) -> None:
    """Refuse what the browser does not serve: any protocol but ``s3://`` (an ``http://``
    path would make the server fetch it), and a local path outside the project's folder
    and sparkmark's home once symlinks and ``..`` are resolved."""
    if path.startswith("s3://"):
        if not settings.aws_endpoint_url_s3:
            raise ArgumentError(f"{path}: no S3 endpoint is configured (AWS_ENDPOINT_URL_S3) to browse")
        return
    if "://" in path or path.startswith(("file:", "memory:", "data:")):
        raise ArgumentError(f"{path}: the path browser serves local folders and s3:// only")
    roots = [settings.config.resolve().parent, settings.home.resolve()]
    where = Path(path).expanduser().resolve()
    if not any(where == root or root in where.parents for root in roots):
        raise ArgumentError(
            f"{path} is outside what the path browser serves (the project {roots[0]} and sparkmark's "
            f"home {roots[1]}); type a path there instead"
        )


def browse(settings, path: str) -> dict[str, Any]:
    """The folders and files directly under ``path`` (a local folder within the project's
    or the home's, or an ``s3://`` URL of the configured endpoint), folders first, at
    most BROWSE_ENTRIES; ``path`` empty gives the roots."""
    import fsspec

    if not path:
        return {"path": "", "parent": None, "entries": _roots(settings), "more": False}
    _within_roots(settings, path)
    try:
        fs, inner = fsspec.core.url_to_fs(path)
        listed = fs.ls(inner, detail=True)
    except FileNotFoundError:
        raise NotFound(f"{path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise ArgumentError(
            f"{path} cannot be listed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None
    scheme = "s3://" if path.startswith("s3://") else ""
    entries = []
    for item in listed:
        name = str(item["name"]).rstrip("/")
        entries.append(
            {
                "name": name.rsplit("/", 1)[-1] or name,
                "path": scheme + name + ("/" if item.get("type") == "directory" and scheme else ""),
                "dir": item.get("type") == "directory",
                "size": item.get("size"),
            }
        )
    entries.sort(key=lambda e: (not e["dir"], e["name"]))
    trimmed = path.rstrip("/")
    parent = trimmed.rsplit("/", 1)[0] if "/" in trimmed.removeprefix(scheme) else ("" if scheme else None)
    if scheme and parent and parent != "s3:/":
        parent += "/"
    if not scheme and Path(path).resolve() in (settings.config.resolve().parent, settings.home.resolve()):
        parent = ""  # up from a root: the roots, never the folder above it
    return {
        "path": path,
        "parent": parent or "",
        "entries": entries[:BROWSE_ENTRIES],
        "more": len(entries) > BROWSE_ENTRIES,
    }


async def browse_json(request: Request) -> Response:
    """GET ?path=…: what a path field's browser shows (for a signed-in user, as every
    page; reading names only)."""
    settings = request.app.state.service.settings
    path = request.query_params.get("path", "")
    try:
        return JSONResponse(await run_in_threadpool(browse, settings, path))
    except NotFound as exc:
        return JSONResponse({"problems": [{"node": None, "message": str(exc)}]}, status_code=404)
    except ArgumentError as exc:
        return JSONResponse({"problems": [{"node": None, "message": str(exc)}]}, status_code=400)
