"""Glue's data quality operations: results (what EvaluateDataQuality in a job, and the
evaluation runs, stored), rulesets as resources, ruleset evaluation runs and rule
recommendation runs on catalog tables. A result's id is ``dqresult-`` and its number in
the state store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..app.tags import RULESET_KIND
from ..engine.schema import utcnow
from ..quality import statistics
from ..quality.ruleset import DQDLError, parse_ruleset
from ..quality.store import StoredResult
from ..quality_service.engine import check_ruleset
from ..quality_service.records import EVALUATION, RECOMMENDATION, RulesetRecord, TaskRun
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


def _result(r: StoredResult) -> dict[str, Any]:
    doc = {
        "ResultId": result_id(r),
        "Score": r.score,
        "DataSource": r.data_source,
        "RulesetName": r.ruleset,
        "EvaluationContext": r.ruleset,
        "StartedOn": r.evaluated_at,
        "CompletedOn": r.evaluated_at,
        "JobName": r.job_name or None,
        "JobRunId": r.run_id,
        "RulesetEvaluationRunId": r.evaluation_run_id,
        "RuleResults": [_rule(rule) for rule in r.rules],
    }
    return {k: v for k, v in doc.items() if v is not None}


def _numbered(svc: Service, number: int | None) -> StoredResult | None:
    """The stored result of this number (a result's or a profile's), if there is one."""
    found = svc.quality.find(result_id=number, limit=1) if number is not None else []
    return found[0] if found else None


def _stored(svc: Service, given: str) -> StoredResult | None:
    return _numbered(svc, _number(given))


@handler("GetDataQualityResult")
def get_data_quality_result(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _stored(svc, p["ResultId"])
    if found is None:
        raise not_found(f"Data quality result {p['ResultId']} not found")
    return _result(found)


@handler("BatchGetDataQualityResult")
def batch_get_data_quality_result(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = {given: _stored(svc, given) for given in p["ResultIds"]}
    return {
        "Results": [_result(r) for r in found.values() if r is not None],
        "ResultsNotFound": [given for given, r in found.items() if r is None],
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
    source = f.get("DataSource")
    docs = [
        {
            "ResultId": result_id(r),
            "DataSource": r.data_source,
            "JobName": r.job_name or None,
            "JobRunId": r.run_id,
            "StartedOn": r.evaluated_at,
        }
        for r in found
        if source is None or _same_table(r.data_source, source)
    ]
    docs = [{k: v for k, v in d.items() if v is not None} for d in docs]
    chunk, token = page(docs, p)
    return {"Results": chunk, "NextToken": token}


def _table_key(table: dict[str, Any] | None) -> tuple[Any, Any]:
    """(database, table) of a GlueTable or a TargetTable."""
    return ((table or {}).get("DatabaseName"), (table or {}).get("TableName"))


def _same_table(found: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
    """Whether two DataSources name the same catalog table."""
    return _table_key((found or {}).get("GlueTable")) == _table_key(wanted.get("GlueTable"))


# ------------------------------------------------------------------ rulesets


@handler("CreateDataQualityRuleset")
def create_data_quality_ruleset(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    check_ruleset(p["Ruleset"])
    target = p.get("TargetTable")
    if target:
        svc.catalog.table(target["DatabaseName"], target["TableName"])
    svc.quality_runs.store.add_ruleset(
        p["Name"], p["Ruleset"], description=p.get("Description"), target_table=target
    )
    return {"Name": p["Name"]}


def _ruleset_doc(r: RulesetRecord) -> dict[str, Any]:
    doc = {
        "Name": r.name,
        "Description": r.description,
        "Ruleset": r.ruleset,
        "TargetTable": r.target_table,
        "CreatedOn": r.created,
        "LastModifiedOn": r.modified,
        "RecommendationRunId": r.recommendation_run_id,
    }
    return {k: v for k, v in doc.items() if v is not None}


@handler("GetDataQualityRuleset")
def get_data_quality_ruleset(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return _ruleset_doc(svc.quality_runs.store.ruleset(p["Name"]))


@handler("UpdateDataQualityRuleset")
def update_data_quality_ruleset(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if p.get("Ruleset") is not None:
        check_ruleset(p["Ruleset"])
        values["ruleset"] = p["Ruleset"]
    if p.get("Description") is not None:
        values["description"] = p["Description"]
    store = svc.quality_runs.store
    store.update_ruleset(p["Name"], **values)
    found = store.ruleset(p["Name"])
    return {
        k: v
        for k, v in {"Name": found.name, "Description": found.description, "Ruleset": found.ruleset}.items()
        if v is not None
    }


@handler("DeleteDataQualityRuleset")
def delete_data_quality_ruleset(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.quality_runs.store.delete_ruleset(p["Name"])
    return {}


def _rule_count(text: str) -> int:
    try:
        return len(parse_ruleset(text).rules)
    except DQDLError:
        return 0


@handler("ListDataQualityRulesets")
def list_data_quality_rulesets(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    f = p.get("Filter") or {}
    wanted_tags = p.get("Tags") or {}
    found = []
    for r in svc.quality_runs.store.rulesets():
        target = f.get("TargetTable")
        if f.get("Name") and f["Name"] != r.name:
            continue
        if f.get("Description") and f["Description"] != r.description:
            continue
        if target and (not r.target_table or _table_key(r.target_table) != _table_key(target)):
            continue
        if not _within(r.created, f.get("CreatedAfter"), f.get("CreatedBefore")):
            continue
        if not _within(r.modified, f.get("LastModifiedAfter"), f.get("LastModifiedBefore")):
            continue
        if wanted_tags:
            tags = svc.tags.tags(RULESET_KIND, r.name)
            if any(tags.get(k) != v for k, v in wanted_tags.items()):
                continue
        doc = _ruleset_doc(r)
        doc.pop("Ruleset")
        found.append({**doc, "RuleCount": _rule_count(r.ruleset)})
    chunk, token = page(found, p)
    return {"Rulesets": chunk, "NextToken": token}


def _within(moment: datetime, after: datetime | None, before: datetime | None) -> bool:
    return (after is None or moment > after) and (before is None or moment < before)


# ------------------------------------------------------------------ runs


def _execution_seconds(run: TaskRun) -> int:
    return int(((run.completed or utcnow()) - run.started).total_seconds())


def _run_doc(run: TaskRun, fields: tuple[str, ...]) -> dict[str, Any]:
    request = run.request
    doc: dict[str, Any] = {
        "RunId": run.id,
        "DataSource": request.get("DataSource"),
        "Role": request.get("Role"),
        "NumberOfWorkers": request.get("NumberOfWorkers") or 5,
        "Timeout": request.get("Timeout") or 2880,
        "Status": run.state,
        "ErrorString": run.error,
        "StartedOn": run.started,
        "LastModifiedOn": run.modified,
        "CompletedOn": run.completed,
        "ExecutionTime": _execution_seconds(run),
    }
    for name in fields:
        doc[name] = request.get(name)
    return {k: v for k, v in doc.items() if v not in (None, {}, [])}


@handler("StartDataQualityRulesetEvaluationRun")
def start_data_quality_ruleset_evaluation_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"RunId": svc.quality_runs.start_evaluation(p).id}


@handler("GetDataQualityRulesetEvaluationRun")
def get_data_quality_ruleset_evaluation_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    run = svc.quality_runs.store.run(p["RunId"], EVALUATION)
    doc = _run_doc(run, ("AdditionalRunOptions", "RulesetNames", "AdditionalDataSources"))
    if run.outcome.get("results"):
        doc["ResultIds"] = [f"{PREFIX}{n:016d}" for n in run.outcome["results"]]
    return doc


def _listed_runs(svc: Service, kind: str, p: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """A List…Runs answer: the runs of ``kind`` its Filter keeps, newest first, paged."""
    f = p.get("Filter") or {}
    runs = []
    for r in svc.quality_runs.store.runs(kind):
        if f.get("DataSource") and not _same_table(r.request.get("DataSource"), f["DataSource"]):
            continue
        if not _within(r.started, f.get("StartedAfter"), f.get("StartedBefore")):
            continue
        if f.get("RulesetName") and f["RulesetName"] not in r.request.get("RulesetNames", []):
            continue
        doc = {
            "RunId": r.id,
            "Status": r.state,
            "StartedOn": r.started,
            "DataSource": r.request.get("DataSource"),
        }
        doc.update({name: r.request.get(name) for name in fields})
        runs.append({k: v for k, v in doc.items() if v is not None})
    chunk, token = page(runs, p)
    return {"Runs": chunk, "NextToken": token}


@handler("ListDataQualityRulesetEvaluationRuns")
def list_data_quality_ruleset_evaluation_runs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return _listed_runs(svc, EVALUATION, p, ())


@handler("CancelDataQualityRulesetEvaluationRun")
def cancel_data_quality_ruleset_evaluation_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.quality_runs.cancel(p["RunId"], EVALUATION)
    return {}


@handler("StartDataQualityRuleRecommendationRun")
def start_data_quality_rule_recommendation_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"RunId": svc.quality_runs.start_recommendation(p).id}


@handler("GetDataQualityRuleRecommendationRun")
def get_data_quality_rule_recommendation_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    run = svc.quality_runs.store.run(p["RunId"], RECOMMENDATION)
    doc = _run_doc(run, ("CreatedRulesetName", "AdditionalRunOptions", "RecommendationMode"))
    if run.outcome.get("ruleset"):
        doc["RecommendedRuleset"] = run.outcome["ruleset"]
    return doc


@handler("ListDataQualityRuleRecommendationRuns")
def list_data_quality_rule_recommendation_runs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return _listed_runs(svc, RECOMMENDATION, p, ("CreatedRulesetName", "RecommendationMode"))


@handler("CancelDataQualityRuleRecommendationRun")
def cancel_data_quality_rule_recommendation_run(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.quality_runs.cancel(p["RunId"], RECOMMENDATION)
    return {}


# ------------------------------------------------------------------ statistics and models


def _all_points(svc: Service) -> list[statistics.Point]:
    stored = svc.quality.find(limit=None)
    return statistics.points(stored, svc.quality.annotations_of([r.id for r in stored]))


def _recorded(moment: datetime, f: dict[str, Any]) -> bool:
    return _within(moment, f.get("RecordedAfter"), f.get("RecordedBefore"))


def _series(svc: Service, statistic: str) -> list[statistics.Point]:
    return [p for p in _all_points(svc) if statistics.statistic_id(p.result, p.metric) == statistic]


@handler("ListDataQualityStatistics")
def list_data_quality_statistics(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    f = p.get("TimestampFilter") or {}
    found = []
    for point in _all_points(svc):
        statistic, profile = (
            statistics.statistic_id(point.result, point.metric),
            statistics.profile_id(point.result),
        )
        if p.get("StatisticId") not in (None, statistic) or p.get("ProfileId") not in (None, profile):
            continue
        if not _recorded(point.result.evaluated_at, f):
            continue
        described = statistics.describe(point.metric)
        run = {"RunId": point.result.evaluation_run_id, "JobRunId": point.result.run_id}
        doc = {
            "StatisticId": statistic,
            "ProfileId": profile,
            "RunIdentifier": {k: v for k, v in run.items() if v},
            "StatisticName": described.name,
            "DoubleValue": point.value,
            "EvaluationLevel": described.level,
            "ColumnsReferenced": list(described.columns),
            "ReferencedDatasets": list(described.datasets),
            "StatisticProperties": {"Metric": point.metric, "Ruleset": point.result.ruleset},
            "RecordedOn": point.result.evaluated_at,
            "InclusionAnnotation": {"Value": point.inclusion or "INCLUDE", "LastModifiedOn": point.annotated}
            if point.inclusion
            else None,
        }
        found.append({k: v for k, v in doc.items() if v is not None})
    found.reverse()  # newest first
    chunk, token = page(found, p)
    return {"Statistics": chunk, "NextToken": token}


def _point(svc: Service, profile: str, statistic: str) -> statistics.Point | None:
    """The data point of ``statistic`` in ``profile``, if it has one."""
    result = _numbered(svc, statistics.result_number(profile))
    points = statistics.points([result], {}) if result is not None else []
    return next((x for x in points if statistics.statistic_id(x.result, x.metric) == statistic), None)


@handler("BatchPutDataQualityStatisticAnnotation")
def batch_put_data_quality_statistic_annotation(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    failed = []
    for given in p["InclusionAnnotations"]:
        found = _point(svc, given["ProfileId"], given["StatisticId"])
        if found is None:
            failed.append({**given, "FailureReason": "no such statistic in that profile"})
            continue
        svc.quality.annotate(found.result.id, [found.metric], given["InclusionAnnotation"])
    return {
        "FailedInclusionAnnotations": [
            {k: v for k, v in f.items() if k != "InclusionAnnotation"} for f in failed
        ]
    }


@handler("PutDataQualityProfileAnnotation")
def put_data_quality_profile_annotation(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    result = _numbered(svc, statistics.result_number(p["ProfileId"]))
    if result is None:
        raise not_found(f"Data quality profile {p['ProfileId']} not found")
    svc.quality.annotate(result.id, list(result.metrics), p["InclusionAnnotation"])
    return {}


@handler("ListDataQualityStatisticAnnotations")
def list_data_quality_statistic_annotations(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    f = p.get("TimestampFilter") or {}
    found = []
    for point in _all_points(svc):
        if not point.inclusion or not _recorded(point.result.evaluated_at, f):
            continue
        profile, statistic = (
            statistics.profile_id(point.result),
            statistics.statistic_id(point.result, point.metric),
        )
        if p.get("StatisticId") not in (None, statistic) or p.get("ProfileId") not in (None, profile):
            continue
        found.append(
            {
                "ProfileId": profile,
                "StatisticId": statistic,
                "StatisticRecordedOn": point.result.evaluated_at,
                "InclusionAnnotation": {"Value": point.inclusion, "LastModifiedOn": point.annotated},
            }
        )
    chunk, token = page(found, p)
    return {"Annotations": chunk, "NextToken": token}


def _model_series(svc: Service, p: dict[str, Any]) -> list[statistics.Point]:
    """The statistic's points up to the profile's, oldest first."""
    series = _series(svc, p["StatisticId"]) if p.get("StatisticId") else []
    at = [statistics.profile_id(x.result) for x in series]
    if p["ProfileId"] not in at:
        raise not_found(f"no statistic {p.get('StatisticId')} in profile {p['ProfileId']}")
    return series[: at.index(p["ProfileId"]) + 1]


@handler("GetDataQualityModel")
def get_data_quality_model(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The model is fitted when it is asked for, from the statistic's history up to the
    profile: it is always SUCCEEDED, its times the profile's."""
    if p.get("StatisticId"):
        series = _model_series(svc, p)
        when = series[-1].result.evaluated_at
    else:
        result = _numbered(svc, statistics.result_number(p["ProfileId"]))
        if result is None:
            raise not_found(f"Data quality profile {p['ProfileId']} not found")
        when = result.evaluated_at
    return {"Status": "SUCCEEDED", "StartedOn": when, "CompletedOn": when}


@handler("GetDataQualityModelResult")
def get_data_quality_model_result(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    series = _model_series(svc, p)
    return {"CompletedOn": series[-1].result.evaluated_at, "Model": statistics.model_results(series)}
