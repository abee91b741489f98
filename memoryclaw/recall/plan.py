"""Query planning: what a query is searched with, its keywords, their synonyms and the
FTS5 expressions, and which of its words are too common to rank episodes by.

Keywords are lowercased, punctuation stripped, stopwords and 1-character words dropped;
emails, URLs, dates, numbers and paths kept whole; alias groups expanded both ways; a compound
of words ("basketball-related") searched with its words too; the day, month or year the query
names in full ("on 9 November 2022") kept as its ``period``.

A query costs at most so much: only its first :data:`MAX_QUERY_BYTES` bytes are read for
keywords, and only its first :data:`MAX_QUERY_TERMS` distinct keywords are searched with.  A
plan that left something out says so (``query_truncated`` in ``search --json`` and in the
``retrieve`` payload); ``search`` at the command line, over RPC and MCP refuses a query
longer than :data:`MAX_QUERY_BYTES` instead (:func:`check_query`), while ``retrieve``, which a
hook runs on whatever the user wrote, reads its head and never fails for its length.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from itertools import pairwise

from ..errors import InvalidInputError
from ..index.store import Index
from ..vault.dates import named_period
from ..vault.values import shape_terms
from ..vault.words import extract_keywords

# What one query may cost (see the module docstring): a long message's topic is in its first
# few thousand words, and past these the planning and the FTS5 expression only grow.
MAX_QUERY_BYTES = 16 * 1024
MAX_QUERY_TERMS = 64
PRUNE_FROM_EPISODES = 5_000
COMMON_SHARE = 0.05
_PHRASE_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
# A compound of words ("basketball-related", "self-care"), not a code or a date ("covid-19").
_COMPOUND_RE = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
# The words of a compound that count rather than name ("phase-two", "first-time",
# "three-day"): alone they find lines about anything ("booked two rooms" for "phase-two").
# The compound itself is still searched as a phrase.
_FILLER_PARTS = frozenset(
    """
    one two three four five six seven eight nine ten eleven twelve twenty hundred thousand
    first second third fourth fifth sixth seventh eighth ninth tenth half single double triple
    """.split()
)


def check_query(query: str, *, source: str | None = None, line: int | None = None) -> None:
    """Raise :class:`InvalidInputError` for a ``search`` query over :data:`MAX_QUERY_BYTES`
    (naming the ``source`` file and ``line`` it was read from, when given)."""
    size = len(query.encode("utf-8", "surrogatepass"))
    if size > MAX_QUERY_BYTES:
        limit = MAX_QUERY_BYTES
        problem = f"{size} bytes, over the {limit}-byte limit of a search"
        problem += f" (retrieve reads the first {limit} bytes of a longer message)"
        raise InvalidInputError("query", problem, source=source, line=line)


def query_head(query: str) -> str:
    """The part of ``query`` read for keywords: its first :data:`MAX_QUERY_BYTES` bytes, cut
    at a character (and at a space, when there is one, so no word is cut in half)."""
    if len(query) * 4 <= MAX_QUERY_BYTES:  # cannot be over, whatever its characters
        return query
    data = query.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_QUERY_BYTES:
        return query
    head = data[:MAX_QUERY_BYTES].decode("utf-8", "ignore")
    cut = head.rfind(" ")
    return head[:cut] if cut > 0 else head


def fts_phrase(term: str) -> str | None:
    """An FTS5 phrase for a keyword (``john@example.com`` -> ``"john example com"``)."""
    tokens = _PHRASE_TOKEN_RE.findall(term)
    return '"' + " ".join(tokens) + '"' if tokens else None


def _or_expression(terms: Sequence[str]) -> str | None:
    phrases = sorted({p for p in (fts_phrase(t) for t in terms) if p})
    return " OR ".join(phrases) if phrases else None


# A question in the first person is about the owner ("what's my coffee order?").
_FIRST_PERSON_RE = re.compile(r"\b(?:i|me|my|mine|myself)\b|\bi'", re.IGNORECASE)
# One in the plural asks with the owner in mind ("where should we eat?": their allergy), not
# about them ("what's our budget?" is no "- Budget: …" of theirs); "US" is a country.
_PLURAL_RE = re.compile(r"\b(?:[Ww]e|[Oo]urs?|[Oo]urselves|us)\b")
# ... but not for the words that only frame a request ("can you tell me Dana's email?", "I need
# the plumber's number"), which are about somebody else.
_REQUEST_RE = re.compile(
    r"\b(?:(?:tell|remind|show|give|send|help|find|let|get|ask|text|email|call|teach|bring"
    r"|fetch|pass) (?:me|us)|I (?:need|want|wonder|was wondering|would like)|I['’]d like)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class QueryPlan:
    """What a query was turned into: keywords, their alias expansions and the FTS5 expression."""

    query: str
    keywords: tuple[str, ...]
    expansions: Mapping[str, tuple[str, ...]]
    terms: tuple[str, ...]  # keywords then synonyms, no duplicates
    match: str | None  # every term: what facts are matched with
    common: tuple[str, ...] = ()  # terms left out of episode ranking (see COMMON_SHARE)
    episode_match: str | None = None  # the expression episodes are ranked with
    truncated: bool = False  # the query was longer than what is read or searched with
    shapes: Mapping[str, str] = field(default_factory=dict)  # keyword -> its kind's token
    # the day, month or year the query names (vault.dates.named_period): first day, day after
    period: tuple[date, date] | None = None

    @cached_property  # asked by every step of a search: the plan does not change
    def phrases(self) -> dict[str, str]:
        """Each term that has one, with its FTS5 phrase (what ``matched`` is checked against)."""
        return {term: phrase for term in self.terms if (phrase := fts_phrase(term))}

    @cached_property
    def first_person(self) -> bool:
        """Whether the query is about the owner: in the first person beyond a request's frame
        ("what's my job?", not "can you tell me Dana's email?")."""
        return _FIRST_PERSON_RE.search(self._beyond_request) is not None

    @cached_property
    def with_owner(self) -> bool:
        """Whether the query asks as the owner, in the first person or with them among others
        ("where should we eat tonight?"): their own files' facts may answer it."""
        return self.first_person or _PLURAL_RE.search(self._beyond_request) is not None

    @cached_property
    def _beyond_request(self) -> str:
        return _REQUEST_RE.sub(" ", self.query)

    @cached_property
    def compounds(self) -> dict[str, list[str]]:
        """Each compound keyword with its words (:func:`compound_parts`)."""
        return compound_parts(self.keywords)

    @cached_property
    def ranked_phrases(self) -> frozenset[str]:
        """The phrases of ``episode_match``."""
        common = set(self.common)
        return frozenset(p for t, p in self.phrases.items() if t not in common)


