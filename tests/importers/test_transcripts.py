"""OpenClaw session transcripts into raw logs (:mod:`memoryclaw.importers.transcripts`): real
times, keys, agents and speakers; each turn once, whoever logged it first."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw import ParseError, RecallContext, Vault
from memoryclaw.importers.transcripts import logged_positions, turn_identity
from memoryclaw.vault.ledger import LEDGER_FILE
from memoryclaw.vault.logformat import parse_log
from memoryclaw.vault.timestamps import utc_iso

from ..openclaw_state import T0, append_event, make_state, message


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


# ----------------------------------------------- the plugin's turns, imported: each once

S1 = "agent:main:explicit:s1"
STORE = ("agents", "main", "agent", "openclaw-agent.sqlite")
PLUMBER = "The plumber quoted 340 pounds for the radiator valve."
LAG = 13_000  # the plugin stamps a turn when the agent's run ends, OpenClaw when it began


def _said(vault: Vault, text: str) -> int:
    """How many turns of the vault's raw logs (open and processed) say ``text``."""
    logs = [*(vault.root / "logs").glob("*.md"), *(vault.root / "logs/processed").glob("*.md")]
    return sum(
        turn.content == text for p in logs for turn in parse_log(p.read_text(), p.name).turns
    )


def _capture(vault: Vault, turns: list[tuple[str, str, int]], session: str = S1) -> None:
    """Log ``turns`` (role, text, epoch ms) as memoryclaw's OpenClaw plugin does, LAG late."""
    for role, text, ms in turns:
        moment = datetime.fromtimestamp((ms + LAG) / 1000, timezone.utc)
        vault.log_turn(session, role, text, timestamp=moment, agent="main", channel="openclaw")


def _add(state: Path, *events: dict[str, Any]) -> None:
    for event in events:
        append_event(state.joinpath(*STORE), "s1", event)


def test_turns_the_plugin_stamped_seconds_later_are_not_imported_again(
    vault: Vault, state: Path
) -> None:
    _capture(vault, [("user", PLUMBER, T0), ("assistant", "Noted.", T0 + 1000)])
    report = vault.import_openclaw(state, agent="main")
    assert (report.turns, report.known_turns) == (2, 2)  # the group's two turns are new
    assert _said(vault, PLUMBER) == _said(vault, "Noted.") == 1


def test_a_redacted_turn_is_the_plugins_turn(vault: Vault, state: Path) -> None:
    """The plugin's turn was redacted as it was logged; OpenClaw's transcript has it whole."""
    secret = "My wifi password is Tr0ub4dor&3, and the router is in the hall."
    answer = "hunter2hunter2"  # a password given in the next message, after "it is"
    _add(
        state,
        message("m3", "user", secret, T0 + 60_000),
        message("m4", "user", "my password is", T0 + 70_000),
        message("m5", "user", answer, T0 + 80_000),
    )
    _capture(
        vault,
        [
            ("user", secret, T0 + 60_000),
            ("user", "my password is", T0 + 70_000),
            ("user", answer, T0 + 80_000),
        ],
    )
    report = vault.import_openclaw(state, agent="main")
    assert report.known_turns == 3 and report.turns == 4
    assert (
        _said(vault, "My wifi password is [REDACTED:secret], and the router is in the hall.") == 1
    )
    assert _said(vault, "[REDACTED:secret]") == 1


def test_a_turn_said_twice_and_logged_once_is_imported_once(vault: Vault, state: Path) -> None:
    """Two "ok"s a quarter of an hour apart; the plugin was installed between them."""
    _add(
        state,
        message("m3", "user", "ok", T0 + 300_000),
        message("m4", "user", "ok", T0 + 1_200_000),
    )
    _capture(vault, [("user", "ok", T0 + 1_200_000)])
    report = vault.import_openclaw(state, agent="main")
    assert report.known_turns == 1 and _said(vault, "ok") == 2
    logs = [*(vault.root / "logs").glob("*.md"), *(vault.root / "logs/processed").glob("*.md")]
    stamps = sorted(
        utc_iso(turn.timestamp)
        for p in logs
        for turn in parse_log(p.read_text(), p.name).turns
        if turn.content == "ok"
    )
    assert stamps == ["2026-11-23T10:05:00Z", "2026-11-23T10:20:13Z"]  # the 10:05 one is new


