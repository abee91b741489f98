"""The long view's payload: a dated timeline, one line per episode, oldest first, within
the budget."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.api.recalling import search_with_teams
from memoryclaw.recall.lines import PASSAGE_CHARS
from memoryclaw.recall.longview import LONG_VIEW_EPISODES, STANDING_SHARE, long_view
from memoryclaw.recall.payload import estimate_tokens, render_payload
from memoryclaw.recall.results import PassageHit
from memoryclaw.recall.standing import LABEL
from memoryclaw.recall.timeline import TIMELINE_CHARS, timeline, timeline_label

from ..conftest import NOW
from ..consolidate.test_standing import standing_section

# Written out of date order, and more of them than a detailed answer draws from (5).
_GARDEN = [
    (5, "I harvested the first garden tomatoes and gave some to Lena"),
    (1, "I dug two new garden beds behind the shed"),
    (7, "I put the garden to sleep for winter with straw over the beds"),
    (3, "I planted tomatoes and basil in the garden beds"),
    (2, "I bought compost for the garden at the market"),
    (6, "I pulled the dead garden plants after the frost"),
    (4, "I set up a drip line so the garden waters itself"),
]


def _episode(root: Path, day: int, *lines: str) -> str:
    ident = f"ep-2025010{day}-100000-0000000{day}"
    body = "".join(f"- #{n} User: {line}\n" for n, line in enumerate(lines, 1))
    (root / "episodes" / f"2025-01-0{day}_10-00-00_x{day}.md").write_text(
        f"---\nid: {ident}\ntimestamp: 2025-01-0{day}T10:00:00Z\nsummary: day {day} notes\n"
        f"session: s{day}\n---\n" + body,
        encoding="utf-8",
    )
    return ident


def test_an_order_question_gets_one_dated_line_per_episode_oldest_first(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        for day, line in _GARDEN:
            # each episode has a second garden line: still one line of it is shown
            _episode(vault.root, day, line, f"The garden needed water on day {day} too")
        _episode(vault.root, 8, "I called the bank about my mortgage")
        payload = vault.retrieve("In what order did I work on the garden?", now=NOW)
    lines = payload.context.splitlines()
    label = timeline_label("the question asks for an order")
    assert label == "Timeline (the question asks for an order): one line per episode, oldest first."
    start = lines.index(label)
    entries = lines[start + 1 : start + 8]
    rest = lines[start + 8 :]
    assert [e.split(" ep-")[0] for e in entries] == [
        f"- {day} January 2025" for day in range(1, 8)
    ]  # every garden episode, by date, none twice, the bank call not at all
    assert all(" User: " in e and "garden" in e for e in entries)  # a line of each, quoted
    # the room left holds detail: the episodes' other lines, none of the timeline's again
    assert not any(r.startswith("- ") and " January 2025 " in r for r in rest)
    assert all(payload.context.count(line) == 1 for _, line in _GARDEN)
    quoted = [(p.path, p.line) for p in payload.passages]
    assert len(quoted) == len(set(quoted)) >= 7 and payload.tokens <= payload.budget


def test_a_detail_question_gets_detailed_lines_not_a_timeline(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        for day, line in _GARDEN:
            _episode(vault.root, day, line)
        payload = vault.retrieve("What did I plant in the garden beds?", now=NOW)
    assert "Timeline (" not in payload.context
    assert "planted tomatoes and basil" in payload.context


def test_an_order_spans_the_conversations_before_dwelling_on_one(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        for day in (1, 2, 3):  # one conversation, all about the garden
            _episode(vault.root, day, f"garden garden the garden {day}")
        (vault.root / "episodes" / "2025-01-04_10-00-00_y.md").write_text(
            "---\nid: ep-other\ntimestamp: 2025-01-04T10:00:00Z\nsummary: notes\nsession: s2\n"
            "---\n- #1 User: the garden came up once among many other things we did\n",
            encoding="utf-8",
        )
        for day in (1, 2, 3):
            path = next((vault.root / "episodes").glob(f"2025-01-0{day}_*.md"))
            path.write_text(path.read_text().replace(f"session: s{day}", "session: s1"))
        found = vault.search("garden", limit=LONG_VIEW_EPISODES, now=NOW)
    lines = [e.text for e in timeline(found, 10_000, {})]
    room = sorted(len(t) + 1 for t in lines)[-1] * 2  # room for any two lines
    dwelling = timeline(found, room, {})
    spanning = timeline(found, room, {}, spread=True)
    # by relevance alone, two of the one conversation; spread, the best of each
    assert len(dwelling) == 2 and "ep-other" not in {e.episode_id for e in dwelling}
    assert len(spanning) == 2 and "ep-other" in {e.episode_id for e in spanning}
    assert [e.timestamp for e in spanning] == sorted(e.timestamp for e in spanning)


def test_a_summary_ranks_an_entry_on_its_line_and_its_episode_alike(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        about = _episode(vault.root, 1, "I pruned the garden roses", "The garden beds got compost")
        passing = _episode(vault.root, 2, "the garden came up", "I called the bank")
        found = vault.search("garden", limit=LONG_VIEW_EPISODES, now=NOW)
    # the passing mention's line matches a little better, the other episode as a whole better
    line = {about: 0.85, passing: 0.9}
    whole = {about: 1.0, passing: 0.9}
    found = dataclasses.replace(
        found,
        passages=tuple(
            dataclasses.replace(p, relevance=line[p.episode_id] - n / 100)
            for n, p in enumerate(sorted(found.passages, key=lambda p: -line[p.episode_id]))
        ),
        results=tuple(dataclasses.replace(e, relevance=whole[e.id]) for e in found.results),
    )
    room = max(len(e.text) + 1 for e in timeline(found, 10_000, {}))  # room for one line
    assert [e.episode_id for e in timeline(found, room, {})] == [about]
    # an order spans the conversations on its lines alone: there the better line comes first
    assert [e.episode_id for e in timeline(found, room, {}, spread=True)] == [passing]


def test_a_timeline_line_is_the_opening_of_a_long_turn(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        for day in range(1, 8):
            _episode(vault.root, day, f"garden day {day}: " + "we weeded the rows again " * 40)
        found = vault.search("garden", limit=LONG_VIEW_EPISODES, now=NOW)
    every = timeline(found, 10_000, {})
    assert len(every) == 7
    assert all(TIMELINE_CHARS - 40 < len(e.text) <= TIMELINE_CHARS < PASSAGE_CHARS for e in every)
    assert all(e.text.endswith("…") for e in every)
    # the room of three passages holds more than three episodes
    assert len(timeline(found, 3 * PASSAGE_CHARS, {})) > 3


def test_a_low_confidence_episode_claims_room_last_and_says_so(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={"MEMORYCLAW_RETRIEVAL_MINSCORE": "0"}) as vault:
        _episode(vault.root, 2, "garden beds dug")
        (vault.root / "episodes" / "2025-01-01_10-00-00_z.md").write_text(
            "---\nid: ep-doubtful\ntimestamp: 2025-01-01T10:00:00Z\nsummary: garden\n"
            "confidence: low\n---\n- #1 User: garden garden the garden\n",
            encoding="utf-8",
        )
        found = vault.search("garden", limit=LONG_VIEW_EPISODES, now=NOW)
        assert found.passages[0].episode_id == "ep-doubtful"  # it matches best
        every = timeline(found, 10_000, {}, low={"ep-doubtful"})
        room = max(len(e.text) + 1 for e in every)  # room for one line
        (only,) = timeline(found, room, {}, low={"ep-doubtful"})
    assert only.episode_id != "ep-doubtful"  # the sure one claims the room first
    doubtful = next(e for e in every if e.episode_id == "ep-doubtful")
    assert doubtful.text.endswith(" (low confidence)") and every[0] is doubtful  # oldest first


def test_a_long_view_leaves_most_of_the_budget_to_its_timeline(tmp_path: Path) -> None:
    rules = [
        f"- User (instruction): Always mention garden tip number {n} first." for n in range(20)
    ]
    with Vault.init(tmp_path / "v", env={}) as vault:
        (vault.root / "semantic" / "instructions.md").write_text(
            "\n".join(rules) + "\n", encoding="utf-8"
        )
        for day, line in _GARDEN:
            _episode(vault.root, day, line)
        detail = vault.retrieve("What did I plant in the garden beds?", now=NOW)
        history = vault.retrieve("Can you summarize my garden work?", now=NOW)
    budget_chars = 800 * 4
    detail_section = standing_section(detail.context)
    section = standing_section(history.context)
    assert sum(len(line) + 1 for line in [LABEL, *section]) <= budget_chars * STANDING_SHARE
    assert len(section) < len(detail_section)
    # the instructions left out are not shown as facts instead, nor twice
    assert history.context.count("garden tip number") == len(section)
    assert all(line in history.context for _, line in _GARDEN)


def test_a_summary_ranks_each_line_on_its_own_not_by_its_episode(tmp_path: Path) -> None:
    # the episode share brings the best episodes' lines first: right for one detailed answer,
    # but a summary wants the best line of many episodes
    with Vault.init(tmp_path / "v", env={"MEMORYCLAW_RETRIEVAL_BUDGETTOKENS": "68"}) as vault:
        episodes = vault.root / "episodes"
        (episodes / "2025-01-01_10-00-00_x.md").write_text(
            "---\nid: ep-x\ntimestamp: 2025-01-01T10:00:00Z\nsummary: garden beds and tomatoes"
            "\ntags: [garden, beds, tomatoes]\n---\n- #1 User: I weeded the garden beds\n",
            encoding="utf-8",
        )
        (episodes / "2025-01-02_10-00-00_y.md").write_text(
            "---\nid: ep-y\ntimestamp: 2025-01-02T10:00:00Z\nsummary: a long day\n---\n"
            "- #1 User: the garden beds got tomatoes\n",
            encoding="utf-8",
        )
        topic = "garden beds tomatoes"
        plain = search_with_teams(vault, topic, limit=LONG_VIEW_EPISODES, now=NOW)
        broad = search_with_teams(vault, topic, limit=LONG_VIEW_EPISODES, now=NOW, breadth=True)
        summary = vault.retrieve("Summarize my garden beds and tomatoes", now=NOW).context
        order = vault.retrieve("In what order did I work on garden beds and tomatoes?", now=NOW)
    assert [p.episode_id for p in plain.passages] == ["ep-x", "ep-y"]
    assert [p.episode_id for p in broad.passages] == ["ep-y", "ep-x"]
    # room for one line: the summary's is the best line, an order's still the best episode's
    assert "got tomatoes" in summary and "weeded" not in summary
    assert "weeded" in order.context and "got tomatoes" not in order.context


_WORDS = st.sampled_from(
    ["garden", "John", "order", "</memoryclaw>", "Lisbon", "?", "é", "🙂", "x" * 300, "\n"]
)
_LINE = st.lists(_WORDS | st.text(max_size=30), min_size=1, max_size=40).map(" ".join)
_QUESTIONS = st.sampled_from(
    [
        "In what order did I work on the garden?",
        "Summarize what John and I said about the garden",
        "How did my garden plans evolve?",
        "Tell me everything about John",
    ]
)


@given(
    episodes=st.lists(st.lists(_LINE, min_size=1, max_size=4), min_size=1, max_size=8),
    turns=st.lists(_LINE, max_size=3),
    question=_QUESTIONS,
    budget=st.integers(min_value=0, max_value=900),
)
@settings(max_examples=40, deadline=None)
def test_a_timeline_never_exceeds_the_budget(
    episodes: list[list[str]], turns: list[str], question: str, budget: int
) -> None:
    view = long_view(question)
    assert view is not None
    with tempfile.TemporaryDirectory() as tmp, Vault.init(Path(tmp) / "v", env={}) as vault:
        for day, lines in enumerate(episodes, 1):
            _episode(vault.root, day, *(" ".join(f"garden John {line}".split()) for line in lines))
        for text in turns:
            if text.strip():
                vault.log_turn("s", "user", f"garden {text}")
        found = vault.search(view.topic, limit=LONG_VIEW_EPISODES, now=NOW)
        payload = render_payload(found, budget, view=view)
        whole = vault.retrieve(question, now=NOW)
    for shown in (payload, whole):
        assert shown.tokens == estimate_tokens(shown.context) <= shown.budget
        if shown.context:
            assert shown.context.lower().count("</memoryclaw>") == 1
    assert payload.budget == budget


def test_a_summary_shows_the_answer_to_a_question_and_an_order_the_question(
    tmp_path: Path,
) -> None:
    """What was learned or decided is in the reply to a question, not in the question; which
    was asked when is in the question."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        for day, (asked, answered) in enumerate(
            [
                ("How deep should the garden beds be?", "Make the garden beds 30 cm deep."),
                ("Which compost suits the garden beds?", "Use leaf compost in the garden beds."),
            ],
            start=1,
        ):
            (vault.root / "episodes" / f"2025-01-0{day}_10-00-00_x{day}.md").write_text(
                f"---\nid: ep-2025010{day}-100000-0000000{day}\n"
                f"timestamp: 2025-01-0{day}T10:00:00Z\nsummary: day {day}\nsession: s{day}\n---\n"
                f"- #1 User: {asked}\n- #2 Assistant: {answered}\n",
                encoding="utf-8",
            )
        summary = vault.retrieve("Summarize what we discussed about my garden beds", now=NOW)
        order = vault.retrieve("In what order did I ask about the garden beds?", now=NOW)

    def entries(context: str) -> list[str]:
        return [line for line in context.splitlines() if " January 2025 ep-" in line]

    assert [e.split(": ", 1)[1] for e in entries(summary.context)] == [
        "Assistant: Make the garden beds 30 cm deep.",
        "Assistant: Use leaf compost in the garden beds.",
    ]
    assert [e.split(": ", 1)[1] for e in entries(order.context)] == [
        "User: How deep should the garden beds be?",
        "User: Which compost suits the garden beds?",
    ]


