"""Jobs, triggers and workflows: cron translation, definitions, the scheduler with an
injected clock, real job processes, retries, timeouts, run properties, restarts and
two schedulers at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparkmark.engine.store import StateStore
from sparkmark.errors import ConfigError
from sparkmark.workflow import cron, report
from sparkmark.workflow.definition import load_project
from sparkmark.workflow.records import actions
from sparkmark.workflow.scheduler import Scheduler
from sparkmark.workflow.store import WorkflowStore

from .conftest import pg_url

SPARKMARK = Path(sys.executable).with_name("sparkmark")


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


# --------------------------------------------------------------------------- cron


@pytest.mark.parametrize(
    "expression,after,expected",
    [
        # Glue's documented examples, with their next firings worked out by hand.
        (
            "cron(15 12 * * ? *)",
            at(2026, 11, 23, 13, 0),
            [at(2026, 11, 24, 12, 15), at(2026, 11, 25, 12, 15)],
        ),
        (
            "cron(0 18 ? * MON-FRI *)",
            at(2026, 11, 27, 19, 0),  # a Friday evening: next is Monday
            [at(2026, 11, 30, 18, 0), at(2026, 12, 1, 18, 0)],
        ),
        ("cron(0 8 1 * ? *)", at(2026, 11, 23), [at(2026, 12, 1, 8, 0), at(2027, 1, 1, 8, 0)]),
        (
            "cron(0/15 * * * ? *)",
            at(2026, 11, 23, 10, 7),
            [at(2026, 11, 23, 10, 15), at(2026, 11, 23, 10, 30)],
        ),
        (
            "cron(0/10 * ? * MON-FRI *)",
            at(2026, 11, 27, 23, 55),  # Friday 23:55 → Monday 00:00
            [at(2026, 11, 30, 0, 0), at(2026, 11, 30, 0, 10)],
        ),
        (
            "cron(0/5 8-17 ? * MON-FRI *)",
            at(2026, 11, 23, 17, 56),
            [at(2026, 11, 24, 8, 0), at(2026, 11, 24, 8, 5)],
        ),
        # day-of-week numbers: 1 is Sunday on Glue
        ("cron(30 6 ? * 1 *)", at(2026, 11, 23), [at(2026, 11, 29, 6, 30), at(2026, 12, 6, 6, 30)]),
        (
            "cron(0 9 ? * 2#1 *)",
            at(2026, 11, 23),
            [at(2026, 12, 7, 9, 0), at(2027, 1, 4, 9, 0)],
        ),  # first Monday
        (
            "cron(0 12 ? * 6L *)",
            at(2026, 11, 1),
            [at(2026, 11, 27, 12, 0), at(2026, 12, 25, 12, 0)],
        ),  # last Friday
        ("cron(0 10 L * ? *)", at(2027, 2, 1), [at(2027, 2, 28, 10, 0), at(2027, 3, 31, 10, 0)]),
        ("cron(0 0 1 JAN ? 2027-2028)", at(2026, 11, 23), [at(2027, 1, 1), at(2028, 1, 1)]),
    ],
)
def test_cron_translation_against_glue_examples(expression, after, expected):
    schedule = cron.parse(expression)
    got, moment = [], after
    for _ in expected:
        moment = schedule.next_after(moment)
        got.append(moment)
    assert got == expected


def test_cron_years_run_out_and_windows_are_listed():
    schedule = cron.parse("cron(0 0 1 JAN ? 2027-2028)")
    assert schedule.next_after(at(2028, 1, 1)) is None
    hourly = cron.parse("cron(0 * * * ? *)")
    assert hourly.between(at(2026, 1, 1, 0, 30), at(2026, 1, 1, 3, 0)) == [
        at(2026, 1, 1, 1),
        at(2026, 1, 1, 2),
        at(2026, 1, 1, 3),
    ]
    assert hourly.latest_in(at(2026, 1, 1, 0, 30), at(2026, 1, 1, 3, 59)) == at(2026, 1, 1, 3)
    assert hourly.latest_in(at(2026, 1, 1, 3, 0), at(2026, 1, 1, 3, 59)) is None
    assert hourly.count_in(at(2026, 1, 1, 0, 30), at(2026, 1, 1, 3)) == 2


@pytest.mark.parametrize(
    "expression,message",
    [
        ("cron(0 12 * * MON *)", "exactly one of day-of-month and day-of-week must be '?'"),
        ("cron(0 12 ? * ? *)", "exactly one of day-of-month and day-of-week must be '?'"),
        ("cron(0 12 * * ?)", "it has 5 fields; Glue's cron has 6"),
        ("cron(60 12 * * ? *)", "60 is out of range for the minutes field (0-59)"),
        ("cron(0 12 ? * 8 *)", "8 is out of range for the day-of-week field (1-7)"),
        ("cron(0 12 LW * ? *)", "LW (the last weekday of the month) is not supported"),
        ("cron(0 ? * * ? *)", "'?' is only allowed in day-of-month or day-of-week, not hours"),
        # Glue: "Cron expressions that lead to rates faster than 5 minutes are not supported."
        (
            "cron(* * * * ? *)",
            "fires 1 minute(s) apart; Glue does not support cron expressions that lead to rates faster than 5 minutes",
        ),
        ("cron(0/4 * * * ? *)", "fires 4 minute(s) apart"),
        ("cron(0,3 8 ? * MON-FRI *)", "fires 3 minute(s) apart"),
        ("cron(0,58 * * * ? *)", "fires 2 minute(s) apart"),  # 58, then the next hour's 0
        ("rate(5 minutes)", "a schedule is written cron(...)"),
        ("cron(0 12 ? * MON-SUNDAY *)", "'SUNDAY' is not a value of the day-of-week field"),
    ],
)
def test_cron_errors_say_what_is_wrong(expression, message):
    with pytest.raises(cron.CronError) as caught:
        cron.parse(expression)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "expression", ["cron(0/5 * * * ? *)", "cron(58 7,8 ? * MON-FRI *)", "cron(0,55 * * * ? *)"]
)
def test_schedules_five_minutes_apart_or_more_are_accepted(expression):
    assert cron.parse(expression).next_after(at(2026, 11, 23)) is not None


# --------------------------------------------------------------------------- definitions

OK_SCRIPT = """
from sparkmark import Job
job = Job.from_args()
job.commit()
"""


def write_project(folder: Path, toml: str, scripts: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in (scripts or {}).items():
        (folder / name).write_text(textwrap.dedent(body), encoding="utf-8")
    path = folder / "sparkmark.toml"
    path.write_text(textwrap.dedent(toml), encoding="utf-8")
    return path


BASE = """
[jobs.a]
Script = "ok.py"
[jobs.b]
Script = "ok.py"
[workflows.wf]
Description = "two steps"
[triggers.go]
Type = "ON_DEMAND"
WorkflowName = "wf"
Actions = [{ JobName = "a" }]
"""


@pytest.mark.parametrize(
    "extra,message",
    [
        ('[jobs.c]\nScript = "ok.py"\nRetries = 3\n', "invalid [jobs.c]: unknown key 'Retries'"),
        (
            '[triggers.t]\nType = "SCHEDULED"\nSchedule = "cron(0 12 * * MON *)"\nActions = [{ JobName = "a" }]\n',
            "exactly one of day-of-month and day-of-week must be '?'",
        ),
        (
            '[triggers.t]\nType = "CONDITIONAL"\nPredicate = { Conditions = [{ JobName = "a", State = "SUCCEEDED" }] }\n'
            'Actions = [{ JobName = "nope" }]\n',
            "trigger 't' names job 'nope', which is not declared",
        ),
        (
            '[triggers.t]\nType = "CONDITIONAL"\nPredicate = { Conditions = [{ JobName = "a", State = "SUCCEEDED" }] }\n'
            'Actions = [{ JobName = "b" }]\n'
            '[triggers.u]\nType = "CONDITIONAL"\nPredicate = { Conditions = [{ JobName = "b", State = "FAILED" }] }\n'
            'Actions = [{ JobName = "a" }]\n',
            "the triggers form a cycle (job a -> job b -> job a",
        ),
        (
            '[triggers.t]\nType = "CONDITIONAL"\nPredicate = { Conditions = [{ JobName = "a", State = "DONE" }] }\n'
            'Actions = [{ JobName = "b" }]\n',
            "Predicate.Conditions.0.State",
        ),
        (
            '[triggers.t]\nType = "CONDITIONAL"\nPredicate = { Conditions = [{ JobName = "a", CrawlState = "SUCCEEDED" }] }\n'
            'Actions = [{ JobName = "b" }]\n',
            "needs State (and no CrawlState)",
        ),
        (
            '[triggers.t]\nType = "ON_DEMAND"\nStartOnCreation = true\nActions = [{ JobName = "b" }]\n',
            "StartOnCreation is not allowed on an ON_DEMAND trigger",
        ),
        (
            '[triggers.t]\nType = "ON_DEMAND"\nWorkflowName = "wf"\nActions = [{ JobName = "b" }]\n',
            "workflow 'wf' has 2 start triggers",
        ),
        (
            '[triggers.t]\nType = "ON_DEMAND"\nWorkflowName = "other"\nActions = [{ JobName = "b" }]\n',
            "names workflow 'other', which is not declared: add [workflows.other]",
        ),
        ("[schedules.x]\nA = 1\n", "unknown section 'schedules'"),
        (
            '[jobs.c]\nScript = "ok.py"\nDefaultArguments = { input = "x" }\n',
            "argument names start with '--'",
        ),
    ],
)
def test_invalid_definitions_are_refused_with_a_clear_error(tmp_path, extra, message):
    path = write_project(tmp_path, BASE + extra)
    with pytest.raises(ConfigError) as caught:
        load_project(path)
    assert message in str(caught.value)


@pytest.mark.slow
def test_cli_reports_an_invalid_file_in_one_line(tmp_path):
    path = write_project(tmp_path, BASE + '[jobs.c]\nScript = "ok.py"\nRetries = 3\n')
    done = subprocess.run(
        [str(SPARKMARK), "workflow", "list", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "error: invalid [jobs.c]: unknown key 'Retries'" in done.stderr
    assert "Traceback" not in done.stderr


def test_definition_graph_and_defaults(tmp_path):
    project = load_project(
        write_project(
            tmp_path,
            BASE
            + """
        [triggers.then]
        Type = "CONDITIONAL"
        WorkflowName = "wf"
        Predicate = { Logical = "ANY", Conditions = [{ JobName = "a", State = "SUCCEEDED" }] }
        Actions = [{ JobName = "b", Arguments = { "--day" = "1" } }]
    """,
            {"ok.py": OK_SCRIPT},
        )
    )
    job = project.job("a")
    assert (job.MaxRetries, job.Timeout, job.MaxConcurrentRuns) == (0, 2880, 1)
    assert job.Script == str(tmp_path / "ok.py")
    graph = project.graph("wf")
    assert {n["UniqueId"] for n in graph["Nodes"]} == {"trigger:go", "job:a", "trigger:then", "job:b"}
    assert {(e["SourceId"], e["DestinationId"]) for e in graph["Edges"]} == {
        ("trigger:go", "job:a"),
        ("job:a", "trigger:then"),
        ("trigger:then", "job:b"),
    }


# --------------------------------------------------------------------------- the scheduler


class Clock:
    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


def scheduler_for(path: Path, clock: Clock | None = None, owner: str | None = None) -> Scheduler:
    return Scheduler(load_project(path), StateStore.from_settings(), clock=clock, owner=owner)


def drive(scheduler: Scheduler, until, seconds: float = 90) -> None:
    assert scheduler.run(until=until, max_seconds=seconds, poll_seconds=0.05), "the runs did not end in time"


def finished(scheduler: Scheduler, run_id: str) -> bool:
    return scheduler.store.workflow_run(run_id).status.value in ("COMPLETED", "STOPPED", "ERROR")


def node_states(scheduler: Scheduler, run_id: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in scheduler.store.workflow_run(run_id).actions:
        out.setdefault(a.name, []).append(a.state.value)
    return out


FAIL_SCRIPT = """
from sparkmark import Job
job = Job.from_args()
raise RuntimeError("this job always fails")
"""

HANG_SCRIPT = """
import threading
from sparkmark import Job
job = Job.from_args()
print("started", flush=True)
threading.Event().wait()
"""

PREDICATES = """
[jobs.a]
Script = "ok.py"
[jobs.b]
Script = "ok.py"
[jobs.both]
Script = "ok.py"
[jobs.either]
Script = "ok.py"
[jobs.never]
Script = "ok.py"
[workflows.wf]
DefaultRunProperties = { env = "test" }
[triggers.go]
Type = "ON_DEMAND"
WorkflowName = "wf"
Actions = [{ JobName = "a" }, { JobName = "b" }]
[triggers.and_]
Type = "CONDITIONAL"
WorkflowName = "wf"
Predicate = { Logical = "AND", Conditions = [
  { LogicalOperator = "EQUALS", JobName = "a", State = "SUCCEEDED" },
  { LogicalOperator = "EQUALS", JobName = "b", State = "SUCCEEDED" } ] }
