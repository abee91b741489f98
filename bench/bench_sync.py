"""Syncing a vault between two clones through a git remote (``memoryclaw sync``).

Two numbers: the sync that carries N new episodes from clone A to clone B (A's sync commits and
pushes them; B's fetches, merges and re-indexes them), and a sync with nothing to do in a vault
of M memory files (what a daemon's timer pays most of the time).

    .venv/bin/python bench/bench_sync.py [--episodes 1000] [--files 20000]

The table is printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from memoryclaw import Vault  # noqa: E402

EPISODE = """---
id: ep-20250101-{n:06d}-bench-{n}
timestamp: 2025-01-01T00:00:00Z
summary: "Bench episode {n} about topic{n} and the harbour walk."
tags: [bench]
participants: [user, assistant]
confidence: high
---
**Details:**
- Topic {n}: walked along the harbour with word{n}
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _episodes(root: Path, first: int, count: int) -> None:
    folder = root / "episodes"
    for n in range(first, first + count):
        (folder / f"2025-01-01_00-00-00_bench-{n}.md").write_text(EPISODE.format(n=n))


def _timed(vault: Vault) -> tuple[float, int]:
    started = time.perf_counter()
    report = vault.sync_remote()
    return (time.perf_counter() - started) * 1000, len(report.files_changed)


def main() -> None:
    """Run both measurements and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--files", type=int, default=20000)
    args = parser.parse_args()
    # git's detached auto-gc may still write in the clones while they are removed.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        base = Path(tmp)
        bare = base / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        a = base / "a"
        Vault.init(a, git=True, env={}).close()
        _git(a, "symbolic-ref", "HEAD", "refs/heads/main")
        _git(a, "remote", "add", "origin", str(bare))
        with Vault(a, env={}) as vault:
            vault.sync_remote(setup=True)
        subprocess.run(["git", "clone", "-q", str(bare), str(base / "b")], check=True)
        Vault.init(base / "b", env={}).close()
        rows = []
        _episodes(a, 0, args.episodes)
        with Vault(a, env={}) as va, Vault(base / "b", env={}) as vb:
            vb.reindex()
            push_ms, pushed = _timed(va)
            pull_ms, pulled = _timed(vb)
            hits = len(vb.search(f"word{args.episodes - 1}").results)
            rows.append((f"push {args.episodes} new episodes (A)", push_ms, pushed))
            rows.append((f"pull + re-index them (B), search hit {hits}", pull_ms, pulled))
        _episodes(a, args.episodes, args.files - args.episodes)
        with Vault(a, env={}) as va:
            va.sync_remote()
            va.reindex()
            noop_ms, changed = _timed(va)
            rows.append((f"no-op sync at {args.files} files", noop_ms, changed))
        _print(rows)


def _print(rows: list[tuple[str, float, int]]) -> None:
    """The table of measurements."""
    print(f"{'measurement':<48} {'ms':>9} {'files':>7}", flush=True)
    for name, ms, files in rows:
        print(f"{name:<48} {ms:>9.0f} {files:>7}")


if __name__ == "__main__":
    main()
