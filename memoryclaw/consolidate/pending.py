"""What consolidation will file of the owner, read before it runs.

A turn the owner said ("I'm 34 now and I work as a nurse") becomes facts only when its log
is consolidated; until then, what they said of themselves is read from the index's rows of
raw logs by the same rules (:func:`.extraction.facts_from_turn`), so that ``profile`` and
"what do you know about me?" show it from the next turn on, marked as not yet consolidated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ..index.store import Index
from ..recall.aboutowner import owner_asks
from ..recall.results import FactResult
from ..recall.standing import owner_turns
from ..vault.factnames import OWNER_ENTITY
from ..vault.scopes import Policy
from ..vault.timestamps import parse_timestamp
from ..vault.values import value_key
from .extraction import facts_from_turn


def pending_owner_facts(
    index: Index, policy: Policy, now: datetime, live: Callable[[str], bool] | None = None
) -> list[FactResult]:
    """What the owner said of themselves in the turns consolidation will read as theirs
    (:func:`~memoryclaw.recall.standing.owner_turns`), as it will file it; each value once,
    newest first.  None where other people read, and none from the asking session's raw logs
    that ``live`` (given a path) says are open: its host sends those as the conversation."""
    if not owner_asks(policy):
        return []
    found: dict[tuple[str, str], FactResult] = {}
    for row in owner_turns(index, policy):
        stamp = str(row["timestamp"] or "")
        if not stamp:
            continue
        if live is not None and row["session"] == policy.context.session and live(row["path"]):
            continue
        said_at = parse_timestamp(stamp)
        drafts = facts_from_turn(
            int(row["turn"] or 0), str(row["text"] or ""), None, said_at.date()
        )
        for n, draft in enumerate(drafts, 1):
            key = (draft.field, value_key(draft.value))
            if draft.entity != OWNER_ENTITY or key in found:
                continue  # somebody else's, or said again since
            found[key] = FactResult(
                id=f"{row['path']}#{row['turn']}.{n}",
                entity=OWNER_ENTITY,
                field=draft.field,
                value=draft.value,
                path=str(row["path"]),
                line=int(row["turn"] or 0),
                updated=stamp[:10],
                age_days=max(0, (now - said_at).days),
                confidence=draft.confidence,
                source=str(row["path"]),
                matched=(),
                agent=row["agent"] or None,
                scope=row["scope"] or None,
                admitted_by=policy.admit(row["agent"], row["scope"])[1],
                pending=True,
            )
    return list(found.values())


def with_pending(facts: Sequence[FactResult], pending: Sequence[FactResult]) -> list[FactResult]:
    """``facts`` (consolidated, in file order) with the ``pending`` ones after them that they
    do not hold already; a new value of a field stands beside the old one, as consolidation
    will hold it for review."""
    known = {(f.field, value_key(f.value)) for f in facts if f.entity == OWNER_ENTITY}
    return [*facts, *(f for f in pending if (f.field, value_key(f.value)) not in known)]
