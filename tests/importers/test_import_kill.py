"""``import-notes`` killed at random moments, then run to the end: in a git vault nothing it
wrote is left uncommitted, no temp file is left, and every note is one episode, once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from memoryclaw.vault.episodes import parse_episode
from tests.cli.test_cli import clean_env

NOTES_A_ROUND = 25
ROUNDS = 12


def _add_notes(folder: Path, round_: int) -> None:
    """Each round brings new notes, and a line more to some earlier ones: work to cut short."""
    for n in range(round_ * NOTES_A_ROUND, (round_ + 1) * NOTES_A_ROUND):
        day = f"2026-0{1 + n % 9}-{1 + n % 28:02d}"
        body = f"# Day {n}\n\n- Walked {n} km along the canal\n- Booked table {n} at Nandos\n"
        (folder / f"{day}-walk-{n}.md").write_text(body)
    folder_of_people = folder / f"people-{round_}"
    folder_of_people.mkdir()
    (folder_of_people / "CLAUDE.md").write_text(f"- Plumber {round_}: Ann {round_}\n- Tea\n")
    for earlier in sorted(folder.glob("*-walk-*.md"))[: round_ * 3 : 3]:
        with earlier.open("a") as note:
            note.write(f"- Added in round {round_}\n")


def _cli(vault: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args]


def _untracked(vault: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(vault), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    return [line for line in lines if line[3:].startswith(("episodes/", "semantic/"))]


def _wait_for_an_episode_write(vault: Path, since_ns: int, child: subprocess.Popen[bytes]) -> None:
    while child.poll() is None:
        written = [p for p in (vault / "episodes").glob("*.md") if p.exists()]
        if any(p.stat().st_mtime_ns > since_ns for p in written):
            return
        time.sleep(0.01)


def test_a_killed_import_notes_leaves_nothing_uncommitted_after_a_complete_rerun(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    vault = tmp_path / "vault"
    env = clean_env()
    subprocess.run(_cli(vault, "init", "--git"), check=True, capture_output=True, env=env)
    rng = random.Random(19)
    cut_short = 0
    for round_ in range(ROUNDS):
        _add_notes(notes, round_)
        started = time.time_ns()
        child = subprocess.Popen(
            _cli(vault, "import-notes", str(notes), "--json"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        _wait_for_an_episode_write(vault, started, child)
        time.sleep(rng.uniform(0.0, 0.4))
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            cut_short += 1
        child.wait()
    assert cut_short >= ROUNDS // 2  # most runs were killed while writing
    done = subprocess.run(
        _cli(vault, "import-notes", str(notes), "--json"),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _untracked(vault) == []  # every memory file an import wrote is committed
    temp = [p for folder in ("episodes", "semantic") for p in (vault / folder).glob(".*.tmp")]
    assert temp == []
    episodes = [parse_episode(p.read_text(), p.name, 0) for p in (vault / "episodes").glob("*.md")]
    sources = Counter(e.source for e in episodes)
    assert len(sources) == ROUNDS * (NOTES_A_ROUND + 1)  # every note is an episode
    assert set(sources.values()) == {1}  # once
    for episode in episodes:  # and every line of it is there once
        lines = [line for line in episode.details.splitlines() if line.strip()]
        assert len(lines) == len(set(lines)), episode.source
