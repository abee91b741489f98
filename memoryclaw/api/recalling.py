"""Recall through the facade: searches with the team vaults merged in, the hook payload, and
reading one memory or file, as the requester may see them."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError, NotFoundError
from ..recall import metrics as recall_metrics
from ..recall.explain import withheld_from
from ..recall.lookup import handle_owners, lookup
from ..recall.recency import effective_weight
from ..recall.results import SearchResult
from ..recall.retrieval import VectorFallback, passage_neighbours, search
from ..recall.usage import note_recalled, recall_times, recalled_ids
from ..share.teams import merge, owner_of, qualify, readable, team_neighbours
from ..vault.episodes import episode_handle
from ..vault.files import read_text, resolve_inside, safe_relpath
from ..vault.scopes import Policy, RecallContext
from ..vault.timestamps import now_utc
from .opening import writable

if TYPE_CHECKING:
    from ..recall.payload import RetrievePayload
    from ..recall.results import FactResult
    from ..recall.standing import StandingFact
    from ..vault.tombstones import Tombstones
    from .vault import Vault

_NEIGHBOURS_OF = 20  # the best passages whose neighbouring lines may come along
READ_DEFAULT_LINES = 200


def _without_live_turns(root: Path, result: SearchResult, session: str) -> SearchResult:
    """``result`` without the turns of ``session``'s open log: a host that names its session
    sends those turns as the conversation's history, and quoted again they only take room.
    The session's earlier logs (closed, not yet consolidated) stay: its history is new."""
    logs = [(p.path, p.session) for p in result.passages if p.via == "log" and p.vault is None]
    live = _live_logs(root, logs, session)
    if not live:
        return result
    kept = tuple(p for p in result.passages if p.vault is not None or p.path not in live)
    return dataclasses.replace(result, passages=kept)


def _live_logs(root: Path, logs: Iterable[tuple[str, str | None]], session: str) -> set[str]:
    """Of ``logs`` (path and session of each), the paths that are ``session``'s open log:
    the turns its host still holds as the conversation's history."""
    from ..vault.rawlogs import is_open_log  # a recall without a session reads no log

    return {rel for rel in {p for p, s in logs if s == session} if is_open_log(root, rel)}


def _skipped(query: str, budget: int, reason: str) -> RetrievePayload:
    """The payload of a query recall did not run for: nothing to inject, and why."""
    from ..recall.payload import RetrievePayload

    memory = {"goal": query, "plan": [], "facts": {}, "recent_observations": []}
    return RetrievePayload(
        query=query,
        context="",
        working_memory={**memory, "active_skill": None},
        tokens=0,
        budget=budget,
        episodes=(),
        facts=(),
        skipped=reason,
    )


