"""What recording recall metrics costs a retrieve.

Two :class:`memoryclaw.Vault` objects on one copy of a vault, one with ``metrics.keepDays``
at its default (every retrieve adds to ``.memoryclaw/metrics.json`` under the recall lock)
and one with 0 (nothing recorded), answer the same queries in turn, many rounds; the
difference of their median latencies is the cost of recording.  Both note recalled episodes
for archiving as before, once a day per episode, so after the first round that costs neither
anything.  Run ``python bench/bench_metrics.py --help``; it prints a table and writes the raw
numbers to ``bench/out/metrics.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from memoryclaw import Vault, load_settings

BENCH_DIR = Path(__file__).resolve().parent
SAMPLE_VAULT = BENCH_DIR.parent / "sample_vault"
QUERIES = (
    "what did I email John about",
    "flight to Lisbon",
    "dentist appointment",
    "Falcon beta plan",
    "when is Emma's wedding",
    "thanks!",
)


def _percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _timed_ms(vault: Vault, query: str) -> float:
    started = time.perf_counter_ns()
    vault.retrieve(query)
    return (time.perf_counter_ns() - started) / 1e6


def measure(root: Path, rounds: int) -> dict[str, dict[str, float]]:
    """Median and p95 retrieve latency (ms) with metrics recorded and without."""
    settings = load_settings(root, env={})
    on = Vault(root, settings, env={})
    off = Vault(
        root,
        dataclasses.replace(settings, metrics=dataclasses.replace(settings.metrics, keep_days=0)),
        env={},
    )
    samples: dict[str, list[float]] = {"recorded": [], "not recorded": []}
    try:
        for query in QUERIES:  # warm both: index open, caches filled, recalls noted
            on.retrieve(query)
            off.retrieve(query)
        for _ in range(rounds):
            for query in QUERIES:
                samples["recorded"].append(_timed_ms(on, query))
                samples["not recorded"].append(_timed_ms(off, query))
    finally:
        on.close()
        off.close()
    return {
        name: {
            "median_ms": statistics.median(values),
            "p95_ms": _percentile(values, 0.95),
            "n": float(len(values)),
        }
        for name, values in samples.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table, write ``metrics.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=SAMPLE_VAULT, help="vault to copy")
    parser.add_argument("--rounds", type=int, default=100, help="rounds of all queries")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        shutil.copytree(args.vault, root, ignore=shutil.ignore_patterns(".memoryclaw", ".git"))
        Vault(root, env={}).reindex()
        numbers = measure(root, args.rounds)
    on, off = numbers["recorded"], numbers["not recorded"]
    overhead = on["median_ms"] - off["median_ms"]
    print(f"vault {args.vault}, {len(QUERIES)} queries x {args.rounds} rounds")
    print("| retrieve | median ms | p95 ms |")
    print("|---|---:|---:|")
    for name, row in numbers.items():
        print(f"| metrics {name} | {row['median_ms']:.2f} | {row['p95_ms']:.2f} |")
    print(f"recording overhead (median): {overhead:.2f} ms")
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"vault": str(args.vault), "rounds": args.rounds, **numbers, "overhead_ms": overhead}
    (args.out / "metrics.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
