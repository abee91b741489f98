"""Untrusted input: bounded lines, strict JSON, Unicode text (properties over any input)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw import InvalidInputError
from memoryclaw.inputs import MAX_DEPTH, bounded_lines, parse_json_line, require_text, text_problem

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
