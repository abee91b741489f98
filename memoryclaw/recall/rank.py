"""Ranking: how episodes and facts score for a query plan (BM25, the tag bonus, the blend with
vector hits, recency and use; passages in :mod:`.passages`) and the 0..1 relevance each is
shown and thresholded by."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any

from ..index.fulltext import Visible
from ..index.store import Index
from ..vault.factnames import OWNER_ENTITY, OWNER_FILES, UNNAMED_FIELDS
from ..vault.scopes import Policy
from ..vault.timestamps import parse_timestamp
from ..vault.values import SHAPE_TOKENS, value_key
from ..vault.words import extract_keywords
from .plan import QueryPlan
from .recency import Recency
from .results import EpisodeResult, FactResult, _evolve

TAG_BONUS = 1.0
CANDIDATE_FLOOR = 25
ENTITY_FACTS = 3  # a query naming only an entity recalls its facts when it has this many
RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al. 2009)
# The weighted blend's share for the keyword score and its candidates from each side; chosen
# on LoCoMo dev (bench/locomo.py --hybrid), where 0.6-0.9 all beat keyword-only at k=10.
KEYWORD_WEIGHT = 0.8
WEIGHTED_DEPTH = 20


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
        tags = tuple(json.loads(hit.row["tags"]))
        exact = [tag for tag in tags if tag in wanted]
        scored.append((hit.bm25 + TAG_BONUS * len(exact), exact, hit, tags))
    scored.sort(
        key=lambda s: (-round(s[0], 9), -s[2].row["ts_epoch"], s[2].row["id"], s[2].row["path"])
    )
    top = scored[: max(limit, keep)]
    matched = {}
    if explain:
        matched = index.terms_matching("episodes", [s[2].rowid for s in top], plan.phrases)
    return [
        _episode_from_row(hit.row, score, matched.get(hit.rowid, []), exact, tags=tags)
        for score, exact, hit, tags in top
    ]


def _episode_from_row(
    row: Mapping[str, Any],
    score: float,
    matched: Sequence[str],
    exact: Sequence[str],
    via: str = "keyword",
    *,
    tags: tuple[str, ...] | None = None,
) -> EpisodeResult:
    """The result of an episode row (its tags, parsed already, may come along)."""
    turns = (row["turn_first"], row["turn_last"]) if row["turn_first"] is not None else None
    return EpisodeResult(
        id=row["id"],
        path=row["path"],
        summary=row["summary"],
        tags=tuple(json.loads(row["tags"])) if tags is None else tags,
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
            tags = tuple(json.loads(row["tags"]))
            exact = [tag for tag in tags if tag in wanted]
            vector[row["id"]] = _episode_from_row(row, cosine, [], exact, "vector", tags=tags)
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
        out.append(_evolve(by_id[episode_id], score=scores[episode_id], via=via))
    return out


def _facts(
    index: Index, plan: QueryPlan, now: datetime, limit: int, visible: Visible, own: bool = True
) -> list[FactResult]:
    assert plan.match is not None
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    found = index.search_facts(plan.match, plan.match, limit * 2, visible)
    # about the owner: their own files' fields too (a team vault's are somebody else's)
    if own and plan.with_owner:
        found += index.search_facts_in(OWNER_FILES, plan.match, limit * 2, visible, OWNER_ENTITY)
    for row in found:
        # near-duplicates (the same value spelled differently) are one fact
        key = (row["entity"].lower(), row["field"], value_key(row["value"]))
        if key not in seen and len(rows) < limit:
            seen.add(key)
            rows.append(row)
    matched = index.terms_matching("facts", [r["rowid"] for r in rows], plan.phrases)
    was = {r["rowid"]: found for r, found in zip(rows, _replaced(index, rows, visible))}
    newer = {r["rowid"]: found for r, found in zip(rows, _waiting(index, rows, visible))}
    return [
        _fact_result(
            r, now, matched.get(r["rowid"], []), was=was[r["rowid"]], newer=newer[r["rowid"]]
        )
        for r in rows
    ]


def _fact_result(
    row: Mapping[str, Any],
    now: datetime,
    matched: Sequence[str] = (),
    *,
    was: tuple[str | None, str] = (None, ""),
    admitted_by: str = "",
    newer: tuple[str | None, str] = (None, ""),
) -> FactResult:
    """The result of a fact row: its age at ``now``, the query words it matched, the value
    it superseded and since when, a newer value waiting for review and since when, and the
    rule that admitted it."""
    return FactResult(
        id=row["id"],
        entity=row["entity"],
        field=row["field"],
        value=row["value"],
        path=row["path"],
        line=row["line"],
        updated=row["updated"],
        age_days=age_in_days(row["updated"], now),
        confidence=row["confidence"],
        source=row["source"],
        matched=tuple(matched),
        agent=row.get("agent"),
        scope=row.get("scope"),
        admitted_by=admitted_by,
        was=was[0],
        was_until=was[1],
        newer=newer[0],
        newer_since=newer[1],
    )


def _replaced(
    index: Index, rows: Sequence[Mapping[str, Any]], visible: Visible
) -> list[tuple[str | None, str]]:
    """For each fact row, the value (and date) it superseded, among those ``visible``: the
    latest superseded value of its entity and field that names this value as its successor;
    (None, "") when there is none."""
    where, params = _condition(visible)
    keys = [(row["entity"], row["field"]) for row in rows]
    out: list[tuple[str | None, str]] = []
    for row, superseded in zip(rows, index.superseded_facts(keys, where, params)):
        earlier = [
            r
            for r in superseded
            if r["superseded_by"] and value_key(r["superseded_by"]) == value_key(row["value"])
        ]
        if not earlier:
            out.append((None, ""))
            continue
        latest = max(earlier, key=lambda r: (r["superseded_on"] or "", r["path"], r["line"]))
        out.append((str(latest["value"]), str(latest["superseded_on"] or "")))
    return out


def _waiting(
    index: Index, rows: Sequence[Mapping[str, Any]], visible: Visible
) -> list[tuple[str | None, str]]:
    """For each fact row, the latest other value of its entity and field waiting for review
    as a conflict, among those ``visible``, and the day it was said; (None, "") when none."""
    where, params = _condition(visible)
    keys = [(row["entity"], row["field"]) for row in rows]
    out: list[tuple[str | None, str]] = []
    for row, waiting in zip(rows, index.waiting_values(keys, where, params)):
        other = [w for w in waiting if value_key(w["value"]) != value_key(row["value"])]
        latest = max(other, key=lambda w: w["updated"] or "", default=None)
        out.append((str(latest["value"]), str(latest["updated"] or "")) if latest else (None, ""))
    return out


def _condition(visible: Visible) -> tuple[str, list[Any]]:
    """``visible`` as a condition and its parameters for a statement of its own."""
    return ("1", []) if visible[0] == "1" else (visible[0], list(visible[1]))


def age_in_days(updated: str, now: datetime) -> int | None:
    """Whole days between a fact's ``updated`` date and ``now`` (None when unparseable)."""
    try:
        day = date.fromisoformat(updated.strip()[:10])
    except ValueError:
        return None
    return max(0, (now.astimezone(timezone.utc).date() - day).days)


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
        rescored.append(_evolve(episode, score=score, recency=factor))
    rescored.sort(key=lambda e: e.id)
    rescored.sort(key=lambda e: e.timestamp, reverse=True)
    rescored.sort(key=lambda e: round(e.score, 9), reverse=True)
    return rescored


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
        _evolve(
            e,
            relevance=_scaled(e.score, 1.0 if cosine_hits and e.via == "vector" else best),
            admitted_by=policy.admit(e.agent, e.scope)[1],
        )
        for e in episodes[:limit]
    ]


