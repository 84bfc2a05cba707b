"""The console in a real browser: Debian's Chromium, headless, driven by Playwright.

Open the jobs page, go to a job and its bookmark, rewind it through the page and check
the state store; start a workflow run from its page and watch its graph turn green
without reloading. A screenshot of each main page is kept under build/test-artifacts/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkmark.console.server import start
from sparkmark.engine.models import VersionKind

from .conftest import goto
from .console_project import JOB, SECRET, build

ARTIFACTS = Path(__file__).resolve().parents[1] / "build" / "test-artifacts" / "console"


@pytest.fixture(scope="module")
def project(tmp_path_factory, spark):
    return build(tmp_path_factory.mktemp("console-browser"), spark)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    tab = context.new_page()
    yield tab
    context.close()


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000  # a rendered page, not a blank one
    return path


def test_rewind_a_bookmark_from_the_jobs_page(project, page):
    running = start(project.settings, "127.0.0.1", 0, None, scheduler=False)
    try:
        goto(page, running, "/")
        assert page.title() == "Jobs · sparkmark"
        row = page.locator(f'tr[data-job="{JOB}"]')
        assert row.locator(".state").inner_text() == "FAILED"
        shot(page, "jobs")

        row.locator("a", has_text=JOB).click()
        page.wait_for_url(f"**/jobs/{JOB}")
        assert page.locator("#runs tbody tr").count() == 3
        assert SECRET not in page.content()
        shot(page, "job")

        page.locator("#bookmark-link").click()
        page.wait_for_url(f"**/jobs/{JOB}/bookmark")
        assert page.locator("#current-version").inner_text() == "2"
        assert page.locator("#files tbody tr").count() == 3
        shot(page, "bookmark")

        first_run = project.run_ids[0]
        page.locator(f'a.rewind[data-run="{first_run}"]').click()
        page.wait_for_url(re.compile(r".*/bookmark/rewind\?run_id=jr_[0-9a-f]{64}$"))
        # The confirmation says what the next run will read again: c.json, one file.
        assert page.locator('#preview tr[data-ctx="orders_src"] td.after').inner_text() == "1"
        shot(page, "rewind-confirm")
        page.locator("#confirm").click()
        page.wait_for_url(f"**/jobs/{JOB}/bookmark")
        assert page.locator("#current-version").inner_text() == "3"

        latest = project.store.latest_version(JOB)
        assert (latest.version, latest.kind, latest.rewound_to) == (3, VersionKind.REWIND, 1)
        assert project.store.version_after_run(JOB, first_run).version == 1
    finally:
        running.stop()


def test_start_a_workflow_and_watch_its_graph(project, page, monkeypatch):
    # The jobs the console's scheduler starts are processes that find the store here.
    monkeypatch.setenv("SPARKMARK_HOME", str(project.home))
    monkeypatch.setenv("SPARKMARK_CONFIG", str(project.home / "sparkmark.toml"))
    running = start(project.settings, "127.0.0.1", 0, None, scheduler=True)
    try:
        goto(page, running, "/workflows")
        page.locator("a", has_text="nightly").first.click()
        page.wait_for_url("**/workflows/nightly")
        assert page.locator("#definition-graph g.node").count() == 4
        page.locator("textarea[name=properties]").fill("day=2026-11-26\nsource=console")
        page.locator("#start").click()
        page.wait_for_url(re.compile(r".*/workflows/nightly/runs/wr_[0-9a-f]{64}$"))
        page.evaluate("window.loadedOnce = true")  # gone if the page reloads
        graph = page.locator("#run-graph")
        assert graph.locator("g.node").count() == 4
        assert graph.locator("path.edge").count() == 3
        page.wait_for_selector('#workflow-live[data-status="COMPLETED"]', timeout=180_000)
        assert page.evaluate("window.loadedOnce") is True  # it updated in place
        states = {
            n.get_attribute("data-name"): n.get_attribute("data-state")
            for n in page.locator("#run-graph g.node").all()
        }
        assert states == {
            "nightly_start": "FIRED",
            "load": "SUCCEEDED",
            "after_load": "FIRED",
            "publish": "SUCCEEDED",
        }
        colours = {
            n.get_attribute("data-name"): n.locator("rect").get_attribute("fill")
            for n in page.locator("#run-graph g.node").all()
        }
        assert colours["load"] == colours["publish"] == "#2e7d32"
        props = page.locator("#properties").inner_text()
        assert "2026-11-26" in props and "console" in props
        shot(page, "workflow-run")
        run_id = page.url.rsplit("/", 1)[1]
        run = running_store_run(project, run_id)
        assert run.status.value == "COMPLETED" and run.properties["source"] == "console"
    finally:
        running.stop()


def running_store_run(project, run_id):
    from sparkmark.workflow.store import WorkflowStore

    return WorkflowStore(project.store).workflow_run(run_id)


def test_quality_and_catalog_pages_render(project, page):
    running = start(project.settings, "127.0.0.1", 0, None, scheduler=False)
    try:
        goto(page, running, f"/quality/{JOB}")
        page.wait_for_function("document.querySelector('canvas.score-chart').chart !== undefined")
        points = page.evaluate("document.querySelector('canvas.score-chart').chart.data.datasets[0].data")
        assert points == [0.5, 1.0]
        shot(page, "quality")
        goto(page, running, "/catalog/sales/orders?from=1&to=2")
        assert "qty" in page.locator("#diff").inner_text()
        shot(page, "catalog-table")
    finally:
        running.stop()


def test_stop_a_running_workflow_from_its_page(project, page, monkeypatch):
    monkeypatch.setenv("SPARKMARK_HOME", str(project.home))
    monkeypatch.setenv("SPARKMARK_CONFIG", str(project.home / "sparkmark.toml"))
    running = start(project.settings, "127.0.0.1", 0, None, scheduler=True)
    try:
        goto(page, running, "/workflows/long")
        page.locator("#start").click()
        page.wait_for_url(re.compile(r".*/workflows/long/runs/wr_[0-9a-f]{64}$"))
        page.wait_for_selector('#run-graph g.node[data-name="slow"][data-state="RUNNING"]', timeout=60_000)
        page.locator("#stop").click()
        page.wait_for_selector('#workflow-live[data-status="STOPPED"]', timeout=60_000)
        assert page.locator('#run-graph g.node[data-name="slow"]').get_attribute("data-state") == "STOPPED"
        run = running_store_run(project, page.url.rsplit("/", 1)[1])
        assert run.status.value == "STOPPED"
        assert [a.state.value for a in run.actions] == ["STOPPED"]
    finally:
        running.stop()


def test_a_statistics_anomaly_is_charted_and_excluded_and_api_rulesets_are_shown(project, page):
    """Three weeks of a daily job's row counts with a weekly season, then a drop: the
    chart draws the model's band and marks the drop; excluding it from the page takes it
    out of the history rules learn from. The API's rulesets, their evaluation runs and a
    recommendation run's proposal have pages of their own."""
    import math
    from datetime import UTC, datetime, timedelta

    from sparkmark.quality.store import QualityStore
    from sparkmark.quality_service.records import RECOMMENDATION, SUCCEEDED, QualityServiceStore

    store = QualityStore(project.store)
    week = [1000, 1040, 1080, 1020, 970, 620, 550]
    counts = [week[i % 7] for i in range(21)] + [400]  # the 22nd run, a Monday-like day, drops
    start_day = datetime(2026, 10, 1, 6, tzinfo=UTC)
    for i, n in enumerate(counts):
        store.save(
            "dq_series",
            None,
            {
                "ruleset": "volume",
                "evaluated_at": (start_day + timedelta(days=i)).isoformat(),
                "passed": True,
                "score": 1.0,
                "rules": [{"rule": "RowCount > 0", "outcome": "Passed"}],
                "metrics": {"Dataset.*.RowCount": n},
            },
        )
    service = QualityServiceStore(project.store)
    service.add_ruleset(
        "orders-checks",
        'Rules = [ IsComplete "id" ]',
        target_table={"DatabaseName": "sales", "TableName": "orders"},
    )
    service.add_run(
        "dqrun-rec1",
        RECOMMENDATION,
        {
            "DataSource": {"GlueTable": {"DatabaseName": "sales", "TableName": "orders"}},
            "CreatedRulesetName": "orders-checks",
        },
        "here",
        None,
    )
    service.set_run("dqrun-rec1", state=SUCCEEDED, outcome={"ruleset": 'Rules = [\n    IsComplete "id"\n]'})

    running = start(project.settings, "127.0.0.1", 0, None, scheduler=False)
    try:
        goto(page, running, "/quality/dq_series")
        selector = 'canvas.metric-chart[data-metric="Dataset.*.RowCount"]'
        page.wait_for_function(f"document.querySelector('{selector}').chart !== undefined")
        flagged = page.evaluate(f"JSON.parse(document.querySelector('{selector}').dataset.flagged)")
        # the first weekend (five weekdays of history, the short-history band) and the
        # drop; the later weekends are the season the model has learnt
        assert flagged == [5, 21]
        highs = page.evaluate(f"document.querySelector('{selector}').chart.data.datasets[1].data")
        assert highs[21] is not None and highs[21] > 400
        shot(page, "quality-statistics")
        page.locator(
            'section.statistic[data-metric="Dataset.*.RowCount"] button', has_text="Exclude from history"
        ).last.click()
        page.wait_for_selector('section.statistic button:has-text("Include again")')
        earlier = store.earlier_metrics("dq_series", "volume")
        assert math.isnan(earlier[21]["Dataset.*.RowCount"]) and earlier[20]["Dataset.*.RowCount"] == 550

        goto(page, running, "/rulesets")
        assert page.locator("#api-rulesets").inner_text().count("orders-checks") == 1
        page.locator("#recommendations a", has_text="dqrun-rec1").click()
        page.wait_for_url("**/recommendations/dqrun-rec1")
        assert 'IsComplete "id"' in page.locator("#proposal").inner_text()
        goto(page, running, "/rulesets/orders-checks")
        assert page.locator("#ruleset-text").inner_text() == 'Rules = [ IsComplete "id" ]'
        assert "Not evaluated yet" in page.content()
        goto(page, running, "/rulesets/nope")
        assert "no data quality ruleset 'nope'" in page.content()
    finally:
        running.stop()
