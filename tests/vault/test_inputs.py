"""Untrusted input: bounded lines, strict JSON, Unicode text (properties over any input)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw import InvalidInputError, Vault
from memoryclaw.vault.inputs import (
    LABEL_LIMITS,
    MAX_DEPTH,
    bounded_lines,
    label_problem,
    parse_json_line,
    require_text,
    text_problem,
)

_TEXT = st.text(st.characters(codec=None), max_size=8)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300)
@given(st.binary(max_size=60) | _JSON.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_parse_or_raise_invalid_input(line: bytes) -> None:
    try:
        parse_json_line(line)
    except InvalidInputError as exc:
        assert exc.field == "line" and exc.problem


@settings(max_examples=300)
@given(_JSON)
def test_text_problem_iff_the_value_cannot_be_written_as_utf8(value: Any) -> None:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        problem = text_problem(value)
        assert problem is not None and "lone surrogate" in problem
        problem.encode("utf-8")  # the message itself can be written
    else:
        assert text_problem(value) is None
    assert parse_json_line(json.dumps(value)) == value


@given(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=8))
def test_bounded_lines_yields_each_line_or_none_past_the_limit(lines: list[bytes]) -> None:
    limit = 10
    got = list(bounded_lines(io.BytesIO(b"".join(x + b"\n" for x in lines)), limit))
    assert got == [x + b"\n" if len(x) <= limit else None for x in lines]


@pytest.mark.parametrize(
    ("depth", "ok"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False), (100_000, False)], ids=str
)
def test_depth_limit(depth: int, ok: bool) -> None:
    line = "[" * depth + "]" * depth
    if ok:
        parse_json_line(line)
    else:
        with pytest.raises(InvalidInputError, match="nested more than"):
            parse_json_line(line)


@pytest.mark.parametrize(
    ("text", "words"),
    [("a\udcffb", "byte 0xff is not UTF-8"), ("\ud83d", "half of a UTF-16 pair")],
    ids=["undecodable-byte", "half-pair"],
)
def test_require_text_names_field_and_cause(text: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        require_text("content", text, source="turns.jsonl", line=3)
    assert info.value.field == "content" and words in str(info.value)
    assert str(info.value).startswith("turns.jsonl:3: content: not valid Unicode text")


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("agent", "main", None),
        ("agent", "", "must not be empty"),
        ("agent", "ma in", "spaces"),
        ("agent", "main\nscope: owner", "control character U+000A"),
        ("sender", "tg:42\r", "control character U+000D"),
        ("channel", "tele\u2028gram", "control character U+2028"),
        ("sender", "Ana\x00", "control character U+0000"),
        ("session", "team chat", None),
        ("session", " team", "begin or end with a space"),
        ("session", "s" * LABEL_LIMITS["session"], None),
        ("session", "s" * (LABEL_LIMITS["session"] + 1), "over the limit of 400"),
        ("sender", "\udcff", "not valid Unicode"),
    ],
    ids=[
        "agent",
        "empty-agent",
        "agent-space",
        "agent-newline",
        "sender-cr",
        "channel-ls",
        "sender-nul",
        "session-space",
        "session-edge-space",
        "session-at-limit",
        "session-over-limit",
        "surrogate",
    ],
)
def test_label_problem_names_what_makes_an_id_unfit(
    field: str, value: str, problem: str | None
) -> None:
    found = label_problem(field, value)
    assert found is None if problem is None else (found is not None and problem in found)


def _log(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "log", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--agent", "work\nscope: owner"), "agent: holds control character U+000A"),
        (("--sender", "tg:5\n- Alex: x"), "sender: holds control character U+000A"),
        (("--channel", "tg\x1b[2J"), "channel: holds control character U+001B"),
        (("--session", "agent:main:" + "t" * 400), "session: 411 characters, over the limit"),
        (("--session", "agent:main:telegram:group:-1 x"), "session: starts with agent:"),
    ],
    ids=["agent-newline", "sender-newline", "channel-escape", "long-session", "key-with-space"],
)
def test_log_refuses_an_id_that_would_split_a_line_or_never_consolidate(
    empty_vault: Vault, flags: tuple[str, ...], message: str
) -> None:
    args = ("--session", "agent:main:main", "--role", "user", *flags, "Alex's email is a@b.example")
    proc = _log(empty_vault.root, *args)
    assert proc.returncode == 1 and proc.stderr.startswith(f"memoryclaw: error: {message}")
    assert proc.stderr.count("\n") == 1
    assert not list((empty_vault.root / "logs").glob("*.md"))


def test_a_group_session_id_with_spaces_is_consolidated(empty_vault: Vault) -> None:
    now = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
    for role, text in [("user", "Alex's email is alex@example.com"), ("assistant", "Noted.")]:
        empty_vault.log_turn("team chat", role, text, kind="group", timestamp=now)
    report = empty_vault.consolidate(all_logs=True)
    assert report.logs_read == 1 and len(report.episodes) == 1
    [episode] = empty_vault.search("Alex email").results
    assert episode.scope == "group:team chat"
