"""Episode files: parse, render and round-trip them (SPEC section 2)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import frontmatter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw.errors import ParseError
from memoryclaw.vault.episodes import (
    CONFIDENCE_LEVELS,
    MAX_LIST_ITEMS,
    Episode,
    dump_episode,
    episode_fingerprint,
    episode_id_for_path,
    parse_episode,
)
from memoryclaw.vault.timestamps import parse_timestamp

UTC = timezone.utc


MTIME = 1_700_000_000.75  # 2023-11-14T22:13:20Z


MTIME_DT = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


# Every character ``str.splitlines`` treats as a line end.  ``\n`` is the only one the vault's
# writers use; the others are excluded from generated text unless a test is about them.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


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


def _spec_episode() -> Episode:
    return parse_episode(SPEC_EPISODE, "episodes/2025-04-08_14-32-10_email-john.md", MTIME)


def _parse_error(call, *args) -> ParseError:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        call(*args)
    return info.value


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


@pytest.mark.parametrize("key", ["tags", "participants", "entities"])
def test_lists_are_capped(key: str) -> None:
    items = ", ".join(f"v{i}" for i in range(MAX_LIST_ITEMS))
    ok = parse_episode(f"---\nsummary: s\n{key}: [{items}]\n---\n", "e.md", MTIME)
    assert len(getattr(ok, key)) == MAX_LIST_ITEMS
    with pytest.raises(ParseError, match=f"{key}: more than 1,000 items") as caught:
        parse_episode(f"---\nsummary: s\n{key}: [{items}, one-more]\n---\n", "e.md", MTIME)
    assert caught.value.line == 3


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
