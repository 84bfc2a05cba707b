"""What the Glue Schema Registry checks before it takes a schema version: that the
definition is valid for its data format, and that it keeps the schema's compatibility
mode with the versions before it (AWS's "Schema versioning and compatibility"):

- NONE: any valid version; DISABLED: no new version at all;
- BACKWARD: the new version can read data written with the latest one; BACKWARD_ALL:
  with every earlier one;
- FORWARD: the latest version can read data written with the new one; FORWARD_ALL:
  every earlier one can;
- FULL: both, with the latest; FULL_ALL: both, with every earlier one.

"Earlier" starts at the schema's checkpoint (SchemaCheckpoint, moved by UpdateSchema).
Avro schemas are parsed and compared by Apache Avro's own reader/writer compatibility
checker. JSON schemas are checked as JSON Schema documents (jsonschema's meta-schema
check); their compatibility is sparkmark's structural rule (a reader reads a writer's
objects when every property it requires the writer requires too, the properties both
name have the same ``type``, and, when the reader admits no additional properties,
the writer names none the reader lacks), since Glue's own JSON rule is not published.
Protobuf is not taken."""

from __future__ import annotations

import json
from typing import Any

from ..errors import SparkmarkError

MODES = ("NONE", "DISABLED", "BACKWARD", "BACKWARD_ALL", "FORWARD", "FORWARD_ALL", "FULL", "FULL_ALL")
FORMATS = ("AVRO", "JSON")


class SchemaDefinitionError(SparkmarkError):
    """A definition that is not a valid schema of its format."""


class IncompatibleSchema(SparkmarkError):
    """A version the schema's compatibility mode does not admit."""


def check_definition(data_format: str, text: str) -> Any:
    """The parsed schema, or one line saying why ``text`` is not a valid one."""
    if data_format == "PROTOBUF":
        raise SchemaDefinitionError(
            "PROTOBUF schemas are not supported by sparkmark's registry (AVRO and JSON are)"
        )
    if data_format not in FORMATS:
        raise SchemaDefinitionError(f"data format {data_format!r} is not one of {', '.join(FORMATS)}")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise SchemaDefinitionError(f"the {data_format} schema definition is not JSON: {exc}") from None
    if data_format == "AVRO":
        import avro.schema

        try:
            return avro.schema.parse(text)
        except Exception as exc:  # noqa: BLE001 - Avro's parser raises several kinds
            raise SchemaDefinitionError(f"not a valid Avro schema: {str(exc).splitlines()[0]}") from None
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft7Validator.check_schema(document)
    except SchemaError as exc:
        raise SchemaDefinitionError(f"not a valid JSON Schema: {exc.message}") from None
    return document


def _can_read(data_format: str, reader: Any, writer: Any) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer`` (empty: it can)."""
    if data_format == "AVRO":
        from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

        found = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
        if found.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = sorted(str(getattr(k, "value", k)) for k in found.incompatibilities)
        return [f"{', '.join(kinds)} ({', '.join(sorted(found.messages))})"]
    problems = []
    reader_props, writer_props = reader.get("properties") or {}, writer.get("properties") or {}
    for name in sorted(set(reader.get("required") or ()) - set(writer.get("required") or ())):
        problems.append(f"property {name!r} is required but data may lack it")
    for name in sorted(set(reader_props) & set(writer_props)):
        a, b = reader_props[name].get("type"), writer_props[name].get("type")
        if a is not None and b is not None and a != b:
            problems.append(f"property {name!r} is {a} here and {b} in the other version")
    if reader.get("additionalProperties") is False:
        for name in sorted(set(writer_props) - set(reader_props)):
            problems.append(f"property {name!r} is not admitted (additionalProperties is false)")
    return problems


def check_compatible(mode: str, data_format: str, new: Any, earlier: list[tuple[int, Any]]) -> None:
    """``earlier``: (version number, parsed schema), oldest first, from the checkpoint."""
    if mode == "DISABLED":
        raise IncompatibleSchema("the schema's compatibility is DISABLED: it takes no new version")
    if mode == "NONE" or not earlier:
        return
    against = earlier if mode.endswith("_ALL") else earlier[-1:]
    backward = mode.startswith(("BACKWARD", "FULL"))
    forward = mode.startswith(("FORWARD", "FULL"))
    for number, old in against:
        problems = (_can_read(data_format, new, old) if backward else []) + (
            _can_read(data_format, old, new) if forward else []
        )
        if problems:
            raise IncompatibleSchema(
                f"the new version is not {mode} compatible with version {number}: {'; '.join(problems)}"
            )
