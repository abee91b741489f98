"""Raw logs: append turns to a session's open log, close logs, list what waits.

One log file holds one segment of one agent session.  A turn goes to the session's open log
unless that log has been silent for ``sessionIdleMinutes`` (by the turns' own timestamps),
in which case the old log is closed and a new one started.  Writes hold the vault's ``logs``
lock and replace the file atomically, so a reader never sees half a turn.  A turn is written
without the recalled ``<memoryclaw>`` blocks a host may have put in it (recalled memory is
never stored, or consolidated, again as something said).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ParseError, UnsafePathError
from .config import Settings
from .device import log_device
from .files import (
    LOGS_DIR,
    MAX_FILE_BYTES,
    PROCESSED_DIR,
    Skipped,
    atomic_write,
    ensure_dir,
    file_lock,
    printable_name,
    read_text,
    resolve_inside,
    unique_path,
)
from .frontmatter import split_frontmatter
from .logformat import (
    RawLog,
    Turn,
    append_turn_text,
    dump_log,
    log_outline,
    parse_log,
    replace_log_meta,
)
from .naming import short_hash, slugify
from .newturns import NewTurn, validate_turn
from .recalled import RECALL_TOOLS, RECALLED_RESULT, strip_recalled, unwrapped_tool
from .scopes import conversation_scope, parse_session_key, session_kind, speaker_role
from .scrub import FORGOTTEN, forgotten_turn
from .timestamps import utc_iso
from .tombstones import Tombstones
from .tombstones import load as load_tombstones

# A log stays under the read limit (MAX_FILE_BYTES), so it can always be consolidated: a
# session whose log would pass LOG_PART_CHARS (at most 4 bytes each) goes on in a new part,
# and a turn is clipped, with a marker, to MAX_TURN_BYTES.
LOG_PART_CHARS = MAX_FILE_BYTES // 8
MAX_TURN_BYTES = MAX_FILE_BYTES // 4
DEFAULT_CHANNEL = "cli"
# What is read of a log to see its frontmatter: far more than one holds (ingest marks are few).
_HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class LoggedTurn:
    """Where a turn was written: the log's vault path and the turn's 1-based number; with
    the turn as written, the log's id, and the log's size in bytes before this turn when the
    log was on disk already (what lets the index add just this turn)."""

    path: str
    turn: int
    session: str
    entry: Turn | None = None
    log_id: str = ""
    previous_size: int | None = None
    agent: str | None = None  # the log's agent and scope, as its frontmatter has them
    scope: str | None = None
    before: tuple[str, ...] = ()  # how the turns before it end: what it may answer


def _redact(text: str, previous: Sequence[str] = ()) -> str:
    # imported when first needed: its many patterns take a while to compile, and a search,
    # which never writes a turn, need not wait for them
    from .redact import redact

    return redact(text, previous)


def _last_turns(text: str, count: int = 2) -> list[str]:
    """How a log's last ``count`` turns end (what a lone word may answer: "my password is"),
    read from its tail, not parsed: a turn's text follows its ``### role · time`` line."""
    pieces = text[-600:].split("\n### ")
    ends = [piece.partition("\n")[2] for piece in pieces[1:]]
    return [pieces[0], *ends][-count:]


@lru_cache(maxsize=1024)  # every turn of a log names the same few speakers, tools, senders
def _redact_label(text: str | None) -> str | None:
    return None if text is None else _redact(text)


def _redacted(turn: NewTurn) -> NewTurn:
    """The turn with every text field that reaches a file (body, heading, frontmatter,
    file name) redacted."""
    return replace(
        turn,
        session=_redact(turn.session),
        content=_redact(turn.content),
        name=_redact_label(turn.name),
        channel=_redact_label(turn.channel),
        tool=_redact_label(turn.tool),
        agent=_redact_label(turn.agent),
        sender=_redact_label(turn.sender),
    )


def redacted_log(log: RawLog) -> RawLog:
    """``log`` with every turn's text and every frontmatter string redacted, and no recalled
    block in a turn: what consolidation reads and keeps, whatever ``privacy.redactSecrets``
    was when it was logged and whoever wrote the log."""
    turns = tuple(
        replace(
            t,
            # a lone word answering "my password is" a turn or two before is that password
            content=_redact(
                strip_recalled(t.content), [p.content for p in log.turns[max(0, n - 2) : n]]
            ),
            name=_redact_label(t.name),
            tool=_redact_label(t.tool),
            sender=_redact_label(t.sender),
        )
        for n, t in enumerate(log.turns)
    )
    meta = {key: _redact(v) if isinstance(v, str) else v for key, v in log.meta.items()}
    return RawLog(log.path, meta, turns)


