"""OpenClaw session transcripts into raw logs, each turn once.

A transcript's turns are logged with their own times, session key, agent, channel and
speakers (:func:`memoryclaw.importers.session_turns`), all sessions in one ``ingest``, so a bad
turn stops nothing: it is checked first, and reported and left out.  Which turns are in:

* ``logs/imported.yaml`` (the ledger; committed with the logs in a git vault) records per
  session (``<agent>/<session id>``) the time of the last turn imported; a later import brings
  only later turns;
* a session not in the ledger may have been logged as it happened by memoryclaw's OpenClaw
  plugin: a turn of the same session at the same second in ``logs/`` or ``logs/processed/``
  is that turn, and is not logged again.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .errors import InvalidInputError, ParseError
from .importers import session_turns
from .notes import parse_log, utc_iso
from .openclaw_store import StoredSession
from .scopes import parse_session_key
from .transcripts import NewTurn, log_texts, validate_turn
from .vault import LOGS_DIR, PROCESSED_DIR, atomic_write, file_lock, read_text, resolve_inside

if TYPE_CHECKING:
    from .api import Vault
    from .importing import ImportReport

LEDGER_FILE = f"{LOGS_DIR}/imported.yaml"
LEDGER_HEADER = (
    "# What `memoryclaw openclaw import` brought in: per OpenClaw session (agent/session id),\n"
    "# the time of the last turn imported. Remove an entry to import that session again.\n"
)


def _read_ledger(root: Path) -> dict[str, datetime]:
    path = root / LEDGER_FILE
    if not path.is_file():
        return {}
    try:
        value = yaml.safe_load(read_text(root, LEDGER_FILE)) or {}
    except yaml.YAMLError as exc:
        raise ParseError(LEDGER_FILE, f"not YAML: {exc}") from None
    section = value.get("openclaw") if isinstance(value, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ParseError(LEDGER_FILE, "openclaw: expected a mapping of session to time")
    ledger = {}
    for key, value in section.items():
        try:
            ledger[str(key)] = datetime.fromisoformat(str(value))
        except ValueError:
            problem = (
                f"openclaw: {key}: {value!r} is not an ISO time (delete the line to re-import)"
            )
            raise ParseError(LEDGER_FILE, problem) from None
    return ledger


def _write_ledger(root: Path, ledger: dict[str, datetime]) -> None:
    times = {key: moment.isoformat() for key, moment in sorted(ledger.items())}
    body = yaml.safe_dump({"openclaw": times}, sort_keys=False)
    with file_lock(root, "logs"):  # logs/ is swept under this lock
        atomic_write(resolve_inside(root, LEDGER_FILE), LEDGER_HEADER + body)


def _channel(key: str) -> str:
    """The channel a session key names (``agent:main:telegram:group:1`` -> telegram)."""
    rest = (parse_session_key(key).conversation or "").split(":")
    if len(rest) >= 3 and rest[1] in ("group", "channel", "dm", "room", "direct"):
        return rest[0]
    return "openclaw"


def _logged_times(root: Path, keys: Collection[str]) -> set[tuple[str, str]]:
    """(session key, second) of every turn the vault's raw logs (open and processed) hold for
    these sessions: what memoryclaw's OpenClaw plugin logged as the turns happened."""
    found: set[tuple[str, str]] = set()
    for folder in (LOGS_DIR, PROCESSED_DIR):
        for rel, text in log_texts(root, folder):
            if not any(key in text for key in keys):
                continue  # cheap: most logs are of other sessions
            try:
                log = parse_log(text, rel)
            except ParseError:
                continue
            session = log.session
            if session is not None and session in keys:
                found |= {(session, utc_iso(turn.timestamp)) for turn in log.turns}
    return found


def _session_records(
    session: StoredSession,
    after: datetime | None,
    since: datetime | None,
    logged: set[tuple[str, str]],
    report: ImportReport,
) -> tuple[list[dict[str, Any]], datetime | None]:
    """The ingest records of a session's turns newer than ``after`` and ``since`` and not
    logged already, and the time of the last turn imported or found logged (what the ledger
    records: a turn with a broken clock is no watermark).  A turn that could not
    be logged (a clock far off) is reported and left out, so it cannot stop the others."""
    records: list[dict[str, Any]] = []
    last: datetime | None = None
    channel = _channel(session.key)
    for _, event in session.events:
        for turn in session_turns(event):
            if since is not None and turn.timestamp < since:
                continue
            stamp = utc_iso(turn.timestamp)
            if (after is not None and turn.timestamp <= after) or (session.key, stamp) in logged:
                report.known_turns += 1
                last = turn.timestamp if last is None or turn.timestamp > last else last
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
            try:
                validate_turn(new, source=session.origin)
            except InvalidInputError as exc:
                report.skipped.append(f"{session.key} event {turn.event_id}: {exc}")
                continue
            record = {k: v for k, v in asdict(new).items() if v is not None}
            records.append({**record, "timestamp": stamp})
            last = turn.timestamp if last is None or turn.timestamp > last else last
    return records, last


def _mark(session: StoredSession) -> str:
    """The ledger's name of a session, ``<agent>/<session id>``, redacted (the ledger is
    committed like any memory file)."""
    from .redact import redact

    return redact(f"{session.agent}/{session.session_id}")


def import_sessions(
    vault: Vault, found: Sequence[StoredSession], since: datetime | None, report: ImportReport
) -> None:
    """Log the new turns of ``found`` (see the module docstring) and record them in the
    ledger; on a dry run, only count them in ``report``."""
    with file_lock(vault.root, "imports"):
        ledger = _read_ledger(vault.root)
        fresh = {s.key for s in found if _mark(s) not in ledger}
        logged = _logged_times(vault.root, fresh) if fresh else set()
        records: list[dict[str, Any]] = []
        for session in found:
            report.unreadable_events += session.unreadable
            mark = _mark(session)
            after = ledger.get(mark)
            new, last = _session_records(session, after, since, logged, report)
            if new:
                report.sessions += 1
                report.turns += len(new)
                records += new
            if last is not None and (after is None or last > after):
                ledger[mark] = last
        if records and not report.dry_run:
            ingested = vault.ingest(records, source="openclaw transcripts")
            report.turns -= ingested.forgotten  # written blanked: not added
            report.forgotten += ingested.forgotten
            for rel in ingested.logs:
                report.wrote(rel)
        if not report.dry_run and records:
            _write_ledger(vault.root, ledger)
            report.wrote(LEDGER_FILE)