def search_with_teams(
    vault: Vault,
    query: str,
    *,
    limit: int | None = None,
    now: datetime | None = None,
    refresh: bool = True,
    context: RecallContext | None = None,
    explain_scope: bool = False,
    include_archived: bool = False,
    breadth: bool = False,
) -> SearchResult:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.search`; with ``breadth``, the own
    vault's lines rank without their episode's share (a summary's)."""
    if refresh:
        vault.refresh()
    policy = vault.policy(context)
    archived = include_archived
    result = search_index(
        vault,
        query,
        limit=limit,
        now=now,
        vectors=True,
        policy=policy,
        archived=archived,
        breadth=breadth,
    )
    result = _with_teams(vault, result, query, limit, now, policy, archived)
    if explain_scope:
        everything = search_index(
            vault, query, limit=limit, now=now, vectors=True, policy=None, archived=archived
        )
        everything = _with_teams(vault, everything, query, limit, now, None, archived)
        result = dataclasses.replace(result, withheld=withheld_from(everything, policy))
    return result


def _with_teams(
    vault: Vault,
    own: SearchResult,
    query: str,
    limit: int | None,
    now: datetime | None,
    policy: Policy | None,
    archived: bool,
) -> SearchResult:
    """``own`` with the team vaults' results for ``query`` merged in (after it on ties)."""
    if not vault.settings.shared_vaults:
        return own
    limit = vault.settings.retrieval.max_results if limit is None else limit
    theirs = [
        team.search(
            query,
            limit=limit,
            now=now or now_utc(),
            policy=policy,
            archived=archived,
            recency=vault.settings.retrieval.recency,
        )
        for team in readable(vault.teams)
    ]
    return merge(own, theirs, limit)


def search_index(
    vault: Vault,
    query: str,
    *,
    limit: int | None,
    now: datetime | None,
    vectors: bool,
    policy: Policy | None = None,
    archived: bool = True,
    breadth: bool = False,
) -> SearchResult:
    """The own vault's ranked results for ``query``, with the vector fallback when ``vectors``
    (``breadth``: see :func:`~memoryclaw.recall.retrieval.search`)."""
    limit = vault.settings.retrieval.max_results if limit is None else limit
    if limit < 0:
        raise InvalidInputError("limit", f"must be >= 0, got {limit}")
    settings = vault.settings.retrieval
    fallback = None
    if vectors and settings.fallback == "vector":
        fallback = VectorFallback(
            vault._nearest,
            settings.min_primary_results,
            settings.blend_strategy,
            lines=vault._nearest_lines,
        )
    recalled: Mapping[str, datetime] = {}
    if effective_weight(settings.recency.weight, query) > 0:
        recalled = recall_times(vault.root, vault.index)  # use reinforces: when recency ranks
    with vault.index.read_once():
        return search(
            vault.index,
            query,
            limit=limit,
            now=now or now_utc(),
            fallback=fallback,
            policy=policy,
            include_archived=archived,
            recency=settings.recency,
            recalled=recalled,
            breadth=breadth,
        )


def retrieve(
    vault: Vault,
    query: str,
    *,
    now: datetime | None = None,
    refresh: bool = True,
    context: RecallContext | None = None,
    working: Mapping[str, Any] | None = None,
) -> RetrievePayload:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.retrieve`."""
    from ..recall.aboutowner import is_about_owner
    from ..recall.longview import LONG_VIEW_EPISODES, STANDING_SHARE, long_view
    from ..recall.payload import render_payload
    from ..recall.standing import BUDGET_SHARE, with_standing
    from ..recall.trivial import is_trivial
    from ..vault.factnames import STANDING_FIELDS

    budget = vault.settings.retrieval.budget_tokens
    if is_trivial(query):
        skipped = _skipped(query, budget, "trivial")
        _record(vault, skipped, now or now_utc())
        return skipped
    view = long_view(query)  # a question about a whole stretch of history: a timeline
    topic = view.topic if view is not None else query
    wide = LONG_VIEW_EPISODES if view is not None else None
    # a summary draws on many episodes, an order on each conversation (.timeline): only a
    # summary's lines rank without their episode's share
    broad = view is not None and view.kind != "order"
    result = search_with_teams(
        vault, topic, limit=wide, now=now, refresh=refresh, context=context, breadth=broad
    )
    if context is not None and context.session:
        result = _without_live_turns(vault.root, result, context.session)
    if view is None and is_about_owner(query):  # no topic to search: the owner's own facts
        mine = _owner_facts(vault, context, now or now_utc())
        ids = {f.id for f in mine}
        result = dataclasses.replace(
            result, facts=(*mine, *(f for f in result.facts if f.id not in ids))
        )
    from ..vault.skillfiles import active_skill

    skill = active_skill(vault.root, result.plan.keywords)
    top = result.passages[:_NEIGHBOURS_OF]
    near = passage_neighbours(vault.index, [p for p in top if p.vault is None])
    near.update(team_neighbours(vault.teams, [p for p in top if p.vault is not None]))
    shown = {e.id for e in result.results}
    shown |= {p.episode_id for p in result.passages if p.via != "log"}
    handles = {i: h for i in shown if (h := episode_handle(i)) is not None}
    owners = handle_owners(vault.index, set(handles.values()))
    names = {i: h for i, h in handles.items() if owners.get(h) == i}
    min_score = vault.settings.retrieval.min_score
    if view is not None:
        # a long view's standing instructions and preferences are its smaller section's to
        # show (``STANDING_SHARE``): as facts they would take back the room it leaves
        kept = tuple(f for f in result.facts if f.field not in STANDING_FIELDS)
        result = dataclasses.replace(result, facts=kept)
    payload = with_standing(
        lambda res, room: render_payload(
            res, room, skill, near, names, min_score=min_score, working=working, view=view
        ),
        result,
        budget,
        standing_in_force(vault, context),
        share=STANDING_SHARE if view is not None else BUDGET_SHARE,
    )
    _record(vault, payload, now or now_utc())
    return payload


def standing_in_force(vault: Vault, context: RecallContext | None) -> list[StandingFact]:
    """The standing instructions and preferences in force for ``context``, newest first:
    those consolidated (:func:`~memoryclaw.recall.standing.in_force`) and those the owner
    said in turns not yet consolidated, but for the turns of ``context``'s open log: its
    host sends those as the conversation itself (see :func:`_without_live_turns`), and
    for what was forgotten, which consolidation will not file (``forget`` of a fact
    tombstones its line, not the turns that said it)."""
    from ..recall.standing import in_force, recent_turns

    policy = vault.policy(context)
    found = in_force(vault.index, policy)
    turns = recent_turns(vault.index, policy)
    if turns and context is not None and context.session:
        logs = [(t["path"], t["session"]) for t in turns]
        live = _live_logs(vault.root, logs, context.session)
        turns = [t for t in turns if t["path"] not in live]
    if not turns:
        return found
    from ..consolidate.standing import with_recent
    from ..vault.facts import format_fact_line

    forgotten = forgotten_so_far(vault)
    if not forgotten:
        return with_recent(found, turns)
    turns = [t for t in turns if not forgotten.line(str(t["text"] or ""))]
    return [
        f
        for f in with_recent(found, turns)
        if not (f.pending and forgotten.line(format_fact_line(f.entity, f.kind, f.value)))
    ]


def about_owner(vault: Vault, context: RecallContext | None) -> list[FactResult]:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.about_owner`."""
    from ..recall.standing import in_force
    from ..vault.factnames import STANDING_FIELDS

    # those said since are no line of a file: only those in force there share a fact's id
    standing = {f.id for f in in_force(vault.index, vault.policy(context))}
    facts = _owner_facts(vault, context, now_utc())
    return [f for f in facts if f.field not in STANDING_FIELDS and f.id not in standing]


