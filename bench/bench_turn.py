"""What one agent turn costs: ``retrieve`` p50/p95, in-process and as a fresh process, with
none and with many recorded recalls, and the first turn of a new session logged.

Each vault is ``bench_search.py``'s synthetic one of each of ``--sizes`` episodes (generated
once and cached), copied to a scratch folder.  For each count in ``--recalls`` the recall times are
reset and that many are recorded (written as a ``recall.json`` of that many episode ids,
which the first retrieve takes in), then a recall's bookkeeping is timed alone (30 notes,
each by a new ``Vault``), ``--rounds`` retrieves run in one process (each one noting its
recalls, as the first of the day does) and ``--fresh-runs`` retrieves run as ``memoryclaw
retrieve`` processes.  Last, ``--log-runs`` fresh ``memoryclaw log`` processes
each log the first turn of a new session, and with each count of ``--open-logs`` left
unconsolidated in ``logs/`` (as while nothing consolidates), a new session's first turn is
logged in-process and as a fresh process.  Raw numbers in ``OUT/turn.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
sys.path.insert(0, str(PROJECT_DIR))
sys.path.insert(0, str(BENCH_DIR))

from bench_search import (  # noqa: E402
    DEFAULT_OUT,
    DEFAULT_SEED,
    Vocabulary,
    build_queries,
    ensure_vault,
    machine_info,
    memoryclaw_exe,
    subprocess_env,
    summarize_ms,
)

from memoryclaw import Vault  # noqa: E402
from memoryclaw.recall.usage import RECALL_FILE, RecallLog, save_recalls  # noqa: E402


def reset_recalls(root: Path, count: int) -> None:
    """Forget every recall time, then record ``count`` of them (as an older version left
    them: a recall.json, which the index takes in on first use)."""
    (root / RECALL_FILE).unlink(missing_ok=True)
    with sqlite3.connect(root / ".memoryclaw" / "index.db") as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "recalls" in tables:
            db.execute("DELETE FROM recalls")
            db.execute("DELETE FROM meta WHERE key = 'recalls_since'")
    if count:
        since = datetime.now(timezone.utc) - timedelta(days=365)
        last = {f"ep-bench-{n:06d}": since + timedelta(seconds=n) for n in range(count)}
        save_recalls(root, RecallLog(since, last))


def in_process(root: Path, queries: Sequence[str], rounds: int) -> dict[str, float]:
    """Retrieves in one long-lived Vault, each noting its recalls."""
    samples: list[int] = []
    with Vault(root) as vault:
        vault.retrieve(queries[0])  # the index opened, recall.json taken in
        for n in range(rounds):
            vault._noted.clear()  # note every time, as each day's first recall does
            started = time.perf_counter_ns()
            vault.retrieve(queries[n % len(queries)])
            samples.append(time.perf_counter_ns() - started)
    return summarize_ms(samples)


def bookkeeping(root: Path, rounds: int) -> dict[str, float]:
    """A recall's bookkeeping alone (noting five episodes), each in a new ``Vault``."""
    import inspect

    from memoryclaw.recall.usage import note_recalled

    # before recall times moved to the index, noting took no index (kept to compare)
    takes_index = "index" in inspect.signature(note_recalled).parameters
    samples: list[int] = []
    now = datetime.now(timezone.utc)
    for n in range(rounds + 1):
        with Vault(root) as vault:
            ids = [f"ep-turn-{n}-{k}" for k in range(5)]
            started = time.perf_counter_ns()
            if takes_index:
                note_recalled(root, vault.index, ids, now + timedelta(seconds=n))
            else:
                note_recalled(root, ids, now + timedelta(seconds=n))  # type: ignore[call-arg]
            if n:  # the first takes recall.json in
                samples.append(time.perf_counter_ns() - started)
    return summarize_ms(samples)


def leave_open_logs(root: Path, count: int) -> None:
    """Make ``logs/`` hold at least ``count`` open logs, one a session, none consolidated: what
    piles up while nothing consolidates (each written by a logged turn, as an agent would)."""
    have = len(list((root / "logs").glob("*.md")))
    start = datetime.now(timezone.utc) - timedelta(days=30)
    with Vault(root) as vault:
        for n in range(have, count):
            vault.log_turn(f"left-open-{n}", "user", f"turn {n}", timestamp=start)


