"""Explainable keyword retrieval: a query's search, from its plan to ranked, explained
episodes, passages and facts.

1. Keywords (:mod:`.plan`): lowercase, punctuation stripped, stopwords and 1-character words
   dropped; emails, URLs, dates, numbers and paths kept whole; alias groups expanded both ways.
2. Episodes (:mod:`.rank`): FTS5 BM25 with tags weighted above entities, summary and details,
   plus a bonus per keyword that equals a tag exactly; ties go to the newer episode, then the
   smaller id.
3. Facts about the entities the query names, or whose value it names, each with its age in
   days; a fact's field, and the kinds of value it holds (``values.shape_tokens``: "number"
   finds a phone number), are searched too.
4. With a vector fallback, fewer than ``min_primary_results`` keyword hits (for a query with
   at least one keyword) add the nearest episodes by embedding, blended ``primary_first``
   (keyword hits, then new vector hits) or by reciprocal rank fusion (``rrf``).  ``weighted``
   instead re-scores every query with a keyword: the keyword top ``WEIGHTED_DEPTH`` and the
   vector top ``WEIGHTED_DEPTH`` by ``KEYWORD_WEIGHT`` x keyword score (scaled to 0..1 over
   the keyword candidates) + the rest x cosine.  When the fallback runs, episode lines are
   searched by embedding too (step 6).
5. Every result lists the keywords it matched, its score and how it was found (``via``)
   (:mod:`.explain`).
6. Passages (the quoted lines of episodes, and turns of raw logs not yet consolidated) are
   ranked by their own BM25 plus a share of their episode's (when the vector fallback ran,
   blended with their cosine, the nearest lines joining them: :func:`.passages._rank_passages`);
   :mod:`memoryclaw.recall.payload` turns them into what the model sees.

What a query may cost (how much of it is read and searched with) is :mod:`.plan`'s to say.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import MemoryclawError
from ..index.store import Index
from ..vault.config import RecencySettings
from ..vault.files import is_archived
from ..vault.scopes import Policy, RecallContext
from ..vault.values import reaches
from .explain import _explain
from .passages import PASSAGE_SOURCES, LineHits, _passages_by_recency, _rank_passages
from .plan import QueryPlan, plan_query, query_head
from .rank import (
    WEIGHTED_DEPTH,
    _blend,
    _by_recency,
    _fact_relevance,
    _facts,
    _rank_episodes,
    _recency_for,
    _relevance,
    _scaled,
)
from .recency import effective_weight
from .results import EpisodeResult, FactResult, PassageHit, SearchResult, _evolve

# When recall rules withhold memories, the vector fallback asks for this many times more
# neighbours, since withheld ones are dropped only after the search.
_WITHHELD_SLACK = 4
_FACTS_PER_RESULT = 2


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
    # ``lines(query, k, also)``: the same for episode lines, by passage rowid (see
    # :func:`memoryclaw.index.vectors.nearest_passages`); asked only when the fallback runs.
    lines: Callable[[str, int, Sequence[int]], Sequence[tuple[Mapping[str, Any], float]]] | None = (
        None
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
    breadth: bool = False,
    own_vault: bool = True,
) -> SearchResult:
    """Rank episodes and facts for ``query`` (see the module docstring for how), among the
    memories ``policy`` lets this request see (all of them without one); archived episodes
    (``episodes/archive/``) only with ``include_archived``; newer memories, and those
    ``recalled`` lately (episode id -> last recall), up by ``recency`` (:mod:`.recency`);
    with ``breadth``, lines rank without their episode's share
    (:func:`.passages._rank_passages`).  Unless ``own_vault`` (a team vault's index), no fact
    of ``index`` is the asking owner's: "my" finds nothing by being the owner's."""
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
            keep=max(PASSAGE_SOURCES, limit),
            visible=visible,
            archived=include_archived,
        )
        facts = _facts(
            index,
            plan,
            now,
            fact_limit if fact_limit is not None else limit * _FACTS_PER_RESULT,
            visible,
            own_vault,
        )
    used, error, near_lines = False, None, None
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
            if fallback.lines is not None:
                near_lines = _near_lines(fallback.lines, text, more, policy, include_archived)
    weight = effective_weight(recency.weight, query) if recency is not None else 0.0
    ranker = None
    if weight > 0 and recency is not None and episodes:
        ranker = _recency_for(episodes, weight, recency.half_life_days, now, recalled or {})
        episodes = _by_recency(episodes, ranker)
    passages: list[PassageHit] = []
    if plan.episode_match is not None and limit > 0:
        # a search for more episodes than passages are usually read from reads them all
        reach = max(PASSAGE_SOURCES, limit)
        try:
            passages = _rank_passages(
                index,
                plan,
                episodes,
                visible,
                reach,
                near_lines,
                policy=policy,
                breadth=breadth,
                archived=include_archived,
            )
        except MemoryclawError as exc:  # the embedder failed between two calls
            error = str(exc)
            passages = _rank_passages(
                index,
                plan,
                episodes,
                visible,
                reach,
                policy=policy,
                breadth=breadth,
                archived=include_archived,
            )
        if ranker is not None and passages:
            passages = _passages_by_recency(passages, episodes, ranker)
            best_line = passages[0].score
            passages = [_evolve(p, relevance=_scaled(p.score, best_line)) for p in passages]
    cosine_hits = used and fallback is not None and fallback.blend_strategy == "primary_first"
    episodes = _explain(index, plan, _relevance(episodes, cosine_hits, limit, policy))
    # an episode is as relevant as its best line: an answer among other notes is no less one
    best_of: dict[str, float] = {}
    for p in passages:
        best_of[p.episode_id] = max(best_of.get(p.episode_id, 0.0), p.relevance)
    episodes = [
        _evolve(e, relevance=best_of[e.id]) if best_of.get(e.id, 0.0) > e.relevance else e
        for e in episodes
    ]
    of_entity = Counter(f.entity.lower() for f in facts)
    facts = [_reached(f, plan) for f in facts]
    facts = [
        _evolve(
            f,
            relevance=_fact_relevance(f, plan, of_entity[f.entity.lower()], own_vault),
            admitted_by=policy.admit(f.agent, f.scope)[1],
        )
        for f in facts
    ]
    if plan.shapes:  # ranked: the matched words as the query said them, for the explanation
        asked = _asked_by(plan)
        facts = [_evolve(f, matched=_as_asked(f.matched, asked)) for f in facts]
        episodes = [_evolve(e, matched=_as_asked(e.matched, asked)) for e in episodes]
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


def _asked_by(plan: QueryPlan) -> dict[str, list[str]]:
    """Each kind-of-value token of ``plan`` (``shapephone``) with the query's words that asked
    for it ("number")."""
    named: dict[str, list[str]] = {}
    for keyword, token in plan.shapes.items():
        named.setdefault(token, []).append(keyword)
    return named


def _as_asked(matched: Sequence[str], asked: Mapping[str, list[str]]) -> tuple[str, ...]:
    """``matched`` with each kind-of-value token given as the words that asked for it
    (:func:`_asked_by`), once."""
    return tuple(dict.fromkeys(w for t in matched for w in asked.get(t, [t])))


def _reached(fact: FactResult, plan: QueryPlan) -> FactResult:
    """``fact`` with the query's words asking how to get hold of someone ("how do I reach
    Ana?") among those it matched when its value is a way to: a phone number, an email or an
    address (``values.reaches``)."""
    words = [
        k for k in plan.keywords if k not in fact.matched and reaches(k, fact.value, fact.field)
    ]
    return _evolve(fact, matched=(*fact.matched, *words)) if words else fact


def _near_lines(
    lines: Callable[[str, int, Sequence[int]], Sequence[tuple[Mapping[str, Any], float]]],
    text: str,
    more: int,
    policy: Policy,
    include_archived: bool,
) -> LineHits:
    """The vector fallback's line search for :func:`_rank_passages`: the ``WEIGHTED_DEPTH``
    nearest episode lines this request may see, then the cosines of the rowids asked."""

    def near(also: Sequence[int]) -> list[tuple[Mapping[str, Any], float]]:
        return [
            hit
            for hit in lines(text, WEIGHTED_DEPTH * more, also)
            if policy.admit(hit[0]["agent"], hit[0]["scope"])[0]
            and (include_archived or not is_archived(hit[0]["path"]))
        ]

    return near


def passage_neighbours(
    index: Index, passages: Sequence[PassageHit]
) -> dict[tuple[str, int], list[PassageHit]]:
    """For each passage, the lines just before and after it in the same file."""
    rows = index.passage_neighbour_rows([(p.path, p.line) for p in passages])
    return {
        (passage.path, passage.line): [
            _evolve(
                passage,
                turn=r["turn"],
                line=r["line"],
                speaker=r["speaker"],
                text=r["text"],
                timestamp=r["timestamp"],
                score=0.0,
                matched=(),
            )
            for r in near
        ]
        for passage, near in zip(passages, rows)
    }
