"""The README's pictures of the console, taken from the demo's state (run `make demo`
first) in Debian's Chromium; each file is named for what it shows.

    .venv/bin/python scripts/console_screenshots.py   # writes docs/console-*.png

The visual editor's picture is taken on a temporary home, with one of the Studio
fixtures saved as a visual job (the demo has none).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

from sparkmark.app import App
from sparkmark.console.server import start
from sparkmark.settings import Settings
from sparkmark.studio.graph import parse_document
from sparkmark.studio.jobs import save_visual_job
from sparkmark.workflow.store import WorkflowStore

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
WIDTH, HEIGHT = 1400, 900


def demo_shots(browser) -> None:
    settings = Settings.from_env(
        {
            "SPARKMARK_HOME": str(ROOT / ".sparkmark"),
            "SPARKMARK_CONFIG": str(ROOT / "demo" / "sparkmark.toml"),
        }
    )
    running = start(settings, "127.0.0.1", 0, None, scheduler=False)
    try:
        store = running.service.state
        runs = WorkflowStore(store).workflow_runs(workflow="demo_nightly", limit=1)
        job_runs = store.list_runs("demo_orders", limit=1) if store.job_exists("demo_orders") else []
        if not runs or not job_runs:
            sys.exit("no run of demo_nightly or demo_orders in ./.sparkmark: run `make demo` first")
        shots = (
            ("console-jobs-list-search", "/?q=demo", None),
            ("console-job-details-run-job-charts", "/jobs/demo_transform", None),
            ("console-run-metrics-and-log", f"/runs/{job_runs[0].run_id}", None),
            ("console-timeline-of-runs", "/timeline", None),
            (
                "console-workflow-run-graph",
                f"/workflows/demo_nightly/runs/{runs[0].run_id}",
                "svg[data-layout]",
            ),
        )
        for name, path, ready in shots:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(running.signin_url + "&" + urlencode({"next": path}))
            if ready:
                page.wait_for_selector(ready)
            page.wait_for_timeout(300)  # the charts draw after the page loads
            page.screenshot(path=str(ROOT / "docs" / f"{name}.png"))
            page.close()
            print(f"docs/{name}.png")
    finally:
        running.stop()


def studio_shot(browser) -> None:
    with tempfile.TemporaryDirectory(prefix="sm-shots-") as tmp:
        settings = Settings.from_env(
            {"SPARKMARK_HOME": tmp, "SPARKMARK_CONFIG": str(Path(tmp) / "sparkmark.toml")}
        )
        case = json.loads((ROOT / "tests" / "fixtures" / "studio" / "clean_dedupe_fill.json").read_text())
        document = json.loads(json.dumps(case["job"]).replace("{root}", str(Path(tmp) / "data")))
        (graph,) = parse_document(document, default_name="orders_clean")
        save_visual_job(
            App(settings), "orders_clean", {n.id: {n.type: n.spec} for n in graph.nodes.values()}, create=True
        )
        running = start(settings, "127.0.0.1", 0, None, scheduler=False)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(running.signin_url + "&" + urlencode({"next": "/studio/jobs/orders_clean"}))
            page.wait_for_selector(".react-flow__node")
            page.locator(".react-flow__node").first.click()
            page.wait_for_selector(".properties")
            page.screenshot(path=str(ROOT / "docs" / "console-studio-editor-forms.png"))
            print("docs/console-studio-editor-forms.png")
        finally:
            running.stop()


def main() -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        try:
            demo_shots(browser)
            studio_shot(browser)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
