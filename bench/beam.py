"""BEAM dev: does the evidence of a long user-assistant chat reach the model, per memory ability.

BEAM (Tavakoli et al., "Beyond a Million Tokens"): ``../shared/data/beam-dev/<size>/<n>/``
holds a chat (``chat.json``: batches of turns) and its probing questions
(``probing_questions.json``, by memory ability).  Each chat becomes a fresh vault exactly as
the reference scorer ``../shared/tools/beam_payload.py`` builds it: every batch one logged
session, each message timestamped from the last time anchor seen plus one minute per turn,
the turn markers (``->-> 1,2``) stripped; then ``consolidate --all``.  Every probing question
that cites ``source_chat_ids`` (all abilities but abstention) is asked through ``search``
(10 results) and ``retrieve``, and scored as the reference scores:

- recall_any@k / recall_all@k: a top-k episode's session and ``source_turns`` cover one
  (every) evidence message;
- evidence_in_payload: the ``retrieve`` context holds >= 60% of the content words of an
  evidence message's first 400 characters (``bench/locomo.py``'s ``content_words``);

and the same payload test for two packers that need no memory system: BM25 over single
messages and over 8-message windows, best first, greedily packed into the same budget.  The
printout is the reference's, line for line, so the two can be compared for one commit.

    .venv/bin/python bench/beam.py [--sizes 500K] [--chats 21-35] [--budget 800] [--data PATH]
        [--config YAML]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from locomo import BUDGET, bm25_packer, content_words  # noqa: E402

from memoryclaw import Vault  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "beam-dev"
KS = (1, 3, 5, 10)
PACKERS = {"bm25_msgs": 1, "bm25_win8": 8}  # name -> messages per chunk
SYSTEMS = ("memoryclaw", *PACKERS)
EVIDENCE_CHARS = 400  # an evidence message is judged by its opening
_MARK = re.compile(r"\s*->->\s*[\d,\s]+$")
_ANCHOR_FORMATS = ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y")
_FIRST_ANCHOR = datetime(2024, 1, 1)

Where = tuple[str, int]  # (session, turn) of a message


def load_chat(data: Path, size: str, number: int) -> tuple[list[Any], dict[str, list[Any]]]:
    """A chat's batches and its probing questions by ability."""
    folder = data / size / str(number)
    chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    probes = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
    return chat, probes


def flat_ids(value: Any) -> list[int]:
    """Every message id in a ``source_chat_ids`` value, however it nests them (ints, strings
    of numbers, lists, mappings by session)."""
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        return [int(v) for v in re.findall(r"\d+", value)]
    if isinstance(value, dict):
        return [i for v in value.values() for i in flat_ids(v)]
    if isinstance(value, list):
        return [i for v in value for i in flat_ids(v)]
    return []


def anchor(text: str, last: datetime) -> datetime:
    """A time anchor (``January-15-2024``, ``Jan-15-2024``, ``January 15, 2024``) as a date;
    ``last`` when it reads as none of them."""
    for form in _ANCHOR_FORMATS:
        try:
            return datetime.strptime(text.strip(), form)
        except ValueError:
            pass
    return last


def chat_range(text: str) -> range:
    """``21-35`` (or ``21``) as the chat numbers it names."""
    low, _, high = text.partition("-")
    return range(int(low), int(high or low) + 1)


@dataclass
class Chat:
    """One chat as the vault and the packers see it."""

    records: list[dict[str, str]] = field(default_factory=list)  # logged turns, to ingest
    messages: list[tuple[str, str]] = field(default_factory=list)  # (role, text), in order
    where: dict[int, Where] = field(default_factory=dict)  # message id -> (session, turn)
    text: dict[int, str] = field(default_factory=dict)  # message id -> text


