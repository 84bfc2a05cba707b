"""Glue's wire protocol: AWS JSON 1.1, read and written through botocore's own model of
the Glue service (the one boto3 and the AWS CLI use), so request and response shapes
are Glue's by construction rather than copied by hand.

A request is ``POST /`` with ``X-Amz-Target: AWSGlue.<Operation>`` and a JSON body.
The body is parsed against the operation's input shape (timestamps become datetimes)
and validated with botocore's parameter validator; a handler's result is validated
against the output shape before it is sent, with datetimes as epoch seconds. An
error is HTTP 400 with ``{"__type": "<Glue exception>", "message": …}``, which
botocore turns into the exception class of that name.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

TARGET_PREFIX = "AWSGlue."
CONTENT_TYPE = "application/x-amz-json-1.1"


class GlueApiError(Exception):
    """An error the endpoint answers with: one of Glue's exception types and a message."""

    status = 400

    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def not_found(message: str) -> GlueApiError:
    return GlueApiError("EntityNotFoundException", message)


def invalid(message: str) -> GlueApiError:
    return GlueApiError("InvalidInputException", message)


def illegal_workflow_state(message: str) -> GlueApiError:
    return GlueApiError("IllegalWorkflowStateException", message)


def exists(message: str) -> GlueApiError:
    return GlueApiError("AlreadyExistsException", message)


# The services the endpoint speaks, by the X-Amz-Target prefix their clients send: Glue,
# the CloudWatch Logs operations Glue's tools read a run's logs with, and CloudWatch's
# metric operations (botocore speaks AWS JSON 1.0 to it, the first of the protocols its
# model lists that botocore prefers), and Athena's API.
SERVICES = {
    TARGET_PREFIX: "glue",
    "Logs_20140328.": "logs",
    "GraniteServiceVersion20100801.": "cloudwatch",
    "AmazonAthena.": "athena",
}
CONTENT_TYPES = {"cloudwatch": "application/x-amz-json-1.0"}


def content_type(service: str) -> str:
    return CONTENT_TYPES.get(service, CONTENT_TYPE)


@cache
def service_model(service: str = "glue"):
    """botocore's model of a service (Glue's unless named), loaded once."""
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


def operation(name: str, service: str = "glue"):
    from botocore.model import OperationNotFoundError

    try:
        return service_model(service).operation_model(name)
    except OperationNotFoundError:
        what = "the Glue API" if service == "glue" else f"the {service} API"
        raise GlueApiError("InvalidAction", f"{name} is not an operation of {what}", status=400) from None


def target_of(target: str | None) -> tuple[str, str]:
    """(service, operation) of an X-Amz-Target header."""
    for prefix, service in SERVICES.items():
        if target and target.startswith(prefix):
            return service, target[len(prefix) :]
    raise GlueApiError(
        "UnknownOperationException",
        f"the X-Amz-Target header must be {TARGET_PREFIX}<Operation>, got {target!r}",
    )


def parse_request(op, body: bytes) -> dict[str, Any]:
    """The request's parameters as botocore would have been given them, validated."""
    from botocore.parsers import JSONParser
    from botocore.validate import ParamValidator

    from ..access import MAX_JSON_DEPTH, json_depth_ok

    if not json_depth_ok(body):
        raise GlueApiError(
            "SerializationException", f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels"
        )
    try:
        document = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        raise GlueApiError("SerializationException", "the request body is not JSON") from None
    if not isinstance(document, dict):
        raise GlueApiError("SerializationException", "the request body is not a JSON object")
    if op.input_shape is None:
        return {}
    params = JSONParser().parse({"body": body or b"{}", "headers": {}, "status_code": 200}, op.input_shape)
    params.pop("ResponseMetadata", None)
    report = ParamValidator().validate(params, op.input_shape)
    if report.has_errors():
        raise invalid(" ".join(report.generate_report().split()))
    return params


