"""Deterministic extractive summaries of raw logs: episodes, tags, entities and facts.

No model is involved.  A log is cut into segments at its size limits, preferring a change of
topic or a pause near the limit; tool turns stay with the turn that triggered them.  Each
segment keeps its most informative sentence as the summary, one condensed bullet per
informative turn (with every searchable word of a human turn) and only the facts a regular
expression can validate.  Everything is read from redacted text, so no recognised secret
reaches an episode.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, datetime, timezone
from itertools import accumulate

from .notes import RawLog, Turn, clean_label, slugify, value_kind
from .redact import redact
from .retrieval import STOPWORDS, extract_keywords

SUMMARY_CHARS = 200
DETAIL_CHARS = 300
_TAIL_CAP = 40  # searchable words kept from the cut part of a long assistant or tool turn
_MIN_TAGS, _MAX_TAGS, _MAX_ENTITIES = 3, 6, 15
_TOPIC_WINDOW = 4  # turns compared on each side of a candidate cut
_TOOL_ROLES = frozenset({"tool_call", "tool_result", "tool"})
_MACHINE_ROLES = _TOOL_ROLES | {"assistant", "system"}
_RANK = {"low": 0, "medium": 1, "high": 2}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A turn made only of these words carries nothing a later question could ask about.
SMALL_TALK = _words(
    """hello hey hi bye goodbye thanks thank thx cheers ok okay yes yeah yep yup nope sure great
    good nice cool awesome wow lol haha welcome see soon later talk take care"""
)
# Too common in conversation to tag an episode, or to be a name when capitalised.
_GENERIC = SMALL_TALK | _words(
    """really lot lots much many well way time times day days going gonna wanna gotta want
    wanted need make made making look looks looking feel feeling felt think thought sounds
    sound hope bit kind kinda pretty totally always never still even back new one two keep let
    done come coming found give try trying tried work working use using mean right fun amazing
    wonderful fantastic super true special definitely absolutely actually maybe probably
    everything nothing someone everyone stuff big little small best better bad today tomorrow
    yesterday now ago ready able glad happy love loved loving lovely sweet agree people life
    lately recently last next first week year month redacted let's i'd incredible exciting
    excited cute beautiful proud guess course though sorry wish means tough dear utc btw since
    others around together long hear heard helps helping seeing seen taking getting bring
    staying stay wait join met happened important difference hard motivated appreciate
    favorite positive inspiring inspired impact congrats interesting lucky strong real crazy
    busy must ones part cause reminds pushing blast awesome words ideas idea every thing
    things pic pics enjoy talk feels makes start ask another different huge worth gorgeous"""
)
_MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
_CALENDAR = frozenset(_MONTHS) | _words(
    "jan feb mar apr jun jul aug sep sept oct nov dec"
    " monday tuesday wednesday thursday friday saturday sunday mon tue tues wed weds thu thurs"
    " fri sat"
)
# Verbs only: never a tag.  _REQUEST_VERBS adds verbs that are nouns too ("email", "book").
_VERBS = _words(
    """add arrange buy cancel change check compare create delete explain fetch find fix get give
    help look lookup make move pay prepare put query read remind remember remove renew reply
    reschedule run save schedule send set share show summarise summarize track translate write"""
)
_REQUEST_VERBS = _VERBS | _words("book call draft email list note order plan search text update")
_NOT_NAMES = _REQUEST_VERBS | _words(
    "email e-mail phone number mobile contact address new work home please info support admin"
    " noreply team sales"
)
_CLI = _words(
    """git npm npx pip pipx python python3 make docker kubectl cargo go yarn pnpm uv pytest ls
    cd curl ssh brew apt sudo bash sh node ruff mypy memoryclaw rsync scp tar"""
)
_SECRET_FIELD_RE = re.compile(r"pass|pin\b|token|secret|key|ssn|social security|card|cvv|login")

_MARKER_RE = re.compile(r"\[REDACTED:[\w-]+\]")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_CODE = r"\b[A-Za-z][A-Za-z-]*\d[\w-]*|\b[a-z]+[A-Z]\w*"  # projectX, Q3, BX4TQ7
_CAPS = r"\b[A-Z][\w'’-]*(?:(?:[ \t]+(?:of|the|de|da|van|von|del))*[ \t]+[A-Z][\w'’-]*)*"
_CONNECTORS = _words("of the de da van von del")  # inside a name: "Lord of the Rings"
_ENTITY_RE = re.compile(
    rf"(?P<email>{_EMAIL})|(?P<handle>(?<![\w.])@[A-Za-z0-9_]{{2,30}})"
    rf"|(?P<code>{_CODE})|(?P<caps>{_CAPS})"
)
_CODE_RE = re.compile(_CODE)
_CAPS_RE = re.compile(_CAPS)
_EMAIL_RE = re.compile(_EMAIL)
_URL_RE = re.compile(r"https?://[^\s<>()\"']+")
_PHONE_RE = re.compile(r"(?<![\w+])\+?\d[\d \t().-]{5,18}\d(?!\w)")
_PHONE_CONTEXT_RE = re.compile(r"(?i)\b(?:phone|mobile|cell|number|call|tel|whatsapp|text)\b")
_PATH_RE = re.compile(
    r"(?<![\w:/.@])(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[A-Za-z][\w.-]*"
    r"|(?<![\w:/.@-])[\w.-]+/(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,6}\b"
)
_BACKTICK_RE = re.compile(r"`([^`\n]{2,200})`")
_RUN_RE = re.compile(r"\brun\s+(?P<cmd>[a-z][\w.+-]*(?:\s+[^\s,;!?`]+){0,12})")
_MONTH_ALT = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE_RE = re.compile(
    rf"(?i)(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b"
    rf"|(?P<m1>{_MONTH_ALT})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y1>\d{{4}})\b)?"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>{_MONTH_ALT})\b\.?"
    r"(?:,?\s+(?P<y2>\d{4})\b)?"
)
_VAGUE_DATE_RE = re.compile(
    rf"(?i)(?:next|this|end of|tomorrow|tonight|today|eod|eow|(?:{_MONTH_ALT})\b|\w+day\b)[^,;]*"
)
_DEADLINE_RE = re.compile(
    r"(?i)\b(?:deadline|due(?:\s+date)?)\b(?:\s+(?:is|was|will be|by|on|for|date))*\s*:?\s*"
)
_BIRTHDAY_RE = re.compile(
    r"\b(?P<who>[A-Z][\w-]*(?: [A-Z][\w-]*)?)['’]s birthday is (?:on )?(?:the )?"
    r"|\b(?P<who2>[A-Z][a-z]+) turns \d{1,3} on (?:the )?"
)
# Only a clause's own subject: "in my art is ..." or "the things I love makes ..." state nothing.
_CLAUSE = r"(?:^|[,;:]\s+|\b(?:and|but|so|because|that|since|also|oh|btw|well|now|fyi)\s+)"
_MY_RE = re.compile(rf"(?i){_CLAUSE}my (?P<field>[a-z][a-z'’ -]{{0,30}}?) is (?P<value>[^,;]+)")
_PREF_RE = re.compile(
    rf"{_CLAUSE}I (?P<mod>(?:really |also |just |absolutely |totally )?(?:don['’]t |do not )?"
    r"(?:really )?)(?P<verb>prefer|like|love|enjoy|hate|dislike|can['’]t stand) (?P<value>[^,;]+)"
)
_VALUE_END_RE = re.compile(r"\s+(?:and|but|because|so|which|who|since|when|if)\s.*$|[.!?:]+$")
_REQUEST_PREFIX_RE = re.compile(
    r"(?i)^(?:(?:hey|hi|ok|okay)[,!]?\s+)?(?:please\s+|(?:can|could|would|will) you(?: please)?"
    r"\s+|i (?:need|want|['’]d like|would like) you to\s+)"
)


@dataclass(frozen=True)
class FactDraft:
    """A candidate fact read from one turn, validated but not yet written anywhere."""

    entity: str
    field: str
    value: str
    confidence: str
    turn: int


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


@dataclass(frozen=True)
class _View:
    """A turn as the summarizer reads it: redacted once, keywords extracted once."""

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
        """How a bullet or summary names the speaker."""
        return self.name or self.turn.role.capitalize()


def summarize_log(log: RawLog, *, max_turns: int = 24, max_chars: int = 6000) -> list[EpisodeDraft]:
    """Split the log into episodes along topic or size boundaries and summarize each."""
    views = [_view(number, turn) for number, turn in enumerate(log.turns, start=1)]
    channel = str(log.meta.get("channel") or "")
    segments = _segments(views, max(1, max_turns), max(1, max_chars))
    return [_episode(views, start, end, channel) for start, end in segments]


def _view(number: int, turn: Turn) -> _View:
    text, name, tool = redact(turn.content), clean_label(turn.name), turn.role in _TOOL_ROLES
    human = not tool and (
        turn.role == "user" or (name is not None and turn.role not in _MACHINE_ROLES)
    )
    words = extract_keywords(_MARKER_RE.sub(" ", text))  # "[REDACTED:api-key]" is no topic
    return _View(number, turn, name, text, tuple(words), human, tool)


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


# ---------------------------------------------------------------------- segmentation


def _segments(views: Sequence[_View], max_turns: int, max_chars: int) -> list[tuple[int, int]]:
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
    views: Sequence[_View],
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
        gap = (_utc(views[at].turn.timestamp) - _utc(views[at - 1].turn.timestamp)).total_seconds()
        pause = 1.0 if gap >= 1800 else 0.3 if gap >= 300 else 0.0
        score = shift + pause - 2 * abs(at - ideal) / limits[0]
        if score >= best_score:  # ties go to the later cut: fuller segments
            best, best_score = cut, score
    return best


# ---------------------------------------------------------------------------- episode


def _episode(views: Sequence[_View], start: int, end: int, channel: str) -> EpisodeDraft:
    seg = views[start:end]
    people = [v.speaker for v in seg if not v.tool] or [v.turn.role for v in seg]
    participants = tuple(dict.fromkeys(people))
    entities = _entities(seg, list(dict.fromkeys(v.name for v in seg if v.name and not v.tool)))
    scores = _keyword_scores(seg, entities)
    tags = _tags(scores, participants, entities, channel)
    facts: dict[tuple[str, str, str], FactDraft] = {}
    for view in seg:
        for fact in _turn_facts(view) if view.human else _tool_facts(views, view):
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
        timestamp=_utc(seg[0].turn.timestamp),
        summary=redact(_summary(seg, scores, participants)),
        tags=tags,
        entities=entities,
        participants=participants,
        details=tuple(redact(d) for d in (_detail(v) for v in seg) if d),
        facts=tuple(facts.values()),
        confidence=confidence,
        slug=slugify(" ".join(tags[:3]), max_length=40),
    )


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s.strip()]


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit, 2) - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


def _request(sentence: str) -> str | None:
    """What a request asks for ("Can you find X?" -> "find X?"), or None for a statement."""
    prefix = _REQUEST_PREFIX_RE.match(sentence)
    rest = sentence[prefix.end() :] if prefix else sentence
    verb = rest.split(" ", 1)[0].lower().strip(",.!?")
    return rest if verb in _REQUEST_VERBS and (prefix or rest[:1].isupper()) else None


def _summary(seg: Sequence[_View], scores: dict[str, float], participants: Sequence[str]) -> str:
    """The most informative sentence, said by its speaker; a human's request comes first."""
    calls = [v.turn.tool for v in seg if v.turn.role == "tool_call" and v.turn.tool]
    tools = ", ".join(dict.fromkeys(calls))
    pool = [v for v in seg if v.human and v.keywords] or [v for v in seg if not v.tool]
    best: tuple[float, str, _View] | None = None
    for view in pool:
        for sentence in _sentences(view.text):
            score = sum(
                1 + min(scores.get(k, 0.0), 4.0) / 2 + any(c.isdigit() for c in k)
                for k in extract_keywords(sentence)
            )
            if view.human and _request(sentence) is not None:  # what the person came for
                score *= 2.0
            elif sentence.endswith("?"):
                score *= 0.8
            if best is None or score > best[0]:
                best = (score, " ".join(sentence.split()), view)
    if best is None:
        core = f"{len(seg)} turn{'s' * (len(seg) != 1)} without text"
        return _clip(f"{core} (used {tools})." if tools else f"{core}.", SUMMARY_CHARS)
    _, sentence, view = best
    names = [p for p in participants if p != view.speaker]
    other = names[0] if view.name and len(participants) == 2 and names[0] in _named(seg) else ""
    request = _request(sentence) if view.human else None
    if request is not None:
        head = f"{view.label} asked {other} to " if other else f"{view.label} asked to "
        body = request[:1].lower() + request[1:].rstrip(".!?")
        core = head + _clip(body, SUMMARY_CHARS - len(head) - 1) + "."
    else:
        verb = "asked" if sentence.endswith("?") else "told" if other else "said"
        head = f"{view.label} {verb} {other}: " if other else f"{view.label} {verb}: "
        core = f'{head}"{_clip(sentence.replace(chr(34), chr(39)), SUMMARY_CHARS - len(head) - 2)}"'
    suffix = f" (used {tools})"
    if tools and len(core) + len(suffix) <= SUMMARY_CHARS:
        core = core[:-1] + suffix + "." if core.endswith(".") else core + suffix
    return _clip(core, SUMMARY_CHARS)  # only a very long speaker name makes this cut


