"""The writers of target nodes: S3 in a format or as Glue's Parquet, the Data Catalog (Iceberg and Delta tables too), and Delta folders."""

from __future__ import annotations

from typing import Any

from ..errors import GraphError
from .graph import Node
from .script_parts import DIRECT_FORMATS, Script, call, lit, path


def _partition_keys(spec: dict[str, Any]) -> list[str]:
    return [path(k) for k in spec.get("PartitionKeys") or []]


def s3_direct(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    fmt = spec["Format"]
    if fmt not in DIRECT_FORMATS:
        raise GraphError(
            [
                f"{node.label()}: S3DirectTarget Format {fmt!r} is not written by sparkmark (it writes {', '.join(sorted(DIRECT_FORMATS))})"
            ]
        )
    connection: dict[str, Any] = {"path": spec["Path"], "partitionKeys": _partition_keys(spec)}
    format_options: dict[str, Any] = {}
    if spec.get("Compression"):
        if fmt in ("parquet", "orc", "avro"):
            format_options["compression"] = spec["Compression"]
        else:
            connection["compression"] = spec["Compression"]
    return _write_s3(var, inputs[0], fmt, connection, format_options, spec)


def s3_glue_parquet(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    connection = {"path": spec["Path"], "partitionKeys": _partition_keys(spec)}
    return _write_s3(
        var, inputs[0], "glueparquet", connection, {"compression": spec.get("Compression") or "snappy"}, spec
    )


def _write_s3(
    var: str, frame: str, fmt: str, connection: dict, format_options: dict, spec: dict
) -> list[str]:
    policy = spec.get("SchemaChangePolicy") or {}
    if policy.get("EnableUpdateCatalog"):
        lines = call(
            var,
            "glueContext.getSink",
            {
                "path": lit(connection["path"]),
                "connection_type": lit("s3"),
                "updateBehavior": lit(policy.get("UpdateBehavior") or "UPDATE_IN_DATABASE"),
                "partitionKeys": lit(connection["partitionKeys"]),
                "enableUpdateCatalog": "True",
                "transformation_ctx": lit(var),
            },
        )
        lines.append(
            f"{var}.setCatalogInfo(catalogDatabase={lit(policy.get('Database'))}, catalogTableName={lit(policy.get('Table'))})"
        )
        extra = "".join(f", {k}={lit(v)}" for k, v in format_options.items())
        lines += [f"{var}.setFormat({lit(fmt)}{extra})", f"{var}.writeFrame({frame})"]
        return lines
    arguments = {
        "frame": frame,
        "connection_type": lit("s3"),
        "format": lit(fmt),
        "connection_options": lit(connection),
    }
    if format_options:
        arguments["format_options"] = lit(format_options)
    arguments["transformation_ctx"] = lit(var)
    return call(var, "glueContext.write_dynamic_frame.from_options", arguments)


def catalog_target(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    spec = node.spec
    extra: dict[str, Any] = {}
    if spec.get("PartitionKeys"):
        extra["partitionKeys"] = _partition_keys(spec)
    policy = spec.get("SchemaChangePolicy") or {}
    if policy.get("EnableUpdateCatalog"):
        extra["enableUpdateCatalog"] = True
        extra["updateBehavior"] = policy.get("UpdateBehavior") or "UPDATE_IN_DATABASE"
    arguments = {"frame": inputs[0], "database": lit(spec["Database"]), "table_name": lit(spec["Table"])}
    if extra:
        arguments["additional_options"] = lit(extra)
    arguments["transformation_ctx"] = lit(var)
    return call(var, "glueContext.write_dynamic_frame.from_catalog", arguments)


def table_catalog_target(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """Appends to an Iceberg or Delta table of the catalog (which must exist), exactly-once
    with the node's transformation_ctx."""
    spec = node.spec
    if (spec.get("SchemaChangePolicy") or {}).get("EnableUpdateCatalog"):
        raise GraphError(
            [f"{node.label()}: the table's own metadata is its schema; EnableUpdateCatalog does not apply"]
        )
    arguments = {"frame": inputs[0], "database": lit(spec["Database"]), "table_name": lit(spec["Table"])}
    if spec.get("PartitionKeys") and "Delta" in node.type:
        arguments["additional_options"] = lit({"partitionKeys": _partition_keys(spec)})
    arguments["transformation_ctx"] = lit(var)
    return call(var, "glueContext.write_dynamic_frame.from_catalog", arguments)


def s3_delta_direct(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """Appends to the Delta table at Path (the first write creates it)."""
    spec = node.spec
    if (spec.get("SchemaChangePolicy") or {}).get("EnableUpdateCatalog"):
        raise GraphError(
            [f"{node.label()}: registering the Delta table is a crawler's DeltaTargets here; "
             "EnableUpdateCatalog is not applied"]
        )  # fmt: skip
    connection: dict[str, Any] = {"path": spec["Path"], "partitionKeys": _partition_keys(spec)}
    if spec.get("Compression"):
        connection["compression"] = spec["Compression"]
    return call(
        var,
        "glueContext.write_dynamic_frame.from_options",
        {
            "frame": inputs[0],
            "connection_type": lit("s3"),
            "format": lit("delta"),
            "connection_options": lit(connection),
            "transformation_ctx": lit(var),
        },
    )
