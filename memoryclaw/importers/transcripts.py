"""OpenClaw session transcripts into raw logs, each turn once.

A transcript's turns are logged with their own times, session key, agent, channel and
speakers (:func:`memoryclaw.importers.parsers.session_turns`), all sessions in one ``ingest``, so a
bad turn stops nothing: it is checked first, and reported and left out.  Which turns are in:

* ``logs/imported.yaml`` (the ledger; committed with the logs in a git vault) records per
  session (``<agent>/<session id>``) the time of the last turn imported or found logged; a
  later import brings only later turns;
* a later turn may have been logged as it happened by memoryclaw's OpenClaw plugin.  A turn
  is the plugin's turn when it has the same session, the same speaker and the same words as
  written (:func:`turn_identity`: recalled blocks out, redacted, spacing collapsed, a tool's
  text by its first characters, OpenClaw's ``tool_call`` wrapper unwrapped), stamped within
  :data:`~memoryclaw.vault.ledger.MATCH_WINDOW` of it (:func:`logged_positions`): the plugin
  stamps a turn when the agent's run ends, OpenClaw when the message came in, seconds or
  minutes apart.  Each logged turn stands for one turn (as many pairs as can be made, the
  nearest such), so an "ok" said twice and logged once is imported once;
* once consolidated, the plugin's logs are in ``logs/processed/``; when those are deleted
  (``consolidation.logRetentionDays``), the ledger keeps, per session key, the time span of
  each deleted log's turns (``pruned``), and a transcript turn within a span (give or take
  the window) counts as logged: a turn the plugin missed in that span (memoryclaw down) is
  not imported then, where counting it new would import every turn of the span again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InvalidInputError, ParseError
from ..vault.files import LOGS_DIR, PROCESSED_DIR, file_lock
from ..vault.ledger import LEDGER_FILE, MATCH_WINDOW, Ledger, read_ledger, write_ledger
from ..vault.logformat import parse_log
from ..vault.newturns import NewTurn, validate_turn
from ..vault.rawlogs import log_texts
from ..vault.recalled import RECALL_TOOLS, RECALLED_RESULT, strip_recalled, unwrapped_tool
from ..vault.scopes import PARTICIPANT, parse_session_key
from ..vault.scrub import FORGOTTEN, forgotten_turn
from ..vault.timestamps import utc_iso
from .openclaw_store import StoredSession
from .parsers import session_turns

if TYPE_CHECKING:
    from ..api import Vault
    from ..vault.tombstones import Tombstones
    from .workspace import ImportReport

# A tool's text is known by this many of its first characters, spacing left out: the plugin
# logs at most 4000 characters of it (then "… [N more chars]"), OpenClaw's transcript all.
TOOL_KEY_CHARS = 1000
_TOOL_ROLES = ("tool_call", "tool_result")
_TICK = timedelta(seconds=1)  # stamps are whole seconds
_PLUGIN_CLIP_RE = re.compile(r" … \[\d+ more chars\]\Z")

Said = tuple[str, str, str]  # (session key, speaker, text): a turn by what was said
_K = TypeVar("_K")


def _redact(text: str, previous: Sequence[str]) -> str:
    from ..vault.redact import redact  # its patterns take a while to compile: only when needed

    return redact(text, previous)


def _speaker(role: str) -> str:
    """The speaker a role stands for in both writers: a group's ``participant`` is OpenClaw's
    ``user``, an OpenAI-style ``tool`` a ``tool_result``."""
    return {PARTICIPANT: "user", "tool": "tool_result"}.get(role, role)


def turn_identity(
    role: str,
    content: str,
    tool: str | None = None,
    previous: Sequence[str] = (),
    forgotten: Tombstones | None = None,
) -> tuple[str, str]:
    """(speaker, text) by which a turn logged by memoryclaw's OpenClaw plugin and the same
    turn in OpenClaw's transcript are one: what a log holds of it, whichever wrote it.

    The text is the turn's without recalled ``<memoryclaw>`` blocks, redacted (``previous``:
    the turns said just before, for a password given in the next message), spacing
    collapsed; a blanked turn, or one that ``forgotten`` matches (it is written blanked), is
    ``[forgotten]``.  A tool call's arguments are compared as
    compact JSON, without OpenClaw's ``tool_call`` wrapper, and a tool's text by its first
    :data:`TOOL_KEY_CHARS` characters, spacing left out (the plugin clips it); memory's own
    tools' results (``memory_search``, ``memory_get``) are not stored, so they are one."""
    speaker = _speaker(role)
    if content == FORGOTTEN:
        return speaker, FORGOTTEN
    text = strip_recalled(content)
    if forgotten and forgotten_turn(_redact(text, previous), forgotten):
        return speaker, FORGOTTEN
    if speaker not in _TOOL_ROLES:
        return speaker, " ".join(_redact(text, previous).split())
    clipped = _PLUGIN_CLIP_RE.search(text)
    text = text[: clipped.start()] if clipped else text
    text, tool = unwrapped_tool(speaker, text, tool, whole=clipped is None)
    if speaker == "tool_result" and tool in RECALL_TOOLS:
        return speaker, RECALLED_RESULT
    if speaker == "tool_call":
        with suppress(ValueError, RecursionError):  # clipped, or not JSON: as written
            text = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    return speaker, "".join(_redact(text, previous).split())[:TOOL_KEY_CHARS]


