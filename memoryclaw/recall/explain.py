"""Why each result is there: the query's words it matched, and for a memory the recall rules
kept out, the rule's reason."""

from __future__ import annotations

from typing import Any

from ..index.store import Index
from ..vault.scopes import Policy
from .plan import QueryPlan
from .results import EpisodeResult, SearchResult, Withheld, _evolve


def _explain(index: Index, plan: QueryPlan, episodes: list[EpisodeResult]) -> list[EpisodeResult]:
    """Fill in the keywords matched by the results that do not list any yet, and the details
    of those found without them (a search hit is read without its details)."""
    unexplained = [e.id for e in episodes if not e.matched] if plan.phrases else []
    bare = [e.id for e in episodes if not e.details]
    if not unexplained and not bare:
        return episodes
    shown = index.shown_episodes(list(dict.fromkeys([*unexplained, *bare])))
    matched: dict[int, list[str]] = {}
    if unexplained:
        rowids = [shown[ident][0] for ident in unexplained if ident in shown]
        matched = index.terms_matching("episodes", rowids, plan.phrases)
    out = []
    for e in episodes:
        changes: dict[str, Any] = {}
        rowid, details = shown.get(e.id, (-1, ""))
        if not e.matched and plan.phrases:
            changes["matched"] = tuple(matched.get(rowid, []))
        if not e.details:
            changes["details"] = details
        out.append(_evolve(e, **changes) if changes else e)
    return out


def withheld_from(everything: SearchResult, policy: Policy) -> tuple[Withheld, ...]:
    """What of an unrestricted search ``policy`` keeps out, each with the rule's reason."""
    out: list[Withheld] = []
    for e in everything.results:
        admitted, reason = policy.admit(e.agent, e.scope)
        if not admitted:
            out.append(
                Withheld("episode", e.id, e.path, e.summary, e.agent, e.scope, reason, e.vault)
            )
    for f in everything.facts:
        admitted, reason = policy.admit(f.agent, f.scope)
        if not admitted:
            text = f.render()
            out.append(Withheld("fact", f.id, f.path, text, f.agent, f.scope, reason, f.vault))
    for p in everything.passages:
        admitted, reason = policy.admit(p.agent, p.scope)
        if not admitted:
            ident = f"{p.episode_id}#{p.turn}" if p.turn is not None else p.episode_id
            text = f"{p.speaker}: {p.text}" if p.speaker else p.text
            out.append(Withheld("passage", ident, p.path, text, p.agent, p.scope, reason, p.vault))
    return tuple(out)
