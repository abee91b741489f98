"""The ``memoryclaw`` command: a thin layer over :class:`memoryclaw.Vault`.

Exit codes: 0 success, 1 a user error (one line on stderr), 2 a usage error.  With ``--json``
stdout carries exactly one JSON document (JSON lines where noted) and nothing else.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
import time
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .. import __version__
from ..api import Vault
from ..errors import InvalidInputError, MemoryclawError
from ..recall.retrieval import SearchResult, check_query
from ..vault.config import resolve_vault_path
from ..vault.files import is_archived
from ..vault.inputs import require_text
from ..vault.notes import plural, utc_iso
from ..vault.rawlogs import now_utc
from ..vault.scopes import KINDS, RecallContext

if TYPE_CHECKING:
    from ..consolidate.archive import ArchiveReport
    from ..consolidate.pipeline import ConsolidationReport
    from ..importers.workspace import ImportReport
    from ..serve.openclaw import Change, Runner
    from ..share.sync import RemoteSyncReport


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


# Characters that would break a message's line or hide or reorder its text on a terminal:
# controls, line and paragraph separators, invisible formatting, lone surrogates.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _one_line(text: str) -> str:
    """``text`` as one printable line: each character that would break the line or hide
    text (a newline in a session key, an escape sequence in a file name) written as its
    Python escape (``\\n``, ``\\x1b``, ``\\u202e``); messages quote outside values so."""
    if text.isprintable():
        return text
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _UNSHOWN else c for c in text)


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, sort_keys=False))


@contextmanager
def _step(what: str, as_json: bool) -> Iterator[None]:
    """On a terminal, one line on stderr for a step that can take a while: what runs, then
    how long it took.  Never with ``--json``, and never off a terminal, where stderr holds
    only the one line of an error."""
    if as_json or not sys.stderr.isatty():
        yield
        return
    click.echo(f"{what}…", nl=False, err=True)
    started = time.monotonic()
    try:
        yield
    except BaseException:
        click.echo(" failed", err=True)
        raise
    click.echo(f" done ({time.monotonic() - started:.1f} s)", err=True)


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


def _vault(ctx: click.Context) -> Vault:
    vault = Vault.open(ctx.find_root().obj)
    ctx.call_on_close(vault.close)
    return vault


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--git", is_flag=True, help="Also make the vault a git repository.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def init(ctx: click.Context, path: Path | None, git: bool, as_json: bool) -> None:
    """Create a vault (folders, memoryclaw.yaml, .gitignore)."""
    target = path or resolve_vault_path(ctx.find_root().obj)
    with Vault.init(target, git=git) as vault:
        if as_json:
            repository = (vault.root / ".git").exists()
            _emit({"vault": str(vault.root), "git": repository, "commit": vault.init_commit})
            return
        click.echo(f"vault ready at {vault.root}")
        if vault.init_commit:
            first = vault.init_commit[:10]
            click.echo(f"committed the vault's files as {first} (the first commit)")


@cli.command()
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


def _as_text(data: bytes) -> str:
    # As Python does for argv: a byte that is not UTF-8 becomes a lone surrogate, which
    # require_text (or the vault, for a turn) then names in a one-line error.
    return data.decode("utf-8", "surrogateescape")


@cli.command()
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


def _context_options(func: Any) -> Any:
    """``--agent``, ``--session`` and ``--kind``: recall as that conversation would."""
    func = click.option(
        "--kind",
        type=click.Choice(KINDS),
        help="Kind of conversation asking (default: from the session key).",
    )(func)
    func = click.option(
        "--session", "session_key", help="Session asking (an OpenClaw session key)."
    )(func)
    return click.option("--agent", help="Agent asking (default: none, the owner sees all).")(func)


def _context(agent: str | None, session_key: str | None, kind: str | None) -> RecallContext | None:
    if agent is None and session_key is None and kind is None:
        return None
    return RecallContext(agent=agent, session=session_key, kind=kind)


def _print_withheld(result: SearchResult) -> None:
    if result.withheld is None:
        return
    if not result.withheld:
        click.echo("withheld: nothing")
        return
    click.echo("withheld:")
    for item in result.withheld:
        text = " ".join(item.text.split())
        text = text if len(text) <= 80 else text[:79] + "…"
        click.echo(f"   {item.kind} {item.id}: {text}")
        click.echo(f"      {item.reason}  ({item.path})")


def _print_search(result: SearchResult) -> None:
    keywords = ", ".join(result.plan.keywords) or "(none)"
    click.echo(f"keywords: {keywords}")
    for term, synonyms in result.plan.expansions.items():
        click.echo(f"aliases:  {term} -> {', '.join(synonyms)}")
    if result.fallback_error:
        click.echo(_one_line(f"vector fallback unavailable: {result.fallback_error}"), err=True)
    if not result.results and not result.facts and not result.passages:
        click.echo("no memories found")
        return
    for rank, episode in enumerate(result.results, start=1):
        click.echo(f"{rank}. {episode.timestamp[:10]}  {episode.summary}")
        click.echo(
            f"   score {episode.score:.2f} via {episode.via};"
            f" matched {', '.join(episode.matched) or '-'}"
            f"; tags {', '.join(episode.tags) or '-'}"
            + (f"; recency {episode.recency:.2f}" if episode.recency is not None else "")
        )
        archived = "  [archived]" if is_archived(episode.path) else ""
        click.echo(f"   {episode.path}  ({episode.id}){archived}")
        if not result.context.is_terminal:
            click.echo(f"   admitted: {episode.admitted_by}")
        best = next((p for p in result.passages if p.episode_id == episode.id), None)
        if best is not None:  # the line that matched best, and why
            turn = f"#{best.turn} " if best.turn is not None else ""
            quote = " ".join(best.text.split())
            quote = quote if len(quote) <= 100 else quote[:99] + "…"
            click.echo(f"   {turn}{best.speaker or ''}: {quote}  [{', '.join(best.matched)}]")
    recent = [p for p in result.passages if p.via == "log"]
    if recent:
        click.echo("recent turns (not yet consolidated):")
        for passage in recent[:3]:
            quote = " ".join(passage.text.split())[:100]
            click.echo(f"   #{passage.turn} {passage.speaker}: {quote}  {passage.path}")
            if not result.context.is_terminal:
                click.echo(f"   admitted: {passage.admitted_by}")
    if result.facts:
        click.echo("facts:")
        for fact in result.facts:
            click.echo(f"   {fact.render()}  {fact.path}:{fact.line}")


@cli.command("search")
@click.argument("query", required=False)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    help="Number of episodes (default: retrieval.maxResults).",
)
@click.option(
    "--queries",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="File of queries, one per line.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (JSON lines with --queries).")
@_context_options
@click.option(
    "--explain-scope", is_flag=True, help="Also list what the recall rules withheld, and why."
)
@click.option("--all", "include_archived", is_flag=True, help="Also search archived episodes.")
@click.pass_context
def search_command(
    ctx: click.Context,
    query: str | None,
    limit: int | None,
    queries: str | None,
    as_json: bool,
    agent: str | None,
    session_key: str | None,
    kind: str | None,
    explain_scope: bool,
    include_archived: bool,
) -> None:
    """Ranked, explained episodes and facts for QUERY (as --agent/--session/--kind would
    see them; with none of them, everything but the archive, which --all adds)."""
    context = _context(agent, session_key, kind)
    if (query is None) == (queries is None):
        raise click.UsageError("give a QUERY or --queries FILE (not both)")
    vault = _vault(ctx)
    if queries is not None:
        if not as_json:
            raise click.UsageError("--queries needs --json")
        handle = sys.stdin.buffer if queries == "-" else open(queries, "rb")  # noqa: SIM115
        with handle:
            lines = [_as_text(line.rstrip(b"\r\n")) for line in handle]
        for number, line in enumerate(lines, start=1):
            require_text("query", line, source=queries, line=number)
            check_query(line, source=queries, line=number)
        vault.refresh()
        for line in lines:
            if line.strip():
                found = vault.search(
                    line,
                    limit=limit,
                    refresh=False,
                    context=context,
                    explain_scope=explain_scope,
                    include_archived=include_archived,
                )
                _emit(found.as_dict())
        return
    assert query is not None
    require_text("QUERY", query)
    check_query(query)  # a search is refused past its length; retrieve reads the head
    result = vault.search(
        query,
        limit=limit,
        context=context,
        explain_scope=explain_scope,
        include_archived=include_archived,
    )
    if as_json:
        _emit(result.as_dict())
    else:
        _print_search(result)
        _print_withheld(result)


@cli.command()
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@_context_options
@click.pass_context
def retrieve(
    ctx: click.Context,
    query: str,
    as_json: bool,
    agent: str | None,
    session_key: str | None,
    kind: str | None,
) -> None:
    """The hook payload for QUERY: context block, working memory, token count."""
    require_text("QUERY", query)
    payload = _vault(ctx).retrieve(query, context=_context(agent, session_key, kind))
    if as_json:
        _emit(payload.as_dict())
        return
    click.echo(payload.context or "(no memories for this query)")
    click.echo(f"tokens: {payload.tokens} of {payload.budget}", err=True)


@cli.command()
@click.option("--all", "all_logs", is_flag=True, help="Every unprocessed log, closed or not.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def consolidate(ctx: click.Context, all_logs: bool, as_json: bool) -> None:
    """Turn closed raw logs into episodes and facts; print what changed."""
    vault = _vault(ctx)
    which = "every unprocessed log" if all_logs else "closed logs"
    with _step(f"consolidating {which}", as_json):
        report = vault.consolidate(all_logs=all_logs)
    if as_json:
        _emit(report.as_dict())
        return
    _print_consolidation(report, vault.settings.consolidation.session_idle_minutes)


def _print_consolidation(report: ConsolidationReport, idle_minutes: int) -> None:
    click.echo(
        f"{plural(report.logs_read, 'log')} -> {plural(len(report.episodes), 'episode')}, "
        f"{plural(report.facts_added, 'fact')} added ({report.facts_refreshed} refreshed), "
        f"{report.pending} pending, {plural(report.conflicts, 'conflict')}, "
        f"{plural(len(report.skills_suggested), 'skill')} suggested,"
        f" in {report.took_ms / 1000:.2f}s"
    )
    for path in report.episodes:
        click.echo(f"  + {path}")
    for skip in report.skipped:
        at = f":{skip.line}" if skip.line else ""
        click.echo(_one_line(f"  skipped {skip.path}{at}: {skip.reason}"))
    if report.commit:
        click.echo(f"committed {report.commit[:10]}")
    if report.logs_deleted:
        click.echo(f"deleted {plural(len(report.logs_deleted), 'processed log')} past retention")
    if report.left_open:
        click.echo(
            f"{plural(len(report.left_open), 'log')} left open: sessions active in the last"
            f" {plural(idle_minutes, 'minute')} (consolidation.sessionIdleMinutes);"
            " `consolidate --all` takes them now"
        )


@cli.command()
@click.option("--dry-run", is_flag=True, help="Show what would move, move nothing.")
@click.option("--restore", "ident", metavar="ID", help="Move this archived episode back.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def archive(ctx: click.Context, dry_run: bool, ident: str | None, as_json: bool) -> None:
    """Move episodes unused for consolidation.archiveAfterDays to episodes/archive/YYYY/."""
    if ident is not None and dry_run:
        raise click.UsageError("--restore moves one episode back: it has no --dry-run")
    vault = _vault(ctx)
    report = vault.restore(ident) if ident is not None else vault.archive(dry_run=dry_run)
    if as_json:
        _emit(report.as_dict())
        return
    _print_archive(report)


def _print_archive(report: ArchiveReport) -> None:
    if report.action == "restore":
        done = f"restored {report.moved[0].id}" if report.moved else "not archived: nothing to do"
        click.echo(done)
    elif report.after_days == 0:
        click.echo("archiving is off (consolidation.archiveAfterDays: 0): no episode moves")
    else:
        verb = "would archive" if report.dry_run else "archived"
        click.echo(
            f"{verb} {plural(len(report.moved), 'episode')} unused for"
            f" {plural(report.after_days, 'day')}"
            " (not recalled, edited or dated since)"
        )
        if report.unused_from and report.unused_from > utc_iso(now_utc()):
            click.echo(
                f"  nothing counts as unused before {report.unused_from[:10]},"
                f" {plural(report.after_days, 'day')} after recalls began to be noted"
            )
    for move in report.moved:
        click.echo(f"  {move.source} -> {move.target}")
    for path in report.settled:
        verb = "would remove" if report.dry_run else "removed"
        click.echo(f"  {verb} {path}: a copy of its active episode (an interrupted run)")
    for conflict in report.conflicts:
        click.echo(_one_line(f"  left {conflict.path}: {conflict.reason}"), err=True)
    if report.commit:
        click.echo(f"committed {report.commit[:10]}")


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.group("facts")
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


@cli.command()
@click.option("--full", is_flag=True, help="Delete the index and rebuild it from the files.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def reindex(ctx: click.Context, full: bool, as_json: bool) -> None:
    """Bring the index up to date with the vault."""
    vault = _vault(ctx)
    if sys.stderr.isatty() and not as_json:
        with _Bar("indexing") as files, _Bar("embedding", after=files) as vectors:
            report = vault.reindex(full=full, progress=files, embed_progress=vectors)
    else:
        report = vault.reindex(full=full)
    if as_json:
        _emit(report.as_dict())
        return
    click.echo(
        f"{len(report.added)} added, {len(report.changed)} changed, {len(report.deleted)} deleted,"
        f" {len(report.moved)} moved, {report.unchanged} unchanged in {report.took_ms:.0f} ms"
    )
    if report.embedded:
        click.echo(f"{plural(report.embedded, 'episode')} embedded for the vector fallback")
    if report.vector_error:
        click.echo(_one_line(f"vectors not updated: {report.vector_error}"), err=True)
    for skipped in report.skipped:
        line = f":{skipped.line}" if skipped.line else ""
        click.echo(_one_line(f"skipped {skipped.path}{line}: {skipped.reason}"), err=True)


class _Bar:
    """A progress bar on stderr that appears with its first step (nothing to do: no bar);
    ``after`` is the bar of the phase before, finished when this one starts."""

    def __init__(self, label: str, after: _Bar | None = None) -> None:
        self.label = label
        self.after = after
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if self.after is not None:
                self.after.close()
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.length = total
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        """Finish the bar's line."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@cli.command()
@click.option(
    "--days",
    type=click.IntRange(min=1),
    default=7,
    show_default=True,
    help="Recall metrics over the last N days, today included.",
)
@click.option("--since", metavar="YYYY-MM-DD", help="Recall metrics from this day to today.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def stats(ctx: click.Context, days: int, since: str | None, as_json: bool) -> None:
    """Counts, sizes and index health, and recall metrics over a window."""
    data = _vault(ctx).stats(days=days, since=since)
    if as_json:
        _emit(data)
        return
    metrics = data.pop("metrics")
    for key, value in data.items():
        if key == "top_tags":
            value = ", ".join(f"{t['tag']} ({t['count']})" for t in value) or "-"
        click.echo(f"{key:18} {value}")
    _echo_metrics(metrics)


def _echo_metrics(m: dict[str, Any]) -> None:
    """The readable block of ``stats``: recall metrics over their window."""
    rows = [
        ("recall metrics", f"{m['since']} to {m['until']} (UTC days)"),
        (
            "  recalls",
            f"{m['recalls']}; tokens injected {m['tokens_injected_mean']:,.0f} mean,"
            f" {m['tokens_injected_max']:,} max, {m['tokens_injected']:,} in all;"
            f" {m['recall_failures']} failed (the turn went on without memory)",
        ),
        (
            "  transcript",
            f"~{m['transcript_tokens']:,} tokens stood for; {m['tokens_saved']:,} tokens saved",
        ),
        (
            "  skipped",
            f"{plural(m['trivial_skipped'], 'trivial message')};"
            f" {plural(m['below_threshold'], 'result')} below retrieval.minScore",
        ),
        ("  review", f"{plural(m['pending'], 'fact')} pending, {m['conflicts']} in conflict"),
        (
            "  archive",
            f"{plural(m['archived'], 'episode')} archived in the window,"
            f" {m['episodes_archived']} now",
        ),
    ]
    for key, value in rows:
        click.echo(f"{key:18} {value}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Configuration, dependency and index checks (exit 1 when one fails)."""
    from ..serve.openclaw import doctor_checks

    checks = _vault(ctx).doctor() + doctor_checks()
    if as_json:
        _emit({"checks": checks, "ok": all(c["status"] != "error" for c in checks)})
    else:
        for check in checks:
            click.echo(_one_line(f"[{check['status']:>5}] {check['check']}: {check['detail']}"))
    if any(c["status"] == "error" for c in checks):
        sys.exit(1)


@cli.command()
@click.option(
    "--days", type=click.IntRange(min=0), default=7, show_default=True, help="How far back."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def audit(ctx: click.Context, days: int, as_json: bool) -> None:
    """Recently added episodes and machine-written facts, and files that could not be read."""
    data = _vault(ctx).audit(days=days)
    if as_json:
        _emit(data)
        return
    click.echo(f"since {data['since']}:")
    for episode in data["episodes"]:
        click.echo(
            f"  episode {episode['timestamp'][:10]} [{episode['confidence']}]"
            f" {episode['summary']}  ({episode['id']})"
        )
    for fact in data["facts"]:
        click.echo(
            f"  fact {fact['entity']} {fact['field']} {fact['value']}"
            f" [{fact['confidence']}] {fact['path']}:{fact['line']}"
        )
    for error in data["errors"]:
        line = f":{error['line']}" if error["line"] else ""
        click.echo(_one_line(f"  unreadable {error['path']}{line}: {error['reason']}"))
    if not (data["episodes"] or data["facts"] or data["errors"]):
        click.echo("  nothing new")


@cli.command()
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
    click.echo(
        f"{verb} {plural(report.removed, 'line, turn and fact', _ALL_KINDS)}"
        f" ({plural(report.turns, 'log turn')}, {plural(len(report.facts), 'fact')},"
        f" {plural(whole, 'whole episode')}; {plural(len(report.episodes), 'episode')} touched)"
    )
    for line in _change_lines(report.changes):
        click.echo(f"  {line}")
    for path in report.files_deleted:
        click.echo(f"  {'would delete' if report.dry_run else 'deleted'} {path}")
    for path in report.files_edited:
        click.echo(f"  {'would edit' if report.dry_run else 'edited'} {path}")
    if report.commit:
        click.echo(f"committed the removal as {report.commit[:12]}")
    if report.tombstones:
        click.echo(f"kept its tombstones (hashes, no text) in {report.tombstones}")
    if purged is not None:
        for line in purged.lines():
            click.echo(line)
    elif report.in_history and not report.dry_run and report.files_deleted + report.files_edited:
        click.echo(
            "git history still holds the removed text in earlier commits of these files; to"
            " purge it, forget with --purge-history next time, or rewrite their history"
            " yourself (git filter-repo) and run `git gc --prune=now`"
        )


_ALL_KINDS = "lines, turns and facts"


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


cli.add_command(forget, name="delete")


@cli.command()
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


@cli.command()
@click.option("--once", is_flag=True, help="Consolidate and reindex once, then exit.")
@click.option("--json", "as_json", is_flag=True, help="With --once: print a JSON document.")
@click.pass_context
def daemon(ctx: click.Context, once: bool, as_json: bool) -> None:
    """Consolidate on schedule and keep the index in step with edits (one per vault)."""
    if as_json and not once:
        raise click.UsageError("--json needs --once (the running daemon logs to stderr)")
    from ..serve.daemon import Daemon

    runner = Daemon(resolve_vault_path(ctx.find_root().obj))
    if once:
        with _step("consolidating closed logs, then reindexing", as_json):
            report, synced = runner.run_once()
        if as_json:
            _emit({"consolidation": report.as_dict(), "reindex": synced.as_dict()})
            return
        _print_consolidation(report, runner.settings.consolidation.session_idle_minutes)
        click.echo(
            f"reindexed: {len(synced.added)} added, {len(synced.changed)} changed,"
            f" {len(synced.deleted)} deleted, {len(synced.moved)} moved in {synced.took_ms:.0f} ms"
        )
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s memoryclaw daemon: %(message)s", "%Y-%m-%d %H:%M:%S")
    )
    logger = logging.getLogger("memoryclaw.daemon")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # Its "job skipped: already running" notices are the daemon working as designed.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    # watchdog logs an error for events that arrive while its observer stops; nothing is lost
    # (the next search or daemon start syncs the index with the files), so it would only alarm.
    logging.getLogger("watchdog.observers.inotify").setLevel(logging.CRITICAL)
    try:
        runner.run_forever()
    finally:
        logger.removeHandler(handler)


@cli.command("mcp")
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


@cli.group("openclaw")
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


@cli.command("import-notes")
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


@cli.command("sync")
@click.option("--setup", is_flag=True, help="First write .gitattributes (union merges of facts).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.option(
    "--accept-config",
    is_flag=True,
    help="Accept the memoryclaw.yaml keys a sync held (they apply from the next command); "
    "does not sync.",
)
@click.pass_context
def sync_command(ctx: click.Context, setup: bool, as_json: bool, accept_config: bool) -> None:
    """Sync the vault with its git remote: commit, fetch, merge, push, re-index."""
    if accept_config:
        accepted = _vault(ctx).accept_config()
        if as_json:
            _emit({"accepted": accepted})
        else:
            click.echo(f"accepted: {', '.join(accepted)}" if accepted else "nothing was held")
        return
    vault = _vault(ctx)
    with _step("syncing with the git remote (commit, fetch, merge, push, reindex)", as_json):
        report = vault.sync_remote(setup=setup)
    if as_json:
        _emit(report.as_dict())
        return
    for team in report.shared:
        name = team["vault"]
        if team["error"]:
            click.echo(_one_line(f"team vault {name}: not pulled: {team['error']}"), err=True)
        else:
            pulled, changed = team["pulled"], team["files_changed"]
            pulled, changed = plural(pulled, "commit"), plural(changed, "file")
            click.echo(f"team vault {name}: pulled {pulled}, {changed} changed")
    if not report.remote:
        click.echo("this vault is not a git repository: only its team vaults were pulled")
        return
    click.echo(
        f"synced with {report.remote}: pulled {plural(report.pulled, 'commit')},"
        f" pushed {report.pushed}, {plural(len(report.files_changed), 'file')} changed,"
        f" {plural(report.conflicts_resolved, 'conflict')} resolved ({report.duration_ms} ms)"
    )
    _echo_screening(report, "sync")


def _echo_screening(report: RemoteSyncReport, by: str) -> None:
    """On stderr, what a sync or an import (``by``) refused, repaired and held."""
    for refusal in report.refused:
        click.echo(
            _one_line(f"refused from {report.remote}: {refusal.path}: {refusal.reason}"), err=True
        )
    if report.config_changed:
        keys = ", ".join(report.config_changed)
        click.echo(_one_line(f"memoryclaw.yaml changed by the {by}: {keys}"), err=True)
    for repair in report.repaired:
        click.echo(_one_line(f"repaired {repair.path}: {repair.reason}"), err=True)
    if report.config_held:
        keys = ", ".join(held["key"] for held in report.config_held)
        click.echo(
            f"memoryclaw.yaml keys held at this device's values (the {by} changed them): {keys};"
            " review them (memoryclaw doctor) and run `memoryclaw sync --accept-config` to apply",
            err=True,
        )


@cli.command("export")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(ctx: click.Context, target: Path) -> None:
    """Write the vault's memory files to TARGET (.tar.gz)."""
    vault = _vault(ctx)
    with _step(f"writing the memory files to {target}", False):
        count = vault.export_archive(target)
    click.echo(f"exported {plural(count, 'file')} to {target}")


@cli.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def import_command(ctx: click.Context, source: Path, as_json: bool) -> None:
    """Merge an exported SOURCE (.tar.gz) into this git vault, as a sync merges."""
    vault = _vault(ctx)
    with _step(f"merging {source} into the vault (as a sync merges)", as_json):
        report = vault.import_archive(source)
    if as_json:
        _emit(report.as_dict())
        return
    click.echo(
        f"imported {source}: {plural(len(report.files_changed), 'file')} changed,"
        f" {plural(report.conflicts_resolved, 'conflict')} resolved"
    )
    _echo_screening(report, "import")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memoryclaw")


if __name__ == "__main__":  # pragma: no cover
    main()
