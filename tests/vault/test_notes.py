"""Parsers and writers of vault files: episodes, facts, aliases and raw logs (SPEC section 2)."""

from __future__ import annotations

import contextlib
import re
import unicodedata
from datetime import datetime, timezone
from pathlib import Path

import frontmatter
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw.errors import ParseError
from memoryclaw.vault import aliases, logformat, safeyaml
from memoryclaw.vault.aliases import parse_aliases
from memoryclaw.vault.episodes import (
    CONFIDENCE_LEVELS,
    MAX_LIST_ITEMS,
    Episode,
    dump_episode,
    episode_fingerprint,
    episode_id_for_path,
    parse_episode,
)
from memoryclaw.vault.facts import format_fact_line, format_provenance, parse_facts
from memoryclaw.vault.logformat import Turn, clean_label, dump_log, normalize_content, parse_log
from memoryclaw.vault.timestamps import parse_timestamp
from memoryclaw.vault.values import normalise_value, value_key, value_kind

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"
UTC = timezone.utc
MTIME = 1_700_000_000.75  # 2023-11-14T22:13:20Z
MTIME_DT = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
DEFAULT_UPDATED = "2024-12-31"

# Every character ``str.splitlines`` treats as a line end.  ``\n`` is the only one the vault's
# writers use; the others are excluded from generated text unless a test is about them.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# --------------------------------------------------------------------------- fixtures text

SPEC_EPISODE = """\
---
id: ep-20250408-143210-email-john        # stable; derived from source when written by consolidation
timestamp: 2025-04-08T14:32:10Z
summary: "User asked to send a project update email to John; deadline April 10."
tags: [email, projectx, deadline]        # 3-7 lowercase tags
participants: [user, assistant]
confidence: high                         # low | medium | high
source: logs/processed/2025-04-08_14-30-02_telegram_raw.md
source_turns: [1, 12]                    # 1-based inclusive range of turns of the source log
session: agent:main:telegram:12345
entities: [John, projectX]
---
**Details:**
- Recipient: John <john@example.com>
- ...
"""

SPEC_FACTS = """\
# Contacts
- John: john@example.com
- Sarah: sarah@example.com <!-- source: logs/processed/x.md; updated: 2025-04-08; confidence: high -->

# Projects
- projectX:
    deadline: 2025-04-10
    stakeholders: [John, Sarah]

| Entity | Role | Email |
|---|---|---|
| Ana | designer | ana@example.com |
"""  # noqa: E501

SPEC_LOG = """\
---
id: log-2025-04-08T14-30-02-telegram-ab12
timestamp: 2025-04-08T14:30:02Z
channel: telegram
session: agent:main:telegram:12345
agent: main
processed: false
---
### user · 2025-04-08T14:30:02Z
Please email John the project update.

### tool_call · send_email · 2025-04-08T14:30:40Z
{"to": "john@example.com", "subject": "Project update"}

### assistant · 2025-04-08T14:30:41Z
Done: sent to John.
"""


def _spec_episode() -> Episode:
    return parse_episode(SPEC_EPISODE, "episodes/2025-04-08_14-32-10_email-john.md", MTIME)


def _parse_error(call, *args) -> ParseError:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        call(*args)
    return info.value


# ------------------------------------------------------------------------------ episodes


def test_spec_episode_every_field() -> None:
    ep = _spec_episode()
    assert ep.id == "ep-20250408-143210-email-john"
    assert ep.path == "episodes/2025-04-08_14-32-10_email-john.md"
    assert ep.timestamp == datetime(2025, 4, 8, 14, 32, 10, tzinfo=UTC)
    assert ep.timestamp.tzinfo is not None
    assert ep.summary == "User asked to send a project update email to John; deadline April 10."
    assert ep.details == "**Details:**\n- Recipient: John <john@example.com>\n- ..."
    assert ep.tags == ("email", "projectx", "deadline")
    assert ep.participants == ("user", "assistant")
    assert ep.confidence == "high"
    assert ep.source == "logs/processed/2025-04-08_14-30-02_telegram_raw.md"
    assert ep.source_turns == (1, 12)
    assert ep.session == "agent:main:telegram:12345"
    assert ep.entities == ("John", "projectX")
    assert ep.extra == {}


def test_spec_episode_dump_round_trips() -> None:
    ep = _spec_episode()
    text = dump_episode(ep)
    assert parse_episode(text, ep.path, 0) == ep
    keys = [line.split(":", 1)[0] for line in text.split("---\n")[1].splitlines()]
    assert keys == [
        "id",
        "timestamp",
        "summary",
        "tags",
        "participants",
        "confidence",
        "source",
        "source_turns",
        "session",
        "entities",
    ]
    assert "tags: [email, projectx, deadline]" in text


def test_episode_with_only_summary_gets_defaults() -> None:
    path = "episodes/dentist.md"
    ep = parse_episode("---\nsummary: Booked the dentist for May 3.\n---\n", path, MTIME)
    assert ep.summary == "Booked the dentist for May 3."
    assert ep.details == ""
    assert ep.timestamp == MTIME_DT
    assert ep.id == episode_id_for_path(path)
    assert ep.tags == () and ep.participants == () and ep.entities == ()
    assert ep.confidence == "medium"
    assert ep.source is None and ep.source_turns is None and ep.session is None


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("Called the dentist to move the check-up.\nSecond line.\n", "Called the dentist to move"),
        ("\n\n# Dentist visit\n\nMoved to Friday.\n", "Dentist visit"),
        ("---\ntags: [health]\n---\n\n**Details:** moved\nmore\n", "Details: moved"),
        ("- Booked a table for four\n", "Booked a table for four"),
    ],
    ids=["plain-first-line", "heading", "bold-after-frontmatter", "bullet"],
)
def test_episode_with_only_body_uses_first_line(text: str, summary: str) -> None:
    ep = parse_episode(text, "episodes/hand.md", MTIME)
    assert ep.summary.startswith(summary)
    assert "\n" not in ep.summary
    assert ep.details == text.split("---\n")[-1].strip()


def test_episode_summary_fallback_is_capped() -> None:
    ep = parse_episode("word " * 200, "episodes/long.md", MTIME)
    assert 0 < len(ep.summary) <= 200


@pytest.mark.parametrize(
    "text",
    ["", "\n\n", "---\nsummary: ''\n---\n", "---\nsummary:\ntags: [a]\n---\n   \n"],
    ids=["empty", "blank", "empty-summary", "null-summary-blank-body"],
)
def test_episode_without_summary_or_body_is_rejected(text: str) -> None:
    err = _parse_error(parse_episode, text, "episodes/empty.md", MTIME)
    assert err.path == "episodes/empty.md"
    assert "summary" in err.reason


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("episodes/2025-03-04_07-55-21_flight-berlin.md", datetime(2025, 3, 4, 7, 55, 21)),
        ("episodes/sub/2024-12-31_23-59-59_x.md", datetime(2024, 12, 31, 23, 59, 59)),
        ("episodes/2025-13-45_07-55-21_bad-date.md", None),
        ("episodes/flight-berlin.md", None),
        ("episodes/note_2025-03-04_07-55-21.md", None),
    ],
    ids=["stamped", "stamped-subfolder", "impossible-stamp", "no-stamp", "stamp-not-first"],
)
def test_episode_timestamp_from_filename_else_mtime(path: str, expected: datetime | None) -> None:
    ep = parse_episode("---\nsummary: s\n---\n", path, MTIME)
    want = expected.replace(tzinfo=UTC) if expected else MTIME_DT
    assert ep.timestamp == want


