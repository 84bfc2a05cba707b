"""Data Catalog operations: databases, tables, partitions and table versions.

They read and write sparkmark's catalog in the state store, which is what
``from_catalog``, ``write_dynamic_frame.from_catalog``, crawlers and the CLI use.
Names are kept in lower case, as Glue keeps them. A table's Glue-only fields
(description, owner, table type, column comments, SerDe) are kept beside it under the
``sparkmark.glue`` parameter, which the API never shows, and come back from GetTable.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from ..catalog.models import GLUE_KEY, Column, Database, Partition, Table
from ..catalog.partition_index import MAX_INDEXES, check_index, matching_partitions
from ..catalog.store import TableChanged
from ..errors import AlreadyExists, NotFound, SparkmarkError
from .protocol import GlueApiError, exists, invalid, not_found
from .service import CATALOG_ID, Service, handler, page

GROK_SERDE = "com.amazonaws.glue.serde.GrokSerDe"  # a grok classifier's tables, read as text lines
# classification → (InputFormat, OutputFormat, SerDe), as Glue's crawlers write them
FORMATS = {
    "csv": (
        "org.apache.hadoop.mapred.TextInputFormat",
        "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
    ),
    "json": (
        "org.apache.hadoop.mapred.TextInputFormat",
        "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        "org.openx.data.jsonserde.JsonSerDe",
    ),
    "parquet": (
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
    ),
    "orc": (
        "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
    ),
    "avro": (
        "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat",
        "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat",
        "org.apache.hadoop.hive.serde2.avro.AvroSerDe",
    ),
}


def _name(value: str) -> str:
    return value.lower()


# ------------------------------------------------------------------ databases


def _database_doc(db: Database) -> dict[str, Any]:
    return {
        "Name": db.name,
        "Description": db.description or None,
        "LocationUri": db.location_uri or None,
        "Parameters": db.parameters,
        "CreateTime": db.created_at,
        "CatalogId": CATALOG_ID,
    }


@handler("CreateDatabase")
def create_database(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    given = p["DatabaseInput"]
    db = Database(
        _name(given["Name"]),
        given.get("Description", ""),
        given.get("LocationUri", ""),
        dict(given.get("Parameters") or {}),
    )
    svc.catalog.put_database(db, create=True)  # AlreadyExists answers AlreadyExistsException
    return {}


@handler("GetDatabase")
def get_database(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    return {"Database": _database_doc(svc.catalog.database(_name(p["Name"])))}


@handler("GetDatabases")
def get_databases(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    docs = [_database_doc(svc.catalog.database(n)) for n in svc.catalog.databases()]
    chunk, token = page(docs, p)
    return {"DatabaseList": chunk, "NextToken": token}


@handler("UpdateDatabase")
def update_database(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    name = _name(p["Name"])
    svc.catalog.database(name)
    given = p["DatabaseInput"]
    if _name(given["Name"]) != name:
        raise invalid("renaming a database is not supported; DatabaseInput.Name must be its name")
    svc.catalog.put_database(
        Database(
            name,
            given.get("Description", ""),
            given.get("LocationUri", ""),
            dict(given.get("Parameters") or {}),
        ),
        create=False,
    )
    return {}


@handler("DeleteDatabase")
def delete_database(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    svc.catalog.drop_database(_name(p["Name"]))
    return {}


# ------------------------------------------------------------------ tables


def _columns(given: list[dict[str, Any]] | None) -> tuple[tuple[Column, ...], dict[str, str]]:
    cols, comments = [], {}
    for c in given or []:
        if not c.get("Type"):
            raise invalid(f"column {c['Name']!r} has no Type")
        cols.append(Column(c["Name"].lower(), c["Type"]))
        if c.get("Comment"):
            comments[c["Name"].lower()] = c["Comment"]
    return tuple(cols), comments


TABLE_FORMATS = ("iceberg", "delta", "hudi")  # open table formats: their files are theirs to name


def _classification(params: dict[str, str], sd: dict[str, Any]) -> str:
    if params.get("classification"):
        return params["classification"].lower()
    table_type = (params.get("table_type") or params.get("spark.sql.sources.provider") or "").lower()
    if table_type in TABLE_FORMATS:  # Iceberg's GlueCatalog writes table_type=ICEBERG
        return table_type
    serde = (sd.get("SerdeInfo") or {}).get("SerializationLibrary", "") or ""
    informat = sd.get("InputFormat", "") or ""
    if serde == GROK_SERDE:
        return "grok"
    for kind, (fmt_in, _out, lib) in FORMATS.items():
        if serde == lib or (informat == fmt_in and kind not in ("csv", "json")):
            return kind
    if "OpenCSVSerde" in serde or "LazySimpleSerDe" in serde:
        return "csv"
    if "json" in serde.lower():
        return "json"
    raise invalid(
        "the table's format is not known: set Parameters.classification (csv, json, parquet, orc, avro) "
        "or a SerDe sparkmark knows"
    )


def _reader_options(classification: str, sd: dict[str, Any]) -> dict[str, str]:
    """Spark reader options from the SerDe's parameters (delimiter, quote, header)."""
    serde = (sd.get("SerdeInfo") or {}).get("Parameters") or {}
    params = {**(sd.get("Parameters") or {}), **serde}
    out = {}
    if classification == "csv":
        sep = params.get("field.delim") or params.get("separatorChar")
        if sep:
            out["option.sep"] = sep
        if params.get("quoteChar"):
            out["option.quote"] = params["quoteChar"]
        if params.get("escapeChar"):
            out["option.escape"] = params["escapeChar"]
    if (sd.get("SerdeInfo") or {}).get("SerializationLibrary") == GROK_SERDE:
        if not serde.get("input.format"):
            raise invalid("a GrokSerDe table needs SerdeInfo.Parameters input.format (its grok pattern)")
        out.update({k: v for k, v in serde.items() if k in ("input.format", "input.grokCustomPatterns")})
    return out


