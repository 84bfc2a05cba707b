"""Glue's connection operations. A connection created here is the same thing as a
``[connections.NAME]`` of ``sparkmark.toml``: scripts (``connectionName``,
``extract_jdbc_conf``), JDBC crawlers and Studio's JDBC nodes resolve either. The file's
are read-only here, and their passwords (which the file keeps in the environment or a
file) are never answered. A password given here is kept sealed; ``GetConnection``
answers it only when ``HidePassword`` is false, as Glue does."""

from __future__ import annotations

from typing import Any

from ..connections import Connections
from ..connections.records import StoredConnection
from ..engine.masking import mask_text
from ..engine.sealing import Sealer
from ..errors import ConfigError
from .protocol import exists, invalid, not_found
from .service import Service, handler, page

# What each type needs, and where its address is.
ADDRESS = {"JDBC": "JDBC_CONNECTION_URL", "KAFKA": "KAFKA_BOOTSTRAP_SERVERS"}
SECRET_KEYS = ("PASSWORD", "ENCRYPTED_PASSWORD")


def _declared(svc: Service) -> Connections:
    return Connections.from_settings(svc.settings)


def _refuse_declared(svc: Service, name: str) -> None:
    if name in _declared(svc).declared():
        raise invalid(
            f"connection {name!r} is declared in {svc.settings.config} ([connections.{name}]); "
            "change it there, not through the API"
        )


def _from_input(svc: Service, given: dict[str, Any], before: StoredConnection | None) -> StoredConnection:
    name = given["Name"]
    kind = str(given.get("ConnectionType") or "").upper()
    if kind not in ADDRESS:
        raise invalid(f"connection type {kind or '(none)'} is not supported: JDBC and KAFKA connections are")
    properties = dict(given.get("ConnectionProperties") or {})
    address = properties.pop(ADDRESS[kind], None)
    if not address:
        raise invalid(f"a {kind} connection needs ConnectionProperties {ADDRESS[kind]}")
    password = properties.pop("PASSWORD", None)
    properties.pop("ENCRYPTED_PASSWORD", None)
    secret = properties.pop("SECRET_ID", None) or (given.get("AuthenticationConfiguration") or {}).get(
        "SecretArn"
    )
    sealed = Sealer.from_settings(svc.settings).seal({"password": password}) if password is not None else None
    if password is None and secret is None and before is not None:
        sealed = before.sealed_password  # an update that does not give the password keeps it
    kept = {k: v for k, v in given.items() if k not in ("Name", "ConnectionType", "ConnectionProperties")}
    return StoredConnection(
        name=name,
        kind=kind.lower(),
        url=address,
        user=properties.pop("USERNAME", None),
        sealed_password=sealed,
        secret_id=secret,
        properties={"ConnectionProperties": properties, **kept},
        description=str(given.get("Description") or ""),
    )


def _doc(svc: Service, found: StoredConnection, hide: bool) -> dict[str, Any]:
    kind = found.kind.upper()
    given = dict(found.properties)
    # HidePassword hides a password written inside the address too (user:pw@host, ;password=…).
    url = mask_text(found.url) if hide else found.url
    properties = {**given.pop("ConnectionProperties", {}), ADDRESS.get(kind, "URL"): url}
    if found.user is not None:
        properties["USERNAME"] = found.user
    if found.secret_id:
        properties["SECRET_ID"] = found.secret_id
    if found.sealed_password and not hide:
        properties["PASSWORD"] = (
            Sealer.from_settings(svc.settings).open(found.sealed_password).get("password", "")
        )
    given.pop("Description", None)
    return {
        **{k: v for k, v in given.items() if k in ("MatchCriteria", "PhysicalConnectionRequirements")},
        "Name": found.name,
        "Description": found.description or None,
        "ConnectionType": kind,
        "ConnectionProperties": properties,
        "CreationTime": found.created_at,
        "LastUpdatedTime": found.updated_at,
        "Status": "READY",
    }


def _declared_doc(svc: Service, name: str) -> dict[str, Any]:
    """A connection of ``sparkmark.toml``: its address and user, never its password."""
    try:
        resolved = _declared(svc).resolve(name)
    except ConfigError as exc:
        return {"Name": name, "ConnectionType": "JDBC", "Description": str(exc), "ConnectionProperties": {}}
    kafka = resolved.url.startswith("kafka")
    properties = {ADDRESS["KAFKA" if kafka else "JDBC"]: mask_text(resolved.url)}
    if resolved.user:
        properties["USERNAME"] = resolved.user
    return {
        "Name": name,
        "Description": f"declared in {svc.settings.config}",
        "ConnectionType": "KAFKA" if kafka else "JDBC",
        "ConnectionProperties": properties,
        "Status": "READY",
    }


@handler("CreateConnection")
def create_connection(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    given = p["ConnectionInput"]
    _refuse_declared(svc, given["Name"])
    if svc.connections.get(given["Name"]) is not None:
        raise exists(f"Connection already exists: {given['Name']}")
    svc.connections.put(_from_input(svc, given, None), create=True)
    return {"CreateConnectionStatus": "READY"}


@handler("UpdateConnection")
def update_connection(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    _refuse_declared(svc, name)
    before = svc.connections.get(name)
    if before is None:
        raise not_found(f"Connection not found: {name}")
    given = {**p["ConnectionInput"], "Name": p["ConnectionInput"].get("Name") or name}
    if given["Name"] != name:
        raise invalid("UpdateConnection does not rename a connection: delete it and create the new name")
    svc.connections.put(_from_input(svc, given, before), create=False)
    return {}


@handler("DeleteConnection")
def delete_connection(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["ConnectionName"]
    _refuse_declared(svc, name)
    if not svc.connections.delete(name):
        raise not_found(f"Connection not found: {name}")
    return {}


@handler("BatchDeleteConnection")
def batch_delete_connection(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    done, errors = [], {}
    for name in p["ConnectionNameList"]:
        if name in _declared(svc).declared():
            errors[name] = {
                "ErrorCode": "InvalidInputException",
                "ErrorMessage": f"{name} is declared in the file",
            }
        elif svc.connections.delete(name):
            done.append(name)
        else:
            errors[name] = {
                "ErrorCode": "EntityNotFoundException",
                "ErrorMessage": f"Connection not found: {name}",
            }
    return {"Succeeded": done, "Errors": errors}


@handler("GetConnection")
def get_connection(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = p["Name"]
    if name in _declared(svc).declared():
        return {"Connection": _declared_doc(svc, name)}
    found = svc.connections.get(name)
    if found is None:
        raise not_found(f"Connection not found: {name}")
    return {"Connection": _doc(svc, found, bool(p.get("HidePassword")))}


@handler("GetConnections")
def get_connections(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    hide = bool(p.get("HidePassword"))
    declared = _declared(svc).declared()
    docs = [_declared_doc(svc, n) for n in declared]
    docs += [_doc(svc, c, hide) for c in svc.connections.all() if c.name not in declared]
    wanted = p.get("Filter") or {}
    if wanted.get("ConnectionType"):
        docs = [d for d in docs if d["ConnectionType"] == wanted["ConnectionType"]]
    if wanted.get("MatchCriteria"):
        docs = [d for d in docs if set(wanted["MatchCriteria"]) <= set(d.get("MatchCriteria") or [])]
    chunk, token = page(sorted(docs, key=lambda d: d["Name"]), p)
    return {"ConnectionList": chunk, "NextToken": token}
