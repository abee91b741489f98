"""The owner's standing instructions and preferences, in force on every turn.

They are facts of field ``instruction`` or ``preference`` (``semantic/instructions.md``,
``semantic/preferences.md``; read from what the owner says by
:mod:`memoryclaw.consolidate.standing`, or written by hand), and the plain lines the owner
wrote in a ``preferences.md`` ("- Vegetarian who eats fish now and then"), current (not
superseded) and admitted to the requester by the scope rules (:mod:`memoryclaw.vault.scopes`),
with one difference: an owner-level instruction or preference (a hand line, or one of scope
``owner``) is how the owner wants to be served everywhere, so a group chat sees it beside its
own, but not those said in the owner's direct conversations, nor a plain line of
``preferences.md``, which says as much about the owner as the facts beside it.

Every ``retrieve`` payload leads with them, under their own label, within
:data:`BUDGET_SHARE` of the budget: every instruction, whatever the query's words (it applies
to a question that shares none of them; one for a topic, "when I ask about ETFs", when the
query names a word of the topic), and the preferences for a query in the first or second
person that asks for advice or a choice ("what should I …", "can you suggest …"): all of them
when all fit (a handful is cheap, and "I prefer minimal dependencies" bears on "which
libraries should I use?" without a word in common), else those that share a word with it.  A
question that asks to recall ("when is my review?") gets only a preference it is about; one
about other people none: it is answered by what was said, and the room is the evidence's.
A taste in how the agent answers ("I prefer short answers") is the exception: like an
instruction, it applies to every answer.  When more are in force than fit, those whose topic
the query names go first, then those that share most words with it, then the most recent.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..index.fulltext import owner_files_clause
from ..index.store import Index
from ..vault.factnames import AGENT_LABEL, INSTRUCTION, OWNER_LABEL, PREFERENCE, PREFERENCES_FILE
from ..vault.recalled import CLOSE, FRAME, OPEN
from ..vault.scopes import OWNER, Policy
from ..vault.words import extract_keywords
from .lines import _clean as _quoted  # one quoting rule for everything in the block
from .lines import shorten
from .payload import CHARS_PER_TOKEN, RetrievePayload, estimate_tokens
from .results import SearchResult

BUDGET_SHARE = 0.25  # of budgetTokens, at most
LABEL = "Standing instructions and preferences (apply to every answer):"
RECALLED_LABEL = "Recalled for this question:"
LINE_CHARS = 240

# "whenever I ask about X": the topic of an instruction, and one of its openings
ASK_PATTERN = (
    r"(?:when(?:ever)?|any ?time|each time|every time|if ever) (?:I|we)"
    r" (?:ask|talk|chat|am asking)(?: you)? (?:about|for|regarding|on) (?P<topic>[^,.;:!?]{2,80})"
)


# Compiled on first use, as the other patterns marked so: a fresh process (a recall, a logged
# turn) pays for every pattern compiled at import, and most serve a question it is not asked.
@functools.cache
def _topic_res() -> tuple[re.Pattern[str], ...]:
    return (
        re.compile(rf"(?i)\b{ASK_PATTERN}"),
        re.compile(
            r"(?i)\b(?:when|whenever) (?:discussing|talking about|it comes to|we discuss)"
            r" (?P<topic>[^,.;:!?]{2,80})"
        ),
        re.compile(
            r"(?i)\bfor (?:any |all |every )?(?P<topic>[^,.;:!?]{2,80}) (?:questions?|requests?)\b"
        ),
    )


# A request in the first or second person ("can you suggest …", "what should I …"): one
# about other people ("what did Jon plan?") is answered by what was said, not by tastes.
_PERSONAL_RE = re.compile(r"\b(?:I|[Mm]e|[Mm]y|[Mm]yself|[Ww]e|[Oo]ur|us|[Yy]ou|[Yy]our)\b")


# A request for advice or a choice ("what should I …", "can you suggest …", "find me …"), where
# a taste bears on the answer; not a question about what was or is ("when is my review?").
@functools.cache
def _advice_re() -> re.Pattern[str]:
    return re.compile(
        r"(?i)\b(?:should|would|could|shall|can I|I can|suggest|recommend|advise|advice"
        r"|suggestions?|recommendations?|ideas?|tips|choose|pick|find me|help me (?:choose|decide"
        r"|find|pick|plan))\b"
    )


# A taste in how the agent answers ("I prefer short answers", "I'd rather have replies in
# bullet points"): it bears on every answer, as an instruction does, not only on advice.  The
# kind of reply must be in the clause that states the taste: "I prefer ETFs, can you explain
# them?" is a taste in funds.
@functools.cache
def _about_answers_re() -> re.Pattern[str]:
    return re.compile(
        r"(?i)\b(?:prefer|like|love|want|rather|favou?r)\b"
        # the words between say what the replies are like, not what is done ("practising
        # interview answers" is a taste in practice) nor whose they are ("Kayla's responses")
        r"(?:\s+(?!\w+ing\b|(?:her|his|their|its|\w+['’]s)\b)[\w'’-]+){0,6}?"
        r"\s+(?:answers?|responses?|replies|reply|explanations?|bullet[- ]?points?|summaries"
        r"|tone|formatting|wording)\b(?!\s+of\b)"  # "the tone of her voice" is another's
    )


_CUE_WORDS = frozenset(
    """always never stop quit don't dont actually instead anymore longer please make sure
    prefer like love hate enjoy rather favourite favorite want need keep ask asking when
    whenever from now going forward future""".split()
)


@dataclass(frozen=True)
class StandingFact:
    """One standing instruction or preference in force."""

    id: str
    kind: str  # INSTRUCTION or PREFERENCE
    entity: str  # whose it is
    value: str  # their own words
    topic: str  # what it applies to, "" for everything
    updated: str
    source: str
    path: str
    line: int
    agent: str | None
    scope: str | None
    # said in a turn not yet consolidated: ``path`` is its raw log and ``line`` the turn
    pending: bool = False

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready row (``memoryclaw profile --json``, the MCP tool)."""
        return dataclasses.asdict(self)


