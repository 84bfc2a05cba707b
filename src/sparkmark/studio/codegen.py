"""From a checked job graph to a Glue-style PySpark script: the preamble Glue Studio
writes, then one block per node in topological order, each assigning a variable named
after the node and passing the same name as its ``transformation_ctx`` (so every source
keeps its own bookmark), then ``job.commit()``.

One writer per node type, in :data:`WRITERS`: a table, not a chain of ifs. A writer
gets the node and the variable names of its inputs, and returns its lines. The writers
live by node family (``source_nodes``, ``transform_nodes``, ``target_nodes``) over
``script_parts``; this module orders the blocks and assembles the script.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import GraphError
from .graph import JobGraph, Node, check
from .script_parts import HELPERS, PREAMBLE, Script, lit
from .source_nodes import (
    STREAMING,
    catalog_source,
    direct_jdbc,
    dynamodb_catalog_source,
    dynamodb_connector_source,
    jdbc_connector,
    s3_csv,
    s3_delta_source,
    s3_json,
    s3_parquet,
    streaming_source,
    table_catalog_source,
)
from .target_nodes import catalog_target, s3_delta_direct, s3_direct, s3_glue_parquet, table_catalog_target
from .transform_nodes import (
    aggregate,
    apply_mapping,
    custom_code,
    drop_duplicates,
    drop_fields,
    drop_null_fields,
    dynamic_transform,
    evaluate_quality,
    evaluate_quality_multi,
    fill_missing_values,
    filter_rows,
    join,
    rename_field,
    select_fields,
    select_from_collection,
    spark_sql,
    union,
)


def variable_names(graph: JobGraph) -> dict[str, str]:
    """Each node's variable, as Glue Studio names them: the node's name without what is not
    a letter or digit, then the node id's letters and digits (``ChangeSchema_node2``)."""
    names: dict[str, str] = {}
    for node in graph.nodes.values():
        base = re.sub(r"[^0-9A-Za-z]", "", node.name) or "Node"
        if base[0].isdigit():
            base = "N" + base
        name = f"{base}_{re.sub(r'[^0-9A-Za-z]', '', node.id) or 'n'}"
        while name in names.values():
            name += "_"
        names[node.id] = name
    return names


# ------------------------------------------------------------------ sources


Writer = Callable[..., list[str]]


WRITERS: dict[str, Writer] = {
    "S3CsvSource": s3_csv,
    "S3JsonSource": s3_json,
    "S3ParquetSource": s3_parquet,
    "CatalogSource": catalog_source,
    "S3CatalogSource": catalog_source,
    "DirectJDBCSource": direct_jdbc,
    "JDBCConnectorSource": jdbc_connector,
    "DirectKafkaSource": streaming_source,
    "DirectKinesisSource": streaming_source,
    "DynamoDBCatalogSource": dynamodb_catalog_source,
    "DynamoDBELTConnectorSource": dynamodb_connector_source,
    "ApplyMapping": apply_mapping,
    "SelectFields": select_fields,
    "DropFields": drop_fields,
    "RenameField": rename_field,
    "Filter": filter_rows,
    "Join": join,
    "Union": union,
    "Aggregate": aggregate,
    "DropNullFields": drop_null_fields,
    "DropDuplicates": drop_duplicates,
    "FillMissingValues": fill_missing_values,
    "SelectFromCollection": select_from_collection,
    "SparkSQL": spark_sql,
    "CustomCode": custom_code,
    "DynamicTransform": dynamic_transform,
    "EvaluateDataQuality": evaluate_quality,
    "EvaluateDataQualityMultiFrame": evaluate_quality_multi,
    "S3DirectTarget": s3_direct,
    "S3GlueParquetTarget": s3_glue_parquet,
    "CatalogTarget": catalog_target,
    "S3CatalogTarget": catalog_target,
    "CatalogIcebergSource": table_catalog_source,
    "S3CatalogIcebergSource": table_catalog_source,
    "CatalogDeltaSource": table_catalog_source,
    "S3CatalogDeltaSource": table_catalog_source,
    "S3DeltaSource": s3_delta_source,
    "S3IcebergCatalogTarget": table_catalog_target,
    "S3DeltaCatalogTarget": table_catalog_target,
    "S3DeltaDirectTarget": s3_delta_direct,
}


NEEDS_NAMES = {"Join", "SparkSQL", "EvaluateDataQualityMultiFrame"}  # writers that look inputs up by node id


SUPPORTED = frozenset(WRITERS)


TARGETS = {"S3DirectTarget", "S3GlueParquetTarget", "CatalogTarget", "S3CatalogTarget", "S3IcebergCatalogTarget",
           "S3DeltaCatalogTarget", "S3DeltaDirectTarget"}  # fmt: skip