Actions = [{ JobName = "both" }]
[triggers.any_]
Type = "CONDITIONAL"
WorkflowName = "wf"
Predicate = { Logical = "ANY", Conditions = [
  { JobName = "a", State = "FAILED" }, { JobName = "b", State = "SUCCEEDED" } ] }
Actions = [{ JobName = "either" }]
[triggers.on_fail]
Type = "CONDITIONAL"
WorkflowName = "wf"
Predicate = { Conditions = [{ JobName = "both", State = "FAILED" }] }
Actions = [{ JobName = "never" }]
"""


@pytest.mark.slow
def test_and_and_any_predicates_in_a_workflow_run(tmp_path):
    sched = scheduler_for(write_project(tmp_path, PREDICATES, {"ok.py": OK_SCRIPT}))
    run_id = sched.start_workflow_run("wf", supervisor=sched.owner)
    drive(sched, lambda: finished(sched, run_id))
    run = sched.store.workflow_run(run_id)
    assert run.status.value == "COMPLETED"
    assert node_states(sched, run_id) == {
        "a": ["SUCCEEDED"],
        "b": ["SUCCEEDED"],
        "both": ["SUCCEEDED"],
        "either": ["SUCCEEDED"],
    }
    assert run.statistics["TotalActions"] == 4 and run.statistics["SucceededActions"] == 4
    assert run.properties == {"env": "test"}
    # The AND trigger waited for both: its job was queued after the later of a and b ended.
    acts = {a.name: a for a in run.actions}
    assert acts["both"].queued_at >= max(acts["a"].ended_at, acts["b"].ended_at)
    # Each job ran in its own process and recorded its run under the id the scheduler chose.
    state = StateStore.from_settings()
    assert state.get_run(acts["both"].action_id).state.value == "SUCCEEDED"
    doc = report.workflow_run(run, graph=True, firings=sched.store.run_firings(run_id))
    fired = {n["Name"]: n["TriggerDetails"]["Fired"] for n in doc["Graph"]["Nodes"] if n["Type"] == "TRIGGER"}
    assert fired == {"go": True, "and_": True, "any_": True, "on_fail": False}
    never = next(n for n in doc["Graph"]["Nodes"] if n["Name"] == "never")
    assert never["JobDetails"]["JobRuns"] == []


@pytest.mark.slow
def test_failed_and_timeout_branches(tmp_path):
    clock = Clock(at(2026, 11, 23, 9, 0))
    path = write_project(
        tmp_path,
        """
        [jobs.flaky]
        Script = "fail.py"
        [jobs.slow]
        Script = "hang.py"
        Timeout = 5
        [jobs.alert]
        Script = "ok.py"
        [jobs.cleanup]
        Script = "ok.py"
        [jobs.next]
        Script = "ok.py"
        [workflows.wf]
        [triggers.go]
        Type = "ON_DEMAND"
        WorkflowName = "wf"
        Actions = [{ JobName = "flaky" }, { JobName = "slow" }]
        [triggers.on_failed]
        Type = "CONDITIONAL"
        WorkflowName = "wf"
        Predicate = { Conditions = [{ LogicalOperator = "EQUALS", JobName = "flaky", State = "FAILED" }] }
        Actions = [{ JobName = "alert" }]
        [triggers.on_timeout]
        Type = "CONDITIONAL"
        WorkflowName = "wf"
        Predicate = { Conditions = [{ LogicalOperator = "EQUALS", JobName = "slow", State = "TIMEOUT" }] }
        Actions = [{ JobName = "cleanup" }]
        [triggers.on_success]
        Type = "CONDITIONAL"
        WorkflowName = "wf"
        Predicate = { Logical = "ANY", Conditions = [{ JobName = "flaky", State = "SUCCEEDED" },
                                                     { JobName = "slow", State = "SUCCEEDED" }] }
        Actions = [{ JobName = "next" }]
    """,
        {"ok.py": OK_SCRIPT, "fail.py": FAIL_SCRIPT, "hang.py": HANG_SCRIPT},
    )
    sched = scheduler_for(path, clock)
    run_id = sched.start_workflow_run("wf", supervisor=sched.owner)

    def slow_running_and_alert_done() -> bool:
        states = node_states(sched, run_id)
        return states.get("slow") == ["RUNNING"] and states.get("alert") == ["SUCCEEDED"]

    drive(sched, slow_running_and_alert_done)
    clock.advance(minutes=4)  # within the 5-minute timeout: still running
    sched.tick()
    assert node_states(sched, run_id)["slow"] == ["RUNNING"]
    clock.advance(minutes=2)  # past it
    drive(sched, lambda: finished(sched, run_id))
    states = node_states(sched, run_id)
    assert states == {
        "flaky": ["FAILED"],
        "slow": ["TIMEOUT"],
        "alert": ["SUCCEEDED"],
        "cleanup": ["SUCCEEDED"],
    }
    run = sched.store.workflow_run(run_id)
    assert run.status.value == "COMPLETED"
    assert (run.statistics["FailedActions"], run.statistics["TimeoutActions"]) == (1, 1)
    slow = next(a for a in run.actions if a.name == "slow")
    assert "timed out after 5 minutes" in slow.error
    # The killed process's job run is closed as TIMEOUT and its lease freed.
    state = StateStore.from_settings()
    assert state.get_run(slow.action_id).state.value == "TIMEOUT"
    assert state.get_lease("slow") is None
    flaky = next(a for a in run.actions if a.name == "flaky")
    assert "this job always fails" in flaky.error


@pytest.mark.slow
def test_retries_are_attempts_of_the_same_run(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text('{"id": 1}\n')
    path = write_project(
        tmp_path,
        f"""
        [jobs.flaky]
        Script = "flaky.py"
        MaxRetries = 2
        DefaultArguments = {{ "--job-bookmark-option" = "job-bookmark-enable", "--marker" = "{tmp_path / "tries"}" }}
    """,
        {
            "flaky.py": """
        import os
        from pathlib import Path
        from sparkmark import Job
        job = Job.from_args()
        marker = Path(job.args["marker"])
        tries = int(marker.read_text()) if marker.exists() else 0
        marker.write_text(str(tries + 1))
        if tries < 2:
            raise RuntimeError(f"failing on purpose, try {tries}")
        job.commit()
    """
        },
    )
    sched = scheduler_for(path)
    first = sched.start_job_run("flaky", supervisor=sched.owner)
    drive(sched, lambda: sched.store.actions_of(first_id=first)[-1].final)
    attempts = sched.store.actions_of(first_id=first)
    assert [(a.attempt, a.state.value, a.final) for a in attempts] == [
        (0, "FAILED", False),
        (1, "FAILED", False),
        (2, "SUCCEEDED", True),
    ]
    assert [a.action_id for a in attempts] == [first, f"{first}_attempt_1", f"{first}_attempt_2"]
    assert [report.job_run(a)["PreviousRunId"] for a in attempts] == [None, first, f"{first}_attempt_1"]
    state = StateStore.from_settings()
    runs = {r.run_id: r for r in state.list_runs("flaky")}
    assert [runs[a.action_id].attempt for a in attempts] == [0, 1, 2]
    assert runs[f"{first}_attempt_2"].previous_run_id == f"{first}_attempt_1"
    latest = state.latest_version("flaky")
    assert (latest.run_id, latest.attempt) == (f"{first}_attempt_2", 2)


@pytest.mark.slow
def test_run_properties_pass_between_jobs(tmp_path):
    # The consumer calls the real boto3, which `sparkmark run` points at a Glue API
    # endpoint it starts for the run (none is running here).
    out = tmp_path / "seen.json"
    path = write_project(
        tmp_path,
        f"""
        [jobs.producer]
        Script = "producer.py"
        [jobs.consumer]
        Script = "consumer.py"
        DefaultArguments = {{ "--out" = "{out}" }}
        [workflows.wf]
        DefaultRunProperties = {{ env = "dev", day = "2026-11-23" }}
        [triggers.go]
        Type = "ON_DEMAND"
        WorkflowName = "wf"
        Actions = [{{ JobName = "producer" }}]
        [triggers.then]
        Type = "CONDITIONAL"
        WorkflowName = "wf"
        Predicate = {{ Conditions = [{{ JobName = "producer", State = "SUCCEEDED" }}] }}
        Actions = [{{ JobName = "consumer" }}]
    """,
        {
            "producer.py": """
            from sparkmark import Job
            from sparkmark.workflow import properties
            job = Job.from_args()
            props = properties.get(job.args)
            properties.put(job.args, {"rows": "42", "from_env": props["env"]})
            job.commit()
        """,
            # A Glue-style script: getResolvedOptions and boto3's Glue client, unchanged.
            "consumer.py": """
            import json, sys
            import boto3
            from awsglue.utils import getResolvedOptions
            args = getResolvedOptions(sys.argv, ["WORKFLOW_NAME", "WORKFLOW_RUN_ID", "out"])
            glue = boto3.client("glue")
            props = glue.get_workflow_run_properties(Name=args["WORKFLOW_NAME"],
                                                     RunId=args["WORKFLOW_RUN_ID"])["RunProperties"]
            status = glue.get_workflow_run(Name=args["WORKFLOW_NAME"], RunId=args["WORKFLOW_RUN_ID"])["Run"]["Status"]
            with open(args["out"], "w") as f:
                json.dump({**props, "status_seen": status}, f)
            glue.put_workflow_run_properties(Name=args["WORKFLOW_NAME"], RunId=args["WORKFLOW_RUN_ID"],
                                             RunProperties={"consumed": "yes"})
        """,
        },
    )
    sched = scheduler_for(path)
    run_id = sched.start_workflow_run("wf", supervisor=sched.owner, properties={"day": "2026-11-24"})
    drive(sched, lambda: finished(sched, run_id))
    assert node_states(sched, run_id) == {"producer": ["SUCCEEDED"], "consumer": ["SUCCEEDED"]}
    assert json.loads(out.read_text()) == {
        "env": "dev",
        "day": "2026-11-24",
        "rows": "42",
        "from_env": "dev",
        "status_seen": "RUNNING",
    }
    assert sched.store.workflow_run(run_id).properties == {
        "env": "dev",
        "day": "2026-11-24",
        "rows": "42",
        "from_env": "dev",
        "consumed": "yes",
    }


SCHEDULED = """
[jobs.a]
Script = "ok.py"
[jobs.b]
Script = "ok.py"
[workflows.hourly]
[triggers.every_hour]
Type = "SCHEDULED"
Schedule = "cron(0 * * * ? *)"
WorkflowName = "hourly"
StartOnCreation = true
Actions = [{ JobName = "a" }]
[triggers.then]
Type = "CONDITIONAL"
WorkflowName = "hourly"
Predicate = { Conditions = [{ JobName = "a", State = "SUCCEEDED" }] }
Actions = [{ JobName = "b" }]
[triggers.off]
Type = "SCHEDULED"
Schedule = "cron(30 * * * ? *)"
Actions = [{ JobName = "b" }]
"""


@pytest.mark.slow
def test_schedules_fire_once_per_window_across_restarts(tmp_path):
    path = write_project(tmp_path, SCHEDULED, {"ok.py": OK_SCRIPT})
    clock = Clock(at(2026, 11, 23, 1, 50))
    first = scheduler_for(path, clock, owner="test-scheduler-one")
    first.tick()  # records the triggers: the schedule starts from now
    clock.now = at(2026, 11, 23, 1, 59)
    first.tick()
    assert first.store.firings("every_hour") == []
    clock.now = at(2026, 11, 23, 2, 0, 30)
    first.tick()
    first.tick()
    fired = first.store.firings("every_hour")
    assert [f["fire_key"] for f in fired] == ["2026-11-23T02:00:00+00:00"]
    runs = first.store.workflow_runs("hourly")
    assert len(runs) == 1
    drive(first, lambda: finished(first, runs[0].run_id))
    assert node_states(first, runs[0].run_id) == {"a": ["SUCCEEDED"], "b": ["SUCCEEDED"]}

    # The first scheduler is gone (its owner string names no live process). A new one,
    # started in the same window, fires nothing again.
    second = scheduler_for(path, clock, owner="test-scheduler-two")
    assert second.tick()
    assert len(second.store.firings("every_hour")) == 1
    # Nothing ran from 02:00:30 to 04:10: the 03:00 and 04:00 windows were missed.
    # The restart fires once for them (the latest), and says how many it covered.
    clock.now = at(2026, 11, 23, 4, 10)
    third = scheduler_for(path, clock, owner="test-scheduler-three")
    third.tick()
    third.tick()
    assert [f["fire_key"] for f in third.store.firings("every_hour")] == [
        "2026-11-23T04:00:00+00:00",
        "2026-11-23T02:00:00+00:00",
    ]
    assert len(third.store.workflow_runs("hourly")) == 2
    # The trigger that was never started does not fire; once started, it fires from then on.
    assert third.store.firings("off") == []
    third.store.set_trigger_state("off", "ACTIVATED", clock.now)
    clock.now = at(2026, 11, 23, 4, 31)
    third.tick()
    assert [f["fire_key"] for f in third.store.firings("off")] == ["2026-11-23T04:30:00+00:00"]
    drive(third, lambda: not third.store.active_actions())


@pytest.mark.slow
def test_stopping_a_workflow_run_stops_its_jobs(tmp_path):
    path = write_project(
        tmp_path,
        """
        [jobs.slow]
        Script = "hang.py"
        [jobs.after]
        Script = "ok.py"
        [workflows.wf]
        [triggers.go]
        Type = "ON_DEMAND"
        WorkflowName = "wf"
        Actions = [{ JobName = "slow" }]
        [triggers.then]
        Type = "CONDITIONAL"
        WorkflowName = "wf"
        Predicate = { Logical = "ANY", Conditions = [{ JobName = "slow", State = "SUCCEEDED" },
                                                     { JobName = "slow", State = "STOPPED" }] }
        Actions = [{ JobName = "after" }]
    """,
        {"ok.py": OK_SCRIPT, "hang.py": HANG_SCRIPT},
    )
    sched = scheduler_for(path)
    run_id = sched.start_workflow_run("wf", supervisor=sched.owner)
    log_has_started = lambda: any(  # noqa: E731
        a.log_path and Path(a.log_path).exists() and "started" in Path(a.log_path).read_text()
        for a in sched.store.workflow_run(run_id).actions
    )
    drive(sched, log_has_started)
    sched.stop_workflow_run("wf", run_id)
    drive(sched, lambda: finished(sched, run_id))
    run = sched.store.workflow_run(run_id)
    assert run.status.value == "STOPPED"
    # No trigger fires in a stopping run, even one that waits for STOPPED.
    assert node_states(sched, run_id) == {"slow": ["STOPPED"]}
    assert StateStore.from_settings().get_run(run.actions[0].action_id).state.value == "STOPPED"


@pytest.mark.slow
def test_job_run_command_runs_a_declared_job(tmp_path):
    path = write_project(
        tmp_path,
        """
        [jobs.hello]
        Script = "hello.py"
        DefaultArguments = { "--greeting" = "hello", "--who" = "nobody" }
        [jobs.broken]
        Script = "fail.py"
    """,
        {
            "hello.py": """
        from sparkmark import Job
        job = Job.from_args()
        print(job.args["greeting"], job.args["who"])
        job.commit()
    """,
            "fail.py": FAIL_SCRIPT,
        },
    )
    env = dict(os.environ)
    ok = subprocess.run(
        [str(SPARKMARK), "job", "run", "hello", "--config", str(path), "--who", "world", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    record = json.loads(ok.stdout)
    assert record["JobRunState"] == "SUCCEEDED" and record["Attempt"] == 0
    assert "hello world" in Path(record["LogPath"]).read_text()
    bad = subprocess.run(
        [str(SPARKMARK), "job", "run", "broken", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert bad.returncode == 1
    assert "FAILED" in bad.stdout and "this job always fails" in bad.stdout


# --------------------------------------------------------------------------- real scheduler processes


def start_scheduler(path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(SPARKMARK), "scheduler", "--config", str(path), "--poll", "0.1", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def eventually(check, seconds: float = 90.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def stop(process: subprocess.Popen) -> str:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.stdout.read() if process.stdout else ""


GATED = """
[jobs.first]
Script = "gated.py"
DefaultArguments = {{ "--gate" = "{gate}" }}
[jobs.second]
Script = "ok.py"
[workflows.wf]
[triggers.go]
Type = "ON_DEMAND"
WorkflowName = "wf"
Actions = [{{ JobName = "first" }}]
[triggers.then]
Type = "CONDITIONAL"
WorkflowName = "wf"
Predicate = {{ Conditions = [{{ JobName = "first", State = "SUCCEEDED" }}] }}
Actions = [{{ JobName = "second" }}]
"""

GATED_SCRIPT = """
import os, time
from sparkmark import Job
job = Job.from_args()
while not os.path.exists(job.args["gate"]):   # the test opens the gate
    time.sleep(0.05)
