"""Ingest a file of turns in bounded memory, and so that a killed run can simply be re-run.

Two passes over the file, neither holding more than one batch of turns:

* the first reads every line and checks it as a turn (or a chat of turns) — if any line is
  bad, nothing is written, as the README promises — and computes the file's digest;
* the second reads it again and appends its turns to their sessions' logs in batches of at
  most :data:`BATCH_TURNS` turns and :data:`BATCH_CHARS` characters, each batch under the
  ``logs`` lock (so live sessions go on logging between them), then closes those sessions'
  logs.  One run of a file at a time: a lock named by the file's digest.

Every log written records, in the same atomic write as the turns, the position in the file
(line, turn of that line) of the last of its turns that came from it (frontmatter
``ingested: {<digest>: [line, turn]}``).  A run killed at any moment and run again skips
each turn a log already holds and appends the rest: it neither duplicates nor loses turns,
and a file ingested whole adds nothing when ingested again.  Standard input (or any stream
that cannot be read twice) is first copied to a temporary file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInputError, ParseError
from ..vault.config import Settings
from ..vault.files import LOGS_DIR, PROCESSED_DIR, file_lock, sweep_temp_files
from ..vault.frontmatter import split_frontmatter
from ..vault.inputs import MAX_LINE_BYTES, bounded_lines, parse_json_line
from ..vault.newturns import NewTurn
from ..vault.rawlogs import MARKS_KEY, Mark, OpenLogs, append_turns, log_texts
from ..vault.scrub import FORGOTTEN

BATCH_TURNS = 5000
BATCH_CHARS = 8 * 1024 * 1024
# Texts of open logs kept between batches: beyond this they are let go and read back.
HELD_CHARS = 32 * 1024 * 1024
_KEY_CHARS = 16  # of the digest: the key of a file's marks in the logs it went to

# One record (a JSON object) and its line: the turns it stands for, each checked as the
# vault will store it when the flag is set (the first pass; the writer checks them again).
ToTurns = Callable[[Mapping[str, Any], int, bool], list[NewTurn]]
_Records = Iterator[tuple[int, dict[str, Any]]]


@dataclass
class Ingested:
    """What the writing pass did: turns appended, turns found already written (a re-run),
    the logs appended to (or closed) and the sessions appended to, in order."""

    turns: int = 0
    known: int = 0
    forgotten: int = 0  # turns written blanked: they were forgotten
    logs: dict[str, None] = field(default_factory=dict)
    sessions: dict[str, None] = field(default_factory=dict)


def ingest_stream(
    root: Path,
    settings: Settings,
    handle: IO[bytes],
    source: str,
    to_turns: ToTurns,
    *,
    document: bool = False,
) -> Ingested:
    """Ingest the JSON lines of ``handle`` (a JSON ``document``: one object or a list of
    them) as the module docstring says; ``source`` names it in errors."""
    if not handle.seekable():
        with tempfile.TemporaryFile() as spooled:
            shutil.copyfileobj(handle, spooled, 1024 * 1024)
            spooled.seek(0)
            return ingest_stream(root, settings, spooled, source, to_turns, document=document)
    start, before = handle.tell(), _identity(handle)
    digest = hashlib.sha256()
    for number, record in _records(handle, source, document, digest):
        to_turns(record, number, True)  # checked, then let go
    if _identity(handle) != before:
        raise InvalidInputError("file", "changed while it was being read", source=source)
    handle.seek(start)
    key = digest.hexdigest()[:_KEY_CHARS]
    with file_lock(root, f"ingest-{key}"):  # two runs of one file would both write it
        return _write(root, settings, _records(handle, source, document, None), key, to_turns)


def _identity(handle: IO[bytes]) -> tuple[int, int] | None:
    try:
        stat = os.fstat(handle.fileno())
    except (OSError, ValueError):  # not a file (an in-memory stream): cannot change under us
        return None
    return (stat.st_size, stat.st_mtime_ns)


def _write(
    root: Path, settings: Settings, records: _Records, key: str, to_turns: ToTurns
) -> Ingested:
    with file_lock(root, "logs"):
        sweep_temp_files(root / LOGS_DIR)  # what a killed run's last write left
        done = written_marks(root, key)
        logs = OpenLogs(root)
    out = Ingested()
    batch: list[NewTurn] = []
    marks: list[Mark] = []
    chars = 0
    met: dict[str, None] = {}  # every session of the file, whose open log is closed at the end

    def flush() -> None:
        nonlocal chars
        if batch:
            with file_lock(root, "logs"):
                logs.refresh()
                for logged in append_turns(root, settings, batch, logs=logs, marks=marks):
                    out.logs[logged.path] = None
                    out.sessions[logged.session] = None
                    out.forgotten += logged.entry is not None and logged.entry.content == FORGOTTEN
                logs.release(HELD_CHARS)
                logs.settle()
            out.turns += len(batch)
        batch.clear()
        marks.clear()
        chars = 0

    for number, record in records:
        for index, turn in enumerate(to_turns(record, number, False)):
            met[turn.session] = None
            if done.get(turn.session, (0, -1)) >= (number, index):
                out.known += 1  # written by an earlier run of this file
                continue
            batch.append(turn)
            marks.append((key, number, index))
            chars += len(turn.content)
        if len(batch) >= BATCH_TURNS or chars >= BATCH_CHARS:
            flush()
    flush()
    with file_lock(root, "logs"):
        logs.refresh()
        for rel in logs.close(list(met)):
            out.logs[rel] = None
    return out


def written_marks(root: Path, key: str) -> dict[str, tuple[int, int]]:
    """Session -> the position of the last turn of the file ``key`` its logs hold."""
    found: dict[str, tuple[int, int]] = {}
    # consolidated logs keep their marks (until they expire): those turns are written too
    for rel, text in chain(log_texts(root), log_texts(root, PROCESSED_DIR)):
        try:
            meta = split_frontmatter(text, rel)[0]
        except ParseError:
            continue  # a broken log is reported by doctor
        marks, session = meta.get(MARKS_KEY), meta.get("session")
        position = _position(marks.get(key) if isinstance(marks, dict) else None)
        if isinstance(session, str) and position is not None:
            found[session] = max(found.get(session, position), position)
    return found


def _position(value: Any) -> tuple[int, int] | None:
    """A mark's ``[line, turn]``; None for anything else (a hand-edited log)."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    line, index = value
    if any(not isinstance(n, int) or isinstance(n, bool) for n in (line, index)):
        return None
    return (line, index)


