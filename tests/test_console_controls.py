"""The console's controls in Debian's Chromium, as a Glue user works with them: find a
job with search and filters kept in the URL, start it with Run job and arguments, retry
a failed run, read a job's script and charts, follow the log of a run started with
`sparkmark run` while it runs, see runs on the timeline, and a twelve-node workflow
laid out whole, its nodes links."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sparkmark.console.server import start
from sparkmark.engine.models import RunState
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

from .conftest import goto, watched_tab, write_json
from .test_console_browser import shot

STEPS = 6  # jobs in the wide workflow; with its 6 triggers, 12 nodes


def _project_toml(gate: Path) -> str:
    lines = [
        '[jobs.hello]\nScript = "hello.py"\nDefaultArguments = { "--greeting" = "hi" }',
        f'[jobs.flaky]\nScript = "flaky.py"\nDefaultArguments = {{ "--gate" = "{gate}" }}',
        '[triggers.hello_hourly]\nType = "SCHEDULED"\nSchedule = "cron(0 * * * ? *)"\n'
        'StartOnCreation = true\nActions = [{ JobName = "hello" }]',
        '[workflows.wide]\nDescription = "six steps, one after another"',
        '[triggers.wide_start]\nType = "ON_DEMAND"\nWorkflowName = "wide"\nActions = [{ JobName = "step1" }]',
    ]
    for i in range(1, STEPS + 1):
        lines.append(f'[jobs.step{i}]\nScript = "hello.py"')
    for i in range(2, STEPS + 1):
        lines.append(
            f'[triggers.after_{i - 1}]\nType = "CONDITIONAL"\nWorkflowName = "wide"\n'
            f'Predicate = {{ Conditions = [{{ LogicalOperator = "EQUALS", JobName = "step{i - 1}", '
            f'State = "SUCCEEDED" }}] }}\nActions = [{{ JobName = "step{i}" }}]'
        )
    return "\n\n".join(lines) + "\n"


HELLO = """
import sys
from awsglue.utils import getResolvedOptions
from sparkmark import Job
args = getResolvedOptions(sys.argv, ["greeting"])
job = Job.from_args()
print(f"greeting: {args['greeting']}", flush=True)
job.commit()
"""
FLAKY = """
import os, sys
from awsglue.utils import getResolvedOptions
from sparkmark import Job
args = getResolvedOptions(sys.argv, ["gate"])
job = Job.from_args()
if not os.path.exists(args["gate"]):
    raise RuntimeError(f"the gate file {args['gate']} is not there yet")
print("through the gate", flush=True)
job.commit()
"""
LIVE = """
import os, sys, time
from awsglue.utils import getResolvedOptions
from sparkmark import Job
args = getResolvedOptions(sys.argv, ["gate", "input"])
job = Job.from_args()
df = job.read_files(args["input"], format="json", ctx="src")
print(f"step 1: {df.count()} rows", flush=True)
deadline = time.monotonic() + 180
while not os.path.exists(args["gate"]) and time.monotonic() < deadline:
    time.sleep(0.1)