job.commit()
"""


@pytest.mark.slow
def test_scheduler_restart_mid_workflow(tmp_path):
    gate = tmp_path / "gate"
    path = write_project(tmp_path, GATED.format(gate=gate), {"ok.py": OK_SCRIPT, "gated.py": GATED_SCRIPT})
    store = WorkflowStore(StateStore.from_settings())
    queued = scheduler_for(path)
    run_id = queued.start_workflow_run("wf", supervisor=None)  # handed to whichever scheduler leads

    one = start_scheduler(path)
    first = eventually(
        lambda: next(
            (
                a
                for a in store.workflow_run(run_id).actions
                if a.name == "first" and a.state.value == "RUNNING" and a.pid
            ),
            None,
        )
    )
    # Killed once the job's own run has begun: a scheduler killed between marking the
    # action RUNNING and starting its process leaves a run that never started (FAILED).
    state = StateStore.from_settings()
    eventually(lambda: state.list_runs("first"))
    os.kill(one.pid, signal.SIGKILL)  # the scheduler dies; the job it started lives on
    one.wait()
    gate.touch()
    eventually(lambda: subprocess.run(["kill", "-0", str(first.pid)], capture_output=True).returncode != 0)
    assert store.workflow_run(run_id).status.value == "RUNNING"

    two = start_scheduler(path)
    try:
        eventually(lambda: store.workflow_run(run_id).status.value == "COMPLETED")
    finally:
        log = stop(two)
    run = store.workflow_run(run_id)
    assert [(a.name, a.state.value) for a in run.actions] == [("first", "SUCCEEDED"), ("second", "SUCCEEDED")]
    assert [f["trigger"] for f in store.run_firings(run_id)] == ["go", "then"]
    assert "adopting it" in log
    assert len(state.list_runs("first")) == 1 and len(state.list_runs("second")) == 1


@pytest.mark.slow
def test_two_schedulers_one_leads_and_nothing_runs_twice(tmp_path):
    # Hourly at the minute that just passed: one window is due now, the next in an hour.
    minute = (datetime.now(UTC) - timedelta(minutes=1)).minute
    path = write_project(
        tmp_path,
        f"""
        [jobs.a]
        Script = "ok.py"
        [workflows.hourly_wf]
        [triggers.hourly_trigger]
        Type = "SCHEDULED"
        Schedule = "cron({minute} * * * ? *)"
        WorkflowName = "hourly_wf"
        StartOnCreation = true
        Actions = [{{ JobName = "a" }}]
    """,
        {"ok.py": OK_SCRIPT},
    )
    store = WorkflowStore(StateStore.from_settings())
    store.sync_trigger("hourly_trigger", start_on_creation=True, now=datetime.now(UTC))
    with store.begin() as conn:  # as if the trigger had been active for two minutes
        store.advance_watermark(conn, "hourly_trigger", datetime.now(UTC) - timedelta(minutes=2))
    one, two = start_scheduler(path), start_scheduler(path)
    try:
        eventually(
            lambda: (
                store.workflow_runs("hourly_wf")
                and all(r.status.value == "COMPLETED" for r in store.workflow_runs("hourly_wf"))
            )
        )
        leader = store.leader(datetime.now(UTC))
    finally:
        logs = [stop(one), stop(two)]
    assert leader and leader.rsplit(":", 1)[1] in (str(one.pid), str(two.pid))
    firings = store.firings("hourly_trigger")
    runs = store.workflow_runs("hourly_wf")
    keys = [f["fire_key"] for f in firings]
    assert len(keys) == len(set(keys)) == len(runs) == 1
    jobs = StateStore.from_settings().list_runs("a")
    assert len(jobs) == len(runs)  # one job run per workflow run, none twice
    # Only the leader started anything.
    assert ["started by trigger" in log for log in logs].count(True) == 1


@pytest.mark.slow
def test_standalone_conditional_triggers_fire_on_job_ends(tmp_path, request, monkeypatch):
    # On PostgreSQL this time: the scheduler and the job processes share that state store.

    monkeypatch.setenv("SPARKMARK_STATE_URL", pg_url(request.getfixturevalue("pg_schemas")()))
    path = write_project(
        tmp_path,
        """
        [jobs.extract]
        Script = "ok.py"
        [jobs.load]
        Script = "ok.py"
        [jobs.report]
        Script = "ok.py"
        [jobs.unwatched]
        Script = "ok.py"
        [triggers.after_extract]
        Type = "CONDITIONAL"
        StartOnCreation = true
        Predicate = { Logical = "ANY", Conditions = [{ JobName = "extract", State = "SUCCEEDED" }] }
        Actions = [{ JobName = "load" }]
        [triggers.after_both]
        Type = "CONDITIONAL"
        StartOnCreation = true
        Predicate = { Logical = "AND", Conditions = [{ JobName = "extract", State = "SUCCEEDED" },
                                                     { JobName = "load", State = "SUCCEEDED" }] }
        Actions = [{ JobName = "report" }]
        [triggers.inactive]
        Type = "CONDITIONAL"
        Predicate = { Conditions = [{ JobName = "extract", State = "SUCCEEDED" }] }
        Actions = [{ JobName = "unwatched" }]
    """,
        {"ok.py": OK_SCRIPT},
    )
    sched = scheduler_for(path)
    first = sched.start_job_run("extract", supervisor=sched.owner)
    ran = lambda name: [a for a in sched.store.actions_of(kind="JOB", name=name) if a.final]  # noqa: E731
    drive(sched, lambda: ran("report"))
    assert sched.store.action(first).state.value == "SUCCEEDED"
    assert [a.state.value for a in ran("load")] == ["SUCCEEDED"]
    assert [a.trigger for a in ran("report")] == ["after_both"]
    # after_both fired when load ended (extract had ended before); it does not fire again
    # until both have ended since.
    sched.tick()
    sched.tick()
    assert len(sched.store.actions_of(kind="JOB", name="report")) == 1
    assert sched.store.actions_of(kind="JOB", name="unwatched") == []  # never activated
    assert [f["fire_key"].startswith("event-") for f in sched.store.firings("after_both")] == [True]


@pytest.mark.slow
def test_a_crawler_in_a_workflow(tmp_path):
    data = tmp_path / "lake" / "orders"
    (data / "dt=2026-11-01").mkdir(parents=True)
    (data / "dt=2026-11-01" / "a.json").write_text('{"id": 1, "amount": 3.5}\n{"id": 2, "amount": 4}\n')
    path = write_project(
        tmp_path,
        f"""
        [crawlers.lake]
        DatabaseName = "wf_lake"
        Targets = {{ S3Targets = [{{ Path = "{data}" }}] }}
        [jobs.use]
        Script = "ok.py"
        [jobs.on_fail]
        Script = "ok.py"
        [workflows.crawl_then_use]
        [triggers.go]
        Type = "ON_DEMAND"
        WorkflowName = "crawl_then_use"
        Actions = [{{ CrawlerName = "lake" }}]
        [triggers.crawled]
        Type = "CONDITIONAL"
        WorkflowName = "crawl_then_use"
        Predicate = {{ Conditions = [{{ LogicalOperator = "EQUALS", CrawlerName = "lake", CrawlState = "SUCCEEDED" }}] }}
        Actions = [{{ JobName = "use" }}]
        [triggers.crawl_failed]
        Type = "CONDITIONAL"
        WorkflowName = "crawl_then_use"
        Predicate = {{ Conditions = [{{ CrawlerName = "lake", CrawlState = "FAILED" }}] }}
        Actions = [{{ JobName = "on_fail" }}]
    """,
        {"ok.py": OK_SCRIPT},
    )
    sched = scheduler_for(path)
    run_id = sched.start_workflow_run("crawl_then_use", supervisor=sched.owner)
    drive(sched, lambda: finished(sched, run_id), seconds=240)
    assert node_states(sched, run_id) == {"lake": ["SUCCEEDED"], "use": ["SUCCEEDED"]}
    crawl = sched.store.workflow_run(run_id).actions[0]
    record = sched.crawlers.crawls("lake")[0]
    assert (record.crawl_id, record.state) == (crawl.action_id, "SUCCEEDED")
    assert record.summary["tables_created"] == ["wf_lake.orders"]
    doc = report.workflow_run(
        sched.store.workflow_run(run_id), graph=True, firings=sched.store.run_firings(run_id)
    )
    crawler_node = next(n for n in doc["Graph"]["Nodes"] if n["Type"] == "CRAWLER")
    assert crawler_node["CrawlerDetails"]["Crawls"][0]["State"] == "SUCCEEDED"


@pytest.mark.slow
def test_cli_workflow_run_get_run_runs_and_triggers(tmp_path):
    path = write_project(
        tmp_path,
        PREDICATES
        + """
