"""An OpenClaw state folder laid out as OpenClaw 2026.9.6 lays it out, for the import tests:
workspace files of two agents, the per-agent SQLite session store (the tables and columns
memoryclaw reads), and a legacy JSONL transcript with its ``sessions.json``.  The events are
shaped as the real OpenClaw stores them (see ``tests/importers/test_openclaw_import.py`` for
the import of a store the real OpenClaw wrote)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

MEMORY = """# Memory

## People
- Locksmith: Keyworth Locks, 020 7946 0555
- Dentist: Harbourside Dental

## Preferences
- Prefers window seats on long flights
"""
USER = """# USER.md - User Model

## Directives

<!-- observed: 2026-11-01 | status: active -->

- Prefer short answers in the morning.

<!-- observed: 2026-11-02 | status: active -->

- Timezone: Europe/Lisbon
"""
DAILY = "# Boiler service booked\n\n- Hearthwarm Heating engineer comes Thursday at 8am\n"
OLD_DAILY = "# Gym induction\n\n- Induction at Ironworks Gym went fine\n"
PROJECTS = "# Projects\n\n- Falcon launch: 2026-12-01\n"

# The tables (and the columns memoryclaw reads) of OpenClaw 2026.9.6's per-agent store.
STORE_SCHEMA = """
CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL);
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT, created_at INTEGER NOT NULL,
  event_zstd BLOB, PRIMARY KEY (session_id, seq));
"""


def message(ident: str, role: str, content: Any, ms: int, **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": ident,
        "timestamp": "2026-11-23T10:00:00.000Z",
        "message": {"role": role, "content": content, "timestamp": ms, **extra},
    }


T0 = 1795428000000  # 2026-11-23T10:00:00Z in epoch milliseconds
DIRECT = [
    {"type": "session", "id": "s1", "timestamp": "2026-11-23T10:00:00.000Z"},
    message("m1", "user", "The plumber quoted 340 pounds for the radiator valve.", T0),
    message("m2", "assistant", [{"type": "text", "text": "Noted."}], T0 + 1000),
]
GROUP = [
    {"type": "session", "id": "g1", "timestamp": "2026-11-23T11:00:00.000Z"},
    message("m3", "user", "Team lunch moved to Friday at Nandos.", T0 + 3_600_000),
    message("m4", "assistant", "Got it.", T0 + 3_601_000),
]
LEGACY = [
    {"type": "session", "id": "old-1", "timestamp": "2026-10-01T09:00:00.000Z"},
    message("m5", "user", "The ops rota starts with Devi on Mondays.", 1791190800000),
]


def make_store(path: Path, sessions: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.executescript(STORE_SCHEMA)
        for (session_id, key), events in sessions.items():
            db.execute("INSERT INTO session_windows VALUES (?, ?)", (session_id, key))
            for seq, event in enumerate(events):
                row = (session_id, seq, json.dumps(event), 0, None)
                db.execute("INSERT INTO transcript_events VALUES (?, ?, ?, ?, ?)", row)
    db.close()


def append_event(path: Path, session_id: str, event: dict[str, Any]) -> None:
    with sqlite3.connect(path) as db:
        (seq,) = db.execute(
            "SELECT max(seq) + 1 FROM transcript_events WHERE session_id = ?", (session_id,)
        ).fetchone()
        db.execute(
            "INSERT INTO transcript_events VALUES (?, ?, ?, 0, NULL)",
            (session_id, seq, json.dumps(event)),
        )
    db.close()


def make_state(root: Path) -> Path:
    """An OpenClaw state folder at ``root`` with two agents (main, ops) and their memory."""
    workspace = root / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text(MEMORY)
    (workspace / "USER.md").write_text(USER)
    (workspace / "memory" / "2026-11-20.md").write_text(DAILY)
    (workspace / "memory" / "2026-01-05.md").write_text(OLD_DAILY)
    (workspace / "memory" / "projects.md").write_text(PROJECTS)
    ops = root / "workspace-ops"
    ops.mkdir()
    (ops / "MEMORY.md").write_text("- On-call pager: 07700 900123\n")
    config = {"agents": {"entries": {"main": {"default": True}, "ops": {}}}}
    (root / "openclaw.json").write_text(json.dumps(config))
    make_store(
        root / "agents" / "main" / "agent" / "openclaw-agent.sqlite",
        {
            ("s1", "agent:main:explicit:s1"): DIRECT,
            ("g1", "agent:main:telegram:group:-100123"): GROUP,
        },
    )
    legacy = root / "agents" / "ops" / "sessions"
    legacy.mkdir(parents=True)
    (legacy / "old-1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in LEGACY))
    (legacy / "sessions.json").write_text(json.dumps({"agent:ops:main": {"sessionId": "old-1"}}))
    return root
