"""Ranking the lines of episodes and raw logs (passages) for a query plan: each line's own
BM25, the shares of its neighbours and of its episode, the boosts for who said it, the kind of
value it holds and when, the blend with the nearest lines by embedding, and recency."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any

from ..index.fulltext import Visible
from ..index.store import Index
from ..vault.scopes import Policy
from ..vault.values import FIELD_SHAPES
from .plan import QueryPlan
from .rank import KEYWORD_WEIGHT, _scaled, _when
from .recency import Recency
from .results import EpisodeResult, PassageHit, _evolve

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
# The best lines holding the kind of value a query asks for ("what address …") whose episodes
# are read too, though the query's words rank them lower: the value is the answer.
VALUE_SOURCES = 10
# A query that names a day, a month or a year ("what did Nate cook on 9 November 2022?",
# QueryPlan.period) asks about what was said then: the best DATED_SOURCES episodes of that
# period are read too, their best lines join the candidates, and a line said then has the
# best episode's share and scores x (1 + DATE_BOOST).  On LoCoMo dev any boost from 0 to 2
# with that share gave 0.910-0.914 evidence in payload against 0.903 without.
DATED_SOURCES = 5
DATE_BOOST = 1.0


LineHits = Callable[[Sequence[int]], Sequence[tuple[Mapping[str, Any], float]]]


def _rank_passages(
    index: Index,
    plan: QueryPlan,
    episodes: Sequence[EpisodeResult],
    visible: Visible,
    reach: int = PASSAGE_SOURCES,
    near: LineHits | None = None,
    *,
    policy: Policy,
    breadth: bool = False,
    archived: bool = True,
) -> list[PassageHit]:
    """The best ``PASSAGES_KEPT`` passages of the best episodes and the raw logs: each one's
    own BM25 (scaled to 0..1 over the candidates), plus ``REPLY_SHARE`` and
    ``NEIGHBOUR_SHARE`` x the lines before and after it, plus ``EPISODE_SHARE`` x its
    episode's score (scaled over the top ``PASSAGE_EPISODES``), so a line in the episode that
    best fits the whole question comes first; all of it x (1 + ``SPEAKER_BOOST``) for a line
    spoken by someone the query names, and x (1 + ``ANSWER_BOOST``) for a line holding the
    kind of value the query asks for.  A raw log's turn that an episode already holds is
    left out.  ``reach`` episodes are read (``PASSAGE_SOURCES`` unless more are asked for),
    with depth and passages kept in proportion.

    With ``near`` (the vector fallback: given the keyword candidates' rowids, the nearest
    episode lines by embedding, then those candidates' own cosines), its lines join the
    candidates and each one's own score is ``KEYWORD_WEIGHT`` x its scaled BM25 + the rest
    x its cosine, so a line is found by meaning too.

    With ``breadth`` (a summary of many episodes) no line has its episode's share: the share
    would bring the best few episodes' lines first, where a summary wants many episodes'.

    A query that names a period (``plan.period``) also reads the best ``DATED_SOURCES``
    episodes of it (archived ones only with ``archived``), their best lines joining the
    candidates whatever the others score, and a line said in it has the full ``EPISODE_SHARE``
    and scores x (1 + ``DATE_BOOST``).

    Each comes with its relevance (its score / the best one's) and the rule of ``policy``
    that lets it be recalled."""
    assert plan.episode_match is not None
    sources = [e.path for e in episodes[:reach]]
    # a line holding the kind of value asked for may be in any episode
    shapes = sorted(set(plan.shapes.values()) - FIELD_SHAPES)
    if shapes:
        found = index.files_with_values(plan.episode_match, shapes, VALUE_SOURCES, visible)
        sources += [path for path in found if path not in sources]
    scale = max(1.0, reach / PASSAGE_SOURCES)
    rows = index.search_passages(plan.episode_match, sources, round(PASSAGE_DEPTH * scale), visible)
    span = _epochs(plan.period) if plan.period is not None else None
    if span is not None:
        dated = index.files_dated(
            plan.episode_match, span, DATED_SOURCES, visible, archived=archived
        )
        if dated:
            seen = {r["rowid"] for r in rows}
            more = index.search_passages(plan.episode_match, dated, PASSAGES_KEPT, visible)
            rows += [r for r in more if r["rowid"] not in seen]
    episodes = [] if breadth else episodes[:PASSAGE_EPISODES]
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
    cosine: dict[int, float] | None = None
    keyword = {r["rowid"] for r in rows}
    if near is not None:
        cosine = {}
        known = set(keyword)
        for row, similarity in near(sorted(keyword)):
            cosine.setdefault(row["rowid"], similarity)
            if row["rowid"] not in known:
                known.add(row["rowid"])
                rows.append({**row, "score": 0.0, "smooth": 0.0})
    if not rows:
        return []
    best_episode = max((e.score for e in episodes), default=0.0)
    episode_share = {
        e.id: e.score / best_episode for e in episodes if best_episode > 0 and e.via != "vector"
    }
    own = _line_scores(rows, "score", cosine)
    smooth = _line_scores(rows, "smooth", cosine)
    named = set(plan.keywords)
    asked = set(plan.shapes.values())

    def scores(row: Mapping[str, Any]) -> tuple[float, float]:
        """The row's score, and its score as in a larger vault (by ``smooth``)."""
        path, line = row["path"], row["line"]
        share = EPISODE_SHARE * episode_share.get(row["episode_id"], 0.0)
        # a question about someone is answered by what they said, more than by a line to them
        speaker = (row["speaker"] or "").lower() in named
        answers = bool(asked) and not asked.isdisjoint((row["shape"] or "").split())
        then = span is not None and span[0] <= row["ts_epoch"] < span[1]
        if then:  # said when the query asks about: its episode fits as well as the best
            share = EPISODE_SHARE
        out = []
        for table in (own, smooth):
            before, after = table.get((path, line - 1), 0.0), table.get((path, line + 1), 0.0)
            near = REPLY_SHARE * before + NEIGHBOUR_SHARE * after
            total = table[(path, line)] + near + share
            if speaker:
                total *= 1 + SPEAKER_BOOST
            if answers:
                total *= 1 + ANSWER_BOOST
            if then:
                total *= 1 + DATE_BOOST
            out.append(float(total))
        return out[0], out[1]

    scored = sorted(
        ((*scores(row), row) for row in rows),
        key=lambda s: (-round(s[0], 9), -s[2]["ts_epoch"], s[2]["path"], s[2]["line"]),
    )
    best_smooth = max(s[1] for s in scored)
    scored = scored[: round(PASSAGES_KEPT * scale)]
    kept = [row for *_, row in scored]
    matched = index.terms_matching(
        "passages",
        [row["rowid"] for row in kept],
        plan.phrases,
        known={row["rowid"]: row["phrases"] for row in kept if "phrases" in row},
        among=plan.ranked_phrases,
    )
    tags = {t: tuple(json.loads(t or "[]")) for t in {r.get("episode_tags") for *_, r in scored}}
    best = scored[0][0]
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
            via=_passage_via(row, keyword),
            session=row["session"],
            episode_summary=row.get("episode_summary") or "",
            episode_tags=tags[row.get("episode_tags")],
            agent=row.get("agent"),
            scope=row.get("scope"),
            episode_confidence=str(row.get("episode_confidence") or ""),
            smoothed=_scaled(smoothed, best_smooth),
            relevance=_scaled(total, best),
            admitted_by=policy.admit(row.get("agent"), row.get("scope"))[1],
        )
        for total, smoothed, row in scored
    ]


