"""The vector fallback end to end: vectors cached in the index, nearest search and blending.

Most tests run the real all-MiniLM-L6-v2 on the CPU (the ``minilm`` session fixture) behind
a wrapper that records every text it embeds; exact-order tests use fixed vectors instead.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import EmbeddingError, Vault
from memoryclaw.index.embeddings import Embedder
from memoryclaw.index.store import Index
from memoryclaw.index.vectors import nearest, update_vectors
from memoryclaw.recall.retrieval import VectorFallback, search
from memoryclaw.vault.config import Settings
from memoryclaw.vault.configcheck import settings_from_mapping

from ..conftest import NOW

np = pytest.importorskip("numpy")

EPISODES = 36  # in sample_vault/episodes
TEXTS = EPISODES + 167  # and the distinct lines they quote: every text that gets a vector
PIANO = "episodes/2025-02-19_16-45-10_piano-lessons.md"
HACKNEY = "episodes/2025-04-15_20-18-29_hackney-10k.md"
DENTIST = "episodes/2025-01-15_19-40-02_dentist-appointment.md"
FOLLOWUP = "episodes/2025-02-03_11-20-00_dentist-followup.md"
BUDGET = "episodes/2025-07-08_16-05-52_q3-budget-review.md"
# Vague or paraphrased questions whose words the episode that answers them does not use,
# so keyword retrieval misses it.
PARAPHRASES = {
    "when am I seeing the tooth doctor": DENTIST,
    "the vacation in Portugal for my cousin's marriage": (
        "episodes/2025-05-14_08-30-00_emma-wedding-plans.md"
    ),
    "who is doing our drawings": "episodes/2025-04-02_12-40-18_freelance-invoice.md",
    "music classes": PIANO,
    "keyboard instrument tutor": PIANO,
    "crockery present": "episodes/2025-03-11_18-22-40_mom-birthday-gift.md",
    "jogging competition": HACKNEY,
    "pension contributions": "episodes/2025-09-10_20-05-39_isa-savings.md",
    "physiotherapy for my parent's leg": "episodes/2025-08-05_18-48-15_dad-knee-appointment.md",
    "accommodation in Portugal": "episodes/2025-06-10_06-52-37_lisbon-hotel.md",
}


class Counting:
    """Wraps an embedder and records every batch of texts it is asked to embed."""

    def __init__(self, inner: Embedder, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        """Record, then delegate."""
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts(self) -> int:
        """How many texts were embedded so far."""
        return sum(len(call) for call in self.calls)


class Fixed:
    """The same unit vector for every text (so every similarity ties), of ``dims`` dimensions."""

    def __init__(self, dims: int = 4, name: str = "test:fixed") -> None:
        self.dims = dims
        self.name = name

    def embed(self, texts: Sequence[str]) -> Any:
        """One copy of the first unit vector per text."""
        rows = np.zeros((len(texts), self.dims), dtype=np.float32)
        rows[:, 0] = 1.0
        return rows


class Failing:
    """An embedder whose server is down."""

    name = "ollama:nomic-embed-text"

    def embed(self, texts: Sequence[str]) -> Any:
        """Always fails, as an unreachable Ollama does."""
        raise EmbeddingError("ollama", "cannot reach Ollama at http://127.0.0.1:9", "start it")


def _settings(**retrieval: Any) -> Settings:
    return settings_from_mapping(
        {
            "retrieval": {"fallback": "vector", **retrieval},
            "embeddings": {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v2"},
            "git": {"autoCommit": False},
        }
    )


def _open(vault_dir: Path, embedder: Embedder | None, **retrieval: Any) -> Vault:
    return Vault(vault_dir, _settings(**retrieval), embedder=embedder)


def _paths(vault: Vault, query: str) -> list[str]:
    return [r.path for r in vault.search(query, now=NOW, refresh=False).results]


# ------------------------------------------------------------------ cached in the index


def test_episodes_are_embedded_once_and_cached(vault_dir: Path, minilm: Embedder) -> None:
    counting = Counting(minilm)
    with _open(vault_dir, counting) as vault:
        report = vault.reindex()
        assert (report.embedded, report.vector_error) == (TEXTS, None)
        assert counting.texts == TEXTS
        assert vault.reindex().embedded == 0 and vault.refresh() is None
        assert counting.texts == TEXTS
        assert vault.index.vector_coverage(counting.name) == (EPISODES, EPISODES)
        assert report.as_dict()["embedded"] == TEXTS
    with _open(vault_dir, counting) as again:  # another process: the vectors are in the index
        assert again.reindex().embedded == 0
        found = again.search("music classes", now=NOW)
        assert found.fallback_used and found.results[0].path == PIANO
    # a query embeds itself once (for episodes and lines), nothing else
    assert counting.calls[-1] == ["music classes"]
    assert counting.texts == TEXTS + 1


def test_hand_edit_reembeds_just_that_episode(vault_dir: Path, minilm: Embedder) -> None:
    counting = Counting(minilm)
    with _open(vault_dir, counting) as vault:
        vault.reindex()
        piano = vault_dir / PIANO
        piano.write_text(piano.read_text().replace("piano lessons", "cello lessons"))
        budget = vault_dir / BUDGET  # a field that is not embedded: no new vector
        budget.write_text(budget.read_text().replace("confidence: high", "confidence: medium"))
        os.utime(vault_dir / HACKNEY, ns=(1, 1))  # a new mtime, the same content
        report = vault.reindex()
        assert sorted(report.changed) == [PIANO, BUDGET]
        assert report.embedded == 1
        assert len(counting.calls[-1]) == 1 and "cello lessons" in counting.calls[-1][0]
        assert vault.index.vector_coverage(counting.name) == (EPISODES, EPISODES)
        assert _paths(vault, "string instrument practice")[0] == PIANO


def test_new_episode_is_embedded_when_search_refreshes(vault_dir: Path, minilm: Embedder) -> None:
    counting = Counting(minilm)
    with _open(vault_dir, counting) as vault:
        vault.reindex()
        (vault_dir / "episodes" / "2025-10-30_10-00-00_pottery.md").write_text(
            '---\nsummary: "Signed up for a wheel-throwing ceramics course on Thursdays."\n---\n'
        )
        found = vault.search("sculpting clay", now=NOW)  # refreshes first
        assert found.fallback_used
        assert found.results[0].path == "episodes/2025-10-30_10-00-00_pottery.md"
        assert counting.calls[-1] == ["sculpting clay"]
        assert len(counting.calls[-2]) == 1 and "ceramics" in counting.calls[-2][0]


def test_consolidated_episodes_get_vectors(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, Counting(minilm)) as vault:
        vault.reindex()
        report = vault.consolidate(all_logs=True, now=NOW)
        assert report.episodes
        have, total = vault.index.vector_coverage(minilm.name)
        assert have == total == EPISODES + len(report.episodes)


def test_another_model_reembeds_everything_and_drops_the_old(
    vault_dir: Path, minilm: Embedder
) -> None:
    with _open(vault_dir, Counting(minilm)) as vault:
        vault.reindex()
    renamed = Counting(minilm, name="sentence-transformers:another-model")
    with _open(vault_dir, renamed) as vault:
        assert vault.reindex().embedded == TEXTS and renamed.texts == TEXTS
        assert vault.index.vector_coverage(minilm.name) == (0, EPISODES)
        assert vault.index.vector_coverage(renamed.name) == (EPISODES, EPISODES)
        assert vault.index.counts()["episode_vectors"] == TEXTS


def test_other_dimensions_under_the_same_name_are_stale(vault: Vault) -> None:
    vault.reindex()
    index = vault.index
    assert update_vectors(index, "test:fixed", lambda: Fixed(4)) == TEXTS
    assert update_vectors(index, "test:fixed", lambda: Fixed(4)) == 0
    seen: list[tuple[int, int]] = []
    done = update_vectors(index, "test:fixed", lambda: Fixed(8), lambda d, t: seen.append((d, t)))
    assert done == 0 and seen == []  # nothing is missing: the model is not even loaded ...
    index.execute("DELETE FROM episode_vectors WHERE rowid = 2")
    # ... until one episode needs a vector: then every 4-dimensional one is redone too
    done = update_vectors(index, "test:fixed", lambda: Fixed(8), lambda d, t: seen.append((d, t)))
    assert done == TEXTS and seen[-1] == (TEXTS, TEXTS)
    assert index.vector_matrix("test:fixed", 8)[1].shape == (EPISODES, 8)
    assert index.vector_matrix("test:fixed", 4)[1].shape == (0, 4)


def test_loaded_matrix_is_reused_until_the_index_changes(vault: Vault) -> None:
    vault.reindex()
    index = vault.index
    update_vectors(index, "test:fixed", lambda: Fixed())
    first = index.vector_matrix("test:fixed", 4)[1]
    assert index.vector_matrix("test:fixed", 4)[1] is first
    other = Index(index.path)  # another connection (another process) changes it
    try:
        other.execute("DELETE FROM episode_vectors WHERE rowid = 1")
    finally:
        other.close()
    second = index.vector_matrix("test:fixed", 4)[1]
    assert second is not first and second.shape == (EPISODES - 1, 4)
    update_vectors(index, "test:fixed", lambda: Fixed())  # a write through this connection
    assert index.vector_matrix("test:fixed", 4)[1].shape == (EPISODES, 4)


def test_embedder_down_keeps_the_keyword_index(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, Failing()) as vault:
        report = vault.reindex()
        assert report.embedded == 0
        assert report.vector_error and "cannot reach Ollama" in report.vector_error
        assert vault.index.episode_count() == EPISODES
        found = vault.search("dentist appointment", now=NOW)
        assert found.results and {r.via for r in found.results} == {"keyword"}
        vague = vault.search("music classes", now=NOW)
        assert vague.results == () and not vague.fallback_used
        assert vague.fallback_error and "cannot reach Ollama" in vague.fallback_error
        assert "fallback_error" in vague.as_dict()
    with _open(vault_dir, Counting(minilm, name=Failing.name)) as fixed:  # the server is back
        assert fixed.reindex().embedded == TEXTS


# ---------------------------------------------------------------------- when vectors run


def test_vectors_run_only_below_min_primary_results(vault_dir: Path, minilm: Embedder) -> None:
    counting = Counting(minilm)
    with _open(vault_dir, counting) as vault:
        vault.reindex()
        before = len(counting.calls)
        enough = vault.search("dentist appointment", now=NOW)
        assert len(enough.results) >= 2 and not enough.fallback_used
        assert {r.via for r in enough.results} == {"keyword"}
        assert "fallback_error" not in enough.as_dict()
        assert vault.search("ok thanks", now=NOW).fallback_used is False  # no keywords
        assert len(counting.calls) == before  # no query was embedded
        vague = vault.search("music classes", now=NOW)
        assert vague.fallback_used and vague.results[0].path == PIANO
        assert len(vague.results) == 5 and {r.via for r in vague.results} == {"vector"}
        assert vague.as_dict()["results"][0]["via"] == "vector"
    with _open(vault_dir, counting, minPrimaryResults=0) as never:
        found = never.search("music classes", now=NOW)
        assert found.results == () and not found.fallback_used


def test_primary_first_keeps_keyword_hits_first(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, minilm) as vault:
        vault.reindex()
        keyword = vault._search("cavity treatment", limit=None, now=NOW, vectors=False)
        found = vault.search("cavity treatment", now=NOW, refresh=False)
    assert [r.path for r in keyword.results] == [FOLLOWUP]
    assert found.fallback_used and len(found.results) == 5
    assert found.results[0] == keyword.results[0]
    rest = found.results[1:]
    assert {r.via for r in rest} == {"vector"} and rest[0].path == DENTIST
    assert [r.score for r in rest] == sorted((r.score for r in rest), reverse=True)
    assert len({r.id for r in found.results}) == 5  # the keyword hit is not repeated


def test_rrf_fuses_both_lists(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, minilm, blendStrategy="rrf") as vault:
        vault.reindex()
        found = vault.search("cavity treatment", now=NOW, refresh=False)
    assert found.fallback_used
    first = found.results[0]
    assert (first.path, first.via) == (FOLLOWUP, "keyword+vector")
    assert "cavity" in first.matched  # the keyword hit's explanation is kept
    assert {r.via for r in found.results[1:]} == {"vector"}
    assert [r.score for r in found.results] == sorted(
        (r.score for r in found.results), reverse=True
    )
    assert len({r.id for r in found.results}) == len(found.results)


def _fixed_fallback(vault: Vault, paths: Sequence[str], strategy: str) -> VectorFallback:
    """A fallback whose nearest episodes are ``paths``, in that order."""

    def near(query: str, limit: int, also: Sequence[str]) -> list[tuple[dict[str, Any], float]]:
        rows = [vault.index.episode_rows("path = ?", [p])[0] for p in paths]
        return [(row, 0.9 - 0.1 * rank) for rank, row in enumerate(rows)][:limit]

    return VectorFallback(near, min_primary_results=2, blend_strategy=strategy)


@pytest.mark.parametrize(
    ("strategy", "nearest_paths", "expected"),
    [
        # primary_first: the keyword hit, then the new vector hits in their order
        (
            "primary_first",
            [HACKNEY, PIANO, DENTIST],
            [(PIANO, "keyword"), (HACKNEY, "vector"), (DENTIST, "vector")],
        ),
        # rrf: found by both beats found by one; a tie goes to the keyword rank
        (
            "rrf",
            [HACKNEY, PIANO, DENTIST],
            [(PIANO, "keyword+vector"), (HACKNEY, "vector"), (DENTIST, "vector")],
        ),
        ("rrf", [HACKNEY, DENTIST], [(PIANO, "keyword"), (HACKNEY, "vector"), (DENTIST, "vector")]),
    ],
)
def test_blend_order(
    vault: Vault, strategy: str, nearest_paths: list[str], expected: list[tuple[str, str]]
) -> None:
    vault.reindex()
    fallback = _fixed_fallback(vault, nearest_paths, strategy)
    found = search(vault.index, "piano", limit=5, now=NOW, fallback=fallback)
    assert [(r.path, r.via) for r in found.results] == expected
    if strategy == "rrf":
        fused = {PIANO: 1 / 61 + 1 / 62, HACKNEY: 1 / 61, DENTIST: 1 / 63}
        if PIANO not in nearest_paths:
            fused = {PIANO: 1 / 61, HACKNEY: 1 / 61, DENTIST: 1 / 62}
        assert [r.score for r in found.results] == [pytest.approx(fused[p]) for p, _ in expected]


WEDDING = "episodes/2025-05-14_08-30-00_emma-wedding-plans.md"
LISBON = "episodes/2025-05-06_11-11-11_lisbon-conference-registration.md"
RETRO = "episodes/2025-10-21_17-02-44_projectx-retro.md"


def test_weighted_blend_rescores_keyword_hits_by_their_cosine(vault: Vault) -> None:
    """``weighted``: 0.8 x keyword score scaled over the candidates + 0.2 x cosine, always."""
    vault.reindex()
    keyword = search(vault.index, "budget", limit=20, now=NOW)
    assert [r.path for r in keyword.results] == [WEDDING, LISBON, RETRO, BUDGET]
    # BUDGET and HACKNEY lead the vector top, the other keyword hits are far from the query
    # (below the top 20), and every other episode is in between.
    cosine = {row["path"]: 0.1 for row in vault.index.episode_rows("1", [])}
    cosine.update({WEDDING: 0.05, LISBON: 0.05, RETRO: 0.05, BUDGET: 0.9, HACKNEY: 0.5})
    asked_also: list[list[str]] = []

    def near(query: str, limit: int, also: Sequence[str]) -> list[tuple[dict[str, Any], float]]:
        """As vectors.nearest: the top ``limit`` by cosine, then the ``also`` ids left."""
        asked_also.append(list(also))
        rows = sorted(
            vault.index.episode_rows("1", []), key=lambda r: (-cosine[r["path"]], r["id"])
        )
        top = rows[:limit]
        rest = [r for r in rows[limit:] if r["id"] in also]
        return [(row, cosine[row["path"]]) for row in top + rest]

    fallback = VectorFallback(near, min_primary_results=0, blend_strategy="weighted")
    found = search(vault.index, "budget", limit=4, now=NOW, fallback=fallback)
    # Every keyword candidate was sent for its cosine, even though the fallback's usual
    # trigger (fewer than minPrimaryResults keyword hits) does not hold.
    assert found.fallback_used
    assert sorted(asked_also[0]) == sorted(r.id for r in keyword.results)
    scores = {r.path: r.score for r in keyword.results}
    low, high = min(scores.values()), max(scores.values())
    expected = {p: 0.8 * (s - low) / (high - low) + 0.2 * cosine[p] for p, s in scores.items()}
    expected[HACKNEY] = 0.2 * 0.5
    best = sorted(expected, key=lambda p: -expected[p])[:4]
    assert [r.path for r in found.results] == best
    assert best.index(BUDGET) < 3  # the last keyword hit moved up on its cosine
    assert [r.score for r in found.results] == [pytest.approx(expected[p]) for p in best]
    via = {r.path: r.via for r in found.results}
    assert via[BUDGET] == "keyword+vector" and via[WEDDING] == "keyword"
    # A query of stopwords only still gets no vectors, and limit 0 nothing at all.
    assert not search(vault.index, "ok thanks", limit=4, now=NOW, fallback=fallback).results
    assert search(vault.index, "budget", limit=0, now=NOW, fallback=fallback).results == ()


def test_weighted_blend_with_the_embedder_down_is_the_keyword_result(vault: Vault) -> None:
    vault.reindex()
    keyword = search(vault.index, "budget", limit=2, now=NOW)

    def down(query: str, limit: int, also: Sequence[str]) -> list[tuple[dict[str, Any], float]]:
        raise EmbeddingError("ollama", "cannot reach Ollama at http://127.0.0.1:9", "start it")

    fallback = VectorFallback(down, min_primary_results=2, blend_strategy="weighted")
    found = search(vault.index, "budget", limit=2, now=NOW, fallback=fallback)
    assert found.results == keyword.results  # cut to the limit, though 20 were ranked
    assert not found.fallback_used and "cannot reach Ollama" in (found.fallback_error or "")


def test_weighted_blend_with_real_vectors(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, minilm, blendStrategy="weighted") as vault:
        vault.reindex()
        found = vault.search("cavity treatment", now=NOW, refresh=False)
        vague = vault.search("keyboard instrument tutor", now=NOW, refresh=False)
    assert found.fallback_used and len(found.results) == 5
    assert (found.results[0].path, found.results[0].via) == (FOLLOWUP, "keyword+vector")
    assert DENTIST in [r.path for r in found.results]
    assert [r.score for r in found.results] == sorted(
        (r.score for r in found.results), reverse=True
    )
    assert vague.results[0].path == PIANO and vague.results[0].via == "vector"


def test_nearest_also_returns_the_cosines_of_named_episodes(vault: Vault, minilm: Embedder) -> None:
    vault.reindex()
    update_vectors(vault.index, minilm.name, lambda: minilm)
    everything = nearest(vault.index, minilm, "music classes", EPISODES)
    cosine = {row["id"]: score for row, score in everything}
    last_two = [row["id"] for row, _ in everything[-2:]]
    hits = nearest(
        vault.index, minilm, "music classes", 3, also=[*last_two, everything[0][0]["id"]]
    )
    assert [row["id"] for row, _ in hits[:3]] == [row["id"] for row, _ in everything[:3]]
    assert [row["id"] for row, _ in hits[3:]] == last_two  # not repeated, best first
    for row, score in hits:
        assert score == pytest.approx(cosine[row["id"]], abs=1e-6)
    assert [row["id"] for row, _ in nearest(vault.index, minilm, "x", 0, also=last_two)] == (
        last_two
    )


def test_vector_ties_go_to_newer_then_id(vault: Vault) -> None:
    vault.reindex()
    update_vectors(vault.index, "test:fixed", lambda: Fixed())
    hits = nearest(vault.index, Fixed(), "anything", 3)
    rows = vault.index.episode_rows("1", [], order="ts_epoch DESC, id")[:3]
    assert [row["id"] for row, _ in hits] == [row["id"] for row in rows]
    assert {score for _, score in hits} == {1.0}
    assert nearest(vault.index, Fixed(), "anything", 0) == []


def test_forget_by_query_never_uses_vectors(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, minilm) as vault:
        vault.reindex()
        assert vault.search("music classes", now=NOW).results  # vectors would find it ...
        report = vault.forget("music classes", dry_run=True)
        assert report.episodes == ()  # ... but forgetting goes by keywords only


def test_a_forget_leaves_no_vector_of_what_it_removed_even_with_the_fallback_off(
    vault: Vault,
) -> None:
    """Vectors made while the fallback was on (another process's settings, or before it was
    turned off) are the forgotten texts' embeddings: a forget drops them all the same."""
    vault.reindex()
    update_vectors(vault.index, "test:fixed", lambda: Fixed())
    assert vault.settings.retrieval.fallback != "vector"
    piano = vault.index.episode_rows("path = ?", [PIANO])[0]
    assert vault.forget(episode_id=piano["id"]).removed
    assert vault.forget("Hackney").removed
    orphans = vault.index.execute(
        "SELECT count(*) FROM episode_vectors WHERE sha NOT IN (SELECT embed_sha FROM episodes"
        " WHERE embed_sha IS NOT NULL) AND sha NOT IN (SELECT embed_sha FROM passages"
        " WHERE embed_sha IS NOT NULL)"
    ).fetchone()[0]
    assert orphans == 0
    kept = vault.index.execute("SELECT count(*) FROM episode_vectors").fetchone()[0]
    assert 0 < kept < TEXTS


