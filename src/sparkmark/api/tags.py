"""Glue's tag operations (TagResource, UntagResource, GetTags) and ``Tags`` given when a
resource is created; a resource's tags go when it is deleted."""

from __future__ import annotations

from typing import Any

from ..app.tags import RULESET_KIND, resource_of
from ..errors import NotFound
from .protocol import not_found
from .service import AFTER, Service, handler

# The resource each create/delete names: operation → (kind, where its name is).
_CREATED = {
    "CreateJob": ("job", ("Name",)),
    "CreateCrawler": ("crawler", ("Name",)),
    "CreateTrigger": ("trigger", ("Name",)),
    "CreateWorkflow": ("workflow", ("Name",)),
    "CreateDatabase": ("database", ("DatabaseInput", "Name")),
    "CreateConnection": ("connection", ("ConnectionInput", "Name")),
    "CreateSession": ("session", ("Id",)),
    "CreateDataQualityRuleset": (RULESET_KIND, ("Name",)),
}
_DELETED = {
    "DeleteJob": ("job", ("JobName",)),
    "DeleteCrawler": ("crawler", ("Name",)),
    "DeleteTrigger": ("trigger", ("Name",)),
    "DeleteWorkflow": ("workflow", ("Name",)),
    "DeleteDatabase": ("database", ("Name",)),
    "DeleteConnection": ("connection", ("ConnectionName",)),
    "DeleteSession": ("session", ("Id",)),
    "DeleteDataQualityRuleset": (RULESET_KIND, ("Name",)),
}


def _exists(svc: Service, kind: str, name: str) -> bool:
    if kind == "job":
        return name in svc.project.jobs
    if kind == "crawler":
        return name in svc.crawlers.names()
    if kind == "trigger":
        return name in svc.project.triggers
    if kind == "workflow":
        return name in svc.project.workflows
    if kind == "database":
        try:
            svc.catalog.database(name)
        except NotFound:
            return False
        return True
    if kind == "connection":
        from ..connections import Connections

        return (
            name in Connections.from_settings(svc.settings).declared()
            or svc.connections.get(name) is not None
        )
    if kind == "session":
        try:
            svc.sessions.get(name)
        except NotFound:
            return False
        return True
    if kind == RULESET_KIND:
        return svc.quality_runs.store.find_ruleset(name) is not None
    return True  # tables: named database/table, checked by the catalog operations


def _resource(svc: Service, arn: str) -> tuple[str, str]:
    kind, name = resource_of(arn)
    if not _exists(svc, kind, name):
        raise not_found(f"{kind} {name} not found (ARN {arn})")
    return kind, name


@handler("TagResource")
def tag_resource(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.tags.tag(*_resource(svc, p["ResourceArn"]), dict(p["TagsToAdd"]))
    return {}


@handler("UntagResource")
def untag_resource(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.tags.untag(*_resource(svc, p["ResourceArn"]), list(p["TagsToRemove"]))
    return {}


@handler("GetTags")
def get_tags(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"Tags": svc.tags.tags(*_resource(svc, p["ResourceArn"]))}


def _name(params: dict[str, Any], path: tuple[str, ...]) -> str | None:
    value: Any = params
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def _after(svc: Service, operation: str, params: dict[str, Any]) -> None:
    if operation in _CREATED and params.get("Tags"):
        kind, path = _CREATED[operation]
        name = _name(params, path)
        if name:
            svc.tags.tag(kind, name, dict(params["Tags"]))
    elif operation in _DELETED:
        kind, path = _DELETED[operation]
        name = _name(params, path)
        if name:
            svc.tags.forget(kind, name)


AFTER.append(_after)
