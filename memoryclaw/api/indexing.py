"""Keeping a vault's index current through the facade: syncs of the files, full or by path, and the
vector fallback's embeddings after them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import suppress
from typing import TYPE_CHECKING

from ..errors import EmbeddingError, warn
from ..index.embeddings import embedder_name
from ..index.update import Progress, SyncReport, is_stale, sync, sync_paths
from ..index.vectors import update_vectors
from ..recall.usage import keep_recalls
from ..vault.files import STATE_DIR
from .opening import INDEX_FILE

if TYPE_CHECKING:
    from .vault import Vault


def reindex(
    vault: Vault,
    *,
    full: bool = False,
    progress: Progress | None = None,
    embed_progress: Progress | None = None,
) -> SyncReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.reindex`."""
    if full:
        with suppress(sqlite3.Error):  # an index that cannot be opened keeps nothing
            keep_recalls(vault.root, vault.index)  # what no file holds outlives the index
        vault.close()
        state = vault.root / STATE_DIR
        for name in (INDEX_FILE, INDEX_FILE + "-wal", INDEX_FILE + "-shm"):
            (state / name).unlink(missing_ok=True)
    report = sync(vault.root, vault.index, full=full, progress=progress)
    update_episode_vectors(vault, report, embed_progress)
    for team in vault.teams:  # their indexes are derived too, and kept here
        if team.problem() is None:
            team.refresh(full=full)
    return report


def reindex_paths(vault: Vault, paths: Iterable[str]) -> SyncReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.reindex_paths`."""
    report = None if vault.index.rebuilt else sync_paths(vault.root, vault.index, paths)
    if report is None:
        vault.index.rebuilt = False
        report = sync(vault.root, vault.index)
    update_episode_vectors(vault, report)
    return report


def refresh(vault: Vault) -> SyncReport | None:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.refresh`."""
    report = None
    if vault.index.rebuilt or is_stale(vault.root, vault.index):
        vault.index.rebuilt = False
        report = sync(vault.root, vault.index)
    if report is not None or not vault._vectors_checked:
        update_episode_vectors(vault, report)
    for team in vault.teams:  # their indexes follow their files as this one's does
        if team.problem() is None:
            team.refresh()
    return report


def update_episode_vectors(
    vault: Vault, report: SyncReport | None, progress: Progress | None = None
) -> None:
    """Embed what the last sync left without a vector (vector fallback only)."""
    if vault.settings.retrieval.fallback != "vector":
        return
    vault._vectors_checked = True
    name = vault._embedder.name if vault._embedder is not None else embedder_name(vault.settings)
    try:
        embedded = update_vectors(vault.index, name, vault._get_embedder, progress)
    except EmbeddingError as exc:
        warn(
            "memoryclaw.vectors", "episode vectors not updated (keyword search unaffected): %s", exc
        )
        if report is not None:
            report.vector_error = str(exc)
        return
    if report is not None:
        report.embedded = embedded
