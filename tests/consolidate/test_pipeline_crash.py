"""A consolidation killed (SIGKILL) at any point and run again ends where an uninterrupted run
ends: no duplicate episode or fact, no lost log.

Each kill lands at a different moment of a real ``memoryclaw consolidate --all`` process over
a vault of many logs: the test watches the vault and kills the process as soon as the k-th
episode file or the k-th processed log appears, so kills fall between and inside the steps
of consolidating one log (episode written, facts filed, log moved).
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memoryclaw import Vault
from memoryclaw.vault.episodes import parse_episode
from memoryclaw.vault.logformat import parse_log
from memoryclaw.vault.rawlogs import unprocessed_logs

from ..conftest import child_limits, run_bounded

KILLS = 12
SESSIONS = 40
FIRST = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)


def _build(root: Path) -> None:
    Vault.init(root, env={}).close()
    (root / "memoryclaw.yaml").write_text("git:\n  autoCommit: false\n")
    with Vault(root, env={}) as vault:
        for n in range(SESSIONS):
            session = f"agent:main:cli:{n}"
            at = FIRST + timedelta(hours=n)
            person = ["Maya", "Tomas", "Ines", "Kofi", "Lena"][n % 5]
            turns = [
                (
                    "user",
                    f"{person}'s email is {person.lower()}{n % 3}@example.org, write it down.",
                ),
                ("assistant", f"Saved {person}'s address."),
                (
                    "user",
                    f"My favorite city is {['Porto', 'Kyoto', 'Oslo'][n % 3]}. Book {n} nights.",
                ),
                ("assistant", f"Booked {n} nights near the old town for session {n}."),
            ]
            for role, text in turns:
                vault.log_turn(session, role, text, timestamp=at)
            vault.end_session(session)


def _consolidate(root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memoryclaw", "--vault", str(root), "consolidate", "--all"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _state(root: Path) -> dict[str, str]:
    """Every memory file's text, without the one line that records when it was processed."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".memoryclaw/"):
            text = path.read_text(encoding="utf-8")
            lines = [line for line in text.splitlines() if not line.startswith("processed_at:")]
            files[rel] = "\n".join(lines)
    return files


def test_killed_runs_converge_on_the_uninterrupted_result(tmp_path: Path) -> None:
    template = tmp_path / "template"
    _build(template)
    clean = tmp_path / "clean"
    shutil.copytree(template, clean)
    assert _consolidate(clean).wait(timeout=120) == 0
    expected = _state(clean)
    assert sum(rel.startswith("episodes/") for rel in expected) >= SESSIONS
    assert not any(rel.startswith("logs/") and "/processed/" not in rel for rel in expected)

    interrupted_mid_run = 0
    for k in range(KILLS):
        vault = tmp_path / f"killed-{k}"
        shutil.copytree(template, vault)
        watched, folder = ("episodes", "*.md") if k % 2 else ("logs/processed", "*.md")
        target = 1 + k * (SESSIONS - 2) // KILLS
        process = _consolidate(vault)
        deadline = time.monotonic() + 60
        while len(list((vault / watched).rglob(folder))) < target:
            assert process.poll() is None, f"kill {k}: the run ended before {target} {watched}"
            assert time.monotonic() < deadline
            time.sleep(0.0005)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        processed = list((vault / "logs" / "processed").glob("*.md"))
        interrupted_mid_run += 0 < len(processed) < SESSIONS
        assert _consolidate(vault).wait(timeout=120) == 0
        assert _state(vault) == expected, f"kill {k}: after {target} {watched}"
    assert interrupted_mid_run >= KILLS - 2, "the kills should land inside the run"


