"""Job operations: definitions, runs and bookmarks.

A job created through the API is kept in the definitions registry (see
``workflow/registry.py``); one declared in ``sparkmark.toml`` is read from there and
cannot be changed or deleted through the API. ``StartJobRun`` queues a run, which
the scheduler that leads starts (the endpoint's own when no other runs); job runs
are answered from the state store's run records, the same ones ``sparkmark runs``
shows, so runs made by ``sparkmark run`` appear too.
"""

from __future__ import annotations

import json
import socket
from datetime import datetime
from typing import Any

from .. import runtimes
from ..app.jobs import ACTED_ON
from ..args import as_passed
from ..engine.models import RunRecord, RunState
from ..engine.schema import utcnow
from ..errors import NotFound, RunFinished, UnknownRun
from ..workflow import capacity
from ..workflow.capacity import PYTHON_SHELL, run_fields
from ..workflow.definition import JobDefinition
from ..workflow.records import ActionRecord, ActionState
from ..workflow.report import bookmark_entry
from .logs import JOBS_LOG_GROUP, PYTHON_JOBS_LOG_GROUP
from .protocol import GlueApiError, exists, invalid, not_found
from .service import Service, handler, page, refuse_named_by_triggers


def _job_doc(job: JobDefinition, glue: dict[str, Any], created: datetime | None, modified: datetime | None):
    kept = {k: v for k, v in glue.items() if k not in ACTED_ON}
    command = dict(glue.get("Command") or {})
    command["Name"] = job.Command
    command["ScriptLocation"] = job.Script
    if job.PythonVersion is not None:
        command["PythonVersion"] = job.PythonVersion
    given = {
        k: v
        for k, v in {
            "MaxCapacity": job.MaxCapacity,
            "WorkerType": job.WorkerType,
            "NumberOfWorkers": job.NumberOfWorkers,
            "ExecutionClass": job.ExecutionClass,
            "GlueVersion": job.GlueVersion,
        }.items()
        if v is not None
    }
    return {
        **kept,
        **given,
        "Name": job.Name,
        "Description": job.Description or None,
        "Command": command,
        "DefaultArguments": job.DefaultArguments,
        "MaxRetries": job.MaxRetries,
        "Timeout": int(job.Timeout),
        "ExecutionProperty": {"MaxConcurrentRuns": job.MaxConcurrentRuns},
        "CreatedOn": created,
        "LastModifiedOn": modified,
    }


def _jobs(svc: Service) -> dict[str, dict[str, Any]]:
    project = svc.project
    stored = svc.registry.entries("job")
    in_file = svc.file_names("job")  # the file wins a name the registry also holds
    out = {}
    for name, job in project.jobs.items():
        entry = stored.get(name)
        if entry is not None and name not in in_file:
            out[name] = _job_doc(job, entry.glue, entry.created_at, entry.updated_at)
        else:
            out[name] = _job_doc(job, {"Role": "sparkmark.toml"}, None, None)
    return out


