"""Glue's classifier operations. A classifier made here is kept in the state store and
used by every crawler that names it, as one declared in ``sparkmark.toml``
(``[classifiers.NAME.<Kind>]``) is; the file's are listed and read here but not changed."""

from __future__ import annotations

from typing import Any

from ..crawler.classifiers import (
    KINDS,
    Classifier,
    ClassifierStore,
    declared_classifiers,
    load_classifiers,
    parse_spec,
)
from ..errors import ConfigError
from .protocol import invalid, not_found
from .service import Service, handler, page


def _given(p: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The one classifier a request gives: its kind, name and fields."""
    given = [k for k in KINDS if p.get(k)]
    if len(given) != 1:
        raise invalid(f"give exactly one of {', '.join(KINDS)}")
    kind = given[0]
    body = dict(p[kind])
    return kind, body["Name"], body


def _spec(name: str, kind: str, body: dict[str, Any]) -> Any:
    try:
        return parse_spec(name, kind, body, "the request")
    except ConfigError as exc:
        raise invalid(str(exc)) from None


def _refuse_declared(svc: Service, name: str) -> None:
    if name in load_classifiers(svc.settings.config):
        raise invalid(
            f"classifier {name!r} is declared in {svc.settings.config} ([classifiers.{name}]); "
            "change it there, not through the API"
        )


def _doc(found: Classifier) -> dict[str, Any]:
    fields = found.spec.model_dump(exclude_none=True)
    if found.kind == "CsvClassifier" and not fields.get("Header"):
        fields.pop("Header", None)
    if found.kind == "CsvClassifier" and not fields.get("CustomDatatypes"):
        fields.pop("CustomDatatypes", None)
    times = {"CreationTime": found.created_at, "LastUpdated": found.updated_at} if found.created_at else {}
    return {found.kind: {"Name": found.name, **fields, **times, "Version": found.version}}


@handler("CreateClassifier")
def create_classifier(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    kind, name, body = _given(p)
    _refuse_declared(svc, name)
    ClassifierStore(svc.state).create(name, kind, _spec(name, kind, body))
    return {}


@handler("UpdateClassifier")
def update_classifier(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The fields given replace the classifier's; those left out are kept."""
    kind, name, body = _given(p)
    _refuse_declared(svc, name)
    store = ClassifierStore(svc.state)
    before = store.all().get(name)
    if before is None:
        raise not_found(f"Classifier {name} not found")
    if before.kind != kind:
        raise invalid(f"classifier {name!r} is a {before.kind}; UpdateClassifier cannot change its type")
    merged = {**before.spec.model_dump(exclude_none=True), **body}
    store.update(name, kind, _spec(name, kind, merged))
    return {}


@handler("DeleteClassifier")
def delete_classifier(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _refuse_declared(svc, p["Name"])
    ClassifierStore(svc.state).delete(p["Name"])
    return {}


@handler("GetClassifier")
def get_classifier(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = declared_classifiers(svc.state, svc.settings.config).get(p["Name"])
    if found is None:
        raise not_found(f"Classifier {p['Name']} not found")
    return {"Classifier": _doc(found)}


@handler("GetClassifiers")
def get_classifiers(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Every classifier, the API's and the file's, by name."""
    found = declared_classifiers(svc.state, svc.settings.config)
    chunk, token = page([_doc(found[name]) for name in sorted(found)], p)
    return {"Classifiers": chunk, "NextToken": token}
