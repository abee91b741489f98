"""Episodes found by the kind of value their lines hold: the same answers, scoring fewer lines."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from random import Random

import pytest

from memoryclaw import Vault
from memoryclaw.index.store import Index

WORDS = ["heron", "pelican", "harbour", "ferry", "lantern", "anchor"]


def _write(root: Path, name: str, lines: list[str], day: int) -> None:
    body = "\n".join(f"- #{n} Ana: {line}" for n, line in enumerate(lines, start=1))
    (root / "episodes" / f"{name}.md").write_text(
        f"---\nid: {name}\ntimestamp: 2025-01-{day:02d}T10:00:00Z\nsummary: notes\n"
        f"tags: []\n---\n**Details:**\n{body}\n",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def mail(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    """A quarter of the lines hold an email address; the query's words are in few of them,
    rarer and commoner ones ("gull" in most lines, "osprey" in very few), some lines word for
    word alike (ties)."""
    rng = Random(11)
    with Vault.init(tmp_path_factory.mktemp("mail") / "v", env={}) as vault:
        for n in range(300):
            lines = []
            for _ in range(rng.randint(1, 4)):
                words = [rng.choice(["wave", "rope", "gull", "tide"]) for _ in range(4)]
                if rng.random() < 0.3:
                    words.append(rng.choice(WORDS[: 1 + n % len(WORDS)]))
                if rng.random() < 0.02:
                    words.append("osprey")
                if rng.random() < 0.25:
                    words.append(f"ana{rng.randrange(50)}@example.com")
                lines.append(" ".join(words))
            _write(vault.root, f"ep-{n:03d}", lines, 1 + n % 28)
        for n in range(12):
            _write(vault.root, f"ep-tie-{n:02d}", ["osprey wave ana@example.com"], 1 + n % 3)
        vault.reindex()
        yield vault


def _statements(index: Index) -> list[str]:
    seen: list[str] = []
    index.conn.set_trace_callback(seen.append)
    return seen


@pytest.mark.parametrize(
    "words",
    [
        ["osprey"],
        ["heron"],
        ["anchor"],
        ["heron", "osprey"],
        ["lantern", "ferry", "rope"],
        ["gull"],
    ],
    ids=["rarest", "rare", "rarer", "two", "three", "common"],
)
@pytest.mark.parametrize("limit", [1, 3, 10, 40], ids=["1", "3", "10", "40"])
def test_lines_holding_a_value_rank_the_query_words_first_with_the_same_answer(
    mail: Vault, words: list[str], limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines holding one of the query's own words are ranked first; when they cannot
    make the answer the whole expression is: the same files, in the same order, either way."""
    index = mail.index
    match = " OR ".join(sorted(f'"{w}"' for w in [*words, "shapeemail"]))
    found = index.files_with_values(match, ["shapeemail"], limit)
    with monkeypatch.context() as patch:
        patch.setattr(type(index), "_value_narrowing", lambda *_: None)
        assert found == index.files_with_values(match, ["shapeemail"], limit) and found


def test_rare_words_beside_a_value_kind_score_only_their_lines(mail: Vault) -> None:
    index = mail.index
    seen = _statements(index)
    index.files_with_values('"osprey" OR "shapeemail"', ["shapeemail"], 3)
    index.conn.set_trace_callback(None)
    ranked = [s for s in seen if "bm25(passages_fts" in s]
    assert len(ranked) == 1 and "+rowid IN" in ranked[0]


def _epochs(first: str, end: str) -> tuple[int, int]:
    return tuple(  # type: ignore[return-value]
        int(datetime.fromisoformat(f"{day}T00:00:00+00:00").timestamp()) for day in (first, end)
    )


PERIODS = {
    "a-day": ("2025-01-05", "2025-01-06"),
    "a-week": ("2025-01-08", "2025-01-15"),
    "the-month": ("2025-01-01", "2025-02-01"),
    "a-year": ("2025-01-01", "2026-01-01"),
}


@pytest.mark.parametrize("period", list(PERIODS), ids=list(PERIODS))
@pytest.mark.parametrize(
    "words", [["osprey"], ["gull"], ["heron", "tide"]], ids=["rare", "common", "two"]
)
@pytest.mark.parametrize(
    "visible", [None, ("e.path < ?", ["episodes/ep-150"])], ids=["all", "some-visible"]
)
def test_a_period_s_episodes_are_the_same_whether_the_period_or_the_words_lead(
    mail: Vault,
    period: str,
    words: list[str],
    visible: tuple[str, list[str]] | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A period holding fewer episodes than the words match is read by its dates first; the
    best episodes of it are the same files, in the same order (ties by date, then id)."""
    index = mail.index
    match = " OR ".join(f'"{w}"' for w in words)
    span = _epochs(*PERIODS[period])
    answers = []
    for fewer in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(type(index), "_fewer_dated", lambda *_, fewer=fewer: fewer)
            answers.append(index.files_dated(match, span, 5, visible, archived=False))
    assert answers[0] == answers[1]
    assert answers[0] or (period == "a-day" and words == ["osprey"])  # in few lines


@pytest.mark.parametrize(
    ("words", "period", "by_date"),
    [(["gull"], "a-day", True), (["osprey"], "a-year", False)],
    ids=["a-common-word-on-a-day", "a-rare-word-in-a-year"],
)
def test_the_smaller_of_a_period_and_the_matches_leads_a_dated_search(
    mail: Vault, words: list[str], period: str, by_date: bool
) -> None:
    index = mail.index
    seen = _statements(index)
    found = index.files_dated(" OR ".join(f'"{w}"' for w in words), _epochs(*PERIODS[period]), 5)
    index.conn.set_trace_callback(None)
    ranked = [s for s in seen if "bm25(episodes_fts" in s]
    assert found and len(ranked) == 1
    assert ("+rowid IN (SELECT rowid FROM episodes WHERE ts_epoch" in ranked[0]) is by_date
