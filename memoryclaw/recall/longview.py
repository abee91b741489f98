"""The long view: a question about a whole stretch of history rather than one moment.

A question that asks for an order ("in what order did I …", "list … in order"), a progression
("how did my diet change over time?"), a summary ("summarize what we discussed about X") or
"everything about X" is answered with a timeline (:mod:`.timeline`): one dated line per
matching episode, oldest first, rather than the detailed lines of the top few.  The test is a
closed set of phrasings, so the same question always gets the same kind of answer; a question
that only uses one of these words in passing ("in order to", "summarize this article", "how do
I change my password?") is not one.

Such a question's framing (``list``, ``in order``, ``throughout our conversations``,
``mention 5 items``, ``comprehensive summary``) says how to answer, not what about: the search
runs on :attr:`LongView.topic`, the question without it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..vault.words import extract_keywords

_I = re.IGNORECASE
# A long view searches this many episodes (and reads lines of all of them), not the few a
# detailed answer is drawn from: a history is spread over many.
LONG_VIEW_EPISODES = 60
# The share of the budget standing instructions and preferences may take before a long view's
# answer (every other answer's: ``standing.BUDGET_SHARE``): a history needs the room for its
# many episodes more than a reminder of how to answer.
STANDING_SHARE = 0.1
# Each kind: the phrasings that ask for it, and what the payload header says of its choice.
_ORDER_RE = re.compile(
    r"\b(?:in (?:what|which) order|the order (?:in which|of|that)|(?:chronological|date) order"
    r"|chronologically|in (?:the )?order\b(?! (?:to|for|of)\b)|(?:what|which) came first"
    r"|sequence (?:of events|in which)|order(?:ed)? (?:by|in) (?:date|time)|timeline of)",
    _I,
)
_PROGRESS_RE = re.compile(
    r"\bhow (?:did|has|have|had) (?!(?:i|you|we|he|she|they)\b).{1,120}?"
    r"\b(?:evolve[ds]?|progress(?:ed)?|develop(?:ed)?|change[ds]?|grow[ns]?|grew|shift(?:ed)?|improve[ds]?)\b"
    r"|\b(?:evolution|progression|history) of (?:my|our)\b",
    _I,
)
# "over time" asks for a progression only of what has happened: "how do I save over time?"
# asks for a plan.
_OVER_TIME_RE = re.compile(
    r"\b(?:over|across|throughout) (?:the )?(?:time|years|months|weeks|course of)\b", _I
)


# Compiled on first use, as the other patterns marked so: a fresh process (a recall, a logged
# turn) pays for every pattern compiled at import, and most serve a question it is not asked.
@functools.cache
def _past_re() -> re.Pattern[str]:
    return re.compile(r"\b(?:did|has|have|had|was|were)\b|['’]ve\b|\w{3,}ed\b", _I)


_SUMMARY_RE = re.compile(
    r"\b(?:summar(?:y|ies|ise|ize|ised|ized|ising|izing)|recap|sum up|overview of)\b", _I
)
_EVERYTHING_RE = re.compile(
    r"\beverything(?: [\w'’]+){0,3} (?:about|regarding|related to)\b|\ball about\b", _I
)


# "Is everything about the trip ready?" asks whether, not for everything.
@functools.cache
def _yes_no_re() -> re.Pattern[str]:
    return re.compile(r"^\W*(?:is|are|was|were|does|do|did|has|have|had)\b", _I)


# A summary of text at hand ("summarize this article", "the following", "below"), not of
# what memory holds.
@functools.cache
def _at_hand_re() -> re.Pattern[str]:
    return re.compile(
        r"\bsummar\w*\s+(?:of\s+)?(?:this|these|that|it|the following|the attached|the text)\b"
        r"|\b(?:below|attached|pasted)\b|:\s*\S",
        _I,
    )


# A summary of one's own history names oneself ("I", "my", "we", "our", "me") or a span
# of it ("throughout this project", "so far").
@functools.cache
def _history_re() -> re.Pattern[str]:
    return re.compile(
        r"\b(?:i|my|me|we|our|us|throughout|so far|until now|to date|entire|whole)\b", _I
    )


_REASONS = {
    "order": "the question asks for an order",
    "progression": "the question asks how something developed over time",
    "summary": "the question asks for a summary",
    "everything": "the question asks for everything about a topic",
}


# The framing of such questions, taken out of the topic: what they ask of the answer's shape.
@functools.cache
def _framing_re() -> re.Pattern[str]:
    return re.compile(
        r"\((?:\s*(?:mention|list|name|give)\s+)?\d+\s+\w+\s*\)"  # "(mention 10 items)"
        r"|\b(?:in (?:what|which) order|the order in which|in (?:chronological |the )?order"
        r"|chronologically|over the course of"
        r"|over (?:the )?(?:(?:past|last) (?:few |several |couple of )?)?"
        r"(?:time|years|months|weeks)"
        r"|based on (?:our|these|all|the) (?:conversations?|discussions?|chats?|sessions?)"
        r"|(?:throughout|across|during|in|over) (?:all )?(?:of )?(?:our|my|the|these) "
        r"(?:conversations?|discussions?|chats?|sessions?|talks?)"
        r"|(?:our|these|all) (?:conversations?|discussions?|chats?|sessions?)"
        r"|brought up|talked about|walk me through|so far)\b"
        r"|\b(?:list|order|sequence|summar\w*|recap|overview|comprehensive|detailed|brief"
        r"|different|various|aspects?|topics?|items?|everything|progress(?:ed)?|evolved?"
        r"|developed|conversations?|discussions?|chats?|give|provide|tell|can|could|would|please)\b",
        _I,
    )


@dataclass(frozen=True)
class LongView:
    """A question recognised as asking for the long view: its kind, why, and its topic."""

    kind: str  # order | progression | summary | everything
    query: str  # the question as asked
    topic: str  # the question without its framing: what the search runs on

    @property
    def reason(self) -> str:
        """Why the payload is a timeline, as its header says."""
        return _REASONS[self.kind]


def long_view(query: str) -> LongView | None:
    """The long view ``query`` asks for, or None when it asks for detail (see the module
    docstring for the phrasings)."""
    text = " ".join(query.split())
    kind = _kind(text)
    if kind is None:
        return None
    topic = " ".join(_framing_re().sub(" ", text).split())
    # with nothing left of its own ("summarize everything"), the question is its own topic
    return LongView(kind, query, topic if extract_keywords(topic) else text)


def _kind(text: str) -> str | None:
    """Which long view ``text`` asks for, if any; a summary only of one's own history, not
    of a text at hand."""
    if _ORDER_RE.search(text):
        return "order"
    if _PROGRESS_RE.search(text) or (_OVER_TIME_RE.search(text) and _past_re().search(text)):
        return "progression"
    if _SUMMARY_RE.search(text) and _history_re().search(text) and not _at_hand_re().search(text):
        return "summary"
    if _EVERYTHING_RE.search(text) and not _yes_no_re().search(text):
        return "everything"
    return None