def logged_positions(
    incoming: Sequence[tuple[_K, datetime]],
    logged: Sequence[tuple[_K, datetime]],
    window: timedelta = MATCH_WINDOW,
) -> set[int]:
    """The positions in ``incoming`` of the turns ``logged`` holds already.

    A logged turn with the same key, stamped within ``window``, stands for one incoming turn:
    as many as can be paired are (a turn said twice and logged once is found once), and of
    the pairings that many, the one whose stamps are nearest."""
    groups: dict[_K, tuple[list[tuple[datetime, int]], list[datetime]]] = {}
    for position, (key, moment) in enumerate(incoming):
        groups.setdefault(key, ([], []))[0].append((moment, position))
    for key, moment in logged:
        if key in groups:
            groups[key][1].append(moment)
    found: set[int] = set()
    for turns, stamps in groups.values():
        for block, times in _apart(sorted(turns), sorted(stamps), window):
            found |= {block[n][1] for n in _paired([t for t, _ in block], times, window)}
    return found


def _apart(
    turns: list[tuple[datetime, int]], stamps: list[datetime], window: timedelta
) -> Iterator[tuple[list[tuple[datetime, int]], list[datetime]]]:
    """The (sorted) turns and stamps in blocks cut where nothing happens for longer than
    ``window``: a turn pairs only with a stamp of its own block."""
    block: list[tuple[datetime, int]] = []
    times: list[datetime] = []
    last: datetime | None = None
    events = [(t, (t, p)) for t, p in turns] + [(t, None) for t in stamps]
    for moment, turn in sorted(events, key=lambda event: event[0]):
        if last is not None and moment - last > window:
            if block and times:
                yield block, times
            block, times = [], []
        if turn is None:
            times.append(moment)
        else:
            block.append(turn)
        last = moment
    if block and times:
        yield block, times


def _paired(turns: Sequence[datetime], stamps: Sequence[datetime], window: timedelta) -> list[int]:
    """The indexes of ``turns`` in a largest pairing with ``stamps`` (both sorted; a pair no
    further apart than ``window``), the nearest such: pairs in time order (one that crosses
    another is never better), found by dynamic programming over both."""
    limit = window // _TICK
    # best[i][j]: (pairs, -total gap) of turns[:i] with stamps[:j]
    best = [[(0, 0)] * (len(stamps) + 1) for _ in range(len(turns) + 1)]
    for i, turn in enumerate(turns, start=1):
        row, above = best[i], best[i - 1]
        for j, stamp in enumerate(stamps, start=1):
            value = max(above[j], row[j - 1])
            gap = abs(turn - stamp) // _TICK
            if gap <= limit:
                pairs, gaps = above[j - 1]
                value = max(value, (pairs + 1, gaps - gap))
            row[j] = value
    found, i, j = [], len(turns), len(stamps)
    while i and j:
        if best[i][j] == best[i - 1][j]:
            i -= 1
        elif best[i][j] == best[i][j - 1]:
            j -= 1
        else:
            found.append(i - 1)
            i, j = i - 1, j - 1
    return found


def _channel(key: str) -> str:
    """The channel a session key names (``agent:main:telegram:group:1`` -> telegram)."""
    rest = (parse_session_key(key).conversation or "").split(":")
    if len(rest) >= 3 and rest[1] in ("group", "channel", "dm", "room", "direct"):
        return rest[0]
    return "openclaw"


def _logged_turns(root: Path, keys: Mapping[str, str]) -> list[tuple[Said, datetime]]:
    """Every turn the vault's raw logs (open and processed) hold of these sessions (``keys``:
    each session's key as a log has it, redacted, to its key): what memoryclaw's OpenClaw
    plugin logged as the turns happened, or an earlier import."""
    found: list[tuple[Said, datetime]] = []
    for folder in (LOGS_DIR, PROCESSED_DIR):
        for rel, text in log_texts(root, folder):
            if not any(key in text for key in keys):
                continue  # cheap: most logs are of other sessions
            try:
                log = parse_log(text, rel)
            except ParseError:
                continue
            session = keys.get(log.session or "")
            if session is None:
                continue
            said = [turn.content for turn in log.turns]
            for n, turn in enumerate(log.turns):
                previous = said[max(0, n - 2) : n]
                speaker, words = turn_identity(turn.role, turn.content, turn.tool, previous)
                found.append(((session, speaker, words), turn.timestamp))
    return found