def _named(seg: Sequence[_View]) -> set[str]:
    return {v.name for v in seg if v.name}


def _detail(view: _View) -> str | None:
    """One bullet: the speaker and the turn condensed, keeping its searchable words."""
    text = " ".join(view.text.split())
    if not text or (not view.tool and all(k in SMALL_TALK for k in view.keywords)):
        return None
    label = view.label
    if view.tool:
        with suppress(ValueError, RecursionError):
            text = json.dumps(json.loads(text), ensure_ascii=False)
        kind = {"tool_call": "tool", "tool_result": "result"}.get(view.turn.role, view.turn.role)
        label = f"{kind} {clean_label(view.turn.tool)}" if clean_label(view.turn.tool) else kind
    return f"{label}: {_condense(text, DETAIL_CHARS, None if view.human else _TAIL_CAP)}"


def _condense(text: str, limit: int, tail_cap: int | None) -> str:
    """Whole sentences up to ``limit``, then the searchable words of the rest."""
    if len(text) <= limit:
        return text
    kept = ""
    for sentence in _sentences(text):
        if kept and len(kept) + 1 + len(sentence) > limit:
            break
        kept = f"{kept} {sentence}".strip()
    kept = _clip(kept, limit) if len(kept) > limit else kept + " …"
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


# ------------------------------------------------------------------ tags and entities


