"""The endpoint's answers checked against botocore's model of Glue, without a server:
what sparkmark records, shaped for Glue, must be an answer Glue's model accepts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from sparkmark.api.protocol import operation, render_response
from sparkmark.api.workflows import glue_workflow_run
from sparkmark.workflow import report
from sparkmark.workflow.records import ActionRecord, ActionState, WorkflowRunRecord, WorkflowRunStatus

T0 = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)


def _action(kind: str, name: str, state: ActionState, number: int) -> ActionRecord:
    ended = state.value not in ("WAITING", "RUNNING")
    return ActionRecord(
        action_id=f"{kind.lower()}_{number}",
        kind=kind,
        name=name,
        attempt=0,
        first_id=f"{kind.lower()}_{number}",
        state=state,
        final=ended,
        workflow_run_id="wr_1",
        trigger="start",
        arguments={"--day": "2026-11-26"},
        timeout_minutes=None,
        supervisor=None,
        host=None,
        pid=None,
        queued_at=T0,
        started_at=T0 if state is not ActionState.WAITING else None,
        ended_at=T0 + timedelta(seconds=90) if ended else None,
        error="it broke" if state.value in ("FAILED", "ERROR", "TIMEOUT") else None,
        log_path="/var/log/x.log",
    )


def _run() -> WorkflowRunRecord:
    actions = [_action("JOB", "load", s, i) for i, s in enumerate(ActionState)]
    actions += [_action("CRAWLER", "orders-crawler", s, i) for i, s in enumerate(ActionState)]
    return WorkflowRunRecord(
        run_id="wr_1",
        workflow="daily",
        status=WorkflowRunStatus.COMPLETED,
        started_at=T0,
        completed_at=T0 + timedelta(minutes=5),
        properties={"env": "test"},
        graph={
            "Nodes": [
                {"Type": "TRIGGER", "Name": "start", "UniqueId": "t1"},
                {"Type": "JOB", "Name": "load", "UniqueId": "j1"},
                {"Type": "CRAWLER", "Name": "orders-crawler", "UniqueId": "c1"},
            ],
            "Edges": [{"SourceId": "t1", "DestinationId": "j1"}, {"SourceId": "j1", "DestinationId": "c1"}],
        },
        start_trigger="start",
        supervisor=None,
        error=None,
        actions=actions,
    )


@pytest.mark.parametrize("operation_name", ["GetWorkflowRun", "GetWorkflowRuns"])
def test_a_workflow_run_graph_with_every_node_type_and_state_is_an_answer_glue_accepts(operation_name):
    """get-workflow-run(s) --include-graph for a workflow with a crawler: each crawl in
    Glue's Crawl shape (no id of sparkmark's), each state one Glue's model knows."""
    shaped = glue_workflow_run(report.workflow_run(_run(), graph=True, firings=[]))
    result = {"Run": shaped} if operation_name == "GetWorkflowRun" else {"Runs": [shaped]}
    body = json.loads(render_response(operation(operation_name), result))
    run = body["Run"] if operation_name == "GetWorkflowRun" else body["Runs"][0]
    nodes = {n["Type"]: n for n in run["Graph"]["Nodes"]}
    crawls = nodes["CRAWLER"]["CrawlerDetails"]["Crawls"]
    assert len(crawls) == len(ActionState)
    # Glue's CrawlState: a stopped crawl is CANCELLED, a finished one SUCCEEDED.
    assert {c["State"] for c in crawls} == {"RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "ERROR"}
    assert all(c["LogGroup"] == "/aws-glue/crawlers" and c["LogStream"] == "orders-crawler" for c in crawls)
    job_states = {r["JobRunState"] for r in nodes["JOB"]["JobDetails"]["JobRuns"]}
    assert "WAITING" not in job_states and "SUCCEEDED" in job_states
    assert nodes["TRIGGER"]["TriggerDetails"] == {}


def test_an_empty_workflow_run_is_an_answer_glue_accepts():
    empty = _run()
    empty.actions.clear()
    shaped = glue_workflow_run(report.workflow_run(empty, graph=True, firings=[]))
    body = json.loads(render_response(operation("GetWorkflowRun"), {"Run": shaped}))
    assert body["Run"]["Statistics"]["TotalActions"] == 0
    assert body["Run"]["Graph"]["Nodes"][2]["CrawlerDetails"] == {"Crawls": []}


def test_an_answer_with_a_value_outside_a_models_enum_is_refused_naming_it():
    """botocore's validator checks names and types, not enum values: the endpoint checks
    them too, for every operation it answers, so no client meets a state Glue never sends."""
    from sparkmark.api.protocol import GlueApiError, enum_violations

    run = {"JobRun": {"Id": "jr_1", "JobName": "load", "JobRunState": "CANCELLED", "Attempt": 0}}
    with pytest.raises(GlueApiError, match=r"JobRun.JobRunState='CANCELLED' is not one of STARTING"):
        render_response(operation("GetJobRun"), run)
    crawls = {"Crawls": [{"State": "COMPLETED"}, {"State": "SUCCEEDED"}]}
    shape = operation("GetWorkflowRun").output_shape.members["Run"].members["Graph"].members["Nodes"]
    node = shape.member.members["CrawlerDetails"]
    assert enum_violations(crawls, node) == [
        "Crawls[0].State='COMPLETED' is not one of RUNNING, CANCELLING, CANCELLED, SUCCEEDED, FAILED, ERROR"
    ]
    assert enum_violations({"Crawls": []}, node) == []


def test_a_run_that_failed_before_it_started_its_script_has_an_execution_time():
    """Glue's JobRun has ExecutionTime (seconds) for a failed run as for any other; 0
    while it waits."""
    from sparkmark.api.jobs import _run_doc

    failed = _action("JOB", "load", ActionState.FAILED, 1)
    body = json.loads(render_response(operation("GetJobRun"), {"JobRun": _run_doc(None, failed)}))
    assert body["JobRun"]["JobRunState"] == "FAILED" and body["JobRun"]["ExecutionTime"] == 90
    waiting = _action("JOB", "load", ActionState.WAITING, 2)
    body = json.loads(render_response(operation("GetJobRun"), {"JobRun": _run_doc(None, waiting)}))
    assert body["JobRun"]["JobRunState"] == "STARTING" and body["JobRun"]["ExecutionTime"] == 0


def test_batch_get_workflows_of_a_workflow_with_a_crawler_and_none_missing_is_an_answer_glue_accepts():
    """BatchGetWorkflows answered a workflow with a crawler with InternalServiceException:
    its MissingWorkflows, a list that must hold one name or more, was sent empty. Glue
    leaves such a list out."""
    from sparkmark.api.workflows import glue_workflow_run

    run = _run()
    last = glue_workflow_run(report.workflow_run(run, graph=False, firings=None))
    answer = {"Workflows": [{"Name": "daily", "LastRun": last, "Graph": run.graph}], "MissingWorkflows": []}
    body = json.loads(render_response(operation("BatchGetWorkflows"), answer))
    assert "MissingWorkflows" not in body
    assert [n["Type"] for n in body["Workflows"][0]["Graph"]["Nodes"]] == ["TRIGGER", "JOB", "CRAWLER"]
    missing = json.loads(
        render_response(operation("BatchGetWorkflows"), {"Workflows": [], "MissingWorkflows": ["x"]})
    )
    assert missing == {"MissingWorkflows": ["x"]}  # Workflows too must hold one or more


def test_a_statements_output_status_is_livys_ok_or_error_as_glue_sends_it():
    """Glue sends a statement's Output.Status as "ok" or "error" (AWS's Glue kernel reads
    "ok"), outside the model's StatementState enum: the enum check lets exactly those by."""
    from sparkmark.api.protocol import GlueApiError

    def statement(status: str) -> dict:
        return {
            "Statement": {"Id": 0, "State": "AVAILABLE", "Output": {"Status": status, "ExecutionCount": 0}}
        }

    for status in ("ok", "error", "AVAILABLE"):
        body = json.loads(render_response(operation("GetStatement"), statement(status)))
        assert body["Statement"]["Output"]["Status"] == status
    with pytest.raises(GlueApiError, match="Output.Status='okay'"):
        render_response(operation("GetStatement"), statement("okay"))
