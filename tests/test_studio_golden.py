"""The code generator checked by its output, without Spark: each Studio fixture
(tests/fixtures/studio/NAME.json) has the script it must generate beside it (NAME.py),
``{root}`` and ``{suffix}`` left as the placeholders the Spark tests fill in. A change to
the generator shows here as a diff of those scripts; after a deliberate one,
``python scripts/studio_golden.py`` writes them anew."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from sparkmark.studio.codegen import generate
from sparkmark.studio.graph import parse_document

FIXTURES = Path(__file__).parent / "fixtures"
# studio: jobs the Spark tests run in the test session; studio_tables: jobs on Iceberg and
# Delta tables, which need a table format's jars (tests/test_studio_tables.py runs some).
CORPORA = (FIXTURES / "studio", FIXTURES / "studio_tables")
CASES = sorted(f"{c.name}/{p.stem}" for c in CORPORA for p in c.glob("*.json"))


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda c: c.name)
def test_every_fixture_has_its_expected_script_and_no_script_is_orphaned(corpus):
    fixtures = sorted(p.stem for p in corpus.glob("*.json"))
    assert fixtures and sorted(p.stem for p in corpus.glob("*.py")) == fixtures


@pytest.mark.parametrize("case", CASES)
def test_the_generator_writes_the_expected_script(case):
    job = json.loads((FIXTURES / f"{case}.json").read_text(encoding="utf-8"))["job"]
    expected = (FIXTURES / f"{case}.py").read_text(encoding="utf-8")
    script = generate(parse_document(job)[0])
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True), script.splitlines(keepends=True), f"{case}.py", "generated"
        )
    )
    assert script == expected, (
        f"the generator's script differs (scripts/studio_golden.py rewrites it):\n{diff}"
    )
    compile(script, f"{case}.py", "exec")


def _job(nodes: dict) -> dict:
    return {"Job": {"Name": "custom", "CodeGenConfigurationNodes": nodes}}


SOURCE = {"S3JsonSource": {"Name": "In", "Paths": ["s3://b/in/"]}}


def test_custom_code_is_the_transforms_body_as_studio_saves_it():
    """Glue Studio's custom transform: the node's Code is the body, and Studio writes
    ``def <ClassName>(glueContext, dfc) -> DynamicFrameCollection:`` over it."""
    body = "df = dfc.select(list(dfc.keys())[0]).toDF()\nreturn DynamicFrameCollection({'x': DynamicFrame.fromDF(df, glueContext, 'x')}, glueContext)\n"
    nodes = {
        "n1": SOURCE,
        "n2": {"CustomCode": {"Name": "C", "Inputs": ["n1"], "ClassName": "MyTransform", "Code": body}},
    }
    script = generate(parse_document(_job(nodes))[0])
    assert "def MyTransform(glueContext, dfc) -> DynamicFrameCollection:\n    df = dfc.select(" in script
    assert "MyTransform_node" not in script.split("def MyTransform")[0]  # the function comes before its call
    compile(script, "custom.py", "exec")


def test_custom_code_that_defines_its_function_is_taken_as_it_is():
    code = "def MyTransform(glueContext, dfc):\n    return dfc\n"
    nodes = {
        "n1": SOURCE,
        "n2": {"CustomCode": {"Name": "C", "Inputs": ["n1"], "ClassName": "MyTransform", "Code": code}},
    }
    script = generate(parse_document(_job(nodes))[0])
    assert script.count("def MyTransform(") == 1


@pytest.mark.parametrize(
    ("custom", "message"),
    [
        ({"ClassName": "MyTransform", "Code": "return (dfc"}, "its Code is not valid Python"),
        (
            {"ClassName": "my transform", "Code": "return dfc"},
            "ClassName 'my transform' is not a Python name",
        ),
    ],
)
def test_check_finds_every_problem_generate_would(tmp_path, custom, message):
    """`sparkmark studio check` says what `studio generate` would refuse, node by node."""
    from typer.testing import CliRunner

    from sparkmark.cli.app import app
    from sparkmark.errors import GraphError

    nodes = {
        "n1": SOURCE,
        "n2": {"CustomCode": {"Name": "C", "Inputs": ["n1"], **custom}},
        "n3": {"S3DirectTarget": {"Name": "Out", "Inputs": ["n2"], "Path": "s3://b/out/", "Format": "hudi"}},
    }
    with pytest.raises(GraphError) as refused:
        generate(parse_document(_job(nodes))[0])
    assert any(message in p for p in refused.value.problems)
    assert any("S3DirectTarget Format 'hudi'" in p for p in refused.value.problems)
    document = tmp_path / "job.json"
    document.write_text(json.dumps(_job(nodes)), encoding="utf-8")
    checked = CliRunner().invoke(app, ["studio", "check", str(document)])
    assert checked.exit_code == 1
    shown = [line for line in checked.output.splitlines() if line.startswith("error:")]
    assert shown == [f"error: {p}" for p in refused.value.problems]
