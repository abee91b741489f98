"""What consolidation will file of the owner, read before it runs.

A turn the owner said ("I'm 34 now and I work as a nurse") becomes facts only when its log
is consolidated; until then, what they said of themselves is read from the index's rows of
raw logs by the same rules (:func:`.extraction.facts_from_turn`), so that ``profile`` and
"what do you know about me?" show it from the next turn on, marked as not yet consolidated.
Only what consolidation will file as a fact: not a turn or a fact that was forgotten (a
tombstone, :mod:`memoryclaw.vault.tombstones`, drops it there), nor a doubtful value it holds
in ``_pending.md`` for review (:func:`.filing.doubtful`: "call the restaurant at 020 …" is
nobody's phone number until the owner says whose).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ..index.store import Index
from ..recall.aboutowner import owner_asks
from ..recall.results import FactResult
from ..recall.standing import owner_turns
from ..vault.config import ConsolidationSettings
from ..vault.factnames import OWNER_ENTITY
from ..vault.facts import format_fact_line
from ..vault.scopes import Policy
from ..vault.timestamps import parse_timestamp
from ..vault.tombstones import Tombstones
from ..vault.values import value_key
from .extraction import FactDraft, facts_from_turn
from .filing import doubtful


def pending_owner_facts(
    index: Index,
    policy: Policy,
    now: datetime,
    live: Callable[[str], bool] | None = None,
    *,
    forgotten: Tombstones | None = None,
    rules: ConsolidationSettings | None = None,
) -> list[FactResult]:
    """What the owner said of themselves in the turns consolidation will read as theirs
    (:func:`~memoryclaw.recall.standing.owner_turns`), as it will file it (without what
    ``forgotten`` holds, nor what ``rules`` hold for review); each value once, newest first.
    None where other people read, and none from the asking session's raw logs that ``live``
    (given a path) says are open: its host sends those as the conversation."""
    if not owner_asks(policy):
        return []
    forgotten = forgotten or Tombstones()
    found: dict[tuple[str, str], FactResult] = {}
    for row in owner_turns(index, policy):
        stamp, text = str(row["timestamp"] or ""), str(row["text"] or "")
        if not stamp or (forgotten and forgotten.line(text)):
            continue  # a turn forgotten since it was indexed is blanked by consolidation
        if live is not None and row["session"] == policy.context.session and live(row["path"]):
            continue
        try:
            said_at = parse_timestamp(stamp)
        except ValueError:
            continue  # a time the index holds in a form it cannot read: no day to date it
        drafts = facts_from_turn(int(row["turn"] or 0), text, None, said_at.date())
        for n, draft in enumerate(drafts, 1):
            key = (draft.field, value_key(draft.value))
            if draft.entity != OWNER_ENTITY or key in found:
                continue  # somebody else's, or said again since
            if _not_filed(draft, forgotten, rules):
                continue
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


def _not_filed(
    draft: FactDraft, forgotten: Tombstones, rules: ConsolidationSettings | None
) -> bool:
    """Whether consolidation files ``draft`` elsewhere than among the facts, or not at all:
    held for review, or its line forgotten (``forget`` of a fact tombstones its line, not
    the turns that said it)."""
    if rules is not None and rules.pending_review and doubtful(draft, rules):
        return True
    return bool(forgotten) and forgotten.line(
        format_fact_line(draft.entity, draft.field, draft.value)
    )


def with_pending(facts: Sequence[FactResult], pending: Sequence[FactResult]) -> list[FactResult]:
    """``facts`` (consolidated, in file order) with the ``pending`` ones after them that they
    do not hold already; a new value of a field stands beside the old one, as consolidation
    will hold it for review."""
    known = {(f.field, value_key(f.value)) for f in facts if f.entity == OWNER_ENTITY}
    return [*facts, *(f for f in pending if (f.field, value_key(f.value)) not in known)]
