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

Before all of these, in a live session, what the session is doing that its history does not
hold (its working memory, :mod:`memoryclaw.recall.working`): the steps of its active skill, at most
a fifth of the budget.  The request, the assistant's replies and stated steps, and the tool
results are in the history a host that names its session sends along, so they are not repeated
here; nor is any line repeated within the block.

A fact shown with an episode line that states another value of it (a date, an email, a URL
or a phone number; :func:`_states_other_value`) says which of the two was written later:
``(current value, newer than ep-…)`` when the fact was written after every such episode,
else ``(older than ep-…)``, naming the newest episode that was written after it.

Recalled text is data: the block opens with a line that says so, and a stored
``</memoryclaw>`` cannot close it early.  Tokens are estimated as characters / 4, and the
rendered block never exceeds the budget.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from ..vault.dates import human_annotations, human_date
from ..vault.notes import value_key, value_kind
from ..vault.recalled import CLOSE, FRAME, OPEN
from ..vault.words import extract_keywords
from .results import EpisodeResult, FactResult, PassageHit, SearchResult

CHARS_PER_TOKEN = 4
_FACTS_LABEL, _RECENT_LABEL = "Facts (age):", "Recent turns (not yet consolidated):"
_SESSION_LABEL = "This session:"
SESSION_SHARE = 5  # the session's lines take at most 1/SESSION_SHARE of the budget
SESSION_LINE_CHARS = 200
# A quoted line is cut at this many characters: one long turn must not crowd out the rest.
PASSAGE_CHARS = 360
# A header's summary is cut at this many characters.  Only an episode none of whose lines is
# quoted shows one: where lines are quoted they are the evidence, and on LoCoMo dev the room a
# summary took brought more evidence as further lines than as a summary.
HEADER_SUMMARY_CHARS = 90
_MIN_LINE_CHARS = 60  # below this a cut line says too little to be worth its place
_SUMMARY_ONLY_FIRST = 3  # top episodes whose summary is shown even when no line of theirs is
# Appended to a fact or an episode header of low confidence: it is shown only after all else.
LOW_CONFIDENCE = " (low confidence)"
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

# Recalled text is rendered as data (see ``_clean``).  Characters that hide or reorder text
# are dropped: C0/C1 controls that are not whitespace (NUL ...), the Unicode format characters
# (zero-width spaces and joiners, bidi overrides and isolates, invisible operators, the
# "tag" letters U+E0000-E007F that spell text no one sees), Hangul fillers, the combining
# grapheme joiner and the variation selectors beyond the 16 emoji ones.
_HIDDEN_RE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd"
    "\u070f\u0890\u0891\u08e2\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
    "\U000e0100-\U000e01ef]"
)
# A run of emoji variation selectors shows as one (or none): its tail can only carry data.
_SELECTOR_RUN_RE = re.compile("([\ufe00-\ufe0f])[\ufe00-\ufe0f]+")
# Markup a model may read as structure wherever it stands: our own tag (any case or
# spacing, with or without its ">", so a cut-off one is caught too), chat-template tokens
# (<|im_start|>, <<SYS>>, [INST] ...) and any XML-like tag (<system>, </s>, <instructions>).
# Matched on the text's look-alike skeleton (_LOOKALIKES), so ＜/ｍemoryclaw＞ counts too.
_MARKUP_RE = re.compile(
    r"<<\s*/?\s*sys\s*>>"
    r"|<\|[^<>|]{0,80}\|>"
    r"|\[\s*/?\s*(?:inst|sys|system_prompt|available_tools|tool_calls|tool_results)\s*\]"
    r"|<\s*/?\s*memoryclaw[^<>]{0,80}>?"
    r"|</?[^\W\d_][\w:.-]{0,80}(?:\s[^<>]{0,200})?/?>",
    re.IGNORECASE,
)
# What a defanged tag's brackets become: visibly brackets, but no tag to a model or a parser.
_QUOTE_OPEN, _QUOTE_CLOSE = "‹", "›"
# Cyrillic and Greek letters that look Latin, each followed by the letter it looks like.
_LATIN_LOOKALIKES = (
    "аa еe оo рp сc уy хx іi јj ѕs ԁd ӏl οo αa АA ВB ЕE КK МM НH ОO РP СC ТT ХX УY"
    " ΑA ΒB ΕE ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX"
)
# Characters written in place of those that spell markup, one for one (positions are kept):
# fullwidth forms, bracket, slash and bar look-alikes, and Cyrillic and Greek letters that
# look Latin.  Used only to find markup; the text shown keeps its own characters.
_LOOKALIKES = str.maketrans(
    {
        **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
        **dict.fromkeys("\u2039\u3008\u2329\u27e8\u27ea\u02c2\u1438\u276c\u276e\ufe64", "<"),
        **dict.fromkeys("\u203a\u3009\u232a\u27e9\u27eb\u02c3\u1433\u276d\u276f\ufe65", ">"),
        **dict.fromkeys("\u2044\u2215\u29f8\u2571", "/"),
        **dict.fromkeys("\u2223\u01c0\u05c0", "|"),
        **{pair[0]: pair[1] for pair in _LATIN_LOOKALIKES.split()},
    }
)
# Markdown that opens a block when it starts a line (a heading, a quote, a code fence, a rule
# or setext underline).  Recalled text never starts a line, but it may follow the payload's
# bare indentation, so one at its start is escaped the markdown way.
_BLOCK_START_RE = re.compile(r"#{1,6}(?=\s|$)|>|`{3}|~{3}|([-*_=])\s*\1\s*\1")