def _keyword_scores(seg: Sequence[_View], entities: Sequence[str]) -> dict[str, float]:
    """Keyword weights: a human's words count double, a tool's subject ("email") triple."""
    scores: dict[str, float] = {}
    for view in seg:
        words, weight = list(view.keywords), 2.0 if view.human else 1.0
        if view.tool:
            parts = re.split(r"[^a-z0-9]+", (view.turn.tool or "").lower())
            words = [p for p in parts if len(p) > 2 and p not in _REQUEST_VERBS]
            words, weight = (words if view.turn.role == "tool_call" else []), 3.0
        for word in words:
            scores[word] = scores.get(word, 0.0) + weight
    for word in (w for entity in entities for w in entity.lower().split()):
        if word in scores:
            scores[word] += 2.0
    return scores


def _tags(
    scores: dict[str, float], participants: Sequence[str], entities: Sequence[str], channel: str
) -> tuple[str, ...]:
    """The best-scored taggable keywords, one per stem, padded to three.  Speakers and their
    nicknames ("Mel" for Melanie) are in every turn of a chat, so they tag nothing."""
    people = [p.lower() for p in participants]
    nicknames = {e.lower() for e in entities if any(p.startswith(e.lower()) for p in people)}
    skip = _GENERIC | _CALENDAR | _VERBS | STOPWORDS | nicknames
    order = {word: i for i, word in enumerate(scores)}
    ranked = sorted(
        (
            w
            for w in scores
            if re.fullmatch(r"[a-z][a-z0-9-]{1,30}[a-z0-9]", w)
            and w not in skip
            and not w.endswith(("ally", "ously", "ively", "ently", "fully", "ately"))
            and not (len(w) > 5 and w.endswith("ed"))  # "talked", "started": not a subject
        ),
        key=lambda w: (-scores[w], order[w]),
    )
    tags: list[str] = []
    for word in ranked:
        stems = {t[:-1] if t.endswith("s") else t for t in tags}
        if len(tags) < _MAX_TAGS and (word[:-1] if word.endswith("s") else word) not in stems:
            tags.append(word)
    for pad in (slugify(p) for p in [channel, *participants, "conversation", "notes", "log"] if p):
        if len(tags) < _MIN_TAGS and pad not in tags:
            tags.append(pad)
    return tuple(tags)


