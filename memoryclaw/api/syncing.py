"""Sharing through the facade: a sync with the git remote and the team vaults, and an exported
archive merged in, with the index following."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ExternalToolError
from ..share.history import is_repository
from . import forgetting

if TYPE_CHECKING:
    from ..share.sync import RemoteSyncReport
    from .vault import Vault


def sync_remote(vault: Vault, *, setup: bool = False) -> RemoteSyncReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.sync_remote`."""
    from ..share.sync import RemoteSyncReport, sync_remote
    from ..share.sync import setup as setup_remote

    seconds = vault.settings.sync.timeout_seconds
    shared = [team.pull(seconds).as_dict() for team in vault.teams]
    if not is_repository(vault.root):
        if shared:
            return RemoteSyncReport(remote="", shared=shared)
        raise ExternalToolError("git", f"{vault.root} is not a git repository (git init)")
    if setup:
        setup_remote(vault.root)
    forgetting.finish_interrupted_forget(vault)
    report = sync_remote(vault.root, vault.settings)
    report.shared = shared
    memory = [p for p in report.files_changed if p.endswith(".md")]
    if memory:
        vault.reindex_paths(memory)
    if any(p.startswith("semantic/_forgotten/") for p in report.files_changed):
        vault.refresh()  # a forget from elsewhere may have scrubbed raw logs too
        vault.index.forget_deleted()
    from ..share.purge import collect_owed

    collect_owed(vault.root)  # a purge that followed another device's drops old objects
    return report


def import_archive(vault: Vault, source: str | Path) -> RemoteSyncReport:
    """Merge an exported ``.tar.gz`` into this git vault by the rules of a sync."""
    if not is_repository(vault.root):
        raise ExternalToolError("git", f"{vault.root} is not a git repository (git init)")
    from ..share.transfer import import_archive

    report = import_archive(vault.root, Path(source))
    memory = [p for p in report.files_changed if p.endswith(".md")]
    if memory:
        vault.reindex_paths(memory)
    if any(p.startswith("semantic/_forgotten/") for p in report.files_changed):
        vault.refresh()  # a forget the archive brought may have scrubbed raw logs too
        vault.index.forget_deleted()
    return report