def test_episode_explicit_timestamp_beats_filename() -> None:
    text = "---\nsummary: s\ntimestamp: 2025-01-02T03:04:05+02:00\n---\n"
    ep = parse_episode(text, "episodes/2025-03-04_07-55-21_x.md", MTIME)
    assert ep.timestamp == datetime(2025, 1, 2, 1, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-04-08T14:32:10Z", datetime(2025, 4, 8, 14, 32, 10)),
        ("'2025-04-08T14:32:10.987Z'", datetime(2025, 4, 8, 14, 32, 10)),
        ("2025-04-08", datetime(2025, 4, 8)),
        ("2025-04-08 14:32:10", datetime(2025, 4, 8, 14, 32, 10)),
        ("2025-04-08T16:32:10+02:00", datetime(2025, 4, 8, 14, 32, 10)),
    ],
    ids=["zulu", "quoted-fraction", "date-only", "naive", "offset"],
)
def test_episode_timestamp_forms_are_utc(value: str, expected: datetime) -> None:
    ep = parse_episode(f"---\nsummary: s\ntimestamp: {value}\n---\n", "e.md", MTIME)
    assert ep.timestamp == expected.replace(tzinfo=UTC)


def test_episode_default_id_is_stable_hash_of_path() -> None:
    path = "episodes/hand-written.md"
    first = parse_episode("---\nsummary: one\n---\n", path, MTIME)
    second = parse_episode("Completely different body", path, MTIME + 999)
    other = parse_episode("---\nsummary: one\n---\n", "episodes/other.md", MTIME)
    assert re.fullmatch(r"ep-[0-9a-f]{8,}", first.id)
    assert first.id == second.id == episode_id_for_path(path)
    assert other.id != first.id


def test_episode_tags_as_comma_string_are_split_and_lowercased() -> None:
    text = "---\nsummary: s\ntags: Email, ProjectX ,deadline,, email\n---\n"
    assert parse_episode(text, "e.md", MTIME).tags == ("email", "projectx", "deadline")


def test_episode_list_fields_keep_case_except_tags() -> None:
    text = "---\nsummary: s\ntags: [Falcon, BETA]\nentities: [John, projectX]\n---\n"
    ep = parse_episode(text, "e.md", MTIME)
    assert ep.tags == ("falcon", "beta")
    assert ep.entities == ("John", "projectX")


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("tags: {a: 1}", "tags"),
        ("tags: [[a, b]]", "tags"),
        ("tags: 7", "tags"),
        ("summary: [1]", "summary"),
        ("summary: {a: b}", "summary"),
        ("source_turns: [3, 1]", "source_turns"),
        ("source_turns: [0, 2]", "source_turns"),
        ("source_turns: [1, 2, 3]", "source_turns"),
        ("source_turns: 4", "source_turns"),
        ("source_turns: [true, 2]", "source_turns"),
        ("confidence: maybe", "confidence"),
        ("confidence: [high]", "confidence"),
        ("timestamp: not a date", "timestamp"),
        ("timestamp: 12345", "timestamp"),
        ("id: [1, 2]", "id"),
        ("entities: {John: 1}", "entities"),
        ("participants: 3", "participants"),
        ("session: {a: 1}", "session"),
    ],
    ids=[
        "tags-mapping",
        "tags-nested",
        "tags-int",
        "summary-list",
        "summary-mapping",
        "turns-reversed",
        "turns-zero",
        "turns-three",
        "turns-int",
        "turns-bool",
        "confidence-maybe",
        "confidence-list",
        "timestamp-text",
        "timestamp-int",
        "id-list",
        "entities-mapping",
        "participants-int",
        "session-mapping",
    ],
)
def test_episode_wrong_types_name_the_key(line: str, key: str) -> None:
    text = f"---\nsummary: fine\n{line}\n---\nBody.\n"
    # the summary line is replaced when the bad key is the summary itself
    if key == "summary":
        text = f"---\n{line}\n---\nBody.\n"
    err = _parse_error(parse_episode, text, "episodes/bad.md", MTIME)
    assert err.path == "episodes/bad.md"
    assert err.reason.startswith(f"{key}:"), err.reason
    assert key in str(err)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nid: x\nsummary: ok\ntags: a: b\n---\nbody\n", 4),
        ("---\nid: x\ntags: [a, b\nsummary: s\nsession: y\n---\n", 4),
        ("---\nid: x\nsummary: s\n  tags: [a]\n---\n", 4),
        ("---\nid: x\n\tsummary: s\n---\n", 3),
        ("---\nid: *nope\n---\n", 2),
        ("---\n- a\n- b\n---\nbody\n", 2),
        ("\ufeff---\nsummary: a: b\n---\n", 2),
    ],
    ids=[
        "mapping-in-scalar",
        "unclosed-flow",
        "bad-indent",
        "tab",
        "undefined-alias",
        "not-a-mapping",
        "bom",
    ],
)
def test_episode_malformed_frontmatter_reports_file_line(text: str, line: int) -> None:
    err = _parse_error(parse_episode, text, "episodes/bad.md", MTIME)
    assert err.line == line
    assert str(err).startswith(f"episodes/bad.md:{line}: ")


def test_episode_unterminated_quote_blames_opening_line() -> None:
    text = "---\nsummary: 'never closed\nid: x\ntags: [a]\nsession: s\n---\nbody\n"
    err = _parse_error(parse_episode, text, "episodes/bad.md", MTIME)
    assert err.line == 2


@pytest.mark.parametrize(
    "text",
    [
        "---\nsummary: s\ntags: [a]\n",
        "---\nsummary: s\n--\nbody",
        "---",
    ],
    ids=["no-closing", "short-dashes", "only-opening"],
)
def test_episode_unclosed_frontmatter(text: str) -> None:
    err = _parse_error(parse_episode, text, "episodes/open.md", MTIME)
    assert err.line == 1
    assert "never closed" in err.reason


@pytest.mark.parametrize(
    "text",
    ["---\nsummary: a\x00b\n---\n", "\x00\x01\x02binary", "summary\n\x00"],
    ids=["in-frontmatter", "leading", "trailing"],
)
def test_episode_nul_byte_is_rejected(text: str) -> None:
    err = _parse_error(parse_episode, text, "episodes/bin.md", MTIME)
    assert "NUL" in err.reason


def test_episode_impossible_timestamp_is_a_parse_error_naming_key_and_line() -> None:
    text = "---\nsummary: s\ntimestamp: 2025-02-30\n---\n"
    err = _parse_error(parse_episode, text, "episodes/bad-date.md", MTIME)
    assert err.line == 3 and err.reason.startswith("timestamp:")


def test_episode_unknown_key_keeps_date_like_text_verbatim() -> None:
    text = "---\nsummary: s\nreviewed: 2025-02-30\n---\n"
    episode = parse_episode(text, "episodes/x.md", MTIME)
    assert episode.extra == {"reviewed": "2025-02-30"}
    assert parse_episode(dump_episode(episode), "episodes/x.md", MTIME) == episode


def test_episode_blank_id_falls_back_to_path_hash() -> None:
    ep = parse_episode("---\nid: '   '\nsummary: s\n---\n", "episodes/x.md", MTIME)
    assert ep.id == episode_id_for_path("episodes/x.md")


def test_episode_unknown_keys_survive_dump_and_parse() -> None:
    text = (
        "---\nsummary: Climbing weekend\nmood: happy\nrating: 4\n"
        "review: {by: me, on: 2025-01-01, notes: [a, 'b: c']}\n---\nBody line.\n"
    )
    ep = parse_episode(text, "episodes/climb.md", MTIME)
    assert ep.extra["mood"] == "happy"
    assert ep.extra["rating"] == 4
    assert ep.extra["review"]["notes"] == ["a", "b: c"]
    dumped = dump_episode(ep)
    assert "mood: happy" in dumped
    again = parse_episode(dumped, ep.path, 0)
    assert again == ep
    assert again.extra == ep.extra


