"""Explainable keyword retrieval: keywords, ranking of episodes, passages and facts.

1. Keywords: lowercase, punctuation stripped, stopwords and 1-character words dropped;
   emails, URLs, dates, numbers and paths kept whole; alias groups expanded both ways.
2. Episodes: FTS5 BM25 with tags weighted above entities, summary and details, plus a bonus
   per keyword that equals a tag exactly; ties go to the newer episode, then the smaller id.
3. Facts about the entities the query names, or whose value it names, each with its age in
   days; a fact's field, and the kinds of value it holds (``values.shape_tokens``: "number"
   finds a phone number), are searched too.
4. With a vector fallback, fewer than ``min_primary_results`` keyword hits (for a query with
   at least one keyword) add the nearest episodes by embedding, blended ``primary_first``
   (keyword hits, then new vector hits) or by reciprocal rank fusion (``rrf``).  ``weighted``
   instead re-scores every query with a keyword: the keyword top ``WEIGHTED_DEPTH`` and the
   vector top ``WEIGHTED_DEPTH`` by ``KEYWORD_WEIGHT`` x keyword score (scaled to 0..1 over
   the keyword candidates) + the rest x cosine.
5. Every result lists the keywords it matched, its score and how it was found (``via``).

A query costs at most so much: only its first :data:`MAX_QUERY_BYTES` bytes are read for
keywords, and only its first :data:`MAX_QUERY_TERMS` distinct keywords are searched with.  A
plan that left something out says so (``query_truncated`` in ``search --json`` and in the
``retrieve`` payload); ``search`` at the command line, over RPC and MCP refuses a query
longer than :data:`MAX_QUERY_BYTES` instead (:func:`check_query`), while ``retrieve``, which a
hook runs on whatever the user wrote, reads its head and never fails for its length.

6. Passages (the quoted lines of episodes, and turns of raw logs not yet consolidated) are
   ranked by their own BM25 plus a share of their episode's; :mod:`memoryclaw.recall.payload` turns
   them into what the model sees.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from itertools import pairwise
from typing import Any

from ..errors import InvalidInputError, MemoryclawError
from ..index.fulltext import Visible
from ..index.store import Index
from ..vault.config import RecencySettings
from ..vault.files import is_archived
from ..vault.scopes import OWNER, Policy, RecallContext
from ..vault.timestamps import parse_timestamp
from ..vault.values import shape_terms, value_key
from ..vault.words import extract_keywords
from .origins import UNTRUSTED, episode_origin, fact_origin, line_origin
from .recency import Recency, effective_weight

TAG_BONUS = 1.0
# What one query may cost (see the module docstring): a long message's topic is in its first
# few thousand words, and past these the planning and the FTS5 expression only grow.
MAX_QUERY_BYTES = 16 * 1024
MAX_QUERY_TERMS = 64
PRUNE_FROM_EPISODES = 5_000
COMMON_SHARE = 0.05
CANDIDATE_FLOOR = 25
# When recall rules withhold memories, the vector fallback asks for this many times more
# neighbours, since withheld ones are dropped only after the search.
_WITHHELD_SLACK = 4
_FACTS_PER_RESULT = 2
ENTITY_FACTS = 3  # a query naming only an entity recalls its facts when it has this many
_MIN_SUMMARY_CHARS = 40
_DETAILED_EPISODES = 2
_DETAILS_CHARS = 400
RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al. 2009)
# The weighted blend's share for the keyword score and its candidates from each side; chosen
# on LoCoMo dev (bench/locomo.py --hybrid), where 0.6-0.9 all beat keyword-only at k=10.
KEYWORD_WEIGHT = 0.8
WEIGHTED_DEPTH = 20
# Passages (see _rank_passages), all chosen on LoCoMo dev (bench/locomo.py): how many
# candidates a query takes and keeps; the share of its episode's score a passage gets (the
# whole conversation's fit to the query: 0 loses 6 points of evidence_in_payload, 0.25-1.0
# are alike); the share of the line before it (the question it answers) and after it; and
# the boost for a line spoken by someone the query names.
PASSAGE_DEPTH = 120
PASSAGES_KEPT = 40  # the best of them, explained and returned
EPISODE_SHARE = 0.5
REPLY_SHARE = 0.3
NEIGHBOUR_SHARE = 0.3
SPEAKER_BOOST = 0.5  # 0.3-1.0 help a little; more buries what others said
# The boost for a line that holds the kind of value the query asks for (a phone number for
# "what's her number?", values.shape_tokens): it answers, where a line that repeats the
# question only asks.
ANSWER_BOOST = 0.5
PASSAGE_EPISODES = 5
# Passages are read from the best PASSAGE_SOURCES episodes only (and every raw log): on LoCoMo
# dev 20 loses nothing against all of them, and a common word no longer costs a vault scan.
PASSAGE_SOURCES = 20

_PHRASE_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


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

    @property
    def phrases(self) -> dict[str, str]:
        """Each term that has one, with its FTS5 phrase (what ``matched`` is checked against)."""
        return {term: phrase for term in self.terms if (phrase := fts_phrase(term))}


def plan_query(query: str, index: Index) -> QueryPlan:
    """Extract keywords and expand them with alias groups (single words and adjacent pairs)
    and with the token of the kind of value a keyword names (``values.shape_terms``), from
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
    shapes = shape_terms(keywords)
    expanded = [synonym for synonym_list in synonyms.values() for synonym in synonym_list]
    for term in [*expanded, *shapes.values()]:
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
    )


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


