"""The ``memoryclaw`` command: a thin layer over :class:`memoryclaw.Vault`.

Exit codes: 0 success, 1 a user error (one line on stderr), 2 a usage error.  With ``--json``
stdout carries exactly one JSON document (JSON lines where noted) and nothing else.

The commands live in modules by concern (recall, memories, forgetting, upkeep, share,
agents); this module holds the ``cli`` group they join and its one error handler.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from .. import __version__
from ..errors import MemoryclawError
from ._common import _one_line
from .agents import import_notes_command, mcp_command, openclaw_group, serve
from .forgetting import forget
from .memories import facts_group, history, ingest, log, pending, skills
from .profile import profile
from .recall import retrieve, search_command
from .share import export_command, import_command, sync_command
from .upkeep import archive, audit, consolidate, daemon, doctor, init, reindex, stats

__all__ = ["cli", "main"]


class _Group(click.Group):
    """Turns every expected failure into one line on stderr and exit code 1, in one place."""

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


# `--help` lists the commands by name, so the order here changes nothing a user sees.
for _command in (
    init,
    log,
    ingest,
    search_command,
    retrieve,
    consolidate,
    archive,
    pending,
    skills,
    history,
    facts_group,
    profile,
    reindex,
    stats,
    doctor,
    audit,
    forget,
    serve,
    daemon,
    mcp_command,
    openclaw_group,
    import_notes_command,
    sync_command,
    export_command,
    import_command,
):
    cli.add_command(_command)
cli.add_command(forget, name="delete")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memoryclaw")


if __name__ == "__main__":  # pragma: no cover
    main()
