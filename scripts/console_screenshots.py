"""The README's pictures of the console, taken from the demo's state (run `make demo`
first): a job's page and a workflow run's graph, in Debian's Chromium.

    .venv/bin/python scripts/console_screenshots.py   # writes docs/console-*.png
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

from sparkmark.console.server import start
from sparkmark.settings import Settings
from sparkmark.workflow.store import WorkflowStore

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def main() -> None:
    demo = {
        "SPARKMARK_HOME": str(ROOT / ".sparkmark"),
        "SPARKMARK_CONFIG": str(ROOT / "demo" / "sparkmark.toml"),
    }
    settings = Settings.from_env(demo)
    running = start(settings, "127.0.0.1", 0, None, scheduler=False)
    try:
        store = running.service.state
        runs = WorkflowStore(store).workflow_runs(workflow="demo_nightly", limit=1)
        if not runs:
            sys.exit("no run of demo_nightly in ./.sparkmark: run `make demo` first")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            for name, path, width in (
                ("console-job", "/jobs/demo_orders", 1280),
                ("console-workflow-run", f"/workflows/demo_nightly/runs/{runs[0].run_id}", 1500),
            ):
                page = browser.new_page(viewport={"width": width, "height": 760})
                page.goto(running.signin_url + "&" + urlencode({"next": path}))
                page.screenshot(path=str(ROOT / "docs" / f"{name}.png"))
                print(f"docs/{name}.png")
            browser.close()
    finally:
        running.stop()


if __name__ == "__main__":
    main()
