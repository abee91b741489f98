"""The hook payload: what recall puts in front of the model, within ``budgetTokens``.

Built from a :class:`~memoryclaw.recall.results.SearchResult`, in this order of claim on the
budget:

1. facts that match the query beyond naming their entity ("John's email?" shows John's email,
   "When did John call?" shows no fact of John's), or all of an entity's few facts when the
   query names nothing else ("who is my dentist?");
2. quoted evidence: the best passages, each an attributed line pointing at its turn, grouped
   under a one-line header per episode (its id, or the short handle ``ep-<hash>`` that names it
   as well, and its date); the query's words take turns (``_taking_turns``), so lines that
   only repeat words already quoted twice wait behind lines for the query's other words;
3. neighbouring lines of a quoted passage (the question before an answer, the answer after a
   question) while there is room and they share a word with the query or the passage;
4. turns logged but not yet consolidated, marked as recent;
5. the headers of found episodes no line of which is quoted, with a short summary;
6. lines below ``min_score`` that pass it when judged as in a larger vault (a small vault's
   common words count as a large one's would: ``PassageHit.smoothed``).

A query that asks for the long view (an order, a progression, a summary, everything about a
topic: :mod:`memoryclaw.recall.longview`) gets, right after the facts, a timeline of one dated
line per episode (:mod:`memoryclaw.recall.timeline`); the room it leaves holds 2-6 as usual.

Before all of these, in a live session, what the session is doing that its history does not
hold (its working memory, :mod:`memoryclaw.recall.working`): the steps of its active skill, at most
a fifth of the budget.  The request, the assistant's replies and stated steps, and the tool
results are in the history a host that names its session sends along, so they are not repeated
here; nor is any line repeated within the block.

A fact shown with an episode line that states another value of it (a date, an email, a URL
or a phone number; :mod:`memoryclaw.recall.differs`) says which of the two was written later:
``(current value, newer than ep-…)`` when the fact was written after every such episode,
else ``(older than ep-…)``, naming the newest episode that was written after it.

Recalled text is data: the block opens with a line that says so, and a stored
``</memoryclaw>`` cannot close it early (:mod:`memoryclaw.recall.lines`).  Tokens are
estimated as characters / 4, and the rendered block never exceeds the budget.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..vault.dates import human_annotations
from ..vault.recalled import CLOSE, FRAME, OPEN
from ..vault.words import extract_keywords
from .differs import _CURRENT_MARK, Differs, _differs, _Evidence, _mark
from .lines import (
    HEADER_SUMMARY_CHARS,
    LOW_CONFIDENCE,
    _beyond_a_quote,
    _clean,
    _header,
    _quote,
    session_lines,
    shorten,
)
from .longview import LongView
from .results import EpisodeResult, FactResult, PassageHit, SearchResult, _evolve
from .timeline import timeline, timeline_label

CHARS_PER_TOKEN = 4
_FACTS_LABEL, _RECENT_LABEL = "Facts (age):", "Recent turns (not yet consolidated):"
_SESSION_LABEL = "This session:"
SESSION_SHARE = 5  # the session's lines take at most 1/SESSION_SHARE of the budget
_SUMMARY_ONLY_FIRST = 3  # top episodes whose summary is shown even when no line of theirs is
# An answer is the turn after a question: such a turn is ranked with the question's score
# times this, though it may share no word with the query (chosen on LoCoMo dev: 0.5-1.0 all
# help, 0.7 most).
REPLY_SCORE = 0.7
# Quoted lines take turns across the query's words: a line all of whose matched words are
# each in COVERED_TIMES lines already chosen ranks at REDUNDANT_SCORE x its score, so a question
# with two sides ("what have Caroline and Melanie both painted?") gets lines for each side
# rather than a budget full of one.  On LoCoMo dev every damping from 0.3 to 0.8 with 1-3
# lines covered gave 0.897-0.903 evidence in payload against 0.891 without: the turn-taking
# does it, not these values.
REDUNDANT_SCORE = 0.5
COVERED_TIMES = 2


def estimate_tokens(text: str) -> int:
    """Tokens as the payload budget counts them: one per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class RetrievePayload:
    """What the retrieval hook injects: the rendered block and the working-memory object."""

    query: str
    context: str
    working_memory: Mapping[str, Any]
    tokens: int
    budget: int
    episodes: tuple[EpisodeResult, ...]
    facts: tuple[FactResult, ...]
    search: SearchResult | None = field(default=None, compare=False)
    passages: tuple[PassageHit, ...] = ()
    skipped: str | None = None  # why recall did not run ("trivial"), when it did not
    # fact id -> the episodes shown that state another value of it (see the module doc)
    differs: Mapping[str, tuple[Differs, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The ``retrieve --json`` document."""
        doc: dict[str, Any] = {
            "query": self.query,
            "context": self.context,
            "working_memory": dict(self.working_memory),
            "tokens": self.tokens,
            "budget": self.budget,
            "episodes": [e.as_dict() for e in self.episodes],
            "facts": [self._fact_dict(f) for f in self.facts],
            "passages": [p.as_dict() for p in self.passages],
        }
        if self.skipped is not None:
            doc["skipped"] = self.skipped
        if self.search is not None and self.search.plan.truncated:
            doc["query_truncated"] = True  # recalled for the query's head only
        return doc

    def _fact_dict(self, fact: FactResult) -> dict[str, Any]:
        """A fact's ``search --json`` shape; when an episode shown states another value of
        it, also ``current`` (whether it is newer than each) and ``differs_from``."""
        differs = self.differs.get(fact.id, ())
        if not differs:
            return fact.as_dict()
        current = all(d.newer == "fact" for d in differs)
        return {
            **fact.as_dict(),
            "current": current,
            "differs_from": [d.as_dict() for d in differs],
        }


def _is_low(confidence: str) -> bool:
    """Whether a stored confidence is ``low`` (such memories wait until all else is in)."""
    return confidence.strip().lower() == "low"


class _Block:
    """The payload being filled: groups of lines, and how many characters they take."""

    def __init__(self, budget_chars: int) -> None:
        self.room = budget_chars - len(OPEN) - len(CLOSE) - len(FRAME) - 2
        self.facts: list[str] = []
        self.session: list[str] = []
        self.groups: dict[str, tuple[str, dict[int, str]]] = {}  # id -> (header, line -> text)
        self.recent: dict[tuple[str, int], str] = {}
        self.shown: set[str] = set()  # every line added: none is shown twice
        self.timeline: list[str] = []  # a long view's lines, its label first (.timeline)
        self.timeline_ids: list[str] = []  # the episodes (and log turns) they are of
        self.in_timeline: set[tuple[str, int]] = set()  # (path, line) of the lines they show
        self.quotes: dict[tuple[Any, ...], str] = {}  # a line is tried more than once

    def quote(self, passage: PassageHit) -> str:
        """The passage as a quoted line (:func:`_quote`), rendered once."""
        key = (passage.turn, passage.speaker, passage.text, passage.via, passage.timestamp)
        line = self.quotes.get(key)
        if line is None:
            line = self.quotes[key] = _quote(passage)
        return line

    def take(self, chars: int) -> bool:
        """Claim ``chars`` of the room left; False (and nothing claimed) when it is not there."""
        if chars > self.room:
            return False
        self.room -= chars
        return True

    def add_fact(self, line: str) -> bool:
        """Add a fact line (and the facts label before the first); whether it fit."""
        label = 0 if self.facts else len(_FACTS_LABEL) + 1
        if line not in self.shown and self.take(len(line) + 1 + label):
            self.facts.append(line)
            self.shown.add(line)
            return True
        return False

    def add_session(self, lines: Sequence[str], max_chars: int) -> None:
        """Add the session's lines in order, while they fit in ``max_chars`` and the room."""
        used = 0
        for line in lines:
            if line in self.shown:
                continue
            cost = len(line) + 1 + (0 if self.session else len(_SESSION_LABEL) + 1)
            if used + cost > max_chars or not self.take(cost):
                break
            used += cost
            self.session.append(line)
            self.shown.add(line)

    def add_passage(self, passage: PassageHit, header: str | None) -> bool:
        """Quote a passage under its episode's header (or with the recent turns); whether it
        fit and was not there already."""
        line = self.quote(passage)
        if line in self.shown or (passage.path, passage.line) in self.in_timeline:
            return False
        if passage.via == "log":
            key = (passage.path, passage.line)
            label = 0 if self.recent else len(_RECENT_LABEL) + 1
            if key in self.recent or not self.take(len(line) + 1 + label):
                return False
            self.recent[key] = line
            self.shown.add(line)
            return True
        group = self.groups.get(passage.episode_id)
        if group is not None and passage.line in group[1]:
            return False
        extra = 0 if group is not None or header is None else len(header) + 1
        if not self.take(len(line) + 1 + extra):
            return False
        if group is None:
            group = self.groups.setdefault(passage.episode_id, (header or "", {}))
        group[1][passage.line] = line
        self.shown.add(line)
        return True

    def add_header(self, episode_id: str, header: str) -> None:
        """Show an episode's header alone (its summary found it, no line did), if it fits."""
        if episode_id in self.timeline_ids:
            return  # the timeline shows it already
        if episode_id not in self.groups and self.take(len(header) + 1):
            self.groups[episode_id] = (header, {})

    def has(self, passage: PassageHit) -> bool:
        """Whether the passage is quoted already."""
        if (passage.path, passage.line) in self.in_timeline:
            return True
        if passage.via == "log":
            return (passage.path, passage.line) in self.recent
        group = self.groups.get(passage.episode_id)
        return group is not None and passage.line in group[1]

    def render(self) -> str:
        """The block as the model sees it; empty when nothing was added."""
        if not (self.session or self.facts or self.groups or self.recent or self.timeline):
            return ""
        parts = [OPEN, FRAME]
        if self.session:
            parts += [_SESSION_LABEL, *self.session]
        if self.facts:
            parts += [_FACTS_LABEL, *self.facts]
        parts += self.timeline
        for header, lines in self.groups.values():
            parts += [header, *(lines[n] for n in sorted(lines))]
        if self.recent:
            parts += [_RECENT_LABEL, *(self.recent[k] for k in sorted(self.recent))]
        parts.append(CLOSE)
        return "\n".join(parts)


def _taking_turns(ranked: Sequence[PassageHit]) -> list[PassageHit]:
    """``ranked`` (best first) reordered so the query's words take turns: each next line is
    the best by its score, damped to ``REDUNDANT_SCORE`` x when every word it matched is in
    ``COVERED_TIMES`` lines before it already; equal scores keep their order."""
    # Damping only ever lowers a score, so a lazy greedy is exact: a line popped with a stale
    # score is pushed back with its damped one.
    heap = [(-p.score, n, False) for n, p in enumerate(ranked)]
    heapq.heapify(heap)
    covered: dict[str, int] = {}
    out: list[PassageHit] = []
    while heap:
        key, n, damped = heapq.heappop(heap)
        passage = ranked[n]
        redundant = bool(passage.matched) and all(
            covered.get(term, 0) >= COVERED_TIMES for term in passage.matched
        )
        if redundant and not damped:
            heapq.heappush(heap, (key * REDUNDANT_SCORE, n, True))
            continue
        out.append(passage)
        for term in passage.matched:
            covered[term] = covered.get(term, 0) + 1
    return out


def _with_replies(
    passages: Sequence[PassageHit], near_of: Mapping[tuple[str, int], Sequence[PassageHit]]
) -> list[PassageHit]:
    """The passages, and after each question the line that answers it, ranked together: the
    answer scores ``REPLY_SCORE`` x the question's (it may share no word with the query)."""
    ranked = {(p.path, p.line): p for p in passages}
    for passage in passages:
        if "?" not in passage.text:
            continue
        for near in near_of.get((passage.path, passage.line), ()):
            key = (near.path, near.line)
            if near.line == passage.line + 1 and key not in ranked:
                ranked[key] = _evolve(near, score=REPLY_SCORE * passage.score)
    return sorted(ranked.values(), key=lambda p: -p.score)


def render_payload(
    result: SearchResult,
    budget: int,
    active_skill: str | None = None,
    neighbours: Mapping[tuple[str, int], Sequence[PassageHit]] | None = None,
    handles: Mapping[str, str] | None = None,
    min_score: float = 0.0,
    working: Mapping[str, Any] | None = None,
    view: LongView | None = None,
) -> RetrievePayload:
    """Fill ``budget`` tokens with matching facts, then quoted evidence (see the module doc).

    ``neighbours`` maps (path, line) of a passage to the passages next to it in its episode;
    ``active_skill`` is the approved skill the caller matched to the query, if any;
    ``handles`` maps an episode id to the shorter name it is shown by (one that reads it back);
    facts, passages and episodes of relevance below ``min_score`` are left out, and those of
    low confidence come after everything else, marked ``(low confidence)``; ``working`` is the
    session's working memory before this request, whose active skill's steps go first;
    ``view``, a long view the query asks for, makes the evidence a timeline instead
    (:mod:`memoryclaw.recall.timeline`).
    """
    block = _Block(budget * CHARS_PER_TOKEN)
    if working:
        block.add_session(session_lines(working), budget * CHARS_PER_TOKEN // SESSION_SHARE)
    facts = [f for f in result.facts if f.relevance >= min_score and f.relevance > 0]
    used_facts = [
        fact
        for fact in facts
        if not _is_low(fact.confidence)
        and block.add_fact(f"- {human_annotations(_clean(fact.render()))}")
    ]
    all_episodes = [e for e in result.results if e.relevance >= min_score]
    low_ids = {e.id for e in result.results if _is_low(e.confidence)}
    low_ids |= {p.episode_id for p in result.passages if _is_low(p.episode_confidence)}
    results = [e for e in all_episodes if e.id not in low_ids]
    lined: list[PassageHit] = []  # the timeline's lines, when the query asks for the long view
    if view is not None:
        lined = _add_timeline(block, result, view, handles or {}, (min_score, low_ids))
    passages = [p for p in result.passages if p.relevance >= min_score]
    episodes = {e.id: e for e in result.results}
    names = handles or {}
    near_of = neighbours or {}

    def line_evidence(passage: PassageHit) -> _Evidence:
        about = f"{passage.episode_summary} {' '.join(passage.episode_tags)}"
        name = names.get(passage.episode_id, passage.episode_id)
        return passage.episode_id, name, passage.timestamp, passage.text, about

    def summary_evidence(episode: EpisodeResult, quoted: bool = False) -> _Evidence:
        summary = _beyond_a_quote(episode.summary) if quoted else episode.summary
        shown = shorten(_clean(summary), HEADER_SUMMARY_CHARS)  # as its header shows it
        name = names.get(episode.id, episode.id)
        return episode.id, name, episode.timestamp, shown, " ".join(episode.tags)

    # Room for the mark of each fact an episode that may be shown differs from (see _mark).
    evidence: list[_Evidence] = []
    if used_facts:  # what a fact is compared with: without a fact, nothing is
        candidates = [p for p in passages if p.via != "log"]
        candidates += [n for ns in near_of.values() for n in ns if n.via != "log"]
        evidence = [line_evidence(p) for p in candidates] + [summary_evidence(e) for e in results]
    room = sum(
        max((len(_CURRENT_MARK.format(_clean(d.name))) for d in _differs(f, evidence)), default=0)
        for f in used_facts
    )
    held = room if block.take(room) else 0
    headers: dict[tuple[str, str, str], str] = {}  # an episode's lines share its header

    def header_for(passage: PassageHit) -> str:
        key = (passage.episode_id, passage.timestamp, passage.episode_summary)
        header = headers.get(key)
        if header is None:
            episode = episodes.get(passage.episode_id)
            summary = episode.summary if episode else passage.episode_summary
            name = names.get(passage.episode_id, passage.episode_id)
            low = LOW_CONFIDENCE if passage.episode_id in low_ids else ""
            header = headers[key] = _header(name, passage.timestamp, _beyond_a_quote(summary)) + low
        return header

    def summary_header(episode: EpisodeResult) -> str:
        low = LOW_CONFIDENCE if episode.id in low_ids else ""
        name = names.get(episode.id, episode.id)
        return _header(name, episode.timestamp, episode.summary) + low

    quoted = {p.episode_id for p in passages}
    for episode in results[:_SUMMARY_ONLY_FIRST]:  # found by what no line quotes
        if episode.id not in quoted:
            block.add_header(episode.id, summary_header(episode))
    chosen: list[PassageHit] = []
    ranked = _taking_turns(_with_replies(passages, near_of))
    for passage in ranked:
        if passage.episode_id in low_ids:
            continue  # low confidence: only once everything else is in (below)
        if not block.has(passage) and block.add_passage(passage, header_for(passage)):
            chosen.append(passage)
    query_words = set(result.plan.terms)
    for passage in list(chosen):
        wanted = None  # the words a neighbour must share: the query's, or the passage's
        for near in near_of.get((passage.path, passage.line), ()):
            if block.has(near) or len(block.quote(near)) >= block.room:
                continue  # there already, or no room for it: its words need not be read
            if wanted is None:
                wanted = query_words.union(extract_keywords(passage.text))
            words = extract_keywords(f"{near.speaker or ''} {near.text}")
            if not wanted.isdisjoint(words) and block.add_passage(near, header_for(near)):
                chosen.append(near)
    for episode in results:
        block.add_header(episode.id, summary_header(episode))
    # Then the lines relevant enough only as judged in a larger vault (PassageHit.smoothed):
    # in a small one, a line that shares with the query only a word of half its lines.
    for passage in result.passages:
        later = passage.relevance < min_score <= passage.smoothed
        low = passage.episode_id in low_ids
        if (
            later
            and not low
            and not block.has(passage)
            and block.add_passage(passage, header_for(passage))
        ):
            chosen.append(passage)
    # Low-confidence memories fill what room is left, in their own rank order.
    used_facts += [
        fact
        for fact in facts
        if _is_low(fact.confidence)
        and block.add_fact(f"- {human_annotations(_clean(fact.render()))}{LOW_CONFIDENCE}")
    ]
    for passage in ranked:
        low = passage.episode_id in low_ids
        if low and not block.has(passage) and block.add_passage(passage, header_for(passage)):
            chosen.append(passage)
    for episode in all_episodes:
        block.add_header(episode.id, summary_header(episode))
    block.room += held
    shown = [line_evidence(p) for p in chosen if p.via != "log"]
    shown += [
        summary_evidence(episodes[i], bool(ls))
        for i, (_, ls) in block.groups.items()
        if i in episodes
    ]
    differs: dict[str, tuple[Differs, ...]] = {}
    for n, fact in enumerate(used_facts):  # block.facts[n] is its line
        found = _differs(fact, shown)
        if found and block.take(len(_mark(found))):
            block.facts[n] += _mark(found)
            differs[fact.id] = found
    context = block.render()
    used_ids = list(dict.fromkeys([*block.timeline_ids, *block.groups]))
    used_episodes = [episodes[i] for i in used_ids if i in episodes]
    working_memory = {
        "goal": view.query if view is not None else result.plan.query,
        "plan": [],
        "facts": {f"{f.entity} {f.field}": f.value for f in used_facts},
        "recent_observations": [e.summary for e in used_episodes],
        "active_skill": active_skill,
    }
    return RetrievePayload(
        query=view.query if view is not None else result.plan.query,
        context=context,
        working_memory=working_memory,
        tokens=estimate_tokens(context),
        budget=budget,
        episodes=tuple(used_episodes),
        facts=tuple(used_facts),
        search=result,
        passages=tuple([*lined, *chosen]),
        differs=differs,
    )


def _add_timeline(
    block: _Block,
    result: SearchResult,
    view: LongView,
    names: Mapping[str, str],
    within: tuple[float, set[str]],
) -> list[PassageHit]:
    """Put the timeline of a long view in ``block`` (:mod:`memoryclaw.recall.timeline`), its
    label first; ``within`` is the least relevance shown and the episodes of low confidence
    (last to claim room, marked).  The passages it quotes, for the payload to list."""
    min_score, low_ids = within
    label = timeline_label(view.reason)
    spread = view.kind == "order"  # an order spans the conversations
    room = block.room - len(label) - 1
    entries = timeline(result, room, names, spread=spread, min_score=min_score, low=low_ids)
    if not entries or not block.take(len(label) + 1 + sum(len(e.text) + 1 for e in entries)):
        return []
    block.timeline = [label, *(e.text for e in entries)]
    block.timeline_ids = [e.episode_id for e in entries]
    block.in_timeline = {(e.passage.path, e.passage.line) for e in entries if e.passage}
    return [e.passage for e in entries if e.passage is not None]