@dataclass(frozen=True)
class EpisodeResult:
    """A ranked episode with the reasons it was found."""

    id: str
    path: str
    summary: str
    tags: tuple[str, ...]
    timestamp: str
    score: float
    matched: tuple[str, ...]
    exact_tags: tuple[str, ...]
    via: str
    source: str | None
    source_turns: tuple[int, int] | None
    session: str | None
    details: str = ""
    agent: str | None = None
    scope: str | None = None
    admitted_by: str = ""  # the recall rule that let it through (memoryclaw.vault.scopes)
    relevance: float = 1.0  # 0..1, one scale for every blend strategy (see _relevance)
    confidence: str = ""  # the episode's own: low, medium or high
    recency: float | None = (
        None  # its recency factor, when recency ranked (memoryclaw.recall.recency)
    )
    vault: str | None = None  # the team vault it is from (memoryclaw.share.teams); None: this one

    def as_dict(self) -> dict[str, Any]:
        """The ``search --json`` shape."""
        return {
            **({"vault": self.vault} if self.vault else {}),
            "kind": "episode",
            "id": self.id,
            "path": self.path,
            "summary": self.summary,
            "tags": list(self.tags),
            "timestamp": self.timestamp,
            "score": round(self.score, 4),
            "relevance": round(self.relevance, 4),
            "confidence": self.confidence or None,
            "matched": list(self.matched),
            "exact_tags": list(self.exact_tags),
            "via": self.via,
            "source": self.source,
            "source_turns": list(self.source_turns) if self.source_turns else None,
            "session": self.session,
            "agent": self.agent,
            "scope": self.scope or OWNER,
            "admitted_by": self.admitted_by,
            "origin": episode_origin(self.scope, self.source, self.session, self.tags, self.vault),
            **({"recency": round(self.recency, 2)} if self.recency is not None else {}),
        }


