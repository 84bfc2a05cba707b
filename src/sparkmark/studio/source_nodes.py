"""The writers of source nodes: S3 (CSV, JSON, Parquet, Delta), the Data Catalog (Iceberg and Delta tables too), JDBC and connectors, Kafka, Kinesis and DynamoDB."""

from __future__ import annotations

import json
from typing import Any

from ..errors import GraphError
from .graph import Node
from .script_parts import QUOTES, SEPARATORS, Script, call, lit


def _s3_connection(spec: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {"paths": list(spec["Paths"])}
    if spec.get("Recurse") is not None:
        options["recurse"] = bool(spec["Recurse"])
    for glue, ours in (
        ("GroupFiles", "groupFiles"),
        ("GroupSize", "groupSize"),
        ("CompressionType", "compressionType"),
    ):
        if spec.get(glue):
            options[ours] = spec[glue]
    if spec.get("Exclusions"):
        options["exclusions"] = json.dumps(list(spec["Exclusions"]))
    for glue, ours in (("MaxBand", "maxBand"), ("MaxFilesInBand", "maxFilesInBand")):
        if spec.get(glue) is not None:
            options[ours] = spec[glue]
    extra = spec.get("AdditionalOptions") or {}
    for glue, ours in (("BoundedFiles", "boundedFiles"), ("BoundedSize", "boundedSize")):
        if extra.get(glue) is not None:
            options[ours] = extra[glue]
    return options


def _from_s3(var: str, fmt: str, format_options: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    return call(
        var,
        "glueContext.create_dynamic_frame.from_options",
        {
            "format_options": lit(format_options),
            "connection_type": lit("s3"),
            "format": lit(fmt),
            "connection_options": lit(_s3_connection(spec)),
            "transformation_ctx": lit(var),
        },
    )


def s3_csv(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    options: dict[str, Any] = {
        "quoteChar": QUOTES[spec["QuoteChar"]],
        "withHeader": bool(spec.get("WithHeader", False)),
        "separator": SEPARATORS[spec["Separator"]],
    }
    if spec.get("Escaper"):
        options["escaper"] = spec["Escaper"]
    for glue, ours in (
        ("Multiline", "multiline"),
        ("SkipFirst", "skipFirst"),
        ("OptimizePerformance", "optimizePerformance"),
    ):
        if spec.get(glue) is not None:
            options[ours] = bool(spec[glue])
    return _from_s3(var, "csv", options, spec)


def s3_json(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    options: dict[str, Any] = {"multiline": bool(node.spec.get("Multiline", False))}
    if node.spec.get("JsonPath"):
        options["jsonPath"] = node.spec["JsonPath"]
    return _from_s3(var, "json", options, node.spec)


def s3_parquet(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    return _from_s3(var, "parquet", {}, node.spec)


def catalog_source(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    arguments = {"database": lit(spec["Database"]), "table_name": lit(spec["Table"])}
    if spec.get("PartitionPredicate"):
        arguments["push_down_predicate"] = lit(spec["PartitionPredicate"])
    extra = {
        ours: spec["AdditionalOptions"][glue]
        for glue, ours in (("BoundedFiles", "boundedFiles"), ("BoundedSize", "boundedSize"))
        if (spec.get("AdditionalOptions") or {}).get(glue) is not None
    }
    if extra:
        arguments["additional_options"] = lit(extra)
    arguments["transformation_ctx"] = lit(var)
    return call(var, "glueContext.create_dynamic_frame.from_catalog", arguments)


def _no_format_options(node: Node, key: str) -> None:
    if node.spec.get(key):
        raise GraphError(
            [f"{node.label()}: {key} {sorted(node.spec[key])} are not applied by sparkmark yet; remove them"]
        )


def table_catalog_source(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """An Iceberg or Delta table of the catalog, read with its own bookmark (by snapshot or
    version, beyond Glue: docs/table-formats.md)."""
    _no_format_options(
        node, "AdditionalIcebergOptions" if "Iceberg" in node.type else "AdditionalDeltaOptions"
    )
    spec = node.spec
    arguments = {
        "database": lit(spec["Database"]),
        "table_name": lit(spec["Table"]),
        "transformation_ctx": lit(var),
    }
    return call(var, "glueContext.create_dynamic_frame.from_catalog", arguments)


def s3_delta_source(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    _no_format_options(node, "AdditionalDeltaOptions")
    paths = list(node.spec["Paths"])
    if len(paths) != 1:
        raise GraphError([f"{node.label()}: a Delta source reads one table: give one path, not {len(paths)}"])
    return call(
        var,
        "glueContext.create_dynamic_frame.from_options",
        {
            "connection_type": lit("s3"),
            "format": lit("delta"),
            "connection_options": lit({"path": paths[0]}),
            "transformation_ctx": lit(var),
        },
    )


def direct_jdbc(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    options = {
        "useConnectionProperties": "true",
        "dbtable": spec["Table"],
        "connectionName": spec["ConnectionName"],
    }
    if spec.get("RedshiftTmpDir"):
        options["redshiftTmpDir"] = spec["RedshiftTmpDir"]
    return call(
        var,
        "glueContext.create_dynamic_frame.from_options",
        {
            "connection_type": lit(spec["ConnectionType"]),
            "connection_options": lit(options),
            "transformation_ctx": lit(var),
        },
    )


JDBC_CONNECTOR_OPTIONS = {
    "FilterPredicate": "filterPredicate",
    "PartitionColumn": "partitionColumn",
    "LowerBound": "lowerBound",
    "UpperBound": "upperBound",
    "NumPartitions": "numPartitions",
    "JobBookmarkKeys": "jobBookmarkKeys",
    "JobBookmarkKeysSortOrder": "jobBookmarkKeysSortOrder",
    "DataTypeMapping": "dataTypeMapping",
}


def jdbc_connector(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    options: dict[str, Any] = {"connectionName": spec["ConnectionName"]}
    if spec.get("Query"):
        options["query"] = spec["Query"]
    elif spec.get("ConnectionTable"):
        options["dbTable"] = spec["ConnectionTable"]
    for glue, ours in JDBC_CONNECTOR_OPTIONS.items():
        value = (spec.get("AdditionalOptions") or {}).get(glue)
        if value is not None:
            options[ours] = value
    kind = (
        spec["ConnectionType"]
        if spec["ConnectionType"] in ("custom.jdbc", "marketplace.jdbc")
        else "custom.jdbc"
    )
    return call(
        var,
        "glueContext.create_dynamic_frame.from_options",
        {"connection_type": lit(kind), "connection_options": lit(options), "transformation_ctx": lit(var)},
    )


# ------------------------------------------------------------------ streaming sources


# Glue's connection option names where they are not the field's name in lower camel case.
STREAMING_OPTION_NAMES = {
    "BootstrapServers": "bootstrap.servers",
    "SecurityProtocol": "security.protocol",
    "StreamArn": "streamARN",
    "RoleArn": "awsSTSRoleARN",
    "RoleSessionName": "awsSTSSessionName",
}


STREAMING = {"DirectKafkaSource": "kafka", "DirectKinesisSource": "kinesis"}


def streaming_source(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """A streaming source is read as a streaming DataFrame (``dataframe_<var>``); the
    rest of the graph runs on each micro-batch (see :func:`generate`)."""
    options: dict[str, Any] = {}
    for key, value in (node.spec.get("StreamingOptions") or {}).items():
        name = STREAMING_OPTION_NAMES.get(key, key[0].lower() + key[1:])
        options[name] = str(value).lower() if isinstance(value, bool) else str(value)
    if options.get("startingPosition") == "timestamp" and options.get("startingTimestamp"):
        options["startingPosition"] = options.pop("startingTimestamp")  # Kinesis: an ISO time
    if node.spec.get("DetectSchema", True):
        options["inferSchema"] = "true"
    options.setdefault("classification", "json")
    return call(
        f"dataframe_{var}",
        "glueContext.create_data_frame.from_options",
        {
            "connection_type": lit(STREAMING[node.type]),
            "connection_options": lit(options),
            "transformation_ctx": lit(var),
        },
    )


# ------------------------------------------------------------------ transforms


DYNAMODB_OPTIONS = {  # the visual node's names → Glue's DynamoDB connection options
    "DynamodbExport": "dynamodb.export",
    "DynamodbUnnestDDBJson": "dynamodb.unnestDDBJson",
    "DynamodbTableArn": "dynamodb.tableArn",
    "DynamodbS3Bucket": "dynamodb.s3.bucket",
    "DynamodbS3Prefix": "dynamodb.s3.prefix",
    "DynamodbS3BucketOwner": "dynamodb.s3.bucketOwner",
    "DynamodbStsRoleArn": "dynamodb.sts.roleArn",
}


def _dynamodb_options(given: dict[str, Any]) -> dict[str, Any]:
    return {DYNAMODB_OPTIONS[k]: v for k, v in given.items() if k in DYNAMODB_OPTIONS and v not in (None, "")}


def dynamodb_catalog_source(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """A crawled DynamoDB table: read through the catalog, by Scan, or by an export when
    the node asks for one (its bucket and prefix then default to the job's TempDir)."""
    spec = node.spec
    arguments = {"database": lit(spec["Database"]), "table_name": lit(spec["Table"])}
    extra = _dynamodb_options(spec.get("AdditionalOptions") or {})
    if extra:
        arguments["additional_options"] = lit(extra)
    arguments["transformation_ctx"] = lit(var)
    return call(var, "glueContext.create_dynamic_frame.from_catalog", arguments)


def dynamodb_connector_source(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """A DynamoDB table by its ARN: the export connector with ``DynamodbExport``, else a Scan."""
    options = _dynamodb_options(node.spec.get("ConnectionOptions") or {})
    if "dynamodb.tableArn" not in options:
        raise GraphError([f"{node.label()}: ConnectionOptions needs DynamodbTableArn"])
    if "dynamodb.export" not in options:
        options = {"dynamodb.input.tableName": options.pop("dynamodb.tableArn"), **options}
    arguments = {
        "connection_type": lit("dynamodb"),
        "connection_options": lit(options),
        "transformation_ctx": lit(var),
    }
    return call(var, "glueContext.create_dynamic_frame.from_options", arguments)
