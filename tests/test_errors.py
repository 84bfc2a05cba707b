"""Every failure ends in one `error:` line, with the run closed when the store can be
reached: a state store lost in the commit, a database closed to connections, a
config file that is not UTF-8 or nests too deeply, a job name too long in bytes,
and counts that say what was done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import psycopg
import pytest
from typer.testing import CliRunner

from sparkmark.cli.app import app
from sparkmark.engine.models import RunState
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

from .conftest import PG_DSN, Runner, write_json


def sparkmark(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sparkmark", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.fixture
def closable_database():
    """A PostgreSQL database of its own, so it can be closed to connections."""
    name = f"sm_closable_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_DSN.rsplit("/", 1)[0]
    yield name, f"{base.replace('postgresql://', 'postgresql+psycopg://', 1)}/{name}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        conn.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


CLOSING_JOB = textwrap.dedent(
    """
    import psycopg
    from sparkmark import Job

    job = Job.from_args()
    job.read_files(job.args["input"], format="json", ctx="src").count()
    with psycopg.connect(job.args["admin"], autocommit=True) as admin:  # the store goes away
        admin.execute(f'ALTER DATABASE "{job.args["db"]}" ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [job.args["db"]]
        )
    job.commit()
    """
)


def test_store_lost_in_the_commit_says_nothing_was_committed(tmp_path, closable_database, spark):
    name, url = closable_database
    script = tmp_path / "job.py"
    script.write_text(CLOSING_JOB, encoding="utf-8")
    write_json(tmp_path / "in" / "a.json", [1, 2])
    env = {"SPARKMARK_STATE_URL": url}
    done = sparkmark(
        "run",
        str(script),
        "--JOB_NAME",
        "lost",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(tmp_path / "in"),
        "--admin",
        PG_DSN,
        "--db",
        name,
        env=env,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = error_lines(done.stderr)
    assert "is unreachable" in line, line
    assert "nothing was committed unless the store received the commit" in line

    # While the store is closed, any command says so in one line.
    listed = sparkmark("runs", "list", "lost", env=env)
    assert listed.returncode == 1 and "Traceback" not in listed.stderr
    assert len(listed.stderr.strip().splitlines()) == 1 and "cannot be opened" in listed.stderr

    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    store = StateStore(url)
    [run] = store.list_runs("lost")
    assert run.state is RunState.RUNNING and store.latest_version("lost") is None
    # Its process is gone: the next run takes the lease over and reads the input once.
    rows, _ = Runner(store, spark, "lost", tmp_path).run(tmp_path / "in")
    assert rows == [1, 2]
    assert store.get_run(run.run_id).state is RunState.FAILED
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'[jobs.a]\nScript = "caf\xe9.py"\n', "is not UTF-8 text (byte 0xe9 on line 2)"),
        (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nests tables or arrays too deeply to read"),
        (b"[jobs.a\n", "is not valid TOML"),
    ],
    ids=["latin-1", "deep", "broken"],
)
def test_config_file_problems_are_one_line(tmp_path, content, says):
    config = tmp_path / "sparkmark.toml"
    config.write_bytes(content)
    done = sparkmark("job", "list", "--config", str(config), timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert error_lines(done.stderr) == [f"error: {config} {says}"] or (
        len(error_lines(done.stderr)) == 1 and says in done.stderr
    )


@pytest.mark.slow
def test_name_too_long_in_bytes_is_refused_before_the_run(tmp_path, sparkmark_home):
    name = "注文" * 50  # 100 characters, 300 bytes
    script = tmp_path / "job.py"
    script.write_text("from sparkmark import Job\nJob.from_args().commit()\n", encoding="utf-8")
    done = sparkmark("run", str(script), "--JOB_NAME", name, env={"SPARKMARK_HOME": str(sparkmark_home)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = error_lines(done.stderr)
    assert "300 bytes in UTF-8 (100 characters)" in line
    store = StateStore.from_settings(Settings.from_env())
    assert not store.job_exists(name)  # refused before any run was recorded
    store.close()


@pytest.mark.slow
def test_a_script_error_is_one_line_with_its_place_and_debug_adds_the_traceback(tmp_path, sparkmark_home):
    script = tmp_path / "job.py"
    script.write_text("from sparkmark import Job\njob = Job.from_args()\nraise ValueError('bad row')\n")
    env = {"SPARKMARK_HOME": str(sparkmark_home)}
    done = sparkmark("run", str(script), "--JOB_NAME", "oops", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = error_lines(done.stderr)
    assert line.startswith("error: ValueError: bad row") and "job.py line 3" in line
    debug = sparkmark("--debug", "run", str(script), "--JOB_NAME", "oops", env=env)
    assert "Traceback" in debug.stderr and len(error_lines(debug.stderr)) == 1


def test_outputs_recover_counts_what_it_finished(tmp_path, spark, sparkmark_home):
    store = StateStore.from_settings(Settings.from_env())  # the store the CLI opens
    runner = Runner(store, spark, "counted", tmp_path)
    src, out = tmp_path / "in", tmp_path / "out"
    for n in range(3):  # three writes, published with their commits
        write_json(src / f"f{n}.json", [n])
        job = runner.start()
        job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
        job.commit()
    write_json(src / "f3.json", [3])
    job = runner.start()
    job.write_files(job.read_files(str(src), ctx="src"), str(out), ctx="out")
    job.job_run.outputs.clear()  # dies between the commit and the publish
    job.commit()
    done = CliRunner().invoke(app, ["outputs", "recover", "counted"])
    assert done.exit_code == 0, done.output
    assert "1 writes finished, 0 still unfinished" in done.output
    listed = CliRunner().invoke(app, ["outputs", "list", "counted", "--json"])
    assert [w["state"] for w in json.loads(listed.output)] == ["PUBLISHED"] * 4
    store.close()


CUTTING_JOB = textwrap.dedent(
    """
    import psycopg
    from sparkmark import Job

    job = Job.from_args()
    job.read_files(job.args["input"], format="json", ctx="src").count()
    with psycopg.connect(job.args["admin"], autocommit=True) as admin:  # cut, but not closed
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [job.args["db"]],
        )
    job.commit()
    """
)


def test_connections_cut_before_the_commit_are_replaced_and_the_commit_lands(tmp_path, closable_database):
    name, url = closable_database
    script = tmp_path / "job.py"
    script.write_text(CUTTING_JOB, encoding="utf-8")
    write_json(tmp_path / "in" / "a.json", [1, 2])
    done = sparkmark(
        "run",
        str(script),
        "--JOB_NAME",
        "cut",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--input",
        str(tmp_path / "in"),
        "--admin",
        PG_DSN,
        "--db",
        name,
        env={"SPARKMARK_STATE_URL": url},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    store = StateStore(url)
    [run] = store.list_runs("cut")
    assert run.state is RunState.SUCCEEDED and store.latest_version("cut").version == 1
    store.close()


JVM_DIES = """
import os, signal, sys
from sparkmark import Job
job = Job.from_args()
df = job.read_files(job.args["input"], format="json", ctx="src")
assert df.count() == 2
proc = df.sparkSession.sparkContext._gateway.proc
if job.args["how"] == "killed":
    os.kill(proc.pid, signal.SIGKILL)  # as the kernel's OOM killer does
