"""What every node's writer uses: the script being written (:class:`Script`), Python literals and calls, and the option tables Glue Studio's graphs name."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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
