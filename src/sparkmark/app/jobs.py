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
# Glue's capacity fields: checked by the definition (``workflow/capacity.py``), acted on
# by its runs, and shown back as given.
CAPACITY_FIELDS = ("MaxCapacity", "WorkerType", "NumberOfWorkers", "ExecutionClass")


def job_definition(name: str, glue: dict[str, Any]) -> dict[str, Any]:
    """The definition a run of job ``name`` uses, from its Glue fields; raises
    :class:`ArgumentError` or :class:`ConfigError` for what a run could not use."""
    from ..workflow.capacity import RAY, RAY_REFUSED
    from ..workflow.definition import JobDefinition, _validate

    command = glue.get("Command") or {}
    if command.get("Name") == RAY:
        raise ArgumentError(RAY_REFUSED)
    script = command.get("ScriptLocation")
    if not script:
        raise ArgumentError("Command.ScriptLocation is required: it is the script sparkmark runs")
    doc: dict[str, Any] = {
        "Script": script,
        "Description": glue.get("Description") or "",
        "Command": command.get("Name") or "glueetl",
    }
    if glue.get("GlueVersion") is not None:
        doc["GlueVersion"] = str(glue["GlueVersion"])
    if command.get("PythonVersion") is not None:
        doc["PythonVersion"] = str(command["PythonVersion"])
    for field in CAPACITY_FIELDS:
        if glue.get(field) is not None:
            doc[field] = glue[field]
    for field in ("DefaultArguments", "MaxRetries", "Timeout"):
        if glue.get(field) is not None:
            doc[field] = glue[field]
    concurrent = (glue.get("ExecutionProperty") or {}).get("MaxConcurrentRuns")
    if concurrent is not None:
        doc["MaxConcurrentRuns"] = concurrent
    _validate(JobDefinition, "jobs", name, doc)  # refuse what a run could not use
    return doc
