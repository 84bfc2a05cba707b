"""From a checked job graph to a Glue-style PySpark script: the preamble Glue Studio
writes, then one block per node in topological order, each assigning a variable named
after the node and passing the same name as its ``transformation_ctx`` (so every source
keeps its own bookmark), then ``job.commit()``.

One writer per node type, in :data:`WRITERS`: a table, not a chain of ifs. A writer
gets the node and the variable names of its inputs, and returns its lines.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import GraphError
from .graph import JobGraph, Node, check

PREAMBLE = """import sys

from awsglue.context import GlueContext
from awsglue.dynamicframe import DynamicFrame, DynamicFrameCollection
from awsglue.job import Job
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from pyspark.sql import functions as SqlFuncs
{extra_imports}
args = getResolvedOptions(sys.argv, ["JOB_NAME"])
sc = SparkContext.getOrCreate()  # as SparkContext() in a new process; reuses a running one
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
"""

SEPARATORS = {"comma": ",", "ctrla": "\u0001", "pipe": "|", "semicolon": ";", "tab": "\t"}
QUOTES = {"quote": '"', "quillemet": "\u00ab", "single_quote": "'", "disabled": "-1"}
JOIN_TYPES = {
    "left": "left",
    "right": "right",
    "outer": "outer",
    "leftsemi": "leftsemi",
    "leftanti": "leftanti",
}
AGG_FUNCTIONS = {  # Glue's AggFunc → pyspark.sql.functions
    "avg": "avg",
    "countDistinct": "count_distinct",
    "count": "count",
    "first": "first",
    "last": "last",
    "kurtosis": "kurtosis",
    "max": "max",
    "min": "min",
    "skewness": "skewness",
    "stddev_samp": "stddev_samp",
    "stddev_pop": "stddev_pop",
    "sum": "sum",
    "sumDistinct": "sum_distinct",
    "var_samp": "var_samp",
    "var_pop": "var_pop",
}
COMPARISONS = {"EQ": "==", "LT": "<", "GT": ">", "LTE": "<=", "GTE": ">="}
DIRECT_FORMATS = {"json", "csv", "avro", "orc", "parquet"}

# Helpers a script carries only when a node needs them.
HELPERS = {
    "sql": '''
def sql_query(glueContext, query, mapping, transformation_ctx) -> DynamicFrame:
    """A SparkSQL node: each input as a view under its alias, then the query."""
    for alias, frame in mapping.items():
        frame.toDF().createOrReplaceTempView(alias)
    return DynamicFrame.fromDF(spark.sql(query), glueContext, transformation_ctx)
''',
    "null_columns": '''
def drop_null_columns(frame, null_values, transformation_ctx) -> DynamicFrame:
    """A DropNullFields node: drop every column whose values are all null, or all one
    of the values the node counts as null."""
    df = frame.toDF()
    if not df.columns:
        return frame
    counts = df.agg(
        *[
            SqlFuncs.count(SqlFuncs.when(~SqlFuncs.col(c).cast("string").isin(null_values), 1)).alias(c)
            for c in df.columns
        ]
    ).first()
    empty = [c for c in df.columns if counts is None or counts[c] == 0]
    return DynamicFrame.fromDF(df.drop(*empty), glueContext, transformation_ctx)
''',
}


@dataclass
class Script:
    lines: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    custom: list[str] = field(default_factory=list)

    def need(self, helper: str) -> None:
        if helper not in self.helpers:
            self.helpers.append(helper)

    def need_import(self, line: str) -> None:
        if line not in self.imports:
            self.imports.append(line)


def lit(value: Any) -> str:
    """A Python literal for a JSON value (``True``, not ``true``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def call(target: str, function: str, arguments: dict[str, str]) -> list[str]:
    """``target = function(k=v, …)``, one argument a line."""
    body = [f"    {k}={v}," for k, v in arguments.items()]
    return [f"{target} = {function}(", *body, ")"]


def path(segments: Any) -> str:
    """Glue's path as a list of segments (or already a string) → ``a.b``."""
    if isinstance(segments, list):
        return ".".join(str(s) for s in segments)
    return str(segments)


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


def _mappings(entries: list[dict[str, Any]], prefix: str = "") -> list[tuple[str, str, str, str]]:
    out = []
    for m in entries:
        if m.get("Dropped"):
            continue
        source = path(m.get("FromPath") or [m.get("ToKey", "")])
        target = (prefix + "." if prefix else "") + str(m.get("ToKey") or source)
        if m.get("Children"):
            out += _mappings(m["Children"], target)
            continue
        out.append(
            (
                source if not prefix else f"{prefix}.{source}",
                m.get("FromType") or "string",
                target,
                m.get("ToType") or m.get("FromType") or "string",
            )
        )
    return out


def apply_mapping(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    mappings = (
        "["
        + ", ".join("(" + ", ".join(lit(x) for x in m) + ")" for m in _mappings(node.spec["Mapping"]))
        + "]"
    )
    return call(
        var, "ApplyMapping.apply", {"frame": inputs[0], "mappings": mappings, "transformation_ctx": lit(var)}
    )


def select_fields(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    paths = [path(p) for p in node.spec["Paths"]]
    return call(
        var, "SelectFields.apply", {"frame": inputs[0], "paths": lit(paths), "transformation_ctx": lit(var)}
    )


def drop_fields(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    paths = [path(p) for p in node.spec["Paths"]]
    return call(
        var, "DropFields.apply", {"frame": inputs[0], "paths": lit(paths), "transformation_ctx": lit(var)}
    )


def rename_field(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    return call(
        var,
        "RenameField.apply",
        {
            "frame": inputs[0],
            "old_name": lit(path(node.spec["SourcePath"])),
            "new_name": lit(path(node.spec["TargetPath"])),
            "transformation_ctx": lit(var),
        },
    )


def _operand(value: dict[str, Any]) -> str:
    if value["Type"] == "COLUMNEXTRACTED":
        return "row" + "".join(f"[{lit(str(s))}]" for s in value["Value"])
    text = str(value["Value"][0]) if value["Value"] else ""
    try:
        number = float(text)
    except ValueError:
        return lit(text)
    return text if number.is_integer() and re.fullmatch(r"-?\d+", text) else repr(number)


def _condition(expression: dict[str, Any]) -> str:
    operation, values = expression["Operation"], expression["Values"]
    left = _operand(values[0])
    if operation == "ISNULL":
        test = f"{left} is None"
    elif operation == "REGEX":
        test = f"({left} is not None and re.match({_operand(values[1])}, str({left})) is not None)"
    else:
        test = f"({left} is not None and {left} {COMPARISONS[operation]} {_operand(values[1])})"
    return f"not {test}" if expression.get("Negated") else test


def filter_rows(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    if any(f["Operation"] == "REGEX" for f in node.spec["Filters"]):
        script.need_import("import re")
    joiner = " and " if node.spec["LogicalOperator"] == "AND" else " or "
    predicate = joiner.join(f"({_condition(f)})" for f in node.spec["Filters"])
    return call(
        var,
        "Filter.apply",
        {"frame": inputs[0], "f": f"lambda row: {predicate}", "transformation_ctx": lit(var)},
    )


def join(
    node: Node, var: str, inputs: list[str], script: Script, names: dict[str, str] | None = None
) -> list[str]:
    names = names or {}
    first, second = node.spec["Columns"][:2]
    left, right = names.get(first["From"], inputs[0]), names.get(second["From"], inputs[1])
    keys1, keys2 = [path(k) for k in first["Keys"]], [path(k) for k in second["Keys"]]
    if node.spec["JoinType"] == "equijoin":
        return call(
            var,
            "Join.apply",
            {
                "frame1": left,
                "frame2": right,
                "keys1": lit(keys1),
                "keys2": lit(keys2),
                "transformation_ctx": lit(var),
            },
        )
    condition = " & ".join(
        f"({left}DF[{lit(a)}] == {right}DF[{lit(b)}])" for a, b in zip(keys1, keys2, strict=False)
    )
    return [
        f"{left}DF = {left}.toDF()",
        f"{right}DF = {right}.toDF()",
        f"{var} = DynamicFrame.fromDF(",
        f"    {left}DF.join({right}DF, {condition}, {lit(JOIN_TYPES[node.spec['JoinType']])}),",
        "    glueContext,",
        f"    {lit(var)},",
        ")",
    ]


def union(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    merged = f"{inputs[0]}.toDF().unionByName({inputs[1]}.toDF(), allowMissingColumns=True)"
    if node.spec["UnionType"] == "DISTINCT":
        merged += ".distinct()"
    return [f"{var} = DynamicFrame.fromDF({merged}, glueContext, {lit(var)})"]


def aggregate(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    groups = [path(g) for g in node.spec["Groups"]]
    aggs = ", ".join(
        f"SqlFuncs.{AGG_FUNCTIONS[a['AggFunc']]}({lit(path(a['Column']))}).alias({lit(a['AggFunc'] + '(' + path(a['Column']) + ')')})"
        for a in node.spec["Aggs"]
    )
    grouped = f"{inputs[0]}.toDF().groupBy(*{lit(groups)}).agg({aggs})"
    return [f"{var} = DynamicFrame.fromDF({grouped}, glueContext, {lit(var)})"]


NULL_CHECKS = {"IsEmpty": "", "IsNullString": "null", "IsNegOne": "-1"}


def drop_null_fields(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    boxes = node.spec.get("NullCheckBoxList") or {}
    values = [text for key, text in NULL_CHECKS.items() if boxes.get(key)]
    values += [str(v.get("Value")) for v in node.spec.get("NullTextList") or []]
    if not values:
        return call(var, "DropNullFields.apply", {"frame": inputs[0], "transformation_ctx": lit(var)})
    script.need("null_columns")
    return [f"{var} = drop_null_columns({inputs[0]}, {lit(values)}, {lit(var)})"]


def drop_duplicates(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    columns = [path(c) for c in node.spec.get("Columns") or []]
    deduped = (
        f"{inputs[0]}.toDF().dropDuplicates({lit(columns)})"
        if columns
        else f"{inputs[0]}.toDF().dropDuplicates()"
    )
    return [f"{var} = DynamicFrame.fromDF({deduped}, glueContext, {lit(var)})"]


def fill_missing_values(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    script.need_import("from awsglueml.transforms import FillMissingValues")
    arguments = {"frame": inputs[0], "missing_values_column": lit(node.spec["ImputedPath"])}
    if node.spec.get("FilledPath"):
        arguments["output_column"] = lit(node.spec["FilledPath"])
    arguments["transformation_ctx"] = lit(var)
    return call(var, "FillMissingValues.apply", arguments)


def select_from_collection(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    index = int(node.spec["Index"])
    return call(
        var,
        "SelectFromCollection.apply",
        {"dfc": inputs[0], "key": f"list({inputs[0]}.keys())[{index}]", "transformation_ctx": lit(var)},
    )


def spark_sql(
    node: Node, var: str, inputs: list[str], script: Script, names: dict[str, str] | None = None
) -> list[str]:
    names = names or {}
    script.need("sql")
    mapping = (
        "{"
        + ", ".join(f"{lit(a['Alias'])}: {names.get(a['From'], a['From'])}" for a in node.spec["SqlAliases"])
        + "}"
    )
    query = f"SqlQuery_{var}"
    return [
        f"{query} = {lit(node.spec['SqlQuery'])}",
        *call(
            var,
            "sql_query",
            {
                "glueContext": "glueContext",
                "query": query,
                "mapping": mapping,
                "transformation_ctx": lit(var),
            },
        ),
    ]


def custom_code(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """Studio's convention: ``Code`` is the body of the transform, and the script has it
    under ``def <ClassName>(glueContext, dfc) -> DynamicFrameCollection:``. A ``Code``
    that defines that function itself at its top level is taken as it is."""
    name = node.spec["ClassName"]
    if not name.isidentifier():
        raise GraphError([f"{node.label()}: ClassName {name!r} is not a Python name"])
    code = textwrap.dedent(node.spec["Code"]).strip("\n")
    if not re.search(rf"^def {re.escape(name)}\s*\(", code, re.MULTILINE):
        body = textwrap.indent(code, "    ") if code.strip() else "    pass"
        code = f"def {name}(glueContext, dfc) -> DynamicFrameCollection:\n{body}"
    try:
        compile(code, node.label(), "exec")
    except SyntaxError as exc:
        raise GraphError(
            [f"{node.label()}: its Code is not valid Python: {exc.msg} (line {exc.lineno})"]
        ) from None
    script.custom.append(code)
    collection = "{" + ", ".join(f"{lit(i)}: {i}" for i in inputs) + "}"
    return [f"{var} = {name}(glueContext, DynamicFrameCollection({collection}, glueContext))"]


def _parameter(given: dict[str, Any], node: Node) -> Any:
    """A DynamicTransform parameter's value as Python: ``Value`` is a list of strings,
    read by ``Type`` (a ``list`` is the whole list, read by ``ListType``)."""
    kind, values = given.get("Type") or "str", list(given.get("Value") or [])

    def one(text: str, as_type: str) -> Any:
        try:
            if as_type == "int":
                return int(text)
            if as_type == "float":
                return float(text)
            if as_type == "bool":
                return str(text).strip().lower() in ("true", "1", "yes")
            if as_type == "null":
                return None
        except ValueError:
            raise GraphError(
                [f"{node.label()}: parameter {given.get('Name')!r} value {text!r} is not a {as_type}"]
            ) from None
        return text

    if kind == "list":
        return [one(v, given.get("ListType") or "str") for v in values]
    return one(values[0], kind) if values else None


def dynamic_transform(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    """Glue Studio's built-in visual transforms (Flatten, Explode, UUID, Concatenate, Split
    string, Array to columns, To timestamp, Format timestamp, Derived column): a
    DynamicTransform whose function is one of the ``gs_*`` methods, called on the input
    as Studio's scripts call it. A transform from the user's own library is refused: its
    code is not in the job."""
    from ..glue.shim import VISUAL_MODULES

    function = node.spec.get("FunctionName") or node.spec.get("TransformName") or ""
    if function not in VISUAL_MODULES:
        raise GraphError(
            [
                f"{node.label()}: the visual transform {function!r} comes from a library of its own "
                f"({node.spec.get('Path') or 'no path'}), whose code is not in the job; sparkmark runs "
                f"Glue Studio's built-in ones ({', '.join(VISUAL_MODULES)})"
            ]
        )
    script.need_import(f"import {function}")
    arguments = {
        p["Name"]: lit(_parameter(p, node))
        for p in node.spec.get("Parameters") or []
        if p.get("Value") is not None or not p.get("IsOptional")
    }
    if not arguments:
        return [f"{var} = {inputs[0]}.{function}()"]
    return call(var, f"{inputs[0]}.{function}", arguments)


def evaluate_quality(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    script.need_import("from awsgluedq.transforms import EvaluateDataQuality")
    publishing = node.spec.get("PublishingOptions") or {}
    options = {
        "dataQualityEvaluationContext": publishing.get("EvaluationContext") or var,
        "enableDataQualityResultsPublishing": bool(publishing.get("ResultsPublishingEnabled", True)),
    }
    results = f"{var}_results"
    lines = [
        f"{var}_ruleset = {lit(node.spec['Ruleset'])}",
        *call(
            results,
            "EvaluateDataQuality().process_rows",
            {"frame": inputs[0], "ruleset": f"{var}_ruleset", "publishing_options": lit(options)},
        ),
    ]
    stop = (node.spec.get("StopJobOnFailureOptions") or {}).get("StopJobOnFailureTiming")
    if stop:
        lines += [
            f'if {results}["ruleOutcomes"].toDF().where("Outcome != \'Passed\'").count():',
            f"    raise Exception({lit('data quality rules failed in ' + node.name)})",
        ]
    if node.spec.get("Output") == "EvaluationResults":
        lines.append(
            f'{var} = SelectFromCollection.apply(dfc={results}, key="ruleOutcomes", transformation_ctx={lit(var)})'
        )
    else:
        lines.append(f"{var} = {inputs[0]}")
    return lines


# ------------------------------------------------------------------ targets


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
NEEDS_NAMES = {"Join", "SparkSQL"}  # writers that look inputs up by node id
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