def _name_ok(word: str) -> bool:
    lower = word.lower()
    return len(word) > 1 and not (lower in STOPWORDS or lower in _GENERIC or lower in _CALENDAR)


def _bare(word: str) -> str:
    return re.sub(r"['’]s?$|-+$", "", word)


def _local_name(address: str) -> str:
    return re.split(r"[.+_@-]", address)[0]


def _entities(seg: Sequence[_View], speakers: Sequence[str]) -> tuple[str, ...]:
    """Names as written: speakers, capitalised words not opening a sentence, code-like tokens."""
    runs: list[list[tuple[str, bool]]] = []  # words, and whether each opens its sentence
    mid: set[str] = set()  # words seen capitalised inside a sentence: names, not grammar
    for view in (v for v in seg if not v.tool):
        for sentence in _sentences(view.text):
            lead = len(sentence) - len(sentence.lstrip("\"'“‘(*-•#> "))
            for match in _ENTITY_RE.finditer(sentence):
                if match["email"]:
                    local = _local_name(match["email"])
                    if local.isalpha() and local.lower() not in _NOT_NAMES:
                        runs.append([(local.capitalize(), False)])
                elif match["handle"] or match["code"]:
                    runs.append([(match.group(0).rstrip("-"), False)])
                else:
                    words = [_bare(w) for w in match.group(0).split()]
                    mid.update(words[1:] if match.start() == lead else words)
                    runs.append(
                        [(w, i == 0 and match.start() == lead) for i, w in enumerate(words)]
                    )
    out = {name.lower(): name for name in speakers}
    for run in runs:
        group: list[str] = []
        pending: list[str] = []  # "of the" joins a name only when another name word follows
        for word, opening in [*run, ("", False)]:
            if group and word in _CONNECTORS:
                pending.append(word)
            elif word and _name_ok(word) and (not opening or word in mid):
                group, pending = [*group, *pending, word], []
            elif group:
                out.setdefault(" ".join(group).lower(), " ".join(group))
                group, pending = [], []
    return tuple(list(out.values())[:_MAX_ENTITIES])