def _epochs(period: tuple[date, date]) -> tuple[int, int]:
    """A period of days as epoch seconds from its first day's midnight to its end's, UTC
    (as timestamps are indexed)."""
    first, end = (datetime(d.year, d.month, d.day, tzinfo=timezone.utc) for d in period)
    return int(first.timestamp()), int(end.timestamp())


def _passage_via(row: Mapping[str, Any], keyword: set[int]) -> str:
    if row["kind"] == "log":
        return "log"
    return "keyword" if row["rowid"] in keyword else "vector"


def _line_scores(
    rows: Sequence[Mapping[str, Any]], key: str, cosine: Mapping[int, float] | None
) -> dict[tuple[str, int], float]:
    """Each row's ``key`` scaled to 0..1 over the rows; with ``cosine`` (rowid -> cosine),
    blended as the weighted episode blend does (a line without a vector counts 0)."""
    top = max(r[key] for r in rows)
    if cosine is None:
        return {(r["path"], r["line"]): r[key] / top for r in rows}
    return {
        (r["path"], r["line"]): KEYWORD_WEIGHT * (r[key] / top if top > 0 else 0.0)
        + (1 - KEYWORD_WEIGHT) * cosine.get(r["rowid"], 0.0)
        for r in rows
    }


def _processed_twin(log_path: str) -> str:
    """Where consolidation files a raw log (``logs/x.md`` -> ``logs/processed/x.md``)."""
    return "logs/processed/" + log_path.rsplit("/", 1)[-1]


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
        rescored.append(_evolve(passage, score=ranker.blend(passage.score, factor), recency=factor))
    rescored.sort(key=lambda p: (p.path, p.line))
    rescored.sort(key=lambda p: p.timestamp, reverse=True)
    rescored.sort(key=lambda p: round(p.score, 9), reverse=True)
    return rescored
