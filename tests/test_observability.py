"""Observability, end to end with real parts: Glue scripts run by `sparkmark run` (each
its own Spark, with its UI's REST API), one of them emitting a custom metric with
boto3's `put_metric_data` as AWS's guides show; the Glue API endpoint answering
CloudWatch's operations to boto3 and the AWS CLI; Debian's Prometheus server
scraping the console's `/metrics` with the shipped rules loaded; `promtool test rules`
on every shipped rule; an OpenTelemetry push decoded with OpenTelemetry's own
protobufs; and a failed run's insight in GetJobRun, `sparkmark runs show` and the
console."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import boto3
import pytest
import requests
import yaml

from sparkmark.access import resolve_token
from sparkmark.api.server import start_in_thread
from sparkmark.app.prometheus import JOB_FAMILIES
from sparkmark.console.server import start as start_console
from sparkmark.devservices.process import ServerProcess, free_port
from sparkmark.engine.store import StateStore
from sparkmark.monitoring import DASHBOARD, RULES
from sparkmark.runtime.glue_metrics import METRICS, prometheus_name
from sparkmark.settings import Settings

from .test_server_safety import raw

pytestmark = pytest.mark.slow
SPARKMARK = Path(sys.executable).with_name("sparkmark")
RULES_TEST = Path(__file__).parent / "prometheus" / "rules_test.yml"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
JOB = "orders_nightly"

# A Glue script as the guides write it: it counts what it read and reports the share it
# quarantined as a custom metric with boto3's CloudWatch client. Nothing in it knows sparkmark.
GLUE_SCRIPT = """\
import sys

import boto3
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "input"])
glue_context = GlueContext(SparkContext.getOrCreate())
job = Job(glue_context)
job.init(args["JOB_NAME"], args)
orders = glue_context.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": [args["input"]]},
    format="csv",
    format_options={"withHeader": True},
    transformation_ctx="orders",
)
total = orders.count()
bad = orders.toDF().filter("amount IS NULL OR amount = ''").count()  # Glue reads an empty field as ""
cloudwatch = boto3.client("cloudwatch")
cloudwatch.put_metric_data(
    Namespace="MyETL",
    MetricData=[
        {
            "MetricName": "QuarantineRate",
            "Dimensions": [{"Name": "JobName", "Value": args["JOB_NAME"]}],
            "Value": 100.0 * bad / total,
            "Unit": "Percent",
        }
    ],
)
job.commit()
"""
BROKEN_SCRIPT = """\
import sys

from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "input"])
glue_context = GlueContext(SparkContext.getOrCreate())
job = Job(glue_context)
job.init(args["JOB_NAME"], args)
frame = glue_context.create_dynamic_frame.from_options(
    "s3", {"paths": [args["input"]]}, format="csv", format_options={"withHeader": True}, transformation_ctx="in"
).toDF()
frame.select("amount_in_cents").show()
job.commit()
"""
BROKEN_LINE = 15  # frame.select("amount_in_cents")


class OtlpReceiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP metrics receiver: each request decoded with OpenTelemetry's protobufs."""

    received: ClassVar[list] = []

    def do_POST(self):
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        OtlpReceiver.received.append((dict(self.headers), request))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):  # quiet
        pass


