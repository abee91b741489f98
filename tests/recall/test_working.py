"""Working memory (tier 1, primary design 2.1): one live session's goal, plan, facts and
observations, kept by a long-lived process and capped by estimated tokens."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.errors import ParseError
from memoryclaw.recall.results import FactResult
from memoryclaw.recall.working import (
    MAX_OBSERVATIONS,
    WorkingMemories,
    WorkingMemory,
    fact_key,
    stated_steps,
    with_session,
)
from memoryclaw.vault.config import WorkingMemorySettings
from memoryclaw.vault.logformat import Turn
from memoryclaw.vault.rawlogs import session_turns
from memoryclaw.vault.skillfiles import skill_steps

SESSION = "agent:main:cli:wm"


def _fact(entity: str, field: str, value: str) -> FactResult:
    return FactResult(
        id=f"f-{entity}-{field}",
        entity=entity,
        field=field,
        value=value,
        path="semantic/x.md",
        line=1,
        updated="2025-04-08",
        age_days=3,
        confidence="high",
        source="hand",
        matched=(),
    )


# ------------------------------------------------------------------ stated steps


@pytest.mark.parametrize(
    ("reply", "steps"),
    [
        ("Sure.\n1. Look up John\n2) Draft the email", ["Look up John", "Draft the email"]),
        ("- find the file\n* open it\n• read it", ["find the file", "open it", "read it"]),
        ("Found it. Next: I will draft the email.", []),  # not at a line start
        ("Found it.\nNext, I will draft the email.", ["draft the email."]),
        ("Then send it to Sarah", ["send it to Sarah"]),
        ("I'll check the calendar", ["check the calendar"]),
        ("**Next:** book the room", ["book the room"]),
        ("Nothing to do here.\nThenceforth it rained.", []),
        ("---\n# Heading\nplain text", []),
    ],
    ids=[
        "numbered",
        "bulleted",
        "mid-line",
        "next-then-i-will",
        "then",
        "ill",
        "bold-next",
        "no-steps",
        "rule-and-heading",
    ],
)
def test_stated_steps(reply: str, steps: list[str]) -> None:
    assert stated_steps(reply) == steps


def test_stated_steps_are_bounded() -> None:
    steps = stated_steps("\n".join(f"{n}. step {'x' * 500}" for n in range(1, 40)))
    assert len(steps) == 12 and all(len(s) <= 160 for s in steps)


# ------------------------------------------------------------------ facts


@pytest.mark.parametrize(
    ("entity", "field", "key"),
    [
        ("John", "email", "John email"),
        ("Dentist", "value", "Dentist"),
        ("Appointments", "note", "Appointments"),
        ("projectX", "deadline", "projectX deadline"),
        (" Ana  Lee ", "role", "Ana Lee role"),
    ],
    ids=["field", "value", "note", "nested", "spaces"],
)
def test_fact_keys_are_readable(entity: str, field: str, key: str) -> None:
    assert fact_key(_fact(entity, field, "v")) == key


def test_recalled_facts_merge_newest_last_and_notes_are_all_kept() -> None:
    memory = WorkingMemory()
    memory.recall("email John", [_fact("John", "email", "john@example.com")], None)
    memory.recall(
        "dentist?",
        [
            _fact("Dentist", "value", "Tuesday 3pm"),
            _fact("Health", "note", "allergic to penicillin"),
            _fact("Health", "note", "sees Dr Who"),
            _fact("John", "email", "john@newco.com"),
        ],
        None,
    )
    assert memory.facts == {
        "Dentist": "Tuesday 3pm",
        "Health": "allergic to penicillin",
        "Health (2)": "sees Dr Who",
        "John email": "john@newco.com",
    }
    assert list(memory.facts)[-1] == "John email"  # re-recalled: newest
    assert not any(key.endswith((" value", " note")) for key in memory.facts)


# ------------------------------------------------------------------ turns


def test_turns_update_goal_plan_and_observations_newest_first() -> None:
    memory = WorkingMemory()
    memory.observe("user", "<memoryclaw>\nRecalled notes: x\n</memoryclaw>\n\nEmail John")
    memory.observe("tool_call", '{"name": "John"}', "lookup_contact")
    memory.observe("tool_result", "john@example.com", "lookup_contact")
    memory.observe("assistant", "Found him.\nNext I will draft the email\nThen send it")
    memory.observe("system", "ignored")
    assert memory.goal == "Email John"
    assert memory.plan == ["draft the email", "send it"]
    assert memory.recent_observations == [
        "assistant: Found him. Next I will draft the email Then send it",
        "lookup_contact: john@example.com",
        'lookup_contact call: {"name": "John"}',
    ]
    memory.observe("assistant", "Done, no more steps.")
    assert memory.plan == ["draft the email", "send it"]  # kept until new steps are stated
    memory.observe("participant", "and cc Sarah")
    assert memory.goal == "and cc Sarah"


def test_the_active_skills_steps_are_the_plan() -> None:
    memory = WorkingMemory()
    memory.observe("assistant", "1. ask\n2. guess")
    memory.recall("email John the update", [], "send-update", ["lookup", "draft", "send"])
    assert memory.as_dict()["plan"] == ["lookup", "draft", "send"]
    assert memory.as_dict()["active_skill"] == "send-update"
    memory.recall("what time is it", [], None, ["lookup"])
    assert memory.plan == ["ask", "guess"]  # no skill: the assistant's own steps again


def test_skill_steps_come_from_the_pattern_else_the_steps_section(vault_dir: Path) -> None:
    assert skill_steps(vault_dir, "send-project-update") == [
        "lookup_contact",
        "draft_email",
        "send_email",
    ]
    folder = vault_dir / "skills" / "water-plants"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: water-plants\ndescription: Water the plants.\n---\n# Water\n\n"
        "## Steps\n\n1. Fill the can\n   with water\n2. Water each pot\n\n"
        "## Notes\n\n1. Not a step\n"
    )
    assert skill_steps(vault_dir, "water-plants") == ["Fill the can", "Water each pot"]


# ------------------------------------------------------------------ the cap


def test_the_cap_drops_oldest_observations_first() -> None:
    memory = WorkingMemory(goal="g")
    for n in range(10):
        memory.observe("tool_result", f"result number {n} " + "x" * 60, "t")
    memory.fit(60)
    assert memory.tokens() <= 60
    assert memory.recent_observations[0].startswith("t: result number 9")
    assert all("number 0" not in o for o in memory.recent_observations)
    assert memory.goal == "g"


_WORDS = st.text(min_size=0, max_size=300)


@settings(max_examples=150, deadline=None)
@given(
    max_tokens=st.integers(min_value=1, max_value=400),
    turns=st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "tool_call", "tool_result", "system"]),
            _WORDS,
            st.none() | st.text(max_size=30),
        ),
        max_size=30,
    ),
    facts=st.lists(
        st.tuples(st.text(max_size=40), st.sampled_from(["email", "value", "note"]), _WORDS),
        max_size=20,
    ),
    skill=st.none() | st.text(min_size=1, max_size=80),
    steps=st.lists(_WORDS, max_size=15),
)
def test_the_cap_always_holds(
    max_tokens: int,
    turns: list[tuple[str, str, str | None]],
    facts: list[tuple[str, str, str]],
    skill: str | None,
    steps: list[str],
) -> None:
    store = WorkingMemories(WorkingMemorySettings(max_tokens=max_tokens, max_sessions=2))
    half = len(turns) // 2
    for role, text, tool in turns[:half]:
        store.observe(SESSION, role, text, tool)
    store.recall(SESSION, "goal " * 50, [_fact(e, f, v) for e, f, v in facts], skill, steps)
    for role, text, tool in turns[half:]:
        store.observe(SESSION, role, text, tool)
    snapshot = store.snapshot(SESSION)
    memory = WorkingMemory(
        goal=snapshot["goal"],
        facts=snapshot["facts"],
        recent_observations=snapshot["recent_observations"],
        active_skill=snapshot["active_skill"],
        stated_plan=snapshot["plan"],
    )
    assert memory.tokens() <= max_tokens
    assert len(snapshot["recent_observations"]) <= MAX_OBSERVATIONS


# ------------------------------------------------------------------ the store


def test_the_store_drops_the_least_recently_used_session() -> None:
    store = WorkingMemories(WorkingMemorySettings(max_sessions=2))
    store.observe("a", "user", "task a")
    store.observe("b", "user", "task b")
    store.observe("a", "tool_result", "ok", "t")  # a is used again: b is now the oldest
    store.observe("c", "user", "task c")
    assert "a" in store and "c" in store and "b" not in store and len(store) == 2
    assert store.snapshot("b") == WorkingMemory().as_dict()
    assert "b" not in store  # reading does not create


def test_clear_forgets_only_that_session() -> None:
    store = WorkingMemories()
    store.observe("a", "user", "task a")
    store.observe("b", "user", "task b")
    assert store.clear("a") and not store.clear("a")
    assert store.snapshot("a")["goal"] == "" and store.snapshot("b")["goal"] == "task b"


# ------------------------------------------------------------------ through the API


def test_a_sessions_payload_carries_its_working_memory(vault: Vault) -> None:
    store = WorkingMemories()
    settings = vault.settings.working_memory
    logged = vault.log_turn(SESSION, "tool_result", "draft d-17 created", tool="draft_email")
    assert logged.entry is not None
    store.observe(SESSION, logged.entry.role, logged.entry.content, logged.entry.tool)
    payload = vault.retrieve("email John the projectX update")
    assert payload.working_memory["plan"] == []  # no session: the query alone, as before
    payload = with_session(payload, store, SESSION, vault.root, settings)
    memory = payload.as_dict()["working_memory"]
    assert memory["goal"] == "email John the projectX update"
    assert memory["active_skill"] == "send-project-update"
    assert memory["plan"] == ["lookup_contact", "draft_email", "send_email"]
    assert memory["facts"]["John email"] == "john@example.com"
    assert memory["recent_observations"] == ["draft_email: draft d-17 created"]
    assert store.snapshot("another session")["recent_observations"] == []


# ------------------------------------------------------------------ rebuilt from the log


def _turn(role: str, content: str, tool: str | None = None) -> Turn:
    return Turn(
        role=role, timestamp=datetime(2025, 4, 8, tzinfo=timezone.utc), content=content, tool=tool
    )


def test_a_session_not_seen_is_rebuilt_from_its_logged_turns() -> None:
    logged = {
        SESSION: [
            _turn("user", "book the flight"),
            _turn("tool_result", "fare 212 EUR", "search_fares"),
            _turn("assistant", "1. Hold the fare\n2. Pay"),
        ]
    }
    store = WorkingMemories(restore=lambda session: logged.get(session, []))
    memory = store.snapshot(SESSION)
    assert memory["goal"] == "book the flight"
    assert memory["plan"] == ["Hold the fare", "Pay"]
    assert memory["recent_observations"] == [
        "assistant: 1. Hold the fare 2. Pay",
        "search_fares: fare 212 EUR",
    ]
    assert "unknown" not in store and store.snapshot("unknown")["goal"] == ""


def test_a_turn_that_rebuilds_the_session_is_taken_in_once() -> None:
    logged = [_turn("tool_result", "fare 212 EUR", "search_fares")]
    store = WorkingMemories(restore=lambda session: logged)
    # the log already holds the turn being observed: the rebuild reads it, observe adds nothing
    memory = store.observe(SESSION, "tool_result", "fare 212 EUR", "search_fares")
    assert memory["recent_observations"] == ["search_fares: fare 212 EUR"]
    memory = store.observe(SESSION, "tool_result", "held", "hold_fare")
    assert memory["recent_observations"] == ["hold_fare: held", "search_fares: fare 212 EUR"]


def test_a_failing_rebuild_leaves_an_empty_memory_and_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def unreadable(session: str) -> list[Turn]:
        raise ParseError("logs/x.md", "broken header", line=3)

    store = WorkingMemories(restore=unreadable)
    assert store.snapshot(SESSION)["recent_observations"] == []
    assert "not rebuilt" in caplog.text and "logs/x.md" in caplog.text


def test_the_rebuild_reads_the_open_log_only(vault: Vault) -> None:
    vault.log_turn(SESSION, "tool_result", "draft d-17 created", tool="draft_email")
    store = WorkingMemories(restore=lambda session: session_turns(vault.root, session))
    assert store.snapshot(SESSION)["recent_observations"] == ["draft_email: draft d-17 created"]
    vault.end_session(SESSION)
    fresh = WorkingMemories(restore=lambda session: session_turns(vault.root, session))
    assert fresh.snapshot(SESSION)["recent_observations"] == []


_WRAPPED = (
    '{"tool": {"id": "openclaw:core:read", "name": "read"}, "result": {"content": '
    '[{"type": "text", "text": "Parcel ZX-4471 left"}, {"type": "image", "data": "…"}]}}'
)


@pytest.mark.parametrize(
    ("tool", "text", "seen"),
    [
        ("fetch", "plain words", "fetch: plain words"),
        ("tool_call", _WRAPPED, "read: Parcel ZX-4471 left"),
        ("search", '{"content": [{"type": "text", "text": "a"}, {"text": "b"}]}', "search: a b"),
        ("api", '{"status": 200, "body": "ok"}', 'api: {"status": 200, "body": "ok"}'),
        ("api", '{"content": "not a list"}', 'api: {"content": "not a list"}'),
        ("api", '{"content": [{"type": "text", "te', 'api: {"content": [{"type": "text", "te'),
    ],
    ids=["plain", "openclaw-wrapper", "mcp-content", "other-json", "content-not-list", "cut"],
)
def test_a_tool_result_is_observed_as_it_reads(tool: str, text: str, seen: str) -> None:
    memory = WorkingMemory()
    memory.observe("tool_result", text, tool)
    assert memory.recent_observations == [seen]
