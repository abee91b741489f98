"""Do two commits rank alike?  A snapshot of what search and retrieve return, and a diff.

Speed work on the ranking statements must not move a result.  ``snapshot`` asks every LoCoMo
dev question (categories 1-4, on a vault built as the reference scorer builds it), the
synthetic 10k vault's queries of ``bench/bench_search.py`` and those of its common-word 10k
vault (every query word in about 12% of the episodes) through ``Vault.search`` and
``Vault.retrieve`` at a fixed clock, and writes what came back (the ``search --json`` document
without its timing, and the payload's text) to a JSON file.  ``compare`` reads two snapshots
and prints how many queries differ, in their top 5, their whole ranking, their scores and
their payload.

    .venv/bin/python bench/bench_identity.py snapshot OUT.json [--conversations N] [--queries N]
        [--common-queries N]
    .venv/bin/python bench/bench_identity.py compare OLD.json NEW.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from bench_search import (  # noqa: E402
    DEFAULT_OUT,
    DEFAULT_SEED,
    Vocabulary,
    ensure_vault,
    queries_for,
)
from locomo import build_payload_vault  # noqa: E402

from memoryclaw import Vault  # noqa: E402

DATA = BENCH_DIR.parent.parent / "shared" / "data" / "locomo-dev.json"
# A fixed clock, so recency weighs the same in both runs.
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _answers(vault: Vault, query: str) -> dict[str, Any]:
    """What one query returns: the search document without timing, and the payload text."""
    found = vault.search(query, now=NOW, refresh=False).as_dict()
    found.pop("took_ms", None)
    payload = vault.retrieve(query, now=NOW, refresh=False)
    return {"search": found, "payload": payload.context}


def snapshot(target: Path, conversations: int, queries: int, common: int) -> None:
    """Ask every question of both sets and write the answers to ``target``."""
    out: dict[str, dict[str, Any]] = {}
    samples = json.loads(DATA.read_text())[:conversations]
    for sample in samples:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            build_payload_vault(sample, root)
            with Vault(root, env={}) as vault:
                for number, qa in enumerate(sample["qa"]):
                    if qa.get("category") == 5:
                        continue
                    key = f"{sample['sample_id']}#{number}"
                    out[key] = _answers(vault, str(qa["question"]))
        print(f"{sample['sample_id']}: done", file=sys.stderr)
    vocab = Vocabulary.build(DEFAULT_SEED)
    for kind, label, count in (("zipf", "synthetic", queries), ("common", "common", common)):
        if count <= 0:
            continue
        root, _ = ensure_vault(DEFAULT_OUT, 10_000, DEFAULT_SEED, vocab, kind)
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "vault"
            # A copy: retrieve notes recalls in the vault's state, which must not carry over.
            shutil.copytree(root, copy)
            with Vault(copy, env={}) as vault:
                vault.reindex()
                asked = queries_for(kind, vocab, DEFAULT_SEED, count)
                for number, query in enumerate(asked):
                    out[f"{label}-10k#{number}"] = _answers(vault, query)
        print(f"{label}-10k: done", file=sys.stderr)
    target.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(f"{len(out)} queries written to {target}", file=sys.stderr)


def _ids(answer: dict[str, Any]) -> list[str]:
    doc = answer["search"]
    return [str(r.get("id")) for r in doc.get("results", [])] + [
        str(f.get("id")) for f in doc.get("facts", [])
    ]


def _scores(answer: dict[str, Any]) -> list[float]:
    return [float(r.get("score", 0.0)) for r in answer["search"].get("results", [])]


def compare(old_path: Path, new_path: Path) -> int:
    """Print how many queries differ between two snapshots; 1 when any does."""
    old = json.loads(old_path.read_text())
    new = json.loads(new_path.read_text())
    keys = sorted(set(old) & set(new))
    counts = {"top5": 0, "ranking": 0, "scores": 0, "search_document": 0, "payload": 0}
    examples: list[str] = []
    for key in keys:
        a, b = old[key], new[key]
        differs = {
            "top5": _ids(a)[:5] != _ids(b)[:5],
            "ranking": _ids(a) != _ids(b),
            "scores": any(abs(x - y) > 1e-6 for x, y in zip(_scores(a), _scores(b))),
            "search_document": a["search"] != b["search"],
            "payload": a["payload"] != b["payload"],
        }
        for name, flag in differs.items():
            counts[name] += flag
        if any(differs.values()) and len(examples) < 5:
            examples.append(key)
    missing = len(set(old) ^ set(new))
    print(f"queries compared: {len(keys)} (only in one snapshot: {missing})")
    for name, count in counts.items():
        print(f"  differ in {name}: {count}")
    if examples:
        print("  first differing: " + ", ".join(examples))
    return 1 if any(counts.values()) or missing else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``snapshot`` or ``compare``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="ask every question, write the answers")
    snap.add_argument("out", type=Path)
    snap.add_argument("--conversations", type=int, default=5, help="LoCoMo dev conversations")
    snap.add_argument("--queries", type=int, default=200, help="synthetic 10k queries")
    snap.add_argument(
        "--common-queries", type=int, default=200, help="queries of the common-word 10k vault"
    )
    diff = sub.add_parser("compare", help="count the queries whose answers differ")
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        snapshot(args.out, args.conversations, args.queries, args.common_queries)
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    raise SystemExit(main())
