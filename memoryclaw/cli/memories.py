"""Writing memories and reviewing them: ``log``, ``ingest``, ``pending``, ``skills``,
``history`` and ``facts``."""

from __future__ import annotations

import sys

import click

from ..vault.naming import plural
from ..vault.scopes import KINDS
from ._common import _as_text, _emit, _one_line, _vault


@click.command()
@click.option("--session", required=True, help="Agent session id.")
@click.option("--role", required=True, help="user, assistant, tool_call, tool_result, system ...")
@click.option("--name", help="Speaker name, e.g. Caroline.")
@click.option("--channel", help="Channel (telegram, cli ...); names a new log file.")
@click.option("--timestamp", help="ISO timestamp of the turn (default: now).")
@click.option("--tool", help="Tool name for tool_call / tool_result turns.")
@click.option("--agent", help="Agent whose session this is (default: from the session key).")
@click.option(
    "--kind", type=click.Choice(KINDS), help="Kind of conversation (default: from the session key)."
)
@click.option("--sender", help="Sender id of who wrote a user turn (see scopes.ownerIds).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.argument("text")
@click.pass_context
def log(
    ctx: click.Context,
    session: str,
    role: str,
    name: str | None,
    channel: str | None,
    timestamp: str | None,
    tool: str | None,
    agent: str | None,
    kind: str | None,
    sender: str | None,
    as_json: bool,
    text: str,
) -> None:
    """Append one turn to the session's raw log (TEXT '-' reads stdin)."""
    if text == "-":
        text = _as_text(sys.stdin.buffer.read())
    logged = _vault(ctx).log_turn(
        session,
        role,
        text,
        name=name,
        channel=channel,
        timestamp=timestamp,
        tool=tool,
        agent=agent,
        kind=kind,
        sender=sender,
    )
    if as_json:
        _emit({"path": logged.path, "turn": logged.turn, "session": logged.session})
    else:
        click.echo(f"{logged.path} turn {logged.turn}")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def ingest(ctx: click.Context, file: str, as_json: bool) -> None:
    """Append many turns from a JSON-lines file (or a .json file holding one chat,
    ``{"messages": [...]}``, or a list of them); each session's log is then closed."""
    vault = _vault(ctx)
    # read twice (checked, then written) and in batches: memory stays flat however long
    # the file, and a killed run, run again, adds just what it had not written
    report = vault.ingest_file(sys.stdin.buffer if file == "-" else file, source=file)
    if as_json:
        _emit(report.as_dict())
    else:
        known = f"; {report.known_turns} already ingested" if report.known_turns else ""
        click.echo(
            f"{plural(report.turns, 'turn')} into {plural(len(report.logs), 'log')}"
            f" ({plural(len(report.sessions), 'session')}){known}"
        )


@click.command()
@click.argument("action", required=False, type=click.Choice(["approve", "reject"]))
@click.argument("ident", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def pending(ctx: click.Context, action: str | None, ident: str | None, as_json: bool) -> None:
    """Facts waiting for review; `pending approve ID` / `pending reject ID` decide one."""
    vault = _vault(ctx)
    if action is not None:
        if ident is None:
            raise click.UsageError(f"pending {action} needs the ID of a pending fact")
        done = vault.approve_pending(ident) if action == "approve" else vault.reject_pending(ident)
        if as_json:
            _emit({"action": action, **done.as_dict()})
        else:
            verb = "approved" if action == "approve" else "rejected"
            click.echo(f"{verb} {done.id}: {done.entity} {done.field}: {done.value}")
        return
    entries = vault.pending()
    if as_json:
        _emit({"pending": [e.as_dict() for e in entries]})
        return
    if not entries:
        click.echo("nothing pending")
    for e in entries:
        was = f" (was {e.was})" if e.was else ""
        click.echo(f"{e.id}  {e.mark:<8}  {e.entity} {e.field}: {e.value}{was}")


@click.command()
@click.argument("action", required=False, type=click.Choice(["approve", "reject"]))
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def skills(ctx: click.Context, action: str | None, name: str | None, as_json: bool) -> None:
    """Suggested and approved skills; `skills approve NAME` / `skills reject NAME` decide one."""
    vault = _vault(ctx)
    if action is not None:
        if name is None:
            raise click.UsageError(f"skills {action} needs the NAME of a skill")
        done = vault.approve_skill(name) if action == "approve" else vault.reject_skill(name)
        if as_json:
            _emit({"action": action, **done.as_dict()})
            return
        click.echo(f"{done.status} {done.name} ({done.path})")
        if done.todos:
            markers = plural(done.todos, "TODO marker")
            click.echo(f"{markers} left in {done.path}: review them", err=True)
        return
    found = vault.skills()
    if as_json:
        _emit({"skills": [s.as_dict() for s in found]})
        return
    if not found:
        click.echo("no skills")
    for skill in found:
        if skill.error is not None:
            click.echo(_one_line(f"skipped {skill.error}"), err=True)
            continue
        seen = "-" if skill.occurrences is None else str(skill.occurrences)
        pattern = " -> ".join(skill.pattern) or "-"
        todos = f"  ({skill.todos} TODO)" if skill.todos else ""
        click.echo(f"{skill.name}  {skill.status:<8}  seen {seen}  {pattern}{todos}")


@click.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def history(ctx: click.Context, path: str, as_json: bool) -> None:
    """The git history of one memory file (newest first)."""
    commits = _vault(ctx).history(path)
    if as_json:
        _emit({"path": path, "commits": [c.as_dict() for c in commits]})
        return
    if not commits:
        click.echo(f"{path}: no commits yet")
    for commit in commits:
        first = commit.message.splitlines()[0] if commit.message else ""
        click.echo(f"{commit.sha[:10]}  {commit.date}  {commit.author}  {first}")


@click.group("facts")
def facts_group() -> None:
    """Change a fact's value (the old one is kept, marked superseded) and see its history."""


@facts_group.command("set")
@click.argument("entity")
@click.argument("field")
@click.argument("value")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def facts_set(ctx: click.Context, entity: str, field: str, value: str, as_json: bool) -> None:
    """State ENTITY's FIELD as VALUE; its current values stay in their files, superseded."""
    report = _vault(ctx).set_fact(entity, field, value)
    if as_json:
        _emit(report.as_dict())
        return
    if report.unchanged:
        click.echo(f"{report.entity} {report.field} is {report.value} already ({report.path})")
        return
    click.echo(f"{report.entity} {report.field}: {report.value} ({report.path}:{report.line})")
    for old in report.superseded:
        click.echo(f"  superseded {old['value']} ({old['path']}:{old['line']})")


@facts_group.command("history")
@click.argument("entity")
@click.argument("field", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def facts_history(ctx: click.Context, entity: str, field: str | None, as_json: bool) -> None:
    """Every value ENTITY's FIELD has had (oldest first), and the git commits that changed it."""
    found = _vault(ctx).fact_history(entity, field)
    if as_json:
        _emit(found)
        return
    for link in found["chain"]:
        if link["current"]:
            span = f"since {link['from'] or '?'}, current"
        else:
            span = f"{link['from'] or '?'} until {link['until'] or '?'}"
            if link["superseded_by"]:
                span += f", superseded by {link['superseded_by']}"
        where = f"{link['path']}:{link['line']}"
        click.echo(f"{link['field']}: {link['value']}  ({span}; {link['source']}; {where})")
    if not found["git"]:
        click.echo("(not a git vault: no commits to show)")
    for commit in found["commits"]:
        first = commit["message"].splitlines()[0] if commit["message"] else ""
        click.echo(f"  {commit['sha'][:10]}  {commit['date']}  {commit['author']}  {first}")
