"""The result records search returns, and how recall copies them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from memoryclaw.recall.results import EpisodeResult, FactResult, PassageHit, _evolve

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
