"""The Glue Schema Registry's compatibility modes (AWS's "Schema versioning and
compatibility"), checked on Avro schemas by Apache Avro's reader/writer checker and on
JSON schemas by sparkmark's structural rule. No JVM."""

from __future__ import annotations

import json

import pytest

from sparkmark.catalog.schema_compatibility import (
    IncompatibleSchema,
    SchemaDefinitionError,
    check_compatible,
    check_definition,
)

BASE = {"type": "record", "name": "o", "fields": [{"name": "id", "type": "long"}]}
ADD_WITH_DEFAULT = {**BASE, "fields": [*BASE["fields"], {"name": "note", "type": "string", "default": ""}]}
ADD_WITHOUT_DEFAULT = {**BASE, "fields": [*BASE["fields"], {"name": "note", "type": "string"}]}
RETYPED = {**BASE, "fields": [{"name": "id", "type": "string"}]}


def avro(schema: dict):
    return check_definition("AVRO", json.dumps(schema))


@pytest.mark.parametrize(
    ("mode", "new", "ok"),
    [
        ("BACKWARD", ADD_WITH_DEFAULT, True),  # the new reader fills the default in old data
        ("BACKWARD", ADD_WITHOUT_DEFAULT, False),  # old data lacks a field the reader needs
        ("FORWARD", ADD_WITHOUT_DEFAULT, True),  # old readers ignore the new field
        ("FORWARD", RETYPED, False),
        ("FULL", ADD_WITH_DEFAULT, True),
        ("FULL", ADD_WITHOUT_DEFAULT, False),
        ("NONE", RETYPED, True),
        ("DISABLED", ADD_WITH_DEFAULT, False),
    ],
)
def test_modes_against_the_latest_version(mode, new, ok):
    if ok:
        check_compatible(mode, "AVRO", avro(new), [(1, avro(BASE))])
    else:
        with pytest.raises(IncompatibleSchema, match=mode if mode != "DISABLED" else "DISABLED"):
            check_compatible(mode, "AVRO", avro(new), [(1, avro(BASE))])


def test_all_modes_check_every_earlier_version_and_the_others_only_the_latest():
    # v1 has "note" without a default, v2 dropped it; v3 (= v1) reads v2's data only with a default
    v1, v2 = ADD_WITHOUT_DEFAULT, BASE
    history = [(1, avro(v1)), (2, avro(v2))]
    with pytest.raises(IncompatibleSchema, match="version 2"):
        check_compatible("BACKWARD", "AVRO", avro(v1), history)
    check_compatible("BACKWARD", "AVRO", avro(ADD_WITH_DEFAULT), history)
    with pytest.raises(IncompatibleSchema, match="FORWARD_ALL compatible with version 1"):
        check_compatible("FORWARD_ALL", "AVRO", avro(RETYPED), history)
    check_compatible("BACKWARD_ALL", "AVRO", avro(BASE), [])  # a first version is always taken


def test_json_schemas_by_the_structural_rule():
    old = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    more_required = {
        **old,
        "properties": {**old["properties"], "x": {"type": "string"}},
        "required": ["id", "x"],
    }
    check_compatible("BACKWARD", "JSON", check_definition("JSON", json.dumps(old)), [(1, old)])
    with pytest.raises(IncompatibleSchema, match="'x' is required"):
        check_compatible("BACKWARD", "JSON", more_required, [(1, old)])
    retyped = {**old, "properties": {"id": {"type": "string"}}}
    with pytest.raises(IncompatibleSchema, match="'id' is string here and integer"):
        check_compatible("FULL", "JSON", retyped, [(1, old)])


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("AVRO", "{not json", "not JSON"),
        ("AVRO", '{"type": "record", "name": "o"}', "not a valid Avro schema"),
        ("JSON", '{"type": 12}', "not a valid JSON Schema"),
        ("PROTOBUF", "syntax = 'proto3';", "PROTOBUF schemas are not supported"),
    ],
)
def test_invalid_definitions_are_one_line(fmt, text, message):
    with pytest.raises(SchemaDefinitionError, match=message):
        check_definition(fmt, text)