def _stream_parameters(params: dict[str, Any], sd: dict[str, Any]) -> str | None:
    """A streaming table's kind (``typeOfData`` kafka or kinesis), with the stream's
    options copied into the table's parameters from the StorageDescriptor's, where
    Terraform and Glue's console put them (``topicName``, ``streamARN`` …)."""
    from ..sources.registry import STREAM_CONNECTION_TYPES, stream_accepts

    sd_params = dict(sd.get("Parameters") or {})
    kind = str(params.get("typeOfData") or sd_params.get("typeOfData") or "").lower()
    if kind not in STREAM_CONNECTION_TYPES:
        return None
    for key, value in sd_params.items():
        if key not in params and (key in ("typeOfData", "classification") or stream_accepts(kind, key)):
            params[key] = value
    return kind


def table_from_input(database: str, given: dict[str, Any]) -> Table:
    sd = given.get("StorageDescriptor") or {}
    params = dict(given.get("Parameters") or {})
    streaming = _stream_parameters(params, sd)
    classification = _classification(params, sd)
    columns, comments = _columns(sd.get("Columns"))
    keys, key_comments = _columns(given.get("PartitionKeys"))
    location = sd.get("Location") or ""
    if not location and streaming is None:
        raise invalid("StorageDescriptor.Location is required: sparkmark reads tables from their location")
    if params.get("skip.header.line.count") == "1" and classification == "csv":
        params["option.header"] = "true"
    glue = {
        "Description": given.get("Description"),
        "Owner": given.get("Owner"),
        "TableType": given.get("TableType") or "EXTERNAL_TABLE",
        "Retention": given.get("Retention"),
        "ViewOriginalText": given.get("ViewOriginalText"),
        "ViewExpandedText": given.get("ViewExpandedText"),
        "Comments": {**comments, **key_comments},
        "StorageDescriptor": {k: v for k, v in sd.items() if k not in ("Columns", "Location")},
        "Columns": sd.get("Columns") if classification in TABLE_FORMATS else None,
        # Parameters answer as given: a classification sparkmark derived (from the SerDe)
        # is kept for reading, not shown.
        "DerivedClassification": "classification" not in (given.get("Parameters") or {}),
    }
    params.update(_reader_options(classification, sd))
    params["classification"] = classification
    params[GLUE_KEY] = json.dumps(glue, default=str)
    return Table(database, _name(given["Name"]), location, classification, columns, keys, params)


def _glue_extra(table: Table) -> dict[str, Any]:
    try:
        return json.loads(table.parameters.get(GLUE_KEY, "{}"))
    except ValueError:
        return {}