# ------------------------------------------------------------------------------ quality


@pytest.mark.parametrize("strategy", ["primary_first", "rrf", "weighted"])
def test_paraphrases_hybrid_finds_more_than_keywords(
    vault_dir: Path, minilm: Embedder, strategy: str
) -> None:
    with Vault(vault_dir, env={}) as plain:  # the sample vault's own settings: keywords only
        keyword = {q: _paths(plain, q) for q in PARAPHRASES}
    with _open(vault_dir, minilm, blendStrategy=strategy) as hybrid:
        hybrid.reindex()
        vector = {q: _paths(hybrid, q) for q in PARAPHRASES}
    keyword_found = [q for q, path in PARAPHRASES.items() if path in keyword[q]]
    hybrid_found = [q for q, path in PARAPHRASES.items() if path in vector[q]]
    assert keyword_found == []  # every one is a keyword miss ...
    assert len(hybrid_found) >= len(PARAPHRASES) - 1, vector  # ... that vectors recover
    assert len(hybrid_found) > len(keyword_found)


# ------------------------------------------------------------------- doctor and imports


def _vector_lines(vault: Vault) -> list[dict[str, str]]:
    return [c for c in vault.doctor() if c["check"] == "vector"]


def test_doctor_when_vectors_are_off(vault: Vault) -> None:
    (line,) = _vector_lines(vault)
    assert line["status"] == "info"
    assert "retrieval.fallback: vector" in line["detail"]
    assert "memoryclaw[local-embeddings]" in line["detail"]


