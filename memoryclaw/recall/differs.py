"""A fact against the episode lines shown with it: whether a line states another value of
it, which of the two was written later, and the mark the fact's line gets for it."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from ..vault.values import value_key, value_kind
from ..vault.words import extract_keywords
from .lines import _clean
from .results import FactResult


# Compiled on first use, as the other patterns marked so: a fresh process (a recall, a logged
# turn) pays for every pattern compiled at import, and most serve a question it is not asked.
# A value of each kind value_kind knows, found anywhere in a line (its patterns unanchored);
# a match is taken for that kind only when value_kind says so of it (a date is no phone).
@functools.cache
def _value_res() -> dict[str, re.Pattern[str]]:
    return {
        "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
        "url": re.compile(r"https?://\S+"),
        "date": re.compile(r"(?<![\d-])\d{4}-\d{2}-\d{2}(?![\d-])"),
        "phone": re.compile(r"\+?\d[\d\s().-]{5,18}\d"),
    }


_CURRENT_MARK, _OLDER_MARK = " (current value, newer than {})", " (older than {})"


@dataclass(frozen=True)
class Differs:
    """An episode in the payload with a line that states another value of a fact shown."""

    episode: str  # its id
    name: str  # what the block calls it (its handle, or its id)
    date: str  # its date, YYYY-MM-DD
    newer: str  # which was written later: "fact" or "episode"

    def as_dict(self) -> dict[str, str]:
        """``{"episode", "date", "newer"}``."""
        return {"episode": self.episode, "date": self.date, "newer": self.newer}


# What a fact is compared with: (episode id, name shown, timestamp, text, what the episode is
# about) of an episode's line or summary.
_Evidence = tuple[str, str, str, str, str]


def _states_other_value(fact: FactResult, text: str, about: str) -> bool:
    """Whether ``text``, a line of an episode about ``about`` (its summary and tags), states
    another value of ``fact``: it holds a value of the kind of the fact's (a date, an email, a
    URL, a phone number) and none equal to it, and it names the fact.  The fact's name is its
    entity and field (``Heron deadline``; the field left out when it only says the value's
    kind, as ``John email``): every word of it is in the line or in ``about``, and its last
    word in the line.  A value of no such kind is not compared: whether a line's words state
    another one cannot be told."""
    kind = value_kind(fact.value)
    if kind is None:
        return False
    found = {
        value_key(m.group(0))
        for m in _value_res()[kind].finditer(text)
        if value_kind(m.group(0).strip()) == kind
    }
    if not found or value_key(fact.value) in found:
        return False
    field = "" if fact.field in {"value", "note", kind} else fact.field
    name = extract_keywords(f"{fact.entity} {field}")
    words = set(extract_keywords(text))
    return bool(name) and name[-1] in words and set(name) <= words | set(extract_keywords(about))


def _newer(fact: FactResult, timestamp: str) -> str | None:
    """Which was written later, ``fact`` (its ``updated`` date: its line's, else its file's)
    or an episode of ``timestamp``: "fact" or "episode"; None on the same day, or when a
    date cannot be read."""
    try:
        fact_day = date.fromisoformat(fact.updated.strip()[:10])
        episode_day = date.fromisoformat(timestamp[:10])
    except ValueError:
        return None
    if fact_day == episode_day:
        return None
    return "fact" if fact_day > episode_day else "episode"


def _differs(fact: FactResult, evidence: Sequence[_Evidence]) -> tuple[Differs, ...]:
    """The episodes of ``evidence`` that state another value of ``fact``, dated another day
    than it, each once, in the order of ``evidence``."""
    out: dict[str, Differs] = {}
    for ident, name, timestamp, text, about in evidence:
        if ident in out or not _states_other_value(fact, text, about):
            continue
        newer = _newer(fact, timestamp)
        if newer is not None:
            out[ident] = Differs(ident, name, timestamp[:10], newer)
    return tuple(out.values())


def _mark(differs: Sequence[Differs]) -> str:
    """What a fact's line says of the episodes that differ from it: that it is the current
    value, when it is newer than each (naming the newest of them); else that it is older than
    the newest one written after it."""
    later = [d for d in differs if d.newer == "episode"]
    newest = max(later or differs, key=lambda d: (d.date, d.name))
    return (_OLDER_MARK if later else _CURRENT_MARK).format(_clean(newest.name))
