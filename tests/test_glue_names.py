"""Every public name of Glue's own library, in the import forms Glue's documentation and
Studio-generated scripts use, resolves under the awsglue import hook. The names are
those AWS's awsglue package defines (awslabs/aws-glue-libs: ``awsglue/__init__.py``
exports DynamicFrame; ``awsglue/transforms/__init__.py`` its transforms and the
get_transform helpers; ``awsglue/dynamicframe.py``, ``utils.py``, ``gluetypes.py``), and
the transforms Glue's Data Quality and ML pages import from awsgluedq and awsglueml."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORMS = {
    "from awsglue import DynamicFrame": ["DynamicFrame"],
    "import awsglue": ["awsglue.DynamicFrame"],
    "from awsglue.transforms import *": [
        "ApplyMapping", "Coalesce", "DropFields", "DropNullFields", "ErrorsAsDynamicFrame", "Filter",
        "FlatMap", "Join", "Map", "MapToCollection", "Relationalize", "RenameField", "Repartition",
        "ResolveChoice", "SelectFields", "SelectFromCollection", "Spigot", "SplitFields", "SplitRows",
        "Unbox", "Union", "UnnestFrame",
    ],
    "from awsglue.transforms import GlueTransform, get_transforms, get_transform, describe_transform": [
        "GlueTransform", "get_transforms", "get_transform", "describe_transform",
    ],
    "from awsglue.dynamicframe import DynamicFrame, DynamicFrameCollection, DynamicFrameReader, "
    "DynamicFrameWriter, ResolveOption": [
        "DynamicFrame", "DynamicFrameCollection", "DynamicFrameReader", "DynamicFrameWriter", "ResolveOption",
    ],
    "from awsglue.context import GlueContext": ["GlueContext"],
    "from awsglue.job import Job": ["Job"],
    "from awsglue.utils import getResolvedOptions, GlueArgumentError, GlueArgumentParser": [
        "getResolvedOptions", "GlueArgumentError", "GlueArgumentParser",
    ],
    "from awsglue.gluetypes import *": [
        "ArrayType", "AtomicType", "BinaryType", "BooleanType", "ByteType", "ChoiceType", "DataType",
        "DateType", "DecimalType", "DoubleType", "EntityType", "EnumType", "Field", "FloatType",
        "IntegerType", "LongType", "MapType", "NullType", "SetType", "ShortType", "StringType",
        "StructType", "TimestampNTZType", "TimestampType", "UnknownType", "mergeDataTypes",
    ],
    "from awsgluedq.transforms import EvaluateDataQuality": ["EvaluateDataQuality"],
    # Glue Studio's visual transforms: each its own module, adding its method to DynamicFrame.
    "import gs_flatten, gs_explode, gs_uuid, gs_concat, gs_split, gs_array_to_cols, "
    "gs_to_timestamp, gs_format_timestamp, gs_derived\nfrom awsglue.dynamicframe import DynamicFrame": [
        "DynamicFrame.gs_flatten", "DynamicFrame.gs_explode", "DynamicFrame.gs_uuid", "DynamicFrame.gs_concat",
        "DynamicFrame.gs_split", "DynamicFrame.gs_array_to_cols", "DynamicFrame.gs_to_timestamp",
        "DynamicFrame.gs_format_timestamp", "DynamicFrame.gs_derived",
    ],
    "from awsglueml.transforms import FillMissingValues, FindMatches, FindIncrementalMatches, "
    "EntityDetector": ["FillMissingValues", "FindMatches", "FindIncrementalMatches", "EntityDetector"],
}  # fmt: skip

PROBE = """
import json, sys
from sparkmark.glue import shim
shim.install()
found = {}
for statement, names in json.loads(sys.argv[1]).items():
    scope = {}
    try:
        exec(statement, scope)
    except Exception as exc:
        found[statement] = f"{type(exc).__name__}: {exc}"
        continue
    missing = []
    for name in names:
        head, _, rest = name.partition(".")
        value = scope.get(head)
        if value is not None and rest:
            value = getattr(value, rest, None)
        if value is None:
            missing.append(name)
    found[statement] = missing
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def resolved() -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FORMS)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("statement", list(FORMS))
def test_every_glue_name_imports(resolved, statement):
    assert resolved[statement] == [], statement


@pytest.mark.slow
def test_the_awsglue_package_does_not_load_pyspark_until_a_name_is_asked_for():
    """The import hook loads the package at interpreter start-up (a .pth file): it must
    stay light there, PySpark's own worker processes included."""
    probe = "import sys; import sparkmark.glue; print('pyspark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


@pytest.mark.slow
def test_an_unknown_name_is_an_import_error():
    probe = "from sparkmark.glue import shim; shim.install(); from awsglue import NoSuchName"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "ImportError: cannot import name 'NoSuchName'" in done.stderr


def test_merge_data_types_as_glue_merges_schemas():
    from sparkmark.glue.gluetypes import (
        ArrayType,
        ChoiceType,
        Field,
        IntegerType,
        LongType,
        NullType,
        StringType,
        StructType,
        UnknownType,
        mergeDataTypes,
    )

    assert mergeDataTypes(NullType(), LongType()) == LongType()
    assert mergeDataTypes(StringType(), UnknownType()) == StringType()
    assert mergeDataTypes(LongType(), LongType()) == LongType()
    assert mergeDataTypes(LongType(), StringType()) == ChoiceType([LongType(), StringType()])
    three = mergeDataTypes(ChoiceType([LongType(), StringType()]), IntegerType())
    assert sorted(three.choices) == ["int", "long", "string"]
    left = StructType([Field("id", LongType()), Field("name", StringType())])
    right = StructType([Field("id", StringType()), Field("tags", ArrayType(StringType()))])
    merged = mergeDataTypes(left, right)
    assert [f.name for f in merged] == ["id", "name", "tags"]
    assert merged.getField("id").dataType == ChoiceType([LongType(), StringType()])
    assert mergeDataTypes(ArrayType(NullType()), ArrayType(LongType())) == ArrayType(LongType())


def test_print_schema_speaks_glues_type_names_and_tree():
    """printSchema's text as AWS's docs show it (the legislators walkthrough, the
    resolveChoice sample): Glue's type names, an array's element on a line of its own,
    a choice's types one level in."""
    from sparkmark.glue import gluetypes as g

    schema = g.StructType(
        [
            g.Field("family_name", g.StringType()),
            g.Field(
                "links",
                g.ArrayType(g.StructType([g.Field("note", g.StringType()), g.Field("url", g.StringType())])),
            ),
            g.Field("provider id", g.ChoiceType([g.LongType(), g.StringType()])),
            g.Field("provider zip code", g.LongType()),
            g.Field("visits", g.IntegerType()),
            g.Field("tags", g.ArrayType(g.StringType())),
        ]
    )
    assert g.tree_lines(schema) == [
        "root",
        "|-- family_name: string",
        "|-- links: array",
        "|    |-- element: struct",
        "|    |    |-- note: string",
        "|    |    |-- url: string",
        "|-- provider id: choice",
        "|    |-- long",
        "|    |-- string",
        "|-- provider zip code: long",
        "|-- visits: int",
        "|-- tags: array",
        "|    |-- element: string",
    ]
    assert g.tree_lines(g.StructType()) == ["root"]
