"""Glue's own description of the visual job nodes: botocore's service model of Glue,
shipped inside the botocore package. Every node type, field, required field and
allowed value comes from it; nothing here restates Glue's schema by hand."""

from __future__ import annotations

from functools import cache
from typing import Any

from botocore.validate import ParamValidator

NODE_SHAPE = "CodeGenConfigurationNode"


@cache
def glue_model():
    from botocore.session import get_session

    return get_session().get_service_model("glue")


@cache
def node_shapes() -> dict[str, Any]:
    """Each node type Glue defines, by its name (S3CsvSource, ApplyMapping, …)."""
    return dict(glue_model().shape_for(NODE_SHAPE).members)


def node_problems(node_type: str, body: Any) -> list[str]:
    """What is wrong with one node's fields, as botocore's validator and the model's
    enums say it: missing required fields, wrong types, values outside an enum."""
    shape = node_shapes()[node_type]
    report = ParamValidator().validate(body, shape)
    found = []
    for kind, name, details in report._errors:  # (type, '.Field[0].Sub', details)
        where = name.lstrip(".") or node_type
        if kind == "missing required field":
            found.append(
                f"is missing the required field {details['required_name']!r}" + _in(where, node_type)
            )
        elif kind == "invalid type":
            valid = ", ".join(t.removeprefix("<class '").removesuffix("'>") for t in details["valid_types"])
            found.append(f"field {where} is {details['param']!r}, which is not of type {valid}")
        elif kind == "unknown field":
            found.append(f"has an unknown field {details['unknown_param']!r}" + _in(where, node_type))
        elif kind == "invalid length":
            bound = (
                f"at least {details['min_allowed']}"
                if "min_allowed" in details
                else f"at most {details.get('max_allowed')}"
            )
            found.append(f"field {where} has length {details['param']}; Glue needs {bound}")
        elif kind == "invalid range":
            found.append(f"field {where} is {details['param']}; Glue needs at least {details['min_allowed']}")
        else:
            found.append(f"field {where}: {kind}")
    found += _enum_problems(shape, body, "")
    return found


def _in(where: str, node_type: str) -> str:
    return "" if where in ("", node_type) else f" in {where}"


def _enum_problems(shape, value: Any, where: str) -> list[str]:
    """Values outside the model's enums (botocore's validator does not check those)."""
    if shape.type_name == "structure" and isinstance(value, dict):
        return [
            p
            for key, member in shape.members.items()
            if key in value
            for p in _enum_problems(member, value[key], f"{where}.{key}" if where else key)
        ]
    if shape.type_name == "list" and isinstance(value, list):
        return [
            p for i, item in enumerate(value) for p in _enum_problems(shape.member, item, f"{where}[{i}]")
        ]
    enum = getattr(shape, "enum", None)
    if enum and isinstance(value, str) and value not in enum:
        return [f"field {where} is {value!r}; Glue allows {', '.join(enum)}"]
    return []


def _described(shape, depth: int) -> dict[str, Any]:
    """One member's shape for a form: its type and allowed values, and (to a few levels)
    a list's item, a map's key and value, and a structure's own fields."""
    found: dict[str, Any] = {
        "type": shape.type_name,
        "enum": list(getattr(shape, "enum", None) or []),
        "doc": shape.documentation or "",
    }
    if depth >= 4:
        return found
    if shape.type_name == "list":
        found["member"] = _described(shape.member, depth + 1)
    elif shape.type_name == "map":
        found["key"] = _described(shape.key, depth + 1)
        found["value"] = _described(shape.value, depth + 1)
    elif shape.type_name == "structure":
        required = set(shape.required_members)
        found["fields"] = {
            name: {**_described(member, depth + 1), "required": name in required}
            for name, member in shape.members.items()
        }
    return found


def node_fields(node_type: str) -> dict[str, dict[str, Any]]:
    """A node type's fields as a form needs them: type, whether required, allowed
    values, and what a list, map or structure holds."""
    shape = node_shapes()[node_type]
    required = set(shape.required_members)
    return {
        name: {**_described(member, 0), "required": name in required}
        for name, member in shape.members.items()
    }
