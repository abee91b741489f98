"""What each part of ``Vault.search`` costs against the bare FTS5 floor.

A search ranks episodes (the part the floor, a bare ``MATCH … ORDER BY rank LIMIT 5`` of the
expression search ranks, stands for), then finds the facts, quotes the best lines of the top
episodes (passages) and says which words each result matched (explanations).  This runs the
same queries on ``bench_search.py``'s synthetic vault four times, each time with one more of
those parts left out, and prints each variant's thread-CPU p50 and whole-set sum against the
floor's, interleaved query by query.  The variants leaving parts out are a what-if, made by
replacing the stage functions ``memoryclaw.recall.retrieval`` calls; no product setting does
this.  It answers: how close to the floor can a search come that still does what search does?

    .venv/bin/python bench/bench_search_parts.py [--size 10000] [--kind zipf|common]
        [--queries 200] [--repeats 3] [--out bench/out]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search

import memoryclaw.recall.retrieval as retrieval
from memoryclaw import Vault
from memoryclaw.recall.plan import plan_query

# Each variant: its name, and the stage functions it replaces (name -> stand-in).
VARIANTS: tuple[tuple[str, dict[str, Callable[..., Any]]], ...] = (
    ("search as it is", {}),
    ("without passages", {"_rank_passages": lambda *a, **k: []}),
    (
        "without passages and explanations",
        {"_rank_passages": lambda *a, **k: [], "_explain": lambda index, plan, found: found},
    ),
    (
        "episodes alone (no facts either)",
        {
            "_rank_passages": lambda *a, **k: [],
            "_explain": lambda index, plan, found: found,
            "_facts": lambda *a, **k: [],
        },
    ),
)


@contextmanager
def _replaced(stand_ins: dict[str, Callable[..., Any]]) -> Iterator[None]:
    """The retrieval module with these stage functions replaced, put back after."""
    saved = {name: getattr(retrieval, name) for name in stand_ins}
    try:
        for name, stand_in in stand_ins.items():
            setattr(retrieval, name, stand_in)
        yield
    finally:
        for name, original in saved.items():
            setattr(retrieval, name, original)


def measure(vault: Vault, queries: Sequence[str], repeats: int) -> list[dict[str, float | str]]:
    """Each variant's p50 and sum of thread CPU over ``queries`` against the floor's."""
    index = vault.index
    plans = [(query, plan_query(query, index)) for query in queries]
    asked = [(query, plan.episode_match or plan.match) for query, plan in plans if plan.match]
    rows: list[dict[str, float | str]] = []
    for name, stand_ins in VARIANTS:
        with _replaced(stand_ins):
            for query, match in asked:  # warm: the page cache and the index's memo
                vault.search(query, refresh=False)
                index.bare_match(match, 5)
            spent: list[int] = []
            floor: list[int] = []
            for repeat in range(repeats):
                for number, (query, match) in enumerate(asked):
                    pair = [
                        (spent, lambda q=query: vault.search(q, refresh=False)),
                        (floor, lambda m=match: index.bare_match(m, 5)),
                    ]
                    for samples, action in pair if (number + repeat) % 2 else pair[::-1]:
                        started = time.thread_time_ns()
                        action()
                        samples.append(time.thread_time_ns() - started)
        search_p50 = bench_search.percentile(spent, 0.5) / 1e6
        floor_p50 = bench_search.percentile(floor, 0.5) / 1e6
        rows.append(
            {
                "variant": name,
                "search_p50_ms": search_p50,
                "floor_p50_ms": floor_p50,
                "ratio_p50": search_p50 / floor_p50,
                "ratio_sums": sum(spent) / sum(floor),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table and write ``search_parts.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--kind", choices=("zipf", "common"), default="zipf")
    parser.add_argument("--seed", type=int, default=bench_search.DEFAULT_SEED)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=bench_search.DEFAULT_OUT)
    args = parser.parse_args(argv)
    vocab = bench_search.Vocabulary.build(args.seed)
    root, _ = bench_search.ensure_vault(args.out, args.size, args.seed, vocab, args.kind)
    queries = bench_search.queries_for(args.kind, vocab, args.seed, args.queries)
    with Vault(root, env={}) as vault:
        vault.reindex()  # a cached vault's index may be of an older schema: rebuilt here
        rows = measure(vault, queries, args.repeats)
    print(f"{args.kind} vault of {args.size:,} episodes, {len(queries)} queries x {args.repeats}")
    print("| search | p50 ms | floor p50 ms | ÷ floor, p50 | ÷ floor, whole set |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['variant']} | {row['search_p50_ms']:.3f} | {row['floor_p50_ms']:.3f}"
            f" | {row['ratio_p50']:.2f}x | {row['ratio_sums']:.2f}x |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"size": args.size, "kind": args.kind, "queries": len(queries), "rows": rows}
    (args.out / "search_parts.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
