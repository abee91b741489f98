"""The package's stages and the direction of imports between them.

The import graph is built from the sources (``ast``), so an import inside a function counts as
much as one at the top; an import under ``if TYPE_CHECKING:`` does not (it never runs).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memoryclaw"

# Each stage imports only the stages before it; errors and config are the ground floor, and
# the package's own __init__ / __main__ (the facade and the entry point) may import anything.
STAGES: dict[str, tuple[str, ...]] = {
    "ground": ("errors", "config"),
    "vault": ("notes", "vault", "transcripts", "dates", "redact", "inputs", "tombstones"),
    "index": ("index", "sync", "embeddings", "vectors"),
    "recall": ("retrieval", "payload", "recency", "trivial", "scopes", "working", "metrics"),
    "share": ("history", "remote", "incoming", "teams", "transfer", "forget", "purge", "scrub"),
    "consolidate": (
        "consolidation",
        "summarize",
        "extraction",
        "skills",
        "llm",
        "supersede",
        "review",
        "archive",
    ),
    "importers": ("importing", "importers", "transcript_import", "openclaw_store", "ingest"),
    "api": ("api",),
    "serve": ("server", "mcp_server", "hooks", "openclaw", "daemon"),
    "cli": ("cli",),
}
FACADES = {"__init__", "__main__"}

# Imports that run against the stage order today.  The list may only shrink: a new upward
# import fails the test below, and an entry that no longer exists fails the one after it.
KNOWN_UPWARD = {
    ("config", "notes"),
    ("config", "vault"),
    ("notes", "scopes"),
    ("transcripts", "scopes"),
    ("transcripts", "scrub"),
    ("transcripts", "payload"),
    ("transcripts", "remote"),
    ("sync", "summarize"),
    ("working", "skills"),
    ("metrics", "archive"),
    ("remote", "review"),
    ("forget", "review"),
}

# Circles of imports today (all inside the share stage, through imports made at call time).
# Like the list above, it may only shrink.
KNOWN_CIRCLES = [{"history", "incoming", "purge", "remote"}]


def _stage_of() -> dict[str, int]:
    order = list(STAGES)
    return {module: order.index(stage) for stage, modules in STAGES.items() for module in modules}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(tree: ast.AST, modules: set[str]) -> Iterator[str]:
    """The package's modules that ``tree`` imports at run time."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (m for child in node.orelse for m in _imported(child, modules))
            continue
        if isinstance(node, ast.ImportFrom):
            names: list[str] = []
            if node.level == 1:
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            elif node.level == 0 and node.module and node.module.split(".")[0] == "memoryclaw":
                parts = node.module.split(".")
                names = parts[1:2] if len(parts) > 1 else [a.name for a in node.names]
            yield from (n for n in names if n in modules)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "memoryclaw" and len(parts) > 1 and parts[1] in modules:
                    yield parts[1]
        yield from _imported(node, modules)


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {
        p.stem: set(_imported(ast.parse(p.read_text(encoding="utf-8")), modules)) - {p.stem}
        for p in PACKAGE.glob("*.py")
    }


def _upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    stage = _stage_of()
    return {
        (a, b)
        for a, targets in graph.items()
        if a not in FACADES
        for b in targets
        if stage[b] > stage[a]
    }


def test_every_module_has_a_stage() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - FACADES
    stage = _stage_of()
    assert not modules - set(stage), f"give these modules a stage: {sorted(modules - set(stage))}"
    assert not set(stage) - modules, f"stages name modules that are gone: {set(stage) - modules}"


def test_no_new_import_runs_up_the_stages() -> None:
    stage_names = {m: s for s, modules in STAGES.items() for m in modules}
    new = sorted(_upward(_graph()) - KNOWN_UPWARD)
    assert not new, "upward imports: " + "; ".join(
        f"memoryclaw.{a} ({stage_names[a]}) imports memoryclaw.{b} ({stage_names[b]})"
        for a, b in new
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


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("from .index import Index", {"index"}, id="relative"),
        pytest.param("from memoryclaw.api import Vault", {"api"}, id="absolute"),
        pytest.param("from . import retrieval", {"retrieval"}, id="package-relative"),
        pytest.param("def f():\n    from .skills import x", {"skills"}, id="inside-a-function"),
        pytest.param(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .api import Vault",
            set(),
            id="type-checking-only",
        ),
        pytest.param("import memoryclaw.cli", {"cli"}, id="import-statement"),
    ],
)
def test_the_graph_sees_every_form_of_import(source: str, expected: set[str]) -> None:
    modules = {"index", "api", "retrieval", "skills", "cli"}
    assert set(_imported(ast.parse(source), modules)) == expected