def test_dump_episode_is_readable_by_python_frontmatter() -> None:
    ep = _spec_episode()
    post = frontmatter.loads(dump_episode(ep))
    meta = dict(post.metadata)
    assert list(meta) == [
        "id",
        "timestamp",
        "summary",
        "tags",
        "participants",
        "confidence",
        "source",
        "source_turns",
        "session",
        "entities",
    ]
    assert meta["id"] == ep.id
    assert parse_timestamp(meta["timestamp"]) == ep.timestamp
    assert meta["summary"] == ep.summary
    assert meta["tags"] == list(ep.tags)
    assert meta["participants"] == list(ep.participants)
    assert meta["confidence"] == ep.confidence
    assert meta["source"] == ep.source
    assert meta["source_turns"] == [1, 12]
    assert meta["session"] == ep.session
    assert meta["entities"] == list(ep.entities)
    assert post.content == ep.details


# ---------------------------------------------------------------- episode properties

_TRICKY_LINES = [
    "---",
    "--- ",
    "----",
    "...",
    "# heading",
    "## sub: heading",
    "#",
    "key: value",
    "a: b: c",
    '"double quoted"',
    "'single quoted'",
    "it's",
    "- item",
    "  indented: x",
    "%YAML 1.2",
    "&anchor *alias !tag",
    "{x: [y]}",
    "@at `tick` |pipe >fold",
    "null",
    "true",
    "0o17",
    "2025-04-08",
    "2025-04-08T14:32:10Z",
    "é ü 漢字 🎉 ñ",
    "tab\there",
    "trailing space ",
    "",
]
_TEXT_CHARS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00" + LINE_BREAKS)
_LINE = st.one_of(st.sampled_from(_TRICKY_LINES), st.text(_TEXT_CHARS, max_size=40))
_MULTILINE = st.lists(_LINE, max_size=6).map(lambda lines: "\n".join(lines).strip())
_SUMMARY = st.one_of(_LINE.map(str.strip), _MULTILINE).filter(bool)
_WORD = st.text(_TEXT_CHARS.filter(lambda c: c not in ","), min_size=1, max_size=20).map(str.strip)
_TAG = _WORD.filter(lambda t: bool(t) and t == t.lower())
_NAME = _WORD.filter(bool)
_TIMESTAMP = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda moment: moment.replace(microsecond=0))
_TURNS_RANGE = st.tuples(st.integers(1, 500), st.integers(0, 500)).map(
    lambda t: (t[0], t[0] + t[1])
)
_EXTRA_KEY = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True).filter(
    lambda key: (
        key
        not in {
            "id",
            "timestamp",
            "summary",
            "tags",
            "participants",
            "confidence",
            "source",
            "source_turns",
            "session",
            "entities",
        }
    )
)
_EXTRA_VALUE = st.one_of(
    _LINE,
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.lists(_LINE, max_size=3),
)


@st.composite
def episodes(draw: st.DrawFn) -> Episode:
    return Episode(
        id=draw(st.one_of(st.from_regex(r"ep-[a-z0-9-]{1,40}", fullmatch=True), _NAME)),
        path="episodes/generated.md",
        timestamp=draw(_TIMESTAMP),
        summary=draw(_SUMMARY),
        details=draw(_MULTILINE),
        tags=tuple(draw(st.lists(_TAG, unique=True, max_size=7))),
        participants=tuple(draw(st.lists(_NAME, unique=True, max_size=4))),
        confidence=draw(st.sampled_from(CONFIDENCE_LEVELS)),
        source=draw(st.one_of(st.none(), _LINE)),
        source_turns=draw(st.one_of(st.none(), _TURNS_RANGE)),
        session=draw(st.one_of(st.none(), _LINE)),
        entities=tuple(draw(st.lists(_NAME, unique=True, max_size=4))),
        extra=draw(st.dictionaries(_EXTRA_KEY, _EXTRA_VALUE, max_size=3)),
        agent=draw(st.one_of(st.none(), _NAME)),
        scope=draw(
            st.one_of(
                st.none(),
                st.sampled_from(["owner", "direct"]),
                st.from_regex(r"(group|thread|peer):[a-z0-9:+-]{1,40}", fullmatch=True),
            )
        ),
    )


@settings(max_examples=200, deadline=None)
@given(episodes())
def test_property_episode_round_trip(ep: Episode) -> None:
    assert parse_episode(dump_episode(ep), ep.path, 0) == ep


@settings(max_examples=200, deadline=None)
@given(episodes())
def test_property_python_frontmatter_reads_dumped_episode(ep: Episode) -> None:
    post = frontmatter.loads(dump_episode(ep))
    assert post.metadata["id"] == ep.id
    assert post.metadata["summary"] == ep.summary
    assert post.metadata["tags"] == list(ep.tags)
    assert parse_timestamp(post.metadata["timestamp"]) == ep.timestamp
    for key, value in ep.extra.items():
        assert post.metadata[key] == value
    assert post.content == ep.details


# --------------------------------------------------------------------------------- facts

FactRow = tuple[int, str, str, str, str, str, str, str, str]


def _rows(text: str, path: str = "semantic/x.md") -> list[FactRow]:
    return [
        (f.line, f.section, f.entity, f.field, f.value, f.form, f.source, f.updated, f.confidence)
        for f in parse_facts(text, path, DEFAULT_UPDATED)
    ]


def test_spec_facts_all_three_forms() -> None:
    hand, d = "hand", DEFAULT_UPDATED
    assert _rows(SPEC_FACTS) == [
        (2, "Contacts", "John", "email", "john@example.com", "bullet", hand, d, "high"),
        (
            3,
            "Contacts",
            "Sarah",
            "email",
            "sarah@example.com",
            "bullet",
            "logs/processed/x.md",
            "2025-04-08",
            "high",
        ),
        (7, "Projects", "projectX", "deadline", "2025-04-10", "nested", hand, d, "high"),
        (8, "Projects", "projectX", "stakeholders", "[John, Sarah]", "nested", hand, d, "high"),
        (12, "Projects", "Ana", "role", "designer", "table", hand, d, "high"),
        (12, "Projects", "Ana", "email", "ana@example.com", "table", hand, d, "high"),
    ]


@pytest.mark.parametrize(
    ("line", "entity", "field", "value"),
    [
        ("- John: john@example.com", "John", "email", "john@example.com"),
        ("- Docs: https://example.com/docs", "Docs", "url", "https://example.com/docs"),
        ("- Mom birthday: 1958-03-21", "Mom birthday", "date", "1958-03-21"),
        ("- Dentist: +44 20 7946 0321", "Dentist", "phone", "+44 20 7946 0321"),
        ("- Coffee: flat white", "Coffee", "value", "flat white"),
        ("- John email: john@example.com", "John", "email", "john@example.com"),
        ("* **Ana**: ana@example.com", "Ana", "email", "ana@example.com"),
        ("+ Tom:   spaced  ", "Tom", "value", "spaced"),
    ],
    ids=["email", "url", "date", "phone", "plain", "field-in-key", "bold-star", "plus-spaces"],
)
def test_bullet_fact_field_inference(line: str, entity: str, field: str, value: str) -> None:
    (fact,) = parse_facts(line, "semantic/x.md", DEFAULT_UPDATED)
    assert (fact.entity, fact.field, fact.value, fact.form) == (entity, field, value, "bullet")
    assert (fact.source, fact.updated, fact.confidence) == ("hand", DEFAULT_UPDATED, "high")


