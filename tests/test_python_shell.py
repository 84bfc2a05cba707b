"""Python shell jobs (Glue's ``pythonshell`` command) as a user drives them: ``sparkmark
api`` as a process, with its scheduler, and boto3 calling it. Expectations are AWS's
"Python shell jobs" page: plain Python with no Spark, ``getResolvedOptions``, no
bookmarks, 0.0625 or 1 DPU, the ``/aws-glue/python-jobs`` log groups, the analytics
library set, ``--additional-python-modules``; and the job run statuses page (runs,
retries and timeouts behave as a standard Spark job's)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from sparkmark.access import local_token
from sparkmark.engine.models import BookmarkOption
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

from .test_python_modules import wheel

pytestmark = pytest.mark.slow

ENDED = ("SUCCEEDED", "FAILED", "ERROR", "TIMEOUT", "STOPPED")


class Api:
    """``sparkmark api`` in its own process over one home, with boto3 clients of it."""

    def __init__(self, home: Path, config: Path, env: dict[str, str]):
        self.home = home
        self.env = {**os.environ, **env, "SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(config)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sparkmark", "api", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=self.env,
        )
        assert self.process.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+", self.process.stdout.readline())
        assert found is not None, "sparkmark api printed no URL"
        self.url = found.group(0)

    def client(self, service: str):
        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key=local_token(self.home),
            config=Config(retries={"max_attempts": 1}),
        )

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def api(tmp_path_factory, s3_server):
    work = tmp_path_factory.mktemp("pythonshell")
    config = work / "sparkmark.toml"
    config.write_text("")
    env = {
        "AWS_ENDPOINT_URL_S3": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "SPARKMARK_LOG_LEVEL": "INFO",
    }
    running = Api(work / "home", config, env)
    yield running
    running.stop()


@pytest.fixture
def glue(api):
    return api.client("glue")


def shell_job(glue, folder: Path, code: str, **fields) -> str:
    """A Python shell job running ``code``; its name."""
    name = f"shell-{uuid.uuid4().hex[:8]}"
    script = folder / f"{name}.py"
    script.write_text(textwrap.dedent(code))
    command = {"Name": "pythonshell", "ScriptLocation": str(script), "PythonVersion": "3.9"}
    glue.create_job(Name=name, Role="r", Command=command, **fields)
    return name


def wait(glue, job: str, run_id: str, seconds: float = 120) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]
        if run["JobRunState"] in ENDED:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} of {job} did not end in {seconds} s")


def log_lines(api, group: str, run_id: str) -> list[str]:
    logs = api.client("logs")
    return [e["message"] for e in logs.get_log_events(logGroupName=group, logStreamName=run_id)["events"]]


def test_a_python_shell_job_runs_plain_python_with_its_arguments_and_its_own_log_groups(
    api, glue, tmp_path, monkeypatch
):
    job = shell_job(
        glue,
        tmp_path,
        """
        import sys
        from awsglue.utils import getResolvedOptions
        args = getResolvedOptions(sys.argv, ["JOB_NAME", "day"])
        print("day", args["day"], "job", args["JOB_NAME"])
        print("spark loaded:", sorted(m for m in ("pyspark", "py4j") if m in sys.modules))
        print("to stderr", file=sys.stderr)
        import boto3  # its endpoints are sparkmark's, as a Spark job's are
        boto3.client("cloudwatch").put_metric_data(
            Namespace="ShellJobs", MetricData=[{"MetricName": "listed", "Value": 3.0}])
        groups = boto3.client("logs").describe_log_groups(logGroupNamePrefix="/aws-glue/python-jobs")
        print("groups", sorted(g["logGroupName"] for g in groups["logGroups"]))
        """,
        DefaultArguments={"--day": "monday", "--job-bookmark-option": "job-bookmark-enable"},
    )
    shown = glue.get_job(JobName=job)["Job"]
    assert shown["Command"]["Name"] == "pythonshell" and shown["Command"]["PythonVersion"] == "3.9"
    assert "WorkerType" not in shown
    began = time.monotonic()
    run_id = glue.start_job_run(JobName=job, Arguments={"--day": "tuesday"})["JobRunId"]
    run = wait(glue, job, run_id)
    took = time.monotonic() - began
    assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
    assert run["LogGroupName"] == "/aws-glue/python-jobs"
    assert run["MaxCapacity"] == 0.0625 and "WorkerType" not in run  # Glue's default for pythonshell
    assert took < 30  # generous: the figure is bench/python_shell.py's K2, not a test's
    output = log_lines(api, "/aws-glue/python-jobs/output", run_id)
    assert f"day tuesday job {job}" in output  # the run's argument wins over the default
    assert "spark loaded: []" in output  # plain Python: no PySpark, no JVM gateway
    assert "to stderr" in log_lines(api, "/aws-glue/python-jobs/error", run_id)
    assert "groups ['/aws-glue/python-jobs/error', '/aws-glue/python-jobs/output']" in output
    metrics = api.client("cloudwatch").list_metrics(Namespace="ShellJobs")["Metrics"]
    assert [m["MetricName"] for m in metrics] == ["listed"]
    logs = api.client("logs")
    with pytest.raises(logs.exceptions.ResourceNotFoundException):  # not a Spark job's stream
        logs.get_log_events(logGroupName="/aws-glue/jobs/output", logStreamName=run_id)
    # One run in the run store, with no bookmark: Python shell jobs have none, as on Glue.
    monkeypatch.setenv("SPARKMARK_HOME", str(api.home))
    monkeypatch.delenv("SPARKMARK_STATE_URL", raising=False)
    store = StateStore.from_settings(Settings.from_env())
    try:
        (record,) = store.list_runs(job)
        assert (record.run_id, record.state.value, record.bookmark_option) == (
            run_id,
            "SUCCEEDED",
            BookmarkOption.DISABLE,
        )
    finally:
        store.close()


def test_a_script_that_raises_or_imports_a_missing_module_fails_in_one_line(api, glue, tmp_path):
    raises = shell_job(glue, tmp_path, "x = 1\nprint('before')\nx = x / 0\n")
    missing = shell_job(glue, tmp_path, "import sm_no_such_module\n")
    exits = shell_job(glue, tmp_path, "import sys\nsys.exit(4)\n")
    runs = {j: glue.start_job_run(JobName=j)["JobRunId"] for j in (raises, missing, exits)}
    ended = {j: wait(glue, j, r) for j, r in runs.items()}
    assert ended[raises]["JobRunState"] == "FAILED"
    assert ended[raises]["ErrorMessage"] == f"ZeroDivisionError: division by zero ({raises}.py line 3)"
    error_log = log_lines(api, "/aws-glue/python-jobs/error", runs[raises])
    assert any(line.startswith("Traceback") for line in error_log)  # the traceback is in the error log
    assert "before" in log_lines(api, "/aws-glue/python-jobs/output", runs[raises])
    assert ended[missing]["JobRunState"] == "FAILED"
    assert ended[missing]["ErrorMessage"].startswith(
        "ModuleNotFoundError: No module named 'sm_no_such_module'"
    )
    assert ended[exits]["JobRunState"] == "FAILED"
    assert ended[exits]["ErrorMessage"] == "the script exited with status 4"


def test_what_glue_refuses_for_a_python_shell_job_is_refused_in_one_line(glue, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    command = {"Name": "pythonshell", "ScriptLocation": str(script)}
    refused = {
        "MaxCapacity 0.5": {"MaxCapacity": 0.5},
        "WorkerType": {"WorkerType": "G.1X", "NumberOfWorkers": 2},
        "FLEX": {"ExecutionClass": "FLEX"},
        "library-set": {"DefaultArguments": {"--library-set": "fancy"}},
    }
    for what, fields in refused.items():
        with pytest.raises(glue.exceptions.InvalidInputException) as caught:
            glue.create_job(Name=f"bad-{uuid.uuid4().hex[:6]}", Role="r", Command=command, **fields)
        message = caught.value.response["Error"]["Message"]
        assert what.split()[0] in message and "\n" not in message, message
    with pytest.raises(glue.exceptions.InvalidInputException, match="3.6 support ended"):
        glue.create_job(Name="py36", Role="r", Command={**command, "PythonVersion": "3.6"})
    with pytest.raises(glue.exceptions.InvalidInputException) as ray:
        glue.create_job(Name="ray", Role="r", Command={"Name": "glueray", "ScriptLocation": str(script)})
    assert "no longer open to new customers" in ray.value.response["Error"]["Message"]
    glue.create_job(Name=f"one-dpu-{uuid.uuid4().hex[:6]}", Role="r", Command=command, MaxCapacity=1.0)


def test_a_wrong_library_set_given_to_a_run_and_extra_files_fail_the_run(glue, tmp_path):
    job = shell_job(glue, tmp_path, "print('never')\n")
    bad = glue.start_job_run(JobName=job, Arguments={"--library-set": "everything"})["JobRunId"]
    run = wait(glue, job, bad)
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"] == "--library-set 'everything': Glue's library sets are analytics and none"
    extra = glue.start_job_run(JobName=job, Arguments={"--extra-files": str(tmp_path / "x.txt")})["JobRunId"]
    assert "--extra-files" in wait(glue, job, extra)["ErrorMessage"]


def test_the_analytics_library_set_and_additional_modules_installed_once(api, glue, tmp_path):
    built = wheel(tmp_path, "sm_shell_extra", "def shout(x):\n    return x.upper()\n")
    job = shell_job(
        glue,
        tmp_path,
        """
        import numpy, pandas, sklearn, awswrangler, sm_shell_extra
        print(sm_shell_extra.shout("loaded"), type(pandas.DataFrame({"a": [1]})).__name__)
        """,
        DefaultArguments={"--library-set": "analytics", "--additional-python-modules": str(built)},
    )
    first = glue.start_job_run(JobName=job)["JobRunId"]
    assert wait(glue, job, first)["JobRunState"] == "SUCCEEDED"
    assert "LOADED DataFrame" in log_lines(api, "/aws-glue/python-jobs/output", first)
    installed = list((api.home / "python-modules").iterdir())
    assert len(installed) == 1
    made = installed[0].stat().st_mtime_ns
    second = glue.start_job_run(JobName=job)["JobRunId"]
    assert wait(glue, job, second)["JobRunState"] == "SUCCEEDED"
    # The same list again: the same folder, not installed a second time.
    assert [p.stat().st_mtime_ns for p in (api.home / "python-modules").iterdir()] == [made]


def test_memory_beyond_the_dpu_share_fails_the_run_and_one_dpu_has_room(glue, tmp_path):
    code = "block = bytearray(1536 * 1024 * 1024)\nprint('allocated', len(block))\n"
    small = shell_job(glue, tmp_path, code)  # 0.0625 DPU: 1 GB
    large = shell_job(glue, tmp_path, code, MaxCapacity=1.0)  # 16 GB
    runs = {j: glue.start_job_run(JobName=j)["JobRunId"] for j in (small, large)}
    assert wait(glue, large, runs[large])["JobRunState"] == "SUCCEEDED"
    refused = wait(glue, small, runs[small])
    assert refused["JobRunState"] == "FAILED"
    assert refused["ErrorMessage"].startswith(
        "MemoryError: the job used more than its 1 GB (MaxCapacity 0.0625"
    )


def test_retries_and_timeouts_behave_as_a_spark_jobs(api, glue, tmp_path):
    marker = tmp_path / "tried-once"
    flaky = shell_job(
        glue,
        tmp_path,
        f"""
        from pathlib import Path
        marker = Path({str(marker)!r})
        if not marker.exists():
            marker.write_text("1")
            raise RuntimeError("first attempt fails")
        print("second attempt")
        """,
        MaxRetries=1,
    )
    # Glue's Timeout is whole minutes; the project file takes a fraction of one (2.4 s),
    # so the timed-out run does not hold the test for a minute.
    (tmp_path / "hang.py").write_text("import time\ntime.sleep(120)\n")
    config = Path(api.env["SPARKMARK_CONFIG"])
    config.write_text(
        f'[jobs.hangs]\nScript = "{tmp_path / "hang.py"}"\nCommand = "pythonshell"\nTimeout = 0.04\n'
    )
    first = glue.start_job_run(JobName=flaky)["JobRunId"]
    deadline = time.monotonic() + 30
    while "hangs" not in glue.list_jobs()["JobNames"] and time.monotonic() < deadline:
        time.sleep(0.1)  # the endpoint reads the file again when it changes
    stuck = glue.start_job_run(JobName="hangs")["JobRunId"]
    assert wait(glue, flaky, first)["JobRunState"] == "FAILED"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = glue.get_job_runs(JobName=flaky)["JobRuns"]
        if len(runs) == 2 and runs[0]["JobRunState"] in ENDED:
            break
        time.sleep(0.1)
    assert [(r["Attempt"], r["JobRunState"]) for r in runs] == [(1, "SUCCEEDED"), (0, "FAILED")]
    assert runs[0]["PreviousRunId"] == first
    timed_out = wait(glue, "hangs", stuck, seconds=60)
    assert timed_out["JobRunState"] == "TIMEOUT" and "timed out" in timed_out["ErrorMessage"]


def test_an_awswrangler_script_reads_and_writes_s3_and_the_catalog_from_s3(api, glue, s3_server, tmp_path):
    """A Python shell script as teams write them, stored on S3 (moto's server) like
    Glue's ScriptLocation, using awswrangler against moto's S3 and sparkmark's catalog."""
    s3 = boto3.client(
        "s3", endpoint_url=s3_server.endpoint_url, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )  # fmt: skip
    bucket = f"shell-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="in/orders.csv", Body=b"id,amount\n1,10\n2,25\n3,5\n")
    code = textwrap.dedent(
        f"""
        import sys
        import awswrangler as wr
        from awsglue.utils import getResolvedOptions
        args = getResolvedOptions(sys.argv, ["JOB_NAME", "bucket"])
        frame = wr.s3.read_csv(f"s3://{{args['bucket']}}/in/orders.csv")
        frame["big"] = frame["amount"] > 8
        if "shop" not in wr.catalog.databases()["Database"].tolist():
            wr.catalog.create_database("shop")
        wr.s3.to_parquet(frame, f"s3://{{args['bucket']}}/out/orders/", dataset=True, mode="overwrite",
                         database="shop", table="orders_{bucket.replace("-", "_")}")
        back = wr.s3.read_parquet_table(database="shop", table="orders_{bucket.replace("-", "_")}")
        print("rows", len(back), "big", int(back["big"].sum()))
        """
    )
    s3.put_object(Bucket=bucket, Key="scripts/wrangle.py", Body=code.encode())
    job = f"wrangle-{uuid.uuid4().hex[:6]}"
    glue.create_job(
        Name=job, Role="r", MaxCapacity=1.0,
        Command={"Name": "pythonshell", "ScriptLocation": f"s3://{bucket}/scripts/wrangle.py",
                 "PythonVersion": "3.9"},
        DefaultArguments={"--library-set": "analytics", "--bucket": bucket},
    )  # fmt: skip
    run_id = glue.start_job_run(JobName=job)["JobRunId"]
    run = wait(glue, job, run_id)
    assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
    assert "rows 3 big 2" in log_lines(api, "/aws-glue/python-jobs/output", run_id)
    table = glue.get_table(DatabaseName="shop", Name=f"orders_{bucket.replace('-', '_')}")["Table"]
    assert [c["Name"] for c in table["StorageDescriptor"]["Columns"]] == ["id", "amount", "big"]
    assert table["StorageDescriptor"]["Location"] == f"s3://{bucket}/out/orders/"


def test_a_workflow_of_a_python_shell_job_and_two_spark_jobs_passes_run_properties(api, glue, tmp_path):
    """The shell job lists what is to do and puts it in the run properties; the two Spark
    jobs (triggered on its success) read them and write what they were given."""
    out = tmp_path / "out"
    shell = shell_job(
        glue,
        tmp_path,
        """
        import sys
        import boto3
        from awsglue.utils import getResolvedOptions
        args = getResolvedOptions(sys.argv, ["WORKFLOW_NAME", "WORKFLOW_RUN_ID"])
        glue = boto3.client("glue")
        glue.put_workflow_run_properties(Name=args["WORKFLOW_NAME"], RunId=args["WORKFLOW_RUN_ID"],
                                         RunProperties={"listed": "a,b,c"})
        """,
    )
    spark_script = tmp_path / "spark_step.py"
    spark_script.write_text(
        textwrap.dedent(
            f"""
            import sys, json
            import boto3
            from awsglue.context import GlueContext
            from awsglue.utils import getResolvedOptions
            from pyspark.context import SparkContext
            args = getResolvedOptions(sys.argv, ["JOB_NAME", "WORKFLOW_NAME", "WORKFLOW_RUN_ID"])
            props = boto3.client("glue").get_workflow_run_properties(
                Name=args["WORKFLOW_NAME"], RunId=args["WORKFLOW_RUN_ID"])["RunProperties"]
            spark = GlueContext(SparkContext.getOrCreate()).spark_session
            count = spark.createDataFrame([(x,) for x in props["listed"].split(",")], ["item"]).count()
            with open({str(out)!r} + "-" + args["JOB_NAME"], "w") as f:
                json.dump({{"count": count, "env": props["env"]}}, f)
            """
        )
    )
    spark_jobs = [f"spark-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for name in spark_jobs:
        glue.create_job(Name=name, Role="r", Command={"Name": "glueetl", "ScriptLocation": str(spark_script)})
    workflow = f"mixed-{uuid.uuid4().hex[:6]}"
    glue.create_workflow(Name=workflow, DefaultRunProperties={"env": "ci"})
    glue.create_trigger(Name=f"{workflow}-start", WorkflowName=workflow, Type="ON_DEMAND",
                        Actions=[{"JobName": shell}])  # fmt: skip
    glue.create_trigger(
        Name=f"{workflow}-after", WorkflowName=workflow, Type="CONDITIONAL", StartOnCreation=True,
        Predicate={"Conditions": [{"LogicalOperator": "EQUALS", "JobName": shell, "State": "SUCCEEDED"}]},
        Actions=[{"JobName": name} for name in spark_jobs],
    )  # fmt: skip
    glue.start_trigger(Name=f"{workflow}-start")  # the workflow runs from its trigger
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        runs = glue.get_workflow_runs(Name=workflow)["Runs"]
        if runs and runs[0]["Status"] in ("COMPLETED", "STOPPED", "ERROR"):
            break
        time.sleep(0.2)
    (run,) = runs
    assert run["Status"] == "COMPLETED" and run["Statistics"]["SucceededActions"] == 3, run
    assert run["WorkflowRunProperties"] == {"env": "ci", "listed": "a,b,c"}
    for name in spark_jobs:
        assert json.loads(Path(f"{out}-{name}").read_text()) == {"count": 3, "env": "ci"}


def test_max_concurrent_runs_queues_a_second_run_until_the_first_ends(glue, tmp_path):
    go = tmp_path / "go"
    job = shell_job(
        glue,
        tmp_path,
        f"""
        import time
        from pathlib import Path
        deadline = time.time() + 60
        while not Path({str(go)!r}).exists() and time.time() < deadline:
            time.sleep(0.05)
        """,
        ExecutionProperty={"MaxConcurrentRuns": 1},
    )
    first = glue.start_job_run(JobName=job)["JobRunId"]
    second = glue.start_job_run(JobName=job)["JobRunId"]
    deadline = time.monotonic() + 30
    while glue.get_job_run(JobName=job, RunId=first)["JobRun"]["JobRunState"] != "RUNNING":
        assert time.monotonic() < deadline, "the first run never started"
        time.sleep(0.05)
    for _ in range(10):  # while the first runs, the second stays queued
        assert glue.get_job_run(JobName=job, RunId=second)["JobRun"]["JobRunState"] == "STARTING"
        time.sleep(0.1)
    go.write_text("go")
    done = {r: wait(glue, job, r) for r in (first, second)}
    assert [done[r]["JobRunState"] for r in (first, second)] == ["SUCCEEDED", "SUCCEEDED"]
    assert done[second]["StartedOn"] >= done[first]["CompletedOn"]


def test_sparkmark_job_run_runs_a_declared_python_shell_job_that_calls_glue(tmp_path):
    """`sparkmark job run NAME` from a terminal, with no server running: the run's boto3
    still reaches sparkmark's Glue API (an endpoint the command starts for it)."""
    (tmp_path / "lister.py").write_text(
        "import boto3\njob = boto3.client('glue').get_job(JobName='lister')['Job']\n"
        "print('command', job['Command']['Name'], job['MaxCapacity'])\n"
    )
    config = tmp_path / "sparkmark.toml"
    config.write_text('[jobs.lister]\nScript = "lister.py"\nCommand = "pythonshell"\nMaxCapacity = 1.0\n')
    env = {**os.environ, "SPARKMARK_HOME": str(tmp_path / "home"), "SPARKMARK_CONFIG": str(config)}
    for name in (
        "AWS_ENDPOINT_URL_GLUE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "SPARKMARK_STATE_URL",
    ):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "job", "run", "lister", "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["JobRunState"] == "SUCCEEDED"
    (log,) = (tmp_path / "home" / "logs" / "jobs" / "lister").glob("*.log")
    assert log.read_text().strip() == "command pythonshell 1.0"