def _owner_facts(vault: Vault, context: RecallContext | None, now: datetime) -> list[FactResult]:
    """The facts about the owner ``context`` may see (:func:`~memoryclaw.recall.aboutowner.
    owner_facts`), with what they said of themselves since, not yet consolidated."""
    from ..consolidate.pending import pending_owner_facts, with_pending
    from ..recall.aboutowner import owner_facts
    from ..vault.rawlogs import is_open_log

    policy = vault.policy(context)
    live = functools.partial(is_open_log, vault.root) if context and context.session else None
    rules = vault.settings.consolidation
    pending = pending_owner_facts(
        vault.index, policy, now, live, forgotten=forgotten_so_far(vault), rules=rules
    )
    return with_pending(owner_facts(vault.index, policy, now), pending)


def forgotten_so_far(vault: Vault) -> Tombstones:
    """``vault``'s tombstones, read again only when a forget (here, or synced from another
    device) has added a file: each forget writes a file of its own, never edited after."""
    from ..vault.tombstones import forgets_so_far, load

    names = forgets_so_far(vault.root)
    if vault._forgotten is None or vault._forgotten[0] != names:
        vault._forgotten = (names, load(vault.root))
    return vault._forgotten[1]


def _record(vault: Vault, payload: RetrievePayload, now: datetime) -> None:
    """Count the retrieve in the recall metrics (:mod:`memoryclaw.recall.metrics`) and note the
    episodes ``payload`` put before the model as recalled
    (:mod:`memoryclaw.consolidate.archive`),
    each once a day per process; one lock for both, never failing the recall."""
    if not writable(vault.root / recall_metrics.METRICS_FILE):
        return  # a vault that cannot be written
    # a team vault's memories are its own business: nothing of theirs is noted here
    quoted = (p.episode_id for p in payload.passages if p.via != "log" and p.vault is None)
    idents = recalled_ids((e.id for e in payload.episodes if e.vault is None), quoted)
    day = now.date().isoformat()
    fresh = [i for i in idents if vault._noted.get(i, "") < day]
    counts = None
    if vault.settings.metrics.keep_days > 0:
        stood_for = vault.index.source_chars(idents) if idents else {}
        counts = recall_metrics.recall_counts(
            payload, stood_for, vault.settings.retrieval.min_score
        )
    recall_metrics.record(vault.root, now, vault.settings.metrics.keep_days, counts)
    if fresh and note_recalled(vault.root, vault.index, fresh, now):
        vault._noted.update((i, day) for i in fresh)