# A value of each kind value_kind knows, found anywhere in a line (its patterns unanchored);
# a match is taken for that kind only when value_kind says so of it (a date is no phone).
_VALUE_RES = {
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
    "url": re.compile(r"https?://\S+"),
    "date": re.compile(r"(?<![\d-])\d{4}-\d{2}-\d{2}(?![\d-])"),
    "phone": re.compile(r"\+?\d[\d\s().-]{5,18}\d"),
}
_CURRENT_MARK, _OLDER_MARK = " (current value, newer than {})", " (older than {})"


def estimate_tokens(text: str) -> int:
    """Tokens as the payload budget counts them: one per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


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


def _clean(text: str) -> str:
    """Recalled text as quoted data: one line, nothing hidden, no markup, no block opener.

    Line breaks of every kind (and tabs, and other whitespace) become one space; characters
    that hide or reorder text are dropped; tags and chat-template tokens, however spelled,
    get ``‹ ›`` for brackets (so a stored ``</memoryclaw>`` shows as ``‹/memoryclaw›`` and
    cannot end the block); a heading, quote, fence or rule at the start is escaped with
    ``\\``.  Ordinary sentences come out as they went in.
    """
    text = _SELECTOR_RUN_RE.sub(r"\1", _HIDDEN_RE.sub("", text))
    text = _defang(" ".join(text.split()))
    return "\\" + text if _BLOCK_START_RE.match(text) else text


def _defang(text: str) -> str:
    """``text`` with the outer brackets of its markup (``_MARKUP_RE``) made ``‹ ›``, markup
    inside a match included."""
    skeleton = text.translate(_LOOKALIKES)
    out, done = [], 0
    for match in _MARKUP_RE.finditer(skeleton):
        found = match.group(0)
        opening = len(found) - len(found.lstrip("<["))
        closing = len(found) - len(found.rstrip(">]"))
        # what a match spans may hold more markup (a cut-off "</memoryclaw[/INST]"): defanged too
        inner = _defang(text[match.start() + opening : match.end() - closing])
        out += [text[done : match.start()], _QUOTE_OPEN * opening, inner, _QUOTE_CLOSE * closing]
        done = match.end()
    return "".join([*out, text[done:]])


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` at a word boundary, marked with an ellipsis."""
    if len(text) <= max_chars:
        return text
    cut = text[: max(0, max_chars - 1)].rstrip()
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut + "…"


def _quote(passage: PassageHit) -> str:
    """``  #3 8 May 2023 Caroline: I went … yesterday (7 May 2023) …``"""
    mark = f"#{passage.turn} " if passage.turn is not None else ""
    who = f"{_clean(passage.speaker)}: " if passage.speaker else ""
    text = human_annotations(_clean(passage.text))
    # a line under an episode's header is dated by it; a recent turn carries its own date
    day = f"{human_date(passage.timestamp[:10])} " if passage.via == "log" else ""
    head = f"  {mark}{day}{who}"
    return head + shorten(text, max(PASSAGE_CHARS - len(head), _MIN_LINE_CHARS))


def _header(name: str, timestamp: str, summary: str = "") -> str:
    """``- ep-d6b27f26 (8 May 2023)``, and ``: summary`` when one is given."""
    summary = shorten(_clean(summary), HEADER_SUMMARY_CHARS)
    day, shown = human_date(timestamp[:10]), _clean(name)  # an id is hand-editable text
    return f"- {shown} ({day}): {summary}" if summary else f"- {shown} ({day})"