# ------------------------------------------------------------------------------ facts


def _names(text: str, *, sentence: bool = False) -> list[str]:
    """Capitalised runs that could be a person or project (no verbs, months or grammar).  A
    sentence's first word counts only when possessive: "Sarah's email", not "Report due"."""
    out, lead = [], len(text) - len(text.lstrip("\"'“‘(*-•#> "))
    for match in _CAPS_RE.finditer(text):
        words = match.group(0).split()
        if sentence and match.start() == lead and not re.search(r"['’]s$", words[0]):
            words = words[1:]
        words = [w for w in map(_bare, words) if _name_ok(w) and w.lower() not in _NOT_NAMES]
        if words:
            out.append(" ".join(words))
    return out


def _owner(before: str, speaker: str, hint: str = "") -> tuple[str, bool]:
    """Who a value belongs to, and whether the sentence says so: the name closest before it
    (preferring one matching ``hint``), or the speaker's "my"; else the speaker, unconfirmed."""
    names = _names(before, sentence=True)
    for name in reversed(names):
        if hint and name.lower().split()[0] == hint.lower():
            return name, True
    if names:
        return names[-1], True
    return speaker, re.search(r"(?i)\b(?:my|me|mine)\b", before) is not None


def _norm_date(match: re.Match[str], ref: date, *, yearly: bool = False) -> tuple[str, str]:
    """(value, confidence): ISO when the year is stated or inferable, else the text, low."""
    try:
        if match["iso"]:
            return date.fromisoformat(match["iso"]).isoformat(), "high"
        prefix = (match["m1"] or match["m2"]).lower()[:3]
        month = next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(prefix))
        day, year = int(match["d1"] or match["d2"]), match["y1"] or match["y2"]
        if year:
            return date(int(year), month, day).isoformat(), "medium"
        if yearly:  # a birthday recurs: month and day are the fact
            date(2000, month, day)
            return f"{_MONTHS[month - 1].capitalize()} {day}", "medium"
        moment = date(ref.year, month, day)
        if (ref - moment).days > 183:  # "deadline is January 5", said in December
            moment = date(ref.year + 1, month, day)
        return moment.isoformat(), "medium"
    except ValueError:
        return match.group(0).strip(), "low"


