"""Where an OpenClaw install keeps its memory (:mod:`memoryclaw.importers.openclaw_store`), by the
rules OpenClaw 2026.9.6 documents, and reading its transcripts without writing to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryclaw.importers.openclaw_store import (
    agent_places,
    daily_notes,
    load_config,
    memory_files,
    sessions,
    state_dir,
    workspace_for,
)

from ..openclaw_state import make_state

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


MALFORMED_ROWS = [
    pytest.param(("s1", "x", '{"type": "session", "id": "s1"}'), "seq is text", id="text-seq"),
    pytest.param((b"\x00\x01", 7, "{}"), "session_id is not text", id="blob-session-id"),
    pytest.param((None, 8, "{}"), "session_id is not text", id="null-session-id"),
    pytest.param(("s1", 2.5, "{}"), "seq is real", id="real-seq"),
    pytest.param(("s1", 90, b"{}"), "event_json is blob", id="blob-event"),
    pytest.param((b"\xff\xfe", 9, "{}"), "session_id is not text", id="non-utf8-id"),
]


def _malformed_store(state: Path, row: tuple[Any, Any, Any]) -> Path:
    """The main agent's store, with one transcript_events row of the wrong types added (as a
    store written by another tool, or damaged, may hold: the columns are not enforced)."""
    import sqlite3

    path = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t AS SELECT * FROM transcript_events")
        db.execute("DROP TABLE transcript_events")  # the same columns, none of them NOT NULL
        db.execute("ALTER TABLE t RENAME TO transcript_events")
        if isinstance(row[0], bytes) and row[0].startswith(b"\xff"):
            db.execute("INSERT INTO transcript_events VALUES (CAST(? AS TEXT), ?, ?, 0, NULL)", row)
        else:
            db.execute("INSERT INTO transcript_events VALUES (?, ?, ?, 0, NULL)", row)
    db.close()
    return path


@pytest.mark.parametrize(("row", "reason"), MALFORMED_ROWS)
def test_a_malformed_store_row_is_skipped_by_name_not_a_crash(
    tmp_path: Path, row: tuple[Any, Any, Any], reason: str
) -> None:
    state = make_state(tmp_path / "openclaw")
    path = _malformed_store(state, row)
    main = agent_places(state, load_config(state, {}))[0]
    skipped: list[str] = []
    found = {s.session_id: s for s in sessions(main, skipped)}
    assert set(found) == {"s1", "g1"}  # the well-formed rows are all read
    assert [len(found["s1"].events), len(found["g1"].events)] == [3, 3]
    [line] = skipped
    assert line.startswith(f"{path}: transcript_events row ") and reason in line


def test_a_session_key_that_is_not_text_leaves_its_session_out(tmp_path: Path) -> None:
    import sqlite3

    state = make_state(tmp_path / "openclaw")
    path = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE session_windows SET session_key = x'00ff' WHERE session_id = 'g1'")
    db.close()
    main = agent_places(state, load_config(state, {}))[0]
    skipped: list[str] = []
    found = {s.session_id: s for s in sessions(main, skipped)}
    # never guessed as a direct session by its id: a group's turns stay out
    assert set(found) == {"s1"}
    assert skipped == [
        f"{path}: session_windows row 1 (session_id 'g1'): session_key is not text; "
        "its session is left out"
    ]


def test_openclaw_import_of_a_malformed_store_reports_the_rows_and_imports_the_rest(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from tests.cli.test_cli import clean_env

    state = make_state(tmp_path / "openclaw")
    path = _malformed_store(state, ("s1", "x", "{}"))
    vault = tmp_path / "vault"
    env = clean_env(OPENCLAW_STATE_DIR=str(state))
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault)]
    subprocess.run([*command, "init"], env=env, check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        [*command, "openclaw", "import", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["turns"] == 5  # every well-formed turn of the store and the legacy file
    assert [s for s in report["skipped"] if str(path) in s] == [
        f"{path}: transcript_events row 7 (session_id 's1', seq 'x'): seq is text, not an integer"
    ]
