"""A timeline: the long view's answer (:mod:`.longview`), one dated line per episode.

Each matching episode gets one line: the opening of its best matching line
(``TIMELINE_CHARS``), or of its summary when no line of it matched; ``memory_get`` shows the
rest.  Except for an order, a question is passed over for its episode's best matching line
that is not one: the reply holds what was learned or decided.  The episodes that fit are the
most relevant ones: for a summary, those whose line and whole episode match best together
(a line that mentions the topic in passing, in an episode about something else, comes after
one of an episode about it); for an order, the best of each conversation first, so the
timeline spans the conversations rather than dwelling on the one that says most.  They are
shown oldest first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from ..vault.dates import human_annotations, human_date
from .lines import LOW_CONFIDENCE, _clean, shorten
from .results import PassageHit, SearchResult

# A timeline line is cut here, shorter than a quoted passage (``lines.PASSAGE_CHARS``): the
# opening of a turn says what its episode was about, and a history is better told by more
# episodes than by more of each (on BEAM, more of the summaries' evidence reached the payload).
TIMELINE_CHARS = 260
# A question is passed over only for a line of its episode that matches at least a quarter
# as well as it does: a reply of "ok, thanks" says less than the question it follows.
_REPLY_SHARE = 0.25


@dataclass(frozen=True)
class Entry:
    """One episode's line in a timeline (or a raw log turn's, for turns not consolidated)."""

    episode_id: str
    timestamp: str
    order: tuple[str, int]  # path and line: what breaks a tie of dates
    relevance: float
    text: str  # the line as shown
    conversation: str  # its session (its day without one): what an order spans
    passage: PassageHit | None = None


def timeline_label(reason: str) -> str:
    """The header of a timeline: that it is one, and why."""
    return f"Timeline ({reason}): one line per episode, oldest first."


def timeline(
    result: SearchResult,
    room: int,
    names: Mapping[str, str],
    *,
    spread: bool = False,
    min_score: float = 0.0,
    low: Collection[str] = (),
) -> list[Entry]:
    """The entries whose lines fit in ``room`` characters (each with its line break), the
    most relevant first to claim it (without ``spread``, relevance is that of the line and
    of its episode together; with ``spread``, the best of each conversation first, then the
    second best of each, and so on), returned oldest first; ``names`` maps an
    episode id to the shorter name it is shown by; the episodes in ``low`` (of low
    confidence) claim room only after all others, their lines marked so."""
    entries: dict[str, Entry] = {}
    # Outside an order (which asks when each thing was asked), an episode is shown by its
    # best line that is not a question, at its best line's relevance: what was learned or
    # decided is in the reply, and the question's words are mostly in the reply too.
    replies = {
        p.episode_id: p.relevance
        for p in reversed(result.passages)  # the best line of each episode wins
        if p.via != "log" and p.relevance >= min_score and not _asks(p.text)
    }
    best: dict[str, float] = {}
    for passage in result.passages:  # best first: an episode's first line is its best
        key = passage.episode_id if passage.via != "log" else f"{passage.path}:{passage.line}"
        if (
            not spread
            and key not in entries
            and _asks(passage.text)
            and key in replies
            and replies[key] >= passage.relevance * _REPLY_SHARE
        ):
            best.setdefault(key, passage.relevance)
            continue
        if passage.relevance >= min_score and key not in entries:
            entries[key] = Entry(
                key,
                passage.timestamp,
                (passage.path, passage.line),
                best.get(key, passage.relevance),
                _line(passage, names),
                passage.session or passage.timestamp[:10],
                passage,
            )
    for episode in result.results:
        if episode.id not in entries and episode.relevance >= min_score and episode.summary:
            name = _clean(names.get(episode.id, episode.id))
            text = f"- {human_date(episode.timestamp[:10])} {name}: {_clean(episode.summary)}"
            entries[episode.id] = Entry(
                episode.id,
                episode.timestamp,
                (episode.path, 0),
                episode.relevance,
                shorten(text, TIMELINE_CHARS),
                episode.session or episode.timestamp[:10],
            )
    entries = {
        k: replace(e, text=e.text + LOW_CONFIDENCE) if k in low else e for k, e in entries.items()
    }
    if not spread:
        # a summary's entry ranks on its line and its episode alike (the mean of the two):
        # an episode is at least as relevant as its best line (.retrieval), so a line gains
        # where its episode as a whole matches better than it, not where it says most
        whole = {e.id: e.relevance for e in result.results}
        entries = {
            k: replace(e, relevance=(e.relevance + whole[e.episode_id]) / 2)
            if e.passage is not None and e.episode_id in whole
            else e
            for k, e in entries.items()
        }
    ranked = sorted(entries.values(), key=lambda e: (e.episode_id in low, -e.relevance))
    if spread:
        taken: dict[str, int] = {}
        place = {}
        for n, entry in enumerate(ranked):
            taken[entry.conversation] = taken.get(entry.conversation, 0) + 1
            place[entry.episode_id] = (taken[entry.conversation], n)
        ranked.sort(key=lambda e: (e.episode_id in low, place[e.episode_id]))
    chosen = []
    for entry in ranked:
        if len(entry.text) + 1 <= room:
            room -= len(entry.text) + 1
            chosen.append(entry)
    return sorted(chosen, key=lambda e: (e.timestamp, e.order))


def _asks(text: str) -> bool:
    """Whether a line is a question (what its reply answers)."""
    return text.rstrip().endswith("?")


def _line(passage: PassageHit, names: Mapping[str, str]) -> str:
    """``- 8 May 2023 ep-d6b27f26: Caroline: I went …`` (a raw log's turn has no name)."""
    name = names.get(passage.episode_id, passage.episode_id) if passage.via != "log" else ""
    where = f" {_clean(name)}:" if name else ":"
    who = f" {_clean(passage.speaker)}:" if passage.speaker else ""
    head = f"- {human_date(passage.timestamp[:10])}{where}{who} "
    return shorten(head + human_annotations(_clean(passage.text)), TIMELINE_CHARS)