@pytest.mark.parametrize(
    ("comment", "source", "updated", "confidence"),
    [
        (
            "<!-- source: logs/a.md; updated: 2025-04-08; confidence: low -->",
            "logs/a.md",
            "2025-04-08",
            "low",
        ),
        ("<!--source:logs/b.md;updated:2025-01-01-->", "logs/b.md", "2025-01-01", "high"),
        ("<!-- updated: 2025-02-02 -->", "hand", "2025-02-02", "high"),
        ("<!-- confidence: MEDIUM -->", "hand", DEFAULT_UPDATED, "medium"),
        ("<!-- confidence: certain -->", "hand", DEFAULT_UPDATED, "high"),
        ("<!-- just a remark -->", "hand", DEFAULT_UPDATED, "high"),
    ],
    ids=["full", "no-spaces", "updated-only", "upper-confidence", "bad-confidence", "free-text"],
)
def test_provenance_comment(comment: str, source: str, updated: str, confidence: str) -> None:
    (fact,) = parse_facts(f"- Sarah: sarah@example.com {comment}", "s.md", DEFAULT_UPDATED)
    assert fact.value == "sarah@example.com"
    assert (fact.source, fact.updated, fact.confidence) == (source, updated, confidence)


def test_nested_facts_inherit_parent_provenance_and_stop_at_next_bullet() -> None:
    text = (
        "# Projects\n"
        "- Falcon: <!-- source: logs/f.md; updated: 2025-05-01; confidence: medium -->\n"
        "    beta: 2025-06-30\n"
        "    - launch: 2025-09-08 <!-- updated: 2025-09-09 -->\n"
        "    team: [Priya, Ana]\n"
        "- plain note line\n"
        "    orphan: not nested\n"
    )
    rows = _rows(text)
    assert rows[:3] == [
        (
            3,
            "Projects",
            "Falcon",
            "beta",
            "2025-06-30",
            "nested",
            "logs/f.md",
            "2025-05-01",
            "medium",
        ),
        (
            4,
            "Projects",
            "Falcon",
            "launch",
            "2025-09-08",
            "nested",
            "logs/f.md",
            "2025-09-09",
            "medium",
        ),
        (
            5,
            "Projects",
            "Falcon",
            "team",
            "[Priya, Ana]",
            "nested",
            "logs/f.md",
            "2025-05-01",
            "medium",
        ),
    ]
    assert rows[3][:6] == (6, "Projects", "Projects", "note", "plain note line", "note")
    assert len(rows) == 4


def test_table_header_gives_fields_and_blank_line_ends_table() -> None:
    text = (
        "# Team\n"
        "| Entity | Role | Email |\n"
        "|:---|---:|:---:|\n"
        "| Ana | designer | ana@example.com |\n"
        "| Marco | tech lead | |\n"
        "\n"
        "| Tool | Owner |\n"
        "|---|---|\n"
        "| Jira | Priya |\n"
    )
    rows = [(r[0], r[2], r[3], r[4], r[5]) for r in _rows(text)]
    assert rows == [
        (4, "Ana", "role", "designer", "table"),
        (4, "Ana", "email", "ana@example.com", "table"),
        (5, "Marco", "role", "tech lead", "table"),
        (9, "Jira", "owner", "Priya", "table"),
    ]


def test_plain_bullets_become_note_facts_of_their_section() -> None:
    text = (
        "- Before any heading\n# Travel\n- Prefers window seats\n## Food & drink ##\n* Vegetarian\n"
    )
    rows = [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in _rows(text)]
    assert rows == [
        (1, "", "note", "note", "Before any heading", "note"),
        (3, "Travel", "Travel", "note", "Prefers window seats", "note"),
        (5, "Food & drink", "Food & drink", "note", "Vegetarian", "note"),
    ]


def test_comment_lines_and_fenced_code_are_ignored() -> None:
    text = (
        "# Contacts\n"
        "<!-- - Hidden: hidden@example.com -->\n"
        "  <!-- indented comment -->\n"
        "```markdown\n"
        "# Not a heading\n"
        "- Fenced: fenced@example.com\n"
        "| Entity | Email |\n"
        "```\n"
        "~~~\n"
        "- Tilde: tilde@example.com\n"
        "~~~\n"
        "- John: john@example.com\n"
    )
    rows = _rows(text)
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        (12, "Contacts", "John", "john@example.com")
    ]


def test_multiline_html_comment_is_ignored() -> None:
    text = "# Contacts\n<!--\n- Old: old@example.com\n-->\n- John: john@example.com\n"
    assert [(r[2], r[4]) for r in _rows(text)] == [("John", "john@example.com")]


def test_fact_line_numbers_count_frontmatter() -> None:
    text = (
        "---\n"
        "title: Contacts\n"
        "tags: [people]\n"
        "---\n"
        "# Contacts\n"
        "\n"
        "- John: john@example.com\n"
        "- Ana:\n"
        "    role: designer\n"
        "\n"
        "| Entity | Email |\n"
        "|---|---|\n"
        "| Sarah | sarah@example.com |\n"
    )
    facts = parse_facts(text, "semantic/contacts.md", DEFAULT_UPDATED)
    assert [(f.line, f.entity, f.field) for f in facts] == [
        (7, "John", "email"),
        (9, "Ana", "role"),
        (13, "Sarah", "email"),
    ]
    lines = text.splitlines()
    for fact in facts:
        assert fact.value in lines[fact.line - 1]


def test_fact_line_numbers_with_crlf_and_bom() -> None:
    text = "\ufeff---\r\ntitle: x\r\n---\r\n# S\r\n\r\n- John: john@example.com\r\n"
    (fact,) = parse_facts(text, "s.md", DEFAULT_UPDATED)
    assert (fact.line, fact.value) == (6, "john@example.com")


def test_duplicate_fact_lines_get_distinct_ids() -> None:
    text = "# C\n- John: john@example.com\n- John: john@example.com\n- John: john@example.com\n"
    facts = parse_facts(text, "semantic/c.md", DEFAULT_UPDATED)
    assert [f.line for f in facts] == [2, 3, 4]
    assert len({f.id for f in facts}) == 3


def test_fact_ids_are_stable() -> None:
    path = "semantic/contacts.md"
    first = parse_facts(SPEC_FACTS, path, DEFAULT_UPDATED)
    second = parse_facts(SPEC_FACTS, path, "2030-01-01")
    assert [f.id for f in first] == [f.id for f in second]
    assert len({f.id for f in first}) == len(first)
    # an unrelated line inserted above does not renumber ids
    shifted = parse_facts("# Intro\n- Unrelated: thing\n\n" + SPEC_FACTS, path, DEFAULT_UPDATED)
    assert [f.id for f in shifted[1:]] == [f.id for f in first]
    assert [f.line for f in shifted[1:]] == [f.line + 3 for f in first]
    # ids depend on the file
    elsewhere = parse_facts(SPEC_FACTS, "semantic/other.md", DEFAULT_UPDATED)
    assert not {f.id for f in elsewhere} & {f.id for f in first}


def test_facts_reject_nul_and_bad_frontmatter() -> None:
    assert "NUL" in _parse_error(parse_facts, "- a: b\x00", "s.md", DEFAULT_UPDATED).reason
    err = _parse_error(parse_facts, "---\ntitle: [x\n---\n- a: b\n", "s.md", DEFAULT_UPDATED)
    assert err.line == 2
    assert _parse_error(parse_facts, "---\ntitle: x\n- a: b\n", "s.md", DEFAULT_UPDATED).line == 1


SEMANTIC_FILES = sorted(
    p for p in (SAMPLE_VAULT / "semantic").glob("*.md") if not p.name.startswith("_")
)


@pytest.mark.parametrize("path", SEMANTIC_FILES, ids=[p.name for p in SEMANTIC_FILES])
def test_sample_vault_fact_file_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    facts = parse_facts(text, f"semantic/{path.name}", DEFAULT_UPDATED)
    assert len(facts) >= 5
    lines = text.splitlines()
    for fact in facts:
        assert fact.entity and fact.value and fact.section
        assert fact.value in lines[fact.line - 1]
        assert fact.form in {"bullet", "nested", "table", "note"}
    assert len({f.id for f in facts}) == len(facts)


