"""Workflow runs and job runs as Glue's API shapes them (GetWorkflowRun, JobRun)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..engine.models import BookmarkVersion
from .records import ActionRecord, WorkflowRunRecord


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _seconds(action: ActionRecord) -> float | None:
    if action.started_at and action.ended_at:
        return round((action.ended_at - action.started_at).total_seconds(), 3)
    return None


def job_run(action: ActionRecord) -> dict[str, Any]:
    return {
        "Id": action.action_id,
        "Attempt": action.attempt,
        "PreviousRunId": action.previous_id,
        "JobName": action.name,
        "JobRunState": action.state.value,
        "TriggerName": action.trigger,
        "Arguments": action.arguments,
        "StartedOn": _iso(action.started_at),
        "CompletedOn": _iso(action.ended_at),
        "ExecutionTime": _seconds(action),
        "ErrorMessage": action.error,
        "LogPath": action.log_path,
    }


def crawl(action: ActionRecord) -> dict[str, Any]:
    return {
        "CrawlId": action.action_id,
        "State": action.state.value,
        "StartedOn": _iso(action.started_at),
        "CompletedOn": _iso(action.ended_at),
        "ExecutionTime": _seconds(action),
        "ErrorMessage": action.error,
        "LogPath": action.log_path,
    }


def workflow_run(
    run: WorkflowRunRecord, *, graph: bool = False, firings: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "Name": run.workflow,
        "WorkflowRunId": run.run_id,
        "Status": run.status.value,
        "StartedOn": _iso(run.started_at),
        "CompletedOn": _iso(run.completed_at),
        "StartTrigger": run.start_trigger,
        "ErrorMessage": run.error,
        "Statistics": run.statistics,
        "WorkflowRunProperties": run.properties,
    }
    if graph:
        fired = {f["trigger"]: f for f in firings or []}
        nodes = []
        for node in run.graph.get("Nodes", []):
            entry = dict(node)
            mine = [a for a in run.actions if (a.kind, a.name) == (node["Type"], node["Name"])]
            if node["Type"] == "JOB":
                entry["JobDetails"] = {"JobRuns": [job_run(a) for a in mine]}
            elif node["Type"] == "CRAWLER":
                entry["CrawlerDetails"] = {"Crawls": [crawl(a) for a in mine]}
            else:
                hit = fired.get(node["Name"])
                entry["TriggerDetails"] = {
                    "Fired": hit is not None,
                    "FiredOn": _iso(hit["fired_at"]) if hit else None,
                }
            nodes.append(entry)
        doc["Graph"] = {"Nodes": nodes, "Edges": run.graph.get("Edges", [])}
    return doc


def node_state(node: dict[str, Any]) -> tuple[str, str | None, str | None, str]:
    """(state, started, ended, detail) of one graph node, for a table."""
    if "JobDetails" in node or "CrawlerDetails" in node:
        runs = node.get("JobDetails", {}).get("JobRuns") or node.get("CrawlerDetails", {}).get("Crawls")
        if not runs:
            return "NOT RUN", None, None, ""
        last = runs[-1]
        state = last.get("JobRunState") or last.get("State")
        detail = f"{len(runs)} attempts" if len(runs) > 1 else ""
        if last.get("ExecutionTime") is not None:
            detail = (detail + ", " if detail else "") + f"{last['ExecutionTime']:.1f} s"
        return state, last.get("StartedOn"), last.get("CompletedOn"), detail
    details = node.get("TriggerDetails", {})
    return ("FIRED" if details.get("Fired") else "NOT FIRED"), details.get("FiredOn"), None, ""


def bookmark_entry(version: BookmarkVersion | None, job_name: str) -> dict[str, Any]:
    """A bookmark version in the shape of Glue's JobBookmarkEntry."""
    if version is None:
        return {
            "JobName": job_name,
            "Version": 0,
            "Run": 0,
            "Attempt": 0,
            "PreviousRunId": None,
            "RunId": None,
            "JobBookmark": {},
        }
    return {
        "JobName": version.job_name,
        "Version": version.version,
        "Run": version.run,
        "Attempt": version.attempt,
        "PreviousRunId": version.previous_run_id,
        "RunId": version.run_id,
        "JobBookmark": version.ctx_states,
        "Kind": version.kind.value,
        "CreatedAt": version.created_at,
        "RewoundToVersion": version.rewound_to,
    }
