"""LoCoMo dev-split recall for memoryclaw (SPEC 10), next to a plain BM25 baseline.

For each of the five conversations in ``../shared/data/locomo-dev.json``: a fresh vault;
every session ingested as one logged session (speaker names kept, the session's date as
the turns' timestamp); ``consolidate --all``; then every question (category 5, adversarial,
skipped) through ``search``.  A question is recalled at k when one of the top-k episodes'
``source_turns`` covers one of its evidence turns (recall_any@k), or all of them
(recall_all@k).  The mean ``retrieve`` payload size is reported in tokens.

The baseline is plain BM25 (SQLite FTS5, Porter stemming like memoryclaw's index) over fixed,
non-overlapping 8-turn windows of the raw sessions, queried with the question's keywords OR-ed.

    .venv/bin/python bench/locomo.py [--data PATH] [--limit-conversations N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memoryclaw import Vault  # noqa: E402
from memoryclaw.retrieval import extract_keywords  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
KS = (1, 3, 5, 10)
WINDOW = 8
_DIA_RE = re.compile(r"^D(\d+):(\d+)$")


def session_date(text: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def sessions(conversation: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    """(number, date, turns) of every session, in order."""
    out = []
    for key, turns in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list) and turns:
            number = int(match.group(1))
            out.append((number, session_date(conversation[f"{key}_date_time"]), turns))
    return sorted(out)


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's text, with the caption of a shared image when there is one."""
    text = str(turn.get("text", ""))
    if turn.get("blip_caption"):
        text += f" [shares an image: {turn['blip_caption']}]"
    return text


def evidence(qa: dict[str, Any]) -> set[tuple[int, int]]:
    """The (session, turn) pairs a question's answer is in; malformed ids are dropped."""
    found = set()
    for item in qa.get("evidence", []):
        for part in re.split(r"[;,\s]+", str(item)):
            match = _DIA_RE.match(part.strip())
            if match:
                found.add((int(match.group(1)), int(match.group(2))))
    return found


def questions(sample: dict[str, Any]) -> list[tuple[str, set[tuple[int, int]]]]:
    """The questions that count: not adversarial, with at least one valid evidence turn."""
    out = []
    for qa in sample["qa"]:
        wanted = evidence(qa)
        if qa.get("category") != 5 and wanted:
            out.append((str(qa["question"]), wanted))
    return out


def _recall(hits: list[set[tuple[int, int]]], wanted: set[tuple[int, int]]) -> dict[str, bool]:
    out = {}
    for k in KS:
        covered = set().union(*hits[:k]) if hits else set()
        out[f"any@{k}"] = bool(covered & wanted)
        out[f"all@{k}"] = wanted <= covered
    return out