print("step 2: done", flush=True)
job.commit()
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("console-controls")
    home = root / "home"
    home.mkdir()
    (home / "sparkmark.toml").write_text(_project_toml(root / "gate"), encoding="utf-8")
    for name, text in (("hello.py", HELLO), ("flaky.py", FLAKY), ("live.py", LIVE)):
        (home / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _environment(project: Path) -> dict[str, str]:
    home = project / "home"
    return {"SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(home / "sparkmark.toml")}


@pytest.fixture(autouse=True)
def project_environment(project, monkeypatch):
    """Every test here works in the project's home (conftest gives each test its own):
    the runs the console's scheduler starts are processes that find the store there."""
    for key, value in _environment(project).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="module")
def console(project):
    running = start(Settings.from_env(_environment(project)), "127.0.0.1", 0, None, scheduler=True)
    yield running
    running.stop()


@pytest.fixture
def page(browser):
    with watched_tab(browser, 1400, 900) as tab:
        yield tab


def store_of(console) -> StateStore:
    return console.service.state


def test_run_job_with_arguments_then_retry_a_failed_run(console, project, page):
    goto(page, console, "/jobs/hello")
    details = page.locator("#job-details").inner_text()
    assert "hello.py" in details and "--greeting hi" in details and "2880 minutes" in details
    # The schedule that starts it, with its next start.
    assert page.locator('#triggers tr[data-trigger="hello_hourly"]').count() == 1
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:00:00 UTC", page.locator("#next-firing").inner_text())

    page.locator("#run-arguments").fill("--greeting from-the-console")
    page.locator("#run-job").click()
    page.wait_for_url(re.compile(r".*/runs/jr_[0-9a-f]{64}$"))
    page.wait_for_selector('#run-live[data-state="SUCCEEDED"]', timeout=180_000)
    assert "--greeting" in page.locator("#arguments").inner_text()
    assert "from-the-console" in page.locator("#arguments").inner_text()
    page.wait_for_selector("#log:has-text('greeting: from-the-console')", timeout=30_000)

    # A run that fails, then is retried from its page once its input is there.
    goto(page, console, "/jobs/flaky")
    page.locator("#run-job").click()
    page.wait_for_url(re.compile(r".*/runs/jr_[0-9a-f]{64}$"))
    page.wait_for_selector('#run-live[data-state="FAILED"]', timeout=180_000)
    failed = page.url.rsplit("/", 1)[1]
    assert "is not there yet" in page.locator("#run-error").inner_text()
    (project / "gate").write_text("open")
    page.locator(f'button.retry[data-run="{failed}"]').click()
    page.wait_for_url(re.compile(r".*/runs/jr_[0-9a-f]{64}$"))
    assert not page.url.endswith(failed)
    page.wait_for_selector('#run-live[data-state="SUCCEEDED"]', timeout=180_000)
    assert str(project / "gate") in page.locator("#arguments").inner_text()  # the failed run's own
    states = [r.state for r in store_of(console).list_runs("flaky")]
    assert states == [RunState.SUCCEEDED, RunState.FAILED]
    shot(page, "run-retried")

    # A run still going, or one that succeeded, is not retried.
    goto(page, console, "/jobs/flaky")
    assert page.locator("button.retry").count() == 1
    assert page.locator(f'button.retry[data-run="{failed}"]').count() == 1


def test_search_and_filters_are_kept_in_the_url(console, page):
    # After the runs of the test above (tests run in file order).
    goto(page, console, "/")
    names = lambda: page.locator("#jobs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.job)")  # noqa: E731
    assert {"hello", "flaky", "step1"} <= set(names())
    page.locator("#filters input[name=q]").fill("FLA")
    page.locator("#filters button[type=submit]").click()
    page.wait_for_url(re.compile(r".*\?q=FLA$"))
    assert names() == ["flaky"]
    # The filter survives a reload: it is in the URL.
    page.reload()
    assert names() == ["flaky"] and page.locator("#filters input[name=q]").input_value() == "FLA"

    goto(page, console, "/?state=NOT+RUN&type=glueetl")
    assert set(names()) == {f"step{i}" for i in range(1, STEPS + 1)}  # hello and flaky have run
    goto(page, console, "/?q=nothing-like-this")
    assert page.locator("#no-match").is_visible()

    # A job's runs narrowed by state, and the pager keeps the filter.
    goto(page, console, "/jobs/flaky")
    page.locator("#run-filters select[name=state]").select_option("FAILED")
    page.locator("#run-filters button[type=submit]").click()
    page.wait_for_url(re.compile(r".*/jobs/flaky\?state=FAILED$"))
    shown = page.locator("#runs tbody tr .state").all_inner_texts()
    assert shown == ["FAILED"]


def test_a_jobs_script_and_charts(console, page):
    goto(page, console, "/jobs/flaky")
    page.wait_for_function(
        "document.querySelector('canvas.run-chart[data-key=duration]')?.chart !== undefined"
    )
    durations = page.evaluate(
        "document.querySelector('canvas.run-chart[data-key=duration]').chart.data.datasets[0].data"
    )
    runs = store_of(console).list_runs("flaky")
    assert len(durations) == len(runs) and all(d > 0 for d in durations)
    states = page.evaluate("JSON.parse(document.querySelector('canvas.run-chart').dataset.states)")
    assert states == [r.state.value for r in reversed(runs)]  # oldest first
    shot(page, "job-details-charts")

    page.locator("#script-link").click()
    page.wait_for_url("**/jobs/flaky/script")
    code = page.locator("#script").inner_text()
    assert "getResolvedOptions" in code and "is not there yet" in code
    assert page.locator("#script .code span.kn").count() >= 2  # highlighted: import keywords


def test_follow_the_log_of_a_run_started_from_a_terminal(console, project, page):
    home = project / "home"
    data = project / "live-input"
    write_json(data / "a.json", [1, 2, 3])
    gate = project / "live-gate"
    env = {**os.environ, "SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(home / "sparkmark.toml")}
    cli = Path(sys.executable).with_name("sparkmark")
    args = ["--JOB_NAME", "cli_live", "--input", str(data), "--gate", str(gate)]
    process = subprocess.Popen(
        [str(cli), "run", str(home / "live.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        store = store_of(console)
        deadline = time.monotonic() + 180
        while not store.job_exists("cli_live") and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        (run,) = store.list_runs("cli_live")
        goto(page, console, f"/runs/{run.run_id}")
        page.wait_for_selector("#log:has-text('step 1: 3 rows')", timeout=180_000)
        assert page.locator("#run-live").get_attribute("data-state") == "RUNNING"
        page.evaluate("window.loadedOnce = true")
        gate.write_text("go")
        page.wait_for_selector("#log:has-text('step 2: done')", timeout=60_000)
        page.wait_for_selector('#run-live[data-state="SUCCEEDED"]', timeout=60_000)
        assert page.evaluate("window.loadedOnce") is True  # followed in place, not reloaded
        shot(page, "run-log-from-terminal")
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "step 2: done" in out
    # Quiet by default: Spark's start-up notices are in the run's log, not on the terminal.
    for noise in ("Using Spark's default log4j profile", "NativeCodeLoader", "WARN Utils"):
        assert noise not in err
    kept = (home / "logs" / "jobs" / "cli_live" / f"{run.run_id}.err").read_text()
    assert re.search(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN \w+: ", kept, re.M), kept[:2000]


def test_the_timeline_shows_each_run_and_links_to_it(console, page):
    store = store_of(console)
    goto(page, console, "/timeline")
    lanes = page.locator("#timeline g.lane").evaluate_all("gs => gs.map(g => g.dataset.name)")
    assert {"hello", "flaky"} <= set(lanes)
    runs, _ = store.find_runs()
    assert page.locator("#timeline a.bar").count() == len(runs)
    failed = page.locator('#timeline a.bar[data-state="FAILED"]')
    assert failed.count() == 1 and "FAILED" in failed.text_content()  # its state, readable without colour
    shot(page, "timeline")
    failed.click()
    page.wait_for_url(re.compile(r".*/runs/jr_[0-9a-f]{64}$"))
    assert page.locator("#run-live").get_attribute("data-state") == "FAILED"

    goto(page, console, "/timeline?state=FAILED&last=7d")
    kinds = page.locator("#timeline-runs tbody tr .state").all_inner_texts()
    assert kinds == ["FAILED"]
    goto(page, console, "/timeline?since=2020-01-01&until=2020-01-02")
    assert page.locator("#no-runs").is_visible()


def test_a_twelve_node_workflow_is_laid_out_whole_and_its_nodes_are_links(console, page):
    goto(page, console, "/workflows/wide")
    page.wait_for_selector("#definition-graph[data-layout]")
    nodes = page.locator("#definition-graph g.node")
    assert nodes.count() == 2 * STEPS
    box = page.locator("#definition-graph").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1400
    for node in nodes.all():
        b = node.bounding_box()
        assert b["x"] >= box["x"] - 1 and b["x"] + b["width"] <= box["x"] + box["width"] + 1
        assert b["y"] >= box["y"] - 1 and b["y"] + b["height"] <= box["y"] + box["height"] + 1
        assert b["width"] > 120  # readable: at least two thirds of its full size
    # Twelve steps in a row are too long for the screen: folded into bands.
    assert page.locator("#definition-graph").get_attribute("data-layout") == "LR-folded"
    shot(page, "workflow-twelve-nodes")

    before = page.locator("#definition-graph").get_attribute("viewBox")
    page.locator(".graph-box .zoom-in").click()
    zoomed = page.locator("#definition-graph").get_attribute("viewBox")
    assert float(zoomed.split()[2]) < float(before.split()[2])
    page.locator(".graph-box .zoom-fit").click()
    assert page.locator("#definition-graph").get_attribute("viewBox") == before

    page.locator('#definition-graph g.node[data-name="step3"] a').click()
    page.wait_for_url("**/jobs/step3")
    assert page.locator("h1").inner_text() == "Job step3"