@dataclass(frozen=True)
class PassageHit:
    """One quoted line that matched the query: a turn of an episode, or of a raw log not yet
    consolidated (``via: log``), with the keywords it matched."""

    path: str
    episode_id: str  # the episode's id; for ``via: log`` the raw log's id
    turn: int | None
    line: int
    speaker: str | None
    text: str
    timestamp: str
    score: float
    matched: tuple[str, ...]
    via: str  # keyword | log
    session: str | None = None
    episode_summary: str = ""
    episode_tags: tuple[str, ...] = ()
    agent: str | None = None
    scope: str | None = None
    admitted_by: str = ""
    relevance: float = 1.0  # 0..1: score / the query's best passage score
    episode_confidence: str = ""  # of the episode it is a line of ("" for a raw log)
    recency: float | None = None  # its recency factor, when recency ranked
    vault: str | None = None  # the team vault it is from (memoryclaw.share.teams); None: this one
    # 0..1: its relevance as if the vault were larger (index.SMOOTH_ROWS): in a small vault a
    # word of the question in half its lines is no less a reason to show them
    smoothed: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The ``search --json`` shape."""
        return {
            **({"vault": self.vault} if self.vault else {}),
            "path": self.path,
            "episode_id": self.episode_id,
            "turn": self.turn,
            "line": self.line,
            "speaker": self.speaker,
            "text": self.text,
            "timestamp": self.timestamp,
            "score": round(self.score, 4),
            "relevance": round(self.relevance, 4),
            "matched": list(self.matched),
            "via": self.via,
            "agent": self.agent,
            "scope": self.scope or OWNER,
            "admitted_by": self.admitted_by,
            # a line that quotes no turn is the episode's own text: the episode's origin
            "origin": None
            if self.turn is None
            else line_origin(self.speaker, self.scope, self.session, self.vault),
            **({"recency": round(self.recency, 2)} if self.recency is not None else {}),
        }


@dataclass(frozen=True)
class FactResult:
    """A fact about an entity the query mentions, with its age."""

    id: str
    entity: str
    field: str
    value: str
    path: str
    line: int
    updated: str
    age_days: int | None
    confidence: str
    source: str
    matched: tuple[str, ...]
    agent: str | None = None
    scope: str | None = None
    admitted_by: str = ""
    was: str | None = None  # the value this one superseded (memoryclaw.consolidate.supersede)
    was_until: str = ""  # the date it was superseded on
    relevance: float = 1.0  # 0..1: the share of the query's topic words it matched
    vault: str | None = None  # the team vault it is from (memoryclaw.share.teams); None: this one

    def as_dict(self) -> dict[str, Any]:
        """The ``search --json`` shape."""
        return {
            **({"vault": self.vault} if self.vault else {}),
            "id": self.id,
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "was": self.was,
            "was_until": self.was_until or None,
            "path": self.path,
            "line": self.line,
            "updated": self.updated,
            "age_days": self.age_days,
            "confidence": self.confidence,
            "relevance": round(self.relevance, 4),
            "source": self.source,
            "matched": list(self.matched),
            "agent": self.agent,
            "scope": self.scope or OWNER,
            "admitted_by": self.admitted_by,
            "origin": fact_origin(self.source, self.scope, self.confidence, self.vault),
        }

    def render(self) -> str:
        """``John email john@example.com (14d)``; a value that replaced another says so:
        ``Sarah email sarah@newco.com (was sarah@example.com until 2025-06-01) (3d)``."""
        age = f" ({self.age_days}d)" if self.age_days is not None else ""
        if self.was is not None:
            until = f" until {self.was_until}" if self.was_until else ""
            age = f" (was {self.was}{until}){age}"
        # a team vault's fact says whose it is: ``[team] John email …``
        whose = f"[{self.vault}] " if self.vault else ""
        if self.field in {"value", "note"}:
            return f"{whose}{self.entity}: {self.value}{age}"
        return f"{whose}{self.entity} {self.field} {self.value}{age}"


@dataclass(frozen=True)
class SearchResult:
    """Ranked episodes and facts for one query, with how they were found."""

    plan: QueryPlan
    results: tuple[EpisodeResult, ...]
    facts: tuple[FactResult, ...]
    fallback_used: bool
    took_ms: float
    fallback_error: str | None = None  # why the vector fallback could not run, when it could not
    passages: tuple[PassageHit, ...] = ()  # best first, of every episode and unconsolidated log
    context: RecallContext = field(default_factory=RecallContext)
    withheld: tuple[Withheld, ...] | None = None  # asked for: what the rules kept out, and why

    def as_dict(self) -> dict[str, Any]:
        """The ``search --json`` document."""
        by_episode: dict[str, list[dict[str, Any]]] = {}
        for passage in self.passages:
            by_episode.setdefault(passage.episode_id, []).append(passage.as_dict())
        results = []
        for result in self.results:
            doc = result.as_dict()
            passages = by_episode.get(result.id, [])
            for line in passages:  # an untrusted episode's lines are untrusted, whoever spoke
                if line["origin"] is None or doc["origin"] == UNTRUSTED:
                    line["origin"] = doc["origin"]
            results.append({**doc, "passages": passages})
        doc = {
            "query": self.plan.query,
            "keywords": list(self.plan.keywords),
            "expanded": {k: list(v) for k, v in self.plan.expansions.items()},
            "common": list(self.plan.common),
            "results": results,
            "recent": [p.as_dict() for p in self.passages if p.via == "log"],
            "facts": [f.as_dict() for f in self.facts],
            "fallback_used": self.fallback_used,
            "took_ms": round(self.took_ms, 3),
        }
        if self.fallback_error is not None:
            doc["fallback_error"] = self.fallback_error
        if self.plan.truncated:
            doc["query_truncated"] = True
        doc["context"] = self.context.as_dict()
        if self.withheld is not None:
            doc["withheld"] = [w.as_dict() for w in self.withheld]
        return doc


@dataclass(frozen=True)
class Withheld:
    """A memory that matched the query but that the recall rules kept out, and why."""

    kind: str  # episode | fact | passage
    id: str
    path: str
    text: str
    agent: str | None
    scope: str | None
    reason: str
    vault: str | None = None  # the team vault it is from (memoryclaw.share.teams); None: this one

    def as_dict(self) -> dict[str, Any]:
        """The ``search --explain-scope`` shape."""
        return {
            **({"vault": self.vault} if self.vault else {}),
            "kind": self.kind,
            "id": self.id,
            "path": self.path,
            "text": self.text,
            "agent": self.agent,
            "scope": self.scope or OWNER,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class VectorFallback:
    """How :func:`search` may widen a thin keyword result with the nearest episodes.

    ``nearest(query, k, also)`` returns up to ``k`` (episode row, cosine) pairs, best first,
    followed by those of the episode ids in ``also`` not among them (see
    :func:`memoryclaw.index.vectors.nearest`).  It may raise a :class:`MemoryclawError` (an embedder
    that is missing or down), which leaves the keyword result as it is with the reason in
    ``SearchResult.fallback_error``.
    """

    nearest: Callable[[str, int, Sequence[str]], Sequence[tuple[Mapping[str, Any], float]]]
    min_primary_results: int
    blend_strategy: str = "primary_first"


def age_in_days(updated: str, now: datetime) -> int | None:
    """Whole days between a fact's ``updated`` date and ``now`` (None when unparseable)."""
    try:
        day = date.fromisoformat(updated.strip()[:10])
    except ValueError:
        return None
    return max(0, (now.astimezone(timezone.utc).date() - day).days)


