"""The extractive summarizer (SPEC section 5): segments, summaries, tags, entities and facts.

Which facts a turn states, and how surely, is tested in ``test_extraction.py``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw.consolidate.summarize import EpisodeDraft, summarize_log
from memoryclaw.vault.logformat import RawLog, Turn, parse_log
from memoryclaw.vault.words import SMALL_TALK, extract_keywords

UTC = timezone.utc
T0 = datetime(2025, 4, 8, 14, 30, tzinfo=UTC)
SAMPLE_LOGS = Path(__file__).resolve().parents[2] / "sample_vault" / "logs"
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo-dev.json"
TAG_RE = re.compile(r"[a-z0-9-]+")
SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv"
SECRET_TAIL = "Ab3dEf6hIj9kLm2nOp5qRs8tUv"


def make_log(
    *turns: tuple[str, str] | tuple[str, str, str | None, str | None],
    gaps: list[int] | None = None,
) -> RawLog:
    """A log of (role, content[, name, tool]) turns, 30 seconds apart unless ``gaps`` says."""
    out, moment = [], T0
    for index, spec in enumerate(turns):
        role, content = spec[0], spec[1]
        name, tool = (spec[2], spec[3]) if len(spec) == 4 else (None, None)
        out.append(Turn(role, moment, content, name=name, tool=tool))
        moment += timedelta(seconds=(gaps[index] if gaps else 30))
    return RawLog("logs/test_raw.md", {"channel": "telegram"}, tuple(out))


def rendered(episode: EpisodeDraft) -> str:
    """Every piece of text an episode would write."""
    facts = [f"{f.entity} {f.field} {f.value}" for f in episode.facts]
    parts = [episode.summary, *episode.details, *facts, *episode.tags, *episode.entities]
    return "\n".join([*parts, episode.slug])


def check_invariants(log: RawLog, episodes: list[EpisodeDraft], max_turns: int) -> None:
    """What every summary of every log must satisfy."""
    if not log.turns:
        assert episodes == []
        return
    assert episodes[0].first_turn == 1
    assert episodes[-1].last_turn == len(log.turns)
    for before, after in pairwise(episodes):
        assert after.first_turn == before.last_turn + 1
    for episode in episodes:
        assert 1 <= episode.last_turn - episode.first_turn + 1 <= max(1, max_turns)
        assert 3 <= len(episode.tags) <= 7
        assert all(TAG_RE.fullmatch(tag) for tag in episode.tags), episode.tags
        assert len(set(episode.tags)) == len(episode.tags)
        assert episode.summary.strip() and "\n" not in episode.summary
        assert len(episode.summary) <= 220
        assert TAG_RE.fullmatch(episode.slug)
        assert episode.confidence in {"low", "medium", "high"}
        assert episode.participants
        assert episode.timestamp.tzinfo is not None
        first = log.turns[episode.first_turn - 1].timestamp
        assert episode.timestamp == first.astimezone(UTC)
        assert all(not detail.startswith("- ") and "\n" not in detail for detail in episode.details)
        for fact in episode.facts:
            assert episode.first_turn <= fact.turn <= episode.last_turn
            assert fact.confidence in {"low", "medium", "high"}
            assert fact.entity and fact.field and fact.value


# ---------------------------------------------------------------------------- basics


def test_empty_log_has_no_episode() -> None:
    assert summarize_log(make_log()) == []


def test_blank_turns_count_but_say_nothing() -> None:
    log = make_log(("user", "   "), ("assistant", "\n\t"), ("user", ""))
    (episode,) = summarize_log(log)
    check_invariants(log, [episode], 24)
    assert (episode.first_turn, episode.last_turn) == (1, 3)
    assert episode.details == ()
    assert episode.facts == ()
    assert episode.confidence == "low"
    assert episode.tags[0] == "telegram"


def test_summarizing_twice_gives_the_same_drafts() -> None:
    text = (SAMPLE_LOGS / "2025-10-06_09-15-00_telegram_raw.md").read_text(encoding="utf-8")
    log = parse_log(text, "logs/x.md")
    assert summarize_log(log, max_turns=5) == summarize_log(log, max_turns=5)


# ------------------------------------------------------------------------ sample logs


@pytest.mark.parametrize(
    ("name", "summary", "tags", "entities", "facts"),
    [
        pytest.param(
            "2025-10-06_09-15-00_telegram_raw.md",
            "User asked to find me flights from London to Barcelona",
            {"flights", "barcelona", "london"},
            {"Barcelona", "Falcon", "Heathrow", "BX4TQ7"},
            set(),
            id="telegram-flights",
        ),
        pytest.param(
            "2025-10-28_17-45-12_cli_raw.md",
            "User asked to send John the weekly projectX update",
            {"projectx", "john"},
            {"John", "projectX", "Priya"},
            {
                ("John", "email", "john@example.com", "high", 4),
                ("Priya", "email", "priya@example.com", "high", 8),
            },
            id="cli-email-john",
        ),
        pytest.param(
            "2025-11-04_20-41-09_whatsapp_raw.md",
            "Alex asked to find a table for 6 in Bath",
            {"bath", "larkspur"},
            {"Alex", "Bath", "Larkspur", "Auntie Ruth"},
            {("Dad", "birthday", "November 22", "medium", 1)},
            id="whatsapp-birthday-dinner",
        ),
    ],
)
def test_sample_logs(
    name: str,
    summary: str,
    tags: set[str],
    entities: set[str],
    facts: set[tuple[str, str, str, str, int]],
) -> None:
    log = parse_log((SAMPLE_LOGS / name).read_text(encoding="utf-8"), f"logs/{name}")
    episodes = summarize_log(log)
    check_invariants(log, episodes, 24)
    (episode,) = episodes
    assert episode.summary.startswith(summary)
    assert tags <= set(episode.tags)
    assert entities <= set(episode.entities)
    assert {(f.entity, f.field, f.value, f.confidence, f.turn) for f in episode.facts} == facts
    assert episode.confidence == "high"
    assert episode.participants[-1] == "assistant"


def test_tool_turns_are_summarized_compactly() -> None:
    text = (SAMPLE_LOGS / "2025-10-28_17-45-12_cli_raw.md").read_text(encoding="utf-8")
    (episode,) = summarize_log(parse_log(text, "logs/x.md"))
    assert '#2 tool lookup_contact: {"name": "John"}' in episode.details
    assert any(d.startswith("#8 tool send_email: ") for d in episode.details)
    assert len(episode.summary) <= 200  # no room left to name the tools
    text = (SAMPLE_LOGS / "2025-10-06_09-15-00_telegram_raw.md").read_text(encoding="utf-8")
    (episode,) = summarize_log(parse_log(text, "logs/y.md"))
    assert episode.summary.endswith("(used search_flights, book_flight, create_reminder).")


# ------------------------------------------------------------------ summary and tags


@pytest.mark.parametrize(
    ("turns", "summary"),
    [
        pytest.param(
            [("user", "Can you book a table at Larkspur for Friday?")],
            "User asked to book a table at Larkspur for Friday.",
            id="request",
        ),
        pytest.param(
            [
                ("user", "I went to a LGBTQ support group yesterday.", "Caroline", None),
                ("user", "Wow, that's cool!", "Melanie", None),
            ],
            'Caroline told Melanie: "I went to a LGBTQ support group yesterday."',
            id="two-speakers",
        ),
        pytest.param(
            [("user", "What did the dentist say about the crown on my molar?")],
            "User asked about dentist, crown and molar:"
            ' "What did the dentist say about the crown on my molar?"',
            id="question",
        ),
        pytest.param(
            [("assistant", "The Lisbon conference starts on June 12.")],
            'Assistant said: "The Lisbon conference starts on June 12."',
            id="assistant-only",
        ),
        pytest.param(
            [("tool_call", "", None, "sync_calendar")],
            "1 turn without text (used sync_calendar).",
            id="tools-only",
        ),
    ],
)
def test_summary_sentence(
    turns: list[tuple[str, str, str | None, str | None]], summary: str
) -> None:
    specs = [t if len(t) == 4 else (t[0], t[1], None, None) for t in turns]
    (episode,) = summarize_log(make_log(*specs))
    assert episode.summary == summary


def test_long_summary_is_cut_at_a_word() -> None:
    words = " ".join(f"word{i} alpha" for i in range(80))
    (episode,) = summarize_log(make_log(("user", f"I said {words}.")))
    assert len(episode.summary) <= 200
    assert episode.summary.endswith('…"')


def test_tags_prefer_distinctive_words_and_tool_subjects() -> None:
    log = make_log(
        ("user", "Please email the dentist about my crown, the crown hurts."),
        ("tool_call", '{"to": "dentist@example.com"}', None, "send_email"),
        ("assistant", "Sent the email to the dentist."),
    )
    (episode,) = summarize_log(log)
    assert set(episode.tags) >= {"email", "dentist", "crown"}
    assert "please" not in episode.tags and "send" not in episode.tags


_HELPFUL = (
    "Sure! Here's what I found. Great question! I'd be happy to help you compare options. "
    "Let me know if you need anything else!",
    "Certainly! Here's a quick summary. Feel free to ask if anything is unclear. Hope this helps!",
    "You're welcome! Is there anything else I can help with? Don't hesitate to reach out.",
)


@pytest.mark.parametrize("helpful", _HELPFUL, ids=["found", "summary", "welcome"])
def test_an_assistant_s_stock_phrases_tag_nothing(helpful: str) -> None:
    log = make_log(
        ("user", "Find flights to Lisbon for the conference."),
        ("assistant", helpful),
        ("user", "Book the cheapest flight."),
        ("assistant", helpful),
        ("user", "Thanks"),
        ("assistant", helpful),
    )
    (episode,) = summarize_log(log)
    user_said = {"lisbon", "flights", "conference", "book", "cheapest", "telegram", "user"}
    assert set(episode.tags) <= user_said, episode.tags
    assert episode.tags[:3] == ("lisbon", "flights", "conference")


def test_an_assistant_s_stock_phrases_still_reach_its_detail_line() -> None:
    log = make_log(
        ("user", "Book the Lisbon flight."),
        ("assistant", "Let me know if you want the TP123 boarding pass."),
    )
    (episode,) = summarize_log(log)
    assert episode.details[1] == "#2 Assistant: Let me know if you want the TP123 boarding pass."
    assert "tp123" not in episode.tags


def test_an_assistant_s_words_only_pad_the_tags() -> None:
    log = make_log(
        ("user", "Any Lisbon trip ideas?"),
        ("assistant", "Day one: Belem tower, pastries in Belem, then Alfama and Alfama fado."),
    )
    (episode,) = summarize_log(log)
    assert episode.tags == ("lisbon", "trip", "belem")


def test_speakers_and_nicknames_are_not_tags() -> None:
    log = make_log(
        ("user", "Hey Mel! The pottery class was great, pottery is my thing.", "Caroline", None),
        ("user", "Thanks Caroline! Pottery with the kids this weekend.", "Melanie", None),
    )
    (episode,) = summarize_log(log)
    assert {"caroline", "melanie", "mel"}.isdisjoint(episode.tags)
    assert episode.tags[0] == "pottery"
    assert episode.entities[:3] == ("Caroline", "Melanie", "Mel")


def test_entities_are_names_not_sentence_openers() -> None:
    text = (
        "Painting is fun. I read Lord of the Rings with @ana_b on projectX and the Q3 plan. "
        "Yesterday Emma met Dr Lee in Bath."
    )
    (episode,) = summarize_log(make_log(("user", text)))
    assert episode.entities == (
        "Lord of the Rings",
        "@ana_b",
        "projectX",
        "Q3",
        "Emma",
        "Dr Lee",
        "Bath",
    )


# ---------------------------------------------------------------------- segmentation


def test_segments_respect_max_turns_and_keep_tool_turns_with_their_trigger() -> None:
    turns: list[tuple[str, str, str | None, str | None]] = []
    for i in range(6):
        turns += [
            ("user", f"Look up order {i} for the client", None, None),
            ("tool_call", f'{{"order": {i}}}', None, "lookup_order"),
            ("tool_result", '{"status": "shipped"}', None, "lookup_order"),
        ]
    log = make_log(*turns)
    episodes = summarize_log(log, max_turns=7)
    check_invariants(log, episodes, 7)
    assert len(episodes) == 3
    assert all(log.turns[e.first_turn - 1].role == "user" for e in episodes)


def test_a_unit_too_big_for_one_segment_is_split() -> None:
    log = make_log(
        ("user", "Sync everything"),
        *[("tool_call", f'{{"n": {i}}}', None, "sync") for i in range(5)],
    )
    episodes = summarize_log(log, max_turns=2)
    check_invariants(log, episodes, 2)
    assert [(e.first_turn, e.last_turn) for e in episodes] == [(1, 2), (3, 4), (5, 6)]


def test_a_long_pause_is_where_the_log_is_cut() -> None:
    turns = [
        ("user", f"Question {i} about the same trip to Lisbon and the hotel") for i in range(12)
    ]
    gaps = [30] * 12
    gaps[4] = 3 * 3600  # between turn 5 and turn 6
    episodes = summarize_log(make_log(*turns, gaps=gaps), max_turns=8)
    assert [(e.first_turn, e.last_turn) for e in episodes] == [(1, 5), (6, 12)]


def test_a_change_of_topic_is_where_the_log_is_cut() -> None:
    flights = "flights Barcelona airport boarding luggage seat window gate"
    dentist = "dentist crown molar filling appointment anaesthetic hygienist clinic"
    turns = [("user", f"{flights} {i}") for i in range(5)] + [
        ("user", f"{dentist} {i}") for i in range(7)
    ]
    episodes = summarize_log(make_log(*turns), max_turns=8)
    assert [(e.first_turn, e.last_turn) for e in episodes] == [(1, 5), (6, 12)]
    assert "dentist" in episodes[1].tags and "dentist" not in episodes[0].tags


def test_segments_respect_max_chars_except_for_a_single_huge_turn() -> None:
    log = make_log(
        ("user", "a" * 90),
        ("user", "b" * 90),
        ("user", "c" * 500),
        ("user", "d" * 90),
        ("user", "e"),
    )
    episodes = summarize_log(log, max_chars=200)
    check_invariants(log, episodes, 24)
    assert [(e.first_turn, e.last_turn) for e in episodes] == [(1, 2), (3, 3), (4, 5)]


def test_long_turn_details_keep_every_searchable_word() -> None:
    sentences = [
        f"On day {i} Caroline visited museum{i} with Melanie in Lisbon." for i in range(30)
    ]
    text = " ".join(sentences)
    (episode,) = summarize_log(make_log(("user", text, "Caroline", None)))
    (detail,) = episode.details
    assert len(detail) < len(text)
    assert detail.startswith("#1 Caroline: On day 0 Caroline visited museum0")
    assert set(extract_keywords(text)) <= set(extract_keywords(detail))


# --------------------------------------------------------------------------- secrets


def test_secrets_never_reach_an_episode() -> None:
    log = make_log(
        ("user", f"my api key is {SECRET}, email it to ann@example.com"),
        ("tool_call", json.dumps({"to": "ann@example.com", "body": SECRET}), None, "send_email"),
        ("assistant", f"Sent {SECRET} with password=hunter22"),
        # JSON escapes hide a key from the redactor until the arguments are decoded
        ("tool_call", '{"note": "\\u0073k-proj-' + SECRET_TAIL + '"}', None, "save_note"),
    )
    (episode,) = summarize_log(log)
    text = rendered(episode)
    assert SECRET_TAIL not in text and "hunter22" not in text
    assert "[REDACTED:api-key]" in text


# -------------------------------------------------------------------------- LoCoMo


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo sample is not present")
@pytest.mark.parametrize("max_turns", [24, 8, 5], ids=["max24", "max8", "max5"])
def test_locomo_session_keeps_every_turns_words(max_turns: int) -> None:
    conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]["conversation"]
    when = datetime.strptime(conversation["session_1_date_time"], "%I:%M %p on %d %B, %Y")
    turns = tuple(
        Turn("user", when.replace(tzinfo=UTC), item["text"], name=item["speaker"])
        for item in conversation["session_1"]
    )
    log = RawLog("logs/locomo_raw.md", {"channel": "locomo"}, turns)
    episodes = summarize_log(log, max_turns=max_turns)
    check_invariants(log, episodes, max_turns)
    assert len(episodes) == -(-len(turns) // max_turns)  # balanced: no needless extra segment
    for episode in episodes:
        assert set(episode.participants) == {"Caroline", "Melanie"}
        assert {"Caroline", "Melanie"} <= set(episode.entities)
        words = set(extract_keywords(episode.summary + "\n" + "\n".join(episode.details)))
        for number in range(episode.first_turn, episode.last_turn + 1):
            wanted = set(extract_keywords(turns[number - 1].content)) - SMALL_TALK
            assert wanted <= words, (number, wanted - words)


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo sample is not present")
def test_no_dev_summary_is_a_bare_caption_greeting_or_lone_question() -> None:
    """Every session of the dev split, consolidated as the benchmark does: each summary says
    who, and states something (or the topics), never only a caption, greeting or question."""
    checked = 0
    for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, items in conversation.items():
            if not (re.fullmatch(r"session_\d+", key) and isinstance(items, list) and items):
                continue
            when = datetime.strptime(conversation[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
            turns = tuple(
                Turn(
                    "user" if item["speaker"] == conversation["speaker_a"] else "assistant",
                    when.replace(tzinfo=UTC),
                    item["text"]
                    + (
                        f" [shares an image: {item['blip_caption']}]"
                        if item.get("blip_caption")
                        else ""
                    ),
                    name=item["speaker"],
                )
                for item in items
            )
            for episode in summarize_log(RawLog("logs/x.md", {"channel": "locomo"}, turns)):
                checked += 1
                summary = episode.summary
                quoted = summary.partition(': "')[2].rstrip('"')
                assert "[shares an image" not in summary and not quoted.startswith("["), summary
                assert not (quoted.endswith("?") and " about " not in summary), summary
                words = set(extract_keywords(quoted or summary))
                assert not words <= SMALL_TALK, summary
                assert any(p in summary for p in episode.participants), summary
    assert checked > 100


# ------------------------------------------------------------------------ properties

WORDS = [
    "flight", "Barcelona", "John", "deadline", "is", "April 10", "john@example.com", "the",
    "projectX", "run", "`make test`", "https://example.com/x", "+44 7700 900123", "I", "love",
    "hiking", "my", "email", "Caroline", "2025-04-10", "~/notes/a.md", ".", "?", "\n", "'s",
    "birthday", "prefer", "due", "Can you", "send", "{", "}", '"to":', ",",
]  # fmt: skip
TEXT = st.lists(st.sampled_from(WORDS) | st.text(max_size=8), max_size=25).map(" ".join)
TURN = st.tuples(
    st.sampled_from(["user", "assistant", "tool_call", "tool_result", "system"]),
    TEXT,
    st.sampled_from([None, "Caroline", "Melanie"]),
    st.sampled_from([None, "send_email", "search"]),
    st.integers(min_value=0, max_value=4000),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(TURN, max_size=30),
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=0, max_value=800),
    st.integers(min_value=0, max_value=40),
)
def test_any_log_gives_well_formed_episodes(
    specs: list[tuple[str, str, str | None, str | None, int]],
    max_turns: int,
    max_chars: int,
    plant_at: int,
) -> None:
    turns, moment = [], T0
    for index, (role, text, name, tool, gap) in enumerate(specs):
        if index == plant_at:
            text = f"{text} key {SECRET} end"
        moment += timedelta(seconds=gap)
        turns.append(Turn(role, moment, text, name=name, tool=tool))
    log = RawLog("logs/prop_raw.md", {}, tuple(turns))
    episodes = summarize_log(log, max_turns=max_turns, max_chars=max_chars)
    check_invariants(log, episodes, max_turns)
    for episode in episodes:  # only a turn bigger than max_chars on its own may exceed it
        size = sum(len(t.content) for t in turns[episode.first_turn - 1 : episode.last_turn])
        assert size <= max(1, max_chars) or episode.first_turn == episode.last_turn
    assert summarize_log(log, max_turns=max_turns, max_chars=max_chars) == episodes
    assert all(SECRET_TAIL not in rendered(episode) for episode in episodes)


def test_detail_lines_carry_their_turn_and_resolved_dates() -> None:
    (episode,) = summarize_log(
        make_log(
            ("user", "I went to the pottery workshop yesterday with the kids.", "Mel", None),
            ("user", "We are camping next month, and I ran a race last Saturday.", "Mel", None),
        )
    )
    assert episode.details == (  # said on Tuesday 2025-04-08
        "#1 Mel: I went to the pottery workshop yesterday (2025-04-07) with the kids.",
        "#2 Mel: We are camping next month (2025-05), and I ran a race last Saturday (2025-04-05).",
    )
