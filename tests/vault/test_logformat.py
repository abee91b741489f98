"""The raw log format: turns under headers, parsed and rendered back (SPEC section 2)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw.errors import ParseError
from memoryclaw.vault import logformat
from memoryclaw.vault.logformat import Turn, clean_label, dump_log, normalize_content, parse_log
from memoryclaw.vault.timestamps import parse_timestamp

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


UTC = timezone.utc


# Every character ``str.splitlines`` treats as a line end.  ``\n`` is the only one the vault's
# writers use; the others are excluded from generated text unless a test is about them.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


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


def _parse_error(call, *args) -> ParseError:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        call(*args)
    return info.value


_TEXT_CHARS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00" + LINE_BREAKS)


_TIMESTAMP = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda moment: moment.replace(microsecond=0))


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


def test_a_participant_turn_keeps_its_sender() -> None:
    text = "### participant (Alex) [tg:99] · 2025-04-08T14:30:02Z\nAlex's email is a@b.example\n"
    turn = parse_log(text, "logs/x_raw.md").turns[0]
    assert (turn.role, turn.name, turn.sender) == ("participant", "Alex", "tg:99")
    assert logformat.format_turn(turn) == text