def sparkmark(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SPARKMARK), *argv], env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    """Two runs by `sparkmark run` in one home: a Glue script that succeeds and puts a
    custom metric (its metrics also pushed over OTLP), and one that fails on a line of
    its own; then the Glue API endpoint and the console over that home."""
    root = tmp_path_factory.mktemp("observability")
    home, data = root / "home", root / "orders"
    data.mkdir()
    for n in range(3):
        (data / f"part{n}.csv").write_text(f"id,amount\n{n}1,10\n{n}2,{'' if n == 0 else 5}\n")
    (root / "job.py").write_text(GLUE_SCRIPT)
    (root / "broken.py").write_text(BROKEN_SCRIPT)
    project = root / "sparkmark.toml"
    project.write_text(
        textwrap.dedent(f"""
        [jobs.{JOB}]
        Script = "{root / "job.py"}"
        Timeout = 60
        DefaultArguments = {{ "--input" = "{data}", "--job-bookmark-option" = "job-bookmark-enable" }}
        """)
    )
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OtlpReceiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYSPARK_SUBMIT"))}
    env.update(SPARKMARK_HOME=str(home), SPARKMARK_CONFIG=str(project))
    good = sparkmark(
        {**env, "SPARKMARK_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}"},
        "run", str(root / "job.py"), "--JOB_NAME", JOB, "--input", str(data),
        "--job-bookmark-option", "job-bookmark-enable",
    )  # fmt: skip
    assert good.returncode == 0, good.stderr[-4000:]
    bad = sparkmark(env, "run", str(root / "broken.py"), "--JOB_NAME", "broken", "--input", str(data))
    assert bad.returncode != 0
    receiver.shutdown()
    settings = Settings.from_env({"SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(project)})
    api = start_in_thread(settings)
    console = start_console(settings, "127.0.0.1", 0, None, scheduler=False)
    store = StateStore.from_settings(settings)
    (run,) = store.list_runs(JOB)
    (failed,) = store.list_runs("broken")
    token = resolve_token(None, home)
    yield {
        "root": root, "home": home, "env": env, "api": api, "console": console, "token": token,
        "run": run, "failed": failed, "bad": bad, "otlp": list(OtlpReceiver.received),
    }  # fmt: skip
    console.stop()
    api.stop()


def cloudwatch(observed):
    return boto3.client(
        "cloudwatch",
        endpoint_url=observed["api"].url,
        region_name="us-east-1",
        aws_access_key_id="sparkmark",
        aws_secret_access_key=observed["token"],
    )


def scrape(url: str, token: str) -> str:
    answer = requests.get(url + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=")
    return answer.text


def sample(exposition: str, name: str, **labels: str) -> float:
    for line in exposition.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name}{labels} in the exposition")


# ------------------------------------------------------------------ the run's own metrics


def test_a_runs_glue_metrics_are_read_from_spark_and_kept_with_it(observed):
    glue = observed["run"].metrics["glue"]
    # Six rows in three files; Spark's input metrics count every pass over them (the
    # CSV's header inference and the two counts), so at least six.
    assert glue["glue.driver.aggregate.recordsRead"] >= 6
    assert glue["glue.driver.aggregate.bytesRead"] > 0
    assert glue["glue.driver.aggregate.numCompletedStages"] >= 2
    assert glue["glue.driver.aggregate.numCompletedTasks"] >= glue["glue.driver.aggregate.numCompletedStages"]
    assert glue["glue.driver.aggregate.numFailedTasks"] == 0
    assert glue["glue.driver.aggregate.elapsedTime"] > 0
    assert 0 < glue["glue.driver.jvm.heap.usage"] <= 1
    assert (
        glue["glue.driver.ExecutorAllocationManager.executors.numberAllExecutors"] == 1
    )  # local: the driver
    assert glue["sparkmark.bookmark.filesListed"] == glue["sparkmark.bookmark.filesRead"] == 3
    assert glue["sparkmark.bookmark.filesDeferred"] == 0


# ------------------------------------------------------------------ CloudWatch for scripts


def test_a_scripts_put_metric_data_is_served_by_get_metric_data(observed):
    client = cloudwatch(observed)
    now = datetime.now(UTC)
    answer = client.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "rate",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "MyETL",
                        "MetricName": "QuarantineRate",
                        "Dimensions": [{"Name": "JobName", "Value": JOB}],
                    },
                    "Period": 60,
                    "Stat": "Average",
                },
            },
            {  # a series nobody put: empty, not an error
                "Id": "other",
                "MetricStat": {
                    "Metric": {"Namespace": "MyETL", "MetricName": "QuarantineRate"},
                    "Period": 60,
                    "Stat": "Average",
                },
            },
        ],
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(minutes=1),
    )
    results = {r["Id"]: r for r in answer["MetricDataResults"]}
    assert results["rate"]["Values"] == [pytest.approx(100.0 / 6)]  # one empty amount in six rows
    assert results["rate"]["StatusCode"] == "Complete"
    assert results["other"]["Values"] == [] and results["other"]["Timestamps"] == []