def _encode(value: Any, shape) -> Any:
    if value is None or shape is None:
        return value
    kind = shape.type_name
    if kind == "structure":
        return {k: _encode(v, shape.members.get(k)) for k, v in value.items() if v is not None}
    if kind == "list":
        return [_encode(v, shape.member) for v in value]
    if kind == "map":
        return {k: _encode(v, shape.value) for k, v in value.items()}
    if kind == "timestamp":
        if isinstance(value, str):
            from botocore.utils import parse_timestamp

            value = parse_timestamp(value)
        if isinstance(value, datetime):
            stamp = value if value.tzinfo else value.replace(tzinfo=UTC)
            return stamp.timestamp()
        return value
    if kind == "blob" and isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def render_response(op, result: dict[str, Any]) -> bytes:
    """The handler's result as the operation's JSON response, checked against its shape."""
    from botocore.validate import ParamValidator

    shape = op.output_shape
    if shape is None:
        return b"{}"
    cleaned = _without_empty_lists(_without_nulls(result), shape)
    report = ParamValidator().validate(cleaned, shape)
    problems = " ".join(report.generate_report().split()) if report.has_errors() else ""
    outside = enum_violations(cleaned, shape)
    if problems or outside:
        raise GlueApiError(
            "InternalServiceException",
            f"sparkmark built a {op.name} response Glue's model refuses: "
            + " ".join([problems, *outside]).strip(),
            status=500,
        )
    return json.dumps(_encode(cleaned, shape)).encode("utf-8")


# Values Glue itself sends outside its model's enum, which clients rely on: a statement's
# Output.Status is Livy's "ok" or "error" (AWS's Glue kernel reads "ok"), not a StatementState.
BEYOND_THE_MODEL = {("StatementOutput", "Status"): frozenset({"ok", "error"})}


def enum_violations(value: Any, shape: Any, where: str = "", also: frozenset[str] = frozenset()) -> list[str]:
    """Values of ``value`` that the model's enums do not list (botocore's validator does
    not check them; a client that switches on the value would meet one it cannot know):
    one line each, naming where it is."""
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        found = []
        for name, member in shape.members.items():
            if name in value:
                extra = BEYOND_THE_MODEL.get((shape.name, name), frozenset())
                found += enum_violations(value[name], member, f"{where}.{name}" if where else name, extra)
        return found
    if kind == "list" and isinstance(value, list):
        return [
            p for i, item in enumerate(value) for p in enum_violations(item, shape.member, f"{where}[{i}]")
        ]
    if kind == "map" and isinstance(value, dict):
        return [p for k, item in value.items() for p in enum_violations(item, shape.value, f"{where}.{k}")]
    allowed = getattr(shape, "enum", None)
    if kind == "string" and allowed and isinstance(value, str) and value not in allowed and value not in also:
        return [f"{where}={value!r} is not one of {', '.join(allowed)}"]
    return []


def _without_empty_lists(value: Any, shape: Any) -> Any:
    """Glue leaves out a list that must hold at least one item when it has none (a
    BatchGetWorkflows that misses no workflow has no MissingWorkflows)."""
    if shape.type_name == "structure" and isinstance(value, dict):
        out = {}
        for name, item in value.items():
            member = shape.members.get(name)
            if member is None:
                out[name] = item
                continue
            if (
                isinstance(item, list)
                and not item
                and member.type_name == "list"
                and member.metadata.get("min", 0) >= 1
            ):
                continue
            out[name] = _without_empty_lists(item, member)
        return out
    if shape.type_name == "list" and isinstance(value, list):
        return [_without_empty_lists(v, shape.member) for v in value]
    if shape.type_name == "map" and isinstance(value, dict):
        return {k: _without_empty_lists(v, shape.value) for k, v in value.items()}
    return value


def _without_nulls(value: Any) -> Any:
    """Glue leaves absent fields out rather than sending null."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def query_error(service: str, code: str) -> str | None:
    """The ``x-amzn-query-error`` header of an error of a service that also speaks the
    query protocol (CloudWatch): botocore reads the error's code from it."""
    model = service_model(service)
    if "awsQueryCompatible" not in model.metadata:
        return None
    try:
        shape = model.shape_for(code)
    except Exception:  # noqa: BLE001 - not an error the model names
        return None
    error = shape.metadata.get("error") or {}
    return f"{error.get('code', code)};{'Sender' if error.get('senderFault') else 'Receiver'}"


def render_error(error: GlueApiError) -> bytes:
    return json.dumps({"__type": error.code, "message": error.message}).encode("utf-8")
