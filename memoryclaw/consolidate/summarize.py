"""Deterministic extractive summaries of raw logs: episodes, tags, entities and facts.

No model is involved.  A log is cut into segments at its size limits, preferring a change of
topic or a pause near the limit; tool turns stay with the turn that triggered them.  Each
segment keeps its most informative sentence as the summary, one condensed bullet per
informative turn (with every searchable word of a human turn) and the facts its turns state
(:mod:`memoryclaw.consolidate.extraction`).  Everything is read from redacted text, so no recognised
secret reaches an episode.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate

from ..vault.dates import resolve_relative_dates
from ..vault.factnames import PREFERENCE
from ..vault.logformat import RawLog
from ..vault.naming import slugify
from ..vault.redact import redact
from ..vault.turnlines import TurnView, clip, detail_line, turn_view, utc
from ..vault.words import SMALL_TALK, STOPWORDS, extract_keywords, sentences
from .extraction import FactDraft, facts_from_tool_call, facts_from_turn
from .names import (
    CALENDAR,
    CAPS_PATTERN,
    CODE_PATTERN,
    CONNECTORS,
    EMAIL_PATTERN,
    GENERIC,
    NOT_NAMES,
    REQUEST_VERBS,
    TITLES,
    UNITS,
    VERBS,
    bare_word,
    is_title,
    local_name,
    name_ok,
    titled,
)
from .standing import standing_facts_of

# The fields a standing preference of the same turn states again, in the user's own words.
_LIKING = frozenset({"likes", "dislikes", "prefers"})

SUMMARY_CHARS = 200
_MIN_TAGS, _MAX_TAGS, _MAX_ENTITIES = 3, 6, 15
_TOPIC_WINDOW = 4  # turns compared on each side of a candidate cut
_RANK = {"low": 0, "medium": 1, "high": 2}

_ASIDE_RE = re.compile(r"\[[^\]\n]{0,400}\]")  # "[shares an image: …]": a caption, not a statement
_SUMMARY_TOPICS = 3
_ENTITY_RE = re.compile(
    rf"(?P<email>{EMAIL_PATTERN})|(?P<handle>(?<![\w.])@[A-Za-z0-9_]{{2,30}})"
    rf"|(?P<code>{CODE_PATTERN})|(?P<caps>{CAPS_PATTERN})"
)
_TAGGABLE_RE = re.compile(r"[a-z][a-z0-9-]{1,30}[a-z0-9]")
_REQUEST_PREFIX_RE = re.compile(
    r"(?i)^(?:(?:hey|hi|ok|okay)[,!]?\s+)?(?:please\s+|(?:can|could|would|will) you(?: please)?"
    r"\s+|i (?:need|want|['’]d like|would like) you to\s+)"
)


@dataclass(frozen=True)
class EpisodeDraft:
    """Everything an episode file needs, for one contiguous range of a log's turns."""

    first_turn: int
    last_turn: int
    timestamp: datetime
    summary: str
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    participants: tuple[str, ...]
    details: tuple[str, ...]
    facts: tuple[FactDraft, ...]
    confidence: str
    slug: str


def summarize_log(log: RawLog, *, max_turns: int = 24, max_chars: int = 6000) -> list[EpisodeDraft]:
    """Split the log into episodes along topic or size boundaries and summarize each."""
    views = [turn_view(number, turn) for number, turn in enumerate(log.turns, start=1)]
    channel = str(log.meta.get("channel") or "")
    segments = _segments(views, max(1, max_turns), max(1, max_chars))
    return [_episode(views, start, end, channel) for start, end in segments]


# ---------------------------------------------------------------------- segmentation


def _segments(views: Sequence[TurnView], max_turns: int, max_chars: int) -> list[tuple[int, int]]:
    """Half-open turn index ranges covering every turn once, in order."""
    prefix = list(accumulate((len(v.turn.content) for v in views), initial=0))

    def fits(a: int, b: int) -> bool:
        return b - a <= max_turns and prefix[b] - prefix[a] <= max_chars

    # A unit is a turn and the tool turns after it; a unit too big to keep whole falls apart.
    starts = [i for i, v in enumerate(views) if i == 0 or not v.tool]
    units: list[int] = []
    for a, b in zip(starts, [*starts[1:], len(views)]):
        units.extend([a] if fits(a, b) else range(a, b))
    bounds, out, first = [*units, len(views)], [], 0
    while first < len(units):
        last = first + 1
        while last < len(units) and fits(bounds[first], bounds[last + 1]):
            last += 1
        cut = last
        if last < len(units):
            cut = _best_cut(views, bounds, first, last, prefix, (max_turns, max_chars))
        out.append((bounds[first], bounds[cut]))
        first = cut
    return out


