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

CORPUS = Path(__file__).parent / "fixtures" / "studio"
CASES = sorted(p.stem for p in CORPUS.glob("*.json"))


def test_every_fixture_has_its_expected_script_and_no_script_is_orphaned():
    scripts = sorted(p.stem for p in CORPUS.glob("*.py"))
    assert CASES and scripts == CASES


@pytest.mark.parametrize("case", CASES)
def test_the_generator_writes_the_expected_script(case):
    job = json.loads((CORPUS / f"{case}.json").read_text(encoding="utf-8"))["job"]
    expected = (CORPUS / f"{case}.py").read_text(encoding="utf-8")
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
