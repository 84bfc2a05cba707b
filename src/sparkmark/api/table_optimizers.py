"""Glue's table optimizers (catalog.table_optimizers): created, read, changed and deleted
for Iceberg tables, as Terraform's ``aws_glue_catalog_table_optimizer`` and the console
call them, and their runs listed. The leading scheduler runs the enabled ones."""

from __future__ import annotations

from typing import Any

from ..catalog.kept_documents import KeptDocuments
from ..catalog.table_optimizers import TableOptimizers, as_time
from ..errors import AlreadyExists, ArgumentError
from .catalog import _table
from .protocol import GlueApiError, exists, invalid, not_found
from .service import AFTER, CATALOG_ID, Service, handler, page


def _optimizers(svc: Service) -> TableOptimizers:
    return TableOptimizers(KeptDocuments(svc.state))


def _iceberg_table(svc: Service, database: str, table: str) -> tuple[str, str]:
    found = _table(svc, database, table)
    if (found.parameters.get("table_type") or "").upper() != "ICEBERG":
        raise GlueApiError(
            "ValidationException",
            f"Table {found.name} is not an Iceberg table: table optimizers run on Iceberg tables only",
        )
    return found.database, found.name


def _run_doc(run: dict[str, Any]) -> dict[str, Any]:
    doc = dict(run)
    for field in ("startTimestamp", "endTimestamp"):
        if doc.get(field) is not None:
            doc[field] = as_time(doc[field])
    return doc


def _optimizer_doc(optimizers: TableOptimizers, optimizer) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "type": optimizer.kind,
        "configuration": optimizer.configuration,
        "configurationSource": "table",
    }
    runs = optimizers.runs(optimizer.database, optimizer.table, optimizer.kind)
    if runs:
        doc["lastRun"] = _run_doc(runs[0])
    return doc


@handler("CreateTableOptimizer")
def create_table_optimizer(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    database, table = _iceberg_table(svc, p["DatabaseName"], p["TableName"])
    try:
        _optimizers(svc).create(database, table, p["Type"], dict(p["TableOptimizerConfiguration"]))
    except AlreadyExists:
        raise exists(f"Table optimizer of type {p['Type']} already exists for {database}.{table}") from None
    except ArgumentError as exc:
        raise invalid(str(exc)) from None
    return {}


def _found(svc: Service, optimizers: TableOptimizers, p: dict[str, Any]):
    database, table = _iceberg_table(svc, p["DatabaseName"], p["TableName"])
    optimizer = optimizers.get(database, table, p["Type"])
    if optimizer is None:
        raise not_found(f"Table optimizer of type {p['Type']} not found for {database}.{table}")
    return optimizer


@handler("GetTableOptimizer")
def get_table_optimizer(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    optimizers = _optimizers(svc)
    optimizer = _found(svc, optimizers, p)
    return {
        "CatalogId": CATALOG_ID,
        "DatabaseName": optimizer.database,
        "TableName": optimizer.table,
        "TableOptimizer": _optimizer_doc(optimizers, optimizer),
    }


@handler("UpdateTableOptimizer")
def update_table_optimizer(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    optimizers = _optimizers(svc)
    optimizer = _found(svc, optimizers, p)
    try:
        optimizers.update(
            optimizer.database, optimizer.table, optimizer.kind, dict(p["TableOptimizerConfiguration"])
        )
    except ArgumentError as exc:
        raise invalid(str(exc)) from None
    return {}


@handler("DeleteTableOptimizer")
def delete_table_optimizer(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    optimizers = _optimizers(svc)
    optimizer = _found(svc, optimizers, p)
    optimizers.delete(optimizer.database, optimizer.table, optimizer.kind)
    return {}


@handler("BatchGetTableOptimizer")
def batch_get_table_optimizer(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    optimizers = _optimizers(svc)
    found, failures = [], []
    for entry in p["Entries"]:
        asked = {
            "DatabaseName": entry.get("databaseName"),
            "TableName": entry.get("tableName"),
            "Type": entry.get("type"),
        }
        try:
            optimizer = _found(svc, optimizers, asked)
        except GlueApiError as exc:
            failures.append(
                {
                    "error": {"ErrorCode": exc.code, "ErrorMessage": exc.message},
                    "catalogId": CATALOG_ID,
                    "databaseName": asked["DatabaseName"],
                    "tableName": asked["TableName"],
                    "type": asked["Type"],
                }
            )
            continue
        found.append(
            {
                "catalogId": CATALOG_ID,
                "databaseName": optimizer.database,
                "tableName": optimizer.table,
                "tableOptimizer": _optimizer_doc(optimizers, optimizer),
            }
        )
    return {"TableOptimizers": found, "Failures": failures}


@handler("ListTableOptimizerRuns")
def list_table_optimizer_runs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    optimizers = _optimizers(svc)
    optimizer = _found(svc, optimizers, p)
    runs = [_run_doc(r) for r in optimizers.runs(optimizer.database, optimizer.table, optimizer.kind)]
    chunk, token = page(runs, p)
    return {
        "CatalogId": CATALOG_ID,
        "DatabaseName": optimizer.database,
        "TableName": optimizer.table,
        "TableOptimizerRuns": chunk,
        "NextToken": token,
    }


def _forget_table(svc: Service, operation: str, p: dict[str, Any]) -> None:
    """A deleted table's or database's optimizers go with it."""
    if operation not in ("DeleteTable", "DeleteDatabase", "BatchDeleteTable"):
        return
    database = (p.get("DatabaseName") or p.get("Name") or "").lower()
    names = {
        n.lower() for n in p.get("TablesToDelete") or ([p["Name"]] if operation == "DeleteTable" else [])
    }
    optimizers = _optimizers(svc)
    for optimizer in optimizers.all():
        if optimizer.database == database and (operation == "DeleteDatabase" or optimizer.table in names):
            optimizers.delete(optimizer.database, optimizer.table, optimizer.kind)


AFTER.append(_forget_table)