def log_in_process(root: Path, rounds: int) -> dict[str, float]:
    """The first turns of new sessions logged by one long-lived Vault."""
    samples: list[int] = []
    stamp = time.time_ns()
    with Vault(root) as vault:
        vault.log_turn(f"warm-{stamp}", "user", "the index opened")
        for n in range(rounds):
            started = time.perf_counter_ns()
            vault.log_turn(f"new-{stamp}-{n}", "user", "the first turn of a session")
            samples.append(time.perf_counter_ns() - started)
    return summarize_ms(samples)


def fresh(command: Sequence[str], env: dict[str, str]) -> int:
    """Nanoseconds one process took, from start to exit."""
    started = time.perf_counter_ns()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter_ns() - started


def measure_size(
    cached: Path,
    size: int,
    queries: Sequence[str],
    args: argparse.Namespace,
    exe: str,
    env: dict[str, str],
) -> dict[str, Any]:
    """Every figure of one vault size, measured on a scratch copy of ``cached``."""
    found: dict[str, Any] = {"size": size, "retrieve": {}}
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as scratch:
        root = Path(scratch) / "vault"
        shutil.copytree(cached, root, symlinks=True)
        subprocess.run([exe, "--vault", str(root), "reindex"], check=True, env=env)
        for count in [int(c) for c in args.recalls.split(",")]:
            reset_recalls(root, count)
            measured = {"bookkeeping": bookkeeping(root, 30)}
            reset_recalls(root, count)
            measured["in_process"] = in_process(root, queries, args.rounds)
            runs = [
                fresh([exe, "--vault", str(root), "retrieve", queries[n % len(queries)]], env)
                for n in range(args.fresh_runs)
            ]
            measured["fresh_process"] = summarize_ms(runs)
            found["retrieve"][str(count)] = measured
            print(
                f"{count:>7} recalls recorded: noting a recall"
                f" p50 {measured['bookkeeping']['p50']:.2f} ms; retrieve in-process"
                f" p50 {measured['in_process']['p50']:.1f} p95 {measured['in_process']['p95']:.1f}"
                f" ms; fresh process p50 {measured['fresh_process']['p50']:.0f}"
                f" p95 {measured['fresh_process']['p95']:.0f} ms"
            )
        stamp = int(time.time())
        log = [exe, "--vault", str(root), "log", "--role", "user"]
        logs = [
            fresh([*log, "--session", f"bench-{stamp}-{n}", "the first turn of a session"], env)
            for n in range(args.log_runs)
        ]
        found["log_first_turn"] = summarize_ms(logs)
        first = found["log_first_turn"]
        print(f"first turn of a new session logged: p50 {first['p50']:.0f} ms (fresh process)")
        found["log_with_open_logs"] = {}
        for count in [int(c) for c in args.open_logs.split(",")]:
            leave_open_logs(root, count)
            measured = {"in_process": log_in_process(root, max(args.rounds // 4, 5))}
            measured["fresh_process"] = summarize_ms(
                [
                    fresh([*log, "--session", f"open-{count}-{n}", "a first turn"], env)
                    for n in range(args.log_runs)
                ]
            )
            found["log_with_open_logs"][str(count)] = measured
            print(
                f"{count:>7} logs left open: a new session's first turn logged in-process"
                f" p50 {measured['in_process']['p50']:.1f} p95 {measured['in_process']['p95']:.1f}"
                f" ms; fresh process p50 {measured['fresh_process']['p50']:.0f} ms"
            )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000", help="comma-separated vault sizes in episodes")
    parser.add_argument("--recalls", default="0,100000", help="recorded recall counts")
    parser.add_argument("--rounds", type=int, default=200, help="in-process retrieves")
    parser.add_argument("--fresh-runs", type=int, default=20, help="`memoryclaw retrieve` runs")
    parser.add_argument("--log-runs", type=int, default=10, help="`memoryclaw log` runs")
    parser.add_argument(
        "--open-logs", default="0,1000", help="logs left open in logs/ when a turn is logged"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = subprocess_env(out)
    vocab = Vocabulary.build(args.seed)
    queries = build_queries(vocab, args.seed, 50)
    exe = memoryclaw_exe()
    report: dict[str, Any] = {"machine": machine_info(), "sizes": []}
    for size in [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]:
        cached, _ = ensure_vault(out, size, args.seed, vocab)
        print(f"[{size:,} episodes]")
        report["sizes"].append(measure_size(cached, size, queries, args, exe, env))
    (out / "turn.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
