"""One memory by its id, or by the short handle recall shows for an episode, as a requester
may see it."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from ..index.store import Index
from ..vault.episodes import episode_handle, is_episode_handle
from ..vault.scopes import OWNER, Policy


def handle_owners(index: Index, handles: Collection[str]) -> dict[str, str]:
    """The episode id each of ``handles`` names: only a handle that exactly one indexed
    episode has, and that no memory has as its own id, names one (recall shows the full id
    of any other, so a handle it shows always reads back the same episode)."""
    if not handles:
        return {}
    tails = {h: "-" + h.removeprefix("ep-") for h in handles}
    ids = index.episode_ids_ending(set(tails.values()))
    marks = ", ".join("?" * len(tails))
    literal = {f["id"] for f in index.fact_rows(f"id IN ({marks})", list(tails))}
    owners = {}
    for handle, tail in tails.items():
        named = [i for i in ids if i.endswith(tail)]
        if len(named) == 1 and episode_handle(named[0]) == handle and handle not in literal:
            owners[handle] = named[0]
    return owners


def lookup(index: Index, ident: str, policy: Policy) -> dict[str, Any] | None:
    """The episode or fact ``ident`` (or an episode's short handle) in ``index``, if
    ``policy`` lets the requester see it."""
    found = index.episode_rows("id = ?", [ident])
    if not found and is_episode_handle(ident):
        owner = handle_owners(index, {ident}).get(ident)
        found = index.episode_rows("id = ?", [owner]) if owner else []
    rows = [r for r in found if policy.admit(r["agent"], r["scope"])[0]]
    if rows:
        row = rows[0]
        return {
            "kind": "episode",
            "id": row["id"],
            "path": row["path"],
            "timestamp": row["timestamp"],
            "summary": row["summary"],
            "tags": json.loads(row["tags"]),
            "entities": json.loads(row["entities"]),
            "details": row["details"],
            "source": row["source"],
            "source_turns": [row["turn_first"], row["turn_last"]] if row["turn_first"] else None,
            "session": row["session"],
            "confidence": row["confidence"],
            "agent": row["agent"],
            "scope": row["scope"] or OWNER,
        }
    facts = [
        f for f in index.fact_rows("id = ?", [ident]) if policy.admit(f["agent"], f["scope"])[0]
    ]
    if facts:
        fact = facts[0]
        return {"kind": "fact", **{k: fact[k] for k in fact if k != "rowid"}}
    return None
