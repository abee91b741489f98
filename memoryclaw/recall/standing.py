"""The owner's standing instructions and preferences, in force on every turn.

They are facts of field ``instruction`` or ``preference`` (``semantic/instructions.md``,
``semantic/preferences.md``; read from what the owner says by
:mod:`memoryclaw.consolidate.standing`, or written by hand), current (not superseded) and
admitted to the requester by the scope rules (:mod:`memoryclaw.vault.scopes`), with one
difference: an owner-level one (a hand line, or one of scope ``owner``) is how the owner wants
to be served everywhere, so a group chat sees it beside its own, but not those said in the
owner's direct conversations.

Every ``retrieve`` payload leads with them, under their own label, within
:data:`BUDGET_SHARE` of the budget: every instruction, whatever the query's words (it applies
to a question that shares none of them), and the preferences that share a word with a query
asked in the first or second person (a taste bears on what the owner asks for themselves, on
its subject; a question about other people is answered by what was said, and the room is the
evidence's).  When more are in force than fit, those whose topic ("when I ask about ETFs") the
query names go first, then those that share most words with it, then the most recent.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..index.store import Index
from ..vault.recalled import CLOSE, FRAME, OPEN
from ..vault.scopes import OWNER, Policy
from ..vault.words import extract_keywords
from .lines import _clean as _quoted  # one quoting rule for everything in the block
from .lines import shorten
from .payload import CHARS_PER_TOKEN, RetrievePayload, estimate_tokens
from .results import SearchResult

INSTRUCTION, PREFERENCE = "instruction", "preference"
STANDING_FIELDS = (INSTRUCTION, PREFERENCE)
BUDGET_SHARE = 0.25  # of budgetTokens, at most
LABEL = "Standing instructions and preferences (apply to every answer):"
RECALLED_LABEL = "Recalled for this question:"
LINE_CHARS = 240

# "whenever I ask about X": the topic of an instruction, and one of its openings
ASK_PATTERN = (
    r"(?:when(?:ever)?|any ?time|each time|every time|if ever) (?:I|we)"
    r" (?:ask|talk|chat|am asking)(?: you)? (?:about|for|regarding|on) (?P<topic>[^,.;:!?]{2,80})"
)
_TOPIC_RES = (
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

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready row (``memoryclaw profile --json``, the MCP tool)."""
        return dataclasses.asdict(self)


def topic_of(sentence: str) -> str:
    """The topic a standing statement says it applies to ("when I ask about ETFs": ``ETFs``),
    or ""."""
    for pattern in _TOPIC_RES:
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
    """``word`` without a plural or verb ending."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] else word


def in_force(index: Index, policy: Policy) -> list[StandingFact]:
    """Every current standing instruction and preference ``policy`` admits, newest first."""
    here = policy.context.scope(policy.owner_ids)
    rows = [
        r
        for r in index.fact_rows(
            f"field IN ('{INSTRUCTION}', '{PREFERENCE}') AND superseded = 0", []
        )
        if policy.admit(r["agent"], r["scope"])[0]
        # an owner-level one is how the owner wants to be served anywhere, a group included
        or (r["scope"] in (None, "", OWNER) and policy.admit(r["agent"], here)[0])
    ]
    found = [
        StandingFact(
            id=str(r["id"]),
            kind=str(r["field"]),
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


def choose(found: Sequence[StandingFact], query: str, max_chars: int) -> list[StandingFact]:
    """Those of ``found`` that fit in ``max_chars`` as lines: every instruction that applies
    to any question, those for a topic ("when I ask about ETFs") when ``query`` shares a word
    with them, and the preferences that share a word with ``query`` when it is asked in the
    first or second person; the topic named by the query first, then most words shared with
    it, then the most recent (``found`` is newest first)."""
    asked = content_words(query)
    personal = _PERSONAL_RE.search(query) is not None

    def rank(item: tuple[int, StandingFact]) -> tuple[int, int, int]:
        n, fact = item
        on_topic = bool(content_words(fact.topic) & asked)
        return (-int(on_topic), -len(content_words(fact.value) & asked), n)

    out: list[StandingFact] = []
    used = len(LABEL) + 1
    for _, fact in sorted(enumerate(found), key=rank):
        if fact.kind == PREFERENCE and not (
            personal and content_words(f"{fact.topic} {fact.value}") & asked
        ):
            continue  # a taste bears on what one asks for oneself, on its subject
        if fact.kind == INSTRUCTION and fact.topic and not content_words(fact.value) & asked:
            continue  # "when I ask about ETFs": not when the question is about something else
        cost = len(_line(fact)) + 1
        if used + cost <= max_chars:
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
