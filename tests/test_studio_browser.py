"""The visual job editor in Debian's Chromium, driven by Playwright: build a three-node
job (S3/JSON source → ApplyMapping → Parquet target) from the palette, connect it, fill
its forms, save, preview a node, run it and see SUCCEEDED on the graph; import a job's
JSON and check the layout draws every node without overlaps; problems show on nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparkmark.console.server import start
from sparkmark.settings import Settings
from sparkmark.studio.jobs import load_visual_job

from .conftest import goto
from .test_console_browser import shot

CORPUS = Path(__file__).parent / "fixtures" / "studio"


@pytest.fixture
def console(sparkmark_home, monkeypatch, spark):
    settings = Settings.from_env()
    running = start(settings, "127.0.0.1", 0, None, scheduler=True)
    yield running
    running.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    context.close()
    assert errors == [], errors  # no script error on any page


def node_of(page, kind: str):
    return page.locator(f".react-flow__node:has(.glue-node[data-kind='{kind}'])")


def fill(page, field: str, value: str) -> None:
    box = page.locator(
        f".properties [data-field='{field}'] input, .properties [data-field='{field}'] textarea"
    )
    box.fill(value)


def connect(page, source_kind: str, target_kind: str) -> None:
    start_handle = node_of(page, source_kind).locator(".react-flow__handle.source")
    end_handle = node_of(page, target_kind).locator(".react-flow__handle.target")
    a, b = start_handle.bounding_box(), end_handle.bounding_box()
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=12)
    page.mouse.up()


def test_build_save_preview_and_run_a_three_node_job(console, page, tmp_path):
    data, out = tmp_path / "orders", tmp_path / "out"
    data.mkdir()
    (data / "a.json").write_text('{"id": 1, "qty": "3", "note": "x"}\n{"id": 2, "qty": "5", "note": "y"}\n')

    goto(page, console, "/studio")
    page.fill("#new-name", "editor_three")
    page.click("#new")
    page.wait_for_url("**/studio/jobs/editor_three")
    page.wait_for_selector("#palette .palette-item")

    page.click("#palette .palette-item[data-kind='S3JsonSource']")
    fill(page, "Name", "Orders")
    fill(page, "Paths", json.dumps([str(data)]))
    page.click("#palette .palette-item[data-kind='ApplyMapping']")
    fill(page, "Name", "Change Schema")
    fill(
        page,
        "Mapping",
        json.dumps(
            [
                {"ToKey": "id", "FromPath": ["id"], "FromType": "long", "ToType": "long"},
                {"ToKey": "quantity", "FromPath": ["qty"], "FromType": "string", "ToType": "int"},
            ]
        ),
    )
    page.click("#palette .palette-item[data-kind='S3GlueParquetTarget']")
    fill(page, "Name", "Parquet out")
    fill(page, "Path", str(out))
    # Not connected yet: the mapping and the target have no input, and say so on their nodes.
    page.wait_for_function("document.querySelector('#problem-count').dataset.count !== '0'")
    assert "Inputs" in node_of(page, "ApplyMapping").inner_text()

    connect(page, "S3JsonSource", "ApplyMapping")
    connect(page, "ApplyMapping", "S3GlueParquetTarget")
    page.wait_for_selector("#problem-count[data-count='0']")
    assert page.locator(".react-flow__edge").count() == 2
    page.click("#tab-script")
    script = page.locator("#script").inner_text()
    assert "ApplyMapping.apply(" in script and 'format="glueparquet"' in script
    shot(page, "studio-editor")

    page.click("#save")
    page.wait_for_selector("#status:text('saved')")
    saved = load_visual_job(console_service(console), "editor_three")
    assert sorted(n.type for n in saved.nodes.values()) == [
        "ApplyMapping",
        "S3GlueParquetTarget",
        "S3JsonSource",
    ]

    node_of(page, "ApplyMapping").click()
    page.click("#tab-preview")
    page.click("#preview-run")
    page.wait_for_selector("#preview-table", timeout=120_000)
    headers = page.locator("#preview-table th").all_inner_texts()
    assert [h.split("\n")[0] for h in headers] == ["id", "quantity"]
    assert page.locator("#preview-table tbody tr").count() == 2
    assert not out.exists()  # a preview writes nothing

    page.click("#run")
    page.wait_for_selector("#run-state[data-state='SUCCEEDED']", timeout=240_000)
    states = {n.get_attribute("data-run-state") for n in page.locator(".glue-node").all()}
    assert states == {"SUCCEEDED"}
    shot(page, "studio-run")
    assert sorted(r["id"] for r in pq.read_table(out).to_pylist()) == [1, 2]


def console_service(running):
    return running.service


def test_import_a_job_and_every_node_is_laid_out(console, page, tmp_path):
    case = json.loads((CORPUS / "clean_dedupe_fill.json").read_text(encoding="utf-8"))
    document = json.dumps(case["job"]).replace("{root}", str(tmp_path))
    goto(page, console, "/studio")
    page.fill("#import-document", document)
    page.click("#import")
    page.wait_for_url("**/studio/jobs/clean_dedupe_fill")
    page.wait_for_selector(".react-flow__node")
    nodes = page.locator(".react-flow__node")
    assert nodes.count() == 5
    boxes = [n.bounding_box() for n in nodes.all()]
    assert all(b and b["width"] > 100 for b in boxes)
    for i, a in enumerate(boxes):  # dagre's layout: no two nodes overlap
        for b in boxes[i + 1 :]:
            apart = a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            apart = apart or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
            assert apart
    assert page.locator(".react-flow__edge").count() == 4
    shot(page, "studio-import")


def test_import_of_a_broken_job_lists_its_problems(console, page):
    goto(page, console, "/studio")
    page.fill("#import-name", "broken_import")
    page.fill(
        "#import-document",
        json.dumps({"n1": {"ApplyMapping": {"Name": "M", "Inputs": ["gone"], "Mapping": []}}}),
    )
    page.click("#import")
    problems = page.locator("#problems li").all_inner_texts()
    assert problems == [
        "job 'broken_import': node n1 (ApplyMapping 'M'): its input 'gone' is not a node of this job"
    ]
    assert page.locator("tr[data-job='broken_import']").count() == 0  # nothing was stored
