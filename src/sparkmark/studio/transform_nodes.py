"""The writers of transform nodes: mappings, field selection and renames, filters, joins, unions, aggregates, nulls and duplicates, SQL, custom code, dynamic transforms and data quality."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from ..errors import GraphError
from .graph import Node
from .script_parts import AGG_FUNCTIONS, COMPARISONS, JOIN_TYPES, Script, call, lit, path


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


def _publishing(node: Node, var: str) -> dict[str, Any]:
    """A data quality node's PublishingOptions as EvaluateDataQuality's publishing_options."""
    publishing = node.spec.get("PublishingOptions") or {}
    options: dict[str, Any] = {
        "dataQualityEvaluationContext": publishing.get("EvaluationContext") or var,
        "enableDataQualityResultsPublishing": bool(publishing.get("ResultsPublishingEnabled", True)),
    }
    if publishing.get("CloudWatchMetricsEnabled") is not None:
        options["enableDataQualityCloudWatchMetrics"] = bool(publishing["CloudWatchMetricsEnabled"])
    if publishing.get("ResultsS3Prefix"):
        options["resultsS3Prefix"] = publishing["ResultsS3Prefix"]
    return options


def _stop_on_failure(node: Node, results: str) -> list[str]:
    if not (node.spec.get("StopJobOnFailureOptions") or {}).get("StopJobOnFailureTiming"):
        return []
    return [
        f'if {results}["ruleOutcomes"].toDF().where("Outcome != \'Passed\'").count():',
        f"    raise Exception({lit('data quality rules failed in ' + node.name)})",
    ]


def evaluate_quality_multi(
    node: Node, var: str, inputs: list[str], script: Script, names: dict[str, str] | None = None
) -> list[str]:
    """EvaluateDataQualityMultiFrame: the first input is the data; AdditionalDataSources
    names the other inputs by the aliases its rules use. Its output is the collection
    (ruleOutcomes, rowLevelOutcomes) that SelectFromCollection nodes take apart."""
    script.need_import("from awsgluedq.transforms import EvaluateDataQuality")
    given = node.spec.get("AdditionalDataSources") or {}
    known = names or {}
    for alias, source in given.items():
        if source not in node.inputs[1:]:
            raise GraphError(
                [
                    f"{node.label()}: AdditionalDataSources {alias!r} names {source!r}, which is not one of its Inputs"
                ]
            )
    references = "{" + ", ".join(f"{lit(alias)}: {known[source]}" for alias, source in given.items()) + "}"
    arguments = {
        "frame": inputs[0],
        "additional_data_sources": references,
        "ruleset": f"{var}_ruleset",
        "publishing_options": lit(_publishing(node, var)),
    }
    if node.spec.get("AdditionalOptions"):
        arguments["additional_options"] = lit(dict(node.spec["AdditionalOptions"]))
    return [
        f"{var}_ruleset = {lit(node.spec['Ruleset'])}",
        *call(var, "EvaluateDataQuality().process_rows", arguments),
        *_stop_on_failure(node, var),
    ]


def evaluate_quality(node: Node, var: str, inputs: list[str], script: Script) -> list[str]:
    script.need_import("from awsgluedq.transforms import EvaluateDataQuality")
    results = f"{var}_results"
    lines = [
        f"{var}_ruleset = {lit(node.spec['Ruleset'])}",
        *call(
            results,
            "EvaluateDataQuality().process_rows",
            {
                "frame": inputs[0],
                "ruleset": f"{var}_ruleset",
                "publishing_options": lit(_publishing(node, var)),
            },
        ),
        *_stop_on_failure(node, results),
    ]
    if node.spec.get("Output") == "EvaluationResults":
        lines.append(
            f'{var} = SelectFromCollection.apply(dfc={results}, key="ruleOutcomes", transformation_ctx={lit(var)})'
        )
    else:
        lines.append(f"{var} = {inputs[0]}")
    return lines


# ------------------------------------------------------------------ targets