def _episode_from_row(
    row: Mapping[str, Any],
    score: float,
    matched: Sequence[str],
    exact: Sequence[str],
    via: str = "keyword",
) -> EpisodeResult:
    turns = (row["turn_first"], row["turn_last"]) if row["turn_first"] is not None else None
    return EpisodeResult(
        id=row["id"],
        path=row["path"],
        summary=row["summary"],
        tags=tuple(json.loads(row["tags"])),
        timestamp=row["timestamp"],
        score=score,
        matched=tuple(matched),
        exact_tags=tuple(exact),
        via=via,
        source=row["source"],
        source_turns=turns,
        session=row["session"],
        details=row.get("details") or "",
        agent=row.get("agent"),
        scope=row.get("scope"),
        confidence=str(row.get("confidence") or ""),
    )


def search(
    index: Index,
    query: str,
    *,
    limit: int,
    now: datetime,
    fact_limit: int | None = None,
    fallback: VectorFallback | None = None,
    policy: Policy | None = None,
    include_archived: bool = True,
    recency: RecencySettings | None = None,
    recalled: Mapping[str, datetime] | None = None,
) -> SearchResult:
    """Rank episodes and facts for ``query`` (see the module docstring for how), among the
    memories ``policy`` lets this request see (all of them without one); archived episodes
    (``episodes/archive/``) only with ``include_archived``; newer memories, and those
    ``recalled`` lately (episode id -> last recall), up by ``recency`` (:mod:`.recency`)."""
    started = time.perf_counter()
    policy = policy or Policy(RecallContext())
    visible = policy.sql_filter()
    plan = plan_query(query, index)
    episodes: list[EpisodeResult] = []
    facts: list[FactResult] = []
    weighted = fallback is not None and fallback.blend_strategy == "weighted"
    if plan.match is not None and limit > 0:
        # The weighted blend ranks deeper and explains only the results it keeps.
        depth = max(limit, WEIGHTED_DEPTH) if weighted else limit
        episodes = _rank_episodes(
            index,
            plan,
            depth,
            explain=False,
            keep=PASSAGE_SOURCES,
            visible=visible,
            archived=include_archived,
        )
        facts = _facts(
            index,
            plan,
            now,
            fact_limit if fact_limit is not None else limit * _FACTS_PER_RESULT,
            visible,
        )
    used, error = False, None
    # A query of stopwords only ("ok thanks") has no topic to be near: no fallback for it.
    if (
        fallback is not None
        and limit > 0
        and plan.keywords
        and (weighted or len(episodes) < fallback.min_primary_results)
    ):
        # withheld neighbours are dropped after the vector search: ask for more of them
        text = query_head(query)  # an embedding of a huge text costs as much as its length
        more = 1 if visible[0] == "1" and include_archived else _WITHHELD_SLACK
        try:
            if weighted:
                near = fallback.nearest(text, WEIGHTED_DEPTH * more, [e.id for e in episodes])
            else:
                near = fallback.nearest(text, (limit + len(episodes[:limit])) * more, ())
        except MemoryclawError as exc:
            error = str(exc)
        else:
            used = True
            near = [
                hit
                for hit in near
                if policy.admit(hit[0]["agent"], hit[0]["scope"])[0]
                and (include_archived or not is_archived(hit[0]["path"]))
            ]
            episodes = _blend(plan, episodes, near, fallback.blend_strategy)
    weight = effective_weight(recency.weight, query) if recency is not None else 0.0
    ranker = None
    if weight > 0 and recency is not None and episodes:
        ranker = _recency_for(episodes, weight, recency.half_life_days, now, recalled or {})
        episodes = _by_recency(episodes, ranker)
    passages: list[PassageHit] = []
    if plan.episode_match is not None and limit > 0:
        passages = _rank_passages(index, plan, episodes, visible)
        if ranker is not None:
            passages = _passages_by_recency(passages, episodes, ranker)
    cosine_hits = used and fallback is not None and fallback.blend_strategy == "primary_first"
    episodes = _explain(index, plan, _relevance(episodes, cosine_hits, limit, policy))
    missing = [e.id for e in episodes if not e.details]
    if missing:
        details = index.episode_details(missing)
        episodes = [
            replace(e, details=details.get(e.id, "")) if not e.details else e for e in episodes
        ]
    best_line = passages[0].score if passages else 0.0
    # one replace per result: this runs for every line of every answer
    passages = [
        replace(
            p,
            relevance=_scaled(p.score, best_line),
            admitted_by=policy.admit(p.agent, p.scope)[1],
        )
        for p in passages
    ]
    # an episode is as relevant as its best line: an answer among other notes is no less one
    best_of: dict[str, float] = {}
    for p in passages:
        best_of[p.episode_id] = max(best_of.get(p.episode_id, 0.0), p.relevance)
    episodes = [
        replace(e, relevance=best_of[e.id]) if best_of.get(e.id, 0.0) > e.relevance else e
        for e in episodes
    ]
    of_entity = Counter(f.entity.lower() for f in facts)
    facts = [
        replace(
            f,
            relevance=_fact_relevance(f, plan, of_entity[f.entity.lower()]),
            admitted_by=policy.admit(f.agent, f.scope)[1],
        )
        for f in facts
    ]
    took = (time.perf_counter() - started) * 1000
    return SearchResult(
        plan,
        tuple(episodes),
        tuple(facts),
        used,
        took,
        error,
        passages=tuple(passages),
        context=policy.context,
    )


