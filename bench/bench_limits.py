"""What the input limits cost: reindex and search with and without them.

The limits (YAML size, nesting and alias bounds, list and synonym caps, the scan's name,
depth and changed-file checks) are measured against a revision without them: both copies of
memoryclaw index the same generated vault (``bench_search``'s, 10k episodes by default) and
answer the same queries, in alternating fresh processes, and the medians are compared.

Run ``python bench/bench_limits.py --help``.  The acceptance bound is 5 % slower at most.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
DEFAULT_OUT = BENCH_DIR / "out"
ALLOWED_SLOWDOWN = 0.05


def _measure(root: Path, queries: list[str], passes: int) -> dict[str, float]:
    """In this process: one full reindex, then ``passes`` timed passes over the queries."""
    from memoryclaw import Vault

    with Vault(root, env={}) as vault:
        started = time.perf_counter()
        vault.reindex(full=True)
        reindex_s = time.perf_counter() - started
        for query in queries:  # warm-up
            vault.search(query, refresh=False)
        timings = []
        for _ in range(passes):
            started = time.perf_counter()
            for query in queries:
                vault.search(query, refresh=False)
            timings.append(time.perf_counter() - started)
    return {"reindex_s": reindex_s, "search_ms": statistics.median(timings) / len(queries) * 1e3}


def _baseline(ref: str, out: Path) -> Path:
    """A copy of the ``memoryclaw`` package as of git revision ``ref``."""
    target = out / f"baseline-{ref}"
    if not (target / "memoryclaw" / "__init__.py").exists():
        archive = subprocess.run(
            ["git", "-C", str(PROJECT_DIR), "archive", "--format=tar", ref, "memoryclaw"],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
    return target


def _child(package_dir: Path, args: argparse.Namespace) -> dict[str, float]:
    command = [
        sys.executable,
        __file__,
        "--child",
        "--size",
        str(args.size),
        "--queries",
        str(args.queries),
        "--passes",
        str(args.passes),
        "--out",
        str(args.out),
    ]
    env = {"PYTHONPATH": f"{package_dir}:{BENCH_DIR}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000, help="episodes in the vault")
    parser.add_argument("--queries", type=int, default=200, help="queries per pass")
    parser.add_argument("--passes", type=int, default=3, help="timed search passes per run")
    parser.add_argument("--runs", type=int, default=3, help="processes per side (alternating)")
    parser.add_argument("--baseline", default="2f31e03", help="git revision without the limits")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="cache and results folder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both sides and print the comparison; exit 1 past the allowed slowdown."""
    args = parse_args(argv)
    import bench_search

    vocab = bench_search.Vocabulary.build(bench_search.DEFAULT_SEED)
    root, _ = bench_search.ensure_vault(args.out, args.size, bench_search.DEFAULT_SEED, vocab)
    if args.child:
        queries = bench_search.build_queries(vocab, bench_search.DEFAULT_SEED, args.queries)
        print(json.dumps(_measure(root, queries, args.passes)))
        return 0
    sides = {"without limits": _baseline(args.baseline, args.out), "with limits": PROJECT_DIR}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for _ in range(args.runs):
        for side, package_dir in sides.items():
            runs[side].append(_child(package_dir, args))
    report: dict[str, Any] = {"size": args.size, "baseline": args.baseline, "runs": runs}
    print(f"{args.size:,} episodes, {args.queries} queries, {args.runs} runs a side (medians)")
    worst = 0.0
    for metric in ("reindex_s", "search_ms"):
        base, new = (statistics.median(r[metric] for r in runs[side]) for side in sides)
        change = new / base - 1
        worst = max(worst, change)
        report[metric] = {"without": base, "with": new, "change": change}
        print(f"  {metric:<10} without {base:9.3f}  with {new:9.3f}  change {change:+.1%}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "limits.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if worst <= ALLOWED_SLOWDOWN else 1


if __name__ == "__main__":
    sys.exit(main())