def _fact_relevance(fact: FactResult, plan: QueryPlan, found: int, own: bool = True) -> float:
    """The share of the query's keywords besides the fact's entity name that the fact
    matched: "John's email?" -> 1 for John's email, 0 for his phone.  A query that names the
    entity alone ("who is my dentist?") -> 1 for each of its facts when ``found`` (how many of
    them the search found) is at most ``ENTITY_FACTS``, else 0: a person with dozens of facts
    is asked about something, and only facts about that something help.  In the owner's own
    files (``OWNER_FILES``) a line that names no field is about something of the owner's
    ("- Coffee: flat white"), so naming it is asking about it: "what's my coffee order?" ->
    1/2 for it, when the question is in the first person ("what is Dana's email?" is not
    about "- Email style: short"), and not in a team vault (not ``own``), whose owner is
    somebody else."""
    owners = (
        own
        and plan.first_person
        and fact.field in UNNAMED_FIELDS
        and fact.path.startswith("semantic/")
        and fact.path.rsplit("/", 1)[-1] in OWNER_FILES
    )
    entity = set() if owners else set(extract_keywords(fact.entity))
    topic = [k for k in plan.keywords if k not in entity]
    if not topic:
        return 1.0 if fact.matched and found <= ENTITY_FACTS else 0.0
    # a kind of value counts once, for every keyword of the topic naming it ("phone number",
    # one phone), never for the entity's name: "John's coffee" asks for no drink of the owner's
    # a word of a compound ("two" of "phase-two") is no hit of its own without the rest:
    # "trips of up to two nights" says nothing of the phase-two kickoff
    lone = {
        part
        for compound, parts in plan.compounds.items()
        if compound in topic
        and compound not in fact.matched
        and not all(p in fact.matched for p in parts)
        for part in parts
        if part not in topic
    }
    hits = [t for t in fact.matched if t not in entity and t not in SHAPE_TOKENS and t not in lone]
    hits += [k for k in topic if plan.shapes.get(k) in fact.matched and k not in hits]
    return min(1.0, len(hits) / len(topic))
