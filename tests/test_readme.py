"""The README is the front door: one screen, the two commands as CI runs them, and
claims that are checked here; every page it and the docs link to exists, and the docs'
index lists every page."""

from __future__ import annotations

import re
from pathlib import Path

import sparkmark.api.server  # noqa: F401 - registers the operations
from sparkmark.api.protocol import service_model
from sparkmark.api.service import HANDLERS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_is_one_screen_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 70
    assert re.search(r"^make demo\s+#", text, re.M) and re.search(r"^make test\s+#", text, re.M)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().endswith("make test"), "CI runs the README's test command"


def test_the_readmes_count_of_served_operations_is_the_endpoints():
    operations = set(service_model().operation_names)
    served = len(operations & set(HANDLERS))
    text = README.read_text(encoding="utf-8")
    found = re.search(r"(\d+) of the (\d+) operations of Glue's API are served", text)
    assert found is not None
    assert (int(found.group(1)), int(found.group(2))) == (served, len(operations))


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#\s]+)", index))
    pages = {
        str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md") if p.name != "README.md"
    }
    assert pages - linked == set()
