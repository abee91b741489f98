"""Where an OpenClaw install keeps its memory (:mod:`memoryclaw.openclaw_store`), by the
rules OpenClaw 2026.9.6 documents, and reading its transcripts without writing to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryclaw.openclaw_store import (
    agent_places,
    daily_notes,
    load_config,
    memory_files,
    sessions,
    state_dir,
    workspace_for,
)

from .openclaw_state import make_state

STATE = Path("/srv/claw")


@pytest.mark.parametrize(
    ("config", "agent", "expected"),
    [
        ({}, "main", "/srv/claw/workspace"),
        ({"agents": {"defaults": {"workspace": "/data/ws"}}}, "main", "/data/ws"),
        ({"agents": {"entries": {"main": {}, "ops": {}}}}, "ops", "/srv/claw/workspace-ops"),
        ({"agents": {"entries": {"main": {}, "ops": {}}}}, "main", "/srv/claw/workspace"),
        (
            {"agents": {"defaults": {"workspace": "/data/ws"}, "entries": {"a": {}, "b": {}}}},
            "b",
            "/data/ws/b",
        ),
        (
            {"agents": {"entries": {"a": {"default": True}, "b": {}}}},
            "a",
            "/srv/claw/workspace",
        ),
        ({"agents": {"entries": {"ops": {"workspace": "/w/ops"}}}}, "ops", "/w/ops"),
        ({"agents": {"entries": {"ops": {}}}}, "ops", "/srv/claw/workspace"),
    ],
    ids=[
        "default",
        "defaults-workspace",
        "roster-other",
        "roster-main",
        "roster-under-defaults",
        "roster-default-flag",
        "own-workspace",
        "sole-agent",
    ],
)
def test_workspace_for_follows_openclaws_rules(
    config: dict[str, Any], agent: str, expected: str
) -> None:
    assert workspace_for(agent, STATE, config) == Path(expected)


def test_state_dir_and_config(tmp_path: Path) -> None:
    assert state_dir({"OPENCLAW_STATE_DIR": str(tmp_path)}) == tmp_path
    assert state_dir({}).name == ".openclaw"
    (tmp_path / "openclaw.json").write_text('{"agents": {"entries": {"x": {}}}}')
    assert load_config(tmp_path, {}) == {"agents": {"entries": {"x": {}}}}
    (tmp_path / "openclaw.json").write_text("{agents: {}, // JSON5\n}")
    assert load_config(tmp_path, {}) == {}  # every location at its default


def test_agents_files_and_transcripts(tmp_path: Path) -> None:
    state = make_state(tmp_path / "openclaw")
    places = agent_places(state, load_config(state, {}))
    assert [(p.agent, p.workspace.name) for p in places] == [
        ("main", "workspace"),
        ("ops", "workspace-ops"),
    ]
    main, ops = places
    assert memory_files(main.workspace) == ["MEMORY.md", "USER.md", "memory/projects.md"]
    assert daily_notes(main.workspace) == ["memory/2026-01-05.md", "memory/2026-11-20.md"]
    stored = {s.key: s for s in sessions(main)}
    assert set(stored) == {"agent:main:explicit:s1", "agent:main:telegram:group:-100123"}
    assert stored["agent:main:explicit:s1"].origin.endswith("agent/openclaw-agent.sqlite")
    [legacy] = sessions(ops)
    assert (legacy.session_id, legacy.key) == ("old-1", "agent:ops:main")  # from sessions.json
    assert [n for n, _ in legacy.events] == [1, 2]  # line numbers of the JSONL file


def test_a_legacy_transcript_without_sessions_json(tmp_path: Path) -> None:
    state = make_state(tmp_path / "openclaw")
    folder = state / "agents" / "ops" / "sessions"
    (folder / "sessions.json").unlink()
    header = {"type": "session", "id": "abc", "timestamp": "2026-10-01T09:00:00Z"}
    (folder / "abc.jsonl").write_text(json.dumps(header) + "\n{broken\n\n")
    places = {p.agent: p for p in agent_places(state, {})}
    found = {s.session_id: s for s in sessions(places["ops"])}
    assert found["abc"].key == "agent:ops:explicit:abc"  # as OpenClaw keys a --session-id run
    assert found["abc"].unreadable == 1
    assert found["old-1"].key == "agent:ops:explicit:old-1"


def test_reading_never_writes(tmp_path: Path) -> None:
    state = make_state(tmp_path / "openclaw")
    before = {p: p.stat().st_mtime_ns for p in state.rglob("*") if p.is_file()}
    for place in agent_places(state, load_config(state, {})):
        sessions(place)
    after = {p: p.stat().st_mtime_ns for p in state.rglob("*") if p.is_file()}
    assert after == before