def _best_cut(
    views: Sequence[TurnView],
    bounds: Sequence[int],
    first: int,
    last: int,
    prefix: Sequence[int],
    limits: tuple[int, int],
) -> int:
    """The unit boundary ending a segment: a topic shift or a pause near a balanced size."""
    start, end = bounds[first], bounds[last]
    remaining, chars = len(views) - start, prefix[-1] - prefix[start]
    parts = max(2, math.ceil(remaining / limits[0]), math.ceil(chars / limits[1]))
    if math.ceil(chars / limits[1]) > math.ceil(remaining / limits[0]):  # size is the limit
        ideal = min(float(bisect_left(prefix, prefix[start] + chars / parts)), end)
    else:
        ideal = min(start + remaining / parts, end)
    best, best_score = last, -math.inf
    for cut in range(first + 1, last + 1):
        at = bounds[cut]
        if 2 * (at - start) < end - start:  # a tiny segment would only add noise
            continue
        left = {k for v in views[max(start, at - _TOPIC_WINDOW) : at] for k in v.keywords}
        right = {k for v in views[at : at + _TOPIC_WINDOW] for k in v.keywords}
        union = left | right
        shift = 1 - len(left & right) / len(union) if union else 0.5
        gap = (utc(views[at].turn.timestamp) - utc(views[at - 1].turn.timestamp)).total_seconds()
        pause = 1.0 if gap >= 1800 else 0.3 if gap >= 300 else 0.0
        score = shift + pause - 2 * abs(at - ideal) / limits[0]
        if score >= best_score:  # ties go to the later cut: fuller segments
            best, best_score = cut, score
    return best


# ---------------------------------------------------------------------------- episode


def _episode(views: Sequence[TurnView], start: int, end: int, channel: str) -> EpisodeDraft:
    seg = views[start:end]
    people = [v.speaker for v in seg if not v.tool] or [v.turn.role for v in seg]
    participants = tuple(dict.fromkeys(people))
    entities = _entities(seg, list(dict.fromkeys(v.name for v in seg if v.name and not v.tool)))
    scores = _keyword_scores(seg, entities)
    # what the people said (or the tools they used) tags an episode; an assistant only pads
    said = {k for v in seg if not v.human and not v.tool for k in v.keywords}
    said -= {k for v in seg if v.human for k in v.keywords}
    tags = _tags(scores, participants, entities, channel, said if len(said) < len(scores) else ())
    facts: dict[tuple[str, str, str], FactDraft] = {}
    for view in seg:
        for fact in _facts(views, view):
            key = (fact.entity.lower(), fact.field, fact.value.lower())
            if key not in facts or _RANK[fact.confidence] > _RANK[facts[key].confidence]:
                facts[key] = fact
    words = {k for v in seg for k in v.keywords}
    confidence = "high" if len(words) >= 8 else "medium"
    if not any(v.human and v.keywords for v in seg) or len(words) < 3:
        confidence = "low"
    return EpisodeDraft(
        first_turn=start + 1,
        last_turn=end,
        timestamp=utc(seg[0].turn.timestamp),
        summary=redact(_summary(seg, scores, participants, _topics(tags, participants, channel))),
        tags=tags,
        entities=entities,
        participants=participants,
        details=tuple(redact(d) for d in (detail_line(v) for v in seg) if d),
        facts=tuple(facts.values()),
        confidence=confidence,
        slug=slugify(" ".join(tags[:3]), max_length=40),
    )


def _facts(views: Sequence[TurnView], view: TurnView) -> Iterator[FactDraft]:
    """What a human turn states, or whom a tool call writes to, named by the turn that asked."""
    if view.human:
        said_on = utc(view.turn.timestamp).date()
        text = resolve_relative_dates(view.text, said_on)  # "yesterday" dates an event
        standing = list(standing_facts_of(views, view))
        # "I prefer tea" said to the agent is one preference, kept as the user's sentence; the
        # bare "prefers: tea" of the same turn would be its duplicate.
        said = [d.value.casefold() for d in standing if d.field == PREFERENCE]
        for draft in facts_from_turn(view.number, text, view.name, said_on):
            if draft.field in _LIKING and any(draft.value.casefold() in s for s in said):
                continue
            yield draft
        yield from standing
    elif view.turn.role == "tool_call":
        recent = views[max(0, view.number - 50) : view.number - 1]  # bounded: logs can be long
        trigger = next((v for v in reversed(recent) if v.human), None)
        yield from facts_from_tool_call(view.number, view.text, trigger.text if trigger else "")


