"""Athena's API (``X-Amz-Target: AmazonAthena.<Operation>``, AWS JSON 1.1, signed as
every request here): query executions over the application's Athena engine
(:mod:`sparkmark.athena.engine`), their results read back from the result location,
workgroups, named queries, prepared statements, and the Glue catalog as Athena's
``AwsDataCatalog``. Request and answer shapes are botocore's model of Athena.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from ..athena.engine import millis
from ..athena.records import ENDED, PRIMARY, SUCCEEDED, NamedQuery, QueryRecord, WorkGroup
from ..engine.schema import utcnow
from ..errors import AlreadyExists, NotFound, SparkmarkError
from .protocol import GlueApiError
from .service import Handler, Service, handler, page

CATALOG = "AwsDataCatalog"
ENGINE = {"SelectedEngineVersion": "AUTO", "EffectiveEngineVersion": "Athena engine version 3"}
NO_OUTPUT = (
    "No output location provided. An output location is required either through the Workgroup "
    "result configuration setting or as an API input."
)


def _invalid(message: str) -> GlueApiError:
    return GlueApiError("InvalidRequestException", message)


def athena(name: str) -> Callable[[Handler], Handler]:
    """Register an Athena operation; sparkmark's errors answer as Athena's
    InvalidRequestException (its ResourceNotFoundException only where the model says)."""

    def register(fn: Handler) -> Handler:
        def wrapped(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
            try:
                return fn(svc, p)
            except (NotFound, AlreadyExists, SparkmarkError) as exc:
                raise _invalid(str(exc)) from None

        return handler(name, "athena")(wrapped)

    return register


def _catalog(name: str | None) -> None:
    if name and name.lower() != CATALOG.lower():
        raise _invalid(f"Catalog {name} is not found: sparkmark's Athena has one catalog, {CATALOG}")


# ---------------------------------------------------------------------- queries
def _location(group: WorkGroup, given: str | None) -> str:
    config = group.configuration
    own = (config.get("ResultConfiguration") or {}).get("OutputLocation")
    location = own if (config.get("EnforceWorkGroupConfiguration") and own) else (given or own)
    if not location:
        raise _invalid(NO_OUTPUT)
    if not re.match(r"^(s3|file)://", location) and not location.startswith("/"):
        raise _invalid(f"OutputLocation {location} is not an s3:// (or local file://) location")
    return location


_EXECUTE = re.compile(
    r"^\s*EXECUTE\s+(?P<name>[A-Za-z_][\w]*)(\s+USING\s+(?P<using>.*?))?\s*;?\s*$", re.S | re.I
)


def _prepared(
    svc: Service, sql: str, group: str, parameters: list[str] | None
) -> tuple[str, list[str] | None]:
    """``EXECUTE name [USING v, …]``: the prepared statement's text and its values."""
    found = _EXECUTE.match(sql)
    if found is None:
        return sql, parameters
    statement = svc.athena.store.prepared(group, found.group("name"))
    if found.group("using"):
        import sqlglot

        values = sqlglot.parse_one("SELECT " + found.group("using"), read="trino").expressions
        parameters = [v.sql(dialect="trino") for v in values]
    return statement.query, parameters