def get(vault: Vault, ident: str, *, context: RecallContext | None = None) -> dict[str, Any]:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.get`."""
    policy = vault.policy(context)
    found_in = owner_of(ident, vault.teams)
    if found_in is not None:
        team, rest = found_in
        if team.problem() is not None:
            raise NotFoundError("memory", ident)
        team.refresh()
        memory = lookup(team.index, rest, policy)
        if memory is None:
            raise NotFoundError("memory", ident)
        for key in ("id", "path", "source"):
            if memory.get(key):
                memory[key] = qualify(team.name, memory[key])
        return {"vault": team.name, **memory}
    vault.refresh()
    memory = lookup(vault.index, ident, policy)
    if memory is None:
        raise NotFoundError("memory", ident)
    return memory


def read(
    vault: Vault,
    path: str,
    start: int = 1,
    lines: int | None = None,
    *,
    context: RecallContext | None = None,
) -> dict[str, Any]:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.read`."""
    if start < 1 or (lines is not None and lines < 1):
        raise InvalidInputError("from" if start < 1 else "lines", "must be 1 or more")
    root, shown, rel, index = vault.root, None, path, None
    found_in = owner_of(path, vault.teams)
    if found_in is not None:
        team, rel = found_in
        if team.problem() is not None:
            raise NotFoundError("vault file", path)
        root, shown = team.root, team.name
    if not resolve_inside(root, rel).is_file():
        raise NotFoundError("vault file", path)
    if context is not None and not context.is_terminal:
        if found_in is not None:
            found_in[0].refresh()
            index = found_in[0].index
        else:
            vault.refresh()
            index = vault.index
        marks = index.memory_marks(safe_relpath(rel))
        policy = vault.policy(context)
        if not marks or not all(policy.admit(a, s)[0] for a, s in marks):
            raise NotFoundError("vault file", path)
    text = read_text(root, rel)
    all_lines = text.splitlines()
    count = READ_DEFAULT_LINES if lines is None else lines
    chosen = all_lines[start - 1 : start - 1 + count]
    end = start - 1 + len(chosen)
    result: dict[str, Any] = {
        "path": safe_relpath(rel) if shown is None else qualify(shown, safe_relpath(rel)),
        "text": "\n".join(chosen),
        "from": start,
        "lines": len(chosen),
        "total_lines": len(all_lines),
        "truncated": end < len(all_lines),
    }
    if end < len(all_lines):
        result["next_from"] = end + 1
    return result