def _records(handle: IO[bytes], source: str, document: bool, digest: Any | None) -> _Records:
    """The JSON objects of ``handle`` with their line (a document's: their position)."""
    if document:
        data = handle.read(MAX_LINE_BYTES + 1)
        if digest is not None:
            digest.update(data)
        yield from json_records(data, source)
        return
    for number, line in enumerate(bounded_lines(handle), start=1):
        if line is None:
            problem = f"over {MAX_LINE_BYTES} bytes"
            raise InvalidInputError("line", problem, source=source, line=number)
        if digest is not None:
            digest.update(line)
        if not line.strip():
            continue
        try:
            record = parse_json_line(line)
        except InvalidInputError as exc:
            raise InvalidInputError(exc.field, exc.problem, source=source, line=number) from None
        if not isinstance(record, dict):
            raise InvalidInputError("line", "expected a JSON object", source=source, line=number)
        yield number, record


def json_records(data: bytes, source: str) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a JSON document: the one it holds, or each of the list it holds."""
    if len(data) > MAX_LINE_BYTES:
        raise InvalidInputError("file", f"over {MAX_LINE_BYTES} bytes", source=source)
    try:
        value = parse_json_line(data)
    except InvalidInputError as exc:
        raise InvalidInputError("file", exc.problem, source=source) from None
    values = value if isinstance(value, list) else [value]
    for number, item in enumerate(values, start=1):
        if not isinstance(item, dict):
            raise InvalidInputError("record", "expected a JSON object", source=source, line=number)
    return list(enumerate(values, start=1))
