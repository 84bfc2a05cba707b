"""sparkmark over Spark Connect: a Spark Connect server started from the pinned PySpark,
`sparkmark run --remote sc://…`. The listing, the state store, the commit and the publish
run in the client; the Spark work runs on the server. What needs a classic session (a
Glue script's SparkContext) is refused in one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparkmark.devservices.connect import start_connect
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
SPARKMARK = Path(sys.executable).with_name("sparkmark")
JOB = """
from sparkmark import Job

job = Job.from_args()
print("SESSION", type(job.spark).__module__)
rows = job.read_files(job.args["input"], format="json", ctx="src")
print("ROWS", rows.count())
job.write_files(rows, job.args["output"], format="parquet", ctx="out")
job.commit()
"""


@pytest.fixture(scope="module")
def connect(tmp_path_factory):
    server = start_connect(tmp_path_factory.mktemp("connect"), ui=True)
    yield server
    server.stop()


def sparkmark(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SPARKMARK), *argv], env=env, capture_output=True, text=True, timeout=300)


def write_rows(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids), encoding="utf-8")


def test_a_bookmarked_job_over_spark_connect(connect, tmp_path):
    data, out, script = tmp_path / "in", tmp_path / "out", tmp_path / "job.py"
    script.write_text(JOB)
    env = dict(os.environ, SPARKMARK_HOME=str(tmp_path / "home"), SPARKMARK_SPARK_UI_URL=str(connect.ui_url))
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    args = ["run", "--remote", connect.url, str(script), "--JOB_NAME", "remote_job"]
    args += ["--job-bookmark-option", "job-bookmark-enable", "--input", str(data), "--output", str(out)]
    write_rows(data / "a.json", list(range(10)))
    first = sparkmark(env, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "SESSION pyspark.sql.connect.session" in first.stdout and "ROWS 10" in first.stdout
    write_rows(data / "b.json", list(range(10, 15)))
    second = sparkmark(env, *args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "ROWS 5" in second.stdout
    assert sorted(r["id"] for r in pq.read_table(out).to_pylist()) == list(range(15))
    store = StateStore.from_settings(Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "home")}))
    files = store.committed_files("remote_job", "src", store.latest_version("remote_job"))
    assert sorted(Path(f.path).name for f in files) == ["a.json", "b.json"]
    # Glue's metrics of a Connect run, from the server's Spark UI: the second run read
    # the 5 new records (at least once; a schema pass may read them again).
    (latest, _), _ = store.find_runs("remote_job", limit=2)
    glue = latest.metrics["glue"]
    assert glue["glue.driver.aggregate.recordsRead"] >= 5
    assert glue["glue.driver.aggregate.numCompletedStages"] >= 1
    assert glue["sparkmark.bookmark.filesRead"] == 1


def test_a_glue_script_over_spark_connect_is_refused_in_one_line(connect, tmp_path):
    env = dict(os.environ, SPARKMARK_HOME=str(tmp_path / "home"))
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = sparkmark(
        env,
        "run", "--remote", connect.url, str(ROOT / "examples" / "glue" / "studio_orders.py"),
        "--JOB_NAME", "glue_remote", "--orders_path", str(tmp_path), "--customers_path", str(tmp_path),
        "--output_path", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "makes a SparkContext" in errors[0] and "without --remote" in errors[0]


def test_a_remote_that_does_not_answer_and_a_bad_url(tmp_path):
    from sparkmark.devservices.process import free_port

    env = dict(os.environ, SPARKMARK_HOME=str(tmp_path / "home"))
    script = tmp_path / "job.py"
    script.write_text(JOB)
    write_rows(tmp_path / "in" / "a.json", [1])
    common = [
        str(script),
        "--JOB_NAME",
        "nowhere",
        "--input",
        str(tmp_path / "in"),
        "--output",
        str(tmp_path / "out"),
    ]
    url = f"sc://127.0.0.1:{free_port()}"
    gone = sparkmark(env, "run", "--remote", url, *common)
    assert gone.returncode == 1
    assert [line for line in gone.stderr.splitlines() if line.startswith("error:")] == [
        f"error: the Spark Connect server {url} does not answer"
    ]
    bad = sparkmark(env, "run", "--remote", "http://127.0.0.1:1", *common)
    assert bad.returncode == 1 and "--remote takes a Spark Connect URL" in bad.stderr


def test_a_bookmarked_jdbc_read_over_spark_connect(tmp_path):
    """The server has the JDBC driver (spark.jars); the key range and the commit are the
    client's."""
    import uuid

    import psycopg

    from sparkmark.spark import jdbc_jars

    from ..conftest import PG_DSN

    table = f"remote_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigint primary key, v text)")
        conn.execute(f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 30) g")
    jars = ",".join(jdbc_jars(Settings.from_env()))
    server = start_connect(tmp_path / "connect", conf={"spark.jars": jars})
    script = tmp_path / "jdbc_job.py"
    script.write_text(
        "from sparkmark import Job\n"
        "job = Job.from_args()\n"
        "rows = job.read_jdbc(job.args['db'], table=job.args['table'], ctx='db')\n"
        "print('ROWS', rows.count())\n"
        "job.write_files(rows, job.args['output'], format='parquet', ctx='out')\n"
        "job.commit()\n"
    )
    env = dict(os.environ, SPARKMARK_HOME=str(tmp_path / "home"))
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    args = ["run", "--remote", server.url, str(script), "--JOB_NAME", "remote_jdbc", "--job-bookmark-option"]
    args += [
        "job-bookmark-enable",
        "--db",
        "jdbc:postgresql://127.0.0.1:5432/test?user=postgres",
        "--table",
        table,
    ]
    args += ["--output", str(tmp_path / "out")]
    try:
        first = sparkmark(env, *args)
        assert first.returncode == 0, first.stderr[-3000:]
        assert "ROWS 30" in first.stdout
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(31, 36) g")
        second = sparkmark(env, *args)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "ROWS 6" in second.stdout
        assert sorted(r["id"] for r in pq.read_table(tmp_path / "out").to_pylist()) == list(range(1, 37))
    finally:
        server.stop()
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_a_streaming_job_over_spark_connect_is_refused_in_one_line(kafka_broker, tmp_path):
    from sparkmark.spark import session_jars

    server = start_connect(
        tmp_path / "connect", conf={"spark.jars": ",".join(session_jars(Settings.from_env()))}
    )
    script = tmp_path / "stream_job.py"
    script.write_text(
        "from sparkmark import Job\n"
        "job = Job.from_args()\n"
        "frame = job.read_stream('kafka', ctx='src', topicName='t', classification='json', schema='id bigint',\n"
        "                        **{'bootstrap.servers': job.args['brokers']})\n"
        "job.for_each_batch(frame, lambda df, batch_id: None, window='1 second', checkpoint=job.args['checkpoint'])\n"
        "job.commit()\n"
    )
    env = dict(os.environ, SPARKMARK_HOME=str(tmp_path / "home"))
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    try:
        done = sparkmark(
            env,
            "run", "--until-caught-up", "--remote", server.url, str(script), "--JOB_NAME", "remote_stream",
            "--brokers", kafka_broker.bootstrap_servers, "--checkpoint", str(tmp_path / "cp"),
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "streaming jobs need a classic Spark session" in errors[0], done.stderr[
        -2000:
    ]