def processed_text(text: str, original: RawLog, redacted: RawLog, meta: Mapping[str, Any]) -> str:
    """The processed copy of a log's ``text``: ``meta`` as its frontmatter and the
    ``redacted`` turns; the body stays byte for byte when redaction changed no turn."""
    if redacted.turns == original.turns:
        return replace_log_meta(text, original.path, meta)
    return dump_log(meta, redacted.turns)


def log_texts(root: Path, folder: str = LOGS_DIR) -> Iterator[tuple[str, str]]:
    """(vault path, text) of every readable raw log in ``folder``, oldest file name first."""
    directory = root / folder
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = f"{folder}/{path.name}"
        try:
            yield rel, read_text(root, rel)
        except ParseError:
            continue  # an unreadable log is reported by doctor


def unprocessed_logs(root: Path) -> list[RawLog]:
    """Every raw log in ``logs/`` not yet consolidated, oldest file first."""
    return [log for _, log in unprocessed_log_texts(root)]


def unprocessed_log_texts(root: Path) -> list[tuple[str, RawLog]]:
    """Every raw log in ``logs/`` not yet consolidated with the text it was parsed from,
    oldest file first."""
    logs = []
    for rel, text in log_texts(root):
        try:
            log = parse_log(text, rel)
        except ParseError:
            continue  # a broken log is reported by doctor; never consolidated
        if not log.meta.get("processed"):
            logs.append((text, log))
    return logs


def held_back_logs(root: Path) -> list[Skipped]:
    """Every file in ``logs/`` that will not be consolidated, and why (it is kept as it is)."""
    held = []
    for path in sorted((root / LOGS_DIR).glob("*.md")):
        rel = f"{LOGS_DIR}/{path.name}"
        shown = printable_name(rel)  # a name that is not UTF-8 is shown escaped
        if path.is_symlink() or not path.is_file():
            kind = "a symbolic link" if path.is_symlink() else "not a file"
            held.append(Skipped(shown, f"{kind}; it will not be consolidated"))
            continue
        try:
            parse_log(read_text(root, rel), rel)
        except (ParseError, UnsafePathError) as exc:
            line = exc.line if isinstance(exc, ParseError) else None
            held.append(Skipped(shown, f"{exc.reason}; it will not be consolidated", line))
    return held


def _new_log_meta(first: NewTurn, owner_ids: tuple[str, ...]) -> dict[str, Any]:
    channel = slugify(first.channel or DEFAULT_CHANNEL, 24)
    stamp = first.timestamp.strftime("%Y-%m-%dT%H-%M-%S")
    key = parse_session_key(first.session)
    kind = session_kind(key, first.kind)  # a kind given narrows the key's, never widens it
    return {
        "id": f"log-{stamp}-{channel}-{short_hash(first.session, length=4)}",
        "timestamp": utc_iso(first.timestamp),
        "channel": channel,
        "session": first.session,
        "agent": first.agent or key.agent or "main",
        "kind": kind,
        "scope": conversation_scope(first.session, kind, owner_ids),
        "processed": False,
    }


def _closed(meta: Any) -> dict[str, Any]:
    return {**meta, "closed": True}


@dataclass
class _Segment:
    """A log being appended to: its path, frontmatter, current text and turn count."""

    path: str
    meta: dict[str, Any]
    text: str
    count: int
    last: datetime | None


# Which of the logs in ``logs/`` (file name -> (mtime_ns, size)) may be a session's open
# log, for a writer that knows the rest are not (the index does); None: any of them may be.
Narrow = Callable[[Mapping[str, tuple[int, int]]], Collection[str] | None]


