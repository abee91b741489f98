"""A consolidation killed (SIGKILL) at any point and run again ends where an uninterrupted run
ends: no duplicate episode or fact, no lost log.

Each kill lands at a different moment of a real ``memoryclaw consolidate --all`` process over
a vault of many logs: the test watches the vault and kills the process as soon as the k-th
episode file or the k-th processed log appears, so kills fall between and inside the steps
of consolidating one log (episode written, facts filed, log moved).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memoryclaw import Vault

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