def test_sample_vault_facts_cover_every_form() -> None:
    facts = {
        p.name: parse_facts(p.read_text(encoding="utf-8"), f"semantic/{p.name}", DEFAULT_UPDATED)
        for p in SEMANTIC_FILES
    }
    assert {"contacts.md", "projects.md", "preferences.md"} <= set(facts)
    forms = {f.form for file_facts in facts.values() for f in file_facts}
    assert forms == {"bullet", "nested", "table", "note"}

    def find(name: str, line: int, field: str) -> tuple[str, str, str, str]:
        (fact,) = [f for f in facts[name] if f.line == line and f.field == field]
        return fact.entity, fact.value, fact.form, fact.source

    assert find("contacts.md", 5, "email") == ("John", "john@example.com", "bullet", "hand")
    assert find("contacts.md", 6, "email")[3] == (
        "logs/processed/2025-04-08_14-30-02_telegram_raw.md"
    )
    assert find("contacts.md", 11, "phone") == ("Marco", "+351 912 345 678", "nested", "hand")
    assert find("contacts.md", 26, "role") == (
        "Tomás Reyes",
        "Senior mobile engineer, Falcon",
        "table",
        "hand",
    )
    assert find("projects.md", 4, "deadline") == ("projectX", "2025-04-10", "nested", "hand")
    assert find("projects.md", 5, "stakeholders")[1] == "[John, Sarah]"
    assert find("projects.md", 23, "date") == ("Falcon", "2025-06-30", "table", "hand")
    assert find("preferences.md", 3, "note") == (
        "Travel",
        "Prefers window seats on flights",
        "note",
        "hand",
    )


# -------------------------------------------------------------------- fact properties

_FACT_LINES = [
    "# Contacts",
    "## Projects ##",
    "#",
    "- John: john@example.com",
    "- Sarah: sarah@example.com <!-- source: a.md; updated: 2025-01-01; confidence: low -->",
    "- projectX:",
    "    deadline: 2025-04-10",
    "    - nested: bullet",
    "  : empty key",
    "- : empty",
    "- :",
    "- **:**",
    "- a |b: c",
    "| Entity | Role |",
    "|---|---|",
    "| Ana | designer |",
    "| | |",
    "|",
    "||",
    "```",
    "~~~",
    "<!-- comment -->",
    "<!--",
    "-->",
    "- plain note",
    "-",
    "* ",
    "\t- tabbed: x",
    "---",
    "",
]
_FACT_TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    st.lists(
        st.one_of(st.sampled_from(_FACT_LINES), st.text(_TEXT_CHARS, max_size=30)), max_size=25
    ).flatmap(lambda lines: st.sampled_from(["\n", "\r\n"]).map(lambda sep: sep.join(lines))),
)


def _opens_frontmatter(text: str) -> bool:
    return re.match(r"---\s*$", text.lstrip("\ufeff").split("\n")[0]) is not None


@settings(max_examples=200, deadline=None)
@given(_FACT_TEXT.filter(lambda text: not _opens_frontmatter(text)))
def test_property_parse_facts_never_raises(text: str) -> None:
    facts = parse_facts(text, "semantic/random.md", DEFAULT_UPDATED)
    lines = text.splitlines()
    for fact in facts:
        assert fact.entity.strip() and fact.value.strip()
        assert fact.entity == fact.entity.strip() and fact.value == fact.value.strip()
        assert 1 <= fact.line <= len(lines)
        assert fact.value in lines[fact.line - 1]
        assert fact.confidence in CONFIDENCE_LEVELS
    assert len({f.id for f in facts}) == len(facts)


_PLAIN_CHARS = st.characters(
    blacklist_categories=["Cs"], blacklist_characters="\x00:|" + LINE_BREAKS
)


def _clean_piece(text: str) -> bool:
    return bool(text) and "<!--" not in text and text == text.strip()


_ENTITY = (
    st.text(_PLAIN_CHARS, min_size=1, max_size=60)
    .map(lambda s: s.strip().strip("*_`").strip())
    .filter(_clean_piece)
)
_PLAIN_VALUE = st.text(_PLAIN_CHARS, min_size=1, max_size=60).map(str.strip).filter(_clean_piece)
_VALUE_AND_FIELD = st.one_of(
    st.from_regex(r"[a-z0-9._%+-]{1,12}@[a-z0-9-]{1,10}\.[a-z]{2,5}", fullmatch=True).map(
        lambda v: (v, "email")
    ),
    st.from_regex(r"https?://[a-z0-9.-]{1,20}(/[a-z0-9._~?=&%-]{0,20})?", fullmatch=True).map(
        lambda v: (v, "url")
    ),
    st.dates().map(lambda d: (f"{d.year:04d}-{d.month:02d}-{d.day:02d}", "date")),
    st.from_regex(r"\+?[0-9]{2,4}( [0-9]{3,4}){2}", fullmatch=True).map(lambda v: (v, "phone")),
    _PLAIN_VALUE.map(lambda v: (v, value_kind(v) or "value")),
)
_PROVENANCE = st.tuples(
    st.one_of(
        st.just("hand"), st.from_regex(r"logs/processed/[A-Za-z0-9_.-]{1,30}\.md", fullmatch=True)
    ),
    st.dates().map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}"),
    st.sampled_from(CONFIDENCE_LEVELS),
)


@settings(max_examples=200, deadline=None)
@given(_ENTITY, _VALUE_AND_FIELD, _PROVENANCE)
def test_property_fact_line_round_trip(
    entity: str, value_field: tuple[str, str], provenance: tuple[str, str, str]
) -> None:
    value, field = value_field
    assert value_kind(value) in {field, None}
    source, updated, confidence = provenance
    line = format_fact_line(entity, field, value, format_provenance(source, updated, confidence))
    assert "\n" not in line
    (fact,) = parse_facts(f"# Section\n{line}\n", "semantic/generated.md", DEFAULT_UPDATED)
    got = (fact.entity, fact.field, fact.value, fact.source, fact.updated, fact.confidence)
    assert got == (entity, field, value, source, updated, confidence)
    assert (fact.line, fact.form, fact.section) == (2, "bullet", "Section")


def test_fact_line_with_explicit_field_round_trips() -> None:
    line = format_fact_line("John", "role", "designer")
    (fact,) = parse_facts(line, "semantic/x.md", DEFAULT_UPDATED)
    assert (fact.entity, fact.field, fact.value) == ("John", "role", "designer")


# ------------------------------------------------------------------------------- aliases


def test_aliases_both_directions() -> None:
    aliases = parse_aliases("marketing: [campaign-team, Campaign]\n", "semantic/aliases.yaml")
    assert aliases == {
        "campaign": ("campaign-team", "marketing"),
        "campaign-team": ("campaign", "marketing"),
        "marketing": ("campaign", "campaign-team"),
    }


def test_aliases_groups_sharing_a_term_merge_for_that_term() -> None:
    aliases = parse_aliases("john: [jd]\njohnny: [john]\n", "a.yaml")
    assert aliases["john"] == ("jd", "johnny")
    assert aliases["jd"] == ("john",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("john: johnny\n", {"john": ("johnny",), "johnny": ("john",)}),
        ("dad:\n", {"dad": ()}),
        ("dad: ~\nmom: [mum]\n", {"dad": (), "mom": ("mum",), "mum": ("mom",)}),
        ("", {}),
        ("# only a comment\n", {}),
        ("px: [2, ' ']\n", {"2": ("px",), "px": ("2",)}),
    ],
    ids=["string-value", "null-value", "null-and-list", "empty", "comment-only", "odd-items"],
)
def test_aliases_value_forms(text: str, expected: dict[str, tuple[str, ...]]) -> None:
    assert parse_aliases(text, "semantic/aliases.yaml") == expected


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: [b]\nb: c: d\n", 2),
        ("a: [b]\ne: [f\nc: [d]\n", 3),
        ("a:\n - b\n c: d\n", 3),
        ("\tx: y\n", 1),
    ],
    ids=["mapping-in-scalar", "unclosed-flow-mid-file", "bad-indent", "tab"],
)
def test_aliases_invalid_yaml_reports_line(text: str, line: int) -> None:
    err = _parse_error(parse_aliases, text, "semantic/aliases.yaml")
    assert err.line == line
    assert "invalid YAML" in err.reason


