"""Bring the index up to date with the vault: scan, compare, then apply.

A file is re-read only when its (mtime, size) changed, and re-parsed only when its content
hash changed too.  Files that cannot be parsed are recorded with their reason and skipped;
they never stop a sync.  A file that disappears while its twin (same content) appears is
reported as moved.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat as statmod
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import FileChangedError, ParseError, UnsafePathError
from ..vault.episodes import parse_episode
from ..vault.files import (
    ARCHIVE_DIR,
    EPISODES_DIR,
    LOGS_DIR,
    FileStat,
    Skipped,
    active_path,
    classify,
    is_archived,
    lock_at,
    printable_name,
    read_scanned,
    read_text,
    require_vault,
    safe_relpath,
)
from ..vault.scanning import folders_changed, scan
from .reads import FileState
from .store import Index

if TYPE_CHECKING:
    from ..vault.rawlogs import LoggedTurn

Progress = Callable[[int, int], None]
OPTIMIZE_AFTER_FILES = 500  # a sync that changes this many files merges the full-text index
# Up to this many files a freshness check stats every file; above it only folder mtimes are
# compared (in-place edits are then picked up by the daemon's watcher or `reindex`).
FULL_STAT_LIMIT = 5_000
_FOLDERS_KEY = "folder_mtimes"


@dataclass
class SyncReport:
    """What a sync found and did."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    took_ms: float = 0.0
    # The vector fallback's part (filled in by the Vault after the sync, when it is on):
    embedded: int = 0  # vectors computed: of episodes and of their lines
    vector_error: str | None = None  # why they could not be; keyword search is unaffected

    @property
    def changed_anything(self) -> bool:
        """True when the index was modified."""
        return bool(self.added or self.changed or self.deleted or self.moved)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "added": len(self.added),
            "changed": len(self.changed),
            "deleted": len(self.deleted),
            "moved": len(self.moved),
            "unchanged": self.unchanged,
            "skipped": [{"path": s.path, "reason": s.reason, "line": s.line} for s in self.skipped],
            "took_ms": round(self.took_ms, 1),
            "embedded": self.embedded,
            "vector_error": self.vector_error,
        }


def content_hash(text: str) -> str:
    """The hash that decides whether a file's content changed."""
    import hashlib  # here: a recall hashes nothing, and OpenSSL is slow to load

    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _mtime_date(mtime_ns: int) -> str:
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d")


def index_file(
    index: Index,
    stat: FileStat,
    text: str,
    sha: str,
    *,
    replace: bool,
    root: Path | None = None,
) -> None:
    """Parse one file and store what it holds (raises ParseError for a bad file).

    ``replace`` is False only for a file the index has never seen, which has no rows to remove.
    With the vault's ``root``, an episode's source log is read for its turn sizes.
    """
    if stat.kind == "episode":
        episode = parse_episode(text, stat.path, stat.mtime_ns / 1e9)
        index.put_episode(episode, replace=replace)
        if root is not None:
            _note_turn_sizes(root, index, episode.source)
    elif stat.kind == "facts":
        from ..vault.facts import parse_facts  # here, as the two below: a recall parses none

        facts = parse_facts(text, stat.path, _mtime_date(stat.mtime_ns))
        index.put_facts(stat.path, facts, replace=replace)
    elif stat.kind == "pending":
        from ..vault.pending import parse_pending

        index.put_pending(stat.path, parse_pending(text))
    elif stat.kind == "aliases":
        from ..vault.aliases import parse_aliases

        index.put_aliases(stat.path, parse_aliases(text, stat.path))
    elif stat.kind == "log":
        from ..vault.logformat import parse_log

        log = parse_log(text, stat.path)
        if log.meta.get("processed"):
            index.remove_file(stat.path)  # its episodes hold its turns now
            index.set_file(stat.path, stat.kind, stat.mtime_ns, stat.size, sha)
            return
        else:
            # redaction's patterns take a while to compile: loaded when a log is indexed only
            from ..vault.turnlines import turn_lines

            log_id = str(log.meta.get("id") or stat.path)
            index.put_log_turns(
                stat.path,
                log_id,
                log.session,
                turn_lines(log),
                replace=replace,
                agent=log.agent,
                scope=log.scope,
            )
            index.set_file(stat.path, stat.kind, stat.mtime_ns, stat.size, sha)
            index.set_open_session(stat.path, None if log.meta.get("closed") else log.session)
            return
    index.set_file(stat.path, stat.kind, stat.mtime_ns, stat.size, sha)


