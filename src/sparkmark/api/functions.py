"""Glue's user-defined functions: kept per database and listed (catalog.kept_documents),
as Terraform's ``aws_glue_user_defined_function`` and Hive-style clients declare them.
The class a function names is not loaded: Spark's own ``CREATE FUNCTION`` registers one
in a session."""

from __future__ import annotations

from typing import Any

from ..catalog.kept_documents import KeptDocuments
from ..catalog.name_pattern import NamePattern
from .catalog import _database
from .protocol import exists, not_found
from .service import AFTER, CATALOG_ID, Service, handler, page

FUNCTION = "function"


def _key(database: str, name: str) -> str:
    return f"{database}/{name.lower()}"  # Glue keeps function names in lower case


def _doc(found) -> dict[str, Any]:
    database = found.name.split("/", 1)[0]
    return {
        **found.document,
        "DatabaseName": database,
        "CreateTime": found.created_at,
        "CatalogId": CATALOG_ID,
    }


def _given(p: dict[str, Any]) -> dict[str, Any]:
    given = dict(p["FunctionInput"])
    given["FunctionName"] = given["FunctionName"].lower()
    return given


@handler("CreateUserDefinedFunction")
def create_function(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    database = _database(svc, p["DatabaseName"])
    given = _given(p)
    kept = KeptDocuments(svc.state)
    if kept.get(FUNCTION, _key(database, given["FunctionName"])) is not None:
        raise exists(f"Function {given['FunctionName']} already exists.")
    kept.create(FUNCTION, _key(database, given["FunctionName"]), given)
    return {}


@handler("GetUserDefinedFunction")
def get_function(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    database = _database(svc, p["DatabaseName"])
    found = KeptDocuments(svc.state).get(FUNCTION, _key(database, p["FunctionName"]))
    if found is None:
        raise not_found(f"Function {p['FunctionName']} not found.")
    return {"UserDefinedFunction": _doc(found)}


@handler("GetUserDefinedFunctions")
def get_functions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Functions whose names match ``Pattern`` (Glue's name pattern, as GetTables'), in
    one database or, without ``DatabaseName``, in all."""
    database = _database(svc, p["DatabaseName"]) if p.get("DatabaseName") else None
    pattern = NamePattern(p["Pattern"])
    found = [
        _doc(f)
        for f in KeptDocuments(svc.state).all(FUNCTION)
        if (database is None or f.name.split("/", 1)[0] == database)
        and pattern.matches(f.document["FunctionName"])
        and (not p.get("FunctionType") or f.document.get("FunctionType") == p["FunctionType"])
    ]
    chunk, token = page(found, p)
    return {"UserDefinedFunctions": chunk, "NextToken": token}


@handler("UpdateUserDefinedFunction")
def update_function(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The definition is replaced (a new name renames the function), as Glue's update does."""
    database = _database(svc, p["DatabaseName"])
    kept, old = KeptDocuments(svc.state), _key(database, p["FunctionName"])
    if kept.get(FUNCTION, old) is None:
        raise not_found(f"Function {p['FunctionName']} not found.")
    given = _given(p)
    new = _key(database, given["FunctionName"])
    if new != old and kept.get(FUNCTION, new) is not None:
        raise exists(f"Function {given['FunctionName']} already exists.")
    kept.delete(FUNCTION, old)
    kept.put(FUNCTION, new, given)
    return {}


@handler("DeleteUserDefinedFunction")
def delete_function(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    database = _database(svc, p["DatabaseName"])
    KeptDocuments(svc.state).delete(FUNCTION, _key(database, p["FunctionName"]))
    return {}


def _forget_database(svc: Service, operation: str, p: dict[str, Any]) -> None:
    """A deleted database's functions go with it."""
    if operation != "DeleteDatabase":
        return
    kept = KeptDocuments(svc.state)
    for found in kept.all(FUNCTION):
        if found.name.split("/", 1)[0] == p["Name"].lower():
            kept.delete(FUNCTION, found.name)


AFTER.append(_forget_database)
