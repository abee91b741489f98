"""Archiving: episodes nobody has used for ``consolidation.archiveAfterDays`` days move to
``episodes/archive/YYYY/``, out of automatic recall, still searchable, and restorable.

*Used* means recalled (put into a ``retrieve`` payload), edited (the file's mtime), or dated
(its timestamp) within those days.  Recalls are noted per episode id in the index, with a
durable copy in ``.memoryclaw/recall.json`` that each run writes (:mod:`memoryclaw.recall.usage`).
They also say since when recalls are noted; every episode counts as used at that moment, so
lost recall times (a new vault, ``.memoryclaw/`` deleted) only delay archiving by
``archiveAfterDays``, and never archive something recalled meanwhile.

A move is a byte-for-byte copy (its mtime kept) written atomically and synced, then the
removal of the original; a restore is the same move back.  A process killed at any point
leaves the original, or both copies, or the new one: never none.  Both copies of one episode
(an *active* ``episodes/x.md`` and an archived ``episodes/archive/YYYY/x.md``) are settled by
the next archive or restore run: the active copy wins and the archived one is removed when
the two are identical (an interrupted archive run then archives the episode again, a restore
had already noted the recall that keeps it out); copies that differ are both kept and
reported.  Until then the index holds the active copy of identical twins only
(:mod:`memoryclaw.index.update`), so search never shows the episode twice.  Runs hold the
consolidation lock: one at a time, and never while consolidation writes episodes.
"""

from __future__ import annotations

import logging
import os
import stat as statmod
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..errors import ArchiveConflictError, NotFoundError
from ..index.store import Index
from ..index.update import sync
from ..recall.usage import RecallLog, keep_recalls, load_recalls, note_recalled, start_noting
from ..share.history import commit_journal, journal
from ..vault.config import Settings
from ..vault.files import (
    ARCHIVE_DIR,
    CONSOLIDATE_LOCK,
    EPISODES_DIR,
    MAX_FOLDER_DEPTH,
    SEMANTIC_LOCK,
    Skipped,
    active_path,
    archive_path,
    copy_exact,
    file_lock,
    is_archived,
    remove_durably,
    sweep_temp_files,
)
from ..vault.naming import plural
from ..vault.scanning import scan
from ..vault.timestamps import utc_iso

_log = logging.getLogger("memoryclaw.archive")


@dataclass(frozen=True)
class Move:
    """One episode file moved into the archive or back out of it."""

    id: str
    source: str
    target: str

    def as_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"id": self.id, "from": self.source, "to": self.target}