def _note_turn_sizes(root: Path, index: Index, source: str | None) -> None:
    """Store how long each turn of the processed log ``source`` is, once per index: what
    recall metrics count an episode of it as standing for (:mod:`memoryclaw.recall.metrics`).  A log
    that is missing or unreadable is left out; its episodes then stand for their own text."""
    if not source or not source.startswith(LOGS_DIR + "/") or index.has_turn_sizes(source):
        return
    from ..vault.logformat import parse_log

    try:
        # a missing log (deleted by retention) is common: one stat says so, cheaper than
        # resolving the path's links first
        if not os.path.isfile(root / safe_relpath(source)):
            return
        log = parse_log(read_text(root, source), source)
    except (ParseError, UnsafePathError, OSError):
        return
    index.put_turn_sizes(source, [(n, len(turn.content)) for n, turn in enumerate(log.turns, 1)])


def sync(
    root: Path, index: Index, *, full: bool = False, progress: Progress | None = None
) -> SyncReport:
    """Make the index match the vault; ``full`` re-reads every file regardless of its stat."""
    started = time.perf_counter()
    report = SyncReport()
    require_vault(root)  # a vanished vault must not read as an empty one, nor be recreated
    with _index_lock(root, index):
        walked = scan(root)
        found, report.skipped = _without_twins(root, walked.files), walked.skipped
        seen = index.file_stats()
        present = {f.path for f in found}
        gone = sorted(set(seen) - present)
        todo: list[FileStat] = []
        for stat in found:
            known = seen.get(stat.path)
            if full or _changed(known, stat):
                todo.append(stat)
                continue
            assert known is not None
            report.unchanged += 1
            if known[2] is not None:
                report.skipped.append(Skipped(stat.path, known[2], known[3]))
        states = index.file_states([s.path for s in todo if s.path in seen] + gone)
        # An index never synced (empty, or holding just the turns logged since it was made)
        # is loaded in bulk: rows first, full-text tables rebuilt once.
        first = not seen or index.get_meta(_FOLDERS_KEY) is None
        with index.bulk_load() if first else index.transaction():
            _apply(root, index, todo, gone, states, full, report, progress)
            index.set_meta(_FOLDERS_KEY, json.dumps(walked.folders, sort_keys=True))
            index.record_episode_count()
        if seen and len(todo) + len(gone) >= OPTIMIZE_AFTER_FILES:
            with index.transaction():  # a big change (a pull, an import) leaves many segments
                index.optimize()
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def sync_paths(root: Path, index: Index, paths: Iterable[str]) -> SyncReport | None:
    """Bring just these vault-relative files up to date, without walking the vault.

    For a watcher that knows what changed.  None when that cannot be trusted — the index has
    no folder record yet, a path lies in a folder the last sync did not see (a new or renamed
    folder), or is a folder or a symbolic link — and a full :func:`sync` is needed instead.
    """
    started = time.perf_counter()
    report = SyncReport()
    require_vault(root)
    wanted = sorted(set(paths))
    with _index_lock(root, index):
        stored = index.get_meta(_FOLDERS_KEY)
        if stored is None:
            return None
        folders: dict[str, int] = json.loads(stored)
        found: list[FileStat] = []
        missing: list[str] = []
        for rel in wanted:
            if printable_name(rel) != rel:
                return None  # a name that is not UTF-8: the walk reports it
            parent = rel.rpartition("/")[0]
            kind = classify(rel)
            if kind == "episode" and _has_twin(root, rel):
                return None  # an archive move under way: the walk indexes one copy only
            if kind is None:
                if rel in folders or (parent in folders and not Path(rel).suffix):
                    return None  # perhaps a folder (gone, or new): only a walk can tell
                continue
            if parent not in folders:
                return None
            try:
                st = os.lstat(root / rel)
            except FileNotFoundError:
                missing.append(rel)
                continue
            if not statmod.S_ISREG(st.st_mode):
                return None  # a symbolic link, or a folder named like a note
            found.append(FileStat(rel, kind, st.st_mtime_ns, st.st_size))
        try:
            for folder in {rel.rpartition("/")[0] for rel in wanted} & folders.keys():
                folders[folder] = os.stat(root / folder).st_mtime_ns
        except OSError:
            return None
        states = index.file_states([f.path for f in found] + missing)
        gone = [rel for rel in missing if rel in states]
        todo = []
        for stat in found:
            known = states.get(stat.path)
            if known is None or (known.mtime_ns, known.size) != (stat.mtime_ns, stat.size):
                todo.append(stat)
            else:
                report.unchanged += 1
        with index.transaction():
            _apply(root, index, todo, gone, states, False, report, None)
            index.set_meta(_FOLDERS_KEY, json.dumps(folders, sort_keys=True))
            index.record_episode_count()
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _without_twins(root: Path, files: list[FileStat]) -> list[FileStat]:
    """``files`` less each archived episode whose active twin (the same ``episodes/`` path
    without ``archive/YYYY/``) is there too with the same bytes: an archive or restore was
    interrupted between writing the copy and removing the original (memoryclaw.consolidate.archive
    settles it).  Indexing one copy keeps search free of duplicates; the active one wins, as
    the settling does.  Twins that differ are both indexed: neither text is hidden."""
    if not any(is_archived(f.path) for f in files):
        return files
    active = {f.path: f for f in files if not is_archived(f.path)}

    def hidden(found: FileStat) -> bool:
        twin = active.get(active_path(found.path)) if is_archived(found.path) else None
        if twin is None or twin.size != found.size:
            return False
        try:
            return (root / twin.path).read_bytes() == (root / found.path).read_bytes()
        except OSError:
            return False  # one vanished meanwhile: the next pass sees which

    return [f for f in files if not hidden(f)]