def test_the_same_words_in_another_session_are_another_turn(vault: Vault, state: Path) -> None:
    _capture(vault, [("user", PLUMBER, T0)], session="agent:main:explicit:s2")
    report = vault.import_openclaw(state, agent="main")
    assert report.known_turns == 0 and _said(vault, PLUMBER) == 2


def test_turns_captured_after_an_import_are_not_imported_again(vault: Vault, state: Path) -> None:
    """Importing before installing: the ledger knows the session, and the plugin goes on."""
    vault.import_openclaw(state, agent="main")
    later = "The valve arrived on Tuesday."
    _add(state, message("m9", "user", later, T0 + 7_200_000))
    _capture(vault, [("user", later, T0 + 7_200_000)])
    report = vault.import_openclaw(state, agent="main")
    assert (report.turns, _said(vault, later)) == (0, 1)


def test_turns_whose_logs_were_deleted_are_not_imported_again(vault_dir: Path, state: Path) -> None:
    """Consolidated, then deleted after ``logRetentionDays``: the ledger keeps their span."""
    with Vault(vault_dir, env={}) as vault:
        _capture(vault, [("user", PLUMBER, T0), ("assistant", "Noted.", T0 + 1000)])
        vault.consolidate(all_logs=True)
        gone = list((vault_dir / "logs" / "processed").glob("*.md"))
        for path in gone:
            os.utime(path, (0, 0))
        assert sorted(vault.consolidate().logs_deleted) == sorted(
            f"logs/processed/{p.name}" for p in gone
        )
        ledger = yaml.safe_load((vault_dir / LEDGER_FILE).read_text())
        assert ledger["pruned"][S1] == ["2026-11-23T10:00:13Z/2026-11-23T10:00:14Z"]
        report = vault.import_openclaw(state, agent="main")
        assert report.known_turns == 2 and _said(vault, PLUMBER) == 0


def test_logs_are_kept_while_the_ledger_cannot_record_them(vault_dir: Path) -> None:
    """A broken ledger cannot keep the span of a deleted log: the log stays until it can."""
    with Vault(vault_dir, env={}) as vault:
        _capture(vault, [("user", PLUMBER, T0)])
        vault.consolidate(all_logs=True)
        for path in (vault_dir / "logs" / "processed").glob("*.md"):
            os.utime(path, (0, 0))
        (vault_dir / LEDGER_FILE).write_text("openclaw: [")
        assert vault.consolidate().logs_deleted == []
        assert _said(vault, PLUMBER) == 1


@pytest.mark.parametrize(
    ("logged", "imported"),
    [
        (("user", "Call  Ann\n at five.", None), ("user", "Call Ann at five.", None)),
        (("participant", "Lunch moved.", None), ("user", "Lunch moved.", None)),
        (
            ("user", "my password is [REDACTED:secret]", None),
            ("user", "my password is hunter2hunter2", None),
        ),
        (
            ("user", "Where is it?", None),
            ("user", "<memoryclaw>\nRelevant memories:\n- x\n</memoryclaw>\n\nWhere is it?", None),
        ),
        (
            ("tool_call", '{"id":"read","args":{"path":"/tmp/a b.txt"}}', "tool_call"),
            ("tool_call", '{"path": "/tmp/a b.txt"}', "read"),
        ),
        (
            (
                "tool_call",
                '{"id":"write","args":{"content":"' + "x" * 4000 + " … [2 more chars]",
                "tool_call",
            ),
            ("tool_call", json.dumps({"content": "x" * 4000}), "write"),
        ),
        (
            ("tool_result", "line\n" * 800 + " … [1000 more chars]", "tool_call"),
            ("tool_result", "line\n" * 1000, "read"),
        ),
        (
            (
                "tool_result",
                '{\n  "tool": {\n    "id": "openclaw:memoryclaw:memory_search",\n'
                '    "name": "memory_search"',
                "tool_call",
            ),
            ("tool_result", "{...}", "memory_search"),
        ),
        (("user", "[forgotten]", None), ("user", "[forgotten]", None)),
    ],
    ids=[
        "spacing",
        "participant",
        "redacted",
        "recalled-block",
        "wrapped-call",
        "clipped-call",
        "clipped-result",
        "recall-result",
        "blanked",
    ],
)
def test_what_the_plugin_logged_and_the_transcript_holds_are_one_turn(
    logged: tuple[str, str, str | None], imported: tuple[str, str, str | None]
) -> None:
    assert turn_identity(*logged) == turn_identity(*imported)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (("user", "ok", None), ("assistant", "ok", None)),
        (("user", "Call Ann at five.", None), ("user", "Call Ann at six.", None)),
        (("tool_result", "a.txt", "read"), ("tool_result", "b.txt", "read")),
    ],
    ids=["speaker", "words", "tool-output"],
)
def test_other_words_or_speakers_are_other_turns(
    one: tuple[str, str, str | None], other: tuple[str, str, str | None]
) -> None:
    assert turn_identity(*one) != turn_identity(*other)