def _storage(table: Table, location: str, extra: dict[str, Any], comments: dict[str, str]) -> dict[str, Any]:
    given = dict(extra.get("StorageDescriptor") or {})
    if table.classification in TABLE_FORMATS:  # the format's own descriptor, as its catalog wrote it
        return {**given, "Columns": extra.get("Columns") or [], "Location": location}
    fmt_in, fmt_out, lib = FORMATS.get(table.classification, FORMATS["csv"])
    serde = given.get("SerdeInfo") or {"SerializationLibrary": lib, "Parameters": {}}
    if not given.get("SerdeInfo") and table.parameters.get("option.sep"):
        serde["Parameters"] = {"field.delim": table.parameters["option.sep"]}
    if not given.get("SerdeInfo") and table.parameters.get("input.format"):  # a grok classifier's table
        serde = {
            "SerializationLibrary": GROK_SERDE,
            "Parameters": {k: v for k, v in table.parameters.items() if k.startswith("input.")},
        }
    return {
        **given,
        "Columns": [
            {"Name": c.name, "Type": c.type, **({"Comment": comments[c.name]} if c.name in comments else {})}
            for c in table.columns
        ],
        "Location": location,
        "InputFormat": given.get("InputFormat") or fmt_in,
        "OutputFormat": given.get("OutputFormat") or fmt_out,
        "SerdeInfo": serde,
        "Compressed": given.get("Compressed", False),
        "NumberOfBuckets": given.get("NumberOfBuckets", -1),
        "StoredAsSubDirectories": given.get("StoredAsSubDirectories", False),
    }


def table_doc(
    table: Table, version: int | None = None, times: tuple[datetime | None, datetime] | None = None
) -> dict[str, Any]:
    extra = _glue_extra(table)
    comments = extra.get("Comments") or {}
    params = {
        k: v
        for k, v in table.parameters.items()
        if not k.startswith(("sparkmark.", "option.", "input."))  # input.*: the grok SerDe's
    }
    if extra.get("DerivedClassification"):
        params.pop("classification", None)
    else:
        params.setdefault("classification", table.classification)
    doc = {
        "Name": table.name,
        "DatabaseName": table.database,
        "Description": extra.get("Description"),
        "Owner": extra.get("Owner"),
        "Retention": extra.get("Retention"),
        "TableType": extra.get("TableType") or "EXTERNAL_TABLE",
        "ViewOriginalText": extra.get("ViewOriginalText"),
        "ViewExpandedText": extra.get("ViewExpandedText"),
        "StorageDescriptor": _storage(table, table.location, extra, comments),
        "PartitionKeys": [
            {"Name": c.name, "Type": c.type, **({"Comment": comments[c.name]} if c.name in comments else {})}
            for c in table.partition_keys
        ],
        "Parameters": params,
        "CatalogId": CATALOG_ID,
        "IsRegisteredWithLakeFormation": False,
    }
    if times is not None:  # created: its first schema's time; updated: its last change
        doc["CreateTime"], doc["UpdateTime"] = times[0] or times[1], times[1]
    if version is not None:
        doc["VersionId"] = str(version)
    return doc


def _database(svc: Service, database: str) -> str:
    """The database's catalog name; EntityNotFoundException in Glue's words when absent."""
    db = _name(database)
    try:
        svc.catalog.database(db)
    except NotFound:
        raise not_found(f"Database {db} not found.") from None
    return db


def _table(svc: Service, database: str, name: str) -> Table:
    db, table = _database(svc, database), _name(name)
    try:
        return svc.catalog.table(db, table)
    except NotFound:
        raise not_found(f"Table {table} not found.") from None


