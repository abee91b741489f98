"""What ``Vault.retrieve`` costs per turn, in one process: CPU (thread time) and wall.

Asks every LoCoMo dev question (categories 1-4) of its conversation's vault, built as the
reference scorer builds it (``locomo.build_payload_vault``), and optionally the queries of
``bench/bench_search.py`` of a synthetic vault (``--synthetic 100000``), through
``Vault.retrieve`` as a hook's turn calls it (``refresh=True``; ``--no-refresh`` leaves out
the check for changed files) at a fixed clock, after one warm-up pass; prints p50 and p95 of
the thread CPU time and of the wall time per call.  Built vaults are cached in ``--cache``
(the synthetic one as ``bench_search.py`` caches it, in ``bench/out/vaults/``, its index
beside it) and each run asks a fresh copy, so the recalls a run notes never carry over.
``--profile OUT`` also writes the cProfile stats of the measured pass (the top printed).  The
figures are also written to ``OUT/retrieve.json`` (``--out``, default ``bench/out``).

    .venv/bin/python bench/bench_retrieve.py [--synthetic 100000] [--profile OUT]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from bench_search import (  # noqa: E402
    DEFAULT_OUT,
    DEFAULT_SEED,
    Vocabulary,
    build_queries,
    ensure_vault,
    machine_info,
    percentile,
)
from locomo import build_payload_vault  # noqa: E402

from memoryclaw import Vault  # noqa: E402

DATA = BENCH_DIR.parent.parent / "shared" / "data" / "locomo-dev.json"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "memoryclaw-bench-retrieve"
# A fixed clock, so every run ranks alike.
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
# Bump when build_payload_vault's vaults change, so cached ones are rebuilt.
CACHE_VERSION = 1


def _locomo_vaults(cache: Path) -> list[tuple[Path, list[str]]]:
    """Each LoCoMo dev conversation's vault (built unless cached) and its questions."""
    out = []
    for sample in json.loads(DATA.read_text()):
        root = cache / f"locomo-v{CACHE_VERSION}" / str(sample["sample_id"])
        if not (root / ".built").exists():
            if root.exists():
                shutil.rmtree(root)
            build_payload_vault(sample, root)
            (root / ".built").write_text("")
        questions = [str(qa["question"]) for qa in sample["qa"] if qa.get("category") != 5]
        out.append((root, questions))
    return out


def _synthetic_vault(size: int, queries: int) -> tuple[Path, list[str]]:
    """``bench_search.py``'s synthetic vault of ``size`` episodes, indexed, and its queries."""
    vocab = Vocabulary.build(DEFAULT_SEED)
    root, _ = ensure_vault(DEFAULT_OUT, size, DEFAULT_SEED, vocab)
    with Vault(root, env={}) as vault:
        vault.refresh()  # indexed once, in the cache; every copy starts up to date
    return root, build_queries(vocab, DEFAULT_SEED, queries)


def _link_or_copy(source: str, target: str) -> None:
    """A markdown file linked (retrieve never writes one in place: a 100k vault's copy is
    cheap), anything else copied (the index and the recall files are written)."""
    if source.endswith(".md"):
        os.link(source, target)
    else:
        shutil.copy2(source, target)


def _measure(
    root: Path, questions: Sequence[str], refresh: bool, profiler: cProfile.Profile | None
) -> list[tuple[int, int]]:
    """(thread CPU ns, wall ns) of each question's retrieve, on a copy of ``root``, after a
    warm-up pass over the same questions."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "vault"
        ignore = shutil.ignore_patterns(".built")
        shutil.copytree(root, copy, ignore=ignore, copy_function=_link_or_copy)
        samples = []
        with Vault(copy, env={}) as vault:
            for question in questions:  # warm-up: caches, the page cache, lazy imports
                vault.retrieve(question, now=NOW, refresh=refresh)
            for question in questions:
                with profiler or nullcontext():
                    cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
                    vault.retrieve(question, now=NOW, refresh=refresh)
                    cpu, wall = time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
                samples.append((cpu, wall))
        return samples


def _report(label: str, samples: Sequence[tuple[int, int]]) -> dict[str, float]:
    """Print and return p50/p95 of CPU and wall, in milliseconds."""
    cpu = [c / 1e6 for c, _ in samples]
    wall = [w / 1e6 for _, w in samples]
    row = {
        "cpu_p50": percentile(cpu, 0.5),
        "cpu_p95": percentile(cpu, 0.95),
        "wall_p50": percentile(wall, 0.5),
        "wall_p95": percentile(wall, 0.95),
    }
    print(
        f"{label}: {len(samples)} retrieves, CPU p50 {row['cpu_p50']:.2f} ms, "
        f"p95 {row['cpu_p95']:.2f} ms; wall p50 {row['wall_p50']:.2f} ms, "
        f"p95 {row['wall_p95']:.2f} ms"
    )
    return row


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print, and optionally profile."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="built LoCoMo vaults")
    parser.add_argument("--no-locomo", action="store_true", help="skip the LoCoMo dev vaults")
    parser.add_argument("--synthetic", type=int, default=0, help="also a synthetic vault this big")
    parser.add_argument("--queries", type=int, default=200, help="synthetic queries")
    parser.add_argument(
        "--no-refresh",
        action="store_true",
        help="retrieve(refresh=False): without the check for changed files a hook's call makes",
    )
    parser.add_argument("--profile", type=Path, help="write cProfile stats of the measured pass")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where retrieve.json goes")
    args = parser.parse_args(argv)
    profiler = cProfile.Profile() if args.profile else None
    samples: list[tuple[int, int]] = []
    report: dict[str, object] = {"machine": machine_info(), "refresh": not args.no_refresh}
    if not args.no_locomo:
        for root, questions in _locomo_vaults(args.cache):
            samples += _measure(root, questions, not args.no_refresh, profiler)
        report["locomo"] = {"retrieves": len(samples), **_report("LoCoMo dev", samples)}
    if args.synthetic:
        root, queries = _synthetic_vault(args.synthetic, args.queries)
        samples = _measure(root, queries, not args.no_refresh, profiler)
        row = _report(f"synthetic {args.synthetic}", samples)
        report["synthetic"] = {"episodes": args.synthetic, "retrieves": len(samples), **row}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "retrieve.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if profiler is not None:
        profiler.dump_stats(args.profile)
        pstats.Stats(str(args.profile)).sort_stats("cumulative").print_stats(40)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
