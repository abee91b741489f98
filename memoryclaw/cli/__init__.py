"""The ``memoryclaw`` command: a thin layer over :class:`memoryclaw.Vault`.

Exit codes: 0 success, 1 a user error (one line on stderr), 2 a usage error.  With ``--json``
stdout carries exactly one JSON document (JSON lines where noted) and nothing else.

The commands live in modules by concern (recall, memories, forgetting, upkeep, share,
agents); this module holds the ``cli`` group they join and its one error handler.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from .. import __version__
from ..errors import MemoryclawError
from ._common import _one_line

__all__ = ["cli", "main"]


# Each command by name: (its module, its name there).  A command's module is imported when the
# command runs (or `--help` lists them all), so `memoryclaw retrieve`, which an agent's host
# may start every turn, loads only what recalling needs.
_COMMANDS = {
    "archive": ("upkeep", "archive"),
    "audit": ("upkeep", "audit"),
    "consolidate": ("upkeep", "consolidate"),
    "daemon": ("upkeep", "daemon"),
    "delete": ("forgetting", "forget"),
    "doctor": ("upkeep", "doctor"),
    "export": ("share", "export_command"),
    "facts": ("memories", "facts_group"),
    "forget": ("forgetting", "forget"),
    "history": ("memories", "history"),
    "import": ("share", "import_command"),
    "import-notes": ("agents", "import_notes_command"),
    "ingest": ("memories", "ingest"),
    "init": ("upkeep", "init"),
    "log": ("memories", "log"),
    "mcp": ("agents", "mcp_command"),
    "openclaw": ("agents", "openclaw_group"),
    "pending": ("memories", "pending"),
    "profile": ("profile", "profile"),
    "reindex": ("upkeep", "reindex"),
    "retrieve": ("recall", "retrieve"),
    "search": ("recall", "search_command"),
    "serve": ("agents", "serve"),
    "skills": ("memories", "skills"),
    "stats": ("upkeep", "stats"),
    "sync": ("share", "sync_command"),
}


class _Group(click.Group):
    """Turns every expected failure into one line on stderr and exit code 1, in one place, and
    imports a command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, sorted."""
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command called ``cmd_name``, its module imported now; None when there is none."""
        if cmd_name not in _COMMANDS:
            return None
        module, name = _COMMANDS[cmd_name]
        command = getattr(importlib.import_module(f".{module}", __name__), name)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; expected errors become a message and exit code 1."""
        try:
            return super().invoke(ctx)
        except MemoryclawError as exc:
            _fail(str(exc))
        except sqlite3.DatabaseError as exc:
            _fail(f"index database: {exc} (rebuild it with `memoryclaw reindex --full`)")
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, as other command-line tools do.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}")


def _fail(message: str) -> NoReturn:
    click.echo(f"memoryclaw: error: {_one_line(message)}", err=True)
    sys.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    "vault_path",
    type=click.Path(path_type=Path),
    help="Vault folder (default: $MEMORYCLAW_VAULT or ~/.openclaw/workspace/memoryclaw).",
)
@click.version_option(__version__, prog_name="memoryclaw")
@click.pass_context
def cli(ctx: click.Context, vault_path: Path | None) -> None:
    """Deterministic, file-based long-term memory for AI agents."""
    ctx.obj = vault_path


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memoryclaw")


if __name__ == "__main__":  # pragma: no cover
    main()
