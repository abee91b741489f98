"""Serving agents and bringing their memory in: ``serve``, ``mcp``, ``openclaw`` and
``import-notes``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..api import Vault
from ..vault.config import resolve_vault_path
from ..vault.naming import plural
from ._common import _context, _context_options, _emit, _one_line, _step, _vault

if TYPE_CHECKING:
    from ..importers.workspace import ImportReport
    from ..serve.openclaw import Change, Runner


@click.command()
@click.option(
    "--stdio", is_flag=True, help="Speak JSON lines on stdin/stdout (the only transport)."
)
@click.pass_context
def serve(ctx: click.Context, stdio: bool) -> None:
    """Long-lived JSON-lines RPC for agent plugins: retrieve, log_turn, search, get, forget ..."""
    if not stdio:
        raise click.UsageError("give --stdio")
    from ..serve.stdio import StdioServer  # each command imports what it runs: `search` starts fast

    server = StdioServer(resolve_vault_path(ctx.find_root().obj))
    server.serve(sys.stdin.buffer, sys.stdout.buffer)


@click.command("mcp")
@_context_options
@click.pass_context
def mcp_command(
    ctx: click.Context, agent: str | None, session_key: str | None, kind: str | None
) -> None:
    """MCP server on stdio: memory_search, memory_get, memory_log, memory_forget.

    With --agent/--session/--kind it serves that one conversation: it recalls only what
    that conversation may see and logs into it."""
    from ..serve.mcp import run_stdio

    run_stdio(_vault(ctx), _context(agent, session_key, kind))


@click.group("openclaw")
def openclaw_group() -> None:
    """Install memoryclaw as the memory plugin of the OpenClaw on PATH (for this HOME)."""


@openclaw_group.command("install")
@click.option("--openclaw", "executable", default="openclaw", help="The openclaw command to drive.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def openclaw_install(ctx: click.Context, executable: str, as_json: bool) -> None:
    """Install the plugin, select the memory slot, point it at this vault and Python."""
    root = Vault.open(ctx.find_root().obj).root.resolve()  # fails early when there is no vault
    from ..serve import openclaw

    if not as_json and sys.stderr.isatty():
        click.echo("checking that memoryclaw starts as the plugin will start it…", err=True)
    run = _openclaw_steps(openclaw.openclaw_runner(executable), as_json)
    changes = openclaw.install(root, run=run)
    found = openclaw.existing_memory_hint()
    if as_json:
        _emit({"changes": [c.as_dict() for c in changes], "existing_memory": found})
        return
    _report_changes(changes, as_json, f"memoryclaw is OpenClaw's memory now (vault {root})")
    if found:
        click.echo(
            f"OpenClaw already holds memory ({'; '.join(found)}): "
            "bring it in with `memoryclaw openclaw import`"
        )


@openclaw_group.command("uninstall")
@click.option("--openclaw", "executable", default="openclaw", help="The openclaw command to drive.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
def openclaw_uninstall(executable: str, as_json: bool) -> None:
    """Remove the plugin and give the memory slot back to OpenClaw's own memory."""
    from ..serve import openclaw

    changes = openclaw.uninstall(run=_openclaw_steps(openclaw.openclaw_runner(executable), as_json))
    _report_changes(changes, as_json, "memoryclaw removed from OpenClaw (the vault is untouched)")


# What each openclaw command the installer runs does, as a step's line says it.
_OPENCLAW_STEPS = {
    "config get": "reading OpenClaw's plugin settings (`openclaw config get`)",
    "plugins install": "installing the plugin into OpenClaw (`openclaw plugins install`, ~1 min)",
    "config patch": "selecting the memory slot, vault and Python (`openclaw config patch`)",
    "plugins uninstall": "removing the plugin from OpenClaw (`openclaw plugins uninstall`, ~1 min)",
}


def _openclaw_steps(run: Runner, as_json: bool) -> Runner:
    """``run``, each openclaw command shown as a step: each takes seconds, an install a minute."""

    def step(args: Sequence[str], stdin: str | None) -> str:
        command = " ".join(args[:2])
        with _step(_OPENCLAW_STEPS.get(command, f"running `openclaw {command}`"), as_json):
            return run(args, stdin)

    return step


@openclaw_group.command("import")
@click.option(
    "--agent", metavar="ID", help="Import only this OpenClaw agent (default: every agent)."
)
@click.option(
    "--since", type=click.DateTime(["%Y-%m-%d"]), help="Only daily notes and turns from this day."
)
@click.option(
    "--state-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="OpenClaw's state folder (default: $OPENCLAW_STATE_DIR or ~/.openclaw).",
)
@click.option("--dry-run", is_flag=True, help="Only count what would be imported.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def openclaw_import(
    ctx: click.Context,
    agent: str | None,
    since: Any,
    state_dir: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Bring OpenClaw's memory in: MEMORY.md / USER.md, daily notes, session transcripts."""
    vault = _vault(ctx)
    with _step("reading OpenClaw's memory" if dry_run else "importing OpenClaw's memory", as_json):
        report = vault.import_openclaw(
            state_dir, agent=agent, since=since.date() if since else None, dry_run=dry_run
        )
    _print_import(report, as_json)


@click.command("import-notes")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--since", type=click.DateTime(["%Y-%m-%d"]), help="Only notes dated from this day on."
)
@click.option("--dry-run", is_flag=True, help="Only count what would be imported.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def import_notes_command(
    ctx: click.Context, folder: Path, since: Any, dry_run: bool, as_json: bool
) -> None:
    """Import a folder of markdown notes (Obsidian, CLAUDE.md / AGENTS.md, memory folders)."""
    vault = _vault(ctx)
    with _step(f"{'reading' if dry_run else 'importing'} the notes in {folder}", as_json):
        report = vault.import_notes(folder, since=since.date() if since else None, dry_run=dry_run)
    _print_import(report, as_json)


def _print_import(report: ImportReport, as_json: bool) -> None:
    if as_json:
        _emit(report.as_dict())
        return
    verb = "would add" if report.dry_run else "added"
    click.echo(
        f"{verb} {plural(report.facts, 'fact')}, {plural(report.notes, 'note')},"
        f" {plural(report.conflicts, 'conflict')} (to review),"
        f" {plural(report.episodes, 'episode')}, {plural(report.turns, 'turn')} of"
        f" {plural(report.sessions, 'session')}"
    )
    known = report.known_items + report.known_episodes + report.known_turns
    if known:
        click.echo(f"already in the vault: {known} (skipped)")
    if report.unreadable_events:
        events = plural(report.unreadable_events, "event")
        click.echo(f"not readable (compressed or broken): {events}")
    if report.forgotten:
        click.echo(f"left out, forgotten before: {report.forgotten}")
    for line in report.skipped:
        click.echo(_one_line(f"skipped {line}"))
    for line in report.notices:
        click.echo(_one_line(f"note: {line}"))
    if report.consolidation is not None:
        done = report.consolidation
        episodes = done.get("episodes", [])
        count = len(episodes) if isinstance(episodes, list) else episodes
        facts = plural(done.get("facts_added", 0), "fact")
        click.echo(f"consolidated: {plural(count, 'episode')}, {facts}")


def _report_changes(changes: list[Change], as_json: bool, done: str) -> None:
    if as_json:
        _emit({"changes": [c.as_dict() for c in changes]})
        return
    for change in changes:
        click.echo(f"changed {change}")
    if not changes:
        click.echo("nothing to change")
    click.echo(done)