def _request(sentence: str) -> str | None:
    """What a request asks for ("Can you find X?" -> "find X?"), or None for a statement."""
    prefix = _REQUEST_PREFIX_RE.match(sentence)
    rest = sentence[prefix.end() :] if prefix else sentence
    verb = rest.split(" ", 1)[0].lower().strip(",.!?")
    return rest if verb in REQUEST_VERBS and (prefix or rest[:1].isupper()) else None


def _summary(
    seg: Sequence[TurnView],
    scores: dict[str, float],
    participants: Sequence[str],
    topics: Sequence[str] = (),
) -> str:
    """Who, about what, and the most informative sentence, said by its speaker; a human's
    request comes first.  Never a bare greeting, question or image caption: with nothing
    but those, who talked about which topics."""
    calls = [v.turn.tool for v in seg if v.turn.role == "tool_call" and v.turn.tool]
    tools = ", ".join(dict.fromkeys(calls))
    pool = [v for v in seg if v.human and v.keywords] or [v for v in seg if not v.tool]
    best: tuple[float, str, TurnView] | None = None
    for view in pool:
        for sentence in sentences(_ASIDE_RE.sub(" ", view.text)):  # not an image's caption
            words = extract_keywords(sentence)
            if not words or all(w in SMALL_TALK or w in GENERIC for w in words):
                continue  # "Hey Mel, good to see you!" says nothing of what happened
            score = sum(
                1 + min(scores.get(k, 0.0), 4.0) / 2 + any(c.isdigit() for c in k) for k in words
            )
            if view.human and _request(sentence) is not None:  # what the person came for
                score *= 2.0
            elif sentence.endswith("?"):
                score *= 0.3  # a question is what someone did not know: a statement first
            if best is None or score > best[0]:
                best = (score, " ".join(sentence.split()), view)
    if best is None and topics and any(not v.tool for v in seg):
        return clip(_talked_about(participants, topics), SUMMARY_CHARS)
    if best is None:
        core = f"{len(seg)} turn{'s' * (len(seg) != 1)} without text"
        return clip(f"{core} (used {tools})." if tools else f"{core}.", SUMMARY_CHARS)
    _, sentence, view = best
    names = [p for p in participants if p != view.speaker]
    other = names[0] if view.name and len(participants) == 2 and names[0] in _named(seg) else ""
    request = _request(sentence) if view.human else None
    if request is not None:
        head = f"{view.label} asked {other} to " if other else f"{view.label} asked to "
        body = request[:1].lower() + request[1:].rstrip(".!?")
        core = head + clip(body, SUMMARY_CHARS - len(head) - 1) + "."
    else:
        # A statement speaks for itself (the tags name the topics); a question says only
        # what was not known, so it comes with the topics the exchange was about.
        about = _join(topics) if topics and sentence.endswith("?") else ""
        head = f"{view.label} asked {other} about {about}: " if about else ""
        if not head or len(head) > SUMMARY_CHARS // 2:
            verb = "asked" if sentence.endswith("?") else "told" if other else "said"
            head = f"{view.label} {verb} {other}: " if other else f"{view.label} {verb}: "
        head = head.replace("  ", " ")
        core = f'{head}"{clip(sentence.replace(chr(34), chr(39)), SUMMARY_CHARS - len(head) - 2)}"'
    suffix = f" (used {tools})"
    if tools and len(core) + len(suffix) <= SUMMARY_CHARS:
        core = core[:-1] + suffix + "." if core.endswith(".") else core + suffix
    return clip(core, SUMMARY_CHARS)  # only a very long speaker name makes this cut