def test_glues_own_metrics_are_served_under_glues_namespace_and_dimensions(observed):
    client = cloudwatch(observed)
    run, now = observed["run"], datetime.now(UTC)
    recorded = run.metrics["glue"]["glue.driver.aggregate.recordsRead"]
    for run_id in (run.run_id, "ALL"):
        stats = client.get_metric_statistics(
            Namespace="Glue",
            MetricName="glue.driver.aggregate.recordsRead",
            Dimensions=[
                {"Name": "JobName", "Value": JOB},
                {"Name": "JobRunId", "Value": run_id},
                {"Name": "Type", "Value": "count"},
            ],
            StartTime=now - timedelta(hours=1),
            EndTime=now + timedelta(minutes=1),
            Period=3600,
            Statistics=["Sum", "SampleCount"],
        )
        # Counts are sent as their increase per report: they sum to the run's total.
        assert sum(d["Sum"] for d in stats["Datapoints"]) == recorded
        assert all(d["Unit"] == "Count" for d in stats["Datapoints"])
    metrics = client.list_metrics(Namespace="Glue", Dimensions=[{"Name": "JobName", "Value": JOB}])["Metrics"]
    assert "glue.driver.aggregate.recordsRead" in {m["MetricName"] for m in metrics}
    assert client.list_metrics(Namespace="Glue", MetricName="glue.driver.nothing")["Metrics"] == []


def test_cloudwatch_refuses_what_it_refuses(observed):
    client = cloudwatch(observed)
    now = datetime.now(UTC)
    with pytest.raises(client.exceptions.InvalidParameterValueException, match="StartTime"):
        client.get_metric_statistics(
            Namespace="Glue", MetricName="x", StartTime=now, EndTime=now - timedelta(hours=1),
            Period=60, Statistics=["Sum"],
        )  # fmt: skip
    with pytest.raises(client.exceptions.InvalidParameterValueException, match="AWS/"):
        client.put_metric_data(Namespace="AWS/Glue", MetricData=[{"MetricName": "m", "Value": 1}])
    with pytest.raises(client.exceptions.InvalidParameterCombinationException):
        client.put_metric_data(Namespace="N", MetricData=[{"MetricName": "m", "Value": 1, "Values": [1.0]}])
    with pytest.raises(client.exceptions.InvalidParameterValueException, match="percentiles"):
        client.get_metric_statistics(
            Namespace="N", MetricName="m", StartTime=now - timedelta(hours=1), EndTime=now, Period=60,
            ExtendedStatistics=["p99"],
        )  # fmt: skip


