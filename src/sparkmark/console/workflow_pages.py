"""Workflows: the list, one workflow, a run's graph and its live state, start and stop."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..engine.schema import utcnow
from ..errors import NotFound
from ..workflow import report
from .filters import ListFilter
from .graph import layout
from .pages import PageError, checked_form, filtered, redirect_to

WORKFLOW_STATUSES = ["RUNNING", "COMPLETED", "STOPPING", "STOPPED", "ERROR"]


def workflows_page(request: Request) -> Response:
    wanted = filtered(request, WORKFLOW_STATUSES)
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
    form = await checked_form(request)
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
    run_id = await run_in_threadpool(lambda: service.start_workflow_run(workflow.Name, properties))
    return redirect_to(f"/workflows/{workflow.Name}/runs/{run_id}")


async def workflow_stop(request: Request) -> Response:
    workflow, run = _workflow_run(request)
    await checked_form(request)
    if run.status.value != "RUNNING":
        raise PageError(409, f"workflow run {run.run_id} is {run.status.value}, not RUNNING")
    from starlette.concurrency import run_in_threadpool

    service = request.app.state.service
    await run_in_threadpool(lambda: service.stop_workflow_run(workflow.Name, run.run_id))
    return redirect_to(f"/workflows/{workflow.Name}/runs/{run.run_id}")


# ------------------------------------------------------------------ data quality
