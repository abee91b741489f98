"""Recall times: when each episode was last recalled, and since when recalls are noted.

A ``retrieve`` notes the episodes its payload quoted or named (:func:`recalled_ids`,
:func:`note_recalled`); archiving (:mod:`memoryclaw.consolidate.archive`) reads the times to
tell an unused episode from one in use, and recency ranking (:mod:`.recency`) reads those of
its candidates.

A recall appends one line a noted episode to ``.memoryclaw/recall.log`` (under the ``recall``
lock, never synced: a power cut may lose the last few recall times, never a vault file), so
it costs the same with none noted or a hundred thousand.  The log is folded into the index
(table ``recalls``, one row an episode, upserted; :func:`fold_recalls`) by whoever reads all
the times (archiving, the copy below) and by the recall that finds it past
:data:`FOLD_BYTES`: writing the index on every recall would sync it on every process exit
(SQLite checkpoints its WAL when the last connection closes).  Because no vault file holds the
times, a rebuild for a new schema carries them over (:mod:`memoryclaw.index.schema`), and
``.memoryclaw/recall.json`` keeps a durable copy, written whole (:func:`keep_recalls`) by each
archive run, by the daemon after each consolidation and before ``reindex --full``; an index
that has none adopts that copy first (:func:`adopt_recalls`), which is also how a vault noted
by an older version carries on.  Lost with both, noting starts over: every episode counts as
used at that moment.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LockTimeoutError, warn
from ..vault.files import STATE_DIR, atomic_write, file_lock, open_private
from ..vault.inputs import MAX_STATE_BYTES, read_state_json
from ..vault.timestamps import parse_timestamp, utc_iso

if TYPE_CHECKING:
    from ..index.store import Index

RECALL_FILE = f"{STATE_DIR}/recall.json"
RECALL_LOG = f"{STATE_DIR}/recall.log"
# The recall log is folded into the index when a recall finds it this long (about 1,500
# notes): reading it stays cheap for recency ranking, and folding (which syncs the index
# when the process exits) happens once in that many notes.
FOLD_BYTES = 64 * 1024
# A retrieve waits at most this long to note its recalls: the hook must stay fast, and a
# recall not noted only makes an episode look unused a little earlier than it was.
RECALL_LOCK_SECONDS = 1.0


@dataclass
class RecallLog:
    """When each episode was last recalled, and since when recalls are noted."""

    since: datetime
    last: dict[str, datetime] = field(default_factory=dict)

    def last_used(self, ident: str) -> datetime:
        """The episode's last recall, or the start of noting when none was noted."""
        return max(self.since, self.last.get(ident, self.since))

    def to_json(self) -> str:
        """The file's text."""
        doc = {
            "since": utc_iso(self.since),
            "episodes": {k: utc_iso(v) for k, v in sorted(self.last.items())},
        }
        return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def read_snapshot(root: Path) -> RecallLog | None:
    """The copy in ``recall.json``; None when it is missing or unreadable."""
    doc = read_state_json(root / RECALL_FILE)  # bounded: a huge or deep file starts over
    try:
        if not isinstance(doc, dict) or not isinstance(doc.get("episodes"), dict):
            return None
        since = parse_timestamp(doc["since"])
        last = {str(k): parse_timestamp(v) for k, v in doc["episodes"].items()}
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
        return None
    return RecallLog(since, last)


def save_recalls(root: Path, recalls: RecallLog) -> None:
    """Write ``recalls`` to ``recall.json``, atomically and durably."""
    atomic_write(root / RECALL_FILE, recalls.to_json())


def adopt_recalls(root: Path, index: Index) -> bool:
    """Take ``recall.json`` into an index that notes no recalls yet; whether the index notes
    recalls now.  One look-up when it does."""
    if index.recalls_since() is not None:
        return True
    copy = read_snapshot(root)
    if copy is None:
        return False
    times = [(ident, moment.timestamp()) for ident, moment in copy.last.items()]
    index.note_recalls(times, utc_iso(copy.since), RECALL_LOCK_SECONDS)
    return True


def load_recalls(root: Path, index: Index) -> RecallLog | None:
    """Every recall time (``recall.json`` adopted and the recall log folded into the index
    first); None when recalls are not noted yet."""
    fold_recalls(root, index)
    since = index.recalls_since()
    if since is None:
        return None
    last = {i: _moment(ts) for i, ts in index.recall_times().items()}
    return RecallLog(parse_timestamp(since), last)


def fold_recalls(root: Path, index: Index) -> None:
    """Move the recall log's notes into the index (``recall.json`` adopted first)."""
    with file_lock(root, "recall", timeout=RECALL_LOCK_SECONDS):
        _fold_locked(root, index)