def _has_twin(root: Path, rel: str) -> bool:
    """Whether another copy of the episode file ``rel`` exists across the archive boundary."""
    if is_archived(rel):
        return os.path.lexists(root / active_path(rel))
    rest = rel[len(EPISODES_DIR) + 1 :]
    archive = root / ARCHIVE_DIR
    return archive.is_dir() and (
        os.path.lexists(archive / rest) or any(archive.glob(f"*/{_glob_escape(rest)}"))
    )


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _index_lock(root: Path, index: Index) -> AbstractContextManager[None]:
    """The index's lock, beside it (``.memoryclaw/locks/index.lock`` for a vault's own; a
    team vault's derived index is locked in this vault, never in the team's); an index held
    in memory is this process's alone."""
    if index.path is None:
        return nullcontext()
    return lock_at(index.path.parent / "locks" / f"{index.path.stem}.lock")


def index_logged_turn(root: Path, index: Index, logged: LoggedTurn) -> SyncReport:
    """Make one just-logged turn recallable: when the index is current with the log as it
    was before the turn, only the turn is added (a long session's log is not re-read for
    each turn); otherwise the log is indexed whole.  Nothing else of the vault is read,
    also when the index is new or behind: the next search's freshness check syncs the rest."""
    require_vault(root)
    with _index_lock(root, index):
        state = index.file_states([logged.path]).get(logged.path)
        current = (
            state is None
            if logged.previous_size is None
            else state is not None and state.error is None and state.size == logged.previous_size
        )
        stored = index.get_meta(_FOLDERS_KEY)
        if not current or logged.entry is None or stored is None or index.rebuilt:
            incremental = False
        else:
            folders: dict[str, int] = json.loads(stored)
            incremental = LOGS_DIR in folders
        if incremental:
            from ..vault.turnlines import turn_line  # as above: only when a turn is indexed

            try:
                st = os.lstat(root / logged.path)
                folders[LOGS_DIR] = os.stat(root / LOGS_DIR).st_mtime_ns
            except OSError:
                incremental = False
        if incremental:
            assert logged.entry is not None
            line = turn_line(logged.turn, logged.entry, logged.before)
            with index.transaction():
                lines = [line] if line is not None else []
                index.put_log_turns(
                    logged.path,
                    logged.log_id,
                    logged.session,
                    lines,
                    replace=False,
                    agent=logged.agent,
                    scope=logged.scope,
                )
                index.set_file(logged.path, "log", st.st_mtime_ns, st.st_size, "")
                index.set_open_session(logged.path, logged.session)  # a turn went to it
                index.set_meta(_FOLDERS_KEY, json.dumps(folders, sort_keys=True))
            report = SyncReport()
            (report.added if state is None else report.changed).append(logged.path)
            return report
    return sync_paths(root, index, [logged.path]) or _index_log(root, index, logged.path)