def _open_logs(root: Path, names: Collection[str] | None = None) -> dict[str, str]:
    """Each session's open log (the newest by file name), told by the logs' frontmatter
    alone: no log is read whole to find it; with ``names``, only the logs so named are read."""
    out: dict[str, str] = {}
    directory = root / LOGS_DIR
    if not directory.is_dir():
        return out
    paths = directory.glob("*.md") if names is None else (directory / n for n in names)
    for path in sorted(paths):
        if path.is_symlink() or not path.is_file():
            continue
        rel = f"{LOGS_DIR}/{path.name}"
        meta = _open_meta(root, rel)
        if meta is not None and meta.get("session") is not None:
            out[str(meta["session"])] = rel
    return out


def _open_meta(root: Path, rel: str) -> dict[str, Any] | None:
    """The frontmatter of the raw log at ``rel`` when it is open (neither closed nor
    consolidated), read from the head of the file; None when it is not, or is unreadable."""
    try:
        meta = log_meta(root, rel)
    except (ParseError, UnsafePathError, OSError):
        return None
    return None if meta.get("processed") or meta.get("closed") else meta


def log_meta(root: Path, rel: str) -> dict[str, Any]:
    """A raw log's frontmatter, read from the head of the file (the whole file only when the
    frontmatter is longer than the head); raises :class:`ParseError` as :func:`read_text`."""
    if printable_name(rel) != rel:
        raise ParseError(printable_name(rel), "file name is not valid UTF-8")
    with open(resolve_inside(root, rel), "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    cut = len(head) == _HEAD_BYTES
    if cut:
        head = head[: head.rfind(b"\n") + 1]  # no character cut in two
    try:
        return split_frontmatter(head.decode("utf-8"), rel)[0]
    except (ParseError, UnicodeDecodeError):
        if not cut:
            raise ParseError(rel, "not a raw log (no readable frontmatter)") from None
        return split_frontmatter(read_text(root, rel), rel)[0]


def _segment(root: Path, rel: str) -> _Segment | None:
    """The log at ``rel`` to append to; None when its turns cannot be read."""
    try:
        text = read_text(root, rel)
        meta, count, last = log_outline(text, rel)
    except (ParseError, UnsafePathError):
        return None  # a broken log is reported by doctor; never appended to
    return _Segment(rel, meta, text, count, last)


# Where a turn came from, recorded in the frontmatter of the log it went to: a key (an
# ingested file's digest) and its position there (line, index of the turn in that line).
Mark = tuple[str, int, int]
MARKS_KEY = "ingested"
_MARKS_KEPT = 8  # keys a log remembers: the files most recently ingested into it


class OpenLogs:
    """Each session's open log, for a writer making many :func:`append_turns` calls, each
    under the ``logs`` lock: read once, kept up to date by those calls, read again only when
    another writer changed ``logs/`` between them (:meth:`settle`, :meth:`refresh`), and
    each log's text let go by :meth:`release` and read back when its session comes again, so
    memory is bounded by one call's turns, not by everything written."""

    def __init__(self, root: Path, narrow: Narrow | None = None) -> None:
        self.root = root
        self._narrow = narrow
        self._held: dict[str, _Segment] = {}
        self._stamps = _log_stamps(root)
        self._away = self._read_open(self._stamps)  # session -> its open log, text not held
        self._forgotten: Tombstones | None = None

    def _read_open(self, stamps: Mapping[str, tuple[int, int]]) -> dict[str, str]:
        """Each session's open log, reading only the logs ``narrow`` leaves in doubt."""
        names = self._narrow(stamps) if self._narrow is not None else None
        return _open_logs(self.root, names)

    def forgotten(self) -> Tombstones:
        """The vault's tombstones, read once for this writer (a turn matching one is written
        blanked: what was forgotten is never logged again)."""
        if self._forgotten is None:
            self._forgotten = load_tombstones(self.root)
        return self._forgotten

    def settle(self) -> None:
        """Remember ``logs/`` as this writer leaves it (before it lets the lock go)."""
        self._stamps = _log_stamps(self.root)

    def refresh(self) -> None:
        """Read the open logs again when another writer changed ``logs/`` since
        :meth:`settle` (a turn logged, a log consolidated); call it holding the lock."""
        stamps = _log_stamps(self.root)
        if stamps != self._stamps:
            self._held, self._away = {}, self._read_open(stamps)

    def get(self, session: str) -> _Segment | None:
        """The session's open log, if it has one."""
        if session not in self._held and session in self._away:
            segment = _segment(self.root, self._away.pop(session))
            if segment is not None:
                self._held[session] = segment
        return self._held.get(session)

    def __setitem__(self, session: str, segment: _Segment) -> None:
        self._away.pop(session, None)
        self._held[session] = segment

    def release(self, keep_chars: int = 0) -> None:
        """Let go of the texts held (they are on disk) when they are over ``keep_chars``."""
        if sum(len(s.text) for s in self._held.values()) <= keep_chars:
            return
        self._away.update({session: s.path for session, s in self._held.items()})
        self._held.clear()

    def close(self, sessions: Collection[str]) -> list[str]:
        """Close the open logs of ``sessions``; their vault paths."""
        closed = []
        for session in sessions:
            segment = self.get(session)
            if segment is None:
                continue
            text = replace_log_meta(segment.text, segment.path, _closed(segment.meta))
            atomic_write(resolve_inside(self.root, segment.path), text)
            del self._held[session]
            closed.append(segment.path)
        return closed


def _log_stamps(root: Path) -> dict[str, tuple[int, int]]:
    """Each log file's change time and size: what tells another writer's change."""
    stamps = {}
    with suppress(FileNotFoundError), os.scandir(root / LOGS_DIR) as entries:
        for entry in entries:
            if entry.name.endswith(".md"):
                with suppress(FileNotFoundError):
                    stat = entry.stat(follow_symlinks=False)
                    stamps[entry.name] = (stat.st_mtime_ns, stat.st_size)
    return stamps


def _add_mark(meta: dict[str, Any], mark: Mark) -> None:
    key, line, index = mark
    found = meta.get(MARKS_KEY)
    if isinstance(found, dict) and next(reversed(found), None) == key:
        found[key] = [line, index]  # the common case: the same file's next turn
        return
    marks = {k: v for k, v in found.items() if k != key} if isinstance(found, dict) else {}
    kept = dict(list(marks.items())[-(_MARKS_KEPT - 1) :])
    meta[MARKS_KEY] = {**kept, key: [line, index]}


def append_turns(
    root: Path,
    settings: Settings,
    turns: Sequence[NewTurn],
    *,
    close: bool = False,
    logs: OpenLogs | None = None,
    marks: Sequence[Mark] | None = None,
    narrow: Narrow | None = None,
) -> list[LoggedTurn]:
    """Append turns (in order) to their sessions' open logs; ``close`` closes those logs after.

    Only the new turns are rendered: a long log is not re-parsed or rewritten turn by turn.
    A caller that holds the ``logs`` lock passes its :class:`OpenLogs`; ``marks`` (one a
    turn) are recorded in each log written, in the same write as the turns they stand for;
    ``narrow`` spares reading logs that cannot be a session's open one.
    """
    for turn in turns:
        validate_turn(turn)
    if settings.privacy.redact_secrets:
        turns = [_redacted(turn) for turn in turns]
    idle = timedelta(minutes=settings.consolidation.session_idle_minutes)
    out: list[LoggedTurn] = []
    with file_lock(root, "logs") if logs is None else nullcontext():
        folder = resolve_inside(root, LOGS_DIR)  # a logs/ linked out of the vault is refused
        ensure_dir(folder)
        segments = OpenLogs(root, narrow) if logs is None else logs
        touched: dict[str, _Segment] = {}
        for position, new in enumerate(turns):
            segment = segments.get(new.session)
            # a recalled block the host put in front of a message is memory already, not
            # what was said: logged, it would come back from consolidation as a new memory
            content, tool = strip_recalled(new.content), new.tool
            if new.role in ("tool", "tool_result"):
                # a result through OpenClaw's tool_call wrapper is the wrapped tool's
                tool = unwrapped_tool("tool_result", content, tool)[1]
                if tool in RECALL_TOOLS:
                    content = RECALLED_RESULT  # the same: what memory's own tools found is memory
            before = _last_turns(segment.text) if segment and segment.count else []
            if settings.privacy.redact_secrets:
                content = _redact(content, before)
            content = _clip(content)
            speaker = new.name
            forgotten = segments.forgotten()
            if forgotten and forgotten_turn(content, forgotten):
                content, speaker, tool = FORGOTTEN, None, None  # as forget blanks a turn
            full = segment is not None and len(segment.text) + len(content) > LOG_PART_CHARS
            idle_for = segment is not None and segment.last and new.timestamp - segment.last > idle
            if segment is not None and segment.count and (full or idle_for):
                closed = replace_log_meta(segment.text, segment.path, _closed(segment.meta))
                atomic_write(resolve_inside(root, segment.path), closed)
                touched.pop(new.session, None)
                segment, before = None, []
            if segment is None:
                meta = _new_log_meta(new, settings.scopes.owner_ids)
                # The device's id keeps two devices syncing one vault from making one file.
                device = log_device(root, settings)
                stamp = new.timestamp.strftime("%Y-%m-%d_%H-%M-%S")
                stamp += f"_{device}" if device else ""
                name = f"{stamp}_{meta['channel']}_raw.md"
                # nor the name of a consolidated log: retrieval takes logs/processed/<name>
                # for this log's consolidated copy
                target = unique_path(folder, name, root / PROCESSED_DIR)
                meta["id"] += target.name.removeprefix(name[:-3]).removesuffix(".md")  # -2 ...
                segment = _Segment(f"{LOGS_DIR}/{target.name}", meta, dump_log(meta, []), 0, None)
                if position < len(turns) - 1:  # the call's last turn is written just below
                    atomic_write(target, segment.text)  # reserve the name under the lock
            kind = str(segment.meta.get("kind") or "direct")
            role = speaker_role(new.role, new.sender, kind, settings.scopes.owner_ids)
            entry = Turn(role, new.timestamp, content, name=speaker, tool=tool, sender=new.sender)
            on_disk = new.session not in touched and segment.count > 0
            previous = len(segment.text.encode("utf-8")) if on_disk else None
            segment.text = append_turn_text(segment.text, segment.count > 0, entry)
            segment.count += 1
            segment.last = new.timestamp
            if marks is not None:
                _add_mark(segment.meta, marks[position])
            segments[new.session] = touched[new.session] = segment
            log_id = str(segment.meta.get("id") or segment.path)
            out.append(
                LoggedTurn(
                    segment.path,
                    segment.count,
                    new.session,
                    entry,
                    log_id,
                    previous,
                    _meta_text(segment.meta, "agent"),
                    _meta_text(segment.meta, "scope"),
                    tuple(before),
                )
            )
        for segment in touched.values():
            text = segment.text
            if close:
                text = replace_log_meta(text, segment.path, _closed(segment.meta))
            elif marks is not None:
                text = segment.text = replace_log_meta(text, segment.path, segment.meta)
            atomic_write(resolve_inside(root, segment.path), text)
    return out


def _meta_text(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return str(value) if value is not None else None


def _clip(content: str) -> str:
    """``content``, cut to MAX_TURN_BYTES with a marker saying how much was left out."""
    data = content.encode("utf-8")
    if len(data) <= MAX_TURN_BYTES:
        return content
    kept = data[:MAX_TURN_BYTES].decode("utf-8", errors="ignore")
    return f"{kept}\n[memoryclaw: {len(data) - len(kept.encode())} more bytes clipped]"


def close_session(root: Path, session: str) -> list[str]:
    """Close the session's open log (session end); returns its vault path, if there was one."""
    with file_lock(root, "logs"):
        rel = _open_logs(root).get(session)
        segment = _segment(root, rel) if rel is not None else None
        if segment is None:
            return []
        closed = replace_log_meta(segment.text, segment.path, _closed(segment.meta))
        atomic_write(resolve_inside(root, segment.path), closed)
        return [segment.path]


def session_turns(root: Path, session: str) -> tuple[Turn, ...]:
    """The turns of ``session``'s open log, in order; none when the session has no open log.

    A session's working memory is rebuilt from them when a new process meets the session
    (OpenClaw runs each ``agent --local`` turn in a process of its own)."""
    rel = _open_logs(root).get(session)
    segment = _segment(root, rel) if rel is not None else None
    if segment is None:
        return ()
    return parse_log(segment.text, segment.path).turns


def is_open_log(root: Path, rel: str) -> bool:
    """Whether the raw log at ``rel`` is its session's open log (neither closed nor
    consolidated): the turns a live session's host still holds as its history.  A log that
    cannot be read is taken as not open.  Only its frontmatter is read."""
    return _open_meta(root, rel) is not None
