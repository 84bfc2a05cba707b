"""Trigger and workflow operations, and the run properties jobs of a workflow run share.

Triggers and workflows created through the API go to the definitions registry and
are checked together with everything else declared (a trigger naming a job that
does not exist is refused, as a cycle of conditional triggers is). Runs are queued
for the scheduler that leads, as ``sparkmark workflow run`` hands them to it.
"""

from __future__ import annotations

from typing import Any

from ..engine.schema import utcnow
from ..errors import NotFound
from ..workflow import report
from ..workflow.definition import Project, TriggerDefinition, TriggerType, WorkflowDefinition, _validate
from ..workflow.records import WorkflowRunStatus
from .protocol import exists, illegal_workflow_state, invalid, not_found
from .service import Service, handler, page

_TRIGGER_FIELDS = (
    "Type",
    "Description",
    "Schedule",
    "Predicate",
    "Actions",
    "WorkflowName",
    "StartOnCreation",
)


def _check_with(svc: Service, kind: str, definition: Any) -> None:
    """Refuse a definition that would make the whole project invalid (its ConfigError
    answers InvalidInputException, as every SparkmarkError a handler raises does)."""
    current = svc.project
    jobs, triggers = dict(current.jobs), dict(current.triggers)
    workflows, crawlers = dict(current.workflows), dict(current.crawlers)
    {"trigger": triggers, "workflow": workflows}[kind][definition.Name] = definition
    Project(current.path, jobs, triggers, workflows, crawlers)


def _trigger_definition(name: str, given: dict[str, Any]) -> tuple[dict[str, Any], TriggerDefinition]:
    doc = {k: given[k] for k in _TRIGGER_FIELDS if given.get(k) is not None}
    for action in doc.get("Actions", []):
        for glue_only in ("NotificationProperty", "SecurityConfiguration"):
            action.pop(glue_only, None)
    return doc, _validate(TriggerDefinition, "triggers", name, doc)


def _trigger_doc(trigger: TriggerDefinition, state: str) -> dict[str, Any]:
    doc = trigger.model_dump(mode="json", exclude_none=True, exclude={"StartOnCreation"})
    doc["Id"] = trigger.Name
    doc["State"] = state
    if not doc.get("Description"):
        doc.pop("Description", None)
    for action in doc.get("Actions", []):
        if not action.get("Arguments"):
            action.pop("Arguments", None)
        if action.get("Timeout") is not None:
            action["Timeout"] = int(action["Timeout"])
    return doc


def _trigger_state(svc: Service, trigger: TriggerDefinition) -> str:
    rows = svc.workflows.trigger_rows()
    if trigger.Name in rows:
        return rows[trigger.Name][0]
    return "ACTIVATED" if trigger.StartOnCreation else "CREATED"