def _clean_value(text: str) -> str:
    value = _VALUE_END_RE.sub("", text.strip()).strip(" \"'“”")
    return value if 0 < len(value) <= 60 and len(value.split()) <= 8 else ""


def _turn_facts(view: _View) -> Iterator[FactDraft]:
    """Facts a human turn states; questions state nothing."""
    me, ref = view.name or "User", _utc(view.turn.timestamp).date()
    found: list[tuple[str, str, str, str] | None] = []
    for sentence in (s for s in _sentences(view.text) if not s.endswith("?")):
        plain = _URL_RE.sub(" ", _EMAIL_RE.sub(" ", sentence))
        bare = _BACKTICK_RE.sub(" ", plain)
        for m in _EMAIL_RE.finditer(sentence):
            local = _local_name(m.group(0))
            who, sure = _owner(sentence[: m.start()], me, local)
            if not sure and local.isalpha() and local.lower() not in _NOT_NAMES:
                who = local.capitalize()  # "send it to bob@x.com": likely Bob's, unconfirmed
            found.append((who, "email", m.group(0), "high" if sure else "low"))
        for m in _URL_RE.finditer(sentence):
            url = m.group(0).rstrip(".,;:!?")
            found.append((_owner(sentence[: m.start()], me)[0], "url", url, "high"))
        for m in _PHONE_RE.finditer(plain):
            number, before = m.group(0).strip(), plain[: m.start()]
            if not 7 <= sum(c.isdigit() for c in number) <= 15 or _DATE_RE.search(number):
                continue
            if number.startswith("+") or _PHONE_CONTEXT_RE.search(before):
                who, sure = _owner(before, me)
                level = "high" if number.startswith("+") else "medium"
                found.append((who, "phone", number, level if sure else "low"))
        for m in _DEADLINE_RE.finditer(sentence):
            rest, project = sentence[m.end() :], _CODE_RE.search(sentence)
            owner = project.group(0) if project else _owner(sentence[: m.start()], me)[0]
            if when := _DATE_RE.match(rest):
                found.append((owner, "deadline", *_norm_date(when, ref)))
            elif not rest.lower().startswith("to ") and (vague := _VAGUE_DATE_RE.match(rest)):
                found.append((owner, "deadline", _clean_value(vague.group(0)), "low"))
        for m in _BIRTHDAY_RE.finditer(sentence):
            who = m["who"] or m["who2"]
            if (when := _DATE_RE.match(sentence[m.end() :])) and _name_ok(who):
                found.append((who, "birthday", *_norm_date(when, ref, yearly=True)))
        found += [_my_fact(m, me, ref) for m in _MY_RE.finditer(sentence)]
        found += [_preference(m, me) for m in _PREF_RE.finditer(sentence)]
        for m in _BACKTICK_RE.finditer(sentence):
            code, who = m.group(1).strip(), _owner(sentence[: m.start()], me)[0]
            if _PATH_RE.fullmatch(code):
                found.append((who, "path", code, "medium"))
            elif re.match(r"[a-z.][\w.+-]*(?:\s|$)", code):
                found.append((who, "command", code, "medium"))
        for m in _RUN_RE.finditer(bare):
            command = m["cmd"].rstrip(".")
            if command.split()[0] in _CLI or re.search(r"\s--?[a-z]", command):
                found.append((me, "command", command, "low"))
        for m in _PATH_RE.finditer(bare):
            found.append((_owner(bare[: m.start()], me)[0], "path", m.group(0), "medium"))
    for entity, field, value, confidence in (f for f in found if f is not None):
        kind = {"email": "email", "url": "url", "phone": "phone"}.get(field)
        if (
            value
            and "[REDACTED" not in value
            and redact(value) == value
            and (kind is None or value_kind(value) == kind)
        ):
            yield FactDraft(entity, field, value, confidence, view.number)


