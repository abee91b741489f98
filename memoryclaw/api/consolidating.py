"""Consolidation through the facade: raw logs turned into memories, and episodes archived and
restored, with the index and vectors following."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ..recall import metrics as recall_metrics
from ..share.history import is_repository
from ..share.teams import refuse
from ..vault.timestamps import now_utc
from . import forgetting, indexing

if TYPE_CHECKING:
    from ..consolidate.archive import ArchiveReport
    from ..consolidate.report import ConsolidationReport
    from .vault import Vault


def consolidate(
    vault: Vault, *, all_logs: bool = False, now: datetime | None = None
) -> ConsolidationReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.consolidate`."""
    use_git = vault.settings.git.auto_commit and is_repository(vault.root)
    from ..consolidate.pipeline import consolidate

    forgetting.finish_interrupted_forget(vault)
    report = consolidate(
        vault.root, vault.settings, vault.index, all_logs=all_logs, now=now, auto_commit=use_git
    )
    indexing.update_episode_vectors(vault, None)
    return report


def archive(vault: Vault, *, dry_run: bool = False, now: datetime | None = None) -> ArchiveReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.archive`."""
    use_git = not dry_run and vault.settings.git.auto_commit and is_repository(vault.root)
    from ..consolidate.archive import run_archive

    report = run_archive(
        vault.root,
        vault.settings,
        vault.index,
        now=now or now_utc(),
        dry_run=dry_run,
        auto_commit=use_git,
    )
    if report.moved and not dry_run:
        moved = recall_metrics.DayCounts(archived=len(report.moved))
        recall_metrics.record(vault.root, now or now_utc(), vault.settings.metrics.keep_days, moved)
    indexing.update_episode_vectors(vault, None)
    return report


def restore(vault: Vault, ident: str, *, now: datetime | None = None) -> ArchiveReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.restore`."""
    refuse(vault.teams, "archive --restore", ident)
    use_git = vault.settings.git.auto_commit and is_repository(vault.root)
    from ..consolidate.archive import run_restore

    report = run_restore(
        vault.root, vault.settings, vault.index, ident, now=now or now_utc(), auto_commit=use_git
    )
    vault._noted.pop(ident, None)
    indexing.update_episode_vectors(vault, None)
    return report