def topic_of(sentence: str) -> str:
    """The topic a standing statement says it applies to ("when I ask about ETFs": ``ETFs``),
    or ""."""
    for pattern in _topic_res():
        if match := pattern.search(sentence):
            topic = re.sub(r"(?i)^(?:the|a|an|my|our|any)\s+", "", match["topic"].strip())
            if extract_keywords(topic):
                return topic
    return ""


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about, each cut to a crude stem ("yields"
    and "yield", "adding" and "add" meet)."""
    return frozenset(stem(w) for w in extract_keywords(text) if w not in _CUE_WORDS)


def stem(word: str) -> str:
    """``word`` without a plural or verb ending, cut to :data:`_STEM_CHARS` ("rehearsal" and
    "rehearsing" meet)."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == "e":
        word = word[:-1]  # "release" meets "releases" and "releasing"
    word = word[:-1] if len(word) > 3 and word[-1] == word[-2] else word
    return word[:_STEM_CHARS]


_STEM_CHARS = 6  # a word's first six letters say what it is about, whatever its ending


def in_force(index: Index, policy: Policy) -> list[StandingFact]:
    """Every current standing instruction and preference ``policy`` admits, newest first."""
    here = policy.context.scope(policy.owner_ids)
    # a plain line the owner wrote in preferences.md ("- Vegetarian") is a preference too
    written, params = owner_files_clause([PREFERENCES_FILE])
    rows = [
        r
        for r in index.fact_rows(
            f"(field IN ('{INSTRUCTION}', '{PREFERENCE}') OR (field = 'note' AND {written}))"
            " AND superseded = 0",
            params,
        )
        if policy.admit(r["agent"], r["scope"])[0]
        # an owner-level one is how the owner wants to be served anywhere, a group included;
        # not a plain line of preferences.md, which may be any note about the owner's life
        # ("- Therapy on Tuesdays") and is read where the owner's own memories are only
        or (
            r["field"] != "note"
            and r["scope"] in (None, "", OWNER)
            and policy.admit(r["agent"], here)[0]
        )
    ]
    found = [
        StandingFact(
            id=str(r["id"]),
            kind=PREFERENCE if r["field"] == "note" else str(r["field"]),
            entity=str(r["entity"]),
            value=str(r["value"]),
            topic=topic_of(str(r["value"])),
            updated=str(r["updated"] or ""),
            source=str(r["source"] or ""),
            path=str(r["path"]),
            line=int(r["line"]),
            agent=r["agent"] or None,
            scope=r["scope"] or None,
        )
        for r in rows
    ]
    return sorted(found, key=lambda f: (f.updated, f.path, f.line), reverse=True)


# The owner's turns not yet consolidated that are read for standing statements, the newest
# first.  A daemon consolidates within minutes, so these are few; without one they are
# bounded by this.
RECENT_TURNS = 100


# A word every standing statement holds (consolidate.standing): a turn without one is not read.
# Compiled on first use: most recalls find no turn waiting for consolidation.
@functools.cache
def _cue_re() -> re.Pattern[str]:
    return re.compile(
        r"(?i)\b(?:always|never|from now on|going forward|moving forward|future|from here on|when"
        r"|whenever|any ?time|each time|every time|make sure|keep|stop|quit|no more|don['’]t"
        r"|do not|prefer\w*|rather|like|love|enjoy|hate|dislike|detest|adore|stand"
        r"|prioriti[sz]\w*|favou?rite|person|guy|girl|fan|allergic|allergy|intoleran\w*"
        r"|vegetarian|vegan|pescatarian|coeliac|celiac|diabetic|gluten|teetotal|kosher|halal"
        r"|can['’]t|cannot|eat|drink)\b"
    )


# A turn is said to the agent when the agent speaks within this many turns of it: only then
# does it state how the agent is to serve the owner (consolidate.standing.standing_facts_of).
NEAR_TURNS = 3