def test_aliases_unclosed_flow_at_end_blames_line_inside_file() -> None:
    err = _parse_error(parse_aliases, "a: [b]\nc: [d]\ne: [f\n", "semantic/aliases.yaml")
    assert err.line == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [("- a\n- b\n", "list"), ("just words\n", "str"), ("a: {b: c}\n", "a:")],
    ids=["top-level-list", "top-level-scalar", "mapping-value"],
)
def test_aliases_wrong_shape(text: str, needle: str) -> None:
    err = _parse_error(parse_aliases, text, "semantic/aliases.yaml")
    assert needle in err.reason


def test_sample_vault_aliases() -> None:
    text = (SAMPLE_VAULT / "semantic" / "aliases.yaml").read_text(encoding="utf-8")
    aliases = parse_aliases(text, "semantic/aliases.yaml")
    assert aliases["mum"] == ("mom", "mother")
    assert "projectx" in aliases["px"]
    assert aliases["johnny"] == ("jd", "john")


# ------------------------------------------------------------------------------ raw logs


def test_spec_raw_log() -> None:
    log = parse_log(SPEC_LOG, "logs/2025-04-08_14-30-02_telegram_raw.md")
    assert log.meta["channel"] == "telegram"
    assert log.meta["processed"] is False
    assert log.session == "agent:main:telegram:12345"
    assert [(t.role, t.name, t.tool, t.timestamp, t.content) for t in log.turns] == [
        (
            "user",
            None,
            None,
            datetime(2025, 4, 8, 14, 30, 2, tzinfo=UTC),
            "Please email John the project update.",
        ),
        (
            "tool_call",
            None,
            "send_email",
            datetime(2025, 4, 8, 14, 30, 40, tzinfo=UTC),
            '{"to": "john@example.com", "subject": "Project update"}',
        ),
        (
            "assistant",
            None,
            None,
            datetime(2025, 4, 8, 14, 30, 41, tzinfo=UTC),
            "Done: sent to John.",
        ),
    ]


def test_raw_log_speaker_names_and_tools() -> None:
    text = (
        "### user (Caroline) · 2025-04-08T14:30:02Z\nHi there\n\n"
        "### user (Jean-Luc Picard) · 2025-04-08T14:30:05+02:00\nEngage.\n"
        "### tool_result (bot) · web search · 2025-04-08T14:31:00.250Z\n[]\n"
    )
    turns = parse_log(text, "logs/x_raw.md").turns
    assert [(t.role, t.name, t.tool, t.content) for t in turns] == [
        ("user", "Caroline", None, "Hi there"),
        ("user", "Jean-Luc Picard", None, "Engage."),
        ("tool_result", "bot", "web search", "[]"),
    ]
    assert turns[1].timestamp == datetime(2025, 4, 8, 12, 30, 5, tzinfo=UTC)
    assert turns[2].timestamp == datetime(2025, 4, 8, 14, 31, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nid: x\n---\nstray text\n### user · 2025-04-08T14:30:02Z\nhi\n", 4),
        ("\n\nstray\n### user · 2025-04-08T14:30:02Z\nhi\n", 3),
        ("---\nid: x\n---\n\n## user · 2025-04-08T14:30:02Z\nhi\n", 5),
        ("### User · 2025-04-08T14:30:02Z\nhi\n", 1),
    ],
    ids=["after-frontmatter", "no-frontmatter", "wrong-heading-level", "uppercase-role"],
)
def test_raw_log_text_before_first_header(text: str, line: int) -> None:
    err = _parse_error(parse_log, text, "logs/x_raw.md")
    assert err.line == line
    assert "before the first turn header" in err.reason


def test_raw_log_bad_turn_timestamp_reports_line() -> None:
    text = "---\nid: x\n---\n### user · 2025-04-08T14:30:02Z\nhi\n### user · 2025-13-40T99:00:00Z\n"
    err = _parse_error(parse_log, text, "logs/x_raw.md")
    assert err.line == 6


@pytest.mark.parametrize(
    "stamp", ["9999-12-31T23:00:00-05:00", "0001-01-01T01:00:00+05:00"], ids=["after", "before"]
)
def test_raw_log_turn_timestamp_with_no_utc_time_reports_line(stamp: str) -> None:
    text = f"---\nid: x\n---\n### user · 2025-04-08T14:30:02Z\nhi\n### user · {stamp}\n"
    err = _parse_error(parse_log, text, "logs/x_raw.md")
    assert err.line == 6
    with pytest.raises(ValueError, match="out of the range of dates"):
        parse_timestamp(stamp)


def test_raw_log_without_turns() -> None:
    log = parse_log("---\nid: x\nprocessed: true\n---\n\n", "logs/x_raw.md")
    assert log.turns == () and log.meta == {"id": "x", "processed": True}
    assert log.session is None


SAMPLE_LOGS = sorted((SAMPLE_VAULT / "logs").rglob("*_raw.md"))


@pytest.mark.parametrize("path", SAMPLE_LOGS, ids=[p.name for p in SAMPLE_LOGS])
def test_sample_vault_logs_parse(path: Path) -> None:
    log = parse_log(path.read_text(encoding="utf-8"), path.name)
    assert len(log.turns) >= 2
    assert log.session
    stamps = [t.timestamp for t in log.turns]
    assert stamps == sorted(stamps)
    assert all(t.role in {"user", "assistant", "tool_call", "tool_result"} for t in log.turns)


def test_log_content_heading_lines_are_escaped() -> None:
    moment = datetime(2025, 4, 8, 14, 30, 2, tzinfo=UTC)
    content = "### user · 2025-04-08T14:30:02Z\n\\### not a header\n\\\\###\nplain"
    text = dump_log({"id": "x"}, [Turn("user", moment, content)])
    assert "\n### user · 2025-04-08T14:30:02Z\n" not in text.split("\n", 4)[-1]
    (turn,) = parse_log(text, "logs/x_raw.md").turns
    assert turn.content == content


# ------------------------------------------------------------------------- log properties

_LOG_LINES = [
    "### user · 2025-04-08T14:30:02Z",
    "### assistant (Bob) · tool · 2025-04-08T14:30:02Z",
    "### ",
    "###",
    "\\### escaped",
    "\\\\### double",
    "\\",
    "---",
    "# heading",
    '{"to": "john@example.com"}',
    "  indented",
    "",
]
_CONTENT = st.lists(
    st.one_of(st.sampled_from(_LOG_LINES), st.text(_TEXT_CHARS, max_size=40)), max_size=8
).map(lambda lines: normalize_content("\n".join(lines)))
_LABEL = st.one_of(
    st.none(),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=20),
).map(clean_label)


_SENDER = _LABEL.map(
    lambda text: clean_label(text.replace("[", " ").replace("]", " ")) if text else None
)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    return Turn(
        role=draw(st.from_regex(r"[a-z][a-z_]{0,31}", fullmatch=True)),
        timestamp=draw(_TIMESTAMP),
        content=draw(_CONTENT),
        name=draw(_LABEL),
        tool=draw(_LABEL),
        sender=draw(_SENDER),
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(turns(), max_size=6))
def test_property_log_round_trip(generated: list[Turn]) -> None:
    meta = {"id": "log-x", "channel": "cli", "session": "agent:main:cli:1", "processed": False}
    log = parse_log(dump_log(meta, generated), "logs/generated_raw.md")
    assert log.turns == tuple(generated)
    assert dict(log.meta) == meta


