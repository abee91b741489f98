"""The public API surface and the import direction between modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import memoryclaw

PACKAGE = Path(memoryclaw.__file__).parent
UI_MODULES = {"click", "rich"}
# Modules allowed to import the UI libraries: only the command line.
UI_LAYER = {"cli.py", "__main__.py"}


def test_all_is_sorted_and_unique() -> None:
    assert list(memoryclaw.__all__) == sorted(set(memoryclaw.__all__))


@pytest.mark.parametrize("name", memoryclaw.__all__, ids=str)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(memoryclaw, name) is not None


def test_public_api_names() -> None:
    expected = {
        "ArchiveConflictError",
        "ArchiveReport",
        "ConfigError",
        "EmbeddingError",
        "Episode",
        "EpisodeResult",
        "ExternalToolError",
        "Fact",
        "FactResult",
        "ForgetReport",
        "ImportReport",
        "IngestReport",
        "InvalidInputError",
        "LockTimeoutError",
        "LoggedTurn",
        "MemoryHooks",
        "MemoryclawError",
        "Metrics",
        "NotFoundError",
        "ParseError",
        "Policy",
        "RawLog",
        "ReadOnlyVaultError",
        "RecallContext",
        "RemoteSyncReport",
        "RetrievePayload",
        "SearchResult",
        "Settings",
        "SharedVault",
        "SyncError",
        "SyncReport",
        "Turn",
        "UnsafePathError",
        "Vault",
        "VaultNotFoundError",
        "Withheld",
        "WorkingMemories",
        "WorkingMemory",
        "__version__",
        "extract_keywords",
        "load_settings",
    }
    assert set(memoryclaw.__all__) == expected


def test_every_error_derives_from_the_root() -> None:
    errors = [getattr(memoryclaw, n) for n in memoryclaw.__all__ if n.endswith("Error")]
    assert errors
    for error in errors:
        assert issubclass(error, memoryclaw.MemoryclawError)


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module:
            names.add("." + node.module.split(".")[-1])
    return names


LIBRARY_FILES = sorted(
    p for p in PACKAGE.rglob("*.py") if p.name not in UI_LAYER and p.parent.name != "cli"
)


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_ui_imports_below_the_cli(path: Path) -> None:
    imported = _imported_modules(path)
    assert not imported & UI_MODULES, f"{path.name} imports {imported & UI_MODULES}"
    assert ".cli" not in imported, f"{path.name} imports the CLI"


FORMAT_MODULES = (
    "safeyaml",
    "frontmatter",
    "timestamps",
    "naming",
    "values",
    "episodes",
    "facts",
    "aliases",
    "logformat",
)


@pytest.mark.parametrize("module", FORMAT_MODULES, ids=FORMAT_MODULES)
def test_file_format_modules_do_no_io(module: str) -> None:
    imported = _imported_modules(PACKAGE / "vault" / f"{module}.py")
    assert not imported & {"os", "pathlib", "shutil", "sqlite3", "sqlite_utils", "subprocess"}


def test_only_index_module_imports_sqlite_utils() -> None:
    users = {p.name for p in PACKAGE.rglob("*.py") if "sqlite_utils" in _imported_modules(p)}
    assert users == {"schema.py"}


def _module_and_class_defs(tree: ast.Module) -> list[ast.AST]:
    defs: list[ast.AST] = []
    for node in tree.body:
        defs.append(node)
        if isinstance(node, ast.ClassDef):
            defs.extend(node.body)
    return defs


def test_every_public_function_has_a_docstring() -> None:
    missing = []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in _module_and_class_defs(ast.parse(path.read_text(encoding="utf-8"))):
            public = isinstance(node, kinds) and not node.name.startswith("_")
            if public and ast.get_docstring(node) is None:
                missing.append(f"{path.name}:{node.lineno} {node.name}")
    assert missing == []


def test_py_typed_marker_ships() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_importers_module_does_no_io() -> None:
    imported = _imported_modules(PACKAGE / "importers" / "parsers.py")
    assert not imported & {"os", "pathlib", "shutil", "sqlite3", "sqlite_utils", "subprocess"}


def test_every_public_name_has_one_home() -> None:
    assert sorted(memoryclaw._HOMES) == sorted(set(memoryclaw.__all__) - {"__version__"})
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        memoryclaw.nothing  # noqa: B018


def test_the_command_line_imports_only_what_a_search_needs() -> None:
    """An agent shells out to ``memoryclaw search``: importing the command line loads no
    optional dependency and none of the modules only writing commands use."""
    import subprocess
    import sys

    code = "import sys, memoryclaw.cli; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    heavy = {"apscheduler", "mcp", "numpy", "httpx", "sentence_transformers", "sqlite_utils"}
    heavy |= {"yaml"}  # plain YAML (memoryclaw.yaml, frontmatter) is read without PyYAML
    assert not {m.split(".")[0] for m in loaded} & heavy
    writers = {
        "memoryclaw.consolidate.pipeline",
        "memoryclaw.importers.workspace",
        "memoryclaw.importers.parsers",
        "memoryclaw.serve.openclaw",
        "memoryclaw.vault.redact",
        "memoryclaw.consolidate.skills",
        "memoryclaw.serve.daemon",
        "memoryclaw.serve.mcp",
        # the other commands and the verbs only they use are imported when they run
        "memoryclaw.cli.upkeep",
        "memoryclaw.cli.share",
        "memoryclaw.cli.agents",
        "memoryclaw.cli.memories",
        "memoryclaw.cli.forgetting",
        "memoryclaw.api.forgetting",
        "memoryclaw.api.importing",
        "memoryclaw.api.consolidating",
        "memoryclaw.api.health",
        "memoryclaw.api.syncing",
    }
    assert not loaded & writers, sorted(loaded & writers)


def test_every_command_of_the_command_line_modules_is_reachable_by_its_name() -> None:
    """The command group imports a command's module only when asked for it: a command added
    to a module but not to the group's table would silently be missing."""
    import importlib
    import pkgutil

    import click

    import memoryclaw.cli
    from memoryclaw.cli import cli

    context = click.Context(cli)
    reachable = {id(cli.get_command(context, name)) for name in cli.list_commands(context)}
    for module_info in pkgutil.iter_modules(memoryclaw.cli.__path__):
        module = importlib.import_module(f"memoryclaw.cli.{module_info.name}")
        commands = [v for v in vars(module).values() if isinstance(v, click.Command)]
        subcommands = {
            id(sub)
            for group in commands
            if isinstance(group, click.Group)
            for sub in group.commands.values()
        }
        for command in commands:
            if command is not cli and id(command) not in subcommands:
                assert id(command) in reachable, f"{module.__name__}: {command.name}"
