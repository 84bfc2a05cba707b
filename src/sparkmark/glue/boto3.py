"""A stand-in for ``boto3`` with the Glue calls a job script makes about its workflow run.

When boto3 is not installed, the awsglue shim lets ``import boto3`` load this module
(``SPARKMARK_BOTO3=shim`` forces it even when boto3 is installed), so a Glue script's

    glue = boto3.client("glue")
    props = glue.get_workflow_run_properties(Name=name, RunId=run_id)["RunProperties"]
    glue.put_workflow_run_properties(Name=name, RunId=run_id, RunProperties={...})

runs unchanged against sparkmark's state store. Any other service or call raises an
error that names it.
"""

from __future__ import annotations

from typing import Any

from ..errors import SparkmarkError
from ..workflow import properties, report
from ..workflow.store import WorkflowStore


class GlueClient:
    """The workflow-run calls of boto3's Glue client."""

    def get_workflow_run_properties(self, *, Name: str, RunId: str) -> dict[str, Any]:
        return {"RunProperties": properties.get_run_properties(Name, RunId)}

    def put_workflow_run_properties(
        self, *, Name: str, RunId: str, RunProperties: dict[str, str]
    ) -> dict[str, Any]:
        properties.put_run_properties(Name, RunId, RunProperties)
        return {}

    def get_workflow_run(self, *, Name: str, RunId: str, IncludeGraph: bool = False) -> dict[str, Any]:
        from ..engine.store import StateStore

        store = WorkflowStore(StateStore.from_settings())
        run = store.workflow_run(RunId, Name)
        return {"Run": report.workflow_run(run, graph=IncludeGraph, firings=store.run_firings(RunId))}

    def __getattr__(self, name: str):
        raise SparkmarkError(
            f"boto3 Glue client call {name!r} is not available under sparkmark; the calls a job "
            "can make are get_workflow_run_properties, put_workflow_run_properties and get_workflow_run"
        )


def client(service_name: str, *args: Any, **kwargs: Any) -> GlueClient:
    if service_name != "glue":
        raise SparkmarkError(
            f"boto3.client({service_name!r}) is not available under sparkmark (boto3 is not "
            "installed); only the Glue workflow-run calls are served locally"
        )
    return GlueClient()