@pytest.mark.parametrize(
    ("reply", "relevance", "min_score", "shown"),
    [
        ("Postgres, for its row locks.", 0.5, 0.3, "Postgres, for its row locks."),
        ("ok thanks", 0.25, 0.3, "Which database should billing use?"),
        ("ok thanks", 0.2, 0.1, "Which database should billing use?"),
    ],
    ids=["a-reply", "a-reply-below-the-minimum-score", "a-far-weaker-reply"],
)
def test_a_question_is_passed_over_only_for_a_reply_that_matches(
    tmp_path: Path, reply: str, relevance: float, min_score: float, shown: str
) -> None:
    def line(number: int, text: str, score: float) -> PassageHit:
        return PassageHit(
            path="episodes/a.md",
            episode_id="ep-a",
            turn=number,
            line=number,
            speaker=None,
            text=text,
            timestamp="2026-01-01T00:00:00Z",
            score=score,
            matched=(),
            via="keyword",
            session="s",
            relevance=score,
        )

    with Vault.init(tmp_path / "v", env={}) as vault:
        found = vault.search("billing", now=NOW)  # nothing found: the lines are set below
    found = dataclasses.replace(
        found,
        passages=(line(1, "Which database should billing use?", 0.9), line(2, reply, relevance)),
    )
    [entry] = timeline(found, 2_000, {}, min_score=min_score)
    assert entry.text.endswith(shown) and entry.relevance == 0.9