WRITER = """
import json, sys, time
from datetime import datetime, timedelta, timezone
from memoryclaw import Vault

wid, root = sys.argv[1], sys.argv[2]
start = datetime(2025, 3, 1, tzinfo=timezone.utc)
with Vault(root, env={}) as vault:
    for n in range(100_000):
        session = f"agent:w{wid}:cli:{n // 5}"
        text = f"turn {wid}-{n}: Contact{n % 7}'s email is c{n % 7}@example.org, note it."
        vault.log_turn(session, "user", text, timestamp=start + timedelta(seconds=n))
        print(json.dumps(text), flush=True)  # acknowledged: the turn is on disk
        if n % 5 == 4:
            vault.end_session(session)
        time.sleep(0.02)
"""
LOOP_KILLS = 30


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def _turn_homes(root: Path) -> dict[str, list[tuple[str, int]]]:
    """Each turn's text -> the (processed log, turn number) places it was consolidated from."""
    homes: dict[str, list[tuple[str, int]]] = {}
    for path in sorted((root / "logs" / "processed").glob("*.md")):
        rel = path.relative_to(root).as_posix()
        for number, turn in enumerate(parse_log(path.read_text("utf-8"), rel).turns, 1):
            homes.setdefault(turn.content.strip(), []).append((rel, number))
    return homes


def _episode_cover(root: Path) -> Counter[tuple[str, int]]:
    """How many episodes cover each (source log, turn number)."""
    cover: Counter[tuple[str, int]] = Counter()
    for path in sorted((root / "episodes").rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        episode = parse_episode(path.read_text("utf-8"), rel, 0.0)
        assert episode.source and episode.source_turns, rel
        first, last = episode.source_turns
        cover.update((episode.source, n) for n in range(first, last + 1))
    return cover


def test_kill_loop_with_writers_loses_and_doubles_no_turn_and_commits_everything(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    Vault.init(root, git=True, env={}).close()
    (root / "semantic" / "hobbies.md").write_text("# Hobbies\n\n- Me: climbing\n")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    (root / "semantic" / "hobbies.md").write_text("# Hobbies\n\n- Me: climbing, chess\n")
    (root / "semantic" / "notes.md").write_text("# Notes\n\n- Plan: not ready to commit\n")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(w), str(root)],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=child_limits(),
        )
        for w in range(2)
    ]
    rng = random.Random(11)
    killed = 0
    try:
        for _ in range(10 * LOOP_KILLS):  # a fast machine finishes many runs before their kill
            if killed == LOOP_KILLS:
                break
            run = subprocess.Popen(
                [sys.executable, "-m", "memoryclaw", "--vault", str(root), "consolidate", "--all"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                preexec_fn=child_limits(),
            )
            try:
                run.wait(timeout=rng.uniform(0.15, 0.6))
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait(timeout=30)
                killed += 1
            else:
                assert run.returncode == 0, run.stderr.read() if run.stderr else ""
            finally:
                if run.stderr:
                    run.stderr.close()
            assert all(w.poll() is None for w in writers), "a writer died"
    finally:  # also when an assertion fails: no writer outlives the test, no pipe is left open
        for writer in writers:
            writer.kill()
        printed = [writer.communicate(timeout=30)[0] for writer in writers]
    acknowledged = [json.loads(line) for out in printed for line in out.splitlines()]
    assert len(acknowledged) > 100 and killed == LOOP_KILLS
    done = run_bounded(root, "consolidate", "--all")
    assert done.returncode == 0, done.stderr

    homes = _turn_homes(root)
    cover = _episode_cover(root)
    for text in acknowledged:
        places = homes.get(text, [])
        assert len(places) == 1, f"{text!r} consolidated from {places}"
        assert cover[places[0]] == 1, f"{text!r} is in {cover[places[0]]} episodes"
    assert not unprocessed_logs(root)
    reindex = run_bounded(root, "reindex", "--full", "--json")
    assert reindex.returncode == 0, reindex.stderr
    report = json.loads(reindex.stdout)
    assert report["skipped"] == []
    status = _git(root, "status", "--porcelain", "--untracked-files=all")
    assert sorted(status.splitlines()) == [" M semantic/hobbies.md", "?? semantic/notes.md"]
