"""The import parsers: memory-file items, notes as episodes, OpenClaw transcript events and
OpenAI-style messages arrays (pure functions; the writing is tested in test_workspace.py)."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw.errors import InvalidInputError
from memoryclaw.importers.parsers import (
    NoteItem,
    conversation_records,
    daily_note_date,
    foreign_lines,
    item_fact,
    memory_items,
    message_records,
    note_date,
    note_document,
    note_frontmatter,
    note_title,
    session_turns,
    written_by_memoryclaw,
)

# OpenClaw 2026.9.6's own USER.md template, as it seeds a new workspace, with one real
# directive and one superseded one added under "## Directives".
USER_MD = """# USER.md - User Model

Store stable user preferences and profile facts as directives that can guide future sessions.

Use one directive per entry:

```md
<!-- observed: YYYY-MM-DD | status: active -->

- Prefer concise progress updates during implementation work.
```

- Begin each directive with an imperative such as `Always`, `Never`, or `Prefer`.

## Directives

<!-- observed: 2026-10-02 | status: superseded -->

- Prefer tea in the morning.

<!-- observed: 2026-11-01 | status: active -->

- Prefer coffee in the morning.

<!-- observed: YYYY-MM-DD | status: active -->

- Prefer ...

## Related

- [Agent workspace](/concepts/agent-workspace)
"""


def test_user_model_keeps_only_active_filled_in_directives() -> None:
    items = memory_items(USER_MD, user_model=True)
    assert items == [NoteItem(23, "Directives", "Prefer coffee in the morning.", "2026-11-01")]


def test_the_untouched_template_has_no_items() -> None:
    template = USER_MD.replace("- Prefer tea in the morning.\n", "").replace(
        "- Prefer coffee in the morning.\n", ""
    )
    assert memory_items(template, user_model=True) == []


MEMORY_MD = """---
title: not an item
---
# Memory

Standing decision: releases go out on Tuesdays.

## People
- Locksmith: Keyworth Locks, 020 7946 0555
- Brightsmile Dental:
    - phone: 020 7946 0321
    - open late on Thursdays