def test_doctor_when_vectors_are_on(vault_dir: Path, minilm: Embedder) -> None:
    with _open(vault_dir, minilm) as vault:
        lines = _vector_lines(vault)
    assert [line["status"] for line in lines] == ["ok", "ok"]
    assert "answers (384 dimensions)" in lines[0]["detail"]
    assert f"{EPISODES} of {EPISODES} episodes have current vectors" in lines[1]["detail"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dead_ollama_doctor_says_what_to_fix(vault_dir: Path) -> None:
    pytest.importorskip("ollama")
    (vault_dir / "memoryclaw.yaml").write_text(
        "retrieval:\n  fallback: vector\n"
        f"embeddings:\n  provider: ollama\n  baseUrl: http://127.0.0.1:{_closed_port()}\n"
        "git:\n  autoCommit: false\n"
    )
    with Vault(vault_dir, env={}) as vault:
        found = vault.search("what did I email John about", now=NOW)
        assert found.results and not found.fallback_used
        checks = vault.doctor()
    lines = [c for c in checks if c["check"] == "vector"]
    assert [line["status"] for line in lines] == ["warn", "warn"]
    assert (
        "ollama serve" in lines[0]["detail"] and "keyword search still works" in lines[0]["detail"]
    )
    assert f"0 of {EPISODES} episodes" in lines[1]["detail"] and "reindex" in lines[1]["detail"]
    assert not [c for c in checks if c["status"] == "error"]


def test_missing_extra_is_explained_and_keywords_still_work(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with _open(vault_dir, None) as vault:
        report = vault.reindex()
        assert report.vector_error and "memoryclaw[local-embeddings]" in report.vector_error
        assert vault.search("dentist appointment", now=NOW).results
        vague = vault.search("music classes", now=NOW)
        assert vague.fallback_error and "memoryclaw[local-embeddings]" in vague.fallback_error
        (line,) = _vector_lines(vault)
    assert line["status"] == "warn" and "memoryclaw[local-embeddings]" in line["detail"]


_PROBE = """
import json, sys
import memoryclaw
vault = memoryclaw.Vault(sys.argv[1])
found = [vault.search(q) for q in ("music classes", "dentist appointment")]
print(json.dumps({
    "fallback_used": [f.fallback_used for f in found],
    "loaded": sorted(m for m in ("numpy", "torch", "sentence_transformers", "ollama")
                     if m in sys.modules),
}))
"""


def _probe(vault_dir: Path, **env: str) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORYCLAW_")}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(vault_dir)],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_keyword_only_never_imports_numpy(vault: Vault) -> None:
    vault.reindex()  # building an index imports sqlite-utils, which imports numpy: not here
    assert _probe(vault.root) == {"fallback_used": [False, False], "loaded": []}


def test_vector_mode_loads_no_model_while_keywords_suffice(
    vault_dir: Path, minilm: Embedder
) -> None:
    with _open(vault_dir, minilm) as vault:
        vault.reindex()
    overrides = {
        "MEMORYCLAW_RETRIEVAL_FALLBACK": "vector",
        "MEMORYCLAW_EMBEDDINGS_PROVIDER": "sentence-transformers",
        "MEMORYCLAW_EMBEDDINGS_MODEL": "all-MiniLM-L6-v2",
        "MEMORYCLAW_RETRIEVAL_MINPRIMARYRESULTS": "0",
    }
    assert _probe(vault_dir, **overrides) == {"fallback_used": [False, False], "loaded": []}


def test_reindex_command_reports_embedded(vault_dir: Path) -> None:
    pytest.importorskip("sentence_transformers")
    config = vault_dir / "memoryclaw.yaml"
    config.write_text(
        config.read_text()
        + "embeddings:\n  provider: sentence-transformers\n  model: all-MiniLM-L6-v2\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORYCLAW_")}
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "reindex", "--json"]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**clean, "MEMORYCLAW_RETRIEVAL_FALLBACK": "vector"},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["embedded"], doc["vector_error"]) == (TEXTS, None)
    assert proc.stderr == ""  # no progress bars or warnings off a terminal


