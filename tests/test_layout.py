"""The import layers of docs/design/layout.md, held against the code: no module imports
from a layer above its own, deferred imports included."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "sparkmark"
# Upward imports made on purpose, each with its reason in docs/design/layout.md.
ALLOWED = {
    ("settings", "engine.masking"),  # secret values registered for masking; masking imports nothing of ours
    ("spark", "runtime.stopping"),  # a new session's SIGINT handed back to the run's stop handling
}


def layers() -> dict[str, int]:
    """Each top-level module or package of the doc's table, with its layer's rank."""
    doc = (ROOT / "docs" / "design" / "layout.md").read_text(encoding="utf-8")
    table = doc.split("| layer | packages | knows about |", 1)[1].split("\n\n", 1)[0]
    ranks: dict[str, int] = {}
    for rank, row in enumerate(r for r in table.splitlines()[2:] if r.startswith("|")):
        packages = row.split("|")[2]
        for name in re.findall(r"`([a-z_]+)(?:/|\.py)`", packages):
            ranks[name] = rank
    return ranks


def imports(path: Path, src: Path = SRC) -> list[tuple[str, int]]:
    """The sparkmark modules ``path`` imports (relative to the package), with their lines,
    leaving out those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for n in ast.walk(block)
    }
    here = list(path.relative_to(src).with_suffix("").parts)
    package = here[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = [*base, node.module] if node.module else base
                found += [(".".join([*module, a.name]), node.lineno) for a in node.names]
            elif node.module and node.module.split(".")[0] == "sparkmark":
                rest = node.module.removeprefix("sparkmark").lstrip(".")
                found += [(rest, node.lineno)] if rest else [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [
                (a.name.removeprefix("sparkmark."), node.lineno)
                for a in node.names
                if a.name.startswith("sparkmark.")
            ]
    return found


def test_every_module_is_in_a_layer_of_the_doc():
    ranks = layers()
    tops = {p.relative_to(SRC).parts[0].removesuffix(".py") for p in SRC.rglob("*.py")}
    assert tops - set(ranks) == set(), "add these to docs/design/layout.md's table"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_from_a_layer_above_its_own(path):
    ranks = layers()
    me = path.relative_to(SRC).parts[0].removesuffix(".py")
    upward = [
        f"{target} (line {line})"
        for target, line in imports(path)
        if target.split(".")[0] in ranks
        and ranks[target.split(".")[0]] > ranks[me]
        and not any(me == who and (target + ".").startswith(what + ".") for who, what in ALLOWED)
    ]
    assert upward == [], f"{path.relative_to(SRC)} imports from a layer above its own"


def test_a_deferred_upward_import_is_found_and_a_typing_one_is_not(tmp_path):
    planted = tmp_path / "engine" / "planted.py"
    planted.parent.mkdir()
    planted.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import store\n"
        "if TYPE_CHECKING:\n"
        "    from ..app import App\n"
        "def later():\n"
        "    from ..job import Job\n"
        "    import sparkmark.glue.context\n"
    )
    found = [target for target, _line in imports(planted, tmp_path)]
    assert found == ["engine.store", "job.Job", "glue.context"]