@handler("CreateTrigger")
def create_trigger(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    if name in svc.project.triggers:
        raise exists(f"trigger {name!r} already exists")
    if p.get("Type") == "EVENT":
        raise invalid(
            "EVENT triggers (EventBridge) are not supported; use SCHEDULED, CONDITIONAL or ON_DEMAND"
        )
    doc, trigger = _trigger_definition(name, p)
    _check_with(svc, "trigger", trigger)
    glue = {k: v for k, v in p.items() if k not in (*_TRIGGER_FIELDS, "Name", "Tags")}
    svc.registry.put("trigger", name, doc, glue, create=True)
    svc.workflows.sync_trigger(name, start_on_creation=trigger.StartOnCreation, now=utcnow())
    return {"Name": name}


@handler("UpdateTrigger")
def update_trigger(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    entry = svc.stored("trigger", name, f"Trigger {name} not found")
    merged = {**entry.definition, **{k: v for k, v in p["TriggerUpdate"].items() if k != "Name"}}
    doc, trigger = _trigger_definition(name, merged)
    _check_with(svc, "trigger", trigger)
    svc.registry.put("trigger", name, doc, entry.glue, create=False)
    return {"Trigger": _trigger_doc(trigger, _trigger_state(svc, trigger))}


@handler("DeleteTrigger")
def delete_trigger(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.refuse_file_owned("trigger", p["Name"])
    svc.registry.delete("trigger", p["Name"])
    return {"Name": p["Name"]}


def _trigger(svc: Service, name: str) -> TriggerDefinition:
    trigger = svc.project.triggers.get(name)
    if trigger is None:
        raise not_found(f"Trigger {name} not found")
    return trigger


@handler("GetTrigger")
def get_trigger(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    trigger = _trigger(svc, p["Name"])
    return {"Trigger": _trigger_doc(trigger, _trigger_state(svc, trigger))}


def _listed_triggers(svc: Service, p: dict[str, Any]) -> list[TriggerDefinition]:
    """The triggers by name, only those that start ``DependentJobName`` when it is given."""
    triggers = sorted(svc.project.triggers.values(), key=lambda t: t.Name)
    if p.get("DependentJobName"):
        job = p["DependentJobName"]
        triggers = [t for t in triggers if any(a.JobName == job for a in t.Actions)]
    return triggers


@handler("GetTriggers")
def get_triggers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    triggers = _listed_triggers(svc, p)
    chunk, token = page([_trigger_doc(t, _trigger_state(svc, t)) for t in triggers], p)
    return {"Triggers": chunk, "NextToken": token}


@handler("StartTrigger")
def start_trigger(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """A scheduled or conditional trigger is activated; an on-demand one fires now."""
    trigger = _trigger(svc, p["Name"])
    if trigger.Type is TriggerType.ON_DEMAND:
        svc.fire_trigger(trigger)
    else:
        svc.workflows.set_trigger_state(trigger.Name, "ACTIVATED", utcnow())
    return {"Name": trigger.Name}


@handler("StopTrigger")
def stop_trigger(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    trigger = _trigger(svc, p["Name"])
    if trigger.Type is TriggerType.ON_DEMAND:
        raise invalid(f"trigger {trigger.Name} is ON_DEMAND: it is never activated, so it cannot be stopped")
    svc.workflows.set_trigger_state(trigger.Name, "DEACTIVATED", utcnow())
    return {"Name": trigger.Name}


# ------------------------------------------------------------------ workflows


@handler("CreateWorkflow")
def create_workflow(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    if name in svc.project.workflows:
        raise exists(f"workflow {name!r} already exists")
    doc = {k: p[k] for k in ("Description", "DefaultRunProperties") if p.get(k) is not None}
    workflow = _validate(WorkflowDefinition, "workflows", name, doc)
    _check_with(svc, "workflow", workflow)
    glue = {k: v for k, v in p.items() if k not in ("Name", "Description", "DefaultRunProperties", "Tags")}
    svc.registry.put("workflow", name, doc, glue, create=True)
    return {"Name": name}


@handler("UpdateWorkflow")
def update_workflow(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The fields the update gives replace the workflow's; the others keep their values."""
    name = p["Name"]
    svc.refuse_file_owned("workflow", name)
    entry = svc.registry.get("workflow", name)
    if entry is None:
        raise not_found(f"Workflow {name} not found")
    doc = {**entry.definition, **{k: p[k] for k in ("Description", "DefaultRunProperties") if k in p}}
    workflow = _validate(WorkflowDefinition, "workflows", name, doc)
    _check_with(svc, "workflow", workflow)
    glue = {
        **entry.glue,
        **{k: v for k, v in p.items() if k not in ("Name", "Description", "DefaultRunProperties")},
    }
    svc.registry.put("workflow", name, doc, glue, create=False)
    return {"Name": name}


@handler("DeleteWorkflow")
def delete_workflow(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    svc.refuse_file_owned("workflow", name)
    for trigger in svc.project.workflow_triggers(name):
        if svc.registry.get("trigger", trigger.Name) is not None:
            svc.registry.delete("trigger", trigger.Name)  # Glue deletes a workflow's triggers with it
    svc.registry.delete("workflow", name)
    return {"Name": name}


def _workflow(svc: Service, name: str) -> WorkflowDefinition:
    workflow = svc.project.workflows.get(name)
    if workflow is None:
        raise not_found(f"Workflow {name} not found")
    return workflow


def _clean_run(svc: Service, doc: dict[str, Any]) -> dict[str, Any]:
    """sparkmark's workflow-run report in Glue's WorkflowRun shape."""
    doc = glue_workflow_run(doc)
    triggers = svc.project.triggers
    for node in (doc.get("Graph") or {}).get("Nodes", []):
        if "TriggerDetails" in node:
            trigger = triggers.get(node["Name"])
            node["TriggerDetails"] = (
                {"Trigger": _trigger_doc(trigger, _trigger_state(svc, trigger))} if trigger else {}
            )
    return doc


CRAWLER_LOG_GROUP = "/aws-glue/crawlers"  # where Glue's crawlers log, a stream per crawler


def glue_workflow_run(doc: dict[str, Any]) -> dict[str, Any]:
    """A workflow-run report's runs and crawls in Glue's shapes (JobRun, Crawl): only the
    fields Glue's model has, and the states it knows (a trigger node's details are left
    for the caller, who has the triggers)."""
    doc = {k: v for k, v in doc.items() if k != "StartTrigger"}
    for node in (doc.get("Graph") or {}).get("Nodes", []):
        if "TriggerDetails" in node:
            node["TriggerDetails"] = {}  # Glue's has the trigger itself, which the caller adds
        for run in (node.get("JobDetails") or {}).get("JobRuns", []):
            run.pop("LogPath", None)
            if run.get("ExecutionTime") is not None:
                run["ExecutionTime"] = int(run["ExecutionTime"])
            if run.get("JobRunState") == "WAITING":
                run["JobRunState"] = "STARTING"
            elif run.get("JobRunState") == "CANCELLED":  # Glue's JobRunState says STOPPED
                run["JobRunState"] = "STOPPED"
        crawls = (node.get("CrawlerDetails") or {}).get("Crawls", [])
        for number, crawl in enumerate(crawls):
            shaped = {k: crawl.get(k) for k in ("StartedOn", "CompletedOn", "ErrorMessage")}
            state = _CRAWL_STATES.get(crawl.get("State") or "", "FAILED")
            shaped.update(State=state, LogGroup=CRAWLER_LOG_GROUP, LogStream=node.get("Name"))
            crawls[number] = shaped
    return doc


# A crawl's state in a workflow run's graph, in Glue's CrawlState (RUNNING | CANCELLING |
# CANCELLED | SUCCEEDED | FAILED | ERROR): a crawl waiting to start is running, a
# stopped one cancelled, one past its time failed.
_CRAWL_STATES = {
    "WAITING": "RUNNING",
    "RUNNING": "RUNNING",
    "CANCELLING": "CANCELLING",
    "STOPPED": "CANCELLED",
    "CANCELLED": "CANCELLED",
    "SUCCEEDED": "SUCCEEDED",
    "COMPLETED": "SUCCEEDED",
    "FAILED": "FAILED",
    "TIMEOUT": "FAILED",
    "ERROR": "ERROR",
}


def _run_doc(svc: Service, run, graph: bool) -> dict[str, Any]:
    firings = svc.workflows.run_firings(run.run_id) if graph else None
    return _clean_run(svc, report.workflow_run(run, graph=graph, firings=firings))


@handler("GetWorkflow")
def get_workflow(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    workflow = _workflow(svc, p["Name"])
    entry = svc.registry.get("workflow", workflow.Name)
    runs = svc.workflows.workflow_runs(workflow=workflow.Name, limit=1)
    doc: dict[str, Any] = {
        "Name": workflow.Name,
        "Description": workflow.Description or None,
        "DefaultRunProperties": workflow.DefaultRunProperties,
        "CreatedOn": entry.created_at if entry else None,
        "LastModifiedOn": entry.updated_at if entry else None,
        "LastRun": _run_doc(svc, runs[0], False) if runs else None,
        "MaxConcurrentRuns": entry.glue.get("MaxConcurrentRuns") if entry else None,
    }
    if p.get("IncludeGraph"):
        doc["Graph"] = svc.project.graph(workflow.Name)
    return {"Workflow": doc}


@handler("ListWorkflows")
def list_workflows(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page(sorted(svc.project.workflows), p)
    return {"Workflows": chunk, "NextToken": token}


@handler("StartWorkflowRun")
def start_workflow_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    workflow = _workflow(svc, p["Name"])
    run_id = svc.start_workflow_run(workflow.Name, dict(p.get("RunProperties") or {}))
    return {"RunId": run_id}


@handler("GetWorkflowRun")
def get_workflow_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    try:
        run = svc.workflows.workflow_run(p["RunId"], p["Name"])
    except NotFound:
        raise not_found(f"Workflow run {p['RunId']} of workflow {p['Name']} not found") from None
    return {"Run": _run_doc(svc, run, bool(p.get("IncludeGraph")))}


@handler("GetWorkflowRuns")
def get_workflow_runs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _workflow(svc, p["Name"])
    runs = svc.workflows.workflow_runs(workflow=p["Name"])
    chunk, token = page([_run_doc(svc, r, bool(p.get("IncludeGraph"))) for r in runs], p)
    return {"Runs": chunk, "NextToken": token}


@handler("StopWorkflowRun")
def stop_workflow_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    run = svc.workflows.workflow_run(p["RunId"], p["Name"])
    if run.status is not WorkflowRunStatus.RUNNING:
        raise illegal_workflow_state(f"Workflow run {run.run_id} is {run.status.value}, not RUNNING")
    svc.stop_workflow_run(p["Name"], p["RunId"])
    return {}


@handler("GetWorkflowRunProperties")
def get_workflow_run_properties(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"RunProperties": svc.workflows.run_properties(p["Name"], p["RunId"])}


@handler("PutWorkflowRunProperties")
def put_workflow_run_properties(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.workflows.put_run_properties(p["Name"], p["RunId"], dict(p["RunProperties"]))
    return {}


@handler("ListTriggers")
def list_triggers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page([t.Name for t in _listed_triggers(svc, p)], p)
    return {"TriggerNames": chunk, "NextToken": token}


@handler("BatchGetTriggers")
def batch_get_triggers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    triggers = svc.project.triggers
    names = list(dict.fromkeys(p["TriggerNames"]))
    return {
        "Triggers": [
            _trigger_doc(triggers[n], _trigger_state(svc, triggers[n])) for n in names if n in triggers
        ],
        "TriggersNotFound": [n for n in names if n not in triggers],
    }


@handler("BatchGetWorkflows")
def batch_get_workflows(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    names = list(dict.fromkeys(p["Names"]))
    known = svc.project.workflows
    graph = bool(p.get("IncludeGraph"))
    return {
        "Workflows": [
            get_workflow(svc, {"Name": n, "IncludeGraph": graph})["Workflow"] for n in names if n in known
        ],
        "MissingWorkflows": [n for n in names if n not in known],
    }