def _index_log(root: Path, index: Index, rel: str) -> SyncReport:
    """Index the raw log ``rel`` alone, leaving the folder record as it is (so the index
    still counts as behind where it was: :func:`is_stale`)."""
    started = time.perf_counter()
    report = SyncReport()
    with _index_lock(root, index):
        st = os.lstat(root / rel)
        stat = FileStat(rel, "log", st.st_mtime_ns, st.st_size)
        states = index.file_states([rel])
        with index.transaction():
            _apply(root, index, [stat], [], states, False, report, None)
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _apply(
    root: Path,
    index: Index,
    todo: list[FileStat],
    gone: list[str],
    states: dict[str, FileState],
    full: bool,
    report: SyncReport,
    progress: Progress | None,
) -> None:
    """Index the files in ``todo`` and drop those in ``gone`` (a twin of one is a move)."""
    shas_gone = {states[p].sha: p for p in gone if states[p].sha}
    for done, stat in enumerate(todo, start=1):
        _apply_one(root, index, stat, states.get(stat.path), full, shas_gone, report)
        if progress is not None:
            progress(done, len(todo))
    moved_from = {old for old, _ in report.moved}
    for path in gone:
        index.remove_file(path)
        if path not in moved_from:
            report.deleted.append(path)


def _changed(known: tuple[int, int, str | None, int | None] | None, stat: FileStat) -> bool:
    """Whether a file's (mtime, size) differs from what the index saw (or it is new)."""
    return known is None or (known[0], known[1]) != (stat.mtime_ns, stat.size)


def _skip(
    index: Index, stat: FileStat, sha: str, reason: str, line: int | None, report: SyncReport
) -> None:
    """Drop what the index held of a file it cannot use, and remember why."""
    index.remove_file(stat.path)
    index.set_file(stat.path, stat.kind, stat.mtime_ns, stat.size, sha, reason, line)
    report.skipped.append(Skipped(stat.path, reason, line))


def _apply_one(
    root: Path,
    index: Index,
    stat: FileStat,
    state: FileState | None,
    full: bool,
    shas_gone: dict[str, str],
    report: SyncReport,
) -> None:
    try:
        text = read_scanned(root, stat)
    except FileChangedError as exc:
        report.skipped.append(Skipped(stat.path, exc.reason))  # the index keeps what it had
        return
    except ParseError as exc:
        _skip(index, stat, "", exc.reason, exc.line, report)
        return
    sha = content_hash(text)
    if not full and state is not None and state.sha == sha and state.error is None:
        index.set_file(stat.path, stat.kind, stat.mtime_ns, stat.size, sha)
        report.unchanged += 1
        return
    try:
        index_file(index, stat, text, sha, replace=state is not None, root=root)
    except ParseError as exc:
        _skip(index, stat, sha, exc.reason, exc.line, report)
        return
    except (ValueError, OverflowError, sqlite3.InterfaceError) as exc:
        # Whatever a hand-edited file contains, it is skipped and reported, never fatal.
        _skip(index, stat, sha, f"cannot be indexed: {exc}", None, report)
        return
    if state is not None:
        report.changed.append(stat.path)
    elif sha in shas_gone:
        report.moved.append((shas_gone.pop(sha), stat.path))
    else:
        report.added.append(stat.path)


def is_stale(root: Path, index: Index) -> bool:
    """Whether the vault changed since the last sync, cheaply.

    Any folder whose mtime moved means a file was added, removed or renamed (editors that save
    by rename included).  Vaults of up to ``FULL_STAT_LIMIT`` files also stat every file, so an
    in-place edit counts; larger ones leave those to the daemon's watcher or ``reindex``.
    """
    stored = index.get_meta(_FOLDERS_KEY)
    if stored is None or folders_changed(root, json.loads(stored)):
        return True
    if index.file_count(FULL_STAT_LIMIT + 1) > FULL_STAT_LIMIT:
        return False
    found = _without_twins(root, scan(root).files)
    seen = index.file_stats()
    if len(found) != len(seen):
        return True
    return any(_changed(seen.get(stat.path), stat) for stat in found)
