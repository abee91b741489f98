"""A turn as its episode quotes it: one bullet, ``#<n> <speaker>: <the turn condensed>``.

The summarizer (:mod:`memoryclaw.consolidate.summarize`) writes each informative turn of a
log into its episode as such a line, and the index (:mod:`memoryclaw.index.update`) stores
the turns of a log not yet consolidated as the same lines (:func:`turn_lines`), so a search
finds a turn the same way before and after consolidation.  A line is read from redacted text,
keeps every searchable word of a human turn (of a long assistant or tool turn, the first
:data:`_TAIL_CAP` cut words, numbers and names first), dates relative dates ("yesterday
(2023-05-07)"), and is None for small talk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from .dates import resolve_relative_dates
from .episodes import TURN_MARK
from .logformat import RawLog, Turn, clean_label
from .recalled import strip_recalled
from .redact import redact
from .words import SMALL_TALK, extract_keywords, sentences, without_stock_phrases

DETAIL_CHARS = 500
_TAIL_CAP = 40  # searchable words kept from the cut part of a long assistant or tool turn
_TOOL_ROLES = frozenset({"tool_call", "tool_result", "tool"})
_MACHINE_ROLES = _TOOL_ROLES | {"assistant", "system"}
# what a bullet calls a turn by its role (TurnView.label): no name may pass for one
_ROLE_LABELS = _MACHINE_ROLES | {"user", "participant", "result"}
_MARKER_RE = re.compile(r"\[REDACTED:[\w-]+\]")


@dataclass(frozen=True)
class TurnView:
    """A turn as the summarizer and the index read it: redacted once, keywords extracted once."""

    number: int
    turn: Turn
    name: str | None  # the speaker's name, when the turn carries one
    text: str
    keywords: tuple[str, ...]
    human: bool
    tool: bool

    @property
    def speaker(self) -> str:
        """The participant: a name, else the role."""
        return self.name or self.turn.role

    @property
    def label(self) -> str:
        """How a bullet or summary names the speaker: its name, unless that reads as another
        role's label (a group member who calls themselves "User" is no owner), else its role."""
        name = self.name
        if name and name.casefold() in _ROLE_LABELS and name.casefold() != self.turn.role:
            name = None
        return name or self.turn.role.capitalize()


TurnLine = tuple[int, str | None, str, datetime]  # (number, speaker, line, time)


def turn_line(number: int, turn: Turn, previous: Sequence[str] = ()) -> TurnLine | None:
    """One turn of a log as its episode will quote it (None for small talk): without a
    recalled block, and redacted as an answer to the ``previous`` turns (the two before it),
    as consolidation reads it (a log written elsewhere, or with ``privacy.redactSecrets``
    off, may hold a recalled block, or a phrase answering "my recovery phrase is")."""
    bare = replace(turn, content=strip_recalled(turn.content))
    line = detail_line(turn_view(number, bare, previous))
    if line is None:
        return None
    label, _, said = line.split(" ", 1)[1].partition(": ")  # without the turn mark
    return (number, label, said, utc(turn.timestamp))


def turn_lines(log: RawLog) -> list[TurnLine]:
    """Each turn of a log as its episode will quote it."""
    turns = log.turns
    lines = (
        turn_line(n, turn, [t.content for t in turns[max(0, n - 3) : n - 1]])
        for n, turn in enumerate(turns, start=1)
    )
    return [line for line in lines if line is not None]


def turn_view(number: int, turn: Turn, previous: Sequence[str] = ()) -> TurnView:
    """The turn as the summarizer and the index read it (see :class:`TurnView`), redacted
    as an answer to the ``previous`` turns."""
    text, name = redact(turn.content, previous), clean_label(turn.name)
    tool = turn.role in _TOOL_ROLES
    human = not tool and (
        turn.role in ("user", "participant")
        or (name is not None and turn.role not in _MACHINE_ROLES)
    )
    said = text if human or tool else without_stock_phrases(text)  # "Happy to help!": no topic
    words = extract_keywords(_MARKER_RE.sub(" ", said))  # "[REDACTED:api-key]" is no topic
    return TurnView(number, turn, name, text, tuple(words), human, tool)


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC (a time without a zone is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit, 2) - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


def detail_line(view: TurnView) -> str | None:
    """One bullet: the turn's number, its speaker and the turn condensed, keeping its
    searchable words, relative dates resolved (``#3 Caroline: … yesterday (2023-05-07) …``)."""
    text = " ".join(view.text.split())
    # an assistant's offer ("Let me know if you want the TP123 pass") is no topic, yet says
    # what a later search may look for
    words = view.keywords if view.human or view.tool else extract_keywords(view.text)
    if not text or (not view.tool and all(k in SMALL_TALK for k in words)):
        return None
    label = view.label
    if not view.tool:  # "yesterday" means nothing once the day has passed: date it
        text = resolve_relative_dates(text, utc(view.turn.timestamp).date())
    if view.tool:
        with suppress(ValueError, RecursionError):
            text = json.dumps(json.loads(text), ensure_ascii=False)
        kind = {"tool_call": "tool", "tool_result": "result"}.get(view.turn.role, view.turn.role)
        label = f"{kind} {clean_label(view.turn.tool)}" if clean_label(view.turn.tool) else kind
    condensed = _condense(text, DETAIL_CHARS, None if view.human else _TAIL_CAP)
    return f"{TURN_MARK}{view.number} {label}: {condensed}"


def _condense(text: str, limit: int, tail_cap: int | None) -> str:
    """Whole sentences up to ``limit``, then the searchable words of the rest."""
    if len(text) <= limit:
        return text
    kept = ""
    for sentence in sentences(text):
        if kept and len(kept) + 1 + len(sentence) > limit:
            break
        kept = f"{kept} {sentence}".strip()
    kept = clip(kept, limit) if len(kept) > limit else kept + " …"
    have = set(extract_keywords(kept))
    missing = [k for k in extract_keywords(text) if k not in have]
    if tail_cap is not None:  # numbers, dates and names are what questions ask for: first
        capitalised = {w.lower() for w in re.findall(r"\b[A-Z][\w'’-]*", text)}
        ranked = sorted(
            enumerate(missing),
            key=lambda p: (not (any(c.isdigit() for c in p[1]) or p[1] in capitalised), p[0]),
        )
        missing = [k for _, k in ranked[:tail_cap]]
    return f"{kept} (also: {', '.join(missing)})" if missing else kept
