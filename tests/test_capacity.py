"""Glue's job commands and capacity fields, checked as Glue checks them (AWS's Job API
reference, "Python shell jobs" and "worker types" pages), and what they become here:
a Python shell run's memory limit, a Spark run's executor sizes and dynamic allocation.
Pure logic, and the Python shell process itself (no JVM)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.app.jobs import job_definition
from sparkmark.errors import ArgumentError, ConfigError
from sparkmark.host import handover, python_shell
from sparkmark.host.request import RunRequest
from sparkmark.settings import Settings
from sparkmark.workflow import capacity
from sparkmark.workflow.definition import load_project

pytestmark = pytest.mark.fast

GIB = 1024**3


@pytest.mark.parametrize(
    ("command", "fields", "said"),
    [
        ("pythonshell", {"max_capacity": 2}, "Glue allows 0.0625 or 1 DPU"),
        ("pythonshell", {"worker_type": "G.1X", "workers": 2}, "not WorkerType"),
        ("pythonshell", {"execution_class": "FLEX"}, "glueetl jobs only"),
        ("pythonshell", {"python_version": "2"}, "Glue runs 3.9"),
        ("glueetl", {"worker_type": "G.3X", "workers": 2}, "WorkerType 'G.3X' is not one of"),
        ("glueetl", {"worker_type": "G.025X", "workers": 2}, "streaming jobs (gluestreaming) only"),
        ("glueetl", {"worker_type": "G.1X"}, "given together"),
        ("glueetl", {"worker_type": "G.1X", "workers": 1}, "at least 2 workers"),
        ("glueetl", {"worker_type": "G.1X", "workers": 2, "max_capacity": 10}, "cannot be given with"),
        ("gluestreaming", {"execution_class": "FLEX"}, "glueetl jobs only"),
        ("glueetl", {"execution_class": "SLOW"}, "STANDARD, FLEX"),
        ("glueray", {}, "no longer open to new customers"),
        ("shell", {}, "is not a Glue job command"),
    ],
)
def test_what_glue_refuses_is_refused_in_one_line(command, fields, said):
    with pytest.raises(ValueError) as caught:
        capacity.check(command, **fields)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_what_glue_accepts_is_accepted():
    capacity.check("pythonshell")
    capacity.check("pythonshell", max_capacity=1.0, python_version="3.9")
    capacity.check("pythonshell", max_capacity=0.0625, python_version="3")
    capacity.check("glueetl", worker_type="G.2X", workers=5, execution_class="FLEX")
    capacity.check("gluestreaming", worker_type="G.025X", workers=2)
    capacity.check("glueetl", max_capacity=10)
    capacity.check("glueetl")


def test_a_python_shell_jobs_memory_is_its_dpu_share():
    assert capacity.shell_memory_bytes(None) == 1 * GIB  # 0.0625 DPU, Glue's default
    assert capacity.shell_memory_bytes(0.0625) == 1 * GIB
    assert capacity.shell_memory_bytes(1) == 16 * GIB


def test_the_library_set_is_analytics_or_none():
    assert capacity.library_set(None) is None and capacity.library_set("") is None
    assert capacity.library_set("analytics") == "analytics" and capacity.library_set("none") == "none"
    with pytest.raises(ValueError, match="analytics and none"):
        capacity.library_set("Analytics")


@given(
    worker_type=st.sampled_from(
        [w for w in capacity.WORKER_TYPES if not capacity.WORKER_TYPES[w].streaming_only]
    ),
    workers=st.integers(min_value=2, max_value=500),
    scaling=st.booleans(),
)
def test_a_worker_type_on_a_cluster_is_an_executor_of_its_size(worker_type, workers, scaling):
    arguments = {"--enable-auto-scaling": "true"} if scaling else {}
    conf = capacity.spark_conf("spark://127.0.0.1:7077", arguments, worker_type, workers)
    kind = capacity.WORKER_TYPES[worker_type]
    assert conf["spark.executor.cores"] == str(kind.cores)
    assert conf["spark.executor.memory"] == f"{kind.memory_gb}g"
    if scaling:  # dynamic allocation, up to the workers beyond the driver, down to none
        assert conf["spark.dynamicAllocation.enabled"] == "true"
        assert conf["spark.dynamicAllocation.maxExecutors"] == str(workers - 1)
        assert conf["spark.dynamicAllocation.minExecutors"] == "0"
        assert "spark.cores.max" not in conf
    else:
        assert conf["spark.cores.max"] == str(kind.cores * (workers - 1))
        assert not any(k.startswith("spark.dynamicAllocation") for k in conf)
    # On local[*] the capacity is only shown back.
    assert capacity.spark_conf("local[*]", arguments, worker_type, workers) == {}
    assert capacity.spark_conf(None, arguments, worker_type, workers) == {}


def test_a_job_that_names_no_capacity_keeps_its_spark_settings():
    assert capacity.spark_conf("spark://h:7077", {}, None, None) == {}
    scaled = capacity.spark_conf("spark://h:7077", {"--enable-auto-scaling": "TRUE"}, None, None)
    assert scaled["spark.dynamicAllocation.maxExecutors"] == "9"  # Glue's default of 10 workers
    assert "spark.executor.cores" not in scaled
    assert capacity.spark_conf("spark://h:7077", {"--enable-auto-scaling": "false"}, None, None) == {}


def test_run_fields_show_a_shell_runs_dpus_or_a_spark_runs_workers():
    assert capacity.run_fields({}, "pythonshell") == {"MaxCapacity": 0.0625}
    assert capacity.run_fields({"MaxCapacity": 1.0}, "pythonshell") == {"MaxCapacity": 1.0}
    assert capacity.run_fields(
        {"WorkerType": "G.2X", "NumberOfWorkers": 4, "ExecutionClass": "FLEX"}, "glueetl"
    ) == {
        "WorkerType": "G.2X",
        "NumberOfWorkers": 4,
        "ExecutionClass": "FLEX",
    }
    assert capacity.run_fields({}, "glueetl") == {
        "WorkerType": "G.1X",
        "NumberOfWorkers": 10,
        "ExecutionClass": "STANDARD",
    }


def test_the_project_file_declares_a_python_shell_job_and_its_mistakes_name_the_job(tmp_path):
    path = tmp_path / "sparkmark.toml"
    path.write_text('[jobs.lister]\nScript = "list.py"\nCommand = "pythonshell"\nMaxCapacity = 1.0\n')
    job = load_project(path).jobs["lister"]
    assert job.python_shell and job.MaxCapacity == 1.0
    path.write_text('[jobs.lister]\nScript = "list.py"\nCommand = "pythonshell"\nWorkerType = "G.1X"\n')
    with pytest.raises(ConfigError, match=r"invalid \[jobs.lister\].*not WorkerType"):
        load_project(path)
    path.write_text(
        '[jobs.lister]\nScript = "list.py"\nCommand = "pythonshell"\n'
        'DefaultArguments = { "--library-set" = "all" }\n'
    )
    with pytest.raises(ConfigError, match="library sets are analytics and none"):
        load_project(path)


def test_the_api_definition_carries_the_command_and_refuses_ray():
    doc = job_definition(
        "lister",
        {
            "Command": {"Name": "pythonshell", "ScriptLocation": "s3://b/l.py", "PythonVersion": "3.9"},
            "MaxCapacity": 1,
        },
    )
    assert (doc["Command"], doc["PythonVersion"], doc["MaxCapacity"]) == ("pythonshell", "3.9", 1)
    assert job_definition("etl", {"Command": {"ScriptLocation": "s3://b/e.py"}})["Command"] == "glueetl"
    with pytest.raises(ArgumentError) as ray:
        job_definition("ray", {"Command": {"Name": "glueray", "ScriptLocation": "s3://b/r.py"}})
    assert str(ray.value) == capacity.RAY_REFUSED and "\n" not in str(ray.value)


def test_the_exit_file_keeps_the_status_and_the_one_line(tmp_path):
    log = tmp_path / "run.log"
    handover.write_exit(handover.exit_path(log), 1, "ZeroDivisionError: division by zero")
    assert handover.read_exit(str(log)) == 1
    assert handover.read_exit_error(str(log)) == "ZeroDivisionError: division by zero"
    handover.write_exit(handover.exit_path(log), 0)
    assert (handover.read_exit(str(log)), handover.read_exit_error(str(log))) == (0, None)
    assert handover.read_exit(str(tmp_path / "never.log")) is None
    handover.exit_path(log).write_text("not json")
    assert handover.read_exit(str(log)) is None and handover.read_exit_error(str(log)) is None


def _prepare(tmp_path, arguments: list[str]):
    script = tmp_path / "job.py"
    script.write_text("print('hi')\n")
    settings = Settings.from_env().model_copy(update={"home": tmp_path / "home"})
    return python_shell.prepare(
        RunRequest(script=str(script), arguments=arguments, command="pythonshell"), settings
    )


def test_a_shell_run_is_prepared_with_its_path_and_memory(tmp_path):
    helper = tmp_path / "helpers.py"
    helper.write_text("X = 1\n")
    archive = tmp_path / "lib.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    prepared = _prepare(tmp_path, ["--JOB_NAME", "j", "--extra-py-files", f"{helper},{archive}"])
    assert prepared.path == [str(tmp_path), str(archive)]
    assert prepared.memory == GIB
    assert prepared.argv[1:] == ["--JOB_NAME", "j", "--extra-py-files", f"{helper},{archive}"]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--extra-files", "s3://b/x.txt"], "--extra-files: Glue's Python shell jobs cannot use it"),
        (
            ["--extra-py-files", "/nonexistent/helpers.py"],
            "--extra-py-files /nonexistent/helpers.py: no such file",
        ),
        (["--library-set", "big"], "--library-set 'big'"),
    ],
)
def test_what_stops_a_shell_run_is_one_line(tmp_path, arguments, said):
    with pytest.raises(ArgumentError) as caught:
        _prepare(tmp_path, ["--JOB_NAME", "j", *arguments])
    assert str(caught.value).startswith(said)


def test_a_missing_analytics_library_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(capacity.ANALYTICS_MODULES, "sm-missing-lib", "sm_missing_lib")
    with pytest.raises(ArgumentError, match="--library-set analytics: sm-missing-lib not installed"):
        _prepare(tmp_path, ["--JOB_NAME", "j", "--library-set", "analytics"])


def _shell_process(tmp_path, document: dict | None, code: str) -> tuple[subprocess.CompletedProcess, Path]:
    script = tmp_path / "job.py"
    script.write_text(code)
    exit_file = tmp_path / "run.exit"
    env = {
        "PATH": "/usr/bin:/bin",
        "SPARKMARK_HOME": str(tmp_path / "home"),
        handover.EXIT_FILE_ENV: str(exit_file),
    }
    if document is not None:
        env[handover.ARGV_PIPE_ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark.host.python_shell"],
        input=json.dumps(document or {}),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return done, exit_file


def test_the_shell_process_runs_the_script_and_leaves_its_status(tmp_path):
    request = {
        "script": str(tmp_path / "job.py"),
        "arguments": ["--JOB_NAME", "j", "--n", "3"],
        "command": "pythonshell",
    }
    code = "import sys\nfrom awsglue.utils import getResolvedOptions\nn = int(getResolvedOptions(sys.argv, ['n'])['n'])\nprint(10 // (n - 3))\n"
    done, exit_file = _shell_process(tmp_path, {"run": request}, code)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and done.stderr.strip().endswith(
        "error: ZeroDivisionError: integer division or modulo by zero (job.py line 4)"
    )
    assert json.loads(exit_file.read_text()) == {
        "code": 1,
        "error": "ZeroDivisionError: integer division or modulo by zero (job.py line 4)",
    }
    done, exit_file = _shell_process(tmp_path, {"run": request}, "print('fine')\n")
    assert (done.returncode, done.stdout, json.loads(exit_file.read_text())) == (0, "fine\n", {"code": 0})


def test_the_shell_process_is_started_by_the_scheduler_only(tmp_path):
    done, _ = _shell_process(tmp_path, None, "print('never')\n")
    assert done.returncode == 2 and "started by sparkmark's scheduler" in done.stderr


def test_dpu_seconds_count_each_executors_life_at_its_cores_over_four():
    from sparkmark.runtime.glue_metrics import dpu_seconds

    # a cluster: the driver (no cores of its own) counts as a worker of the executors' size
    lives = [("driver", 0, 100.0), ("0", 4, 60.0), ("1", 4, 30.0)]
    assert dpu_seconds(lives) == 100.0 + 60.0 + 30.0
    assert dpu_seconds([("driver", 0, 10.0), ("0", 8, 10.0)]) == 20.0 + 20.0  # G.2X-sized: 2 DPU each
    assert dpu_seconds([("driver", 2, 40.0)]) == 20.0  # local[2]: the driver is the executor
    assert dpu_seconds([("driver", 0, 8.0)]) == 8.0  # no executor ever came: one DPU
    assert dpu_seconds([]) == 0


def test_spark_rest_times_are_read_and_bad_ones_skipped():
    from datetime import UTC, datetime

    from sparkmark.runtime.spark_status import _when

    assert _when("2026-11-30T04:32:36.123GMT") == datetime(2026, 11, 30, 4, 32, 36, 123000, tzinfo=UTC)
    assert _when(None) is None and _when("") is None and _when("yesterday") is None


def _scheduler_over(tmp_path, toml: str, clock=None):
    from sparkmark.engine.store import StateStore
    from sparkmark.workflow.scheduler import Scheduler

    path = tmp_path / "sparkmark.toml"
    path.write_text(toml)
    (tmp_path / "job.py").write_text("print(1)\n")
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    settings = Settings.from_env().model_copy(update={"home": tmp_path / "home", "spark_master": "local[*]"})
    return Scheduler(load_project(path), store, settings=settings, clock=clock, owner="test:1")


def test_the_run_request_carries_the_command_and_the_worker_types_executors(tmp_path):
    scheduler = _scheduler_over(
        tmp_path,
        '[jobs.shell]\nScript = "job.py"\nCommand = "pythonshell"\nMaxCapacity = 1.0\n'
        '[jobs.sized]\nScript = "job.py"\nWorkerType = "G.2X"\nNumberOfWorkers = 3\n'
        'Spark = { master = "spark://127.0.0.1:7077", conf = { "spark.executor.memory" = "2g" } }\n'
        '[jobs.local]\nScript = "job.py"\nWorkerType = "G.2X"\nNumberOfWorkers = 3\n',
    )
    requests = {}
    for job in ("shell", "sized", "local"):
        action = scheduler.store.action(scheduler.start_job_run(job))
        requests[job] = scheduler._spec(action).document["run"]
    assert (requests["shell"]["command"], requests["shell"]["max_capacity"]) == ("pythonshell", 1.0)
    assert requests["sized"]["spark_conf"] == {
        "spark.executor.cores": "8",
        "spark.executor.memory": "2g",  # the job's own setting wins over the table's 32g
        "spark.cores.max": "16",
    }
    assert requests["local"]["spark_conf"] == {}  # local[*]: shown back only


def test_a_flex_run_waits_behind_a_standard_one_on_its_master_and_is_forced_after_15_minutes(tmp_path):
    from datetime import UTC, datetime, timedelta

    now = [datetime(2026, 11, 30, 4, 0, tzinfo=UTC)]
    scheduler = _scheduler_over(
        tmp_path,
        '[jobs.std]\nScript = "job.py"\n'
        '[jobs.flex]\nScript = "job.py"\nExecutionClass = "FLEX"\n'
        '[jobs.shell]\nScript = "job.py"\nCommand = "pythonshell"\n'
        '[jobs.other]\nScript = "job.py"\nExecutionClass = "FLEX"\nSpark = { master = "spark://elsewhere:7077" }\n',
        clock=lambda: now[0],
    )
    flex = scheduler.store.action(scheduler.start_job_run("flex"))
    assert not scheduler._flex_waits(flex, now[0])  # nothing holds the Spark: it starts
    scheduler.start_job_run("shell")  # a Python shell run holds no Spark
    assert not scheduler._flex_waits(flex, now[0])
    scheduler.start_job_run("std")  # a standard run queued on the same master
    assert scheduler._flex_waits(flex, now[0])
    other = scheduler.store.action(scheduler.start_job_run("other"))
    assert not scheduler._flex_waits(other, now[0])  # another master is not held
    as_standard = scheduler.store.action(scheduler.start_job_run("flex", execution_class="STANDARD"))
    assert not scheduler._flex_waits(as_standard, now[0])  # the run's own class wins over the job's
    assert scheduler._flex_waits(flex, now[0] + timedelta(minutes=14))
    assert not scheduler._flex_waits(flex, now[0] + timedelta(minutes=15))  # Glue's forced start


def test_the_console_shows_a_declared_python_shell_jobs_type(tmp_path):
    from types import SimpleNamespace

    from sparkmark.console.jobs import job_type

    path = tmp_path / "sparkmark.toml"
    path.write_text('[jobs.lister]\nScript = "l.py"\nCommand = "pythonshell"\n[jobs.etl]\nScript = "e.py"\n')
    service = SimpleNamespace(registry=SimpleNamespace(entries=lambda kind: {}), project=load_project(path))
    assert job_type(service, "lister", None) == "pythonshell"
    assert job_type(service, "etl", None) == "glueetl"
