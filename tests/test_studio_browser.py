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

from .conftest import goto, watched_tab
from .test_console_browser import shot

CORPUS = Path(__file__).parent / "fixtures" / "studio"


@pytest.fixture
def console(sparkmark_home, monkeypatch, spark, tmp_path):
    # Started in the project's folder, as `sparkmark console` is: the path browser serves
    # the project (here the test's folder, where its data is) and sparkmark's home.
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env()
    running = start(settings, "127.0.0.1", 0, None, scheduler=True)
    yield running
    running.stop()


@pytest.fixture
def page(browser):
    with watched_tab(browser, 1500, 1000) as tab:
        yield tab


def new_visual_job(page, console, name: str) -> None:
    """Create a visual job from the Studio's list, and wait for its editor."""
    goto(page, console, "/studio")
    page.fill("#new-name", name)
    page.click("#new")
    page.wait_for_url(f"**/studio/jobs/{name}")
    page.wait_for_selector("#palette .palette-item")


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

    new_visual_job(page, console, "editor_three")

    page.click("#palette .palette-item[data-kind='S3JsonSource']")
    # A form for people: no raw null anywhere, empty boxes where nothing is set.
    assert "null" not in page.locator(".properties").inner_text()
    assert set(page.locator(".properties textarea").evaluate_all("ts => ts.map(t => t.value)")) <= {""}
    fill(page, "Name", "Orders")
    # Paths: a list, and a browser over the storage to pick one from.
    paths = page.locator(".properties [data-field='Paths']")
    paths.locator("button.add").click()
    paths.locator(".row input").fill(str(tmp_path) + "/")
    paths.locator("button.browse").click()
    page.locator(".path-browser .entry.dir", has_text="orders").click()
    page.wait_for_selector(".path-browser .browser-head:has-text('orders')")
    assert page.locator(".path-browser .entry.file", has_text="a.json").count() == 1
    page.click("#browse-choose")
    assert paths.locator(".row input").input_value() == str(data)
    page.click("#palette .palette-item[data-kind='ApplyMapping']")
    fill(page, "Name", "Change Schema")
    # The mapping: one group of fields per column, FromPath a list of its own.
    mapping = page.locator(".properties [data-field='Mapping']")
    for i, (to, source, from_type, to_type) in enumerate(
        [("id", "id", "long", "long"), ("quantity", "qty", "string", "int")]
    ):
        mapping.locator(":scope > button.add").click()
        item = mapping.locator(".struct-item").nth(i)
        item.locator("[data-field='ToKey'] input").fill(to)
        item.locator("[data-field='FromPath'] button.add").click()
        item.locator("[data-field='FromPath'] .row input").fill(source)
        item.locator("[data-field='FromType'] input").fill(from_type)
        item.locator("[data-field='ToType'] input").fill(to_type)
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
    script = editor_text(page, "#script")
    assert "ApplyMapping.apply(" in script and 'format="glueparquet"' in script
    assert '("qty", "string", "quantity", "int")' in script
    assert page.locator("#script .cm-content[contenteditable=false]").count() == 1  # read-only
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


def editor_text(page, selector: str) -> str:
    """The whole text of a CodeMirror editor (its view draws only the visible lines)."""
    return page.evaluate(f"document.querySelector({json.dumps(selector)}).editorView.state.doc.toString()")


def test_format_picker_schema_tab_and_code_editor(console, page, tmp_path):
    data = tmp_path / "people"
    data.mkdir()
    (data / "a.csv").write_text("id,name\n1,ada\n2,grace\n")
    new_visual_job(page, console, "editor_forms")

    # One S3 source with a data format to pick, as Glue Studio shows it.
    page.click("#palette .palette-item[data-kind='S3JsonSource']")
    paths = page.locator(".properties [data-field='Paths']")
    paths.locator("button.add").click()
    paths.locator(".row input").fill(str(data))
    page.select_option("#data-format", "S3CsvSource")
    node_of(page, "S3CsvSource").wait_for()
    assert node_of(page, "S3JsonSource").count() == 0
    assert paths.locator(".row input").input_value() == str(data)  # kept across the change
    assert page.locator(".properties [data-field='Name'] input").input_value() == "S3CsvSource"
    page.select_option(".properties [data-field='Separator'] select", "comma")
    page.select_option(".properties [data-field='QuoteChar'] select", "quote")
    page.locator(".properties [data-field='WithHeader'] input").check()
    source_id = page.locator(".properties").get_attribute("data-node")

    # SparkSQL's query in a code editor; its alias names the source.
    page.click("#palette .palette-item[data-kind='SparkSQL']")
    page.locator("[data-field='SqlQuery'] .cm-content").click()
    page.keyboard.type("select id, upper(name) as name from people")
    aliases = page.locator(".properties [data-field='SqlAliases']")
    aliases.locator(":scope > button.add").click()
    aliases.locator("[data-field='From'] input").fill(source_id)
    aliases.locator("[data-field='Alias'] input").fill("people")
    connect(page, "S3CsvSource", "SparkSQL")
    page.wait_for_selector("#problem-count[data-count='0']")

    # The output schema of the query, computed on a sample.
    page.click("#tab-schema")
    page.click("#schema-run")
    page.wait_for_selector("#schema-table", timeout=120_000)
    columns = page.locator("#schema-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.column)")
    assert columns == ["id", "name"]
    types = page.locator("#schema-table tbody td code").all_inner_texts()
    assert all(types) and len(types) == 2

    page.click("#tab-script")
    script = editor_text(page, "#script")
    assert "select id, upper(name) as name from people" in script
    assert 'format="csv"' in script
    shot(page, "studio-forms-schema")


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