@handler("CreateTable")
def create_table(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    db = _database(svc, p["DatabaseName"])
    table = table_from_input(db, p["TableInput"])
    table.parameters[VERSION_KEY] = "1"
    indexes = p.get("PartitionIndexes") or []
    for i, index in enumerate(indexes):  # all checked before the table is made
        check_index(table, index["Keys"], {x["IndexName"]: x["Keys"] for x in indexes[:i]})
    try:
        svc.catalog.put_table(table, new=True)
    except AlreadyExists:
        raise exists(f"Table {table.name} already exists.") from None
    for index in indexes:
        svc.catalog.create_partition_index(table.database, table.name, index["IndexName"], index["Keys"])
    return {}


@handler("CreatePartitionIndex")
def create_partition_index(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """An index over some partition keys, filled from the table's partitions at once
    (Glue backfills it and reports CREATING, then ACTIVE)."""
    table = _table(svc, p["DatabaseName"], p["TableName"])
    index = p["PartitionIndex"]
    existing = svc.catalog.partition_indexes(table.database, table.name)
    if index["IndexName"] in existing:
        raise exists(f"Partition index {index['IndexName']} already exists.")
    try:
        check_index(table, index["Keys"], existing)
    except SparkmarkError as exc:
        if len(existing) >= MAX_INDEXES:
            raise GlueApiError("ResourceNumberLimitExceededException", str(exc)) from None
        raise
    svc.catalog.create_partition_index(table.database, table.name, index["IndexName"], index["Keys"])
    return {}


@handler("GetPartitionIndexes")
def get_partition_indexes(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    types = {c.name: c.type for c in table.partition_keys}
    found = [
        {
            "IndexName": name,
            "Keys": [{"Name": k, "Type": types.get(k, "string")} for k in keys],
            "IndexStatus": "ACTIVE",
        }
        for name, keys in sorted(svc.catalog.partition_indexes(table.database, table.name).items())
    ]
    chunk, token = page(found, p)
    return {"PartitionIndexDescriptorList": chunk, "NextToken": token}


@handler("DeletePartitionIndex")
def delete_partition_index(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    svc.catalog.drop_partition_index(table.database, table.name, p["IndexName"])
    return {}


VERSION_KEY = "sparkmark.version_id"  # counts the table's changes: Glue's VersionId


def version_id(table: Table, schema_version: int | None) -> str | None:
    """The table's VersionId: it moves at every change (what UpdateTable's VersionId is
    checked against); a table written before it was counted has its schema version."""
    if VERSION_KEY in table.parameters:
        return table.parameters[VERSION_KEY]
    return str(schema_version) if schema_version is not None else None


@handler("UpdateTable")
def update_table(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """As Glue's: a VersionId given must be the table's current one (an optimistic lock,
    which Iceberg's GlueCatalog commits with), else ConcurrentModificationException."""
    given = p.get("TableInput")
    if not given:
        raise invalid("UpdateTable needs TableInput")
    old = _table(svc, p["DatabaseName"], given["Name"])
    versions = svc.catalog.versions(old.database, old.name)
    current = version_id(old, versions[-1].version if versions else None)
    if p.get("VersionId") is not None and p["VersionId"] != current:
        raise GlueApiError(
            "ConcurrentModificationException",
            f"Table {old.name} was changed by another writer: its VersionId is {current}, not {p['VersionId']}",
        )
    new = table_from_input(old.database, given)
    new.parameters[VERSION_KEY] = str(int(current or 0) + 1)
    try:  # the check above and this write as one: a writer in between fails here
        svc.catalog.put_table(new, replacing=old if p.get("VersionId") is not None else None)
    except TableChanged as exc:
        raise GlueApiError("ConcurrentModificationException", str(exc)) from None
    return {}


@handler("GetTable")
def get_table(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["Name"])
    versions = svc.catalog.versions(table.database, table.name)
    times = svc.catalog.times(table.database).get(table.name)
    doc = table_doc(table, versions[-1].version if versions else None, times)
    doc["VersionId"] = version_id(table, versions[-1].version if versions else None)
    return {"Table": doc}


@handler("GetTables")
def get_tables(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    from ..catalog.name_pattern import NamePattern

    db = _database(svc, p["DatabaseName"])
    tables = svc.catalog.tables(db)
    if p.get("Expression"):  # Glue's name pattern: `*` any run, `|` alternatives
        pattern = NamePattern(p["Expression"])
        tables = [t for t in tables if pattern.matches(t.name)]
    times = svc.catalog.times(db)
    chunk, token = page([table_doc(t, times=times.get(t.name)) for t in tables], p)
    return {"TableList": chunk, "NextToken": token}


@handler("DeleteTable")
def delete_table(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["Name"])
    svc.catalog.drop_table(table.database, table.name)
    return {}


@handler("GetTableVersions")
def get_table_versions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    from dataclasses import replace

    table = _table(svc, p["DatabaseName"], p["TableName"])
    docs = []
    for v in reversed(svc.catalog.versions(table.database, table.name)):  # newest first, as Glue
        then = replace(table, columns=v.columns, partition_keys=v.partition_keys)
        docs.append({"Table": table_doc(then, v.version), "VersionId": str(v.version)})
    chunk, token = page(docs, p)
    return {"TableVersions": chunk, "NextToken": token}


# ------------------------------------------------------------------ partitions


def _partition_doc(table: Table, part: Partition) -> dict[str, Any]:
    extra = _glue_extra(table)
    storage = _storage(table, part.location, extra, extra.get("Comments") or {})
    return {
        "Values": list(part.values),
        "DatabaseName": table.database,
        "TableName": table.name,
        "StorageDescriptor": storage,
        "Parameters": {},
        "CatalogId": CATALOG_ID,
    }


def _partition_from_input(table: Table, given: dict[str, Any]) -> Partition:
    values = tuple(str(v) for v in given.get("Values") or [])
    if len(values) != len(table.partition_keys):
        raise invalid(
            f"table {table.name} has {len(table.partition_keys)} partition keys; "
            f"the partition gives {len(values)} values"
        )
    location = (given.get("StorageDescriptor") or {}).get("Location")
    if not location:
        names = [c.name for c in table.partition_keys]
        location = (
            table.location.rstrip("/")
            + "/"
            + "/".join(f"{k}={v}" for k, v in zip(names, values, strict=True))
        )
    return Partition(values, location)


def _error(values: list[str], code: str, message: str) -> dict[str, Any]:
    return {"PartitionValues": values, "ErrorDetail": {"ErrorCode": code, "ErrorMessage": message}}


@handler("CreatePartition")
def create_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    out = batch_create_partition(svc, {**p, "PartitionInputList": [p["PartitionInput"]]})
    if out["Errors"]:
        detail = out["Errors"][0]["ErrorDetail"]
        raise (
            exists(detail["ErrorMessage"])
            if detail["ErrorCode"] == "AlreadyExistsException"
            else invalid(detail["ErrorMessage"])
        )
    return {}


@handler("BatchCreatePartition")
def batch_create_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    have = {part.values for part in svc.catalog.partitions(table.database, table.name)}
    errors, new = [], []
    for given in p["PartitionInputList"]:
        values = [str(v) for v in given.get("Values") or []]
        try:
            part = _partition_from_input(table, given)
        except Exception as exc:  # noqa: BLE001 - one bad partition is reported, the rest go in
            errors.append(_error(values, "InvalidInputException", getattr(exc, "message", str(exc))))
            continue
        if part.values in have:
            errors.append(_error(values, "AlreadyExistsException", "Partition already exists."))
            continue
        have.add(part.values)
        new.append(part)
    svc.catalog.put_partitions(table.database, table.name, new)
    return {"Errors": errors}


@handler("GetPartition")
def get_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    wanted = tuple(str(v) for v in p["PartitionValues"])
    for part in svc.catalog.partitions(table.database, table.name):
        if part.values == wanted:
            return {"Partition": _partition_doc(table, part)}
    raise not_found("Partition not found.")


@handler("GetPartitions")
def get_partitions(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    parts = matching_partitions(svc.catalog, table, p.get("Expression") or "")
    segment = p.get("Segment")
    if segment:  # Glue's parallel reads (Trino's, Athena's): each segment a disjoint share
        number, total = int(segment["SegmentNumber"]), int(segment["TotalSegments"])
        if not 0 <= number < total <= 10:
            raise invalid("Segment: SegmentNumber must be below TotalSegments, which is 1 to 10")
        parts = [part for i, part in enumerate(parts) if i % total == number]
    chunk, token = page([_partition_doc(table, part) for part in parts], p, default=1000)
    return {"Partitions": chunk, "NextToken": token}


@handler("BatchGetPartition")
def batch_get_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """The partitions of the values asked for (up to 1,000), in any order; values with no
    partition are left out, as Glue leaves them out (UnprocessedKeys is for throttling)."""
    table = _table(svc, p["DatabaseName"], p["TableName"])
    wanted = [tuple(str(v) for v in entry["Values"]) for entry in p.get("PartitionsToGet") or []]
    if len(wanted) > 1000:
        raise invalid("PartitionsToGet holds at most 1000 entries")
    current = {part.values: part for part in svc.catalog.partitions(table.database, table.name)}
    found = [_partition_doc(table, current[v]) for v in dict.fromkeys(wanted) if v in current]
    return {"Partitions": found, "UnprocessedKeys": []}


@handler("UpdatePartition")
def update_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    old = tuple(str(v) for v in p["PartitionValueList"])
    current = {part.values: part for part in svc.catalog.partitions(table.database, table.name)}
    if old not in current:
        raise not_found("Partition not found.")
    new = _partition_from_input(table, p["PartitionInput"])
    svc.catalog.drop_partitions(table.database, table.name, [current[old]])
    svc.catalog.put_partitions(table.database, table.name, [new])
    return {}


@handler("DeletePartition")
def delete_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    out = batch_delete_partition(svc, {**p, "PartitionsToDelete": [{"Values": p["PartitionValues"]}]})
    if out["Errors"]:
        raise not_found("Partition not found.")
    return {}


@handler("BatchDeletePartition")
def batch_delete_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    current = {part.values: part for part in svc.catalog.partitions(table.database, table.name)}
    errors, gone = [], []
    for item in p["PartitionsToDelete"]:
        values = tuple(str(v) for v in item["Values"])
        if values not in current:
            errors.append(_error(list(values), "EntityNotFoundException", "Partition not found."))
        else:
            gone.append(current[values])
    svc.catalog.drop_partitions(table.database, table.name, gone)
    return {"Errors": errors}


_TOKENS = re.compile(r"[^\w]+")


def _text_fields(doc: dict[str, Any]) -> list[str]:
    columns = (doc.get("StorageDescriptor") or {}).get("Columns") or []
    fields = [doc["Name"], doc["DatabaseName"], doc.get("Description") or ""]
    fields += [c.get("Name", "") for c in [*columns, *doc.get("PartitionKeys", [])]]
    fields += [c.get("Comment", "") for c in columns]
    return [f for f in fields if f]


def _predicate(doc: dict[str, Any], predicate: dict[str, Any]) -> bool:
    """One of SearchTables' Filters: a string field is split on punctuation into tokens
    and one token must equal the value (AWS's example: Name=link finds customer-link and
    xx-link-yy, not xxlinkyy); a time field is compared with the Comparator."""
    key, value, comparator = predicate.get("Key"), predicate.get("Value"), predicate.get("Comparator")
    if key in ("CreateTime", "UpdateTime"):
        from botocore.utils import parse_timestamp

        mine = doc.get(key)
        if mine is None or value is None:
            return False
        theirs = parse_timestamp(value)
        mine = mine if mine.tzinfo else mine.replace(tzinfo=theirs.tzinfo)
        compare = {
            "EQUALS": mine == theirs,
            "GREATER_THAN": mine > theirs,
            "LESS_THAN": mine < theirs,
            "GREATER_THAN_EQUALS": mine >= theirs,
            "LESS_THAN_EQUALS": mine <= theirs,
        }
        return compare.get(comparator or "EQUALS", False)
    found = doc.get(key) if key in doc else (doc.get("Parameters") or {}).get(str(key))
    if found is None or value is None:
        return False
    tokens = [t.lower() for t in _TOKENS.split(str(found)) if t]
    return str(value).lower() in tokens or str(found).lower() == str(value).lower()


@handler("SearchTables")
def search_tables(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """Tables of every database whose name, database, description or columns hold
    ``SearchText`` (a quoted text: one of them equal to it), that pass every filter."""
    docs = []
    for database in svc.catalog.databases():
        times = svc.catalog.times(database)
        docs += [table_doc(t, times=times.get(t.name)) for t in svc.catalog.tables(database)]
    text = (p.get("SearchText") or "").strip()
    if text:
        if len(text) > 1 and text[0] == text[-1] == '"':
            exact = text[1:-1].lower()
            docs = [d for d in docs if any(f.lower() == exact for f in _text_fields(d))]
        else:
            docs = [d for d in docs if any(text.lower() in f.lower() for f in _text_fields(d))]
    for predicate in p.get("Filters") or ():
        docs = [d for d in docs if _predicate(d, predicate)]
    for criterion in reversed(p.get("SortCriteria") or [{"FieldName": "Name"}]):
        field = criterion.get("FieldName") or "Name"
        docs.sort(key=lambda d: str(d.get(field) or ""), reverse=criterion.get("Sort") == "DESC")
    chunk, token = page(docs, p)
    return {"TableList": chunk, "NextToken": token}


# ------------------------------------------------------------------ column statistics


@handler("GetColumnStatisticsForTable")
def get_column_statistics_for_table(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    """No column statistics are kept: the table's columns have none to give (Trino and
    Athena ask before planning, and plan without them)."""
    table = _table(svc, p["DatabaseName"], p["TableName"])
    known = {c.name for c in (*table.columns, *table.partition_keys)}
    unknown = [c for c in p.get("ColumnNames") or [] if c.lower() not in known]
    if unknown:
        raise not_found(f"Column {unknown[0]} not found in table {table.qualified}.")
    return {"ColumnStatisticsList": [], "Errors": []}


@handler("GetColumnStatisticsForPartition")
def get_column_statistics_for_partition(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    table = _table(svc, p["DatabaseName"], p["TableName"])
    wanted = tuple(str(v) for v in p["PartitionValues"])
    if not any(part.values == wanted for part in svc.catalog.partitions(table.database, table.name)):
        raise not_found("Partition not found.")
    return {"ColumnStatisticsList": [], "Errors": []}
