"""Raw logs: append turns to a session's open log, close logs, list what waits.

One log file holds one segment of one agent session.  A turn goes to the session's open log
unless that log has been silent for ``sessionIdleMinutes`` (by the turns' own timestamps),
in which case the old log is closed and a new one started.  Writes hold the vault's ``logs``
lock and replace the file atomically, so a reader never sees half a turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .config import Settings
from .errors import InvalidInputError, ParseError
from .notes import ROLE_RE, RawLog, Turn, dump_log, parse_log, short_hash, slugify, utc_iso
from .redact import redact
from .vault import LOGS_DIR, atomic_write, ensure_dir, file_lock, read_text, unique_path

MAX_TURN_CHARS = 1_000_000
DEFAULT_CHANNEL = "cli"


@dataclass(frozen=True)
class NewTurn:
    """A turn to be logged, as a hook or ``ingest`` hands it over."""

    session: str
    role: str
    content: str
    timestamp: datetime
    name: str | None = None
    channel: str | None = None
    tool: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class LoggedTurn:
    """Where a turn was written: the log's vault path and the turn's 1-based number."""

    path: str
    turn: int
    session: str


def validate_turn(turn: NewTurn, *, source: str | None = None, line: int | None = None) -> None:
    """Raise :class:`InvalidInputError` for a turn that must not be written."""
    if not turn.session.strip() or "\n" in turn.session:
        raise InvalidInputError(
            "session", "must be a non-empty single line", source=source, line=line
        )
    if not ROLE_RE.match(turn.role):
        raise InvalidInputError(
            "role",
            f"{turn.role!r} is not a role (lowercase letters and _, e.g. user, assistant)",
            source=source,
            line=line,
        )
    if len(turn.content) > MAX_TURN_CHARS:
        raise InvalidInputError(
            "content",
            f"{len(turn.content)} characters, over the {MAX_TURN_CHARS} limit of one turn",
            source=source,
            line=line,
        )


def _open_logs(root: Path) -> list[RawLog]:
    folder = root / LOGS_DIR
    if not folder.is_dir():
        return []
    logs = []
    for path in sorted(folder.glob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = f"{LOGS_DIR}/{path.name}"
        try:
            logs.append(parse_log(read_text(root, rel), rel))
        except ParseError:
            continue  # a broken log is reported by doctor; never appended to
    return logs


def unprocessed_logs(root: Path) -> list[RawLog]:
    """Every raw log in ``logs/`` not yet consolidated, oldest file first."""
    return [log for log in _open_logs(root) if not log.meta.get("processed")]


def _is_open(log: RawLog) -> bool:
    return not log.meta.get("processed") and not log.meta.get("closed")


def _new_log_meta(first: NewTurn) -> dict[str, Any]:
    channel = slugify(first.channel or DEFAULT_CHANNEL, 24)
    stamp = first.timestamp.strftime("%Y-%m-%dT%H-%M-%S")
    return {
        "id": f"log-{stamp}-{channel}-{short_hash(first.session, length=4)}",
        "timestamp": utc_iso(first.timestamp),
        "channel": channel,
        "session": first.session,
        "agent": first.agent or "main",
        "processed": False,
    }


def _closed(meta: Any) -> dict[str, Any]:
    return {**meta, "closed": True}


def append_turns(
    root: Path, settings: Settings, turns: Sequence[NewTurn], *, close: bool = False
) -> list[LoggedTurn]:
    """Append turns (in order) to their sessions' open logs; ``close`` closes those logs after."""
    for turn in turns:
        validate_turn(turn)
    idle = timedelta(minutes=settings.consolidation.session_idle_minutes)
    out: list[LoggedTurn] = []
    with file_lock(root, "logs"):
        ensure_dir(root / LOGS_DIR)
        by_session = {log.session: log for log in _open_logs(root) if _is_open(log) and log.session}
        pending: dict[str, tuple[str, dict[str, Any], list[Turn]]] = {}
        for new in turns:
            entry = pending.get(new.session)
            if entry is None:
                log = by_session.get(new.session)
                if log is not None:
                    entry = (log.path, dict(log.meta), list(log.turns))
            if entry is not None and entry[2] and new.timestamp - entry[2][-1].timestamp > idle:
                path, meta, old_turns = entry
                atomic_write(root / path, dump_log(_closed(meta), old_turns))
                entry = None
            if entry is None:
                meta = _new_log_meta(new)
                name = f"{new.timestamp.strftime('%Y-%m-%d_%H-%M-%S')}_{meta['channel']}_raw.md"
                target = unique_path(root / LOGS_DIR, name)
                entry = (f"{LOGS_DIR}/{target.name}", meta, [])
                atomic_write(target, dump_log(meta, []))  # reserve the name under the lock
            content = redact(new.content) if settings.privacy.redact_secrets else new.content
            entry[2].append(Turn(new.role, new.timestamp, content, name=new.name, tool=new.tool))
            pending[new.session] = entry
            out.append(LoggedTurn(entry[0], len(entry[2]), new.session))
        for path, meta, log_turns in pending.values():
            atomic_write(root / path, dump_log(_closed(meta) if close else meta, log_turns))
    return out


def close_session(root: Path, session: str) -> list[str]:
    """Close the session's open logs (session end); returns their vault paths."""
    closed = []
    with file_lock(root, "logs"):
        for log in _open_logs(root):
            if log.session == session and _is_open(log):
                atomic_write(root / log.path, dump_log(_closed(log.meta), log.turns))
                closed.append(log.path)
    return closed


def now_utc() -> datetime:
    """The current time, UTC, whole seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0)