def recent_turns(index: Index, policy: Policy) -> list[dict[str, Any]]:
    """The owner's turns in raw logs not yet consolidated that may state a standing
    instruction or preference, admitted by ``policy``, newest first (of the newest
    :data:`RECENT_TURNS`): they are in force from the next turn on
    (``memoryclaw.consolidate.standing.with_recent``), not only once consolidated.  As
    consolidation files them: said to the agent, which answers within :data:`NEAR_TURNS`.  A
    log without a scope (written by hand, or before scopes) waits for consolidation, which
    reads its scope from its session key and kind."""
    return [row for row in owner_turns(index, policy) if _cue_re().search(row["text"] or "")]


def owner_turns(index: Index, policy: Policy) -> list[dict[str, Any]]:
    """The owner's turns in raw logs not yet consolidated (of the newest
    :data:`RECENT_TURNS`), newest first, that consolidation will read as the owner's: said to
    the agent (which answers within :data:`NEAR_TURNS`), in a log that records its scope,
    admitted by ``policy``."""
    return [
        row
        for row in index.newest_log_turns(OWNER_LABEL, RECENT_TURNS, AGENT_LABEL, NEAR_TURNS)
        if row["answered"] and row["scope"] and policy.admit(row["agent"], row["scope"])[0]
    ]


def choose(found: Sequence[StandingFact], query: str, max_chars: int) -> list[StandingFact]:
    """Those of ``found`` that apply to ``query`` and fit in ``max_chars`` as lines (see the
    module doc); the topic named by the query first, then most words shared with it, then the
    most recent (``found`` is newest first)."""
    asked = content_words(query)
    personal = _PERSONAL_RE.search(query) is not None

    def rank(item: tuple[int, StandingFact]) -> tuple[int, int, int]:
        n, fact = item
        on_topic = bool(content_words(fact.topic) & asked)
        return (-int(on_topic), -len(content_words(fact.value) & asked), n)

    advice = personal and _advice_re().search(query) is not None

    def applies(fact: StandingFact, every_taste: bool) -> bool:
        if fact.kind == PREFERENCE and not _about_answers_re().search(fact.value):
            shared = content_words(fact.value) & asked
            if advice:  # a taste bears on what one is advised to choose or do
                return every_taste or bool(shared)
            # asked to recall ("when is my review?"), only a question about the taste itself
            return personal and 2 * len(shared) >= len(asked) > 0
        # "when I ask about ETFs": not when the question is about something else
        return not fact.topic or bool(content_words(fact.topic) & asked)

    ranked = [fact for _, fact in sorted(enumerate(found), key=rank)]
    # A handful of tastes costs little, and one may bear on a question that shares no word
    # with it ("which libraries should I use?" and "I prefer minimal dependencies"): when all
    # that apply fit, all are shown; when more are in force, those on the question's subject.
    every = [f for f in ranked if applies(f, every_taste=True)]
    if len(LABEL) + 1 + sum(len(_line(f)) + 1 for f in every) <= max_chars:
        return every
    out: list[StandingFact] = []
    used = len(LABEL) + 1
    for fact in ranked:
        cost = len(_line(fact)) + 1
        if applies(fact, every_taste=False) and used + cost <= max_chars:
            out.append(fact)
            used += cost
    return out


def section_lines(chosen: Sequence[StandingFact]) -> list[str]:
    """The payload's lines for ``chosen`` (label first); none for none."""
    return [LABEL, *(_line(f) for f in chosen)] if chosen else []


def _line(fact: StandingFact) -> str:
    return f"- {shorten(_quoted(fact.value), LINE_CHARS)}"


def with_standing(
    render: Callable[[SearchResult, int], RetrievePayload],
    result: SearchResult,
    budget: int,
    found: Sequence[StandingFact],
    share: float = BUDGET_SHARE,
) -> RetrievePayload:
    """The payload ``render`` makes of ``result``, led by the standing facts of ``found`` that
    fit in ``share`` of ``budget`` (see the module doc); the rest of the budget is
    ``render``'s, so the whole never exceeds ``budget``."""
    framing = len(OPEN) + len(FRAME) + len(CLOSE) + 3  # paid here when render adds nothing
    room = min(int(budget * CHARS_PER_TOKEN * share), budget * CHARS_PER_TOKEN - framing)
    chosen = choose(found, result.plan.query, room) if room > 0 else []
    if not chosen:
        return render(result, budget)
    # the recalled notes that follow are told apart from what applies to every answer
    lines = [*section_lines(chosen), RECALLED_LABEL]
    chars = sum(len(line) + 1 for line in lines)
    shown = {f.id for f in chosen}
    rest = dataclasses.replace(result, facts=tuple(f for f in result.facts if f.id not in shown))
    # the frame is the rendered block's own; when it renders nothing, ``room`` left it space
    payload = render(rest, budget - -(-chars // CHARS_PER_TOKEN))
    head = f"{OPEN}\n{FRAME}\n"
    if payload.context and not payload.context.startswith(head):
        return render(result, budget)  # not a block this module knows how to lead
    body = payload.context[len(head) :] if payload.context else CLOSE
    if body == CLOSE:
        lines = lines[:-1]
    context = head + "\n".join(lines) + "\n" + body
    memory = {**payload.working_memory, "standing": [f.value for f in chosen]}
    return dataclasses.replace(
        payload,
        context=context,
        tokens=estimate_tokens(context),
        budget=budget,
        working_memory=memory,
    )