[triggers.nightly]
Type = "SCHEDULED"
Schedule = "cron(0 2 * * ? *)"
Actions = [{ JobName = "a" }]
""",
        {"ok.py": OK_SCRIPT},
    )

    def sm(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(SPARKMARK), *args, "--config", str(path)], capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    started = json.loads(sm("workflow", "run", "wf", "--property", "day=2026-11-23", "--json").stdout)
    assert started["Status"] == "COMPLETED"
    assert started["WorkflowRunProperties"] == {"env": "test", "day": "2026-11-23"}
    run_id = started["WorkflowRunId"]
    got = json.loads(sm("workflow", "get-run", "wf", run_id, "--graph", "--json").stdout)
    jobs = {n["Name"]: n["JobDetails"]["JobRuns"] for n in got["Graph"]["Nodes"] if n["Type"] == "JOB"}
    assert [r["JobRunState"] for r in jobs["both"]] == ["SUCCEEDED"] and jobs["never"] == []
    assert jobs["both"][0]["TriggerName"] == "and_" and jobs["both"][0]["ExecutionTime"] > 0
    assert got["Statistics"]["SucceededActions"] == 4
    table = sm("workflow", "get-run", "wf", run_id, "--graph").stdout
    assert "trigger and_ -> job both" in table and "NOT FIRED" in table
    listed = json.loads(sm("workflow", "runs", "wf", "--json").stdout)
    assert [r["WorkflowRunId"] for r in listed] == [run_id]

    triggers = {t["Name"]: t for t in json.loads(sm("trigger", "list", "--json").stdout)}
    assert triggers["nightly"]["State"] == "CREATED" and triggers["nightly"]["NextFiring"] is None
    sm("trigger", "start", "nightly")
    triggers = {t["Name"]: t for t in json.loads(sm("trigger", "list", "--json").stdout)}
    assert triggers["nightly"]["State"] == "ACTIVATED"
    assert triggers["nightly"]["NextFiring"].endswith("T02:00:00+00:00")
    sm("trigger", "stop", "nightly")
    assert {t["Name"]: t["State"] for t in json.loads(sm("trigger", "list", "--json").stdout)}[
        "nightly"
    ] == "DEACTIVATED"
    refused = subprocess.run(
        [str(SPARKMARK), "trigger", "start", "go", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "is ON_DEMAND" in refused.stderr


@pytest.mark.slow
def test_declared_spark_settings_reach_the_job_session(tmp_path):
    out = tmp_path / "conf.json"
    path = write_project(
        tmp_path,
        f"""
        [jobs.sparky]
        Script = "sparky.py"
        DefaultArguments = {{ "--out" = "{out}" }}
        Spark = {{ master = "local[1]", conf = {{ "spark.sql.shuffle.partitions" = 3, "spark.sparkmark.test" = "yes" }} }}
    """,
        {
            "sparky.py": """
        import json
        from sparkmark import Job
        job = Job.from_args()
        conf = job.spark.sparkContext.getConf()
        with open(job.args["out"], "w") as f:
            json.dump({"master": job.spark.sparkContext.master,
                       "partitions": job.spark.conf.get("spark.sql.shuffle.partitions"),
                       "custom": conf.get("spark.sparkmark.test")}, f)
        job.commit()
    """
        },
    )
    sched = scheduler_for(path)
    first = sched.start_job_run("sparky", supervisor=sched.owner)
    drive(sched, lambda: sched.store.action(first).final, seconds=240)
    assert sched.store.action(first).state.value == "SUCCEEDED", sched.store.action(first).error
    assert json.loads(out.read_text()) == {"master": "local[1]", "partitions": "3", "custom": "yes"}


@pytest.mark.slow
def test_runs_of_a_scheduler_on_another_host_are_adopted_when_its_beat_stops(tmp_path):
    gate = tmp_path / "gate"
    path = write_project(tmp_path, GATED.format(gate=gate), {"ok.py": OK_SCRIPT, "gated.py": GATED_SCRIPT})
    clock = Clock(datetime.now(UTC))
    far = scheduler_for(path, clock, owner="far-host:4242")  # a process this host cannot see
    run_id = far.start_workflow_run("wf", supervisor=far.owner)

    def first():
        return next(
            (
                a
                for a in far.store.workflow_run(run_id).actions
                if a.name == "first" and a.state.value == "RUNNING"
            ),
            None,
        )

    drive(far, first)
    running = first().action_id
    with far.store.begin() as conn:  # as if that job process ran on the far host
        conn.execute(actions.update().where(actions.c.action_id == running).values(host="far-host"))

    near = scheduler_for(path, clock)
    assert near.tick()  # far gave up the lead, but it still beats: its run is left alone
    assert far.store.workflow_run(run_id).supervisor == "far-host:4242"
    clock.advance(seconds=61)  # far stopped beating a minute ago
    assert near.tick()
    assert near.store.workflow_run(run_id).supervisor == near.owner
    near.tick()
    assert first() is not None  # its process still runs: the job's own lease says so
    gate.touch()
    drive(near, lambda: finished(near, run_id))
    assert node_states(near, run_id) == {"first": ["SUCCEEDED"], "second": ["SUCCEEDED"]}
    far.launcher.exit_status(running, None, None)  # reap the process this test started
    assert StateStore.from_settings().get_run(running).state.value == "SUCCEEDED"


@pytest.mark.slow
def test_workflow_run_strict_fails_on_a_failed_job(tmp_path):
    path = write_project(
        tmp_path,
        """
        [jobs.broken]
        Script = "fail.py"
        [workflows.wf]
        [triggers.go]
        Type = "ON_DEMAND"
        WorkflowName = "wf"
        Actions = [{ JobName = "broken" }]
    """,
        {"fail.py": FAIL_SCRIPT},
    )
    plain = subprocess.run(
        [str(SPARKMARK), "workflow", "run", "wf", "--config", str(path), "--no-graph"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode == 0 and "COMPLETED" in plain.stdout and "FailedActions 1" in plain.stdout
    strict = subprocess.run(
        [str(SPARKMARK), "workflow", "run", "wf", "--config", str(path), "--strict"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert strict.returncode == 1 and "COMPLETED" in strict.stdout


# --------------------------------------------------------------------------- concurrent runs

CONCURRENT_SCRIPT = """
import json, time
from sparkmark import Job
job = Job.from_args()
def note(event):
    with open(job.args["log"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"run": job.run_id, "event": event, "at": time.time()}) + "\\n")
