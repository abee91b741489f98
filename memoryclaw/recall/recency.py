"""Recency and use: newer memories, and memories recalled lately, rank up.

After Clawpy's time-decayed recall and EvoClaw's decay and reinforcement.  Pure functions.

A memory's recency factor is ``exp(-age_days / tau)`` with ``tau = halfLifeDays / ln 2``: 1 for
the newest, one half at ``retrieval.recency.halfLifeDays``.  A memory recalled into a payload
gets a small reinforcement, ``USE_SHARE`` x the same decay over the days since that recall, and
the sum is capped at 1.  A score becomes ``score x ((1 - weight) + weight x factor)``: with
``retrieval.recency.weight`` 0 (the default) ranking is relevance alone.

Age is counted from the newest memory among the query's candidates, not from the clock, so the
same vault and query rank alike on any day, and a vault left alone for a month ranks as it
did.  Days since a recall are counted from the request's ``now``.

A question that asks for the latest state ("where do I live now?", "what is my current
plan?", "the latest version") ranks with at least :data:`LATEST_WEIGHT`, whatever the weight.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

# The weight a question that asks for the latest state ranks with, at least: enough that of
# two memories about as relevant the newer comes first, not enough that a newer memory about
# something else does.
LATEST_WEIGHT = 0.5
# The most a recall adds to a memory's factor: use keeps a memory about as fresh as a memory
# a few half-lives younger, never fresher than a new one.
USE_SHARE = 0.2

_LATEST_RE = re.compile(
    r"\b(?:current(?:ly)?|now|nowadays|latest|newest|most recent(?:ly)?|these days"
    r"|at the moment|any ?more|still)\b",
    re.IGNORECASE,
)
# "the rent I mentioned I'm currently paying": the latest state as of a mention, which is
# what was said then, not what holds now.
_REPORTED_RE = re.compile(
    r"\b(?:I|we) (?:say|said|mention(?:ed)?|t(?:ell|old) you|noted|stated)(?: that)?"
    r"(?: (?:I|we)(?:['’]m|['’]re| am| are| was| were)?)? (?:current(?:ly)?|now|still)\b",
    re.IGNORECASE,
)
_SECONDS_PER_DAY = 86_400.0


def asks_for_latest(query: str) -> bool:
    """Whether ``query`` asks for the latest state ("now", "current", "latest", "still", …),
    not for what was said of it once ("the rent I mentioned I'm currently paying")."""
    return _LATEST_RE.search(_REPORTED_RE.sub(" ", query)) is not None


def decay(age_days: float, half_life_days: float) -> float:
    """``exp(-age_days / tau)``, ``tau = half_life_days / ln 2``: 1 at age 0 (or below)."""
    return math.exp(-max(age_days, 0.0) * math.log(2) / half_life_days)


def days_between(earlier: datetime, later: datetime) -> float:
    """Days from ``earlier`` to ``later`` (negative when ``earlier`` is later)."""
    return (later - earlier).total_seconds() / _SECONDS_PER_DAY


@dataclass(frozen=True)
class Recency:
    """How one request weighs recency: its weight, half-life, anchor and recalls."""

    weight: float
    half_life_days: float
    anchor: datetime  # the newest candidate: age 0
    now: datetime  # days since a recall count from here
    recalled: Mapping[str, datetime]  # episode id -> its last recall

    def factor(self, timestamp: datetime, ident: str | None = None) -> float:
        """A memory's recency in (0, 1]: its decay by age, plus its reinforcement by use."""
        value = decay(days_between(timestamp, self.anchor), self.half_life_days)
        used = self.recalled.get(ident) if ident is not None else None
        if used is not None:
            value += USE_SHARE * decay(days_between(used, self.now), self.half_life_days)
        return min(value, 1.0)

    def blend(self, score: float, factor: float) -> float:
        """``score`` with ``weight`` of it decided by ``factor``."""
        return score * ((1.0 - self.weight) + self.weight * factor)


def effective_weight(weight: float, query: str) -> float:
    """The weight a request ranks with: at least :data:`LATEST_WEIGHT` for a question about
    the latest state."""
    return max(weight, LATEST_WEIGHT) if asks_for_latest(query) else weight
