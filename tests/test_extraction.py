"""Fact extraction (SPEC section 5), as the episodes of :func:`summarize_log` keep it: what a
person's turn states, whom a tool call writes to, and what states nothing."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from memoryclaw.notes import RawLog, Turn
from memoryclaw.summarize import summarize_log

from .test_summarize import SECRET, UTC, make_log


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Sarah's new email is sarah.k@newco.com",
            ("Sarah", "email", "sarah.k@newco.com", "high"),
            id="email-possessive",
        ),
        pytest.param(
            "Email John at john@example.com",
            ("John", "email", "john@example.com", "high"),
            id="email-name",
        ),
        pytest.param(
            "my email is me@example.org",
            ("User", "email", "me@example.org", "high"),
            id="email-mine",
        ),
        pytest.param(
            "send it to bob@corp.com", ("Bob", "email", "bob@corp.com", "low"), id="email-unnamed"
        ),
        pytest.param(
            "call me on +44 7700 900123",
            ("User", "phone", "+44 7700 900123", "high"),
            id="phone-intl",
        ),
        pytest.param(
            "my phone number is 020 7946 0958",
            ("User", "phone", "020 7946 0958", "medium"),
            id="phone-mine",
        ),
        pytest.param(
            "The projectX deadline is April 10.",
            ("projectX", "deadline", "2025-04-10", "medium"),
            id="deadline-month-day",
        ),
        pytest.param(
            "Report due 2025-04-10", ("User", "deadline", "2025-04-10", "high"), id="deadline-iso"
        ),
        pytest.param(
            "The deadline is February 30",
            ("User", "deadline", "February 30", "low"),
            id="deadline-bad-date",
        ),
        pytest.param(
            "deadline is next Friday",
            ("User", "deadline", "2025-04-18", "medium"),  # said on Tuesday 2025-04-08
            id="deadline-vague",
        ),
        pytest.param(
            "Docs are at https://example.com/docs.",
            ("User", "url", "https://example.com/docs", "high"),
            id="url",
        ),
        pytest.param(
            "Please run `make test` now",
            ("User", "command", "make test", "medium"),
            id="command-backticks",
        ),
        pytest.param(
            "run npm install --save-dev x",
            ("User", "command", "npm install --save-dev x", "low"),
            id="command-run",
        ),
        pytest.param(
            "Notes live in ~/notes/projectx.md",
            ("User", "path", "~/notes/projectx.md", "medium"),
            id="path",
        ),
        pytest.param(
            "My favorite color is blue.",
            ("User", "favorite color", "blue", "medium"),
            id="my-x-is-y",
        ),
        pytest.param(
            "Emma's birthday is March 3rd", ("Emma", "birthday", "March 3", "medium"), id="birthday"
        ),
        pytest.param(
            "my birthday is 12 March 1990",
            ("User", "birthday", "1990-03-12", "medium"),
            id="birthday-mine",
        ),
        pytest.param(
            "I prefer window seats", ("User", "prefers", "window seats", "medium"), id="prefers"
        ),
        pytest.param("Honestly, I love hiking", ("User", "likes", "hiking", "medium"), id="likes"),
        pytest.param(
            "I don't like loud restaurants",
            ("User", "dislikes", "loud restaurants", "medium"),
            id="dont-like",
        ),
        pytest.param("I hate mornings", ("User", "dislikes", "mornings", "medium"), id="hates"),
    ],
)
def test_facts_stated_by_the_user(text: str, expected: tuple[str, str, str, str]) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    assert [(f.entity, f.field, f.value, f.confidence) for f in episode.facts] == [expected]
    assert episode.facts[0].turn == 1


def test_a_date_without_a_year_is_the_next_one() -> None:
    december = Turn("user", datetime(2025, 12, 20, 9, 0, tzinfo=UTC), "the deadline is 3rd of Jan")
    (episode,) = summarize_log(RawLog("logs/x.md", {}, (december,)))
    assert [(f.field, f.value, f.confidence) for f in episode.facts] == [
        ("deadline", "2026-01-03", "medium")
    ]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Is your email x@y.com?", id="question"),
        pytest.param("I love it", id="pronoun"),
        pytest.param("I'd love to help", id="wish"),
        pytest.param("I love to paint", id="infinitive"),
        pytest.param("Showing diversity in my art is important to me", id="my-not-subject"),
        pytest.param("the things I love make me happy", id="relative-clause"),
        pytest.param("my sister is a doctor", id="my-relation"),
        pytest.param(f"My password is hunter2xyz and my api key is {SECRET}", id="secrets"),
        pytest.param("we were late due to the rain", id="due-to"),
        pytest.param("I run for office", id="run-not-a-command"),
        pytest.param("It works 24/7, and/or on weekends", id="slashes-not-paths"),
        pytest.param("Give me 3-4 options between 1200 and 1500", id="numbers-not-phones"),
    ],
)
def test_no_fact_from_what_is_not_stated(text: str) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    assert episode.facts == ()


def test_facts_belong_to_a_named_speaker_and_never_to_the_assistant() -> None:
    log = make_log(
        ("user", "I love pottery, and my dog is Oscar.", "Caroline", None),
        ("assistant", "My email is bot@example.com and I love chess."),
        ("tool_result", '{"email": "ann@example.com", "to": "ann@example.com"}', None, "lookup"),
    )
    (episode,) = summarize_log(log)
    assert {(f.entity, f.field, f.value, f.turn) for f in episode.facts} == {
        ("Caroline", "likes", "pottery", 1),
        ("Caroline", "dog", "Oscar", 1),
    }


@pytest.mark.parametrize(
    ("request_text", "args", "expected"),
    [
        pytest.param(
            "Email Sarah the notes",
            {"to": "sarah@example.com"},
            {("Sarah", "high")},
            id="name-matches",
        ),
        pytest.param(
            "Send the notes to my boss Ana",
            {"to": "a.k@example.com"},
            {("Ana", "medium")},
            id="one-name",
        ),
        pytest.param("Send it to Ana and Ben", {"to": ["x@example.com"]}, set(), id="ambiguous"),
        pytest.param(
            "Add Ben in cc", {"cc": ["ben@example.com"], "to": "nope"}, {("Ben", "high")}, id="cc"
        ),
    ],
)
def test_tool_call_recipients_become_contacts(
    request_text: str, args: dict[str, object], expected: set[tuple[str, str]]
) -> None:
    log = make_log(("user", request_text), ("tool_call", json.dumps(args), None, "send_email"))
    (episode,) = summarize_log(log)
    emails = [f for f in episode.facts if f.field == "email"]
    assert {(f.entity, f.confidence) for f in emails} == expected
    assert all(f.turn == 2 for f in emails)
