"""Jobs on a real Spark standalone cluster: a master and two workers, each its own JVM on
127.0.0.1, started from the pinned PySpark. The driver is a `sparkmark run` process (or
spark-submit's), the executors are the workers', and the state store is PostgreSQL, as a
team would run it. Each test checks the output holds every input row exactly once, and
that the cluster ran the application on its executors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import psycopg
import pyarrow.parquet as pq
import pytest

from sparkmark.access import local_token
from sparkmark.api.server import start_in_thread
from sparkmark.devservices.cluster import spark_home, start_cluster
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

from ..conftest import PG_DSN, pg_url

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
SPARKMARK = Path(sys.executable).with_name("sparkmark")
CRASH_JOB = ROOT / "tests" / "reliability" / "crash_job.py"
FIXTURES = ROOT / "tests" / "fixtures" / "cluster"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start_cluster(tmp_path_factory.mktemp("cluster"), workers=2, worker_memory="1g")
    yield running
    running.stop()


@pytest.fixture
def team(cluster, pg_schemas, tmp_path):
    """What a team's job sees: the cluster's master, PostgreSQL state, a shared TempDir."""
    schema = pg_schemas()
    env = dict(os.environ)
    env.update(
        SPARKMARK_SPARK_MASTER=cluster.master_url,
        SPARKMARK_STATE_URL=pg_url(schema),
        SPARKMARK_HOME=str(tmp_path / "home"),
        SPARKMARK_SPARK_CONF=json.dumps(
            {"spark.executor.memory": "768m", "spark.sql.shuffle.partitions": "4"}
        ),
    )
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env, StateStore(pg_url(schema))


def run(env: dict, *argv: str, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(env)
    if crash_at:
        env["SPARKMARK_CRASH_AT"] = crash_at
    return subprocess.run(
        [str(SPARKMARK), "run", *argv], env=env, capture_output=True, text=True, timeout=300
    )


def write_rows(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": i, "part": i % 2}) + "\n" for i in ids), encoding="utf-8")


def finished_on_cluster(cluster, app_name: str) -> list[dict]:
    """The cluster's finished applications of that name: each ran on its executors."""
    apps = cluster.status().get("completedapps", [])
    return [a for a in apps if a["name"] == app_name and a["state"] == "FINISHED" and a["cores"] == 2]


