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
    from ..consolidate.pipeline import ConsolidationReport
    from .vault import Vault


def consolidate(
    vault: Vault, *, all_logs: bool = False, now: datetime | None = None
) -> ConsolidationReport:
    """Turn closed raw logs (``all_logs``: every unprocessed one) into episodes and facts.

    With ``git.autoCommit`` in a git vault, what the run changed becomes one commit.
    """
    use_git = vault.settings.git.auto_commit and is_repository(vault.root)
    from ..consolidate.pipeline import consolidate

    forgetting.finish_interrupted_forget(vault)
    report = consolidate(
        vault.root, vault.settings, vault.index, all_logs=all_logs, now=now, auto_commit=use_git
    )
    indexing.update_episode_vectors(vault, None)
    return report


def archive(vault: Vault, *, dry_run: bool = False, now: datetime | None = None) -> ArchiveReport:
    """Move episodes unused for ``consolidation.archiveAfterDays`` days (not recalled, not
    edited, not dated within them; 0, the default, moves none) to ``episodes/archive/YYYY/``,
    out of automatic recall but searchable with ``include_archived``; ``dry_run`` only
    reports.  With ``git.autoCommit`` in a git vault the run is one commit."""
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
    """Move the archived episode ``ident`` back into recall (counted as recalled now, so
    it stays for another ``archiveAfterDays``); nothing to do when it is not archived."""
    refuse(vault.teams, "archive --restore", ident)
    use_git = vault.settings.git.auto_commit and is_repository(vault.root)
    from ..consolidate.archive import run_restore

    report = run_restore(
        vault.root, vault.settings, vault.index, ident, now=now or now_utc(), auto_commit=use_git
    )
    vault._noted.pop(ident, None)
    indexing.update_episode_vectors(vault, None)
    return report
