"""Glue's security configurations, resource policies and Data Catalog encryption
settings: kept and answered as given (catalog.kept_documents), so Terraform's
``aws_glue_security_configuration``, ``aws_glue_resource_policy`` and
``aws_glue_data_catalog_encryption_settings`` apply and read back. Nothing is encrypted
with them and no policy is enforced: the endpoint's signature is its access control."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..catalog.kept_documents import KeptDocuments
from .protocol import GlueApiError, invalid, not_found
from .service import CATALOG_ID, Service, handler, page

SECURITY = "security-configuration"
POLICY = "resource-policy"
ENCRYPTION = "encryption-settings"
# What a catalog that was never given settings answers (Glue's defaults: nothing encrypted).
DEFAULT_ENCRYPTION = {
    "EncryptionAtRest": {"CatalogEncryptionMode": "DISABLED"},
    "ConnectionPasswordEncryption": {"ReturnConnectionPasswordEncrypted": False},
}


def _kept(svc: Service) -> KeptDocuments:
    return KeptDocuments(svc.state)


def _security_doc(found) -> dict[str, Any]:
    return {
        "Name": found.name,
        "CreatedTimeStamp": found.created_at,
        "EncryptionConfiguration": found.document,
    }


@handler("CreateSecurityConfiguration")
def create_security_configuration(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    made = _kept(svc).create(SECURITY, p["Name"], p["EncryptionConfiguration"])
    return {"Name": made.name, "CreatedTimestamp": made.created_at}


@handler("GetSecurityConfiguration")
def get_security_configuration(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _kept(svc).get(SECURITY, p["Name"])
    if found is None:
        raise not_found(f"Security configuration {p['Name']} not found")
    return {"SecurityConfiguration": _security_doc(found)}


@handler("GetSecurityConfigurations")
def get_security_configurations(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page([_security_doc(f) for f in _kept(svc).all(SECURITY)], p)
    return {"SecurityConfigurations": chunk, "NextToken": token}


@handler("DeleteSecurityConfiguration")
def delete_security_configuration(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _kept(svc).delete(SECURITY, p["Name"])
    return {}


def _policy_key(p: dict[str, Any]) -> str:
    """A policy is the catalog's, or a resource's (``ResourceArn``)."""
    return p.get("ResourceArn") or f"catalog:{CATALOG_ID}"


def _hash(policy: str) -> str:
    return hashlib.sha256(policy.encode()).hexdigest()[:32]


def _check_hash(found, p: dict[str, Any]) -> None:
    wanted = p.get("PolicyHashCondition")
    if wanted and (found is None or found.document["PolicyHash"] != wanted):
        raise GlueApiError(
            "ConditionCheckFailureException", "PolicyHashCondition does not match the current policy's hash"
        )


@handler("PutResourcePolicy")
def put_resource_policy(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Glue's conditions: ``PolicyExistsCondition`` MUST_EXIST or NOT_EXIST, and
    ``PolicyHashCondition`` the hash the current policy must have."""
    try:
        json.loads(p["PolicyInJson"])
    except ValueError:
        raise invalid("PolicyInJson is not a JSON document") from None
    kept, key = _kept(svc), _policy_key(p)
    found = kept.get(POLICY, key)
    condition = p.get("PolicyExistsCondition") or "NONE"
    if condition == "MUST_EXIST" and found is None:
        raise GlueApiError(
            "ConditionCheckFailureException", "PolicyExistsCondition MUST_EXIST: there is no policy"
        )
    if condition == "NOT_EXIST" and found is not None:
        raise GlueApiError(
            "ConditionCheckFailureException", "PolicyExistsCondition NOT_EXIST: a policy exists"
        )
    _check_hash(found, p)
    policy_hash = _hash(p["PolicyInJson"])
    kept.put(POLICY, key, {"PolicyInJson": p["PolicyInJson"], "PolicyHash": policy_hash})
    return {"PolicyHash": policy_hash}


def _policy_doc(found) -> dict[str, Any]:
    return {**found.document, "CreateTime": found.created_at, "UpdateTime": found.updated_at}


@handler("GetResourcePolicy")
def get_resource_policy(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _kept(svc).get(POLICY, _policy_key(p))
    if found is None:
        raise not_found("Policy not found")
    return _policy_doc(found)


@handler("GetResourcePolicies")
def get_resource_policies(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    chunk, token = page([_policy_doc(f) for f in _kept(svc).all(POLICY)], p)
    return {"GetResourcePoliciesResponseList": chunk, "NextToken": token}


@handler("DeleteResourcePolicy")
def delete_resource_policy(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    kept, key = _kept(svc), _policy_key(p)
    found = kept.get(POLICY, key)
    if found is None:
        raise not_found("Policy not found")
    _check_hash(found, p)
    kept.delete(POLICY, key)
    return {}


@handler("PutDataCatalogEncryptionSettings")
def put_encryption_settings(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    settings = p["DataCatalogEncryptionSettings"]
    at_rest = settings.get("EncryptionAtRest") or {}
    if at_rest.get("CatalogEncryptionMode") in ("SSE-KMS", "SSE-KMS-WITH-SERVICE-ROLE") and not at_rest.get(
        "SseAwsKmsKeyId"
    ):
        raise invalid("EncryptionAtRest with SSE-KMS needs SseAwsKmsKeyId")
    _kept(svc).put(ENCRYPTION, p.get("CatalogId") or CATALOG_ID, settings)
    return {}


@handler("GetDataCatalogEncryptionSettings")
def get_encryption_settings(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found = _kept(svc).get(ENCRYPTION, p.get("CatalogId") or CATALOG_ID)
    return {"DataCatalogEncryptionSettings": found.document if found is not None else DEFAULT_ENCRYPTION}