def test_the_aws_cli_lists_the_metrics(observed):
    env = {k: v for k, v in observed["env"].items() if not k.startswith("SPARKMARK_")}
    env.update(
        AWS_ACCESS_KEY_ID="sparkmark", AWS_SECRET_ACCESS_KEY=observed["token"], AWS_DEFAULT_REGION="us-east-1"
    )
    done = subprocess.run(
        [str(Path(sys.executable).with_name("aws")), "cloudwatch", "list-metrics", "--namespace", "MyETL",
         "--endpoint-url", observed["api"].url, "--output", "json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (metric,) = json.loads(done.stdout)["Metrics"]
    assert metric == {
        "Namespace": "MyETL",
        "MetricName": "QuarantineRate",
        "Dimensions": [{"Name": "JobName", "Value": JOB}],
    }


# ------------------------------------------------------------------ /metrics


@pytest.mark.parametrize("door", ["api", "console"])
def test_metrics_need_the_token_and_a_host_of_ours(observed, door):
    url, token = observed[door].url, observed[door].token if door == "console" else observed["token"]
    assert requests.get(url + "/metrics", timeout=30).status_code == 401
    assert (
        requests.get(url + "/metrics", headers={"Authorization": "Bearer wrong"}, timeout=30).status_code
        == 401
    )
    status, _headers, _body = raw(
        url, "GET", "/metrics", headers={"Host": "rebound.example:80", "Authorization": f"Bearer {token}"}
    )
    assert status == 403
    exposition = scrape(url, token)
    assert token not in exposition


def test_metrics_carry_glue_names_custom_metrics_and_job_figures(observed):
    exposition = scrape(observed["console"].url, observed["console"].token)
    run = observed["run"]
    glue = run.metrics["glue"]
    labels = {"job_name": JOB, "job_run_id": run.run_id, "type": "count"}
    assert (
        sample(exposition, "glue_driver_aggregate_records_read", **labels)
        == glue["glue.driver.aggregate.recordsRead"]
    )
    assert sample(exposition, "glue_driver_aggregate_elapsed_time_seconds", job_name=JOB) == pytest.approx(
        glue["glue.driver.aggregate.elapsedTime"] / 1000
    )
    assert sample(exposition, "glue_succeed_all", job_name=JOB) == 1
    assert sample(exposition, "sparkmark_bookmark_version", job_name=JOB) == run.committed_version
    assert sample(exposition, "my_etl_quarantine_rate", job_name=JOB) == pytest.approx(100.0 / 6)
    assert sample(exposition, "sparkmark_job_runs", job_name=JOB, state="SUCCEEDED") == 1
    assert sample(exposition, "sparkmark_job_timeout_seconds", job_name=JOB) == 3600
    assert sample(exposition, "sparkmark_job_empty_runs_in_a_row", job_name=JOB) == 0
    assert sample(exposition, "glue_error_query_error", job_name="broken") == 1
    assert (
        sample(exposition, "sparkmark_job_last_run_end_timestamp_seconds", job_name="broken", state="FAILED")
        > 0
    )


# ------------------------------------------------------------------ a real Prometheus


@pytest.fixture(scope="module")
def prometheus(observed):
    console, work = observed["console"], observed["root"] / "prometheus"
    work.mkdir()
    token_file = work / "token"
    token_file.write_text(console.token)
    token_file.chmod(0o600)
    config = work / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {
                        "job_name": "sparkmark",
                        "metrics_path": "/metrics",
                        "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
                        "static_configs": [{"targets": [console.url.removeprefix("http://")]}],
                    }
                ],
            }
        )
    )
    port = free_port()
    server = ServerProcess(
        "Prometheus",
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        work / "prometheus.log",
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return requests.get(url + "/-/ready", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    server.wait_until(ready, 60, "ready")
    yield url
    server.stop()


def query(url: str, promql: str) -> list:
    answer = requests.get(url + "/api/v1/query", params={"query": promql}, timeout=30).json()
    assert answer["status"] == "success", (promql, answer)
    return answer["data"]["result"]


def test_a_real_prometheus_scrapes_the_console_and_answers_promql(observed, prometheus):
    run = observed["run"]
    promql = f'glue_driver_aggregate_records_read{{job_name="{JOB}"}}'
    deadline = time.monotonic() + 60
    found = []
    while not found and time.monotonic() < deadline:  # the first scrapes come a second apart
        found = query(prometheus, promql)
        if not found:
            time.sleep(0.5)
    assert found, "Prometheus never had the series: see its targets page"
    (series,) = found
    assert series["metric"]["job_run_id"] == run.run_id
    assert series["metric"]["job"] == "sparkmark"  # Prometheus's own label: the scrape job
    assert float(series["value"][1]) == run.metrics["glue"]["glue.driver.aggregate.recordsRead"]
    targets = requests.get(prometheus + "/api/v1/targets", timeout=30).json()["data"]["activeTargets"]
    assert [t["health"] for t in targets] == ["up"]


def test_the_shipped_rules_load_in_prometheus_and_the_dashboards_queries_run(prometheus):
    groups = requests.get(prometheus + "/api/v1/rules", timeout=30).json()["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == sum(len(g["rules"]) for g in yaml.safe_load(RULES.read_text())["groups"])
    assert {r["health"] for r in rules} <= {"ok", "unknown"}  # unknown: not evaluated yet
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs
    for expr in exprs:
        query(prometheus, expr.replace("$job", ".*"))
    # Every series the dashboard draws and the rules read is one sparkmark serves
    # (Prometheus's metadata has those this console serves now).
    served = {prometheus_name(m.name) for m in METRICS if "<" not in m.name} | set(JOB_FAMILIES)
    scraped = set(requests.get(prometheus + "/api/v1/metadata", timeout=30).json()["data"])
    ours = {n for n in scraped if n.startswith(("glue_", "sparkmark_")) and not n.startswith("glue_error_")}
    assert ours and ours <= served, sorted(ours - served)
    named = r"\b((?:glue|sparkmark)_[a-z0-9_]+)\b"
    drawn = {n for e in exprs for n in re.findall(named, e)}
    assert drawn <= served, sorted(drawn - served)
    ruled = set(re.findall(named, RULES.read_text()))
    assert ruled <= served, sorted(ruled - served)


def test_promtool_passes_for_every_shipped_rule():
    checked = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([PROMTOOL, "test", "rules", str(RULES_TEST)], capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    alerts = {
        r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r
    }
    cases = yaml.safe_load(RULES_TEST.read_text())["tests"]
    covered = {c["alertname"] for t in cases for c in t.get("alert_rule_test", []) if c.get("exp_alerts")}
    assert alerts == covered  # every alert has a case where it fires


# ------------------------------------------------------------------ OTLP


def test_each_runs_metrics_are_pushed_to_an_otlp_collector(observed):
    assert observed["otlp"], "the collector received nothing"
    headers, last = observed["otlp"][-1]
    assert {k.lower(): v for k, v in headers.items()}["content-type"] == "application/x-protobuf"
    (resource,) = last.resource_metrics
    assert {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"] == "sparkmark"
    points = {
        m.name: m.gauge.data_points[0]
        for scope in resource.scope_metrics
        for m in scope.metrics
        if m.gauge.data_points
    }
    run = observed["run"]
    # OpenTelemetry's instrument names are case-insensitive: its SDK sends them in lower case.
    records = points["glue.driver.aggregate.recordsread"]
    attributes = {a.key: a.value.string_value for a in records.attributes}
    assert attributes == {"JobName": JOB, "JobRunId": run.run_id, "Type": "count"}
    assert records.as_double == run.metrics["glue"]["glue.driver.aggregate.recordsRead"]
    assert points["glue.succeed.all"].as_double == 1


# ------------------------------------------------------------------ job run insights


def test_a_failed_run_says_which_line_failed_why_and_what_to_do(observed):
    failed = observed["failed"]
    assert failed.state.value == "FAILED"
    insight = failed.metrics["insight"]
    assert insight["line"] == BROKEN_LINE and insight["script"].endswith("broken.py")
    assert insight["category"] == "QUERY_ERROR"
    assert insight["error_class"] == "AnalysisException"
    glue = boto3.client(
        "glue", endpoint_url=observed["api"].url, region_name="us-east-1",
        aws_access_key_id="sparkmark", aws_secret_access_key=observed["token"],
    )  # fmt: skip
    message = glue.get_job_run(JobName="broken", RunId=failed.run_id)["JobRun"]["ErrorMessage"]
    assert f"line {BROKEN_LINE} of broken.py" in message and "QUERY_ERROR" in message
    assert "amount_in_cents" in message and "probable cause" in message and "advice" in message
    shown = sparkmark(observed["env"], "runs", "show", failed.run_id)
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"Failed at\s+│\s+line {BROKEN_LINE} of broken.py", shown.stdout), shown.stdout
    assert re.search(r"Error category\s+│\s+QUERY_ERROR \(AnalysisException\)", shown.stdout), shown.stdout
    assert f"line {BROKEN_LINE} of broken.py" in " ".join(observed["bad"].stderr.split())


def test_the_console_shows_the_insight_the_glue_metrics_and_the_custom_metric(observed):
    console = observed["console"]
    headers = {"Authorization": f"Bearer {console.token}"}
    page = requests.get(
        f"{console.url}/runs/{quote(observed['failed'].run_id)}", headers=headers, timeout=30
    ).text
    insight = page.split('id="run-insight"', 1)[1].split("</table>", 1)[0]
    assert f"line {BROKEN_LINE} of" in insight and "QUERY_ERROR" in insight and "AnalysisException" in insight
    page = requests.get(
        f"{console.url}/runs/{quote(observed['run'].run_id)}", headers=headers, timeout=30
    ).text
    table = page.split('id="glue-metrics"', 1)[1].split("</table>", 1)[0]
    assert 'data-metric="glue.driver.aggregate.recordsRead"' in table
    assert 'data-metric="sparkmark.bookmark.filesRead"' in table
    page = requests.get(f"{console.url}/metric-data", headers=headers, timeout=30).text
    listed = page.split('id="metric-data"', 1)[1].split("</table>", 1)[0]
    assert 'data-metric="MyETL/QuarantineRate"' in listed and f"JobName={JOB}" in listed
    page = requests.get(f"{console.url}/metric-data?q=nothing-like-it", headers=headers, timeout=30).text
    assert 'id="no-match"' in page


# ------------------------------------------------------------------ the sample after the commit


def test_a_commit_does_not_wait_for_the_runs_last_metrics_sample(spark, tmp_path, sqlite_store):
    """The run's last Glue-metrics sample asks Spark's UI for its status; the commit
    lands without waiting for that answer, and the sample is kept with the run's record
    once it arrives."""
    release = threading.Event()

    class HeldUI(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            release.wait(60)  # Spark's UI, slow to answer: held until the test lets it go
            body = b"[]"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    ui = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HeldUI)
    threading.Thread(target=ui.serve_forever, daemon=True).start()
    try:
        from sparkmark import Job
        from sparkmark.runtime.run import settle_metrics

        (tmp_path / "in").mkdir()
        (tmp_path / "in" / "a.json").write_text('{"id": 1}\n{"id": 2}\n')
        settings = Settings.from_env(
            {
                "SPARKMARK_HOME": str(tmp_path / "home"),
                "SPARKMARK_SPARK_UI_URL": f"http://127.0.0.1:{ui.server_address[1]}",
                "SPARKMARK_METRICS_INTERVAL": "0",
            }
        )
        job = Job.from_args(
            ["t", "--JOB_NAME", "held_ui", "--job-bookmark-option", "job-bookmark-enable"],
            spark=spark,
            store=sqlite_store,
            settings=settings,
        )
        job.read_files(str(tmp_path / "in"), format="json", ctx="src").write.mode("overwrite").parquet(
            str(tmp_path / "out")
        )
        record = job.commit()
        assert not release.is_set()
        committed = sqlite_store.get_run(record.run_id)
        assert committed.state.value == "SUCCEEDED" and committed.committed_version == 1
        assert "glue" not in committed.metrics  # the sample is still waiting on the UI
        release.set()
        settle_metrics()
        glue = sqlite_store.get_run(record.run_id).metrics["glue"]
        assert glue["sparkmark.bookmark.filesRead"] == 1
        assert glue["glue.driver.aggregate.elapsedTime"] > 0
        assert sqlite_store.get_run(record.run_id).state.value == "SUCCEEDED"
    finally:
        release.set()
        ui.shutdown()