@dataclass
class ArchiveReport:
    """What an archive (or restore) run moved, or would move on a dry run."""

    action: str  # archive | restore
    after_days: int
    dry_run: bool = False
    moved: list[Move] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)  # archived twins removed (active kept)
    conflicts: list[Skipped] = field(default_factory=list)  # left where they are, and why
    commit: str | None = None
    took_ms: float = 0.0
    # Before this moment nothing counts as unused: recalls are noted since then, less
    # archiveAfterDays (None when archiving is off).
    unused_from: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``archive --json`` document."""
        return {
            "action": self.action,
            "after_days": self.after_days,
            "dry_run": self.dry_run,
            "unused_from": self.unused_from,
            "moved": [m.as_dict() for m in self.moved],
            "settled": list(self.settled),
            "conflicts": [{"path": c.path, "reason": c.reason} for c in self.conflicts],
            "commit": self.commit,
            "took_ms": round(self.took_ms, 1),
        }

    def commit_message(self) -> str:
        """A git commit message that says what moved."""
        verb = "archive" if self.action == "archive" else "restore"
        lines = [f"memoryclaw: {verb} {plural(len(self.moved), 'episode')}", ""]
        lines += [f"{m.source} -> {m.target}" for m in self.moved]
        lines += [f"removed {path} (a copy of its active episode)" for path in self.settled]
        return "\n".join(lines)


def run_archive(
    root: Path,
    settings: Settings,
    index: Index,
    *,
    now: datetime,
    dry_run: bool = False,
    auto_commit: bool = False,
) -> ArchiveReport:
    """Move every episode unused for ``archiveAfterDays`` days to the archive (none when 0)."""
    started = time.perf_counter()
    days = settings.consolidation.archive_after_days
    report = ArchiveReport("archive", days, dry_run)
    with file_lock(root, CONSOLIDATE_LOCK):
        _settle(root, report, dry_run)
        sync(root, index)
        if days > 0:
            noted = load_recalls(root, index) if dry_run else start_noting(root, index, now)
            recalls = noted or RecallLog(now)
            report.unused_from = utc_iso(recalls.since + timedelta(days=days))
            _plan(root, index, recalls, now - timedelta(days=days), report)
        # an archived twin that a move is about to make again is the move's, not the settling's
        targets = {m.target for m in report.moved}
        report.settled = [path for path in report.settled if path not in targets]
        if not dry_run:
            keep_recalls(root, index)
            _apply(root, report, auto_commit)
            sync(root, index)
            if auto_commit:  # also what a killed run moved and did not commit
                report.commit = commit_journal(root, report.commit_message())
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def run_restore(
    root: Path,
    settings: Settings,
    index: Index,
    ident: str,
    *,
    now: datetime,
    auto_commit: bool = False,
) -> ArchiveReport:
    """Move the archived episode ``ident`` back to ``episodes/``, counting it as recalled now
    so archiving leaves it alone for another ``archiveAfterDays``."""
    started = time.perf_counter()
    report = ArchiveReport("restore", settings.consolidation.archive_after_days)
    with file_lock(root, CONSOLIDATE_LOCK):
        _settle(root, report, dry_run=False)
        sync(root, index)  # the index holds the active twin only: it is not restored again
        rows = index.episode_rows("id = ?", [ident], order="path")
        if not rows:
            raise NotFoundError("episode", ident)
        # Noted first: a run killed mid-move is settled to the active copy, and must not
        # then be archived again as unused.
        note_recalled(root, index, [ident], now)
        keep_recalls(root, index)
        for row in rows:
            if not is_archived(row["path"]):
                continue
            move = Move(ident, row["path"], active_path(row["path"]))
            if os.path.lexists(root / move.target) and not _same(root, move):
                raise ArchiveConflictError(move.source, move.target)
            report.moved.append(move)
        _apply(root, report, auto_commit)
        sync(root, index)
        if auto_commit:
            report.commit = commit_journal(root, report.commit_message())
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _settle(root: Path, report: ArchiveReport, dry_run: bool) -> None:
    """Find episodes present both archived and active, to settle as the module docstring
    says (:func:`_apply` removes the archived copies), and sweep the temp files a killed copy
    left."""
    walked = scan(root)
    if not dry_run:
        # archive and restore run alone with consolidation; the importers, the other writers
        # of episodes/, hold the semantic lock: with it no write is in flight
        with file_lock(root, SEMANTIC_LOCK):
            for folder in walked.folders:
                if folder == EPISODES_DIR or folder.startswith(EPISODES_DIR + "/"):
                    sweep_temp_files(root / folder)
    for found in walked.files:
        if not is_archived(found.path):
            continue
        twin = active_path(found.path)
        if not os.path.lexists(root / twin):
            continue
        if _same(root, Move("", twin, found.path)):
            report.settled.append(found.path)
        else:
            why = f"differs from {twin}, which recall uses meanwhile: merge the two by hand"
            report.conflicts.append(Skipped(found.path, why))


def _plan(
    root: Path, index: Index, recalls: RecallLog, cutoff: datetime, report: ArchiveReport
) -> None:
    """Add to ``report`` a move for every active episode last used before ``cutoff``."""
    if recalls.since > cutoff:
        return  # recalls have not been noted for long enough to call anything unused
    lowest, highest = ARCHIVE_DIR + "/", ARCHIVE_DIR + "0"
    rows = index.episode_rows("NOT (path >= ? AND path < ?)", [lowest, highest], order="path")
    for row in rows:
        rel = row["path"]
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue  # gone since the sync: nothing to move
        if not statmod.S_ISREG(st.st_mode):
            continue  # a link is the user's arrangement, not a file to move
        stamp = datetime.fromtimestamp(row["ts_epoch"], tz=timezone.utc)
        edited = datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
        if max(stamp, edited, recalls.last_used(row["id"])) >= cutoff:
            continue
        move = Move(row["id"], rel, archive_path(rel, stamp.year))
        if move.target.count("/") >= MAX_FOLDER_DEPTH:
            report.conflicts.append(Skipped(rel, "too deeply nested to archive"))
        elif os.path.lexists(root / move.target) and not _same(root, move):
            why = f"{move.target} is another file already: left in place"
            report.conflicts.append(Skipped(rel, why))
        else:
            report.moved.append(move)


def _apply(root: Path, report: ArchiveReport, auto_commit: bool) -> None:
    """Remove the settled twins and carry out the moves; with ``auto_commit`` note every path
    first, so a run killed before its commit is committed by the next one."""
    if auto_commit:
        journal(root, [*report.settled, *(p for m in report.moved for p in (m.source, m.target))])
    for path in report.settled:
        remove_durably(root / path)
    for move in report.moved:
        source, target = root / move.source, root / move.target
        if not (os.path.lexists(target) and _same(root, move)):
            copy_exact(source, target)
        remove_durably(source)


def _same(root: Path, move: Move) -> bool:
    """Whether the move's source and target hold the same bytes."""
    try:
        return (root / move.source).read_bytes() == (root / move.target).read_bytes()
    except OSError:
        return False