def test_vector_neighbours_the_context_may_not_see_are_dropped(
    vault_dir: Path, minilm: Embedder
) -> None:
    """The sample vault's episodes are owner-level: a group sees none of them, not even as the
    nearest vectors; the owner's direct conversation still does."""
    from memoryclaw import RecallContext

    with _open(vault_dir, minilm) as vault:
        vault.reindex()
        group = RecallContext(session="agent:main:telegram:group:-1001")
        hidden = vault.search("music classes", now=NOW, context=group)
        assert hidden.fallback_used and hidden.results == ()
        direct = vault.search("music classes", now=NOW, context=RecallContext(agent="main"))
        assert direct.fallback_used and direct.results[0].path == PIANO
        assert direct.results[0].admitted_by.startswith("owner-level memory")


# ------------------------------------------------------------------------ episode lines

PIANO_LINE = 'Practice target: 20 minutes a day; first piece is "Ode to Joy"'


def test_lines_are_embedded_once_and_cached(vault_dir: Path, minilm: Embedder) -> None:
    counting = Counting(minilm)
    with _open(vault_dir, counting) as vault:
        vault.reindex()
        embedded = [text for call in counting.calls for text in call]
        assert PIANO_LINE in embedded  # a quoted line is embedded as it reads
        lines = vault.index.execute("SELECT count(DISTINCT embed_sha) FROM passages").fetchone()
        assert len(embedded) == EPISODES + lines[0] == TEXTS
        assert vault.reindex().embedded == 0
    with _open(vault_dir, counting) as again:  # another process: the index holds them
        assert again.reindex().embedded == 0
    assert counting.texts == TEXTS


