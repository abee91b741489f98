"""The package's stages and the direction of imports between them.

Each subpackage of ``memoryclaw`` is one stage of a memory's life.  The import graph is built
from the sources (``ast``), so an import inside a function counts as much as one at the top;
an import under ``if TYPE_CHECKING:`` does not (it never runs).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memoryclaw"

# A stage imports only the stages before it.  ``errors`` is the ground floor; ``api`` (the
# one facade, Vault) sits above every stage it delegates to and below the layers agents talk
# to.  The package's own __init__ / __main__ may import anything.
STAGE_ORDER = (
    "errors",
    "vault",
    "index",
    "recall",
    "share",
    "consolidate",
    "importers",
    "api",
    "serve",
    "cli",
)
FACADES = {"__init__", "__main__"}

# Imports that run against the stage order today.  The list may only shrink: a new upward
# import fails the test below, and an entry that is no longer upward fails the one after it.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# Circles of imports today.  Like the list above, it may only shrink.
KNOWN_CIRCLES: list[set[str]] = []

# A module a reader takes in one sitting; past this, split it by concern.
LONGEST_MODULE = 550


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name below ``memoryclaw``."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _stage(module: str) -> str:
    return module.split(".")[0]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The dotted name (below memoryclaw) that a relative import in ``importer`` names."""
    base = importer.split(".") if importer not in FACADES else []
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *(module.split(".") if module else [])])


def _imported(tree: ast.AST, importer: str, is_package: bool, modules: set[str]) -> Iterator[str]:
    """The package's modules that ``tree`` imports at run time."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                yield from _imported(child, importer, is_package, modules)
            continue
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve(importer, is_package, node.level, node.module)
            elif node.module and node.module.split(".")[0] == "memoryclaw":
                base = node.module.partition(".")[2]
            else:
                base = None
            if base is not None:
                for alias in node.names:
                    candidate = f"{base}.{alias.name}" if base else alias.name
                    targets.append(candidate if candidate in modules else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "memoryclaw":
                    targets.append(alias.name.partition(".")[2])
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target:
                yield target
        yield from _imported(node, importer, is_package, modules)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    names = set(modules)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        graph[name] = set(_imported(tree, name, is_package, names)) - {name}
    return graph


def _upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    rank = {stage: n for n, stage in enumerate(STAGE_ORDER)}
    return {
        (a, b)
        for a, targets in graph.items()
        if a not in FACADES and _stage(a) not in FACADES
        for b in targets
        if _stage(b) not in FACADES and rank[_stage(b)] > rank[_stage(a)]
    }


def test_every_module_belongs_to_a_stage() -> None:
    strays = sorted(m for m in _modules() if _stage(m) not in {*STAGE_ORDER, *FACADES})
    assert not strays, f"put these modules in a stage's folder: {strays}"


def test_no_new_import_runs_up_the_stages() -> None:
    new = sorted(_upward(_graph()) - KNOWN_UPWARD)
    assert not new, "upward imports: " + "; ".join(
        f"memoryclaw.{a} ({_stage(a)}) imports memoryclaw.{b} ({_stage(b)})" for a, b in new
    )


def test_the_list_of_upward_imports_only_shrinks() -> None:
    gone = sorted(KNOWN_UPWARD - _upward(_graph()))
    assert not gone, f"no longer upward, take them off KNOWN_UPWARD: {gone}"


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), set()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules that import each other, directly or through others."""
    graph = {m: targets - FACADES for m, targets in graph.items() if m not in FACADES}
    reach = {m: _reachable(graph, m) for m in graph}
    circles: list[set[str]] = []
    for module in sorted(graph):
        if module in reach[module] and not any(module in c for c in circles):
            circles.append({other for other in reach[module] if module in reach[other]})
    return circles


def test_no_new_import_circle() -> None:
    circles = _circles(_graph())
    assert sorted(map(sorted, circles)) == sorted(map(sorted, KNOWN_CIRCLES)), (
        f"import circles: {[sorted(c) for c in circles]}"
    )


def test_a_circle_is_found_through_a_third_module() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [{"a", "b", "c"}]


def test_no_module_is_past_the_size_a_reader_takes_in_one_sitting() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in _modules().items()}
    too_long = {m: n for m, n in sizes.items() if n > LONGEST_MODULE}
    assert not too_long, f"split by concern: {too_long}"


@pytest.mark.parametrize(
    ("importer", "source", "expected"),
    [
        pytest.param(
            "recall.payload", "from .retrieval import x", {"recall.retrieval"}, id="sibling"
        ),
        pytest.param("recall.payload", "from ..vault.dates import x", {"vault.dates"}, id="cousin"),
        pytest.param("api", "from .vault.notes import x", {"vault.notes"}, id="from-the-top"),
        pytest.param("api", "from .recall import metrics", {"recall.metrics"}, id="module-by-name"),
        pytest.param("api", "from memoryclaw.index.store import x", {"index.store"}, id="absolute"),
        pytest.param(
            "recall.payload",
            "def f():\n    from ..serve.hooks import x",
            {"serve.hooks"},
            id="lazy",
        ),
        pytest.param(
            "recall.payload",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..api import Vault",
            set(),
            id="type-checking-only",
        ),
        pytest.param("cli", "from ..serve import stdio", {"serve.stdio"}, id="from-a-package"),
    ],
)
def test_the_graph_sees_every_form_of_import(
    importer: str, source: str, expected: set[str]
) -> None:
    modules = {
        "api",
        "cli",
        "recall.payload",
        "recall.retrieval",
        "recall.metrics",
        "vault.dates",
        "vault.notes",
        "index.store",
        "serve.hooks",
        "serve.stdio",
    }
    is_package = importer == "cli"
    assert set(_imported(ast.parse(source), importer, is_package, modules)) == expected


def test_the_readme_names_every_module_of_each_stage() -> None:
    """The README's table of stages lists each stage's modules: a module added to a stage
    is added to the map a reader learns the package from."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    rows = {
        row.group(1): set(re.findall(r"`(\w+)`", row.group(2)))
        for row in re.finditer(r"^\| `(\w+)/` \|[^|]*\|(.*)\|$", readme, re.MULTILINE)
    }
    for stage in STAGE_ORDER:
        folder = PACKAGE / stage
        if not folder.is_dir():
            continue
        modules = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
        assert stage in rows, f"README.md has no row for {stage}/"
        assert modules - rows[stage] == set(), f"README.md's {stage}/ row misses them"
        assert rows[stage] - modules - {"Vault", "cli"} == set(), f"{stage}/ has no such modules"
