"""``memoryclaw profile``: the standing instructions and preferences in force."""

from __future__ import annotations

import click

from ._common import _context, _context_options, _emit, _one_line, _vault


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@_context_options
@click.pass_context
def profile(
    ctx: click.Context,
    as_json: bool,
    agent: str | None,
    session_key: str | None,
    kind: str | None,
) -> None:
    """The standing instructions and preferences in force (as that context would see them)."""
    found = _vault(ctx).profile(context=_context(agent, session_key, kind))
    if as_json:
        _emit({"standing": [f.as_dict() for f in found]})
        return
    if not found:
        click.echo("no standing instructions or preferences")
        return
    for kind_name in ("instruction", "preference"):
        rows = [f for f in found if f.kind == kind_name]
        if rows:
            click.echo(f"{kind_name}s:")
        for fact in rows:
            topic = f" [about {fact.topic}]" if fact.topic else ""
            click.echo(_one_line(f"- {fact.value}{topic}"))
            if fact.pending:  # its line is to come, when the log is consolidated
                where = f"{fact.path}, turn {fact.line}, not yet consolidated"
                click.echo(f"    {fact.updated or '-'}  {where}")
            else:
                click.echo(f"    {fact.updated or '-'}  {fact.path}:{fact.line}  ({fact.id})")
