"""The Glue Schema Registry's operations (catalog.schema_registry): registries, schemas,
versions with compatibility checks, and version metadata, as boto3, Terraform's
``aws_glue_registry``/``aws_glue_schema`` and AWS's serializers call them. ARNs name
``us-east-1`` and the catalog's account; an ARN given with any region or account finds
the same registry or schema."""

from __future__ import annotations

import difflib
import json
import re
from datetime import datetime
from typing import Any

from ..catalog.schema_compatibility import IncompatibleSchema, SchemaDefinitionError, check_definition
from ..catalog.schema_registry import DEFAULT_REGISTRY, Schema, SchemaRegistryStore, SchemaVersion
from .protocol import invalid, not_found
from .service import CATALOG_ID, Service, handler, page

REGION = "us-east-1"
_REGISTRY_ARN = re.compile(r"arn:aws[\w-]*:glue:[^:]*:[^:]*:registry/(?P<registry>[^/]+)")
_SCHEMA_ARN = re.compile(r"arn:aws[\w-]*:glue:[^:]*:[^:]*:schema/(?P<registry>[^/]+)/(?P<schema>[^/]+)")


def _store(svc: Service) -> SchemaRegistryStore:
    return SchemaRegistryStore(svc.state)


def registry_arn(name: str) -> str:
    return f"arn:aws:glue:{REGION}:{CATALOG_ID}:registry/{name}"


def schema_arn(registry: str, name: str) -> str:
    return f"arn:aws:glue:{REGION}:{CATALOG_ID}:schema/{registry}/{name}"


