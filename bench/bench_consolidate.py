"""Consolidation throughput on LoCoMo dev and the fsyncs it costs, beside an older revision.

Each of the five LoCoMo dev conversations is ingested into a fresh vault (one logged session
per LoCoMo session, as ``locomo.py`` does) and indexed, untimed; then ``consolidate --all`` is
timed, with ``os.fsync`` counted.  Both copies of memoryclaw (``--baseline``, extracted with
``git archive``, and this checkout) run in alternating fresh processes, so that the machine's
load falls on both alike, and the median run of each is compared.

Run ``python bench/bench_consolidate.py --help``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
DEFAULT_OUT = BENCH_DIR / "out"
DATA = PROJECT_DIR.parent / "shared" / "data" / "locomo-dev.json"
# the last revision that synced every folder after every write of a consolidation
DEFAULT_BASELINE = "a75700a"


def _measure(data: Path, limit: int | None) -> dict[str, Any]:
    """In this process: consolidate every conversation in a fresh vault; logs, time, fsyncs."""
    import memoryclaw
    from memoryclaw import Vault

    # after memoryclaw, which it would otherwise import from this checkout (it puts it first)
    locomo = importlib.import_module("locomo")

    real_fsync = os.fsync
    fsyncs = 0
    fsync_s = 0.0

    def counted(fd: int) -> None:
        nonlocal fsyncs, fsync_s
        started = time.perf_counter()
        real_fsync(fd)
        fsync_s += time.perf_counter() - started
        fsyncs += 1

    logs = 0
    took_s = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-consolidate-") as tmp:
        for sample in json.loads(data.read_text())[:limit]:
            root = Path(tmp) / str(sample["sample_id"])
            Vault.init(root, env={}).close()
            (root / "memoryclaw.yaml").write_text("git:\n  autoCommit: false\n")
            records = [
                {
                    "session": f"locomo:{sample['sample_id']}:s{number}",
                    "role": "user",
                    "name": str(turn["speaker"]),
                    "content": locomo.turn_text(turn),
                    "timestamp": date.isoformat(),
                    "channel": "locomo",
                }
                for number, date, turns in locomo.sessions(sample["conversation"])
                for turn in turns
            ]
            with Vault(root, env={}) as vault:
                vault.ingest(records)
                vault.reindex()
                os.fsync = counted
                try:
                    started = time.perf_counter()
                    report = vault.consolidate(all_logs=True)
                    took_s += time.perf_counter() - started
                finally:
                    os.fsync = real_fsync
            logs += report.logs_read
    return {
        "package": str(Path(memoryclaw.__file__).parent),
        "logs": logs,
        "seconds": took_s,
        "logs_per_s": logs / took_s,
        "fsyncs": fsyncs,
        "fsync_s": fsync_s,
    }


def _child(package_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "--data", str(args.data)]
    if args.limit_conversations is not None:
        command += ["--limit-conversations", str(args.limit_conversations)]
    env = {"PYTHONPATH": f"{package_dir}:{BENCH_DIR}", "PATH": os.environ.get("PATH", "")}
    proc = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo dev JSON")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--runs", type=int, default=3, help="processes per side (alternating)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="cache and results folder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both sides and print the comparison."""
    args = parse_args(argv)
    if args.child:
        print(json.dumps(_measure(args.data, args.limit_conversations)))
        return 0
    from bench_limits import _baseline

    sides = {f"before ({args.baseline})": _baseline(args.baseline, args.out), "now": PROJECT_DIR}
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for _ in range(args.runs):
        for side, package_dir in sides.items():
            runs[side].append(_child(package_dir, args))
    print(f"LoCoMo dev consolidation, {args.runs} alternating runs per side (median, min-max)\n")
    print("| memoryclaw | logs | logs/s | fsyncs | s in fsync |")
    print("|---|---|---|---|---|")
    for side, results in runs.items():
        rates = [r["logs_per_s"] for r in results]
        in_fsync = statistics.median(r["fsync_s"] for r in results)
        print(
            f"| {side} | {results[0]['logs']} | {statistics.median(rates):.1f} "
            f"({min(rates):.1f}-{max(rates):.1f}) | {results[0]['fsyncs']} | {in_fsync:.2f} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "consolidate.json").write_text(
        json.dumps({"baseline": args.baseline, "runs": runs}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