def _scaled(score: float, best: float) -> float:
    """``score`` as a share of ``best``, within 0..1 (0 when nothing scored above 0)."""
    return min(1.0, max(0.0, score / best)) if best > 0 else 0.0


def _relevance(
    episodes: list[EpisodeResult], cosine_hits: bool, limit: int, policy: Policy
) -> list[EpisodeResult]:
    """The first ``limit`` episodes with their relevance (score / the best score of the
    query, the same for keyword, ``rrf`` and ``weighted`` results: each list has one score
    scale; a ``primary_first`` vector hit (``cosine_hits``), whose score is a cosine beside
    BM25 scores, keeps its cosine, already 0..1) and the recall rule that admitted them."""
    best = max((e.score for e in episodes if not (cosine_hits and e.via == "vector")), default=0)
    return [
        replace(
            e,
            relevance=_scaled(e.score, 1.0 if cosine_hits and e.via == "vector" else best),
            admitted_by=policy.admit(e.agent, e.scope)[1],
        )
        for e in episodes[:limit]
    ]


def _fact_relevance(fact: FactResult, plan: QueryPlan, found: int) -> float:
    """The share of the query's keywords besides the fact's entity name that the fact
    matched: "John's email?" -> 1 for John's email, 0 for his phone.  A query that names the
    entity alone ("who is my dentist?") -> 1 for each of its facts when ``found`` (how many of
    them the search found) is at most ``ENTITY_FACTS``, else 0: a person with dozens of facts
    is asked about something, and only facts about that something help."""
    entity = set(extract_keywords(fact.entity))
    topic = [k for k in plan.keywords if k not in entity]
    if not topic:
        return 1.0 if fact.matched and found <= ENTITY_FACTS else 0.0
    # a kind of value counts once, for every keyword naming it ("phone number", one phone)
    kinds = {plan.shapes[k] for k in topic if k in plan.shapes}
    hits = [t for t in fact.matched if t not in entity and t not in kinds]
    hits += [k for k in topic if plan.shapes.get(k) in fact.matched and k not in hits]
    return min(1.0, len(hits) / len(topic))


def withheld_from(everything: SearchResult, policy: Policy) -> tuple[Withheld, ...]:
    """What of an unrestricted search ``policy`` keeps out, each with the rule's reason."""
    out: list[Withheld] = []
    for e in everything.results:
        admitted, reason = policy.admit(e.agent, e.scope)
        if not admitted:
            out.append(
                Withheld("episode", e.id, e.path, e.summary, e.agent, e.scope, reason, e.vault)
            )
    for f in everything.facts:
        admitted, reason = policy.admit(f.agent, f.scope)
        if not admitted:
            text = f.render()
            out.append(Withheld("fact", f.id, f.path, text, f.agent, f.scope, reason, f.vault))
    for p in everything.passages:
        admitted, reason = policy.admit(p.agent, p.scope)
        if not admitted:
            ident = f"{p.episode_id}#{p.turn}" if p.turn is not None else p.episode_id
            text = f"{p.speaker}: {p.text}" if p.speaker else p.text
            out.append(Withheld("passage", ident, p.path, text, p.agent, p.scope, reason, p.vault))
    return tuple(out)


