"""``ingest`` of a file (:mod:`memoryclaw.importers.ingest`): read twice in bounded memory —
checked,
then written in batches — and safe to run again after a kill: no turn twice, none lost."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryclaw import Vault
from memoryclaw.importers import ingest as ingest_module
from memoryclaw.vault.logformat import parse_log
from tests.cli.test_cli import clean_env

START = datetime(2025, 3, 1, tzinfo=timezone.utc)


def _turns(count: int, sessions: int, *, size: int = 0) -> list[dict[str, str]]:
    return [
        {
            "session": f"agent:main:test:direct:s{n % sessions}",
            "role": "user" if n % 2 == 0 else "assistant",
            "content": f"turn {n} of the file" + " pad" * size,
            "timestamp": (START + timedelta(seconds=5 * n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for n in range(count)
    ]


def _write(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _logged(root: Path) -> dict[str, list[str]]:
    """Session -> the contents of its turns in every log of the vault, in order."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path in sorted((root / "logs").glob("*.md")):
        log = parse_log(path.read_text(), f"logs/{path.name}")
        found[str(log.session)] += [(path.name, t.content) for t in log.turns]
    return {session: [c for _, c in turns] for session, turns in found.items()}


def _expected(records: list[dict[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for r in records:
        out[r["session"]].append(r["content"])
    return dict(out)


def _wait_for_a_log_write(vault: Path, since_ns: int, child: subprocess.Popen[bytes]) -> None:
    """Until a log is written after ``since_ns`` (or the child is done)."""
    while child.poll() is None:
        logs = (vault / "logs").glob("*.md")
        if any(p.stat().st_mtime_ns > since_ns for p in logs if p.exists()):
            return
        time.sleep(0.01)


def _cli(vault: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args]


def test_ingest_writes_in_batches_every_turn_once_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of 7 turns, with the open logs' texts let go after each: every turn lands
    once, in order, each session's log is closed, and the report counts them."""
    monkeypatch.setattr(ingest_module, "BATCH_TURNS", 7)
    monkeypatch.setattr(ingest_module, "HELD_CHARS", 0)
    records = _turns(100, 3)
    source = _write(tmp_path / "turns.jsonl", records)
    with Vault.init(tmp_path / "vault", env={}) as vault:
        report = vault.ingest_file(source)
        assert (report.turns, report.known_turns, len(report.sessions)) == (100, 0, 3)
        assert _logged(vault.root) == _expected(records)
        for rel in report.logs:
            text = (vault.root / rel).read_text()
            assert "closed: true" in text
        indexed = vault.index.execute("SELECT count(*) FROM passages WHERE kind = 'log'")
        assert indexed.fetchone()[0] == 100  # indexed at once


def test_ingesting_the_same_file_again_adds_nothing(tmp_path: Path) -> None:
    records = _turns(30, 2)
    source = _write(tmp_path / "turns.jsonl", records)
    vault = tmp_path / "vault"
    subprocess.run(_cli(vault, "init"), check=True, capture_output=True, env=clean_env())
    first = subprocess.run(
        _cli(vault, "ingest", str(source), "--json"), capture_output=True, text=True, check=True
    )
    assert json.loads(first.stdout)["turns"] == 30
    again = subprocess.run(
        _cli(vault, "ingest", "-", "--json"),  # the same bytes, from standard input
        input=source.read_text(),
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(again.stdout)
    assert (report["turns"], report["known_turns"], report["logs"]) == (0, 30, [])
    assert _logged(vault) == _expected(records)


def test_a_file_ingested_and_consolidated_adds_nothing_when_ingested_again(
    tmp_path: Path,
) -> None:
    """Consolidated logs keep the marks of what was ingested: a re-run after consolidation
    (a daemon may consolidate a killed run's logs before it is run again) adds nothing."""
    records = _turns(40, 2)
    source = _write(tmp_path / "turns.jsonl", records)
    with Vault.init(tmp_path / "vault", env={}) as vault:
        assert vault.ingest_file(source).turns == 40
        assert vault.consolidate(all_logs=True).logs_processed
        again = vault.ingest_file(source)
        assert (again.turns, again.known_turns) == (0, 40)
        assert not list((vault.root / "logs").glob("*.md"))  # no new log was started


def test_a_killed_ingest_run_again_neither_duplicates_nor_loses_turns(tmp_path: Path) -> None:
    """SIGKILL ``ingest`` of 24,000 turns at random moments, again and again, then let a run
    finish: every turn is in the logs exactly once, in the file's order."""
    total = 24_000
    records = _turns(total, 10)
    source = _write(tmp_path / "turns.jsonl", records)
    vault = tmp_path / "vault"
    subprocess.run(_cli(vault, "init"), check=True, capture_output=True, env=clean_env())
    rng = random.Random(2111)
    partial: set[int] = set()  # turns on disk after each kill that cut a run short
    for _ in range(8):
        started = time.time_ns()
        child = subprocess.Popen(
            _cli(vault, "ingest", str(source), "--json"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=clean_env(),
        )
        _wait_for_a_log_write(vault, started, child)  # the checking pass is over
        time.sleep(rng.uniform(0.0, 1.0))
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
        written = sum(len(turns) for turns in _logged(vault).values())
        assert written <= total  # never a turn twice, even between kills
        if 0 < written < total:
            partial.add(written)
    assert len(partial) >= 2  # runs were cut short in the middle of writing, more than once
    done = subprocess.run(
        _cli(vault, "ingest", str(source), "--json"),
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["turns"] + report["known_turns"] == total
    assert _logged(vault) == _expected(records)
    assert not list((vault / "logs").glob(".*.tmp"))  # none left by a cut-short write


def test_turns_logged_while_an_ingest_runs_are_kept(tmp_path: Path) -> None:
    """The ingest lets the logs lock go between batches: a live session logging meanwhile
    (into a session the file also holds, or another) loses nothing, and neither does the
    ingest."""
    total = 24_000
    records = _turns(total, 4)
    source = _write(tmp_path / "turns.jsonl", records)
    vault = tmp_path / "vault"
    subprocess.run(_cli(vault, "init"), check=True, capture_output=True, env=clean_env())
    started = time.time_ns()
    child = subprocess.Popen(
        _cli(vault, "ingest", str(source), "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    _wait_for_a_log_write(vault, started, child)
    live: dict[str, list[str]] = defaultdict(list)
    for n in range(6):
        session = "agent:main:test:direct:s1" if n % 2 else "agent:main:test:direct:live"
        said = f"live turn {n}"
        # amid the file's times: into the open log the ingest is appending to, not a new one
        moment = (START + timedelta(seconds=5 * total // 2 + n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        subprocess.run(
            _cli(vault, "log", "--session", session, "--role", "user", "--timestamp", moment, said),
            check=True,
            capture_output=True,
            env=clean_env(),
        )
        live[session].append(said)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    logged = _logged(vault)
    expected = _expected(records)
    for session, turns in expected.items():  # every ingested turn once, in order
        assert [t for t in logged[session] if not t.startswith("live turn")] == turns
    for session, said in live.items():  # and every live one, once (a live turn may start
        # a log of its own, listed before the ingest's: the order across logs is not theirs)
        assert sorted(t for t in logged[session] if t.startswith("live turn")) == said
