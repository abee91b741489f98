"""The import ledger, ``logs/imported.yaml``: what an OpenClaw import has brought in.

Per OpenClaw session (``<agent>/<session id>``) it keeps the time of the last turn imported
or found logged (:mod:`memoryclaw.importers.transcripts` brings only later turns), and per
session key the first/last time of the turns of each log deleted after
``consolidation.logRetentionDays`` (``pruned``, :func:`record_pruned`, called by the
consolidation that deletes them), so an import still knows those turns were logged.  It is a
file of the vault, committed with the logs in a git vault.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from ..errors import ParseError
from .files import LOGS_DIR, atomic_write, file_lock, read_text, resolve_inside
from .logformat import RawLog
from .scopes import parse_session_key
from .timestamps import utc_iso

LEDGER_FILE = f"{LOGS_DIR}/imported.yaml"
LEDGER_HEADER = (
    "# What `memoryclaw openclaw import` brought in: per OpenClaw session (agent/session id),\n"
    "# the time of the last turn imported or found logged. Remove an entry to import that\n"
    "# session again.\n"
    "# pruned: per session key, the first/last time of the turns of logs deleted after\n"
    "# logRetentionDays; an import takes a turn in such a span as logged already.\n"
)
# How far apart the plugin's and OpenClaw's stamps of one turn may be: the plugin stamps a
# turn when the agent's run ends (a run with tools may take minutes), OpenClaw when the
# message came in.  Wider would take a turn said again an hour later for the one logged.
MATCH_WINDOW = timedelta(hours=1)


@dataclass
class Ledger:
    """``logs/imported.yaml``: per session (``agent/session id``) the last turn imported or
    found logged, and per session key the spans of deleted logs' turns."""

    sessions: dict[str, datetime] = field(default_factory=dict)
    pruned: dict[str, list[tuple[datetime, datetime]]] = field(default_factory=dict)


def _time(value: Any, where: str) -> datetime:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        problem = f"{where}: {value!r} is not an ISO time (delete the line to re-import)"
        raise ParseError(LEDGER_FILE, problem) from None


def read_ledger(root: Path) -> Ledger:
    """The ledger as written, empty when there is none; a broken one is a :class:`ParseError`
    naming it."""
    path = root / LEDGER_FILE
    if not path.is_file():
        return Ledger()
    try:
        value = yaml.safe_load(read_text(root, LEDGER_FILE)) or {}
    except yaml.YAMLError as exc:
        raise ParseError(LEDGER_FILE, f"not YAML: {exc}") from None
    value = value if isinstance(value, dict) else {}
    section, pruned = value.get("openclaw") or {}, value.get("pruned") or {}
    if not isinstance(section, dict):
        raise ParseError(LEDGER_FILE, "openclaw: expected a mapping of session to time")
    if not isinstance(pruned, dict):
        raise ParseError(LEDGER_FILE, "pruned: expected a mapping of session key to spans")
    ledger = Ledger({str(k): _time(v, f"openclaw: {k}") for k, v in section.items()})
    for key, spans in pruned.items():
        where = f"pruned: {key}"
        if not isinstance(spans, list) or not all(
            isinstance(span, str) and span.count("/") == 1 for span in spans
        ):
            raise ParseError(LEDGER_FILE, f"{where}: expected a list of first/last times")
        ledger.pruned[str(key)] = [
            (_time(first, where), _time(last, where))
            for first, last in (span.split("/") for span in spans)
        ]
    return ledger


def write_ledger(root: Path, ledger: Ledger) -> None:
    """Write the ledger whole (under the ``logs`` lock, which a sweep of ``logs/`` takes)."""
    document: dict[str, Any] = {
        "openclaw": {key: moment.isoformat() for key, moment in sorted(ledger.sessions.items())}
    }
    if ledger.pruned:
        document["pruned"] = {
            key: [f"{utc_iso(first)}/{utc_iso(last)}" for first, last in spans]
            for key, spans in sorted(ledger.pruned.items())
        }
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    with file_lock(root, "logs"):  # logs/ is swept under this lock
        atomic_write(resolve_inside(root, LEDGER_FILE), LEDGER_HEADER + body)


def record_pruned(root: Path, logs: Iterable[RawLog]) -> None:
    """Add to the ledger the span of each OpenClaw session's turns in ``logs``, which are
    about to be deleted (``logRetentionDays``), so an import still knows those turns were
    logged."""
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    for log in logs:
        session = log.session
        if not log.turns or session is None or parse_session_key(session).agent is None:
            continue  # only an OpenClaw session (agent:<id>:...) has a transcript to import
        times = [turn.timestamp for turn in log.turns]
        spans.setdefault(session, []).append((min(times), max(times)))
    if not spans:
        return
    with file_lock(root, "imports"):
        ledger = read_ledger(root)
        for session, found in spans.items():
            ledger.pruned[session] = _merged([*ledger.pruned.get(session, []), *found])
        write_ledger(root, ledger)


def _merged(spans: Sequence[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """The spans, those that overlap or lie within the match window of each other as one."""
    out: list[tuple[datetime, datetime]] = []
    for first, last in sorted(spans):
        if out and first - out[-1][1] <= MATCH_WINDOW:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out