@handler("CreateJob")
def create_job(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    if name in svc.project.jobs:
        raise exists(f"job {name!r} already exists")
    svc.put_job(name, {k: v for k, v in p.items() if k not in ("Name", "Tags")}, create=True)
    return {"Name": name}


@handler("UpdateJob")
def update_job(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Fields the update gives replace the job's; the others keep their values."""
    name = p["JobName"]
    entry = svc.stored("job", name, f"Job {name} not found")
    svc.put_job(name, {**entry.glue, **p["JobUpdate"]}, create=False)
    return {"JobName": name}


@handler("DeleteJob")
def delete_job(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """As on Glue, deleting a job that does not exist succeeds; its bookmark stays in
    the state store (``sparkmark bookmark reset`` clears it)."""
    name = p["JobName"]
    svc.refuse_file_owned("job", name)
    refuse_named_by_triggers(svc, "job", name)
    svc.registry.delete("job", name)
    return {"JobName": name}


@handler("GetJob")
def get_job(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    jobs = _jobs(svc)
    if p["JobName"] not in jobs:
        raise not_found(f"Job {p['JobName']} not found")
    return {"Job": jobs[p["JobName"]]}


@handler("GetJobs")
def get_jobs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    jobs = _jobs(svc)
    chunk, token = page([jobs[n] for n in sorted(jobs)], p)
    return {"Jobs": chunk, "NextToken": token}


@handler("ListJobs")
def list_jobs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page(sorted(svc.project.jobs), p)
    return {"JobNames": chunk, "NextToken": token}


# ------------------------------------------------------------------ runs


@handler("StartJobRun")
def start_job_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["JobName"]
    if name not in svc.project.jobs:
        raise not_found(f"Job {name} not found")
    arguments = dict(p.get("Arguments") or {})
    for key in arguments:
        if not key.startswith("--"):
            raise invalid(f"argument names start with '--': {key!r}")
    job = svc.project.jobs[name]
    try:  # a run's own capacity is checked as Glue checks it; its ExecutionClass is kept
        capacity.check(
            job.Command,
            max_capacity=p.get("MaxCapacity"),
            worker_type=p.get("WorkerType"),
            workers=p.get("NumberOfWorkers"),
            execution_class=p.get("ExecutionClass"),
        )
    except ValueError as exc:
        raise invalid(str(exc)) from None
    run_id = svc.start_job_run(
        name, arguments, timeout_minutes=p.get("Timeout"), execution_class=p.get("ExecutionClass")
    )
    return {"JobRunId": run_id}


_QUEUED = {ActionState.WAITING: "STARTING", ActionState.RUNNING: "RUNNING"}


def _run_doc(run: RunRecord | None, action: ActionRecord | None) -> dict[str, Any]:
    if run is not None:
        state = run.state.value
        ended = run.ended_at
        doc = {
            "Id": run.run_id,
            "Attempt": run.attempt,
            "PreviousRunId": run.previous_run_id,
            "JobName": run.job_name,
            "StartedOn": run.started_at,
            "LastModifiedOn": ended or run.started_at,
            "CompletedOn": ended,
            "JobRunState": state,
            "Arguments": run.arguments,
            "ErrorMessage": run.error,
            "ExecutionTime": _seconds(run.started_at, ended),
        }
        if action is not None:
            doc["TriggerName"] = action.trigger
        return doc
    assert action is not None
    state = _QUEUED.get(action.state, action.state.value)
    return {
        "Id": action.action_id,
        "Attempt": action.attempt,
        "PreviousRunId": action.previous_id,
        "JobName": action.name,
        "TriggerName": action.trigger,
        "StartedOn": action.started_at or action.queued_at,
        "LastModifiedOn": action.ended_at or action.started_at or action.queued_at,
        "CompletedOn": action.ended_at,
        "JobRunState": state if state in _GLUE_STATES else "FAILED",
        "Arguments": action.arguments,
        "ErrorMessage": action.error,
        "ExecutionTime": _seconds(action.started_at, action.ended_at),
    }


def _seconds(started: Any, ended: Any) -> int:
    """Glue's ExecutionTime: whole seconds the run took, a failed run's too; 0 while it
    runs or when it never started."""
    if started is None or ended is None:
        return 0
    return max(0, int((ended - started).total_seconds()))


_GLUE_STATES = {
    "STARTING",
    "RUNNING",
    "STOPPING",
    "STOPPED",
    "SUCCEEDED",
    "FAILED",
    "TIMEOUT",
    "ERROR",
    "WAITING",
}


def _runs(svc: Service, job: str) -> list[dict[str, Any]]:
    actions = {a.action_id: a for a in svc.workflows.actions_of(kind="JOB", name=job)}
    every = dict(actions)
    try:
        records = svc.state.list_runs(job)
    except NotFound:
        records = []
    measured = {r.run_id: (r.metrics or {}).get("capacity") or {} for r in records}
    ran_on = {r.run_id: ((r.metrics or {}).get("runtime") or {}).get("glue_version") for r in records}
    docs = []
    for record in records:
        action = actions.pop(record.run_id, None)
        doc = _run_doc(record, action)
        # A run the scheduler started has the arguments StartJobRun gave; one started by
        # `sparkmark run` has the ones it recorded, in Glue's form.
        doc["Arguments"] = (
            action.arguments
            if action is not None
            else as_passed(record.arguments, str(svc.settings.temp_dir))
        )
        docs.append(doc)
    docs += [_run_doc(None, a) for a in actions.values()]  # queued, or ended before recording a run
    definition = _jobs(svc).get(job, {})
    command = (definition.get("Command") or {}).get("Name") or "glueetl"
    shell = command == PYTHON_SHELL
    own_version = runtimes.own().glue_version
    for doc in docs:
        _capacity_shown(doc, definition, command, every.get(doc["Id"]), measured.get(doc["Id"]))
        # Glue gives the script --JOB_NAME; the run's Arguments are what it was started with.
        doc["Arguments"] = {k: v for k, v in (doc.get("Arguments") or {}).items() if k != "--JOB_NAME"}
        doc["LogGroupName"] = PYTHON_JOBS_LOG_GROUP if shell else JOBS_LOG_GROUP
        # The Glue version the run ran on; before it says, the one the job names, else the
        # one sparkmark's own Spark is.
        doc["GlueVersion"] = ran_on.get(doc["Id"]) or definition.get("GlueVersion") or own_version
    return sorted(docs, key=lambda d: d["StartedOn"], reverse=True)


def _capacity_shown(
    doc: dict[str, Any],
    definition: dict[str, Any],
    command: str,
    action: ActionRecord | None,
    measured: dict[str, Any] | None,
) -> None:
    """A run's capacity as Glue shows it: a Python shell run's MaxCapacity, or a Spark
    run's workers and execution class (its own, when StartJobRun gave one); a queued Flex
    run is WAITING; a Flex or auto-scaling run has the DPUSeconds its executors measured."""
    doc.update(run_fields(definition, command))
    if command == PYTHON_SHELL:
        return
    if action is not None and action.execution_class:
        doc["ExecutionClass"] = action.execution_class
    flex = doc["ExecutionClass"] == "FLEX"
    if flex and doc["JobRunState"] == "STARTING":
        doc["JobRunState"] = "WAITING"  # waiting for capacity, as Glue shows a Flex run
    scaling = capacity.truthy((doc.get("Arguments") or {}).get("--enable-auto-scaling"))
    if (flex or scaling) and measured and "dpu_seconds" in measured:
        doc["DPUSeconds"] = measured["dpu_seconds"]


@handler("GetJobRun")
def get_job_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    for doc in _runs(svc, p["JobName"]):
        if doc["Id"] == p["RunId"]:
            return {"JobRun": doc}
    raise not_found(f"Job run {p['RunId']} of job {p['JobName']} not found")


@handler("GetJobRuns")
def get_job_runs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    if p["JobName"] not in svc.project.jobs and not svc.state.job_exists(p["JobName"]):
        raise not_found(f"Job {p['JobName']} not found")
    chunk, token = page(_runs(svc, p["JobName"]), p)
    return {"JobRuns": chunk, "NextToken": token}


def _stop(svc: Service, job: str, run_id: str) -> None:
    from ..workflow.launcher import Launcher

    try:
        action = svc.workflows.action(run_id)
    except NotFound:
        action = None
    if action is None or action.name != job:
        raise not_found(f"Job run {run_id} of job {job} not found")
    if action.state is ActionState.WAITING:
        svc.workflows.finish_action(action, ActionState.STOPPED, utcnow(), error="stopped by BatchStopJobRun")
        return
    if action.state is not ActionState.RUNNING:
        raise invalid(f"Job run {run_id} is {action.state.value}, not running")
    try:
        if svc.state.get_run(run_id).state is RunState.RUNNING:
            svc.state.finish_run(run_id, RunState.STOPPED, error="stopped by BatchStopJobRun")
    except (NotFound, RunFinished):
        pass
    if action.host in (None, socket.gethostname()):
        Launcher().kill(action.action_id, action.pid)
    # its supervisor sees the process end and the run STOPPED, and closes the action


@handler("BatchStopJobRun")
def batch_stop_job_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    done, errors = [], []
    for run_id in p["JobRunIds"]:
        try:
            _stop(svc, p["JobName"], run_id)
            done.append({"JobName": p["JobName"], "JobRunId": run_id})
        except GlueApiError as exc:
            errors.append(
                {
                    "JobName": p["JobName"],
                    "JobRunId": run_id,
                    "ErrorDetail": {"ErrorCode": exc.code, "ErrorMessage": exc.message},
                }
            )
    return {"SuccessfulSubmissions": done, "Errors": errors}


# ------------------------------------------------------------------ bookmarks


def _entry(doc: dict[str, Any]) -> dict[str, Any]:
    keep = ("JobName", "Version", "Run", "Attempt", "PreviousRunId", "RunId")
    out = {k: doc[k] for k in keep if doc.get(k) is not None}
    out["JobBookmark"] = json.dumps(doc["JobBookmark"], default=str, sort_keys=True)
    return out


@handler("GetJobBookmark")
def get_job_bookmark(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["JobName"]
    if not svc.state.job_exists(name):
        raise not_found(f"Continuation for job {name} not found")
    return {"JobBookmarkEntry": _entry(bookmark_entry(svc.state.latest_version(name), name))}


@handler("ResetJobBookmark")
def reset_job_bookmark(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Without RunId: forget everything processed. With RunId: back to the state just
    after that run committed (Glue's rewind)."""
    name = p["JobName"]
    if not svc.state.job_exists(name):
        raise not_found(f"Continuation for job {name} not found")
    try:
        version = svc.state.rewind(name, p["RunId"]) if p.get("RunId") else svc.state.reset(name)
    except UnknownRun as exc:
        raise not_found(str(exc)) from None
    return {"JobBookmarkEntry": _entry(bookmark_entry(version, name))}


@handler("BatchGetJobs")
def batch_get_jobs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    jobs = _jobs(svc)
    names = list(dict.fromkeys(p["JobNames"]))
    return {
        "Jobs": [jobs[n] for n in names if n in jobs],
        "JobsNotFound": [n for n in names if n not in jobs],
    }