def _time(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _registry_name(given: dict[str, Any] | None, default: str | None = None) -> str:
    given = given or {}
    if given.get("RegistryArn"):
        match = _REGISTRY_ARN.fullmatch(given["RegistryArn"])
        if match is None:
            raise invalid(f"{given['RegistryArn']!r} is not a registry's ARN")
        return match["registry"]
    if given.get("RegistryName"):
        return given["RegistryName"]
    if default is not None:
        return default
    raise invalid("give RegistryName or RegistryArn")


def _schema_key(given: dict[str, Any] | None) -> tuple[str, str]:
    given = given or {}
    if given.get("SchemaArn"):
        match = _SCHEMA_ARN.fullmatch(given["SchemaArn"])
        if match is None:
            raise invalid(f"{given['SchemaArn']!r} is not a schema's ARN")
        return match["registry"], match["schema"]
    if not given.get("SchemaName"):
        raise invalid("give SchemaArn, or SchemaName with RegistryName")
    return given.get("RegistryName") or DEFAULT_REGISTRY, given["SchemaName"]


def _checked(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (SchemaDefinitionError, IncompatibleSchema) as exc:
        raise invalid(str(exc)) from None


# ------------------------------------------------------------------ registries


@handler("CreateRegistry")
def create_registry(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    made = _store(svc).create_registry(p["RegistryName"], p.get("Description") or "")
    return {
        "RegistryArn": registry_arn(made.name),
        "RegistryName": made.name,
        "Description": made.description or None,
        "Tags": p.get("Tags"),
    }


@handler("GetRegistry")
def get_registry(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _store(svc).registry(_registry_name(p["RegistryId"]))
    return {
        "RegistryName": found.name,
        "RegistryArn": registry_arn(found.name),
        "Description": found.description or None,
        "Status": "AVAILABLE",
        "CreatedTime": _time(found.created_at),
        "UpdatedTime": _time(found.updated_at),
    }


@handler("ListRegistries")
def list_registries(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    items = [
        {
            "RegistryName": r.name,
            "RegistryArn": registry_arn(r.name),
            "Description": r.description or None,
            "Status": "AVAILABLE",
            "CreatedTime": _time(r.created_at),
            "UpdatedTime": _time(r.updated_at),
        }
        for r in _store(svc).registries()
    ]
    chunk, token = page(items, p, default=25)
    return {"Registries": chunk, "NextToken": token}


@handler("UpdateRegistry")
def update_registry(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = _registry_name(p["RegistryId"])
    _store(svc).update_registry(name, p["Description"])
    return {"RegistryName": name, "RegistryArn": registry_arn(name)}


@handler("DeleteRegistry")
def delete_registry(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Deleted at once with its schemas (Glue answers DELETING and finishes later)."""
    name = _registry_name(p["RegistryId"])
    _store(svc).delete_registry(name)
    return {"RegistryName": name, "RegistryArn": registry_arn(name), "Status": "DELETING"}


# --------------------------------------------------------------------- schemas


def _schema_doc(found: Schema) -> dict[str, Any]:
    return {
        "RegistryName": found.registry,
        "RegistryArn": registry_arn(found.registry),
        "SchemaName": found.name,
        "SchemaArn": schema_arn(found.registry, found.name),
        "Description": found.description or None,
        "DataFormat": found.data_format,
        "Compatibility": found.compatibility,
        "SchemaCheckpoint": found.checkpoint,
        # a schema without versions has none (Glue's minimum is 1)
        "LatestSchemaVersion": found.latest or None,
        "NextSchemaVersion": found.latest + 1,
        "SchemaStatus": "AVAILABLE",
    }


@handler("CreateSchema")
def create_schema(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry = _registry_name(p.get("RegistryId"), DEFAULT_REGISTRY)
    made, first = _checked(
        _store(svc).create_schema,
        registry,
        p["SchemaName"],
        p["DataFormat"],
        p.get("Compatibility") or "BACKWARD",
        p.get("Description") or "",
        p.get("SchemaDefinition"),
    )
    out = {**_schema_doc(made), "Tags": p.get("Tags")}
    if first is not None:
        out.update({"SchemaVersionId": first.version_id, "SchemaVersionStatus": "AVAILABLE"})
    return out


@handler("GetSchema")
def get_schema(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _store(svc).schema(*_schema_key(p["SchemaId"]))
    return {
        **_schema_doc(found),
        "CreatedTime": _time(found.created_at),
        "UpdatedTime": _time(found.updated_at),
    }


@handler("ListSchemas")
def list_schemas(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry = _registry_name(p["RegistryId"]) if p.get("RegistryId") else None
    if registry is not None:
        _store(svc).registry(registry)
    items = [
        {
            "RegistryName": s.registry,
            "SchemaName": s.name,
            "SchemaArn": schema_arn(s.registry, s.name),
            "Description": s.description or None,
            "SchemaStatus": "AVAILABLE",
            "CreatedTime": _time(s.created_at),
            "UpdatedTime": _time(s.updated_at),
        }
        for s in _store(svc).schemas(registry)
    ]
    chunk, token = page(items, p, default=25)
    return {"Schemas": chunk, "NextToken": token}


def _version_number(svc: Service, registry: str, name: str, given: dict[str, Any] | None) -> int | None:
    """A SchemaVersionNumber structure's number (None: the latest)."""
    given = given or {}
    if given.get("LatestVersion"):
        return None
    if given.get("VersionNumber") is None:
        raise invalid("give SchemaVersionNumber's VersionNumber or LatestVersion")
    return int(given["VersionNumber"])


@handler("UpdateSchema")
def update_schema(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Compatibility and description; SchemaVersionNumber moves the checkpoint."""
    registry, name = _schema_key(p["SchemaId"])
    checkpoint = None
    if p.get("SchemaVersionNumber"):
        number = _version_number(svc, registry, name, p["SchemaVersionNumber"])
        checkpoint = number if number is not None else _store(svc).schema(registry, name).latest
    if p.get("Compatibility") is None and p.get("Description") is None and checkpoint is None:
        raise invalid("UpdateSchema needs Compatibility, Description or SchemaVersionNumber")
    _store(svc).update_schema(
        registry,
        name,
        compatibility=p.get("Compatibility"),
        description=p.get("Description"),
        checkpoint=checkpoint,
    )
    return {"SchemaArn": schema_arn(registry, name), "SchemaName": name, "RegistryName": registry}


@handler("DeleteSchema")
def delete_schema(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry, name = _schema_key(p["SchemaId"])
    _store(svc).delete_schema(registry, name)
    return {"SchemaArn": schema_arn(registry, name), "SchemaName": name, "Status": "DELETING"}


# -------------------------------------------------------------------- versions


@handler("RegisterSchemaVersion")
def register_schema_version(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry, name = _schema_key(p["SchemaId"])
    made = _checked(_store(svc).register_version, registry, name, p["SchemaDefinition"])
    return {"SchemaVersionId": made.version_id, "VersionNumber": made.number, "Status": "AVAILABLE"}


def _version_doc(svc: Service, found: SchemaVersion) -> dict[str, Any]:
    schema = _store(svc).schema(found.registry, found.schema)
    return {
        "SchemaVersionId": found.version_id,
        "SchemaDefinition": found.definition,
        "DataFormat": schema.data_format,
        "SchemaArn": schema_arn(found.registry, found.schema),
        "VersionNumber": found.number,
        "Status": "AVAILABLE",
        "CreatedTime": _time(found.created_at),
    }


def _find_version(svc: Service, p: dict[str, Any]) -> SchemaVersion:
    store = _store(svc)
    if p.get("SchemaVersionId"):
        return store.version_by_id(p["SchemaVersionId"])
    if not p.get("SchemaId"):
        raise invalid("give SchemaVersionId, or SchemaId with SchemaVersionNumber")
    registry, name = _schema_key(p["SchemaId"])
    return store.version(registry, name, _version_number(svc, registry, name, p.get("SchemaVersionNumber")))


@handler("GetSchemaVersion")
def get_schema_version(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return _version_doc(svc, _find_version(svc, p))


@handler("ListSchemaVersions")
def list_schema_versions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry, name = _schema_key(p["SchemaId"])
    _store(svc).schema(registry, name)
    items = [
        {
            "SchemaArn": schema_arn(registry, name),
            "SchemaVersionId": v.version_id,
            "VersionNumber": v.number,
            "Status": "AVAILABLE",
            "CreatedTime": _time(v.created_at),
        }
        for v in _store(svc).versions(registry, name)
    ]
    chunk, token = page(items, p, default=25)
    return {"Schemas": chunk, "NextToken": token}


@handler("GetSchemaByDefinition")
def get_schema_by_definition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry, name = _schema_key(p["SchemaId"])
    try:
        wanted = json.loads(p["SchemaDefinition"])
    except ValueError:
        raise invalid("SchemaDefinition is not JSON") from None
    for v in _store(svc).versions(registry, name):
        if json.loads(v.definition) == wanted:
            doc = _version_doc(svc, v)
            return {
                k: doc[k] for k in ("SchemaVersionId", "SchemaArn", "DataFormat", "Status", "CreatedTime")
            }
    raise not_found(f"schema {name!r} of registry {registry!r} has no version with that definition")


@handler("CheckSchemaVersionValidity")
def check_schema_version_validity(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    try:
        check_definition(p["DataFormat"], p["SchemaDefinition"])
    except SchemaDefinitionError as exc:
        return {"Valid": False, "Error": str(exc)}
    return {"Valid": True}


def _numbers(text: str) -> list[int]:
    """Glue's ``Versions``: numbers and ranges, ``1-3,5``."""
    numbers: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            numbers += list(range(int(low), int(high or low) + 1))
    except ValueError:
        raise invalid(f"Versions {text!r} is not a list of numbers and ranges (1-3,5)") from None
    return numbers


@handler("DeleteSchemaVersions")
def delete_schema_versions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    registry, name = _schema_key(p["SchemaId"])
    errors = _store(svc).delete_versions(registry, name, _numbers(p["Versions"]))
    return {
        "SchemaVersionErrors": [
            {"VersionNumber": n, "ErrorDetails": {"ErrorCode": "InvalidInputException", "ErrorMessage": why}}
            for n, why in errors
        ]
    }


@handler("GetSchemaVersionsDiff")
def get_schema_versions_diff(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """A unified diff of the two versions' definitions, pretty-printed (SYNTAX_DIFF)."""
    registry, name = _schema_key(p["SchemaId"])
    store = _store(svc)
    first = store.version(registry, name, _version_number(svc, registry, name, p["FirstSchemaVersionNumber"]))
    second = store.version(
        registry, name, _version_number(svc, registry, name, p["SecondSchemaVersionNumber"])
    )

    def pretty(v: SchemaVersion) -> list[str]:
        return json.dumps(json.loads(v.definition), indent=2).splitlines(keepends=True)

    diff = difflib.unified_diff(
        pretty(first), pretty(second), f"version {first.number}", f"version {second.number}"
    )
    return {"Diff": "".join(diff)}


# -------------------------------------------------------------------- metadata


def _metadata_answer(svc: Service, found: SchemaVersion, key: str, value: str) -> dict[str, Any]:
    schema = _store(svc).schema(found.registry, found.schema)
    return {
        "SchemaArn": schema_arn(found.registry, found.schema),
        "SchemaName": found.schema,
        "RegistryName": found.registry,
        "LatestVersion": found.number == schema.latest,
        "VersionNumber": found.number,
        "SchemaVersionId": found.version_id,
        "MetadataKey": key,
        "MetadataValue": value,
    }


@handler("PutSchemaVersionMetadata")
def put_schema_version_metadata(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _find_version(svc, p)
    pair = p["MetadataKeyValue"]
    _store(svc).put_metadata(found.version_id, pair["MetadataKey"], pair["MetadataValue"])
    return _metadata_answer(svc, found, pair["MetadataKey"], pair["MetadataValue"])


@handler("RemoveSchemaVersionMetadata")
def remove_schema_version_metadata(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _find_version(svc, p)
    pair = p["MetadataKeyValue"]
    _store(svc).remove_metadata(found.version_id, pair["MetadataKey"], pair["MetadataValue"])
    return _metadata_answer(svc, found, pair["MetadataKey"], pair["MetadataValue"])


@handler("QuerySchemaVersionMetadata")
def query_schema_version_metadata(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The version's metadata; ``MetadataList`` keeps the pairs that match one of its
    entries (a key, with a value or without)."""
    found = _find_version(svc, p)
    wanted = p.get("MetadataList") or []
    info: dict[str, Any] = {}
    for key, values in _store(svc).metadata_of(found.version_id).items():
        kept = [
            (value, at)
            for value, at in values
            if not wanted
            or any(w["MetadataKey"] == key and w.get("MetadataValue") in (None, value) for w in wanted)
        ]
        if not kept:
            continue
        (latest_value, latest_at), others = kept[-1], kept[:-1]
        info[key] = {
            "MetadataValue": latest_value,
            "CreatedTime": _time(latest_at),
            "OtherMetadataValueList": [{"MetadataValue": v, "CreatedTime": _time(at)} for v, at in others]
            or None,
        }
    return {"MetadataInfoMap": info, "SchemaVersionId": found.version_id}
