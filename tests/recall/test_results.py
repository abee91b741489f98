"""The result records search returns, and how recall copies them."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pytest

from memoryclaw.recall.results import EpisodeResult, FactResult, PassageHit, _evolve
from memoryclaw.vault.scopes import RecallContext

EPISODE = EpisodeResult(
    id="ep-1",
    path="episodes/a.md",
    summary="Ann called Bob",
    tags=("call",),
    timestamp="2025-01-01T10:00:00Z",
    score=2.5,
    matched=("call",),
    exact_tags=(),
    via="keyword",
    source=None,
    source_turns=(1, 4),
    session="s",
)
PASSAGE = PassageHit(
    path="episodes/a.md",
    episode_id="ep-1",
    turn=3,
    line=5,
    speaker="Ann",
    text="call me",
    timestamp="2025-01-01T10:00:00Z",
    score=1.5,
    matched=("call",),
    via="keyword",
    episode_tags=("call",),
)
FACT = FactResult(
    id="f-1",
    entity="Ann",
    field="phone",
    value="+1 555 0100",
    path="semantic/contacts.md",
    line=3,
    updated="2025-01-01",
    age_days=10,
    confidence="high",
    source="ep-1",
    matched=("phone",),
)


@pytest.mark.parametrize(
    ("result", "changes"),
    [
        (EPISODE, {"relevance": 0.5, "admitted_by": "owner"}),
        (EPISODE, {"details": "all of it"}),
        (PASSAGE, {"line": 6, "text": "sure", "score": 0.0, "matched": ()}),
        (FACT, {"relevance": 0.25}),
        (PASSAGE, {}),
    ],
    ids=["episode", "episode-details", "passage", "fact", "no-change"],
)
def test_a_copy_with_changes_is_what_dataclasses_replace_makes(
    result: EpisodeResult | PassageHit | FactResult, changes: dict[str, Any]
) -> None:
    before = dataclasses.astuple(result)
    copy = _evolve(result, **changes)
    assert copy == dataclasses.replace(result, **changes)
    assert hash(copy) == hash(dataclasses.replace(result, **changes))
    assert type(copy) is type(result) and copy is not result
    assert dataclasses.astuple(result) == before  # the original is left as it was
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.score = 9.0  # type: ignore[misc]


def test_a_copy_refuses_a_field_the_result_does_not_have() -> None:
    with pytest.raises(TypeError, match="no field 'relevence'"):
        _evolve(PASSAGE, relevence=0.5)


def _live(vault: Any, session: str, text: str, day: str) -> None:
    at = datetime.fromisoformat(f"{day}T10:00:00+00:00")
    vault.log_turn(session, "user", text, timestamp=at)
    vault.log_turn(session, "assistant", "Noted.", timestamp=at + timedelta(seconds=5))
    vault.end_session(session)
    vault.consolidate(all_logs=True, now=at + timedelta(hours=1))


def test_a_newer_value_waiting_for_review_is_shown_beside_the_fact(empty_vault: Any) -> None:
    """A conflict is not filed over the current value (it waits in _pending.md), but the
    model is told it was said, and when; approved, the fact says what it replaced; a
    context that may not see the conflict is not told it."""
    life = empty_vault.root / "semantic" / "life.md"
    life.write_text("# Life\n\n- User (lives in): Lisbon\n", encoding="utf-8")  # owner-level
    _live(empty_vault, "agent:main:main", "I live in Porto now.", "2026-11-01")
    [fact] = [f for f in empty_vault.search("where do I live").facts if f.field == "lives in"]
    assert (fact.value, fact.newer, fact.newer_since) == ("Lisbon", "Porto", "2026-11-01")
    assert fact.as_dict()["newer"] == "Porto"
    payload = empty_vault.retrieve("where do I live?").context
    assert "lives in Lisbon (" in payload
    assert "(newer value waiting for review: Porto, said 1 November 2026)" in payload
    # said to agent main, the newer value is not told to agent ops, which sees the hand line
    ops = RecallContext(session="agent:ops:main")
    [seen] = empty_vault.search("where do I live", context=ops).facts
    assert (seen.value, seen.newer) == ("Lisbon", None)
    [entry] = empty_vault.pending()
    empty_vault.approve_pending(entry.id)
    [fact] = [f for f in empty_vault.search("where do I live").facts if f.field == "lives in"]
    assert (fact.value, fact.newer, fact.was) == ("Porto", None, "Lisbon")


@pytest.mark.parametrize(
    ("entity", "field", "value", "shown"),
    [
        ("note", "note", "Our wifi password is in the blue notebook", "Our wifi password is"),
        ("Home", "note", "Boiler serviced in May", "Home: Boiler serviced in May"),
        ("Bin day", "value", "Thursday", "Bin day: Thursday"),
        ("Ann", "phone", "+1 555 0100", "Ann phone +1 555 0100"),
    ],
    ids=["before-any-heading", "under-a-heading", "key-and-value", "field"],
)
def test_a_fact_renders_with_the_name_it_was_written_under(
    entity: str, field: str, value: str, shown: str
) -> None:
    """A line written before any heading names nobody: it is shown as written, without the
    parser's placeholder ("note: …")."""
    rendered = dataclasses.replace(FACT, entity=entity, field=field, value=value).render()
    assert rendered.startswith(shown), rendered