def _fold_locked(root: Path, index: Index) -> None:
    adopt_recalls(root, index)
    pending, first = _read_log(root)
    if first is not None:  # noting began with the log's first note, unless it began before
        index.note_recalls(sorted(pending.items()), utc_iso(_moment(first)), RECALL_LOCK_SECONDS)
    with suppress(FileNotFoundError):  # folded twice after a crash here: the later time wins
        os.truncate(root / RECALL_LOG, 0)


def _read_log(root: Path) -> tuple[dict[str, float], float | None]:
    """The recall log's notes (episode id -> its latest time noted there) and its earliest."""
    try:
        with open(root / RECALL_LOG, "rb") as handle:
            data = handle.read(MAX_STATE_BYTES)  # bounded: a hand-made huge log is cut
    except FileNotFoundError:
        return {}, None
    out: dict[str, float] = {}
    first: float | None = None
    for line in data.splitlines():
        try:
            ts, ident = json.loads(line)
        except (ValueError, TypeError, RecursionError):
            continue  # a line cut by a crash, or not ours
        if isinstance(ident, str) and isinstance(ts, (int, float)) and math.isfinite(ts):
            out[ident] = max(float(ts), out.get(ident, float(ts)))
            first = float(ts) if first is None else min(first, float(ts))
    return out, first


def keep_recalls(root: Path, index: Index) -> bool:
    """Write the index's recall times to ``recall.json``, the copy a new index adopts; False,
    and a logged warning, when they could not be read or written."""
    try:
        recalls = load_recalls(root, index)
        if recalls is not None:
            save_recalls(root, recalls)
    except (sqlite3.Error, OSError, LockTimeoutError) as exc:
        warn("memoryclaw.metrics", "%s not written: %s", RECALL_FILE, exc)
        return False
    return True


def note_recalled(root: Path, index: Index, idents: Iterable[str], now: datetime) -> bool:
    """Record that these episodes were recalled at ``now`` (later recalls are kept); False,
    and a logged warning, when that could not be done in time (never fails a recall)."""
    lines = "".join(json.dumps([now.timestamp(), i]) + "\n" for i in sorted(set(idents)))
    try:
        with file_lock(root, "recall", timeout=RECALL_LOCK_SECONDS):
            fd = open_private(root / RECALL_LOG, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, lines.encode("utf-8"))
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            # the first note goes straight in, so a recall.json is adopted (or, unreadable,
            # given up: noting starts over) once, not looked at by every recall after
            if size > FOLD_BYTES or index.recalls_since() is None:
                _fold_locked(root, index)
    except (OSError, LockTimeoutError, sqlite3.Error) as exc:
        warn(
            "memoryclaw.metrics",
            "recall not noted (archiving may count its episodes unused): %s",
            exc,
        )
        return False
    return True


def start_noting(root: Path, index: Index, now: datetime) -> RecallLog:
    """The recall times, noting started (from ``now``) when it was not."""
    recalls = load_recalls(root, index)
    if recalls is None:
        index.note_recalls([], utc_iso(now), RECALL_LOCK_SECONDS)
        recalls = RecallLog(parse_timestamp(index.recalls_since()))
    return recalls


class RecallTimes(Mapping[str, datetime]):
    """The last recall of an episode id: the recall log's notes, else the index's, looked up
    when asked (recency ranking asks for its candidates only)."""

    def __init__(self, index: Index, pending: Mapping[str, float]) -> None:
        self._index = index
        self._pending = pending

    def __getitem__(self, ident: str) -> datetime:
        found = self._index.recall_times([ident])
        times = [t for t in (found.get(ident), self._pending.get(ident)) if t is not None]
        if not times:
            raise KeyError(ident)
        return _moment(max(times))

    def __iter__(self) -> Iterator[str]:
        return iter(self._index.recall_times().keys() | self._pending.keys())

    def __len__(self) -> int:
        return len(self._index.recall_times().keys() | self._pending.keys())


def recall_times(root: Path, index: Index) -> Mapping[str, datetime]:
    """The recall times recency ranks by (``recall.json`` adopted first)."""
    try:
        adopt_recalls(root, index)
    except sqlite3.Error as exc:  # a busy index: ranked by what it holds
        warn("memoryclaw.metrics", "recall.json not adopted yet: %s", exc)
    return RecallTimes(index, _read_log(root)[0])


def recalled_ids(episode_ids: Iterable[str], passage_ids: Iterable[str]) -> list[str]:
    """The episode ids a payload quoted or named, without duplicates, in order."""
    return list(dict.fromkeys([*episode_ids, *passage_ids]))


def _moment(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)