def _join(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _talked_about(participants: Sequence[str], topics: Sequence[str]) -> str:
    who = _join([p.capitalize() if p.islower() else p for p in participants[:3]])
    return f"{who} talked about {_join(topics)}."


def _named(seg: Sequence[TurnView]) -> set[str]:
    return {v.name for v in seg if v.name}


# ------------------------------------------------------------------ tags and entities


def _topics(tags: Sequence[str], participants: Sequence[str], channel: str) -> list[str]:
    """The tags that name a subject (not the padding of speakers, channel or "conversation")."""
    padding = {slugify(p) for p in [channel, *participants, "conversation", "notes", "log"] if p}
    return [tag for tag in tags if tag not in padding][:_SUMMARY_TOPICS]


def _keyword_scores(seg: Sequence[TurnView], entities: Sequence[str]) -> dict[str, float]:
    """Keyword weights: a human's words count double, a tool's subject ("email") triple."""
    scores: dict[str, float] = {}
    for view in seg:
        words, weight = list(view.keywords), 2.0 if view.human else 1.0
        if view.tool:
            parts = re.split(r"[^a-z0-9]+", (view.turn.tool or "").lower())
            words = [p for p in parts if len(p) > 2 and p not in REQUEST_VERBS]
            words, weight = (words if view.turn.role == "tool_call" else []), 3.0
        for word in words:
            scores[word] = scores.get(word, 0.0) + weight
    for word in (w for entity in entities for w in entity.lower().split()):
        if word in scores:
            scores[word] += 2.0
    return scores


def _tags(
    scores: dict[str, float],
    participants: Sequence[str],
    entities: Sequence[str],
    channel: str,
    fillers: Collection[str] = (),
) -> tuple[str, ...]:
    """The best-scored taggable keywords, one per stem, padded to three: ``fillers`` (what
    only an assistant said) pad first, then the speakers and channel.  Speakers and their
    nicknames ("Mel" for Melanie) are in every turn of a chat, so they tag nothing."""
    people = [p.lower() for p in participants]
    nicknames = {e.lower() for e in entities if any(p.startswith(e.lower()) for p in people)}
    skip = GENERIC | CALENDAR | VERBS | STOPWORDS | TITLES | UNITS | nicknames
    order = {word: i for i, word in enumerate(scores)}
    ranked = sorted(
        (
            w
            for w in scores
            if _TAGGABLE_RE.fullmatch(w)
            and w not in skip
            and not w.endswith(("ally", "ously", "ively", "ently", "fully", "ately"))
            and not (len(w) > 5 and w.endswith("ed"))  # "talked", "started": not a subject
        ),
        key=lambda w: (w in fillers, -scores[w], order[w]),
    )
    tags: list[str] = []
    for word in ranked:
        stems = {t[:-1] if t.endswith("s") else t for t in tags}
        limit = _MIN_TAGS if word in fillers else _MAX_TAGS
        if len(tags) < limit and (word[:-1] if word.endswith("s") else word) not in stems:
            tags.append(word)
    for pad in (slugify(p) for p in [channel, *participants, "conversation", "notes", "log"] if p):
        if len(tags) < _MIN_TAGS and pad not in tags:
            tags.append(pad)
    return tuple(tags)


def _entities(seg: Sequence[TurnView], speakers: Sequence[str]) -> tuple[str, ...]:
    """Names as written: speakers, capitalised words not opening a sentence, code-like tokens."""
    runs: list[list[tuple[str, bool]]] = []  # words, and whether each opens its sentence
    mid: set[str] = set()  # words seen capitalised inside a sentence: names, not grammar
    for view in (v for v in seg if not v.tool):
        for sentence in sentences(view.text):
            lead = len(sentence) - len(sentence.lstrip("\"'“‘(*-•#> "))
            for match in _ENTITY_RE.finditer(sentence):
                if match["email"]:
                    local = local_name(match["email"])
                    if local.isalpha() and local.lower() not in NOT_NAMES:
                        runs.append([(local.capitalize(), False)])
                elif match["handle"] or match["code"]:
                    runs.append([(match.group(0).rstrip("-"), False)])
                else:
                    words = [bare_word(w) for w in match.group(0).split()]
                    mid.update(words[1:] if match.start() == lead else words)
                    runs.append(
                        [
                            (w, i == 0 and match.start() == lead and not is_title(w))
                            for i, w in enumerate(words)
                        ]
                    )
    out = {name.lower(): name for name in speakers}
    for run in runs:
        group: list[str] = []
        pending: list[str] = []  # "of the" joins a name only when another name word follows
        for word, opening in [*run, ("", False)]:
            if group and word in CONNECTORS:
                pending.append(word)
            elif word and name_ok(word) and (not opening or word in mid):
                group, pending = [*group, *pending, word], []
            elif group:
                if group := titled(group):
                    out.setdefault(" ".join(group).lower(), " ".join(group))
                group, pending = [], []
    return tuple(list(out.values())[:_MAX_ENTITIES])