def _beyond_a_quote(summary: str) -> str:
    """What a summary says besides quoting a turn: all of a summary that quotes none; of
    ``Ann asked Bob about rent: "…?"`` the topic; of ``Ann told Bob: "…"`` nothing (the quoted
    lines of its episode are the turns the query matched, and say more in the same room)."""
    head, quote, _ = summary.partition(': "')
    if not quote:
        return summary
    return head if " about " in head else ""


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
        line = _quote(passage)
        if line in self.shown:
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
        if episode_id not in self.groups and self.take(len(header) + 1):
            self.groups[episode_id] = (header, {})

    def has(self, passage: PassageHit) -> bool:
        """Whether the passage is quoted already."""
        if passage.via == "log":
            return (passage.path, passage.line) in self.recent
        group = self.groups.get(passage.episode_id)
        return group is not None and passage.line in group[1]

    def render(self) -> str:
        """The block as the model sees it; empty when nothing was added."""
        if not (self.session or self.facts or self.groups or self.recent):
            return ""
        parts = [OPEN, FRAME]
        if self.session:
            parts += [_SESSION_LABEL, *self.session]
        if self.facts:
            parts += [_FACTS_LABEL, *self.facts]
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
                ranked[key] = replace(near, score=REPLY_SCORE * passage.score)
    return sorted(ranked.values(), key=lambda p: -p.score)


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
        for m in _VALUE_RES[kind].finditer(text)
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


def session_lines(working: Mapping[str, Any]) -> list[str]:
    """What a live session is doing that its history does not hold, as payload lines: the
    steps of its active skill (read from the vault).  Its goal, observations and the steps
    the assistant stated are turns of the session, which the host sends as its history."""
    skill = working.get("active_skill")
    plan = [str(step) for step in working.get("plan") or ()]
    if not (isinstance(skill, str) and skill and plan):
        return []
    return [shorten(_clean(f"- plan ({skill}): {'; '.join(plan)}"), SESSION_LINE_CHARS)]


def render_payload(
    result: SearchResult,
    budget: int,
    active_skill: str | None = None,
    neighbours: Mapping[tuple[str, int], Sequence[PassageHit]] | None = None,
    handles: Mapping[str, str] | None = None,
    min_score: float = 0.0,
    working: Mapping[str, Any] | None = None,
) -> RetrievePayload:
    """Fill ``budget`` tokens with matching facts, then quoted evidence (see the module doc).

    ``neighbours`` maps (path, line) of a passage to the passages next to it in its episode;
    ``active_skill`` is the approved skill the caller matched to the query, if any;
    ``handles`` maps an episode id to the shorter name it is shown by (one that reads it back);
    facts, passages and episodes of relevance below ``min_score`` are left out, and those of
    low confidence come after everything else, marked ``(low confidence)``; ``working`` is the
    session's working memory before this request, whose active skill's steps go first.
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
    candidates = [p for p in passages if p.via != "log"]
    candidates += [n for ns in near_of.values() for n in ns if n.via != "log"]
    evidence = [line_evidence(p) for p in candidates] + [summary_evidence(e) for e in results]
    room = sum(
        max((len(_CURRENT_MARK.format(_clean(d.name))) for d in _differs(f, evidence)), default=0)
        for f in used_facts
    )
    held = room if block.take(room) else 0

    def header_for(passage: PassageHit) -> str:
        episode = episodes.get(passage.episode_id)
        summary = episode.summary if episode else passage.episode_summary
        name = names.get(passage.episode_id, passage.episode_id)
        low = LOW_CONFIDENCE if passage.episode_id in low_ids else ""
        return _header(name, passage.timestamp, _beyond_a_quote(summary)) + low

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
        for near in near_of.get((passage.path, passage.line), ()):
            words = set(extract_keywords(f"{near.speaker or ''} {near.text}"))
            shared = words & (query_words | set(extract_keywords(passage.text)))
            if shared and not block.has(near) and block.add_passage(near, header_for(near)):
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
    used_ids = list(block.groups)
    used_episodes = [episodes[i] for i in used_ids if i in episodes]
    working_memory = {
        "goal": result.plan.query,
        "plan": [],
        "facts": {f"{f.entity} {f.field}": f.value for f in used_facts},
        "recent_observations": [e.summary for e in used_episodes],
        "active_skill": active_skill,
    }
    return RetrievePayload(
        query=result.plan.query,
        context=context,
        working_memory=working_memory,
        tokens=estimate_tokens(context),
        budget=budget,
        episodes=tuple(used_episodes),
        facts=tuple(used_facts),
        search=result,
        passages=tuple(chosen),
        differs=differs,
    )
