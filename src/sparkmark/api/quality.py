"""Data quality results: what EvaluateDataQuality and ``sparkmark quality`` stored,
in Glue's GetDataQualityResult / ListDataQualityResults shapes. A result's id is
``dqresult-`` and its number in the state store."""

from __future__ import annotations

from typing import Any

from ..quality.store import StoredResult
from .protocol import not_found
from .service import Service, handler, page

PREFIX = "dqresult-"


def result_id(result: StoredResult) -> str:
    return f"{PREFIX}{result.id:016d}"


def _number(value: str) -> int | None:
    if not value.startswith(PREFIX) or not value[len(PREFIX) :].isdigit():
        return None
    return int(value[len(PREFIX) :])


def _rule(rule: dict[str, Any]) -> dict[str, Any]:
    metrics = {
        k: float(v) for k, v in (rule.get("evaluated_metrics") or {}).items() if isinstance(v, (int, float))
    }
    doc: dict[str, Any] = {
        "Name": rule.get("rule", ""),
        "Description": rule.get("rule", ""),
        "Result": "PASS" if rule.get("outcome") == "Passed" else "FAIL",
        "EvaluatedMetrics": metrics,
        "EvaluatedRule": rule.get("rule", ""),
    }
    if rule.get("failure_reason"):
        doc["EvaluationMessage"] = rule["failure_reason"]
    if rule.get("labels"):
        doc["Labels"] = {str(k): str(v) for k, v in rule["labels"].items()}
    return doc


@handler("GetDataQualityResult")
def get_data_quality_result(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    number = _number(p["ResultId"])
    found = svc.quality.find(result_id=number, limit=1) if number is not None else []
    if not found:
        raise not_found(f"Data quality result {p['ResultId']} not found")
    r = found[0]
    return {
        "ResultId": result_id(r),
        "Score": r.score,
        "RulesetName": r.ruleset,
        "EvaluationContext": r.ruleset,
        "StartedOn": r.evaluated_at,
        "CompletedOn": r.evaluated_at,
        "JobName": r.job_name,
        "JobRunId": r.run_id,
        "RuleResults": [_rule(rule) for rule in r.rules],
    }


@handler("ListDataQualityResults")
def list_data_quality_results(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    f = p.get("Filter") or {}
    found = svc.quality.find(
        job_name=f.get("JobName"),
        run_id=f.get("JobRunId"),
        after=f.get("StartedAfter"),
        before=f.get("StartedBefore"),
        limit=None,
    )
    docs = [
        {"ResultId": result_id(r), "JobName": r.job_name, "JobRunId": r.run_id, "StartedOn": r.evaluated_at}
        for r in found
    ]
    docs = [{k: v for k, v in d.items() if v is not None} for d in docs]
    chunk, token = page(docs, p)
    return {"Results": chunk, "NextToken": token}