def _my_fact(m: re.Match[str], me: str, ref: date) -> tuple[str, str, str, str] | None:
    """``my X is Y``: X names the field; a well-known field is validated."""
    field = " ".join(m["field"].lower().replace("’", "'").split())
    value = _clean_value(m["value"])
    if not value or len(field.split()) > 3 or _SECRET_FIELD_RE.search(field):
        return None
    if value.split()[0].lower() in STOPWORDS | _GENERIC:  # "my sister is a doctor": no field
        return None
    if field in {"email", "e-mail", "email address"}:
        return (me, "email", value, "high" if value_kind(value) == "email" else "low")
    if field in {"phone", "phone number", "number", "mobile", "mobile number", "cell"}:
        return (me, "phone", value, "medium" if value_kind(value) == "phone" else "low")
    if field == "birthday":
        when = _DATE_RE.match(value)
        return (me, field, *(_norm_date(when, ref, yearly=True) if when else (value, "low")))
    return (me, field, value, "medium")


def _preference(m: re.Match[str], me: str) -> tuple[str, str, str, str] | None:
    """``I prefer / like / love / hate Z``; "don't" turns a like into a dislike."""
    value = _clean_value(m["value"])
    if value.startswith("to "):  # "I'd love to help" is a wish, not a taste
        return None
    head = re.sub(r"^(?:the|a|an)\s+", "", value.lower()).split(" ", 1)[0] if value else ""
    if not head or head in STOPWORDS or head in _GENERIC:  # "I love it", "I like that"
        return None
    negated = re.search(r"not|n['’]t", m["mod"]) is not None
    if m["verb"] in {"like", "love", "enjoy"}:
        field: str | None = "dislikes" if negated else "likes"
    else:
        field = None if negated else "prefers" if m["verb"] == "prefer" else "dislikes"
    return (me, field, value, "medium") if field else None


def _tool_facts(views: Sequence[_View], view: _View) -> Iterator[FactDraft]:
    """Recipients of a tool call, named by the human turn that asked for it."""
    if view.turn.role != "tool_call":
        return
    try:
        args = json.loads(view.text)
    except (ValueError, RecursionError):
        return
    recent = views[max(0, view.number - 50) : view.number - 1]  # bounded: logs can be long
    trigger = next((v for v in reversed(recent) if v.human), None)
    names = list(dict.fromkeys(_names(trigger.text) if trigger else []))
    for key in ("to", "cc", "bcc") if isinstance(args, dict) else ():
        value = args.get(key)
        for address in (
            [value] if isinstance(value, str) else value if isinstance(value, list) else []
        ):
            if not isinstance(address, str) or value_kind(address) != "email":
                continue
            match = [n for n in names if n.lower() == _local_name(address).lower()]
            if match:
                yield FactDraft(match[0], "email", address, "high", view.number)
            elif key == "to" and len(names) == 1:
                yield FactDraft(names[0], "email", address, "medium", view.number)