else:
    # Spark's handler for a fatal OutOfMemoryError ends the JVM with status 52
    # (SparkExitCode.OOM); halt() ends it the same way, at once.
    df.sparkSession.sparkContext._jvm.java.lang.Runtime.getRuntime().halt(52)
proc.wait()
df.count()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("killed", "the Spark JVM was killed by SIGKILL"),
        ("oom", "ran out of memory (java.lang.OutOfMemoryError)"),
    ],
)
def test_a_spark_jvm_that_dies_says_why_and_names_the_file(tmp_path, sparkmark_home, how, says):
    """A JVM that died (out of memory, or killed) was reported as ConnectionRefusedError.
    Now the error says why, from the JVM's exit status, and which file the run read."""
    data = tmp_path / "in"
    write_json(data / "only.json", [1, 2])
    script = tmp_path / "dies.py"
    script.write_text(JVM_DIES)
    done = sparkmark(
        "run", str(script), "--JOB_NAME", f"dies_{how}", "--job-bookmark-option", "job-bookmark-enable",
        "--input", str(data), "--how", how,
    )  # fmt: skip
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert says in line and "only.json" in line and "commits nothing" in line
    run = StateStore.from_settings().list_runs(f"dies_{how}")[0]
    assert run.state is RunState.FAILED and says in (run.error or "") and "only.json" in (run.error or "")
    assert StateStore.from_settings().latest_version(f"dies_{how}") is None  # nothing committed


@pytest.mark.slow
def test_a_rest_client_that_gives_up_leaves_no_stack_on_the_terminal(tmp_path, sparkmark_home):
    """Spark's UI logs at ERROR with a long Java stack when a client of its REST API stops
    waiting (Jersey's responder; Jetty's channel): under `sparkmark run` those records
    go to the run's log file, while any other ERROR still reaches the terminal."""
    script = tmp_path / "job.py"
    script.write_text(
        "from sparkmark import Job\n"
        "job = Job.from_args()\n"
        "spark = job.spark\n"
        "manager = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager\n"
        "for name in ('org.glassfish.jersey.server.ServerRuntime$Responder',\n"
        "             'org.sparkproject.jetty.server.HttpChannel'):\n"
        "    manager.getLogger(name).error('client gone: ' + name)\n"
        "manager.getLogger('org.apache.spark.SomethingElse').error('a real error stays visible')\n"
        "spark.range(3).count()\n"
        "job.commit()\n"
    )
    done = sparkmark(
        "run", str(script), "--JOB_NAME", "quiet_ui", env={"SPARKMARK_HOME": str(sparkmark_home)}
    )
    assert done.returncode == 0, done.stderr
    assert "client gone" not in done.stderr
    assert "a real error stays visible" in done.stderr
    logs = "".join(p.read_text(errors="replace") for p in (sparkmark_home / "logs").rglob("*") if p.is_file())
    assert "client gone: org.glassfish.jersey.server.ServerRuntime$Responder" in logs
    assert "client gone: org.sparkproject.jetty.server.HttpChannel" in logs