@athena("StartQueryExecution")
def start_query_execution(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    context = p.get("QueryExecutionContext") or {}
    _catalog(context.get("Catalog"))
    group = svc.athena.store.workgroup(p.get("WorkGroup") or PRIMARY)
    if group.state != "ENABLED":
        raise _invalid(f"WorkGroup {group.name} is disabled.")
    location = _location(group, (p.get("ResultConfiguration") or {}).get("OutputLocation"))
    sql, parameters = _prepared(svc, p["QueryString"], group.name, p.get("ExecutionParameters"))
    record = svc.athena.start(
        str(uuid.uuid4()),
        sql,
        workgroup=group.name,
        database=context.get("Database"),
        catalog=context.get("Catalog"),
        output_location=location,
        parameters=parameters,
        request_token=p.get("ClientRequestToken"),
    )
    return {"QueryExecutionId": record.id}


def _result_file(record: QueryRecord) -> str | None:
    kind = (record.outcome.get("order") or {}).get("kind")
    if record.output_location is None:
        return None
    if kind == "query":
        return record.output_location + ".csv"
    if kind in ("show", "ddl"):
        return record.output_location + ".txt"
    return record.output_location


def query_doc(record: QueryRecord) -> dict[str, Any]:
    status: dict[str, Any] = {"State": record.state, "SubmissionDateTime": record.submitted}
    if record.completed is not None:
        status["CompletionDateTime"] = record.completed
    if record.reason:
        status["StateChangeReason"] = record.reason
    if record.state == "FAILED":
        status["AthenaError"] = {
            "ErrorCategory": record.error_category or 2,
            "ErrorType": 1000 if (record.error_category or 2) == 2 else 401,
            "Retryable": False,
            "ErrorMessage": record.reason or "",
        }
    outcome = record.outcome
    timings = outcome.get("timings") or {}  # what each part took in the engine's Spark
    engine = millis(record.started, record.completed)
    queued = millis(record.submitted, record.started or record.completed)
    stats: dict[str, Any] = {
        "EngineExecutionTimeInMillis": engine,
        "DataScannedInBytes": int(outcome.get("scanned") or 0),
        "TotalExecutionTimeInMillis": millis(record.submitted, record.completed),
        "QueryQueueTimeInMillis": queued,
        "ServicePreProcessingTimeInMillis": int(timings.get("setup", 0)),
        "QueryPlanningTimeInMillis": int(timings.get("planning", 0)),
        "ServiceProcessingTimeInMillis": int(timings.get("writing", 0)) + int(timings.get("statistics", 0)),
        "ResultReuseInformation": {"ReusedPreviousResult": False},
    }
    if outcome.get("manifest"):
        stats["DataManifestLocation"] = outcome["manifest"]
    doc: dict[str, Any] = {
        "QueryExecutionId": record.id,
        "Query": record.query,
        "StatementType": record.statement_type,
        "Status": status,
        "Statistics": stats,
        "WorkGroup": record.workgroup,
        "EngineVersion": ENGINE,
        "QueryExecutionContext": {
            k: v for k, v in (("Database", record.database), ("Catalog", record.catalog)) if v
        },
    }
    location = _result_file(record)
    if location:
        doc["ResultConfiguration"] = {"OutputLocation": location}
    return doc


@athena("GetQueryExecution")
def get_query_execution(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"QueryExecution": query_doc(svc.athena.store.query(p["QueryExecutionId"]))}


@athena("BatchGetQueryExecution")
def batch_get_query_execution(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found, missing = [], []
    for query_id in p["QueryExecutionIds"]:
        try:
            found.append(query_doc(svc.athena.store.query(query_id)))
        except NotFound as exc:
            missing.append(
                {"QueryExecutionId": query_id, "ErrorCode": "INVALID_INPUT", "ErrorMessage": str(exc)}
            )
    return {"QueryExecutions": found, "UnprocessedQueryExecutionIds": missing}


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    """Glue's paging, as Athena's lists page: 50 a page at most, and a token this endpoint
    did not give is Athena's InvalidRequestException."""
    try:
        return page(items, p, default=50, most=50)
    except GlueApiError as exc:
        raise _invalid(exc.message) from None


@athena("ListQueryExecutions")
def list_query_executions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    group = svc.athena.store.workgroup(p.get("WorkGroup") or PRIMARY)
    ids = [q.id for q in svc.athena.store.queries(workgroup=group.name)]
    chunk, token = _page(ids, p)
    return {"QueryExecutionIds": chunk, "NextToken": token}


@athena("StopQueryExecution")
def stop_query_execution(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.athena.stop(p["QueryExecutionId"])
    return {}


@athena("GetQueryResults")
def get_query_results(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    record = svc.athena.store.query(p["QueryExecutionId"])
    if record.state != SUCCEEDED:
        if record.state in ENDED:
            raise _invalid(f"Query did not finish successfully. Final query state: {record.state}")
        raise _invalid(f"Query has not yet finished. Current state: {record.state}")
    outcome = record.outcome
    columns = outcome.get("columns") or []
    answer: dict[str, Any] = {
        "ResultSet": {"Rows": [], "ResultSetMetadata": {"ColumnInfo": columns}},
    }
    if "update_count" in outcome:
        answer["UpdateCount"] = int(outcome["update_count"])
    if not outcome.get("file") or not columns:
        return answer
    start = int(p.get("NextToken") or 0)
    size = min(int(p.get("MaxResults") or 1000), 1000)
    try:
        rows, more = svc.athena.result_rows(record, start, size)
    except FileNotFoundError:
        raise _invalid(f"the query's result file {outcome['file']} is gone") from None
    answer["ResultSet"]["Rows"] = [
        {"Data": [{"VarCharValue": v} if v is not None else {} for v in r]} for r in rows
    ]
    if more:
        answer["NextToken"] = str(start + size)
    return answer


# ---------------------------------------------------------------------- workgroups
def _group_doc(group: WorkGroup) -> dict[str, Any]:
    config = {
        "EnforceWorkGroupConfiguration": False,
        "PublishCloudWatchMetricsEnabled": False,
        **group.configuration,
    }
    doc: dict[str, Any] = {
        "Name": group.name,
        "State": group.state,
        "Configuration": {**config, "EngineVersion": ENGINE},
        "CreationTime": group.created,
    }
    if group.description:
        doc["Description"] = group.description
    return doc


@athena("CreateWorkGroup")
def create_work_group(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    config = dict(p.get("Configuration") or {})
    config.pop("EngineVersion", None)
    svc.athena.store.put_workgroup(
        WorkGroup(p["Name"], p.get("Description"), "ENABLED", config, utcnow()), create=True
    )
    return {}


@athena("GetWorkGroup")
def get_work_group(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"WorkGroup": _group_doc(svc.athena.store.workgroup(p["WorkGroup"]))}


@athena("ListWorkGroups")
def list_work_groups(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    docs = [
        {"Name": g.name, "State": g.state, "CreationTime": g.created, "EngineVersion": ENGINE}
        | ({"Description": g.description} if g.description else {})
        for g in svc.athena.store.workgroups()
    ]
    chunk, token = _page(docs, p)
    return {"WorkGroups": chunk, "NextToken": token}


@athena("UpdateWorkGroup")
def update_work_group(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    group = svc.athena.store.workgroup(p["WorkGroup"])
    config = dict(group.configuration)
    updates = dict(p.get("ConfigurationUpdates") or {})
    result = dict(config.get("ResultConfiguration") or {})
    changes = updates.pop("ResultConfigurationUpdates", None) or {}
    if changes.get("RemoveOutputLocation"):
        result.pop("OutputLocation", None)
    if changes.get("OutputLocation"):
        result["OutputLocation"] = changes["OutputLocation"]
    config["ResultConfiguration"] = result
    for key in (
        "EnforceWorkGroupConfiguration",
        "PublishCloudWatchMetricsEnabled",
        "BytesScannedCutoffPerQuery",
    ):
        if key in updates:
            config[key] = updates[key]
    svc.athena.store.put_workgroup(
        WorkGroup(
            group.name,
            p.get("Description", group.description),
            p.get("State", group.state),
            config,
            group.created,
        ),
        create=False,
    )
    return {}


@athena("DeleteWorkGroup")
def delete_work_group(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    if p["WorkGroup"] == PRIMARY:
        raise _invalid("The primary workgroup cannot be deleted")
    store = svc.athena.store
    if not p.get("RecursiveDeleteOption") and (
        store.all_named(p["WorkGroup"]) or store.all_prepared(p["WorkGroup"])
    ):
        raise _invalid(f"WorkGroup {p['WorkGroup']} is not empty: delete it with RecursiveDeleteOption")
    store.delete_workgroup(p["WorkGroup"])
    return {}


# ---------------------------------------------------------------------- named queries
def _named_doc(named: NamedQuery) -> dict[str, Any]:
    doc = {
        "NamedQueryId": named.id,
        "Name": named.name,
        "Database": named.database,
        "QueryString": named.query,
        "WorkGroup": named.workgroup,
    }
    return doc | ({"Description": named.description} if named.description else {})


@athena("CreateNamedQuery")
def create_named_query(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    group = svc.athena.store.workgroup(p.get("WorkGroup") or PRIMARY)
    token = p.get("ClientRequestToken")
    named_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{group.name}/{token}")) if token else str(uuid.uuid4())
    try:
        svc.athena.store.named(named_id)
        return {"NamedQueryId": named_id}  # the same request again
    except NotFound:
        pass
    svc.athena.store.add_named(
        NamedQuery(named_id, p["Name"], p.get("Description"), p["Database"], p["QueryString"], group.name)
    )
    return {"NamedQueryId": named_id}


@athena("GetNamedQuery")
def get_named_query(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"NamedQuery": _named_doc(svc.athena.store.named(p["NamedQueryId"]))}


@athena("BatchGetNamedQuery")
def batch_get_named_query(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    found, missing = [], []
    for named_id in p["NamedQueryIds"]:
        try:
            found.append(_named_doc(svc.athena.store.named(named_id)))
        except NotFound as exc:
            missing.append({"NamedQueryId": named_id, "ErrorCode": "INVALID_INPUT", "ErrorMessage": str(exc)})
    return {"NamedQueries": found, "UnprocessedNamedQueryIds": missing}


@athena("ListNamedQueries")
def list_named_queries(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    group = svc.athena.store.workgroup(p.get("WorkGroup") or PRIMARY)
    chunk, token = _page([n.id for n in svc.athena.store.all_named(group.name)], p)
    return {"NamedQueryIds": chunk, "NextToken": token}


@athena("UpdateNamedQuery")
def update_named_query(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.athena.store.update_named(
        p["NamedQueryId"], name=p["Name"], query=p["QueryString"], description=p.get("Description")
    )
    return {}


@athena("DeleteNamedQuery")
def delete_named_query(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.athena.store.delete_named(p["NamedQueryId"])
    return {}


# ---------------------------------------------------------------------- prepared statements
@athena("CreatePreparedStatement")
def create_prepared_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    group = svc.athena.store.workgroup(p["WorkGroup"])
    svc.athena.store.put_prepared(
        group.name, p["StatementName"], p["QueryStatement"], p.get("Description"), create=True
    )
    return {}


@athena("UpdatePreparedStatement")
def update_prepared_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.athena.store.put_prepared(
        p["WorkGroup"], p["StatementName"], p["QueryStatement"], p.get("Description"), create=False
    )
    return {}


def _prepared_doc(found: Any) -> dict[str, Any]:
    doc = {
        "StatementName": found.name,
        "QueryStatement": found.query,
        "WorkGroupName": found.workgroup,
        "LastModifiedTime": found.updated,
    }
    return doc | ({"Description": found.description} if found.description else {})


@athena("GetPreparedStatement")
def get_prepared_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"PreparedStatement": _prepared_doc(svc.athena.store.prepared(p["WorkGroup"], p["StatementName"]))}


@athena("ListPreparedStatements")
def list_prepared_statements(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    docs = [
        {"StatementName": s.name, "LastModifiedTime": s.updated}
        for s in svc.athena.store.all_prepared(p["WorkGroup"])
    ]
    chunk, token = _page(docs, p)
    return {"PreparedStatements": chunk, "NextToken": token}


@athena("DeletePreparedStatement")
def delete_prepared_statement(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.athena.store.delete_prepared(p["WorkGroup"], p["StatementName"])
    return {}


# ---------------------------------------------------------------------- the catalog
@athena("ListDataCatalogs")
def list_data_catalogs(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"DataCatalogsSummary": [{"CatalogName": CATALOG, "Type": "GLUE"}]}


@athena("GetDataCatalog")
def get_data_catalog(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _catalog(p["Name"])
    return {"DataCatalog": {"Name": CATALOG, "Type": "GLUE", "Parameters": {"catalog-id": "000000000000"}}}


def _database_doc(svc: Service, name: str) -> dict[str, Any]:
    db = svc.catalog.database(name)
    doc: dict[str, Any] = {"Name": db.name, "Parameters": dict(db.parameters)}
    return doc | ({"Description": db.description} if db.description else {})


@athena("ListDatabases")
def list_databases(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _catalog(p["CatalogName"])
    docs = [_database_doc(svc, name) for name in svc.catalog.databases()]
    chunk, token = _page(docs, p)
    return {"DatabaseList": chunk, "NextToken": token}


@athena("GetDatabase")
def get_database(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _catalog(p["CatalogName"])
    try:
        return {"Database": _database_doc(svc, p["DatabaseName"])}
    except NotFound:
        raise GlueApiError("MetadataException", f"Database {p['DatabaseName']} not found.") from None


def _table_doc(table: Any) -> dict[str, Any]:
    def columns(cols: Any) -> list[dict[str, str]]:
        return [{"Name": c.name, "Type": c.type} for c in cols]

    return {
        "Name": table.name,
        "TableType": "EXTERNAL_TABLE",
        "Columns": columns(table.columns),
        "PartitionKeys": columns(table.partition_keys),
        "Parameters": {
            **table.parameters,
            "location": table.location,
            "classification": table.classification,
        },
    }


@athena("ListTableMetadata")
def list_table_metadata(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _catalog(p["CatalogName"])
    try:
        tables = svc.catalog.tables(p["DatabaseName"])
    except NotFound:
        raise GlueApiError("MetadataException", f"Database {p['DatabaseName']} not found.") from None
    pattern = p.get("Expression")
    if pattern:
        regex = re.compile(pattern.replace("*", ".*"), re.I)
        tables = [t for t in tables if regex.fullmatch(t.name)]
    chunk, token = _page([_table_doc(t) for t in tables], p)
    return {"TableMetadataList": chunk, "NextToken": token}


@athena("GetTableMetadata")
def get_table_metadata(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    _catalog(p["CatalogName"])
    try:
        return {"TableMetadata": _table_doc(svc.catalog.table(p["DatabaseName"], p["TableName"]))}
    except NotFound:
        raise GlueApiError(
            "MetadataException", f"Table {p['TableName']} not found in database {p['DatabaseName']}."
        ) from None


# ---------------------------------------------------------------------- the REST protocol
# Athena is also served over REST-JSON, the protocol newer AWS SDKs use for it (botocore's
# model of Athena from 1.44 on): each operation at its method and path, members named in
# the path and the query string, the rest a JSON body, the answer the same JSON.
REST_ROUTES: dict[str, tuple[str, str]] = {
    "BatchGetNamedQuery": ("POST", "/batch-get-named-queries"),
    "BatchGetQueryExecution": ("POST", "/batch-get-query-executions"),
    "CreateNamedQuery": ("POST", "/named-queries"),
    "CreatePreparedStatement": ("POST", "/workgroups/{WorkGroup}/prepared-statements"),
    "CreateWorkGroup": ("POST", "/workgroups"),
    "DeleteNamedQuery": ("DELETE", "/named-queries/{NamedQueryId}"),
    "DeletePreparedStatement": ("DELETE", "/workgroups/{WorkGroup}/prepared-statements/{StatementName}"),
    "DeleteWorkGroup": ("DELETE", "/workgroups/{WorkGroup}"),
    "GetDataCatalog": ("GET", "/data-catalogs/{Name}"),
    "GetDatabase": ("GET", "/data-catalogs/{CatalogName}/databases/{DatabaseName}"),
    "GetNamedQuery": ("GET", "/named-queries/{NamedQueryId}"),
    "GetPreparedStatement": ("GET", "/workgroups/{WorkGroup}/prepared-statements/{StatementName}"),
    "GetQueryExecution": ("GET", "/query-executions/{QueryExecutionId}"),
    "GetQueryResults": ("GET", "/query-executions/{QueryExecutionId}/results"),
    "GetTableMetadata": ("GET", "/data-catalogs/{CatalogName}/databases/{DatabaseName}/tables/{TableName}"),
    "GetWorkGroup": ("GET", "/workgroups/{WorkGroup}"),
    "ListDataCatalogs": ("GET", "/data-catalogs"),
    "ListDatabases": ("GET", "/data-catalogs/{CatalogName}/databases"),
    "ListNamedQueries": ("GET", "/named-queries"),
    "ListPreparedStatements": ("GET", "/workgroups/{WorkGroup}/prepared-statements"),
    "ListQueryExecutions": ("GET", "/query-executions"),
    "ListTableMetadata": ("GET", "/data-catalogs/{CatalogName}/databases/{DatabaseName}/tables"),
    "ListWorkGroups": ("GET", "/workgroups"),
    "StartQueryExecution": ("POST", "/query-executions"),
    "StopQueryExecution": ("POST", "/query-executions/{QueryExecutionId}/stop"),
    "UpdateNamedQuery": ("PATCH", "/named-queries/{NamedQueryId}"),
    "UpdatePreparedStatement": ("PATCH", "/workgroups/{WorkGroup}/prepared-statements/{StatementName}"),
    "UpdateWorkGroup": ("PATCH", "/workgroups/{WorkGroup}"),
}


def rest_body(op: Any, path: dict[str, str], query: list[tuple[str, str]], body: bytes) -> bytes:
    """A REST request's members as the JSON body of the same operation in AWS JSON 1.1:
    the path's and the query string's (typed as the operation's input shape types them)
    over the body's."""
    import json

    from ..access import json_depth_ok

    try:
        document = json.loads(body or b"{}") if json_depth_ok(body) else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise GlueApiError("SerializationException", "the request body is not a JSON object")
    members = op.input_shape.members if op.input_shape is not None else {}
    for name, value in [*path.items(), *query]:
        shape = members.get(name)
        if shape is None:
            raise _invalid(f"{name} is not a parameter of {op.name}")
        kind = shape.type_name
        if kind == "integer":
            try:
                document[name] = int(value)
            except ValueError:
                raise _invalid(f"{name} must be an integer, got {value!r}") from None
        elif kind == "boolean":
            document[name] = value.lower() == "true"
        elif kind == "list":
            document.setdefault(name, []).append(value)
        else:
            document[name] = value
    return json.dumps(document).encode()
