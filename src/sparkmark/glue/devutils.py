"""``awsglue.devutils``: manage job definitions from a script or notebook.

``GlueJobUtils(glue_context)`` lists, reads, creates, updates and deletes jobs through
boto3's Glue client, which reaches sparkmark's Glue API endpoint (``sparkmark run``
points ``AWS_ENDPOINT_URL_GLUE`` at it; set it yourself elsewhere) or AWS's Glue when
pointed there. ``create_job(job, file)`` first copies the local ``file`` to the job's
script location (``s3://…`` or a path), through sparkmark's storage layer.

The ``Job``, ``Command``, ``ExecutionProperty`` and ``Connections`` records keep
the attribute names AWS's library gives them (``job.command.scriptLocation``…).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("sparkmark.glue.devutils")


@dataclass
class ExecutionProperty:
    maxConcurrentRuns: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {"maxConcurrentRuns": self.maxConcurrentRuns}


@dataclass
class Command:
    name: str = "glueetl"
    scriptLocation: str = "UNKNOWN"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "scriptLocation": self.scriptLocation}


@dataclass
class Connections:
    connections: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"connections": list(self.connections)}


@dataclass
class Job:
    name: str = ""
    description: str = ""
    logUri: str = ""
    role: str = ""
    executionProperty: ExecutionProperty = field(default_factory=ExecutionProperty)
    command: Command = field(default_factory=Command)
    defaultArguments: dict[str, str] = field(default_factory=dict)
    connections: Connections = field(default_factory=Connections)
    maxRetries: int = 0
    createdOn: datetime = field(default_factory=lambda: datetime.now(UTC))
    lastModifiedOn: datetime = field(default_factory=lambda: datetime.now(UTC))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "logUri": self.logUri,
            "role": self.role,
            "executionProperty": self.executionProperty.as_dict(),
            "command": self.command.as_dict(),
            "defaultArguments": dict(self.defaultArguments),
            "maxRetries": self.maxRetries,
            "createdOn": self.createdOn,
            "lastModifiedOn": self.lastModifiedOn,
        }
        if self.connections.connections:
            out["connections"] = self.connections.as_dict()
        return out

    def _api_fields(self) -> dict[str, Any]:
        """The job as the Glue API's CreateJob/UpdateJob fields."""
        fields: dict[str, Any] = {
            "Role": self.role or "sparkmark",
            "Command": {"Name": self.command.name, "ScriptLocation": self.command.scriptLocation},
            "DefaultArguments": dict(self.defaultArguments),
            "ExecutionProperty": {"MaxConcurrentRuns": self.executionProperty.maxConcurrentRuns},
            "MaxRetries": self.maxRetries,
        }
        if self.description:
            fields["Description"] = self.description
        if self.logUri:
            fields["LogUri"] = self.logUri
        if self.connections.connections:
            fields["Connections"] = {"Connections": list(self.connections.connections)}
        return fields


def _from_api(found: dict[str, Any]) -> Job:
    command = found.get("Command") or {}
    return Job(
        name=found["Name"],
        description=found.get("Description", ""),
        logUri=found.get("LogUri", ""),
        role=found.get("Role", ""),
        executionProperty=ExecutionProperty(
            (found.get("ExecutionProperty") or {}).get("MaxConcurrentRuns", 1)
        ),
        command=Command(command.get("Name", "glueetl"), command.get("ScriptLocation", "UNKNOWN")),
        defaultArguments=dict(found.get("DefaultArguments") or {}),
        connections=Connections(list((found.get("Connections") or {}).get("Connections", []))),
        maxRetries=found.get("MaxRetries", 0),
        createdOn=found.get("CreatedOn") or datetime.now(UTC),
        lastModifiedOn=found.get("LastModifiedOn") or datetime.now(UTC),
    )


class GlueJobUtils:
    def __init__(self, glue_context: Any = None, client: Any = None):
        if client is None:
            import boto3

            client = boto3.client("glue")
        self.glue = client

    def get_jobs(self, nextToken: str = "") -> dict[str, Any]:
        found = self.glue.get_jobs(**({"NextToken": nextToken} if nextToken else {}))
        out: dict[str, Any] = {"jobs": [_from_api(j) for j in found.get("Jobs", [])]}
        if found.get("NextToken"):
            out["NextToken"] = found["NextToken"]
        return out

    def get_job(self, jobName: str) -> Job:
        return _from_api(self.glue.get_job(JobName=jobName)["Job"])

    def _upload(self, location: str, file: str) -> None:
        if not file:
            log.warning("no script file given: the job's script at %s is left as it is", location)
            return
        import fsspec

        from ..engine import storage

        with open(file, "rb") as source, fsspec.open(storage.canonical(location), "wb") as target:
            target.write(source.read())

    def create_job(self, job: Job, file: str = "") -> dict[str, Any]:
        self._upload(job.command.scriptLocation, file)
        return self.glue.create_job(Name=job.name, **job._api_fields())

    def update_job(self, job: Job, file: str = "") -> dict[str, Any]:
        self._upload(job.command.scriptLocation, file)
        return self.glue.update_job(JobName=job.name, JobUpdate=job._api_fields())

    def delete_job(self, jobName: str) -> dict[str, Any]:
        return self.glue.delete_job(JobName=jobName)
