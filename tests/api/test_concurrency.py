"""Logging, the daemon and hand edits at the same time: every file stays whole and every
logged turn ends up in exactly one episode.

Real processes: a ``memoryclaw daemon`` (which consolidates as soon as a log closes), two
writer processes logging sessions through the Python API, and this process editing episode
and fact files by hand meanwhile.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from memoryclaw import Vault
from memoryclaw.vault.logformat import parse_log

WRITERS = 2
SESSIONS = 6
TURNS = 6

WRITER = textwrap.dedent(
    """
    import sys
    import time
    from memoryclaw import Vault

    root, writer, sessions, turns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with Vault(root, env={}) as vault:
        for s in range(sessions):
            session = f"agent:main:w{writer}:s{s}"
            for t in range(turns):
                role = "user" if t % 2 == 0 else "assistant"
                vault.log_turn(session, role, f"marker-w{writer}-s{s}-t{t} about the harbour trip")
                time.sleep(0.03)  # a conversation, not a bulk import: the daemon works meanwhile
            vault.end_session(session)
    """
)


def test_logging_daemon_and_hand_edits_together(vault_dir: Path) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(
        "git:\n  autoCommit: false\nconsolidation:\n  afterLogs: 1\n"
    )
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "daemon"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert daemon.stderr is not None
        started = ""
        while "watching" not in started:  # start writing once the daemon is up
            line = daemon.stderr.readline()
            assert line, "the daemon exited before starting"
            started += line
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(vault_dir), str(w), str(SESSIONS), str(TURNS)]
            )
            for w in range(WRITERS)
        ]
        hand = vault_dir / "semantic" / "hand-notes.md"
        episode = sorted((vault_dir / "episodes").glob("*.md"))[0]
        original = episode.read_text()
        edits = 0
        while any(w.poll() is None for w in writers):
            edits += 1
            hand.write_text(
                "# Notes\n\n" + "".join(f"- Note {i}: value {i}\n" for i in range(edits))
            )
            episode.write_text(original.replace("**Details:**", f"**Details:** (edit {edits})"))
            time.sleep(0.02)
        assert all(w.wait(timeout=60) == 0 for w in writers)
        with Vault(vault_dir, env={}) as vault:  # whatever the daemon has not reached yet
            vault.consolidate(all_logs=True)
    finally:
        daemon.send_signal(signal.SIGTERM)
        _, rest = daemon.communicate(timeout=30)
    stderr = started + rest
    assert daemon.returncode == 0, stderr
    assert stderr.count("consolidated (") >= 2, stderr  # the daemon took logs while they came
    assert edits > 3

    with Vault(vault_dir, env={}) as vault:
        vault.reindex()
        assert vault.problems() == []  # every file whole and readable
        covered: dict[str, list[int]] = {}
        for row in vault.index.episode_rows("session GLOB 'agent:main:w[0-9]*'", []):
            first, last = row["turn_first"], row["turn_last"]
            covered.setdefault(row["source"], []).extend(range(first, last + 1))
        sent = {
            f"marker-w{w}-s{s}-t{t}"
            for w in range(WRITERS)
            for s in range(SESSIONS)
            for t in range(TURNS)
        }
        seen: list[str] = []
        for source, turns in covered.items():
            log = parse_log((vault_dir / source).read_text(), source)
            assert sorted(turns) == list(range(1, len(log.turns) + 1)), source  # once each
            seen += [t.content.split()[0] for t in log.turns]
        assert sorted(seen) == sorted(sent)  # every turn in exactly one processed log
        assert not list((vault_dir / "logs").glob("*.md"))  # nothing left unconsolidated
        hand_facts = vault.index.fact_rows("path = ?", ["semantic/hand-notes.md"])
        assert len(hand_facts) == edits  # the last hand edit, whole
        assert f"(edit {edits})" in episode.read_text()


FACT_SETTER = textwrap.dedent(
    """
    import sys
    from memoryclaw import Vault

    root, count = sys.argv[1], int(sys.argv[2])
    with Vault(root, env={}) as vault:
        for n in range(count):
            vault.set_fact(f"Stated{n}", "email", f"stated{n}@example.org")
    """
)
CONSOLIDATOR = textwrap.dedent(
    """
    import sys
    from memoryclaw import Vault

    root, count = sys.argv[1], int(sys.argv[2])
    with Vault(root, env={}) as vault:
        for n in range(count):
            said = f"My colleague Heard{n}'s email is heard{n}@example.org."
            vault.log_turn(f"s{n}", "user", said)
            vault.end_session(f"s{n}")
            vault.consolidate(all_logs=True)
    """
)


def test_facts_stated_while_consolidation_files_facts_are_all_kept(vault_dir: Path) -> None:
    """An agent states facts while the daemon files others into the same fact file: each
    writer reads, changes and replaces that file, so without one lock for fact files one of
    them would write back a copy that lacks the other's line, or sweep its temp file away."""
    (vault_dir / "memoryclaw.yaml").write_text("git:\n  autoCommit: false\n")
    count = 40
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(vault_dir), str(count)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in (FACT_SETTER, CONSOLIDATOR)
    ]
    errors = [run.communicate(timeout=120)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    text = "".join(p.read_text() for p in sorted((vault_dir / "semantic").glob("*.md")))
    for n in range(count):
        assert text.count(f"stated{n}@example.org") == 1, n
        assert text.count(f"heard{n}@example.org") == 1, n