def read_chat(batches: Sequence[dict[str, Any]], label: str) -> Chat:
    """The reference's logged sessions for a chat: one per batch, ``<label>:b<batch>``."""
    chat = Chat()
    last = _FIRST_ANCHOR
    for batch in batches:
        session = f"{label}:b{batch['batch_number']}"
        turn = 0
        for group in batch["turns"]:
            for message in group:
                if message.get("time_anchor"):
                    last = anchor(str(message["time_anchor"]), last)
                turn += 1
                text = _MARK.sub("", message["content"]).strip() or "(empty)"
                chat.where[message["id"]] = (session, turn)
                chat.text[message["id"]] = text
                chat.messages.append((message["role"], text))
                chat.records.append(
                    {
                        "session": session,
                        "role": message["role"],
                        "content": text,
                        "timestamp": (last + timedelta(minutes=turn)).strftime(
                            "%Y-%m-%dT%H:%M:00Z"
                        ),
                        "channel": "beam",
                    }
                )
    return chat


def probing_questions(probes: dict[str, list[Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(ability, question) of every probing question that cites evidence messages."""
    return [
        (ability, item)
        for ability, items in probes.items()
        for item in items
        if flat_ids(item.get("source_chat_ids"))
    ]


def message_packer(
    messages: Sequence[tuple[str, str]], window: int, budget: int
) -> Callable[[str], str]:
    """The reference's BM25 packer over ``window``-message chunks (``role: text`` lines)."""
    chunks = [
        "\n".join(f"{role}: {text}" for role, text in messages[start : start + window])
        for start in range(0, len(messages), window)
    ]
    return bm25_packer(chunks, budget * 4 - 20, depth=80)


def covers(found: Sequence[tuple[str | None, Any]], place: Where) -> bool:
    """Whether one of ``found``'s (session, source_turns) episodes holds the message at
    ``place``."""
    session, turn = place
    return any(s == session and t and t[0] <= turn <= t[1] for s, t in found)


def evidence_in(text: str, evidence: Sequence[set[str]]) -> bool:
    """Whether ``text`` holds >= 60% of the content words of one evidence message."""
    got = content_words(text)
    return any(e and len(e & got) / len(e) >= 0.6 for e in evidence)


@dataclass
class Tally:
    """The scores of one memory size, summed over its chats."""

    questions: int = 0
    episodes: int = 0
    ingest_s: float = 0.0
    consolidate_s: float = 0.0
    query_s: float = 0.0
    tokens: list[int] = field(default_factory=list)
    any_at: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    all_at: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    evidence: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SYSTEMS, 0))
    # ability -> [questions, memoryclaw evidence_in_payload, recall_any@5]
    abilities: dict[str, list[int]] = field(default_factory=dict)


def run_chat(
    data: Path, size: str, number: int, workdir: Path, budget: int, tally: Tally, config: str = ""
) -> None:
    """Build one chat's vault (``config``: its memoryclaw.yaml, as the reference scorer's
    ``--config``), ask its questions, and add their scores to ``tally``."""
    batches, probes = load_chat(data, size, number)
    chat = read_chat(batches, f"beam-{size}-{number}")
    root = workdir / f"{size}-{number}"
    Vault.init(root, env={}).close()
    if config:
        (root / "memoryclaw.yaml").write_text(config, encoding="utf-8")
    with Vault(root, env={}) as vault:
        started = time.perf_counter()
        vault.ingest(chat.records)
        tally.ingest_s += time.perf_counter() - started
        started = time.perf_counter()
        vault.consolidate(all_logs=True)
        tally.consolidate_s += time.perf_counter() - started
    tally.episodes += sum(1 for p in (root / "episodes").iterdir() if p.suffix == ".md")
    asked = probing_questions(probes)
    started = time.perf_counter()
    answers = list(_ask(root, [str(item["question"]) for _, item in asked]))
    tally.query_s += time.perf_counter() - started
    packers = {name: message_packer(chat.messages, w, budget) for name, w in PACKERS.items()}
    for (ability, item), (episodes, context, tokens) in zip(asked, answers, strict=True):
        ids = [i for i in flat_ids(item["source_chat_ids"]) if i in chat.where]
        if not ids:
            continue
        tally.questions += 1
        tally.tokens.append(tokens)
        for k in KS:
            covered = [covers(episodes[:k], chat.where[i]) for i in ids]
            tally.any_at[k] += any(covered)
            tally.all_at[k] += all(covered)
        evidence = [content_words(chat.text[i][:EVIDENCE_CHARS]) for i in ids]
        found = evidence_in(context, evidence)
        tally.evidence["memoryclaw"] += found
        for name, pack in packers.items():
            tally.evidence[name] += evidence_in(pack(str(item["question"])), evidence)
        row = tally.abilities.setdefault(ability, [0, 0, 0])
        row[0] += 1
        row[1] += found
        row[2] += any(covers(episodes[:5], chat.where[i]) for i in ids)


def _ask(root: Path, questions: Sequence[str]) -> Iterator[tuple[list[Any], str, int]]:
    """Each question's episodes (session, source_turns) from ``search`` (10 results) and its
    ``retrieve`` context and tokens, as a fresh process opening the vault would get them."""
    with Vault(root, env={}) as vault:
        for question in questions:
            results = vault.search(question, limit=10).as_dict()["results"]
            payload = vault.retrieve(question).as_dict()
            episodes = [
                (r.get("session"), r.get("source_turns"))
                for r in results
                if r.get("kind", "episode") == "episode"
            ]
            yield episodes, payload["context"], payload["tokens"]


def summary(size: str, chats: str, tally: Tally) -> dict[str, Any]:
    """One size's figures, as printed and as saved."""
    n = max(tally.questions, 1)
    return {
        "size": size,
        "chats": chats,
        "questions": tally.questions,
        "episodes": tally.episodes,
        "ingest_s": tally.ingest_s,
        "consolidate_s": tally.consolidate_s,
        "query_ms": 1000 * tally.query_s / n,
        "tokens_mean": statistics.mean(tally.tokens) if tally.tokens else 0.0,
        "tokens_max": max(tally.tokens, default=0),
        "recall_any": {k: tally.any_at[k] / n for k in KS},
        "recall_all": {k: tally.all_at[k] / n for k in KS},
        "evidence_in_payload": {s: tally.evidence[s] / n for s in SYSTEMS},
        "by_ability": {
            ability: {
                "n": row[0],
                "evidence_in_payload": row[1] / row[0],
                "recall_any@5": row[2] / row[0],
            }
            for ability, row in sorted(tally.abilities.items())
        },
    }


def printout(found: dict[str, Any]) -> list[str]:
    """The reference scorer's lines for one size."""
    return [
        f"BEAM {found['size']} chats={found['chats']} questions={found['questions']} "
        f"episodes={found['episodes']} ingest_s={found['ingest_s']:.1f} "
        f"consolidate_s={found['consolidate_s']:.1f} query_ms={found['query_ms']:.1f} "
        f"tokens_mean={found['tokens_mean']:.0f} max={found['tokens_max']}",
        "  "
        + " ".join(f"recall_any@{k}={v:.3f}" for k, v in found["recall_any"].items())
        + " "
        + " ".join(f"recall_all@{k}={v:.3f}" for k, v in found["recall_all"].items()),
        "  evidence_in_payload "
        + " ".join(f"{s}={v:.3f}" for s, v in found["evidence_in_payload"].items()),
        "  by ability (n, memoryclaw evidence_in_payload, recall_any@5): "
        + "; ".join(
            f"{ability} {v['n']} {v['evidence_in_payload']:.2f} {v['recall_any@5']:.2f}"
            for ability, v in found["by_ability"].items()
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Score every size's chats, print the reference's lines and save ``beam.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500K", help="comma-separated (default: %(default)s)")
    parser.add_argument("--chats", default="21-35", help="a number or a range (%(default)s)")
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a memoryclaw.yaml every chat's vault gets (e.g. bench/hybrid.yaml: the vector "
        "fallback)",
    )
    args = parser.parse_args(argv)
    config = args.config.read_text(encoding="utf-8") if args.config else ""
    results = []
    with tempfile.TemporaryDirectory(prefix="beam-") as tmp:
        for size in args.sizes.split(","):
            tally = Tally()
            for number in chat_range(args.chats):
                run_chat(args.data, size, number, Path(tmp), args.budget, tally, config)
            results.append(summary(size, args.chats, tally))
            print("\n".join(printout(results[-1])), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    saved = {"data": str(args.data), "budget": args.budget, "sizes": results}
    (args.out / "beam.json").write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
