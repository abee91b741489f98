"""How long day-one import takes: ``Vault.import_openclaw`` on a synthetic OpenClaw install.

    .venv/bin/python bench/bench_import.py [--days 365] [--items 200] [--sessions 100]
        [--turns 20] [--out bench/out]

The install has a ``MEMORY.md`` of ``--items`` lines (half ``entity: value`` facts), a year of
daily notes, and ``--sessions`` transcripts of ``--turns`` messages in OpenClaw 2026.9's
per-agent SQLite store (the tables and columns memoryclaw reads).  It is imported into a new
vault (first import: files, transcripts, consolidation), then imported again (nothing to add).
Prints the timings and writes them to ``<out>/import.json``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memoryclaw import Vault

WORDS = "harbour valve lisbon falcon piano boiler invoice climbing passport quinn rota".split()
START_MS = 1_790_000_000_000  # 2026-09-21T14:13:20Z


def _word(n: int) -> str:
    return f"{WORDS[n % len(WORDS)]}{n}"


def build_install(root: Path, days: int, items: int, sessions: int, turns: int) -> Path:
    """An OpenClaw state folder of the given size; returns it."""
    workspace = root / "workspace"
    (workspace / "memory").mkdir(parents=True)
    lines = [
        f"- {_word(i).capitalize()}: {_word(i + 1)} {_word(i + 2)}"
        if i % 2
        else f"- Remember {_word(i)} before {_word(i + 3)}"
        for i in range(items)
    ]
    (workspace / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(lines) + "\n")
    first = date(2025, 1, 1)
    for n in range(days):
        day = first + timedelta(days=n)
        body = f"# Day {n}\n\n- Met {_word(n)} about {_word(n + 5)}\n- Booked {_word(n + 7)}\n"
        (workspace / "memory" / f"{day.isoformat()}.md").write_text(body)
    store = root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True)
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, session_key TEXT)")
        db.execute(
            "CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT,"
            " created_at INTEGER, event_zstd BLOB, PRIMARY KEY (session_id, seq))"
        )
        for s in range(sessions):
            sid = f"s{s}"
            key = f"agent:main:explicit:{sid}"
            db.execute("INSERT INTO session_windows VALUES (?, ?)", (sid, key))
            for t in range(turns):
                ms = START_MS + (s * turns + t) * 60_000
                role = "user" if t % 2 == 0 else "assistant"
                text = f"Turn {t}: {_word(s + t)} and {_word(s * t + 3)} at {_word(t + 11)}."
                event = {
                    "type": "message",
                    "id": f"{sid}-{t}",
                    "timestamp": "2026-09-21T14:13:20.000Z",
                    "message": {"role": role, "content": text, "timestamp": ms},
                }
                db.execute(
                    "INSERT INTO transcript_events VALUES (?, ?, ?, 0, NULL)",
                    (sid, t, json.dumps(event)),
                )
    db.close()
    return root


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        state = build_install(root / "openclaw", args.days, args.items, args.sessions, args.turns)
        with Vault.init(root / "vault", env={}) as vault:
            started = time.perf_counter()
            first = vault.import_openclaw(state)
            first_s = time.perf_counter() - started
            started = time.perf_counter()
            again = vault.import_openclaw(state)
            again_s = time.perf_counter() - started
    consolidated = (first.consolidation or {}).get("took_ms", 0.0) / 1000
    result = {
        "days": args.days,
        "items": args.items,
        "sessions": args.sessions,
        "turns": first.turns,
        "facts": first.facts,
        "episodes": first.episodes,
        "first_import_s": round(first_s, 3),
        "of_which_consolidation_s": round(consolidated, 3),
        "turns_per_s_without_consolidation": round(first.turns / max(first_s - consolidated, 1e-9)),
        "reimport_s": round(again_s, 3),
        "reimport_added": again.added,
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "import.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