def _blocks(graph: JobGraph, nodes: list[Node], names: dict[str, str], sample: int | None) -> Script:
    """One block per node; with ``sample``, each source is cut to that many records."""
    script = Script()
    problems = []
    for node in nodes:
        var = names[node.id]
        inputs = [names[i] for i in node.inputs]
        writer = WRITERS[node.type]
        try:
            lines = (
                writer(node, var, inputs, script, names)
                if node.type in NEEDS_NAMES
                else writer(node, var, inputs, script)
            )
        except GraphError as exc:
            problems += [f"job {graph.name!r}: {p}" for p in exc.problems]
            continue
        if sample is not None and not node.inputs:
            lines.append(
                f"{var} = DynamicFrame.fromDF({var}.toDF().limit({sample}), glueContext, {lit(var)})"
            )
        script.lines += ["", f"# Script generated for node {node.name} ({node.type}, {node.id})", *lines]
    if problems:
        raise GraphError(problems)
    return script


def _assemble(preamble: str, script: Script, ending: str) -> str:
    extra = "".join(line + "\n" for line in script.imports)
    parts = [preamble.format(extra_imports=extra).rstrip("\n")]
    parts += [HELPERS[h].rstrip("\n") for h in script.helpers]
    parts += ["\n" + c for c in script.custom]
    return "\n".join(parts) + "\n" + "\n".join(script.lines) + "\n" + ending


def generate(graph: JobGraph) -> str:
    """The script for ``graph``; raises :class:`GraphError` with every problem first."""
    check(graph, SUPPORTED)
    names = variable_names(graph)
    streams = [n for n in graph.order() if n.type in STREAMING]
    if not streams:
        script = _blocks(graph, graph.order(), names, None)
        return _assemble(PREAMBLE, script, "\njob.commit()\n")
    if len(streams) > 1:
        labels = ", ".join(n.label() for n in streams)
        raise GraphError([f"job {graph.name!r}: a streaming job reads one stream; this one has {labels}"])
    return _streaming(graph, streams[0], names)


def _streaming(graph: JobGraph, stream: Node, names: dict[str, str]) -> str:
    """Glue's streaming shape: the stream read once, every other node inside the batch
    function, ``forEachBatch`` with the node's window and a checkpoint under TempDir."""
    var = names[stream.id]
    head = _blocks(graph, [stream], names, None)
    rest = _blocks(graph, [n for n in graph.order() if n.id != stream.id], names, None)
    body = [
        "",
        "",
        "def processBatch(data_frame, batchId):",
        "    if data_frame.count() > 0:",
        f'        {var} = DynamicFrame.fromDF(data_frame, glueContext, "from_data_frame")',
        *[("        " + line) if line else "" for line in rest.lines],
        "",
        "",
        "glueContext.forEachBatch(",
        f"    frame=dataframe_{var},",
        "    batch_function=processBatch,",
        f'    options={{"windowSize": "{int(stream.spec.get("WindowSize") or 100)} seconds", '
        '"checkpointLocation": args["TempDir"] + "/" + args["JOB_NAME"] + "/checkpoint/"},',
        ")",
    ]
    merged = Script(
        lines=head.lines + body,
        helpers=head.helpers + [h for h in rest.helpers if h not in head.helpers],
        imports=head.imports + [i for i in rest.imports if i not in head.imports],
        custom=head.custom + rest.custom,
    )
    return _assemble(PREAMBLE, merged, "job.commit()\n")


PREVIEW_PREAMBLE = (
    PREAMBLE.split("args = ", 1)[0]
    + "glueContext = GlueContext(SparkContext.getOrCreate())\nspark = glueContext.spark_session\n"
)


def generate_preview(graph: JobGraph, node_id: str, sample: int = 200) -> tuple[str, str]:
    """A script that computes ``node_id``'s frame (a target's: its input's) from a sample
    of each source, with no run, no bookmark and no write. Returns (script, variable)."""
    check(graph, SUPPORTED)
    if node_id not in graph.nodes:
        raise GraphError([f"job {graph.name!r}: no node {node_id!r}"])
    node = graph.nodes[node_id]
    if node.type in TARGETS:
        node = graph.nodes[node.inputs[0]]
    wanted = {node.id}
    stack = [node.id]
    while stack:  # the node and everything it reads from
        for parent in graph.nodes[stack.pop()].inputs:
            if parent not in wanted:
                wanted.add(parent)
                stack.append(parent)
    names = variable_names(graph)
    script = _blocks(graph, [n for n in graph.order() if n.id in wanted], names, sample)
    return _assemble(PREVIEW_PREAMBLE, script, ""), names[node.id]