@pytest.mark.parametrize(
    "content",
    ["a\u2028### user · 2025-01-01T00:00:00Z\nb", "page\x0cbreak", "x\x85y"],
    ids=["forged-turn-u2028", "form-feed", "nel"],
)
def test_log_content_with_unicode_line_separators_round_trips(content: str) -> None:
    turn = Turn("assistant", datetime(2025, 1, 1, tzinfo=UTC), content)
    assert parse_log(dump_log({}, [turn]), "logs/x_raw.md").turns == (turn,)


@pytest.mark.parametrize(
    ("content", "tool"),
    [("binary \x00 tool output", None), ("ok", "bad\x00tool")],
    ids=["nul-in-content", "nul-in-tool"],
)
def test_log_with_nul_stays_parseable(content: str, tool: str | None) -> None:
    turn = Turn("tool_result", datetime(2025, 1, 1, tzinfo=UTC), content, tool=tool)
    parsed = parse_log(dump_log({}, [turn]), "logs/x_raw.md")
    assert len(parsed.turns) == 1


# --------------------------------------------------------------------- flat yaml

_TRICKY_SCALARS = st.sampled_from(
    [
        "yes",
        "No",
        "on",
        "OFF",
        "true",
        "False",
        "TRUE",
        "tRue",
        "y",
        "null",
        "Null",
        "NULL",
        "~",
        "0755",
        "0x1f",
        "1_000",
        "1:30",
        "12",
        "0",
        "-3",
        "3.5",
        ".inf",
        "1e3",
        "2025-04-08",
        "2025-04-08T14:32:10Z",
        "a: b",
        "a #b",
        "x#y",
        "-x",
        "?x",
        "'q'",
        "'it''s'",
        '"dq"',
        '"a\\\\b"',
        "@x",
        "`x",
        "%x",
        "!x",
        "&x",
        "*x",
        "|x",
        ">x",
        "[x]",
        "{x}",
        "a,b",
        "agent:main:cli:1",
        "café",
        "x ",
        " x",
        "",
    ]
)
_PLAUSIBLE_SCALARS = st.from_regex(r"[A-Za-z0-9'\"][A-Za-z0-9 ./@+:'\"-]{0,15}", fullmatch=True)
_FLAT_VALUES = st.one_of(
    _PLAUSIBLE_SCALARS,
    _PLAUSIBLE_SCALARS,
    st.lists(st.one_of(_PLAUSIBLE_SCALARS, _TRICKY_SCALARS), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
    _TRICKY_SCALARS,
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.lists(st.one_of(_TRICKY_SCALARS, st.text(max_size=6)), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
)
_FLAT_KEYS = st.one_of(
    st.sampled_from(["id", "tags", "yes", "null", "on", "a-b", "_x", "1a"]),
    st.from_regex(r"[a-z_][a-z0-9_-]{0,8}", fullmatch=True),
)


@given(st.lists(st.tuples(_FLAT_KEYS, _FLAT_VALUES), max_size=6))
@settings(max_examples=2000, deadline=None)
def test_flat_yaml_agrees_with_pyyaml(pairs: list[tuple[str, str]]) -> None:
    text = "\n".join(f"{key}: {value}" for key, value in pairs)
    fast = safeyaml.flat_yaml(text)
    if fast is None:
        return  # PyYAML decides
    parsed = yaml.load(text, Loader=safeyaml._Loader)
    assert fast == parsed
    assert [type(v) for v in fast.values()] == [type(v) for v in parsed.values()]


def test_flat_yaml_takes_what_memoryclaw_writes() -> None:
    text = dump_episode(_spec_episode()).split("---\n")[1]
    assert safeyaml.flat_yaml(text) == yaml.load(text, Loader=safeyaml._Loader)
    log_meta = {"id": "log-x", "session": "s", "processed": False, "closed": True}
    text = dump_log(log_meta, []).split("---\n")[1]
    assert safeyaml.flat_yaml(text) == yaml.load(text, Loader=safeyaml._Loader) == log_meta


@pytest.mark.parametrize(
    "text",
    ["id: 0:", "a: x: y", "yes: 1", "a: 0755", "a: [b, 'c, d']", "a: b # c", "a: x\u2028y", "a:"],
    ids=[
        "trailing-colon",
        "colon-space",
        "bool-key",
        "octal",
        "quoted-comma",
        "comment",
        "ls",
        "null",
    ],
)
def test_flat_yaml_leaves_anything_unusual_to_pyyaml(text: str) -> None:
    assert safeyaml.flat_yaml(text) is None


@given(st.lists(turns(), max_size=6))
@settings(max_examples=200, deadline=None)
def test_appending_turn_text_equals_dumping_the_whole_log(generated: list[Turn]) -> None:
    meta = {"id": "log-x", "session": "s", "processed": False}
    text = dump_log(meta, [])
    for count, turn in enumerate(generated):
        text = logformat.append_turn_text(text, count > 0, turn)
    assert text == dump_log(meta, generated)
    outline = logformat.log_outline(text, "logs/x.md")
    assert outline[1] == len(generated)
    assert outline[2] == (generated[-1].timestamp if generated else None)
    closed = logformat.replace_log_meta(text, "logs/x.md", {**meta, "closed": True})
    assert parse_log(closed, "logs/x.md").turns == parse_log(text, "logs/x.md").turns


# ------------------------------------------------------------------ yaml limits


def _alias_bomb(levels: int) -> str:
    """Each anchor a list of ten aliases to the one before: 10**levels strings in all."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    return "\n".join(lines) + f"\ntags: *a{levels - 1}\n"


def test_alias_bomb_is_refused_without_expanding_it() -> None:
    text = _alias_bomb(9)
    assert len(text) < 1024
    with pytest.raises(ParseError, match="aliases expand to over 10,000 values"):
        parse_episode(f"---\nsummary: s\n{text}---\n", "episodes/bomb.md", 0)


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(ParseError, match="aliases expand"):
        safeyaml.load_yaml("a: &a [x, *a]\n", "x.yaml")


def test_modest_aliases_still_load() -> None:
    assert safeyaml.load_yaml(_alias_bomb(3), "x.yaml")["tags"][9][9] == ["lol"] * 10


def test_yaml_over_the_size_limit_is_refused() -> None:
    text = "k: |\n" + "  text\n" * (safeyaml.MAX_YAML_BYTES // 7 + 1)
    with pytest.raises(ParseError, match="KiB, over the 1024 KiB limit"):
        safeyaml.load_yaml(text, "x.yaml")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("k:\n" + "".join(" " * i + "- x\n" for i in range(1, 80)), 64),
        ("a: 1\nb:\n" + "  - " * 70 + "x\n", 3),
        ("? " * 70 + "x\n", 1),
    ],
    ids=["indentation", "compact-sequence", "complex-keys"],
)
def test_block_nesting_is_refused_at_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError, match="nested deeper than 64 levels") as caught:
        safeyaml.load_yaml(text, "x.yaml", first_line=1)
    assert caught.value.line == line


_NESTED = st.recursive(
    st.text("abc", min_size=1, max_size=3),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=2)
        | st.dictionaries(st.text("xyz", min_size=1, max_size=2), inner, min_size=1, max_size=2)
    ),
    max_leaves=80,
)


@given(_NESTED)
@settings(max_examples=150, deadline=None)
def test_block_yaml_within_the_nesting_limit_reads_back(value: object) -> None:
    text = yaml.safe_dump({"k": value}, default_flow_style=False)
    assert safeyaml.load_yaml(text, "x.yaml") == {"k": value}


@given(st.lists(st.sampled_from(["- ", "? ", ": ", "  ", " ", "a", "\n", "[", "{"]), max_size=400))
@settings(max_examples=300, deadline=None)
def test_any_mix_of_indentation_and_indicators_parses_or_is_refused(parts: list[str]) -> None:
    text = "".join(parts) * 100  # up to ~40,000 levels: would crash libyaml unguarded
    with contextlib.suppress(ParseError):
        safeyaml.load_yaml(text, "x.yaml")


@pytest.mark.parametrize("key", ["tags", "participants", "entities"])
def test_lists_are_capped(key: str) -> None:
    items = ", ".join(f"v{i}" for i in range(MAX_LIST_ITEMS))
    ok = parse_episode(f"---\nsummary: s\n{key}: [{items}]\n---\n", "e.md", MTIME)
    assert len(getattr(ok, key)) == MAX_LIST_ITEMS
    with pytest.raises(ParseError, match=f"{key}: more than 1,000 items") as caught:
        parse_episode(f"---\nsummary: s\n{key}: [{items}, one-more]\n---\n", "e.md", MTIME)
    assert caught.value.line == 3


def test_synonym_groups_are_capped() -> None:
    group = ", ".join(f"s{i}" for i in range(aliases.MAX_SYNONYMS))
    assert len(parse_aliases(f"big: [{group}]\n", "a.yaml")["big"]) == aliases.MAX_SYNONYMS
    with pytest.raises(ParseError, match="big: more than 100 synonyms"):
        parse_aliases(f"big: [{group}, one-more]\n", "a.yaml")
    spread = "".join(f"g{i}: [shared]\n" for i in range(aliases.MAX_SYNONYMS + 1))
    with pytest.raises(ParseError, match="shared: more than 100 synonyms"):
        parse_aliases(spread, "a.yaml")


def test_a_participant_turn_keeps_its_sender() -> None:
    text = "### participant (Alex) [tg:99] · 2025-04-08T14:30:02Z\nAlex's email is a@b.example\n"
    turn = parse_log(text, "logs/x_raw.md").turns[0]
    assert (turn.role, turn.name, turn.sender) == ("participant", "Alex", "tg:99")
    assert logformat.format_turn(turn) == text


@pytest.mark.parametrize(
    ("scope_line", "problem"),
    [("scope: everyone", "scope"), ("scope: 'group: x'", "scope"), ("scope: [a]", "scope")],
    ids=["unknown-word", "space", "list"],
)
def test_an_episode_scope_that_is_not_one_is_reported_at_its_line(
    scope_line: str, problem: str
) -> None:
    text = f"---\nsummary: hi\n{scope_line}\n---\nbody\n"
    err = _parse_error(parse_episode, text, "episodes/x.md", 0)
    assert err.reason.startswith(problem) and err.line == 3


def test_fact_files_scope_their_facts_and_lines_override() -> None:
    text = (
        "---\nagent: work\nscope: direct\n---\n# Contacts\n"
        "- Ana: ana@example.com\n"
        "- Bo: bo@example.com <!-- source: x; updated: 2025-01-01; confidence: high;"
        " agent: main; scope: group:telegram:group:-5 -->\n"
    )
    ana, bo = parse_facts(text, "semantic/contacts.md", "2025-01-01")
    assert (ana.agent, ana.scope) == ("work", "direct")
    assert (bo.agent, bo.scope) == ("main", "group:telegram:group:-5")


def test_a_fact_line_with_a_bad_scope_is_reported_at_its_line() -> None:
    text = "# C\n- Ana: ana@example.com <!-- source: x; scope: everyone -->\n"
    err = _parse_error(parse_facts, text, "semantic/c.md", "2025-01-01")
    assert err.line == 2 and "scope" in err.reason


# ------------------------------------------------------------------ near-duplicates


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Dr. Lena  Hoffman", "dr lena hoffman", True),
        ("Lisbon.", "lisbon", True),
        ("Café", "CAFÉ", True),
        ("+44 7700-900214", "+44 (7700) 900214", True),
        ("Sarah@Example.com.", "sarah@example.com", True),
        ("j.smith@x.com", "j-smith@x.com", False),
        ("https://x.example/a", "https://x.example/b", False),
        ("C#", "C", False),
        ("50%", "50", False),
        ("blue", "bleu", False),
    ],
    ids=[
        "punctuation-case-space",
        "trailing-full-stop",
        "unicode-case",
        "phone-separators",
        "email-case",
        "emails-differing-by-punctuation",
        "urls",
        "meaningful-hash",
        "meaningful-percent",
        "different-words",
    ],
)
def test_value_key_says_which_values_are_one(a: str, b: str, same: bool) -> None:
    assert (value_key(a) == value_key(b)) is same


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(_text)
def test_property_normalising_is_idempotent_and_ignores_case_and_spacing(text: str) -> None:
    once = normalise_value(text)
    assert normalise_value(once) == once
    assert normalise_value(f"  {text.upper()} \t") == normalise_value(text.upper())
    assert "  " not in once and once == once.strip()
    assert value_key(value_key(text)) == value_key(text) or value_key(text).startswith(
        ("email:", "url:", "phone:")
    )


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_property_normalising_separates_at_every_space_and_punctuation_mark(text: str) -> None:
    """The fast path (a table for ASCII) agrees with the rule, character by character."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    by_rule = "".join(
        " "
        if char.isspace() or (unicodedata.category(char).startswith("P") and char not in "#%&")
        else char
        for char in folded
    )
    assert normalise_value(text) == " ".join(by_rule.split())


@given(st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=6), st.data())
def test_property_separating_punctuation_does_not_make_a_new_value(
    words: list[str], data: st.DataObject
) -> None:
    gaps = [data.draw(st.sampled_from([" ", ", ", " - ", ". ", "  ", "; "])) for _ in words[1:]]
    spaced = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:]))
    end = data.draw(st.sampled_from(["", ".", "!", "?"]))
    assert normalise_value(spaced + end) == " ".join(words)
    assert value_key(spaced.title() + end) == value_key(" ".join(words))


