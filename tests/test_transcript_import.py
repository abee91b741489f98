"""OpenClaw session transcripts into raw logs (:mod:`memoryclaw.transcript_import`): real
times, keys, agents and speakers; each turn once, whoever logged it first."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memoryclaw import ParseError, RecallContext, Vault

from .openclaw_state import T0, append_event, make_state, message


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """An OpenClaw state folder with two agents (main, ops) and their memory."""
    return make_state(tmp_path / "openclaw")


def test_transcripts_keep_their_times_keys_agents_and_speakers(vault: Vault, state: Path) -> None:
    vault.import_openclaw(state)
    processed = vault.root / "logs" / "processed"
    logs = {p.name: p.read_text() for p in processed.glob("2026-*_raw.md")}
    group = next(t for t in logs.values() if "session: agent:main:telegram:group:-100123" in t)
    assert "kind: group" in group and "scope: group:telegram:group:-100123" in group
    assert "channel: telegram" in group
    assert "### participant · 2026-11-23T11:00:00Z\nTeam lunch moved" in group
    legacy = next(t for t in logs.values() if "session: agent:ops:main" in t)
    assert "agent: ops" in legacy and "### user · 2026-10-05T09:00:00Z" in legacy


def test_a_later_import_brings_only_new_turns(vault: Vault, state: Path) -> None:
    vault.import_openclaw(state)
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    said = "The plumber can come on Wednesday."
    append_event(store, "s1", message("m9", "user", said, T0 + 7_200_000))
    later = vault.import_openclaw(state)
    assert (later.sessions, later.turns, later.known_turns) == (1, 1, 5)
    found = vault.search("plumber Wednesday", context=RecallContext(agent="main"))
    assert any("Wednesday" in r.summary + json.dumps(r.matched) for r in found.results)


def test_turns_the_plugin_logged_already_are_not_imported_again(vault: Vault, state: Path) -> None:
    said = "The plumber quoted 340 pounds for the radiator valve."
    vault.log_turn("agent:main:explicit:s1", "user", said, timestamp="2026-11-23T10:00:00Z")
    report = vault.import_openclaw(state, agent="main")
    assert (report.turns, report.known_turns) == (3, 1)
    logs = [*(vault.root / "logs").glob("*.md"), *(vault.root / "logs/processed").glob("*.md")]
    assert sum(p.read_text().count(said) for p in logs) == 1


def test_a_turn_from_a_broken_clock_is_reported_and_left_out(vault: Vault, state: Path) -> None:
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    append_event(store, "s1", message("m-future", "user", "from the future", 4102444800000))
    report = vault.import_openclaw(state, agent="main")
    assert report.turns == 4
    [skipped] = report.skipped
    assert skipped.startswith("agent:main:explicit:s1 event m-future: ")
    assert str(store) in skipped and "ahead of this machine's clock" in skipped
    append_event(store, "s1", message("m-late", "user", "The valve arrived.", T0 + 9_000_000))
    later = vault.import_openclaw(state, agent="main")
    assert later.turns == 1  # the broken clock is no watermark


def test_compressed_and_broken_events_are_counted_not_guessed(vault: Vault, state: Path) -> None:
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO transcript_events VALUES ('s1', 90, NULL, 0, x'28b52ffd')")
        db.execute("INSERT INTO transcript_events VALUES ('s1', 91, '{not json', 0, NULL)")
    db.close()
    report = vault.import_openclaw(state)
    assert report.unreadable_events == 2 and report.turns == 5


@pytest.mark.parametrize(
    ("ledger", "problem"),
    [
        ("openclaw: [", "not YAML"),
        ("openclaw: [a, b]\n", "expected a mapping"),
        ("openclaw:\n  main/s1: yesterday\n", "main/s1: 'yesterday' is not an ISO time"),
    ],
    ids=["not-yaml", "not-mapping", "not-a-time"],
)
def test_a_broken_ledger_is_named_and_nothing_is_written(
    vault: Vault, state: Path, ledger: str, problem: str
) -> None:
    (vault.root / "logs" / "imported.yaml").write_text(ledger)
    before = sorted(p.name for p in (vault.root / "logs").rglob("*"))
    with pytest.raises(ParseError) as caught:
        vault.import_openclaw(state, agent="ops")
    assert caught.value.path == "logs/imported.yaml" and problem in str(caught.value)
    assert sorted(p.name for p in (vault.root / "logs").rglob("*")) == before


def test_the_ledger_records_each_session_and_is_committed(tmp_path: Path, state: Path) -> None:
    with Vault.init(tmp_path / "git-vault", git=True, env={}) as vault:
        vault.import_openclaw(state)
        ledger = (vault.root / "logs" / "imported.yaml").read_text()
        assert "main/s1: '2026-11-23T10:00:01+00:00'" in ledger
        assert "ops/old-1: '2026-10-05T09:00:00+00:00'" in ledger
        tracked = subprocess.run(
            ["git", "-C", str(vault.root), "ls-files", "logs/imported.yaml"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert tracked.stdout.strip() == "logs/imported.yaml"


def test_a_session_key_with_a_newline_is_printed_escaped_in_the_skipped_line(
    vault: Vault, state: Path
) -> None:
    """``openclaw import`` quotes the key of a turn it leaves out on one line, escaped: a
    newline in it cannot start a line of its own that reads as another message."""
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    key = "agent:main:x\nadded 99 facts\x1b[2K"
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO session_windows VALUES (?, ?)", ("n1", key))
        db.execute(
            "INSERT INTO transcript_events VALUES (?, ?, ?, 0, NULL)",
            ("n1", 0, json.dumps(message("m-n", "user", "hello", T0))),
        )
    db.close()
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault.root), "openclaw", "import"]
    proc = subprocess.run(
        [*command, "--state-dir", str(state)], capture_output=True, text=True, check=True
    )
    [skipped] = [line for line in proc.stdout.splitlines() if line.startswith("skipped ")]
    assert skipped.startswith("skipped agent:main:x\\nadded 99 facts\\x1b[2K event m-n: ")
    assert not any(line.startswith("added 99") for line in proc.stdout.splitlines())
    assert "\x1b" not in proc.stdout
