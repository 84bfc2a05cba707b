"""How a DynamoDB table is reached, for its source, its sink and the crawler: its name
(or ARN), the region, endpoint and credentials resolved on the driver (an assumed role
through STS's API), its capacity, and AWS's errors in one line."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import SourceError, aws_error

ROLE_ARN = "dynamodb.sts.roleArn"
ROLE_SESSION = "dynamodb.sts.roleSessionName"
STS_REGION = "dynamodb.sts.region"  # Glue's: the region of a table in another region
ENDPOINT = "dynamodb.endpoint"  # sparkmark's: a DynamoDB endpoint other than AWS's
READ_SESSION = "glue-dynamodb-read-sts-session"  # Glue's default session names
WRITE_SESSION = "glue-dynamodb-write-sts-session"
# What Glue takes as an on-demand table's capacity when it paces a read or a write.
ON_DEMAND_READ_UNITS = 40000
ON_DEMAND_WRITE_UNITS = 40000
INPUT_TABLE = "dynamodb.input.tableName"


def table_name(value: str, option: str = INPUT_TABLE) -> tuple[str, str | None]:
    """A table's name and, for an ARN (``arn:aws:dynamodb:region:account:table/name``),
    its region; ``option`` is where it was given, for the error."""
    if value.startswith("arn:"):
        parts = value.split(":", 5)
        if len(parts) == 6 and parts[5].startswith("table/"):
            return parts[5].split("/", 2)[1], parts[3] or None
        raise SourceError(f"{option} {value!r} is not a DynamoDB table ARN (arn:aws:dynamodb:…:table/NAME)")
    return value, None


@dataclass(frozen=True)
class Access:
    """How the tasks reach the table: region, endpoint and, for an assumed role, its
    temporary credentials (kept in memory only)."""

    region: str | None
    endpoint: str | None
    credentials: dict[str, str] = field(default_factory=dict, repr=False)
    streams_endpoint: str | None = None  # the table's stream (DynamoDB Streams' API)

    def client(self, service: str = "dynamodb") -> Any:
        import boto3

        kwargs: dict[str, Any] = {}
        if self.region:
            kwargs["region_name"] = self.region
        endpoint = {"dynamodb": self.endpoint, "dynamodbstreams": self.streams_endpoint}.get(service)
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        return boto3.client(service, **kwargs, **self.credentials)


def _assume(region: str | None, role_arn: str, session_name: str) -> dict[str, str]:
    import boto3

    sts = boto3.client("sts", **({"region_name": region} if region else {}))
    found = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name)["Credentials"]
    return {
        "aws_access_key_id": found["AccessKeyId"],
        "aws_secret_access_key": found["SecretAccessKey"],
        "aws_session_token": found["SessionToken"],
    }


def resolve_access(region: str | None, endpoint: str | None, role: Any = None, session: Any = None) -> Access:
    """Resolved on the driver, as boto3 resolves them (options, then its environment and
    config): the tasks' Python workers may not share this process's environment, so
    they are given the region, endpoint and credentials. A role (``dynamodb.sts.roleArn``)
    is assumed through STS's API."""
    import boto3

    credentials: dict[str, str] = {}
    if role:
        name = str(session or READ_SESSION)
        try:
            credentials = _assume(region, str(role), name)
        except Exception as exc:  # noqa: BLE001 - one line naming the role
            raise SourceError(f"{ROLE_ARN} {role!r} could not be assumed: {aws_error(exc)}") from None
    else:
        found = boto3.session.Session().get_credentials()
        frozen = found.get_frozen_credentials() if found is not None else None
        if frozen is not None:
            credentials = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
            if frozen.token:
                credentials["aws_session_token"] = frozen.token
    given = Access(region, endpoint, credentials, endpoint)
    probe, streams = given.client(), given.client("dynamodbstreams")
    return Access(probe.meta.region_name, probe.meta.endpoint_url, credentials, streams.meta.endpoint_url)


def describe(access: Access, table: str) -> dict[str, Any]:
    """The table's description, or one line naming the table."""
    try:
        return dict(access.client().describe_table(TableName=table)["Table"])
    except Exception as exc:  # noqa: BLE001 - one line naming the table
        raise SourceError(f"DynamoDB table {table!r} cannot be reached: {aws_error(exc)}") from None


def on_demand(described: Mapping[str, Any]) -> bool:
    """Whether a described table is billed per request (no provisioned capacity)."""
    return (described.get("BillingModeSummary") or {}).get("BillingMode") == "PAY_PER_REQUEST"


def capacity(described: Mapping[str, Any], which: str) -> float:
    """A described table's ``which`` ("Read" or "Write") capacity units per second:
    provisioned, or what Glue takes for an on-demand table."""
    provisioned = float((described.get("ProvisionedThroughput") or {}).get(f"{which}CapacityUnits") or 0)
    if on_demand(described) or provisioned <= 0:
        return float(ON_DEMAND_READ_UNITS if which == "Read" else ON_DEMAND_WRITE_UNITS)
    return provisioned


def positive_int(options: Mapping[str, Any], name: str, default: int) -> int:
    raw = options.get(name, default)
    try:
        value = int(str(raw))
    except ValueError:
        value = 0
    if value < 1:
        raise SourceError(f"{name} must be a whole number of at least 1, not {raw!r}")
    return value


def fraction(options: Mapping[str, Any], name: str, default: float) -> float:
    raw = options.get(name, default)
    try:
        value = float(str(raw))
    except ValueError:
        value = 0.0
    if not 0.1 <= value <= 1.5:
        raise SourceError(f"{name} must be a number from 0.1 to 1.5, not {raw!r}")
    return value


@dataclass
class Pace:
    """At most ``units_per_second`` capacity units: each ``spend`` waits until what was
    spent since the start fits the rate, and returns how long it waited."""

    units_per_second: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    used: float = 0.0

    def __post_init__(self) -> None:
        self.began = self.clock()

    def spend(self, units: float) -> float:
        self.used += units
        ahead = self.used / self.units_per_second - (self.clock() - self.began)
        if ahead <= 0:
            return 0.0
        self.sleep(ahead)
        return ahead
