"""Airflow's Amazon provider, a client nobody here wrote, against `sparkmark api`: its
Glue job hook creates a job, starts a run, waits for it and follows its logs
(``verbose=True``, through CloudWatch Logs' FilterLogEvents), and its crawler hook
creates a crawler, updates its tags (through STS and GetTags) and waits for a crawl.
Airflow runs as its users run it, a process of its own virtualenv (``make clients``),
with its AWS connection pointing at the endpoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from sparkmark.access import local_token

pytestmark = pytest.mark.slow

AIRFLOW_PYTHON = Path(__file__).resolve().parents[1] / ".venv-clients" / "airflow" / "bin" / "python"
SPARKMARK = [sys.executable, "-m", "sparkmark"]

JOB_SCRIPT = """
import sys
from awsglue.utils import getResolvedOptions
args = getResolvedOptions(sys.argv, ["JOB_NAME", "day"])
for part in ("one", "two"):
    print(f"loaded part {part} of {args['day']}")
print("a line for the error group", file=sys.stderr)
"""

JOB_DRIVER = """
from airflow.providers.amazon.aws.hooks.glue import GlueJobHook

hook = GlueJobHook(
    job_name="nightly_orders",
    desc="AWS Glue Job with Airflow",
    script_location={script!r},
    iam_role_arn="arn:aws:iam::000000000000:role/glue",
    create_job_kwargs={{"Command": {{"Name": "glueetl", "ScriptLocation": {script!r}}}}},
    job_poll_interval=0.5,
)
name = hook.create_or_update_glue_job()
run = hook.initialize_job(script_arguments={{"--day": "2026-11-26"}})
final = hook.job_completion(name, run["JobRunId"], verbose=True)
print("FINAL", final["JobRunState"], run["JobRunId"])
"""

CRAWLER_DRIVER = """
from airflow.providers.amazon.aws.hooks.glue_crawler import GlueCrawlerHook

hook = GlueCrawlerHook()
config = {{
    "Name": "orders_crawler",
    "Role": "arn:aws:iam::000000000000:role/glue",
    "DatabaseName": "lake",
    "Targets": {{"S3Targets": [{{"Path": {data!r}}}]}},
    "Tags": {{"team": "data", "cost": "etl"}},
}}
assert not hook.has_crawler("orders_crawler")
hook.create_crawler(**config)
config["Tags"] = {{"team": "platform"}}  # Airflow changes and removes tags the crawler has
hook.update_crawler(**config)
hook.start_crawler("orders_crawler")
print("FINAL", hook.wait_for_crawler_completion("orders_crawler", poll_interval=0.5))
"""


@pytest.fixture
def api(tmp_path):
    """`sparkmark api` with its scheduler, as a process; its URL and its environment."""
    if not AIRFLOW_PYTHON.exists():
        pytest.fail(f"Airflow's virtualenv is missing: run `make clients` ({AIRFLOW_PYTHON})")
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    (project / "sparkmark.toml").write_text("")
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(home),
        "SPARKMARK_CONFIG": str(project / "sparkmark.toml"),
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [*SPARKMARK, "api", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    found = None
    for _ in range(20):  # the URL is on one of its first lines
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if found or not line:
            break
    assert found, proc.stderr.read() if proc.poll() is not None and proc.stderr else "no URL printed"
    yield found.group(0), home
    proc.terminate()
    proc.communicate(timeout=60)


def airflow(driver: str, url: str, home: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    connection = {
        "conn_type": "aws",
        "login": "airflow",
        "password": local_token(home),
        "extra": {"region_name": "us-east-1", "endpoint_url": url},
    }
    script = tmp_path / f"driver_{abs(hash(driver))}.py"
    script.write_text(textwrap.dedent(driver))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPARKMARK_", "PYSPARK"))}
    env.update(AIRFLOW_HOME=str(tmp_path / "airflow"), AIRFLOW_CONN_AWS_DEFAULT=json.dumps(connection))
    return subprocess.run(
        [str(AIRFLOW_PYTHON), str(script)], capture_output=True, text=True, env=env, timeout=600
    )


def test_airflows_glue_job_hook_runs_a_job_and_follows_its_logs(api, tmp_path):
    url, home = api
    script = tmp_path / "nightly.py"
    script.write_text(JOB_SCRIPT)
    done = airflow(JOB_DRIVER.format(script=str(script)), url, home, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    final = re.search(r"FINAL (\w+) (jr_\w+)", out)
    assert final and final.group(1) == "SUCCEEDED", out[-4000:]
    # verbose=True printed the run's output and error groups, each line once.
    for line in (
        "loaded part one of 2026-11-26",
        "loaded part two of 2026-11-26",
        "a line for the error group",
    ):
        assert out.count(line) == 1, (line, out[-4000:])
    glue = boto3.client(
        "glue",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key=local_token(home),
        config=Config(retries={"max_attempts": 1}),
    )
    run = glue.get_job_run(JobName="nightly_orders", RunId=final.group(2))["JobRun"]
    assert run["Arguments"] == {"--day": "2026-11-26"}


def test_airflows_glue_crawler_hook_creates_tags_and_waits_for_a_crawl(api, tmp_path):
    url, home = api
    data = tmp_path / "orders"
    data.mkdir()
    (data / "a.json").write_text('{"id": 1, "amount": 2.5}\n')
    done = airflow(CRAWLER_DRIVER.format(data=str(data)), url, home, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "FINAL SUCCEEDED" in out, out[-4000:]
    glue = boto3.client(
        "glue",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key=local_token(home),
        config=Config(retries={"max_attempts": 1}),
    )
    tags = glue.get_tags(ResourceArn="arn:aws:glue:us-east-1:000000000000:crawler/orders_crawler")["Tags"]
    assert tags == {"team": "platform"}
    assert glue.get_table(DatabaseName="lake", Name="orders")["Table"]["StorageDescriptor"]["Columns"]
