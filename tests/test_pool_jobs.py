"""Jobs the scheduler runs on a warm Spark process: each still gets its own run and a
clean Spark. One job leaves behind all it can (temporary and global views, cached
data, persisted RDDs, SQL settings, functions, local properties, environment, a module
beside its script); the next job on the same process finds none of it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sparkmark.api.server import RunsEndpoint
from sparkmark.app import App
from sparkmark.engine.store import StateStore
from sparkmark.pool.pool import close_shared
from sparkmark.settings import Settings
from sparkmark.workflow.control import run_job
from sparkmark.workflow.registry import ProjectSource
from sparkmark.workflow.scheduler import Scheduler, pooled_launcher

FIXTURES = Path(__file__).parent / "fixtures" / "pool_jobs"


@pytest.fixture(scope="module")
def project(tmp_path_factory, spark):  # spark: the suite's JVM is up before the pool's
    """One scheduler and its pool of one warm process for the module's tests: each test
    runs its jobs one after the other on whichever process the pool holds (the one the
    test before it left warm, or a new one when that run retired it), as a scheduler's
    runs do."""
    tmp_path = tmp_path_factory.mktemp("pool_jobs")
    jobs = tmp_path / "jobs"
    shutil.copytree(FIXTURES, jobs)
    out = tmp_path / "out"
    out.mkdir()
    config = tmp_path / "sparkmark.toml"
    config.write_text(
        '[pool]\nsize = 1\nmemory = "1g"\n\n'
        f'[jobs.leaker]\nScript = "{jobs / "leaker.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n\n'
        f'[jobs.checker]\nScript = "{jobs / "checker.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n\n'
        f'[jobs.tuned]\nScript = "{jobs / "checker.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n'
        f'[jobs.sqltuned]\nScript = "{jobs / "checker.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n'
        '[jobs.sqltuned.Spark.conf]\n"spark.sql.shuffle.partitions" = "7"\n\n'
        '[jobs.tuned.Spark.conf]\n"spark.sql.shuffle.partitions" = "5"\n"spark.driver.maxResultSize" = "512m"\n\n'
        f'[jobs.residue]\nScript = "{jobs / "residue.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n\n'
        f'[jobs.look]\nScript = "{jobs / "look.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n\n'
        f'[jobs.asks_glue]\nScript = "{jobs / "asks_glue.py"}"\nDefaultArguments = {{ "--out" = "{out}" }}\n',
        encoding="utf-8",
    )
    settings = Settings.from_env({**os.environ, "SPARKMARK_CONFIG": str(config)})
    state = StateStore.from_settings(settings)
    source = ProjectSource(config, state)
    endpoint = RunsEndpoint(App(settings, state))
    launcher = pooled_launcher(settings, start=True, endpoint=endpoint)
    scheduler = Scheduler(source.current(), state, settings=settings, source=source, launcher=launcher)
    scheduler.runs_endpoint = endpoint
    yield scheduler, out
    close_shared()
    endpoint.stop()


def test_a_job_on_a_warm_process_leaves_nothing_for_the_next(project):
    scheduler, out = project
    first = run_job(scheduler, "leaker", timeout=300)
    assert first.state.value == "SUCCEEDED", first.error
    second = run_job(scheduler, "checker", timeout=300)
    assert second.state.value == "SUCCEEDED", second.error
    leaker = json.loads((out / "leaker.json").read_text())
    checker = json.loads((out / "checker.json").read_text())
    assert checker["pid"] == leaker["pid"]  # both on the one warm process
    assert checker["pid"] != os.getpid()
    assert checker["temp_views"] == []
    assert checker["global_views"] == []
    assert checker["persisted_rdds"] == 0
    assert checker["cached_data"] == 0
    assert checker["shuffle"] == leaker["shuffle"] != "3"
    assert checker["udf"] is False
    assert checker["property"] is None
    assert checker["env"] is None
    assert leaker["leakmod"] == 1 and checker["leakmod"] == 0  # the helper is imported afresh
    assert checker["rows"] == 7
    # each run is recorded as its own, with its own log
    runs = scheduler.state.list_runs("leaker") + scheduler.state.list_runs("checker")
    assert {r.run_id for r in runs} == {first.action_id, second.action_id}
    assert all(r.state.value == "SUCCEEDED" for r in runs)


def test_a_hosted_job_whose_script_calls_glue_with_boto3_reaches_this_projects_endpoint(project):
    """The parent names the endpoint in the job's order; the script's boto3 (no endpoint
    of its own) talks to it, and sees the job as the project file declares it."""
    scheduler, out = project
    run = run_job(scheduler, "asks_glue", timeout=300)
    assert run.state.value == "SUCCEEDED", run.error
    found = json.loads((out / "asks_glue.json").read_text())
    assert found["pid"] != os.getpid()  # on the warm process
    assert found["name"] == "asks_glue"
    assert found["arguments"]["--out"] == str(out)
    assert found["endpoint"] == scheduler.runs_endpoint.started.url


def test_a_job_with_spark_settings_of_its_own_starts_its_own_process(project):
    scheduler, out = project
    warm = run_job(scheduler, "leaker", timeout=300)
    tuned = run_job(scheduler, "tuned", timeout=300)
    assert warm.state.value == tuned.state.value == "SUCCEEDED"
    leaker = json.loads((out / "leaker.json").read_text())
    checker = json.loads((out / "checker.json").read_text())
    assert checker["shuffle"] == "5"  # its Spark.conf applied: a JVM of its own (a driver setting)
    assert checker["pid"] != leaker["pid"]
    # Warm or in a process of its own, a run resolves relative paths in the same folder.
    assert checker["cwd"] == leaker["cwd"] == os.getcwd()


def test_a_job_with_sql_settings_runs_warm_with_them_and_they_do_not_stay(project):
    scheduler, out = project
    assert run_job(scheduler, "leaker", timeout=300).state.value == "SUCCEEDED"
    warm_pid = json.loads((out / "leaker.json").read_text())["pid"]
    assert run_job(scheduler, "sqltuned", timeout=300).state.value == "SUCCEEDED"
    tuned = json.loads((out / "checker.json").read_text())
    assert tuned["pid"] == warm_pid and tuned["shuffle"] == "7"
    assert run_job(scheduler, "checker", timeout=300).state.value == "SUCCEEDED"
    after = json.loads((out / "checker.json").read_text())
    assert after["pid"] == warm_pid and after["shuffle"] != "7"


SECRET = "hunter2-of-the-first-job"


@pytest.mark.parametrize(
    ("leave", "arguments", "retired"),
    [
        ("file", {}, None),
        ("thread", {}, "the run left threads running (spy)"),
        ("patch", {}, "the run replaced json.dumps"),
        ("conf", {}, "the run changed the SparkContext's settings"),
        ("nothing", {"--api_key": SECRET}, "the run was given secrets"),
    ],
)
def test_the_next_job_never_sees_the_first_ones_files_threads_patches_or_secrets(
    project, leave, arguments, retired, caplog
):
    """Two jobs one after the other on a warm pool of one process. Each run works in the
    scheduler's folder, as its own process would, with a temporary directory of its own;
    what cannot be put back (a thread still running, a patched
    function, a SparkContext setting, any secret the run was given) retires the process,
    so the second job runs on a new one."""
    scheduler, out = project
    server_cwd = sorted(os.listdir("."))
    caplog.set_level("INFO", logger="sparkmark.pool")
    first = run_job(scheduler, "residue", {"--leave": leave, **arguments}, timeout=300)
    assert first.state.value == "SUCCEEDED", first.error
    second = run_job(scheduler, "look", {}, timeout=300)
    assert second.state.value == "SUCCEEDED", second.error
    residue = json.loads((out / "residue.json").read_text())
    look = json.loads((out / "look.json").read_text())
    # Each run worked in the folder its own process would have had (the scheduler's), and
    # had a temporary directory of its own, gone after it.
    assert residue["cwd"] == look["cwd"] == os.getcwd()
    assert residue["temp"] != look["temp"] and look["temp_files"] == []
    if leave == "file":
        assert residue["temp_files"] == ["left_behind.txt"]
    assert not Path(residue["temp"]).exists() and sorted(os.listdir(".")) == server_cwd
    assert "spy" not in look["threads"]
    assert look["dumps"] == '{"a": 1}'
    assert look["conf"] is None
    assert SECRET not in look["secrets"]
    if retired is None:
        assert look["pid"] == residue["pid"]  # nothing left: the process was kept
    else:
        assert look["pid"] != residue["pid"]
        assert any(retired in r.getMessage() for r in caplog.records), [
            r.getMessage() for r in caplog.records
        ]