def _pruned(ledger: Ledger, session: str, moment: datetime) -> bool:
    """Whether ``moment`` is in a span of the session's deleted logs (or within the window)."""
    return any(
        first - MATCH_WINDOW <= moment <= last + MATCH_WINDOW
        for first, last in ledger.pruned.get(session, ())
    )


@dataclass
class _Candidate:
    """A transcript turn newer than the ledger's time for its session."""

    session: StoredSession
    turn: NewTurn
    event_id: str
    said: Said


def _candidates(
    session: StoredSession,
    after: datetime | None,
    since: datetime | None,
    stones: Tombstones,
    report: ImportReport,
) -> list[_Candidate]:
    """The session's turns newer than ``after`` and ``since``, each with what it says
    (:func:`turn_identity`); those up to ``after`` are counted as known."""
    out: list[_Candidate] = []
    said: list[str] = []  # the last two turns' texts, for a password given after "it is"
    channel = _channel(session.key)
    for _, event in session.events:
        for turn in session_turns(event):
            previous, said = said[-2:], [*said[-1:], turn.content]
            if since is not None and turn.timestamp < since:
                continue
            if after is not None and turn.timestamp <= after:
                report.known_turns += 1
                continue
            new = NewTurn(
                session.key,
                turn.role,
                turn.content,
                turn.timestamp,
                channel=channel,
                tool=turn.tool,
                agent=session.agent,
                sender=turn.sender,
            )
            speaker, words = turn_identity(turn.role, turn.content, turn.tool, previous, stones)
            out.append(_Candidate(session, new, turn.event_id, (session.key, speaker, words)))
    return out


def _records(
    candidates: Sequence[_Candidate], known: set[int], report: ImportReport
) -> tuple[list[dict[str, Any]], dict[str, datetime]]:
    """The ingest records of the candidates not ``known`` (logged already), and per session
    the time of the last turn imported or found logged (what the ledger records: a turn
    with a broken clock is no watermark).  A turn that could not be logged (a clock far off)
    is reported and left out, so it cannot stop the others."""
    records: list[dict[str, Any]] = []
    last: dict[str, datetime] = {}
    for position, candidate in enumerate(candidates):
        new, mark = candidate.turn, _mark(candidate.session)
        if position in known:
            report.known_turns += 1
        else:
            try:
                validate_turn(new, source=candidate.session.origin)
            except InvalidInputError as exc:
                report.skipped.append(f"{new.session} event {candidate.event_id}: {exc}")
                continue
            record = {k: v for k, v in asdict(new).items() if v is not None}
            records.append({**record, "timestamp": utc_iso(new.timestamp)})
        if mark not in last or new.timestamp > last[mark]:
            last[mark] = new.timestamp
    return records, last


def _mark(session: StoredSession) -> str:
    """The ledger's name of a session, ``<agent>/<session id>``, redacted (the ledger is
    committed like any memory file)."""
    from ..vault.redact import redact

    return redact(f"{session.agent}/{session.session_id}")


def import_sessions(
    vault: Vault, found: Sequence[StoredSession], since: datetime | None, report: ImportReport
) -> None:
    """Log the new turns of ``found`` (see the module docstring) and record them in the
    ledger; on a dry run, only count them in ``report``."""
    with file_lock(vault.root, "imports"):
        ledger = read_ledger(vault.root)
        candidates: list[_Candidate] = []
        for session in found:
            report.unreadable_events += session.unreadable
            after = ledger.sessions.get(_mark(session))
            candidates += _candidates(session, after, since, report.stones, report)
        keys = {_redacted_key(c.session.key): c.session.key for c in candidates}
        logged = _logged_turns(vault.root, keys) if keys else []
        known = logged_positions([(c.said, c.turn.timestamp) for c in candidates], logged)
        known |= {
            n
            for n, c in enumerate(candidates)
            if _pruned(ledger, _redacted_key(c.session.key), c.turn.timestamp)
        }
        records, last = _records(candidates, known, report)
        report.turns += len(records)
        report.sessions += len({r["session"] for r in records})
        changed = False
        for mark, moment in last.items():
            if mark not in ledger.sessions or moment > ledger.sessions[mark]:
                ledger.sessions[mark], changed = moment, True
        if report.dry_run:
            return
        if records:
            ingested = vault.ingest(records, source="openclaw transcripts")
            report.turns -= ingested.forgotten  # written blanked: not added
            report.forgotten += ingested.forgotten
            for rel in ingested.logs:
                report.wrote(rel)
        if changed:
            write_ledger(vault.root, ledger)
            report.wrote(LEDGER_FILE)


def _redacted_key(key: str) -> str:
    """A session key as a log's frontmatter has it (redacted when written)."""
    return _redact(key, ())