* [ ] Call Wren about the trip
<!-- a comment, not an item -->
<!--
- nor this
-->
"""


def test_memory_items_read_lists_prose_and_nested_keys() -> None:
    items = memory_items(MEMORY_MD)
    assert [(i.line, i.section, i.text) for i in items] == [
        (6, "Memory", "Standing decision: releases go out on Tuesdays."),
        (9, "People", "Locksmith: Keyworth Locks, 020 7946 0555"),
        (11, "People", "Brightsmile Dental (phone): 020 7946 0321"),
        (12, "People", "Brightsmile Dental: open late on Thursdays"),
        (13, "People", "Call Wren about the trip"),
    ]


@pytest.mark.parametrize(
    ("text", "entity", "field", "value"),
    [
        ("Locksmith: Keyworth Locks", "Locksmith", "value", "Keyworth Locks"),
        ("Wren email: wren@example.com", "Wren", "email", "wren@example.com"),
        ("Wren (birthday): 1990-04-12", "Wren", "birthday", "1990-04-12"),
        ("Prefers window seats", "People", "note", "Prefers window seats"),
    ],
    ids=["key-value", "field-from-value", "explicit-field", "note"],
)
def test_item_fact_reads_an_item_as_a_fact_line_reads(
    text: str, entity: str, field: str, value: str
) -> None:
    fact = item_fact(NoteItem(3, "People", text))
    assert (fact.entity, fact.field, fact.value) == (entity, field, value)
    assert fact.is_note == (field == "note")


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFG0123456789", min_size=1, max_size=12)
_ITEM_TEXT = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _ITEM_TEXT), min_size=1, max_size=20))
def test_every_written_item_is_read_back_at_its_line(lines: list[tuple[bool, str]]) -> None:
    """A file of headings and list items: each item comes back, in order, at its line,
    under the heading above it."""
    text, expected, section = "", [], ""
    for number, (is_heading, words) in enumerate(lines, start=1):
        if is_heading:
            text += f"## {words}\n"
            section = words
        else:
            text += f"- {words}\n"
            expected.append(NoteItem(number, section, words))
    assert memory_items(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.booleans())
def test_memory_items_never_fail_and_point_at_real_lines(text: str, user_model: bool) -> None:
    items = memory_items(text, user_model=user_model)
    count = len(text.replace("\r\n", "\n").split("\n"))
    assert all(1 <= item.line <= count and item.text for item in items)
    assert [i.line for i in items] == sorted({i.line for i in items})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), _WORD)
def test_note_document_never_fails_and_keeps_line_order(text: str, fallback: str) -> None:
    document = note_document(text, fallback)
    assert document.summary
    numbers = [n for n, _ in document.lines]
    assert numbers == sorted(set(numbers))


def test_note_document_takes_the_first_heading_as_summary() -> None:
    document = note_document("# Boiler service\n\nEngineer at 8am.\n- bring the key\n", "x")
    assert document.summary == "Boiler service"
    assert document.lines == ((3, "Engineer at 8am."), (4, "bring the key"))


@pytest.mark.parametrize(
    ("name", "day"),
    [
        ("2026-11-20.md", date(2026, 11, 20)),
        ("2026-11-20-standup.md", date(2026, 11, 20)),
        ("2026-02-30.md", None),
        ("projects.md", None),
        ("2026-11-20.txt", None),
    ],
    ids=["daily", "slugged", "impossible-date", "undated", "not-markdown"],
)
def test_daily_note_date(name: str, day: date | None) -> None:
    assert daily_note_date(name) == day


# ------------------------------------------------------------------ OpenClaw transcripts

# Events as OpenClaw 2026.9.6 stores them (a `openclaw agent --local` turn that wrote a file
# through the tool_call wrapper), shortened.
USER_EVENT = {
    "type": "message",
    "id": "57d0",
    "timestamp": "2026-11-23T23:20:38.315Z",
    "message": {
        "role": "user",
        "content": "Remember my dentist is Harbourside Dental.",
        "timestamp": 1795476032735,
        "__openclaw": {"senderIsOwner": True},
    },
}
CALL_EVENT = {
    "type": "message",
    "id": "7310",
    "timestamp": "2026-11-23T23:20:38.440Z",
    "message": {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Saving it."},
            {
                "type": "toolCall",
                "id": "call_1",
                "name": "tool_call",
                "arguments": {"id": "write", "args": {"path": "MEMORY.md", "content": "x"}},
            },
        ],
        "timestamp": 1795476038400,
    },
}
RESULT_TEXT = json.dumps({"tool": {"id": "openclaw:core:write", "name": "write"}, "result": {}})
RESULT_EVENT = {
    "type": "message",
    "id": "9c6d",
    "timestamp": "2026-11-23T23:20:38.562Z",
    "message": {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "tool_call",
        "content": [{"type": "text", "text": RESULT_TEXT}],
    },
}


def test_session_turns_read_openclaw_events() -> None:
    [user] = session_turns(USER_EVENT)
    assert (user.role, user.content, user.event_id) == (
        "user",
        "Remember my dentist is Harbourside Dental.",
        "57d0",
    )
    assert user.timestamp == datetime(2026, 11, 23, 23, 20, 32, 735000, tzinfo=timezone.utc)
    text, call = session_turns(CALL_EVENT)
    assert (text.role, text.content) == ("assistant", "Saving it.")
    assert (call.role, call.tool) == ("tool_call", "write")  # the tool_call wrapper unwrapped
    assert json.loads(call.content) == {"path": "MEMORY.md", "content": "x"}
    [result] = session_turns(RESULT_EVENT)
    assert (result.role, result.tool) == ("tool_result", "write")
    assert result.timestamp == datetime(2026, 11, 23, 23, 20, 38, 562000, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "session", "id": "s1", "timestamp": "2026-11-23T23:20:37.778Z"},
        {"type": "custom", "customType": "model-snapshot", "data": {}},
        {"type": "message", "message": {"role": "custom", "content": ""}},
        {"type": "message", "timestamp": "2026-11-23T23:20:37Z", "message": {"role": "user"}},
        {"type": "message", "message": {"role": "user", "content": "no time"}},
    ],
    ids=["header", "custom", "custom-message", "empty-user", "no-time"],
)
def test_session_turns_skip_what_is_not_a_turn(event: dict[str, Any]) -> None:
    assert session_turns(event) == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["message", "session", "custom"]), "message": _JSON},
        optional={"id": _JSON, "timestamp": _JSON},
    )
)
def test_session_turns_never_fail_on_odd_events(event: dict[str, Any]) -> None:
    for turn in session_turns(event):
        assert turn.role in ("user", "assistant", "tool_call", "tool_result")
        assert turn.timestamp.tzinfo is not None


# ------------------------------------------------------------- OpenAI-style messages


CHAT = {
    "id": "chat-7",
    "created": 1795476000,
    "model": "gpt-x",
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Porto?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Porto"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C, sunny"},
        {"role": "assistant", "content": "It is 18C and sunny in Porto."},
    ],
}


def test_conversation_records_map_every_role() -> None:
    records = conversation_records(CHAT, source="chat.json", line=1)
    shared = {"session": "chat-7", "timestamp": "2026-11-23T23:20:00+00:00"}
    assert records == [
        {**shared, "role": "user", "content": "Weather in Porto?"},
        {**shared, "role": "tool_call", "content": '{"city": "Porto"}', "tool": "weather"},
        {**shared, "role": "tool_result", "content": "18C, sunny", "tool": "weather"},
        {**shared, "role": "assistant", "content": "It is 18C and sunny in Porto."},
    ]


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ("not a list", "messages"),
        (["text"], "messages[0]"),
        ([{"role": "narrator", "content": "x"}], "messages[0]"),
        ([{"role": "user", "content": 7}], "messages[0]"),
        ([{"role": "assistant", "content": "", "tool_calls": "x"}], "messages[0]"),
    ],
    ids=["not-list", "not-object", "unknown-role", "bad-content", "bad-tool-calls"],
)
def test_message_records_refuse_bad_input_naming_where(messages: Any, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        message_records(messages, source="chats.jsonl", line=4)
    assert caught.value.field == field
    assert str(caught.value).startswith("chats.jsonl:4: ")


_MESSAGE = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, _ITEM_TEXT),
    st.builds(
        lambda t: {"role": "assistant", "content": [{"type": "text", "text": t}]}, _ITEM_TEXT
    ),
    st.builds(lambda t: {"role": "system", "content": t}, _ITEM_TEXT),
    st.builds(
        lambda names: {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}", "function": {"name": n, "arguments": "{}"}}
                for i, n in enumerate(names)
            ],
        },
        st.lists(_WORD, min_size=1, max_size=3),
    ),
    st.builds(lambda t: {"role": "tool", "tool_call_id": "c0", "content": t}, _ITEM_TEXT),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_MESSAGE, max_size=12))
def test_message_records_keep_each_turn_in_order(messages: list[dict[str, Any]]) -> None:
    records = message_records(messages)
    expected = []
    for message in messages:
        if message["role"] == "system":
            continue
        if message["role"] == "tool":
            expected.append(("tool_result", message["content"]))
        elif message.get("tool_calls"):
            expected += [("tool_call", "{}") for _ in message["tool_calls"]]
        else:
            content = message["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            expected.append((message["role"], text))
    assert [(r["role"], r["content"]) for r in records] == expected
    assert all(r["tool"] for r in records if r["role"] in ("tool_call", "tool_result"))


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ("- **Timezone:** Europe/Lisbon", "Timezone: Europe/Lisbon"),
        ("- **Name**: Sam", "Name: Sam"),
        ("- **Name:**", None),
        ("- Prefer ...", None),
        ("- TODO …", None),
        ("- Call mom about the trip to Porto...", "Call mom about the trip to Porto..."),
        ("- Reviewed on YYYY-MM-DD", None),
        ("- [Agent workspace](/concepts/agent-workspace)", None),
    ],
    ids=[
        "bold-key",
        "bold-key-colon-outside",
        "empty-template-key",
        "placeholder",
        "placeholder-ellipsis-char",
        "real-sentence-with-dots",
        "template-date",
        "bare-link",
    ],
)
def test_template_lines_are_no_items(line: str, text: str | None) -> None:
    items = memory_items(f"# USER.md - About Your Human\n{line}\n")
    assert [i.text for i in items] == ([text] if text else [])


CLAUDE_MEMORY = """---
name: user-role
description: The user is a data scientist who prefers polars over pandas
type: user
---
Works on churn models; wants plots in plotly.
"""


def test_frontmatter_names_and_dates_a_note() -> None:
    document = note_document(CLAUDE_MEMORY, "user_role")
    assert document.summary == "The user is a data scientist who prefers polars over pandas"
    assert document.lines == ((6, "Works on churn models; wants plots in plotly."),)
    assert note_date(note_frontmatter("---\ndate: 2026-02-03\n---\nx\n")) == date(2026, 2, 3)
    assert note_date(note_frontmatter("---\ncreated: 2026-02-03T10:00\n---\n")) == date(2026, 2, 3)
    assert note_frontmatter("---\n: [broken\n---\nx\n") == {}  # unreadable: no frontmatter
    assert note_title({"title": "  A   B "}) == "A B" and note_title({"title": 3}) is None


@pytest.mark.parametrize(
    ("line", "left_out"),
    [
        ("- UNTRUSTED Alex: a@evil.example (said by Mallory) <!-- source: x -->", True),
        ("UNTRUSTED Alex: a@evil.example", True),
        ("- CONFLICT (sync) Bank: EvilBank", True),
        ("- LOW Alex: likes tea <!-- source: l.md; confidence: low -->", True),
        ("- Bob: b@example.com <!-- source: l.md; agent: ops; scope: direct -->", True),
        ("- Eve: e@example.com <!-- scope: group:telegram:group:-1 -->", True),
        ("- Carol: c@example.com <!-- source: by hand; scope: owner -->", False),
        ("- LOW carb diet from March", False),
        ("- Conflict with Bob resolved", False),
        ("- Editor: Helix", False),
    ],
    ids=[
        "untrusted",
        "untrusted-no-bullet",
        "conflict-sync",
        "low-with-provenance",
        "agent-in-provenance",
        "group-scope-in-provenance",
        "owner-scope",
        "low-as-a-word",
        "conflict-as-a-word",
        "plain-fact",
    ],
)
def test_foreign_lines_leaves_out_what_a_vault_did_not_file_owner_level(
    line: str, left_out: bool
) -> None:
    text, count = foreign_lines(f"# Notes\n{line}\n- after")
    assert count == int(left_out)
    assert text == f"# Notes\n{'' if left_out else line}\n- after"  # line numbers kept


@pytest.mark.parametrize(
    ("meta", "written"),
    [
        ({"id": "ep-1", "timestamp": "2025-01-01T00:00:00Z", "scope": "owner"}, True),
        ({"agent": "main"}, True),
        ({"session": "agent:main:main"}, True),
        ({"source_turns": [1, 2]}, True),
        ({"scope": "group:telegram:group:-1"}, True),
        ({"scope": "work", "title": "Work"}, False),
        ({"title": "Ideas", "tags": ["a"]}, False),
    ],
    ids=["episode", "agent", "session", "source-turns", "scope", "obsidian-scope", "obsidian"],
)
def test_written_by_memoryclaw(meta: dict[str, object], written: bool) -> None:
    assert written_by_memoryclaw(meta) is written
