"""Recall: ``search`` and ``retrieve``, the commands an agent runs before it answers."""

from __future__ import annotations

import sys

import click

from ..recall.plan import check_query
from ..recall.results import SearchResult
from ..vault.files import is_archived
from ..vault.inputs import require_text
from ._common import _as_text, _context, _context_options, _emit, _one_line, _vault


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


@click.command("search")
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


@click.command()
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
