"""The recall log, ``.memoryclaw/recall.json``: when each episode was last recalled.

A ``retrieve`` notes the episodes its payload quoted or named (:func:`recalled_ids`,
:func:`note_recalled`); archiving (:mod:`memoryclaw.consolidate.archive`) reads the log to
tell an unused episode from one in use.  The log also says since when recalls are noted.  It
is derived state that a rebuilt index does not touch; a missing or unreadable log starts
over.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..vault.files import STATE_DIR, atomic_write, file_lock
from ..vault.inputs import read_state_json
from ..vault.timestamps import parse_timestamp, utc_iso

RECALL_FILE = f"{STATE_DIR}/recall.json"
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


def load_recalls(root: Path) -> RecallLog | None:
    """The vault's recall log; None when it is missing or unreadable (start over, safely)."""
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
    """Write the recall log (callers hold the ``recall`` lock)."""
    atomic_write(root / RECALL_FILE, recalls.to_json())


def note_recalled(root: Path, idents: Iterable[str], now: datetime) -> None:
    """Record that these episodes were recalled at ``now`` (later recalls are kept)."""
    with file_lock(root, "recall", timeout=RECALL_LOCK_SECONDS):
        note_recalled_locked(root, idents, now)


def note_recalled_locked(root: Path, idents: Iterable[str], now: datetime) -> None:
    """:func:`note_recalled` for a caller that holds the ``recall`` lock already."""
    wanted = sorted(set(idents))
    recalls = load_recalls(root)
    fresh = recalls is None
    if recalls is None:
        recalls = RecallLog(now)
    changed = False
    for ident in wanted:
        if recalls.last.get(ident, datetime.min.replace(tzinfo=timezone.utc)) < now:
            recalls.last[ident] = now
            changed = True
    if changed or fresh:
        save_recalls(root, recalls)


def start_noting(root: Path, now: datetime) -> RecallLog:
    """The recall log, created (noting from ``now``) when there is none."""
    with file_lock(root, "recall", timeout=RECALL_LOCK_SECONDS):
        recalls = load_recalls(root)
        if recalls is None:
            recalls = RecallLog(now)
            save_recalls(root, recalls)
        return recalls


def recalled_ids(episode_ids: Iterable[str], passage_ids: Iterable[str]) -> list[str]:
    """The episode ids a payload quoted or named, without duplicates, in order."""
    return list(dict.fromkeys([*episode_ids, *passage_ids]))