def _rank_passages(
    index: Index, plan: QueryPlan, episodes: Sequence[EpisodeResult], visible: Visible
) -> list[PassageHit]:
    """The best ``PASSAGES_KEPT`` passages of the best episodes and the raw logs: each one's
    own BM25 (scaled to 0..1 over the candidates), plus ``REPLY_SHARE`` and
    ``NEIGHBOUR_SHARE`` x the lines before and after it, plus ``EPISODE_SHARE`` x its
    episode's score (scaled over the top ``PASSAGE_EPISODES``), so a line in the episode that
    best fits the whole question comes first; all of it x (1 + ``SPEAKER_BOOST``) for a line
    spoken by someone the query names, and x (1 + ``ANSWER_BOOST``) for a line holding the
    kind of value the query asks for.  A raw log's turn that an episode already holds is
    left out."""
    assert plan.episode_match is not None
    sources = [e.path for e in episodes[:PASSAGE_SOURCES]]
    rows = index.search_passages(plan.episode_match, sources, PASSAGE_DEPTH, visible)
    episodes = episodes[:PASSAGE_EPISODES]
    logs = [r for r in rows if r["kind"] == "log"]
    if logs:
        covered = index.consolidated_turns(sorted({_processed_twin(r["path"]) for r in logs}))
        rows = [
            r
            for r in rows
            if r["kind"] != "log"
            # the twin by name is this log's copy only when it is of the same session
            or not any(
                a <= r["turn"] <= b
                for a, b in covered.get((_processed_twin(r["path"]), r["session"]), [])
            )
        ]
    if not rows:
        return []
    top = max(r["score"] for r in rows)
    best_episode = max((e.score for e in episodes), default=0.0)
    episode_share = {
        e.id: e.score / best_episode for e in episodes if best_episode > 0 and e.via != "vector"
    }
    own = {(r["path"], r["line"]): r["score"] / top for r in rows}
    top_smooth = max(r["smooth"] for r in rows)
    smooth = {(r["path"], r["line"]): r["smooth"] / top_smooth for r in rows}
    named = set(plan.keywords)
    asked = set(plan.shapes.values())

    def score(row: Mapping[str, Any], own: Mapping[tuple[str, int], float] = own) -> float:
        path, line = row["path"], row["line"]
        before, after = own.get((path, line - 1), 0.0), own.get((path, line + 1), 0.0)
        share = episode_share.get(row["episode_id"], 0.0)
        near = REPLY_SHARE * before + NEIGHBOUR_SHARE * after
        total = own[(path, line)] + near + EPISODE_SHARE * share
        # a question about someone is answered by what they said, more than by a line to them
        if (row["speaker"] or "").lower() in named:
            total *= 1 + SPEAKER_BOOST
        if asked.intersection((row["shape"] or "").split()):
            total *= 1 + ANSWER_BOOST
        return float(total)

    scored = sorted(
        ((score(row), row) for row in rows),
        key=lambda s: (-round(s[0], 9), -s[1]["ts_epoch"], s[1]["path"], s[1]["line"]),
    )[:PASSAGES_KEPT]
    matched = index.terms_matching("passages", [r["rowid"] for _, r in scored], plan.phrases)
    best_smooth = max(score(row, smooth) for row in rows)
    return [
        PassageHit(
            path=row["path"],
            episode_id=row["episode_id"],
            turn=row["turn"],
            line=row["line"],
            speaker=row["speaker"],
            text=row["text"],
            timestamp=row["timestamp"],
            score=total,
            matched=tuple(matched.get(row["rowid"], [])),
            via="log" if row["kind"] == "log" else "keyword",
            session=row["session"],
            episode_summary=row.get("episode_summary") or "",
            episode_tags=tuple(json.loads(row.get("episode_tags") or "[]")),
            agent=row.get("agent"),
            scope=row.get("scope"),
            episode_confidence=str(row.get("episode_confidence") or ""),
            smoothed=_scaled(score(row, smooth), best_smooth),
        )
        for total, row in scored
    ]


def passage_neighbours(
    index: Index, passages: Sequence[PassageHit]
) -> dict[tuple[str, int], list[PassageHit]]:
    """For each passage, the lines just before and after it in the same file."""
    out: dict[tuple[str, int], list[PassageHit]] = {}
    for passage in passages:
        rows = index.passage_rows(passage.path, passage.line - 1, passage.line + 1)
        out[(passage.path, passage.line)] = [
            replace(
                passage,
                turn=r["turn"],
                line=r["line"],
                speaker=r["speaker"],
                text=r["text"],
                timestamp=r["timestamp"],
                score=0.0,
                matched=(),
            )
            for r in rows
            if r["line"] != passage.line
        ]
    return out


def _processed_twin(log_path: str) -> str:
    """Where consolidation files a raw log (``logs/x.md`` -> ``logs/processed/x.md``)."""
    return "logs/processed/" + log_path.rsplit("/", 1)[-1]


def _explain(index: Index, plan: QueryPlan, episodes: list[EpisodeResult]) -> list[EpisodeResult]:
    """Fill in the keywords matched by the results that do not list any yet."""
    unexplained = [e.id for e in episodes if not e.matched]
    if not unexplained or not plan.phrases:
        return episodes
    rowid_of = index.episode_rowids(unexplained)
    matched = index.terms_matching("episodes", list(rowid_of.values()), plan.phrases)
    return [
        e if e.matched else replace(e, matched=tuple(matched.get(rowid_of.get(e.id, -1), [])))
        for e in episodes
    ]


