"""``forget`` (also ``delete``): removing memories, asking first when a match is wide."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from ..errors import InvalidInputError
from ..vault.naming import plural
from ._common import _emit, _one_line, _vault


@click.command()
@click.argument("query", required=False)
@click.option("--episode", "episode_id", help="Episode id to remove.")
@click.option("--fact", "fact_id", help="Fact id to remove.")
@click.option("--dry-run", is_flag=True, help="Show what would be removed, remove nothing.")
@click.option(
    "--yes", is_flag=True, help="Do not ask (before removing what a QUERY or a shared id matched)."
)
@click.option(
    "--purge-history",
    is_flag=True,
    help="Also rewrite the vault's git history so no commit holds what was removed (asks first).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def forget(
    ctx: click.Context,
    query: str | None,
    episode_id: str | None,
    fact_id: str | None,
    dry_run: bool,
    yes: bool,
    purge_history: bool,
    as_json: bool,
) -> None:
    """Remove memories from the vault and the index (by QUERY, --episode or --fact)."""
    if sum(x is not None for x in (query, episode_id, fact_id)) != 1:
        raise click.UsageError("give exactly one of QUERY, --episode ID or --fact ID")
    vault = _vault(ctx)
    if purge_history and not dry_run:
        blocked = vault.purge_blockers()
        if blocked:  # refused before anything is removed: the removal must not go unpurged
            raise InvalidInputError(
                "--purge-history",
                "git cannot rewrite the history while these tracked files have uncommitted"
                f" changes: {', '.join(blocked)}; commit or revert them first (nothing was"
                " removed)",
            )
    if not dry_run and not yes:
        preview = vault.forget(query, episode_id=episode_id, fact_id=fact_id, dry_run=True)
        count = len(preview.episodes) + len(preview.facts) + preview.removed
        widening = [c for c in preview.changes if c.get("whole_episode")]
        if count == 0 and not purge_history:
            dry_run = True
        elif count == 0:
            pass  # nothing left in the files; older commits may still hold it
        elif query is not None:
            _confirm(
                _change_lines(preview.changes),
                f"QUERY matches {plural(preview.removed, 'line, turn and fact', _ALL_KINDS)}"
                + (f", and {plural(len(widening), 'whole episode')}" if widening else ""),
                f"remove these {preview.removed}"
                + (f" (and {plural(len(widening), 'whole episode')})?" if widening else "?"),
            )
        elif len(preview.files_deleted) > 1:
            shared = len(preview.files_deleted)
            _confirm(
                preview.files_deleted, f"{shared} files share this id", f"remove all {shared}?"
            )
        if purge_history:
            _confirm(
                preview.files_deleted + preview.files_edited or ["older commits"],
                "--purge-history rewrites every commit that holds what is forgotten",
                "rewrite the git history of these files?",
            )
    report = vault.forget(query, episode_id=episode_id, fact_id=fact_id, dry_run=dry_run)
    purged = None
    if purge_history and not report.dry_run and report.in_history:
        purged = vault.purge_history(
            report.files_deleted + report.files_edited, report=True, query=query
        )
    if as_json:
        doc = {**report.as_dict(), "history_purged": purged.files if purged is not None else None}
        if purged is not None:
            doc["purge"] = purged.as_dict()
        _emit(doc)
        return
    verb = "would remove" if report.dry_run else "removed"
    whole = sum(1 for c in report.changes if c.get("whole_episode"))
    _say(
        f"{verb} {plural(report.removed, 'line, turn and fact', _ALL_KINDS)}"
        f" ({plural(report.turns, 'log turn')}, {plural(len(report.facts), 'fact')},"
        f" {plural(whole, 'whole episode')}; {plural(len(report.episodes), 'episode')} touched)"
    )
    for line in _change_lines(report.changes):
        _say(f"  {line}")
    for path in report.files_deleted:
        _say(f"  {'would delete' if report.dry_run else 'deleted'} {path}")
    for path in report.files_edited:
        _say(f"  {'would edit' if report.dry_run else 'edited'} {path}")
    for team in report.elsewhere:
        _say(
            f"still in the team vault '{team['vault']}' ({team['root']}), read-only here:"
            f" {plural(team['count'], 'line, turn and fact', _ALL_KINDS)} in"
            f" {', '.join(team['files'])}; recall finds them until they are forgotten there"
        )
    if report.commit:
        _say(f"committed the removal as {report.commit[:12]}")
    if report.tombstones:
        _say(f"kept its tombstones (hashes, no text) in {report.tombstones}")
    if purged is not None:
        for line in purged.lines():
            _say(line)
    elif report.in_history and not report.dry_run and report.files_deleted + report.files_edited:
        _say(
            "git history still holds the removed text in earlier commits of these files; to"
            " purge it, forget with --purge-history next time, or rewrite their history"
            " yourself (git filter-repo) and run `git gc --prune=now`"
        )


_ALL_KINDS = "lines, turns and facts"


def _say(line: str) -> None:
    """Print one line of the report; a file name or a text from the vault (which another
    device may have named with a newline or an escape sequence) cannot break it."""
    click.echo(_one_line(line))


def _change_lines(changes: Sequence[dict[str, Any]]) -> list[str]:
    """Each line, turn, fact and whole episode a forget removes, one line each."""
    out: list[str] = []
    for change in changes:
        path = change["path"]
        if change.get("whole_episode"):
            out.append(f"whole episode {path} ({change['whole_episode']})")
            continue
        facts = {f["line"] for f in change.get("facts", [])}
        for fact in change.get("facts", []):
            field = f" {fact['field']}" if fact["field"] else ""
            out.append(f"fact {fact['entity']}{field}: {fact['value']} ({path}:{fact['line']})")
        for line in change.get("lines", []):
            if line["line"] not in facts:
                out.append(f"line {path}:{line['line']}: {line['text']}")
        for turn in change.get("turns", []):
            out.append(f"turn {turn['turn']} of {path}: {turn['text']}")
        if change.get("summary_rewritten"):
            out.append(f"summary of {path} (rewritten from what remains)")
        if change.get("renamed_to"):
            out.append(f"file name {path} (renamed to {change['renamed_to']})")
    return out


def _confirm(items: Sequence[str], problem: str, question: str) -> None:
    """Ask on a terminal; elsewhere refuse with a one-line message naming --yes."""
    if not sys.stdin.isatty():
        shown = ", ".join(items[:5]) + (", ..." if len(items) > 5 else "")
        raise InvalidInputError("--yes", f"{problem} ({shown}); add --yes to go ahead")
    for item in items:
        click.echo(_one_line(f"  {item}"), err=True)
    click.confirm(question, abort=True, err=True)