note("start")
time.sleep(float(job.args.get("hold", "1")))  # long enough for runs to overlap
note("end")
job.commit()
"""


def most_at_once(log: Path) -> int:
    events = sorted(
        (e["at"], 1 if e["event"] == "start" else -1)
        for e in map(json.loads, log.read_text(encoding="utf-8").splitlines())
    )
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_max_concurrent_runs_as_glue_defines_it_with_two_schedulers(
    tmp_path, request, monkeypatch, backend, caplog
):
    """Glue's ExecutionProperty.MaxConcurrentRuns: up to N runs of a job at once. Twenty
    runs with bookmarks disabled, started by two schedulers at once, run at most five at
    a time and none fails on the lease (each ran to SUCCEEDED). Runs beyond five wait,
    queued. Runs with job-bookmark-enable move the bookmark one at a time, and say so."""
    if backend == "postgresql":
        monkeypatch.setenv("SPARKMARK_STATE_URL", pg_url(request.getfixturevalue("pg_schemas")()))
    path = write_project(
        tmp_path,
        """
        [jobs.wide]
        Script = "concurrent.py"
        MaxConcurrentRuns = 5
        """,
        {"concurrent.py": CONCURRENT_SCRIPT},
    )
    project = load_project(path)
    log = tmp_path / "events.jsonl"
    one = Scheduler(project, StateStore.from_settings(), owner="scheduler-one", leading=False)
    two = Scheduler(project, StateStore.from_settings(), owner="scheduler-two", leading=False)
    disabled = {"--job-bookmark-option": "job-bookmark-disable", "--log": str(log)}
    ids = [s.start_job_run("wide", disabled, supervisor=s.owner) for s in (one, two) for _ in range(10)]

    def drive(schedulers, done) -> None:
        import threading

        threads = [
            threading.Thread(target=s.run, kwargs={"until": done, "max_seconds": 240, "poll_seconds": 0.05})
            for s in schedulers
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    store = StateStore.from_settings()

    def ended(run_ids) -> bool:
        return all(a.final and a.state.value not in ("WAITING", "RUNNING") for a in map(action_of, run_ids))

    def action_of(run_id):
        return next(
            a
            for a in WorkflowStore(store).actions_of(kind="JOB", name="wide", limit=100)
            if a.action_id == run_id
        )

    drive((one, two), lambda: ended(ids))
    states = {store.get_run(i).state.value for i in ids}
    assert states == {"SUCCEEDED"}, [(i, store.get_run(i).error) for i in ids if store.get_run(i).error]
    assert 2 <= most_at_once(log) <= 5  # they ran side by side, and never more than five

    log.unlink()
    enabled = {"--job-bookmark-option": "job-bookmark-enable", "--log": str(log), "--hold": "0.3"}
    serial = [s.start_job_run("wide", enabled, supervisor=s.owner) for s in (one, two, one)]
    with caplog.at_level("INFO", logger="sparkmark.scheduler"):
        drive((one, two), lambda: ended(serial))
    assert {store.get_run(i).state.value for i in serial} == {"SUCCEEDED"}
    assert most_at_once(log) == 1
    committed = sorted(store.history("wide"), key=lambda v: v.version)
    assert [v.run_id for v in committed] == sorted(serial, key=lambda i: store.get_run(i).started_at)
    # three bookmark versions, one per run, each built on the one before
    assert "move its bookmark one at a time" in caplog.text


def test_a_load_that_began_before_a_change_does_not_hide_it(tmp_path, monkeypatch):
    """A server's scheduler thread and a request thread read the project at once: the
    request that follows a CreateJob must see the job, even when a load that began before
    the create ends after it (CI saw GetJob say 'not found' right after CreateJob)."""
    import threading

    from sparkmark.app.jobs import job_definition
    from sparkmark.workflow import registry as registry_module

    state = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    source = registry_module.ProjectSource(tmp_path / "none.toml", state)
    real_load = registry_module.load_project
    began, release = threading.Event(), threading.Event()
    slow_once = []

    def load(config, store):
        project = real_load(config, store)  # what the registry holds as this load reads it
        if not slow_once:
            slow_once.append(True)
            began.set()
            release.wait(10)  # the scheduler's load, still running when the job is created
        return project

    monkeypatch.setattr(registry_module, "load_project", load)
    early = threading.Thread(target=source.current)
    early.start()
    assert began.wait(10)
    glue = {"Command": {"Name": "glueetl", "ScriptLocation": "nightly.py"}}
    source.registry.put("job", "nightly", job_definition("nightly", glue), glue, create=True)
    later: list = []
    after = threading.Thread(target=lambda: later.append(source.current()))
    after.start()
    after.join(0.5)  # unlocked, it would load and finish now, before the early load ends
    release.set()
    early.join(10)
    after.join(10)
    assert "nightly" in later[0].jobs
    assert "nightly" in source.current().jobs
    state.close()
