"""A job's Glue fields and sparkmark's definition of it: one mapping, with validation,
for every door that stores jobs (the Glue API's CreateJob and UpdateJob, the Studio's
save)."""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError

# Fields the job definition acts on; the others are kept and shown as given.
ACTED_ON = frozenset(
    {"Name", "Command", "DefaultArguments", "Description", "MaxRetries", "Timeout", "ExecutionProperty"}
)
COMMANDS = (None, "glueetl", "pythonshell", "gluestreaming")


def job_definition(name: str, glue: dict[str, Any]) -> dict[str, Any]:
    """The definition a run of job ``name`` uses, from its Glue fields; raises
    :class:`ArgumentError` or :class:`ConfigError` for what a run could not use."""
    from ..workflow.definition import JobDefinition, _validate

    command = glue.get("Command") or {}
    script = command.get("ScriptLocation")
    if not script:
        raise ArgumentError("Command.ScriptLocation is required: it is the script sparkmark runs")
    if command.get("Name") not in COMMANDS:
        raise ArgumentError(f"Command.Name {command.get('Name')!r} is not a Glue job command")
    doc: dict[str, Any] = {"Script": script, "Description": glue.get("Description") or ""}
    for field in ("DefaultArguments", "MaxRetries", "Timeout"):
        if glue.get(field) is not None:
            doc[field] = glue[field]
    concurrent = (glue.get("ExecutionProperty") or {}).get("MaxConcurrentRuns")
    if concurrent is not None:
        doc["MaxConcurrentRuns"] = concurrent
    _validate(JobDefinition, "jobs", name, doc)  # refuse what a run could not use
    return doc
