"""``memoryclaw profile``: what the owner said of themselves, and the standing instructions and
preferences in force."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..vault.factnames import UNNAMED_FIELDS
from ._common import _context, _context_options, _emit, _one_line, _vault

if TYPE_CHECKING:
    from ..recall.results import FactResult
    from ..recall.standing import StandingFact


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
    """What the owner said of themselves, and the standing instructions and preferences in
    force (as that context would see them)."""
    vault = _vault(ctx)
    context = _context(agent, session_key, kind)
    about = vault.about_owner(context=context)
    found = vault.profile(context=context)
    if as_json:
        _emit({"about": [f.as_dict() for f in about], "standing": [f.as_dict() for f in found]})
        return
    if not found and not about:
        click.echo("nothing about you, no standing instructions or preferences")
        return
    if about:
        click.echo("about you:")
    for fact in about:
        head = fact.entity if fact.field in UNNAMED_FIELDS else f"{fact.entity} ({fact.field})"
        click.echo(_one_line(f"- {head}: {fact.value}"))
        click.echo(_where(fact))
    for kind_name in ("instruction", "preference"):
        rows = [f for f in found if f.kind == kind_name]
        if rows:
            click.echo(f"{kind_name}s:")
        for standing in rows:
            topic = f" [about {standing.topic}]" if standing.topic else ""
            click.echo(_one_line(f"- {standing.value}{topic}"))
            click.echo(_where(standing))


def _where(item: FactResult | StandingFact) -> str:
    """The line under a listed item: its date and where it is said."""
    if item.pending:  # its line is to come, when the log is consolidated
        return f"    {item.updated or '-'}  {item.path}, turn {item.line}, not yet consolidated"
    return f"    {item.updated or '-'}  {item.path}:{item.line}  ({item.id})"