@pytest.mark.skipif(
    os.environ.get("SPARKMARK_HEAVY") != "1",
    reason="a driver killed on the cluster and run again (172 s in CI): make soak runs it",
)
def test_file_bookmarks_and_a_driver_killed_before_its_commit(cluster, team, tmp_path):
    env, store = team
    job, data, out = f"cl_{uuid.uuid4().hex[:6]}", tmp_path / "in", tmp_path / "out"
    table = f"cl_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigint, part bigint, doubled bigint)")
    args = [str(CRASH_JOB), "--JOB_NAME", job, "--job-bookmark-option", "job-bookmark-enable"]
    args += [
        "--input",
        str(data),
        "--output",
        str(out),
        "--table",
        table,
        "--db",
        "jdbc:postgresql://127.0.0.1:5432/test?user=postgres",
    ]
    try:
        write_rows(data / "a.json", list(range(0, 40)))
        write_rows(data / "b.json", list(range(40, 60)))
        killed = run(env, *args, crash_at="staged")  # the driver dies between staging and commit
        assert killed.returncode != 0
        assert store.latest_version(job) is None  # nothing committed

        first = run(env, *args)
        assert first.returncode == 0, first.stderr[-3000:]
        write_rows(data / "c.json", list(range(60, 75)))
        second = run(env, *args)
        assert second.returncode == 0, second.stderr[-3000:]

        runs = store.list_runs(job)
        assert runs[0].metrics["sources"]["src"]["files_read"] == 1  # run 2: only c.json
        glue = runs[0].metrics["glue"]  # Glue's metrics, from the driver's Spark UI: the executors' tasks
        assert glue["glue.driver.aggregate.recordsRead"] >= 15
        assert glue["glue.driver.ExecutorAllocationManager.executors.numberAllExecutors"] >= 1
        ids = sorted(r["id"] for r in pq.read_table(out).to_pylist())
        assert ids == list(range(75))  # every row once: nothing of the killed run
        with psycopg.connect(PG_DSN) as conn:
            assert sorted(r[0] for r in conn.execute(f"SELECT id FROM {table}")) == list(range(75))
        files = store.committed_files(job, "src", store.latest_version(job))
        assert sorted(Path(f.path).name for f in files) == ["a.json", "b.json", "c.json"]
        assert len(finished_on_cluster(cluster, job)) >= 2  # (the master also ends the killed run's app)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_jdbc_read_in_hash_partitions_on_the_executors(cluster, team, tmp_path):
    env, store = team
    job, out, table = f"cl_{uuid.uuid4().hex[:6]}", tmp_path / "out", f"cl_src_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigint primary key, v text)")
        conn.execute(f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 500) g")
    try:
        done = run(
            env,
            str(FIXTURES / "jdbc_hash.py"),
            "--JOB_NAME", job,
            "--job-bookmark-option", "job-bookmark-enable",
            "--db", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres",
            "--table", table,
            "--partitions", "4",
            "--output", str(out),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "PARTITIONS 4" in done.stdout
        assert sorted(r["id"] for r in pq.read_table(out).to_pylist()) == list(range(1, 501))
        assert store.latest_version(job).ctx_states["db_src"]["last_value"] == [500]
        assert len(finished_on_cluster(cluster, job)) == 1
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_glue_script_with_a_catalog_read_after_a_crawl(cluster, team, tmp_path):
    env, store = team
    lake, out, db = (
        tmp_path / "orders",
        tmp_path / "out",
        f"cl_{uuid.uuid4().hex[:6]}",
    )  # the crawler names the table after the folder
    for day, ids in (("2026-11-01", [1, 2]), ("2026-11-02", [3, 4]), ("2026-11-03", [5])):
        folder = lake / f"dt={day}"
        folder.mkdir(parents=True)
        (folder / "o.json").write_text("".join(json.dumps({"id": i, "amount": i * 1.5}) + "\n" for i in ids))
    before = len([a for a in cluster.status().get("completedapps", []) if a["cores"] == 2])
    crawler = tmp_path / "crawler.toml"
    crawler.write_text(
        f'[crawler]\nName = "c_{db}"\nDatabaseName = "{db}"\n[crawler.Targets]\nS3Targets = [{{ Path = "{lake}" }}]\n'
    )
    for argv in (["crawler", "create", "--file", str(crawler)], ["crawler", "run", f"c_{db}"]):
        made = subprocess.run([str(SPARKMARK), *argv], env=env, capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr[-3000:]
    job = f"glue_{db}"
    done = run(
        env,
        str(FIXTURES / "glue_catalog.py"),
        "--JOB_NAME",
        job,
        "--database",
        db,
        "--output",
        str(out),
        "--job-bookmark-option",
        "job-bookmark-enable",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = sorted((r["order_id"], r["amount"], r["dt"]) for r in pq.read_table(out).to_pylist())
    assert rows == [(3, 4.5, "2026-11-02"), (4, 6.0, "2026-11-02"), (5, 7.5, "2026-11-03")]
    assert store.latest_version(job).ctx_states["orders"]["files_committed"] == 2
    after = [
        a for a in cluster.status().get("completedapps", []) if a["cores"] == 2 and a["state"] == "FINISHED"
    ]
    # The script ran on the executors; the crawl of JSON typed its samples without Spark.
    assert len(after) >= before + 1


def test_spark_submit_in_client_mode(cluster, team, tmp_path):
    """A sparkmark job submitted with the pinned PySpark's spark-submit: the driver in
    client mode on this host, the executors on the cluster's workers."""
    env, store = team
    job, data, out = f"sub_{uuid.uuid4().hex[:6]}", tmp_path / "in", tmp_path / "out"
    write_rows(data / "a.json", list(range(10)))
    script = tmp_path / "submit_job.py"
    script.write_text(
        "from sparkmark import Job\n"
        "job = Job.from_args()\n"
        "rows = job.read_files(job.args['input'], format='json', ctx='src')\n"
        "job.write_files(rows, job.args['output'], format='parquet', ctx='out')\n"
        "job.commit()\n"
    )
    submit_env = dict(
        env, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"
    )
    done = subprocess.run(
        [
            str(spark_home() / "bin" / "spark-submit"),
            "--master", cluster.master_url,
            "--deploy-mode", "client",
            "--name", job,
            "--conf", "spark.executor.memory=768m",
            str(script),
            "--JOB_NAME", job, "--job-bookmark-option", "job-bookmark-enable",
            "--input", str(data), "--output", str(out),
        ],
        env=submit_env,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(r["id"] for r in pq.read_table(out).to_pylist()) == list(range(10))
    assert store.latest_version(job).run == 1
    assert finished_on_cluster(cluster, job)


def test_a_master_that_does_not_answer_is_one_line_at_once(tmp_path):
    from sparkmark.devservices.process import free_port
    from sparkmark.errors import ConfigError
    from sparkmark.spark import check_master

    check_master("local[2]")
    nobody = f"spark://127.0.0.1:{free_port()}"
    with pytest.raises(ConfigError, match="does not answer"):
        check_master(nobody)
    write_rows(tmp_path / "in" / "a.json", [1])
    env = dict(os.environ, SPARKMARK_SPARK_MASTER=nobody, SPARKMARK_HOME=str(tmp_path / "home"))
    done = run(
        env,
        str(CRASH_JOB),
        "--JOB_NAME",
        "down",
        "--input",
        str(tmp_path / "in"),
        "--output",
        str(tmp_path / "out"),
        "--table",
        "t",
        "--db",
        "jdbc:postgresql://127.0.0.1:5432/test",
    )
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: the Spark master {nobody} does not answer: start the cluster (`make cluster` starts one here), or point SPARKMARK_SPARK_MASTER at a running one"
    ]


# ------------------------------------------------------------------ execution classes and capacity
# AWS's job run statuses page: a Flex run waits (WAITING) while the service lacks capacity;
# its auto scaling page: executors are added and removed with the load, up to the job's
# workers. Here the cluster's capacity is what standard runs hold, and auto scaling is
# Spark's dynamic allocation, shown by the executor events in Spark's own event log.

SCALING_SCRIPT = """
import sys, time
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
args = getResolvedOptions(sys.argv, ["JOB_NAME"])
sc = SparkContext.getOrCreate()
job = Job(GlueContext(sc))
job.init(args["JOB_NAME"], args)
# a backlog of one-second tasks: dynamic allocation asks for more executors
sc.parallelize(range(24), 24).map(lambda x: (time.sleep(1), x)[1]).count()
deadline = time.time() + 90  # idle executors are given back after the idle timeout
while time.time() < deadline and sc._jsc.sc().getExecutorIds().size() > 0:
    time.sleep(0.5)
print("executors left", sc._jsc.sc().getExecutorIds().size())
job.commit()
"""

HOLDING_SCRIPT = """
import sys, time
from pathlib import Path
from pyspark.context import SparkContext
sc = SparkContext.getOrCreate()
go = Path(sys.argv[sys.argv.index("--go") + 1])
deadline = time.time() + 120
while not go.exists() and time.time() < deadline:  # holds the cluster until the test says
    sc.parallelize(range(2), 2).count()
    time.sleep(0.2)
"""

QUICK_SCRIPT = """
from pyspark.context import SparkContext
print("counted", SparkContext.getOrCreate().parallelize(range(10), 2).count())
"""


def _capacity_project(tmp_path: Path, cluster, jobs: str, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SPARKMARK_HOME", str(home))
    monkeypatch.delenv("SPARKMARK_STATE_URL", raising=False)
    monkeypatch.delenv("SPARKMARK_SPARK_MASTER", raising=False)
    path = tmp_path / "sparkmark.toml"
    path.write_text(jobs.replace("MASTER", cluster.master_url))
    monkeypatch.setenv("SPARKMARK_CONFIG", str(path))
    return path


def _scheduler(path: Path):
    from sparkmark.workflow.registry import ProjectSource
    from sparkmark.workflow.scheduler import Scheduler

    state = StateStore.from_settings()
    return Scheduler(ProjectSource(path, state).current(), state, owner=f"test-{uuid.uuid4().hex[:6]}")


def _job_run_shown(job: str, run_id: str) -> dict:
    """The run as GetJobRun shows it, from an endpoint on this test's home."""
    endpoint = start_in_thread(Settings.from_env())
    try:
        glue = boto3.client(
            "glue", endpoint_url=endpoint.url, region_name="us-east-1", aws_access_key_id="t",
            aws_secret_access_key=local_token(Settings.from_env().home),
        )  # fmt: skip
        return glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]
    finally:
        endpoint.stop()


def _events(folder: Path) -> list[dict]:
    (log,) = [p for p in folder.iterdir() if p.is_file()]
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_auto_scaling_grows_executors_past_one_and_gives_them_all_back(cluster, tmp_path, monkeypatch):
    events = tmp_path / "events"
    events.mkdir()
    (tmp_path / "scale.py").write_text(SCALING_SCRIPT)
    path = _capacity_project(
        tmp_path,
        cluster,
        f"""
[jobs.scaling]
Script = "scale.py"
DefaultArguments = {{ "--enable-auto-scaling" = "true" }}

[jobs.scaling.Spark]
master = "MASTER"

[jobs.scaling.Spark.conf]
"spark.executor.memory" = "768m"
"spark.executor.cores" = "1"
"spark.dynamicAllocation.executorIdleTimeout" = "2s"
"spark.dynamicAllocation.schedulerBacklogTimeout" = "1s"
"spark.eventLog.enabled" = "true"
"spark.eventLog.dir" = "{events}"
"spark.eventLog.rolling.enabled" = "false"
"spark.eventLog.compress" = "false"
""",
        monkeypatch,
    )
    scheduler = _scheduler(path)
    run_id = scheduler.start_job_run("scaling")
    assert scheduler.run(
        until=lambda: scheduler.store.action(run_id).state.value not in ("WAITING", "RUNNING"),
        max_seconds=240,
        poll_seconds=0.2,
    )
    action = scheduler.store.action(run_id)
    assert action.state.value == "SUCCEEDED", action.error
    log = _events(events)
    added = [e for e in log if e["Event"] == "SparkListenerExecutorAdded"]
    removed = [e for e in log if e["Event"] == "SparkListenerExecutorRemoved"]
    assert len(added) >= 2  # grew past one executor under the backlog
    assert {e["Executor ID"] for e in removed} == {e["Executor ID"] for e in added}  # and back to zero
    # removed by the driver (dynamic allocation, once idle) while the application still ran
    assert all(e["Removed Reason"] == "Executor killed by driver." for e in removed)
    (end,) = [e for e in log if e["Event"] == "SparkListenerApplicationEnd"]
    assert max(e["Timestamp"] for e in removed) < end["Timestamp"]
    (record,) = scheduler.state.list_runs("scaling")
    measured = record.metrics["capacity"]
    assert measured["executors_added"] == len(added) and measured["dpu_seconds"] > 0

    shown = _job_run_shown("scaling", run_id)
    assert shown["DPUSeconds"] == measured["dpu_seconds"]  # an auto-scaling run reports it, as on Glue


def test_a_flex_run_waits_while_a_standard_run_holds_the_cluster_then_runs(cluster, tmp_path, monkeypatch):
    go = tmp_path / "go"
    (tmp_path / "hold.py").write_text(HOLDING_SCRIPT)
    (tmp_path / "quick.py").write_text(QUICK_SCRIPT)
    conf = '{ "spark.executor.memory" = "768m", "spark.executor.cores" = "1" }'
    path = _capacity_project(
        tmp_path,
        cluster,
        f"""
[jobs.standard]
Script = "hold.py"
DefaultArguments = {{ "--go" = "{go}" }}
Spark = {{ master = "MASTER", conf = {conf} }}

[jobs.flexible]
Script = "quick.py"
ExecutionClass = "FLEX"
Spark = {{ master = "MASTER", conf = {conf} }}

[jobs.elsewhere]
Script = "quick.py"
ExecutionClass = "FLEX"
Spark = {{ master = "local[1]" }}
""",
        monkeypatch,
    )
    scheduler = _scheduler(path)
    standard = scheduler.start_job_run("standard")
    flexible = scheduler.start_job_run("flexible")
    elsewhere = scheduler.start_job_run("elsewhere")  # another Spark: nothing holds it
    state = lambda run_id: scheduler.store.action(run_id).state.value  # noqa: E731
    assert scheduler.run(
        until=lambda: state(standard) == "RUNNING" and state(elsewhere) == "SUCCEEDED",
        max_seconds=180,
        poll_seconds=0.2,
    )
    for _ in range(5):  # passes of the scheduler while the standard run holds the cluster
        scheduler.tick()
        assert state(flexible) == "WAITING"

    shown = _job_run_shown("flexible", flexible)
    assert (shown["JobRunState"], shown["ExecutionClass"]) == ("WAITING", "FLEX")
    go.write_text("go")
    assert scheduler.run(
        until=lambda: state(flexible) not in ("WAITING", "RUNNING"), max_seconds=240, poll_seconds=0.2
    )
    held, flex = scheduler.store.action(standard), scheduler.store.action(flexible)
    assert (held.state.value, flex.state.value) == ("SUCCEEDED", "SUCCEEDED"), (held.error, flex.error)
    assert flex.started_at >= held.ended_at  # it ran once the cluster was free
