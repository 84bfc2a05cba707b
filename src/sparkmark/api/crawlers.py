"""Crawler operations. A crawler made through the API is stored where
``sparkmark crawler create`` stores one, so the CLI, workflows and the API see the
same crawlers; its Glue-only fields (Role, Description, Schedule…) are kept in the
definitions registry and shown back by GetCrawler. ``StartCrawler`` queues a crawl
for the scheduler that leads."""

from __future__ import annotations

import json
import statistics
from typing import Any

from ..crawler.definition import CrawlerDefinition, load_definition
from ..engine.schema import utcnow
from ..errors import NotFound
from ..workflow.records import ActionState
from .protocol import GlueApiError, exists, invalid, not_found
from .service import Service, handler, page, refuse_named_by_triggers

_ACTED_ON = (
    "Name",
    "DatabaseName",
    "Targets",
    "TablePrefix",
    "Classifiers",
    "SchemaChangePolicy",
    "RecrawlPolicy",
    "Configuration",
)


def _definition(p: dict[str, Any]) -> CrawlerDefinition:
    targets = p.get("Targets") or {}
    served = ("S3Targets", "JdbcTargets", "DeltaTargets", "IcebergTargets", "DynamoDBTargets")
    unsupported = [k for k, v in targets.items() if v and k not in served]
    if unsupported:
        raise invalid(f"crawler targets {', '.join(unsupported)} are not supported; use {', '.join(served)}")
    doc: dict[str, Any] = {k: p[k] for k in _ACTED_ON if p.get(k) is not None}
    doc["Targets"] = {
        "S3Targets": [
            {"Path": t["Path"], "Exclusions": t.get("Exclusions") or []}
            for t in targets.get("S3Targets") or []
        ],
        "JdbcTargets": [
            {
                "ConnectionName": t["ConnectionName"],
                "Path": t["Path"],
                "Exclusions": t.get("Exclusions") or [],
            }
            for t in targets.get("JdbcTargets") or []
        ],
        "DeltaTargets": [
            {
                k: t[k]
                for k in ("DeltaTables", "ConnectionName", "WriteManifest", "CreateNativeDeltaTable")
                if k in t
            }
            for t in targets.get("DeltaTargets") or []
        ],
        "IcebergTargets": [
            {k: t[k] for k in ("Paths", "ConnectionName", "Exclusions", "MaximumTraversalDepth") if k in t}
            for t in targets.get("IcebergTargets") or []
        ],
        "DynamoDBTargets": [
            {k: t[k] for k in ("Path", "scanAll", "scanRate") if k in t}
            for t in targets.get("DynamoDBTargets") or []
        ],
    }
    if not p.get("DatabaseName"):
        raise invalid("DatabaseName is required: it is where the crawler writes its tables")
    return load_definition(doc)


def _crawler_doc(svc: Service, name: str) -> dict[str, Any]:
    definition, state = svc.crawlers.get(name)
    entry = svc.registry.get("crawler", name)
    glue = dict(entry.glue) if entry else {}
    doc: dict[str, Any] = {
        **{k: v for k, v in glue.items() if k not in ("Schedule",)},
        **definition.model_dump(mode="json", exclude_none=True),
    }
    if isinstance(doc.get("Configuration"), dict):
        import json

        doc["Configuration"] = json.dumps(doc["Configuration"])
    if not doc.get("TablePrefix"):
        doc.pop("TablePrefix", None)
    if state == "READY" and svc.crawl_pending(name):
        state = "RUNNING"  # queued: Glue shows a started crawler as running at once
    doc["State"] = state
    if glue.get("Schedule"):
        doc["Schedule"] = {"ScheduleExpression": glue["Schedule"], "State": "NOT_SCHEDULED"}
    if entry:
        doc["CreationTime"], doc["LastUpdated"] = entry.created_at, entry.updated_at
    crawls = svc.crawlers.crawls(name, limit=1)
    if crawls and crawls[0].state != "RUNNING":
        last = crawls[0]
        status = {"SUCCEEDED": "SUCCEEDED", "CANCELLED": "CANCELLED"}.get(last.state, "FAILED")
        doc["LastCrawl"] = {
            "Status": status,
            "StartTime": last.started_at,
            **({"ErrorMessage": last.errors[0]["error"]} if last.errors and status != "SUCCEEDED" else {}),
        }
        if last.ended_at:
            doc["CrawlElapsedTime"] = int((last.ended_at - last.started_at).total_seconds() * 1000)
    doc["Version"] = 1
    return doc