def _blend(
    plan: QueryPlan,
    keyword: list[EpisodeResult],
    near: Sequence[tuple[Mapping[str, Any], float]],
    strategy: str,
) -> list[EpisodeResult]:
    """Keyword hits and vector hits as one list, deduplicated by episode id.

    ``primary_first``: the keyword hits in their order, then vector hits not among them.
    ``rrf``: both lists fused by reciprocal rank (``1 / (60 + rank)`` summed over the lists),
    ties to the better keyword rank, then the better vector rank, then the id; the score is
    the fused one and an episode both found says ``via: keyword+vector``.
    ``weighted``: see :func:`_weighted`.
    """
    wanted = set(plan.terms)
    vector: dict[str, EpisodeResult] = {}
    for row, cosine in near:
        if row["id"] not in vector:
            exact = [tag for tag in json.loads(row["tags"]) if tag in wanted]
            vector[row["id"]] = _episode_from_row(row, cosine, [], exact, via="vector")
    if strategy == "weighted":
        return _weighted(keyword, vector)
    if strategy != "rrf":
        known = {e.id for e in keyword}
        return keyword + [e for episode_id, e in vector.items() if episode_id not in known]
    fused: dict[str, float] = {}
    for ranked in ([e.id for e in keyword], list(vector)):
        for rank, episode_id in enumerate(dict.fromkeys(ranked), start=1):
            fused[episode_id] = fused.get(episode_id, 0.0) + 1.0 / (RRF_K + rank)
    return _fuse(keyword, vector, set(vector), fused)


def _weighted(
    keyword: list[EpisodeResult], vector: dict[str, EpisodeResult]
) -> list[EpisodeResult]:
    """Every candidate scored ``KEYWORD_WEIGHT`` x scaled keyword score + the rest x cosine.

    ``vector`` holds the vector top ``WEIGHTED_DEPTH`` followed by the keyword hits' own
    cosines; the keyword scores are scaled to 0..1 over the keyword candidates (all 1 when
    they are equal) and count 0 for an episode only the vectors found; an episode without a
    vector yet has cosine 0.  Ties go to the better keyword rank, then the id.
    """
    cosine = {episode_id: e.score for episode_id, e in vector.items()}
    vector_top = set(list(vector)[:WEIGHTED_DEPTH])
    scores = [e.score for e in keyword]
    low, high = (min(scores), max(scores)) if scores else (0.0, 0.0)
    total: dict[str, float] = {}
    for episode in keyword:
        scaled = (episode.score - low) / (high - low) if high > low else 1.0
        total.setdefault(episode.id, KEYWORD_WEIGHT * scaled)
    for episode_id in vector_top:
        total.setdefault(episode_id, 0.0)
    for episode_id in total:
        total[episode_id] += (1 - KEYWORD_WEIGHT) * cosine.get(episode_id, 0.0)
    return _fuse(keyword, vector, vector_top, total)


def _fuse(
    keyword: list[EpisodeResult],
    vector: dict[str, EpisodeResult],
    vector_found: set[str],
    scores: Mapping[str, float],
) -> list[EpisodeResult]:
    """The episodes of ``scores``, best first (ties: keyword rank, vector order, id), each
    carrying its score and saying whether the keywords, the vectors or both found it."""
    keyword_rank: dict[str, int] = {}
    for rank, episode in enumerate(keyword, start=1):
        keyword_rank.setdefault(episode.id, rank)
    vector_rank = {episode_id: rank for rank, episode_id in enumerate(vector, start=1)}
    by_id = {**vector, **{e.id: e for e in reversed(keyword)}}
    missing = len(by_id) + 1
    order = sorted(
        scores,
        key=lambda i: (-scores[i], keyword_rank.get(i, missing), vector_rank.get(i, missing), i),
    )
    out = []
    for episode_id in order:
        found_by = (episode_id in keyword_rank, episode_id in vector_found)
        via = {(True, True): "keyword+vector", (True, False): "keyword"}.get(found_by, "vector")
        out.append(replace(by_id[episode_id], score=scores[episode_id], via=via))
    return out


def _rank_episodes(
    index: Index,
    plan: QueryPlan,
    limit: int,
    *,
    explain: bool = True,
    keep: int = 0,
    visible: Visible | None = None,
    archived: bool = True,
) -> list[EpisodeResult]:
    """The best ``limit`` episodes, or ``keep`` when more (the tag bonus re-sorts 5 x
    ``limit`` BM25 candidates; those kept beyond ``limit`` come from the same candidates)."""
    assert plan.episode_match is not None
    hits = index.search_episodes(
        plan.episode_match, max(CANDIDATE_FLOOR, limit * 5), visible, archived=archived
    )
    wanted = set(plan.terms)
    scored = []
    for hit in hits:
        exact = [tag for tag in json.loads(hit.row["tags"]) if tag in wanted]
        scored.append((hit.bm25 + TAG_BONUS * len(exact), exact, hit))
    scored.sort(
        key=lambda s: (-round(s[0], 9), -s[2].row["ts_epoch"], s[2].row["id"], s[2].row["path"])
    )
    top = scored[: max(limit, keep)]
    matched = {}
    if explain:
        matched = index.terms_matching("episodes", [s[2].rowid for s in top], plan.phrases)
    return [
        _episode_from_row(hit.row, score, matched.get(hit.rowid, []), exact)
        for score, exact, hit in top
    ]