def test_edited_line_is_embedded_again(vault_dir: Path, minilm: Embedder) -> None:
    counting = Counting(minilm)
    with _open(vault_dir, counting) as vault:
        vault.reindex()
        piano = vault_dir / PIANO
        piano.write_text(piano.read_text().replace('"Ode to Joy"', '"Für Elise"'))
        report = vault.reindex()
        assert report.changed == [PIANO]
        # the episode's text and the one line that changed; its other lines keep their vectors
        assert report.embedded == 2
        assert PIANO_LINE.replace('"Ode to Joy"', '"Für Elise"') in counting.calls[-1]
        assert vault.index.counts()["episode_vectors"] == TEXTS  # the old ones are dropped


def test_a_line_is_found_by_meaning(vault_dir: Path, minilm: Embedder) -> None:
    (vault_dir / "episodes" / "2025-10-04_10-00-00_errands.md").write_text(
        '---\nsummary: "Saturday errands."\n---\n**Details:**\n'
        "- #1 User: Picked up the dry cleaning on Main Street\n"
        "- #2 User: Prune the roses along the fence before the frost\n"
        "- #3 User: Renewed the car insurance online\n"
    )
    query = "trimming garden bushes for winter"  # not one word of the line it means
    with Vault(vault_dir, env={}) as plain:  # keyword only: no line has these words
        assert plain.search(query, now=NOW).passages == ()
    with _open(vault_dir, Counting(minilm)) as vault:
        vault.reindex()
        found = vault.search(query, now=NOW, refresh=False)
        assert found.fallback_used and found.fallback_error is None
        best = found.passages[0]
        assert best.text == "Prune the roses along the fence before the frost"
        assert (best.via, best.matched, best.speaker) == ("vector", (), "User")
        assert best.as_dict()["via"] == "vector"
        assert "Prune the roses" in vault.retrieve(query, now=NOW, refresh=False).context


@pytest.mark.parametrize("query", ["dentist appointment", "email John"], ids=str)
def test_keyword_only_and_enough_keyword_hits_are_unchanged(
    vault_dir: Path, minilm: Embedder, query: str
) -> None:
    counting = Counting(minilm)
    keyword = settings_from_mapping({"git": {"autoCommit": False}})
    with Vault(vault_dir, keyword, embedder=counting) as plain:
        plain.reindex()
        alone = dataclasses.replace(plain.search(query, now=NOW), took_ms=0.0)
        assert plain.index.counts()["episode_vectors"] == 0
    assert counting.calls == []  # keyword only: no model, no vector
    with _open(vault_dir, counting) as vault:  # primary_first: enough keyword hits
        vault.reindex()
        hybrid = vault.search(query, now=NOW, refresh=False)
        assert not hybrid.fallback_used
        assert alone.passages and {p.via for p in hybrid.passages} <= {"keyword", "log"}
        assert dataclasses.replace(hybrid, took_ms=0.0) == alone