def plan_query(query: str, index: Index) -> QueryPlan:
    """Extract keywords and expand them with alias groups (single words and adjacent pairs)
    and with the token of the kind of value a keyword names (``notes.shape_terms``), from
    the query's head only and at most :data:`MAX_QUERY_TERMS` of them."""
    head = query_head(query)
    keywords = extract_keywords(head)
    truncated = head != query or len(keywords) > MAX_QUERY_TERMS
    keywords = keywords[:MAX_QUERY_TERMS]
    candidates = list(keywords)
    for first, second in pairwise(keywords):
        candidates += [f"{first} {second}", f"{first}-{second}"]
    synonyms = index.synonyms(candidates)
    terms = list(keywords)
    shapes = shape_terms(keywords, head)
    expanded = [synonym for synonym_list in synonyms.values() for synonym in synonym_list]
    # a compound is searched as a phrase, and its words too: "basketball-related" finds a
    # line that says "basketball"
    parts = [w for words in compound_parts(keywords).values() for w in words]
    for term in [*parts, *expanded, *shapes.values()]:
        if term not in terms:
            terms.append(term)
    common = _common_terms(index, terms, keywords)
    return QueryPlan(
        query=query,
        keywords=tuple(keywords),
        expansions={term: tuple(syns) for term, syns in synonyms.items()},
        terms=tuple(terms),
        match=_or_expression(terms),
        common=common,
        episode_match=_or_expression([t for t in terms if t not in common]),
        truncated=truncated,
        shapes=shapes,
        period=named_period(head),
    )


def compound_parts(keywords: Sequence[str]) -> dict[str, list[str]]:
    """Each compound keyword ("phase-two", "basketball-related") with its words that name
    what it is about (``_FILLER_PARTS`` left out: "phase", "basketball")."""
    return {
        k: [w for w in extract_keywords(k.replace("-", " ")) if w not in _FILLER_PARTS]
        for k in keywords
        if _COMPOUND_RE.fullmatch(k)
    }


def _common_terms(index: Index, terms: Sequence[str], keywords: Sequence[str]) -> tuple[str, ...]:
    """Terms found in more than ``COMMON_SHARE`` of a large vault's episodes, when the query
    also has a rarer keyword of its own (a rarer synonym is not enough).

    BM25 gives such a term little weight, yet scoring it means visiting every episode it is
    in: at 100,000 episodes that is most of a query's time.  Leaving it out of the ranking is
    a deterministic rule, reported with the results.
    """
    total = index.episode_count()
    if total < PRUNE_FROM_EPISODES or len(terms) < 2:
        return ()
    cap = int(total * COMMON_SHARE)
    common = []
    for term in terms:
        phrase = fts_phrase(term)
        if phrase is not None and index.match_count(phrase, cap + 1) > cap:
            common.append(term)
    rare_keywords = [k for k in keywords if k not in common and fts_phrase(k) is not None]
    return tuple(common) if rare_keywords else ()