@handler("CreateCrawler")
def create_crawler(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    if name in svc.crawlers.names():
        raise exists(f"crawler {name!r} already exists")
    definition = _definition(p)
    glue = {k: v for k, v in p.items() if k not in _ACTED_ON and k != "Tags"}
    svc.put_crawler(definition, glue)
    return {}


@handler("UpdateCrawler")
def update_crawler(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    svc.refuse_file_owned("crawler", name)
    current, _ = svc.crawlers.get(name)
    merged = {
        **current.model_dump(mode="json", exclude_none=True),
        **{k: v for k, v in p.items() if v is not None},
    }
    definition = _definition(merged)
    entry = svc.registry.get("crawler", name)
    glue = {**(entry.glue if entry else {}), **{k: v for k, v in p.items() if k not in _ACTED_ON}}
    svc.put_crawler(definition, glue)
    return {}


@handler("GetCrawler")
def get_crawler(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"Crawler": _crawler_doc(svc, p["Name"])}
    except NotFound:
        raise not_found(f"Crawler with name {p['Name']} not found") from None


@handler("GetCrawlers")
def get_crawlers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page([_crawler_doc(svc, n) for n in svc.crawlers.names()], p)
    return {"Crawlers": chunk, "NextToken": token}


@handler("StartCrawler")
def start_crawler(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    try:
        _, state = svc.crawlers.get(name)
    except NotFound:
        raise not_found(f"Crawler with name {name} not found") from None
    if state != "READY" or svc.crawl_pending(name):
        raise GlueApiError("CrawlerRunningException", f"Crawler with name {name} has already started")
    svc.start_crawl(name)
    return {}


@handler("GetCrawlerMetrics")
def get_crawler_metrics(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    names = p.get("CrawlerNameList") or svc.crawlers.names()
    out = []
    for name in names:
        try:
            svc.crawlers.get(name)
        except NotFound:
            raise not_found(f"Crawler with name {name} not found") from None
        done = [c for c in svc.crawlers.crawls(name, limit=50) if c.ended_at is not None]
        times = [(c.ended_at - c.started_at).total_seconds() for c in done if c.ended_at]
        last = done[0].summary if done else {}
        out.append(
            {
                "CrawlerName": name,
                "TimeLeftSeconds": 0.0,
                "StillEstimating": False,
                "LastRuntimeSeconds": times[0] if times else 0.0,
                "MedianRuntimeSeconds": statistics.median(times) if times else 0.0,
                "TablesCreated": len(last.get("tables_created", [])),
                "TablesUpdated": len(last.get("tables_updated", [])),
                "TablesDeleted": len(last.get("tables_deleted", [])),
            }
        )
    chunk, token = page(out, p)
    return {"CrawlerMetricsList": chunk, "NextToken": token}


@handler("StopCrawler")
def stop_crawler(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Cancel the crawler's crawl: a queued one is not started, a running one's
    process is ended and its crawl recorded CANCELLED."""
    import socket

    from ..workflow.launcher import Launcher

    name = p["Name"]
    try:
        svc.crawlers.get(name)
    except NotFound:
        raise not_found(f"Crawler with name {name} not found") from None
    active = [
        a
        for a in svc.workflows.actions_of(kind="CRAWLER", name=name)
        if a.state in (ActionState.WAITING, ActionState.RUNNING)
    ]
    if not active:
        raise GlueApiError("CrawlerNotRunningException", f"Crawler with name {name} is not running")
    for action in active:
        if action.state is ActionState.WAITING:
            svc.workflows.finish_action(
                action, ActionState.CANCELLED, utcnow(), error="stopped by StopCrawler"
            )
            continue
        record = svc.crawlers.crawl(action.action_id)
        if record is not None and record.state == "RUNNING":
            svc.crawlers.finish(
                name, action.action_id, "CANCELLED", record.summary, [{"path": "(crawl)", "error": "stopped"}]
            )
        if action.host in (None, socket.gethostname()):
            Launcher().kill(action.action_id, action.pid)
    return {}


@handler("DeleteCrawler")
def delete_crawler(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    svc.refuse_file_owned("crawler", name)
    refuse_named_by_triggers(svc, "crawler", name)
    if svc.crawl_pending(name):
        raise GlueApiError("CrawlerRunningException", f"Crawler with name {name} is running")
    try:
        svc.delete_crawler(name)
    except NotFound:
        raise not_found(f"Crawler with name {name} not found") from None
    return {}


@handler("ListCrawlers")
def list_crawlers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page(sorted(svc.crawlers.names()), p)
    return {"CrawlerNames": chunk, "NextToken": token}


@handler("BatchGetCrawlers")
def batch_get_crawlers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    known = set(svc.crawlers.names())
    names = list(dict.fromkeys(p["CrawlerNames"]))
    return {
        "Crawlers": [_crawler_doc(svc, n) for n in names if n in known],
        "CrawlersNotFound": [n for n in names if n not in known],
    }


_CRAWL_STATES = {"SUCCEEDED": "COMPLETED", "CANCELLED": "STOPPED", "RUNNING": "RUNNING", "FAILED": "FAILED"}


def _crawl_history(record) -> dict[str, Any]:
    return {
        "CrawlId": record.crawl_id,
        "State": _CRAWL_STATES.get(record.state, "FAILED"),
        "StartTime": record.started_at,
        "EndTime": record.ended_at,
        "Summary": json.dumps(record.summary, sort_keys=True),
        "ErrorMessage": "; ".join(f"{e.get('path', '')}: {e.get('error', '')}" for e in record.errors)
        or None,
        "LogGroup": "/aws-glue/crawlers",
        "LogStream": record.crawler,
    }


def _crawl_filter(found: dict[str, Any], criterion: dict[str, Any]) -> bool:
    """One of ListCrawls' Filters: CrawlId or State compared (EQ, NE), StartTime or
    EndTime compared (GT, GE, LT, LE, EQ, NE) with an ISO or epoch value."""
    field, op, value = (
        criterion.get("FieldName"),
        criterion.get("FilterOperator"),
        criterion.get("FieldValue"),
    )
    if field not in ("CRAWL_ID", "STATE", "START_TIME", "END_TIME"):
        raise invalid(f"ListCrawls filters on CRAWL_ID, STATE, START_TIME or END_TIME, not {field}")
    mine = found[
        {"CRAWL_ID": "CrawlId", "STATE": "State", "START_TIME": "StartTime", "END_TIME": "EndTime"}[field]
    ]
    theirs: Any = value
    if field in ("START_TIME", "END_TIME"):
        from botocore.utils import parse_timestamp

        if mine is None:
            return False
        theirs = parse_timestamp(str(value))
        mine = mine if mine.tzinfo else mine.replace(tzinfo=theirs.tzinfo)
    compare = {
        "EQ": lambda a, b: a == b,
        "NE": lambda a, b: a != b,
        "GT": lambda a, b: a > b,
        "GE": lambda a, b: a >= b,
        "LT": lambda a, b: a < b,
        "LE": lambda a, b: a <= b,
    }
    if op not in compare or (field in ("CRAWL_ID", "STATE") and op not in ("EQ", "NE")):
        raise invalid(f"filter operator {op} does not apply to {field}")
    return bool(compare[op](mine, theirs))


@handler("ListCrawls")
def list_crawls(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The crawler's crawls, newest first, as Glue's CrawlerHistory."""
    name = p["CrawlerName"]
    if name not in svc.crawlers.names():
        raise not_found(f"Crawler with name {name} not found")
    found = [_crawl_history(r) for r in svc.crawlers.crawls(name, limit=1000)]
    for criterion in p.get("Filters") or ():
        found = [c for c in found if _crawl_filter(c, criterion)]
    chunk, token = page(found, p, default=20)
    return {"Crawls": chunk, "NextToken": token}