def run_memoryclaw(sample: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Ingest, consolidate and query one conversation; per-question recall and timings."""
    root = workdir / str(sample["sample_id"])
    Vault.init(root, env={}).close()
    (root / "memoryclaw.yaml").write_text("git:\n  autoCommit: false\n")
    session_of: dict[str, int] = {}
    records = []
    for number, date, turns in sessions(sample["conversation"]):
        session = f"locomo:{sample['sample_id']}:s{number}"
        session_of[session] = number
        for turn in turns:
            records.append(
                {
                    "session": session,
                    "role": "user",
                    "name": str(turn["speaker"]),
                    "content": turn_text(turn),
                    "timestamp": date.isoformat(),
                    "channel": "locomo",
                }
            )
    with Vault(root, env={}) as vault:
        vault.ingest(records)
        started = time.perf_counter()
        report = vault.consolidate(all_logs=True)
        consolidate_s = time.perf_counter() - started
        results, tokens, latencies = [], [], []
        for question, wanted in questions(sample):
            t0 = time.perf_counter()
            found = vault.search(question, limit=max(KS), refresh=False)
            latencies.append((time.perf_counter() - t0) * 1000)
            hits = [
                {
                    (session_of.get(r.session or "", -1), t)
                    for t in range(r.source_turns[0], r.source_turns[1] + 1)
                }
                if r.source_turns
                else set()
                for r in found.results
            ]
            results.append(_recall(hits, wanted))
            tokens.append(vault.retrieve(question, refresh=False).tokens)
    return {
        "results": results,
        "tokens": tokens,
        "search_ms": latencies,
        "logs": report.logs_read,
        "episodes": len(report.episodes),
        "consolidate_s": consolidate_s,
    }


def run_baseline(sample: dict[str, Any]) -> list[dict[str, bool]]:
    """Plain BM25 over non-overlapping 8-turn windows of the raw sessions."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE windows USING fts5("
        "text, session UNINDEXED, first UNINDEXED, tokenize='porter unicode61')"
    )
    for number, _date, turns in sessions(sample["conversation"]):
        for start in range(0, len(turns), WINDOW):
            chunk = turns[start : start + WINDOW]
            text = "\n".join(f"{t['speaker']}: {turn_text(t)}" for t in chunk)
            db.execute("INSERT INTO windows VALUES (?, ?, ?)", (text, number, start + 1))
    results = []
    for question, wanted in questions(sample):
        words = [w for w in extract_keywords(question) if re.fullmatch(r"[\w']+", w)]
        expression = " OR ".join(f'"{w}"' for w in words)
        rows = (
            db.execute(
                "SELECT session, first FROM windows WHERE windows MATCH ? "
                "ORDER BY bm25(windows), rowid LIMIT ?",
                (expression, max(KS)),
            ).fetchall()
            if expression
            else []
        )
        hits = [{(s, t) for t in range(f, f + WINDOW)} for s, f in rows]
        results.append(_recall(hits, wanted))
    db.close()
    return results


def _rates(results: list[dict[str, bool]]) -> dict[str, float]:
    return {key: sum(r[key] for r in results) / len(results) for key in results[0]}


def main() -> None:
    """Run the evaluation and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text())[: args.limit_conversations]
    ours: list[dict[str, bool]] = []
    base: list[dict[str, bool]] = []
    tokens: list[int] = []
    search_ms: list[float] = []
    logs = episodes = 0
    consolidate_s = 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        for sample in samples:
            run = run_memoryclaw(sample, Path(tmp))
            ours += run["results"]
            tokens += run["tokens"]
            search_ms += run["search_ms"]
            logs += run["logs"]
            episodes += run["episodes"]
            consolidate_s += run["consolidate_s"]
            base += run_baseline(sample)
    mine, theirs = _rates(ours), _rates(base)
    machine = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    print(f"LoCoMo dev: {len(samples)} conversations, {len(ours)} questions (category 5 skipped)")
    print(f"machine: {machine}\n")
    print("| metric | memoryclaw (extractive) | BM25 8-turn windows | difference |")
    print("|---|---|---|---|")
    for key in mine:
        gap = mine[key] - theirs[key]
        print(f"| recall_{key} | {mine[key]:.3f} | {theirs[key]:.3f} | {gap:+.3f} |")
    print(
        f"\nretrieve payload: mean {statistics.mean(tokens):.0f} tokens, max {max(tokens)} "
        f"(budget 800); search p50 {statistics.median(search_ms):.2f} ms"
    )
    print(
        f"consolidation: {logs} logs -> {episodes} episodes in {consolidate_s:.2f} s "
        f"({logs / consolidate_s:.1f} logs/s, extractive)"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "locomo.json").write_text(
        json.dumps(
            {
                "machine": machine,
                "questions": len(ours),
                "memoryclaw": mine,
                "baseline": theirs,
                "tokens_mean": statistics.mean(tokens),
                "tokens_max": max(tokens),
                "search_ms_p50": statistics.median(search_ms),
                "logs": logs,
                "episodes": episodes,
                "consolidate_s": consolidate_s,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