AT = datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)


def _at(minutes: float) -> datetime:
    return AT + timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("incoming", "logged", "known"),
    [
        ([("ok", _at(0))], [("ok", _at(13 / 60))], {0}),
        ([("ok", _at(0))], [("ok", _at(-0.5))], {0}),
        ([("ok", _at(0))], [("ok", _at(61))], set()),
        ([("ok", _at(0)), ("ok", _at(40))], [("ok", _at(40.2))], {1}),
        ([("ok", _at(0)), ("ok", _at(40))], [("ok", _at(0.2))], {0}),
        ([("ok", _at(0)), ("ok", _at(1))], [("ok", _at(1)), ("ok", _at(1.2))], {0, 1}),
        ([("ok", _at(0))], [("yes", _at(0))], set()),
        # only the pairing of both is largest, though 30 pairs with the nearer 30
        ([("a", _at(0)), ("a", _at(30))], [("a", _at(30)), ("a", _at(89))], {0, 1}),
    ],
    ids=[
        "13-s-late",
        "early",
        "over-an-hour",
        "said-twice-logged-last",
        "said-twice-logged-first",
        "each-once",
        "other-words",
        "largest-pairing",
    ],
)
def test_logged_positions(
    incoming: list[tuple[str, datetime]], logged: list[tuple[str, datetime]], known: set[int]
) -> None:
    assert logged_positions(incoming, logged) == known


_SAID = st.lists(st.tuples(st.sampled_from(["ok", "yes", "thanks"]), st.integers(0, 600)))


def _import(turns: list[tuple[str, datetime]], vault: list[tuple[str, datetime]]) -> list[str]:
    """The words in the vault after importing ``turns`` into it (what it lacks is added)."""
    known = logged_positions(turns, vault)
    added = [turns[n] for n in range(len(turns)) if n not in known]
    assert logged_positions(turns, vault + added) == set(range(len(turns)))  # idempotent
    return sorted(w for w, _ in vault + added)


@given(
    said=_SAID.map(lambda said: sorted(said, key=lambda t: t[1])),
    captured=st.lists(st.booleans(), max_size=30),
    lags=st.lists(st.integers(-60, 3600), max_size=30),
    installed=st.integers(0, 30),
)
def test_importing_before_or_after_installing_keeps_each_turn_once(
    said: list[tuple[str, int]], captured: list[bool], lags: list[int], installed: int
) -> None:
    """Whatever the plugin logged (any of the turns, stamped up to a minute early or an hour
    late), importing after it, or before installing it and again after, leaves each turn
    said in the vault once, and importing again adds nothing."""
    turns = [(words, _at(minutes)) for words, minutes in said]
    late = [
        (words, moment + timedelta(seconds=lags[n] if n < len(lags) else LAG // 1000))
        for n, (words, moment) in enumerate(turns)
    ]
    plugin = [late[n] for n in range(len(turns)) if n < len(captured) and captured[n]]
    expected = sorted(words for words, _ in turns)
    assert _import(turns, plugin) == expected
    # imported before installing, then the plugin logs the later turns, then imported again
    assert _import(turns[installed:], turns[:installed] + late[installed:]) == expected
