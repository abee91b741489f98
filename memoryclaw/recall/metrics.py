"""Recall metrics, after EvoClaw's metrics: what recall put before the model, and what it saved.

Each ``retrieve`` adds to its UTC day's counters in ``.memoryclaw/metrics.json``: one recall
(or one trivial message skipped), the tokens injected, the tokens of raw transcript the
injected memories stand for, and the results withheld by ``retrieval.minScore``; an archive
run adds the episodes it moved.  The file is derived state: one small JSON document of
per-day totals, rewritten under the vault's ``recall`` lock, holding the last
``metrics.keepDays`` days.  Recording never fails a recall: a write that cannot be made is
logged and dropped, and an unreadable file starts counting afresh.  The file is rewritten in
place and not synced to disk (see :func:`_save_days`).

*Transcript tokens stood for* (the characters of raw conversation behind a memory / 4, as
:func:`memoryclaw.recall.payload.estimate_tokens` counts):

- an episode in the block stands for the turns of its source log it summarises
  (``source_turns``, or the whole log), as long as the index has read that log (see
  :meth:`memoryclaw.index.store.Index.source_chars`); otherwise, for its own summary and details;
- a recent turn quoted from a log not yet consolidated stands for itself;
- a fact stands for its own line (its provenance names its source log, not the turn).

*Tokens saved* is transcript tokens stood for minus tokens injected.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError, LockTimeoutError, warn
from ..vault.files import STATE_DIR, ensure_dir, file_lock, open_private
from ..vault.inputs import read_state_json
from ..vault.naming import plural
from .usage import RECALL_LOCK_SECONDS

if TYPE_CHECKING:
    from .payload import RetrievePayload

METRICS_FILE = f"{STATE_DIR}/metrics.json"
# The widest window a report (stats, audit) covers: 100000 days (about 274 years, "all of
# it" to a person), far inside what a date can count back to (a billion days overflowed).
MAX_WINDOW_DAYS = 100_000
FORMAT = 1  # the file's layout; another number is read as no file


@dataclass
class DayCounts:
    """One UTC day's counters (or a window's sums)."""

    recalls: int = 0  # retrieves that searched (a trivial message is not one)
    tokens_injected: int = 0  # summed over those recalls
    tokens_injected_max: int = 0  # the largest payload of one recall
    transcript_tokens: int = 0  # what the injected memories stand for (module docstring)
    trivial_skipped: int = 0  # retrieves of a trivial message: nothing searched, nothing shown
    below_threshold: int = 0  # episodes and facts found but withheld by retrieval.minScore
    archived: int = 0  # episodes an archive run moved to episodes/archive/
    recall_failures: int = 0  # turns an agent plugin went on without recall (timeout, error)

    def add(self, other: DayCounts) -> None:
        """Add ``other``'s counts to these (the maximum is a maximum)."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            total = max(mine, theirs) if f.name == "tokens_injected_max" else mine + theirs
            setattr(self, f.name, total)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DayCounts:
        """Counts from a day's JSON object; unknown keys are ignored, bad values raise."""
        values = {}
        for f in fields(cls):
            value = doc.get(f.name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{f.name}: expected a count, got {value!r}")
            values[f.name] = value
        return cls(**values)


@dataclass(frozen=True)
class Metrics:
    """The counters over a window of UTC days, with the review queue and archive as they are."""

    since: date
    until: date
    counts: DayCounts
    recorded_since: date | None  # the oldest day the file still holds
    pending: int  # facts waiting in semantic/_pending.md
    conflicts: int  # of those, values that contradict a stored one
    episodes_archived: int  # episodes in episodes/archive/ now

    @property
    def tokens_saved(self) -> int:
        """Transcript tokens stood for minus tokens injected."""
        return self.counts.transcript_tokens - self.counts.tokens_injected

    @property
    def tokens_injected_mean(self) -> float:
        """Mean tokens injected per recall (0 without recalls)."""
        recalls = self.counts.recalls
        return self.counts.tokens_injected / recalls if recalls else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The ``metrics`` object of ``stats --json``."""
        counts = asdict(self.counts)
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "days": (self.until - self.since).days + 1,
            "recorded_since": self.recorded_since.isoformat() if self.recorded_since else None,
            **counts,
            "tokens_injected_mean": round(self.tokens_injected_mean, 1),
            "tokens_saved": self.tokens_saved,
            "pending": self.pending,
            "conflicts": self.conflicts,
            "episodes_archived": self.episodes_archived,
        }

    def summary(self) -> str:
        """One line for a log or a terminal."""
        c = self.counts
        window = (
            self.since.isoformat()
            if self.since == self.until
            else f"{self.since.isoformat()}..{self.until.isoformat()}"
        )
        return (
            f"{window}: {plural(c.recalls, 'recall')},"
            f" {self.tokens_injected_mean:,.0f} tokens mean "
            f"(max {c.tokens_injected_max:,}), ~{c.transcript_tokens:,} transcript tokens "
            f"stood for ({self.tokens_saved:,} saved), {c.trivial_skipped} trivial skipped, "
            f"{c.below_threshold} below threshold, {self.pending} pending, "
            f"{plural(self.conflicts, 'conflict')}, {c.archived} archived"
        )


def read_days(root: Path) -> dict[date, DayCounts]:
    """Every day the metrics file holds, read under the recall lock (without it when another
    process holds the lock too long: a busy lock must not fail ``stats``)."""
    try:
        with file_lock(root, "recall", timeout=RECALL_LOCK_SECONDS):
            return load_days(root)
    except (OSError, LockTimeoutError):
        return load_days(root)


def load_days(root: Path) -> dict[date, DayCounts]:
    """Every day the metrics file holds (caller holds the recall lock); empty when it is
    missing or unreadable."""
    doc = read_state_json(root / METRICS_FILE)  # bounded: a huge or deep file starts over
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return {}
    days = doc.get("days")
    try:
        if not isinstance(days, dict) or not all(isinstance(c, dict) for c in days.values()):
            raise TypeError("days: expected an object of objects")
        return {
            date.fromisoformat(day): DayCounts.from_json(counts) for day, counts in days.items()
        }
    except (ValueError, TypeError) as exc:
        warn("memoryclaw.metrics", "%s: %s; counting starts over", METRICS_FILE, exc)
        return {}


def _save_days(root: Path, days: Mapping[date, DayCounts]) -> None:
    doc = {
        "format": FORMAT,
        "days": {day.isoformat(): asdict(days[day]) for day in sorted(days)},
    }
    data = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")
    # Rewritten in place, not synced: on some disks a rename or a sync costs more than the
    # whole recall.  Readers and writers hold the recall lock, so none sees it half-written;
    # a power cut mid-write may leave it unreadable, and counting then starts over.
    ensure_dir(root / STATE_DIR)
    fd = open_private(root / METRICS_FILE)
    try:
        done = 0
        while done < len(data):
            done += os.pwrite(fd, data[done:], done)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def day_of(moment: datetime) -> date:
    """``moment``'s UTC date: the day its events are counted on."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return aware.astimezone(timezone.utc).date()


def record(root: Path, now: datetime, keep_days: int, counts: DayCounts | None) -> bool:
    """Add ``counts`` to ``now``'s day (none when ``keep_days`` is 0); False (and a logged
    warning) when that could not be done, which never fails the caller."""
    if counts is None or keep_days <= 0:
        return True
    try:
        with file_lock(root, "recall", timeout=RECALL_LOCK_SECONDS):
            _add(root, day_of(now), keep_days, counts)
    except (OSError, LockTimeoutError) as exc:
        warn("memoryclaw.metrics", "recall not counted: %s", exc)
        return False
    return True


def _add(root: Path, day: date, keep_days: int, counts: DayCounts) -> None:
    """Add ``counts`` to ``day`` and drop the days older than ``keep_days`` (caller locks)."""
    days = load_days(root)
    days.setdefault(day, DayCounts()).add(counts)
    oldest = day - timedelta(days=keep_days - 1)
    _save_days(root, {d: c for d, c in days.items() if d >= oldest})


def window(
    today: date, days: int | None = None, since: date | str | None = None
) -> tuple[date, date]:
    """The window (first day, last day) of ``--days`` (the last N days, today included;
    default 7) or ``--since`` (that day to today), at most :data:`MAX_WINDOW_DAYS` long;
    anything else is an :class:`InvalidInputError` naming the param."""
    if since is not None:
        if isinstance(since, str):
            text = since
            try:
                since = date.fromisoformat(text)
            except ValueError:
                shown = json.dumps(text[:40], ensure_ascii=True)  # one line, whatever it holds
                raise InvalidInputError("since", f"expected YYYY-MM-DD, got {shown}") from None
        if since > today:
            raise InvalidInputError("since", f"{since.isoformat()} is after today ({today})")
        if (today - since).days >= MAX_WINDOW_DAYS:
            raise InvalidInputError(
                "since", f"{since.isoformat()} is more than {MAX_WINDOW_DAYS} days ago"
            )
        return since, today
    count = 7 if days is None else days
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_WINDOW_DAYS:
        shown = repr(count)[:40]
        raise InvalidInputError(
            "days", f"must be a whole number from 1 to {MAX_WINDOW_DAYS}, got {shown}"
        )
    return today - timedelta(days=count - 1), today


def summed(days: Mapping[date, DayCounts], first: date, last: date) -> DayCounts:
    """The counts of the days from ``first`` to ``last``, both included."""
    total = DayCounts()
    for day, counts in days.items():
        if first <= day <= last:
            total.add(counts)
    return total


def recall_counts(
    payload: RetrievePayload, source_chars: Mapping[str, int], min_score: float
) -> DayCounts:
    """What one retrieve adds to its day: a trivial message skipped, or a recall with the
    tokens it injected, the transcript tokens they stand for (``source_chars``: episode id
    to the characters it stands for, see the module docstring) and the episodes and facts
    the search found that ``min_score`` kept out."""
    from .payload import CHARS_PER_TOKEN  # imported by a retrieve, which counts

    if payload.skipped is not None:
        return DayCounts(trivial_skipped=1 if payload.skipped == "trivial" else 0)
    chars = sum(source_chars.values())
    chars += sum(len(p.text) for p in payload.passages if p.via == "log")
    chars += sum(len(f.render()) for f in payload.facts)
    found = payload.search
    withheld = 0
    if found is not None:
        withheld = sum(1 for e in found.results if e.relevance < min_score)
        withheld += sum(1 for f in found.facts if f.relevance < min_score)
    return DayCounts(
        recalls=1,
        tokens_injected=payload.tokens,
        tokens_injected_max=payload.tokens,
        transcript_tokens=math.ceil(chars / CHARS_PER_TOKEN),
        below_threshold=withheld,
    )