def _facts(
    index: Index, plan: QueryPlan, now: datetime, limit: int, visible: Visible
) -> list[FactResult]:
    assert plan.match is not None
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for row in index.search_facts(plan.match, plan.match, limit * 2, visible):
        # near-duplicates (the same value spelled differently) are one fact
        key = (row["entity"].lower(), row["field"], value_key(row["value"]))
        if key not in seen and len(rows) < limit:
            seen.add(key)
            rows.append(row)
    matched = index.terms_matching("facts", [r["rowid"] for r in rows], plan.phrases)
    was = {r["rowid"]: _replaced(index, r, visible) for r in rows}
    return [
        FactResult(
            id=r["id"],
            entity=r["entity"],
            field=r["field"],
            value=r["value"],
            path=r["path"],
            line=r["line"],
            updated=r["updated"],
            age_days=age_in_days(r["updated"], now),
            confidence=r["confidence"],
            source=r["source"],
            matched=tuple(matched.get(r["rowid"], [])),
            agent=r.get("agent"),
            scope=r.get("scope"),
            was=was[r["rowid"]][0],
            was_until=was[r["rowid"]][1],
        )
        for r in rows
    ]


def _replaced(index: Index, row: Mapping[str, Any], visible: Visible) -> tuple[str | None, str]:
    """The value (and date) the fact in ``row`` superseded, among those ``visible``: the latest
    superseded value of its entity and field that names this value as its successor; (None,
    "") when there is none."""
    where = "lower(entity) = lower(?) AND field = ? AND superseded = 1"
    params: list[Any] = [row["entity"], row["field"]]
    if visible[0] != "1":
        where, params = f"{where} AND ({visible[0]})", [*params, *visible[1]]
    earlier = [
        r
        for r in index.fact_rows(where, params)
        if r["superseded_by"] and value_key(r["superseded_by"]) == value_key(row["value"])
    ]
    if not earlier:
        return None, ""
    latest = max(earlier, key=lambda r: (r["superseded_on"] or "", r["path"], r["line"]))
    return str(latest["value"]), str(latest["superseded_on"] or "")


def _when(timestamp: str) -> datetime | None:
    try:
        return parse_timestamp(timestamp)
    except ValueError:
        return None  # a hand-written date that cannot be read: no age, no recency


def _recency_for(
    episodes: Sequence[EpisodeResult],
    weight: float,
    half_life_days: float,
    now: datetime,
    recalled: Mapping[str, datetime],
) -> Recency:
    """How this request weighs recency: age 0 is its newest candidate episode."""
    dated = [when for e in episodes if (when := _when(e.timestamp)) is not None]
    anchor = max(dated, default=now)
    return Recency(weight, half_life_days, anchor, now, recalled)


def _by_recency(episodes: Sequence[EpisodeResult], ranker: Recency) -> list[EpisodeResult]:
    """The episodes rescored by recency and use, ranked again (ties: newer, then smaller id)."""
    rescored = []
    for episode in episodes:
        when = _when(episode.timestamp)
        factor = ranker.factor(when, episode.id) if when is not None else 1.0
        score = ranker.blend(episode.score, factor)
        rescored.append(replace(episode, score=score, recency=factor))
    rescored.sort(key=lambda e: e.id)
    rescored.sort(key=lambda e: e.timestamp, reverse=True)
    rescored.sort(key=lambda e: round(e.score, 9), reverse=True)
    return rescored


def _passages_by_recency(
    passages: Sequence[PassageHit], episodes: Sequence[EpisodeResult], ranker: Recency
) -> list[PassageHit]:
    """The passages rescored by their episode's recency (a raw log's turn by its own age)."""
    factors = {e.id: e.recency for e in episodes if e.recency is not None}
    rescored = []
    for passage in passages:
        factor = factors.get(passage.episode_id)
        if factor is None:
            when = _when(passage.timestamp)
            factor = ranker.factor(when, passage.episode_id) if when is not None else 1.0
        rescored.append(replace(passage, score=ranker.blend(passage.score, factor), recency=factor))
    rescored.sort(key=lambda p: (p.path, p.line))
    rescored.sort(key=lambda p: p.timestamp, reverse=True)
    rescored.sort(key=lambda p: round(p.score, 9), reverse=True)
    return rescored
