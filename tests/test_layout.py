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


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Each module's sparkmark imports, deferred ones included (typing-only ones not),
    resolved to modules: ``a.b.Name`` is module ``a.b`` when ``a/b.py`` is no package."""
    modules = {_module_name(p, src): p for p in src.rglob("*.py")}

    def resolve(target: str) -> str:
        while target and target not in modules:
            target = target.rsplit(".", 1)[0] if "." in target else ""
        return target

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        for target, _line in imports(path, src):
            found = resolve(target)
            if found and found != name and not name.startswith(found + "."):  # a package's own parts
                graph.setdefault(name, set()).add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_deferred_imports_included():
    assert cycles(import_graph()) == []


def test_a_planted_circle_through_a_deferred_import_is_found(tmp_path):
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "__init__.py").write_text("")
    (tmp_path / "sources" / "streams.py").write_text("def make():\n    from .kafka import Kafka\n")
    (tmp_path / "sources" / "kafka.py").write_text("from .streams import make\nclass Kafka: ...\n")
    (tmp_path / "sources" / "files.py").write_text("from .streams import make\n")
    assert cycles(import_graph(tmp_path)) == [["sources.kafka", "sources.streams"]]


MAX_CLASS_LINES = 400
MAX_MODULE_LINES = 700


def test_no_class_is_over_400_lines():
    """A class that large holds several concerns: split one out (the state store's
    concerns are mixins of one handle; a run's ledger is its own; the scheduler's
    supervision is its own module)."""
    large = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    large.append(f"{path.relative_to(SRC)}:{node.name} ({size} lines)")
    assert large == []


def test_no_module_is_over_700_lines():
    """A module that large is several rooms: each concept in a module of its own."""
    large = [
        f"{path.relative_to(SRC)} ({size} lines)"
        for path in SRC.rglob("*.py")
        if (size := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert large == []


def test_the_cli_reaches_the_store_only_through_its_app():
    """Every ``sparkmark`` command opens the state store through the one App of its call
    (``cli/context.py``), never by a store class of its own."""
    opening = re.compile(r"\b(StateStore|StoreHandle)\s*[.(]|\b\w+Store\(\s*StateStore")
    found = [
        f"cli/{path.name}:{number}"
        for path in sorted((SRC / "cli").glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if opening.search(line)
    ]
    assert found == []
    assert opening.search("state = StateStore.from_settings()")  # the check sees an opening
