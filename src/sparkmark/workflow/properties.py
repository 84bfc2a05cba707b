"""Workflow run properties, read and written by the jobs of a run.

A job started by a workflow run gets ``--WORKFLOW_NAME`` and ``--WORKFLOW_RUN_ID``
among its arguments, as on Glue::

    from sparkmark import Job
    from sparkmark.workflow import properties

    job = Job.from_args()
    props = properties.get(job.args)                 # the run's properties
    properties.put(job.args, {"rows": str(count)})   # merged into them

Glue scripts use boto3's ``get_workflow_run_properties`` /
``put_workflow_run_properties``, which the Glue façade serves from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..engine.store import StateStore
from ..errors import ArgumentError
from .store import WorkflowStore


def _ids(args: Mapping[str, str]) -> tuple[str, str]:
    name, run_id = args.get("WORKFLOW_NAME"), args.get("WORKFLOW_RUN_ID")
    if not name or not run_id:
        raise ArgumentError(
            "this run was not started by a workflow: it has no --WORKFLOW_NAME and "
            "--WORKFLOW_RUN_ID arguments (start it with `sparkmark workflow run`)"
        )
    return name, run_id


def get_run_properties(workflow: str, run_id: str, store: StateStore | None = None) -> dict[str, str]:
    return WorkflowStore(store or StateStore.from_settings()).run_properties(workflow, run_id)


def put_run_properties(
    workflow: str, run_id: str, values: Mapping[str, str], store: StateStore | None = None
) -> dict[str, str]:
    return WorkflowStore(store or StateStore.from_settings()).put_run_properties(
        workflow, run_id, dict(values)
    )


def get(args: Mapping[str, str], store: StateStore | None = None) -> dict[str, str]:
    """The properties of the workflow run that started this job."""
    return get_run_properties(*_ids(args), store=store)


def put(
    args: Mapping[str, str], values: Mapping[str, str], store: StateStore | None = None
) -> dict[str, str]:
    """Merge ``values`` into the properties of the workflow run that started this job."""
    return put_run_properties(*_ids(args), values, store=store)