_ascii = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@given(_ascii, st.lists(_ascii.filter(str.strip), max_size=5))
def test_property_fingerprint_ignores_case_spacing_and_turn_numbers(
    summary: str, details: list[str]
) -> None:
    quoted = "\n".join(f"- #{n + 1} {line}" for n, line in enumerate(details))
    renumbered = "\n".join(f"-  #{n + 7}   {line.upper()}" for n, line in enumerate(details))
    fp = episode_fingerprint(summary, quoted)
    assert fp == episode_fingerprint(f"  {summary.upper()} ", renumbered)
    assert len(fp) == 64 and fp != episode_fingerprint(summary + " x", quoted)


@settings(max_examples=200)
@given(agent=st.text(st.sampled_from("ab \n\r\u2028;:->!<"), min_size=1, max_size=12))
def test_a_provenance_value_cannot_split_or_end_its_comment(agent: str) -> None:
    """An agent id with a newline once split a fact's comment, and the fact was then filed
    owner-level: every value is one line, with no ``;`` or ``-->`` of its own."""
    scope = "group:telegram:group:-1"
    comment = format_provenance("logs/a.md#1", "2026-01-02", "low", agent=agent, scope=scope)
    line = format_fact_line("Alex", "email", "alex@example.com", comment)
    assert "\n" not in line and "\r" not in line and "\u2028" not in line
    [fact] = parse_facts(f"# People\n\n{line}\n", "semantic/x.md", "2026-01-01")
    assert (fact.confidence, fact.source, fact.scope) == ("low", "logs/a.md#1", scope)
