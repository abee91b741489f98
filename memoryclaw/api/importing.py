"""Bringing turns and memories in through the facade: logged turns, ingested records, and
imports of an OpenClaw install or a folder of notes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import MemoryclawError, warn
from ..importers.records import as_timestamp, record_turns
from ..index.update import index_logged_turn
from ..vault.files import CONSOLIDATE_LOCK, LOGS_DIR, file_lock
from ..vault.newturns import NewTurn
from ..vault.rawlogs import LoggedTurn, Narrow, append_turns

if TYPE_CHECKING:
    from ..importers.workspace import ImportReport
    from ..index.store import Index
    from .vault import Vault


@dataclass(frozen=True)
class IngestReport:
    """What ``ingest`` wrote: turns, and the logs they went to (now closed)."""

    turns: int
    logs: tuple[str, ...]
    sessions: tuple[str, ...] = field(default=())
    known_turns: int = 0  # turns of the file an earlier (killed or whole) run had written
    forgotten: int = 0  # turns written blanked: they were forgotten

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "turns": self.turns,
            "logs": list(self.logs),
            "sessions": list(self.sessions),
            "known_turns": self.known_turns,
            "forgotten": self.forgotten,
        }


def log_turn(
    vault: Vault,
    session: str,
    role: str,
    text: str,
    *,
    name: str | None = None,
    channel: str | None = None,
    timestamp: datetime | str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    kind: str | None = None,
    sender: str | None = None,
) -> LoggedTurn:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.log_turn`."""
    moment = as_timestamp(timestamp, "timestamp")
    turn = NewTurn(
        session,
        role,
        text,
        moment,
        name=name,
        channel=channel,
        tool=tool,
        agent=agent,
        kind=kind,
        sender=sender,
    )
    try:  # opened before the logs lock is taken: a schema upgrade must not hold it up
        narrow: Narrow | None = partial(_logs_in_doubt, vault.index, session)
    except (MemoryclawError, sqlite3.Error, OSError):
        narrow = None
    logged = append_turns(vault.root, vault.settings, [turn], narrow=narrow)[0]
    try:
        index_logged_turn(vault.root, vault.index, logged)
    except (MemoryclawError, sqlite3.Error, OSError) as exc:
        warn("memoryclaw.vectors", "logged turn not indexed yet (the next sync will): %s", exc)
    return logged


def _logs_in_doubt(
    index: Index, session: str, stamps: Mapping[str, tuple[int, int]]
) -> set[str] | None:
    """The raw logs (file names in ``logs/``, each with its (mtime_ns, size)) that may be
    ``session``'s open log: those the index holds as it, and those it has not seen as they
    are now. A turn so reads one log, not the head of every log left unconsolidated; None
    (read them all) when the index cannot say."""
    try:
        known = index.raw_log_stats(LOGS_DIR)
    except (MemoryclawError, sqlite3.Error, OSError):
        return None
    return {
        name
        for name, stamp in stamps.items()
        if (seen := known.get(name)) is None or seen[:2] != stamp or seen[2] == session
    }


def _index_logs(vault: Vault, paths: Sequence[str]) -> None:
    """Make just-logged turns recallable at once; the turns are on disk either way, so a
    failure here only delays them to the next sync."""
    try:
        vault.reindex_paths(paths)
    except (MemoryclawError, sqlite3.Error, OSError) as exc:
        warn("memoryclaw.vectors", "logged turns not indexed yet (the next sync will): %s", exc)


def ingest(
    vault: Vault,
    records: Iterable[Mapping[str, Any]],
    *,
    source: str = "<input>",
    line_numbers: Sequence[int] | None = None,
) -> IngestReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.ingest`."""
    turns: list[NewTurn] = []
    for position, record in enumerate(records):
        line = line_numbers[position] if line_numbers is not None else position + 1
        turns += record_turns(record, source, line)
    if not turns:
        return IngestReport(0, ())
    logged = append_turns(vault.root, vault.settings, turns, close=True)
    logs = tuple(dict.fromkeys(t.path for t in logged))
    _index_logs(vault, logs)
    sessions = tuple(dict.fromkeys(t.session for t in logged))
    from ..vault.scrub import FORGOTTEN

    blanked = sum(1 for t in logged if t.entry is not None and t.entry.content == FORGOTTEN)
    return IngestReport(len(logged), logs, sessions, forgotten=blanked)


def ingest_file(
    vault: Vault, file: str | Path | IO[bytes], *, source: str | None = None
) -> IngestReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.ingest_file`."""
    from ..importers.ingest import ingest_stream

    def to_turns(record: Mapping[str, Any], line: int, check: bool) -> list[NewTurn]:
        return record_turns(record, name, line, check=check)

    if isinstance(file, (str, Path)):
        name = source or str(file)
        document = str(file).endswith(".json")
        with open(file, "rb") as handle:
            done = ingest_stream(
                vault.root, vault.settings, handle, name, to_turns, document=document
            )
    else:
        name = source or "-"
        done = ingest_stream(vault.root, vault.settings, file, name, to_turns)
    logs = tuple(done.logs)
    _index_logs(vault, logs)
    return IngestReport(
        done.turns, logs, tuple(done.sessions), done.known, forgotten=done.forgotten
    )


def import_openclaw(
    vault: Vault,
    state: str | Path | None = None,
    *,
    agent: str | None = None,
    since: date | None = None,
    dry_run: bool = False,
) -> ImportReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.import_openclaw`."""
    from ..share.history import is_repository, journal

    where = Path(state).expanduser() if state is not None else None
    message = "memoryclaw: import from OpenClaw"
    use_git = vault.settings.git.auto_commit and is_repository(vault.root) and not dry_run
    with vault._committing(message):
        from ..importers.workspace import import_openclaw

        done = import_openclaw(
            vault,
            state=where,
            agent=agent,
            since=since,
            dry_run=dry_run,
            note_writes=partial(journal, vault.root) if use_git else None,
        )
        _imported(vault, message, use_git=use_git, dry_run=dry_run)
        return done


def import_notes(
    vault: Vault, folder: str | Path, *, since: date | None = None, dry_run: bool = False
) -> ImportReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.import_notes`."""
    from ..share.history import is_repository, journal
    from ..vault.redact import redact  # a folder's name reaches the commit message

    message = f"memoryclaw: import notes from {redact(Path(folder).name)}"
    use_git = vault.settings.git.auto_commit and is_repository(vault.root) and not dry_run
    note_writes = partial(journal, vault.root) if use_git else None
    with vault._committing(message):
        from ..importers.workspace import import_notes

        done = import_notes(
            vault, Path(folder), since=since, dry_run=dry_run, note_writes=note_writes
        )
        _imported(vault, message, use_git=use_git, dry_run=dry_run)
        return done


def _imported(vault: Vault, message: str, *, use_git: bool, dry_run: bool) -> None:
    """After an import: scrub what it brought back that was forgotten, then commit what
    this run wrote and what a run killed before its commit wrote."""
    # imported here: logging a turn, the verb an agent's host runs every turn, needs neither
    from ..share.history import commit_journal
    from . import forgetting

    if not dry_run:
        forgetting.keep_forgotten(vault)
    if use_git:
        with file_lock(vault.root, CONSOLIDATE_LOCK, timeout=forgetting.FORGET_WAIT_SECONDS):
            commit_journal(vault.root, message)
