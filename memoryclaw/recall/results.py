"""What a search returns: ranked episodes, quoted passages and facts, what the recall rules
withheld, and the ``search --json`` shape of each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..vault.dates import human_date
from ..vault.factnames import UNNAMED_ENTITY, UNNAMED_FIELDS
from ..vault.scopes import OWNER, RecallContext
from .origins import UNTRUSTED, episode_origin, fact_origin, line_origin
from .plan import QueryPlan

_Result = TypeVar("_Result", "EpisodeResult", "PassageHit", "FactResult")


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
    via: str  # keyword | log | vector (found by the vector fallback alone)
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
    # 0..1: its relevance as if the vault were larger (SMOOTH_ROWS in index.fulltext): in a
    # small vault a word of the question in half its lines is no less a reason to show them
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
            "session": self.session,
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
    # another value said since, waiting for review as a conflict (semantic/_pending.md)
    newer: str | None = None
    newer_since: str = ""  # when that value was said
    relevance: float = 1.0  # 0..1: the share of the query's topic words it matched
    vault: str | None = None  # the team vault it is from (memoryclaw.share.teams); None: this one
    # said in a turn not yet consolidated: ``path`` is its raw log and ``line`` the turn
    pending: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The ``search --json`` shape."""
        return {
            **({"vault": self.vault} if self.vault else {}),
            **({"pending": True} if self.pending else {}),
            "id": self.id,
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "was": self.was,
            "was_until": self.was_until or None,
            "newer": self.newer,
            "newer_since": self.newer_since or None,
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
        ``Sarah email sarah@newco.com (was sarah@example.com until 2025-06-01) (3d)``, and one
        with another value waiting for review as a conflict says that: ``User lives in Lisbon
        (40d) (newer value waiting for review: Porto, said 1 November 2026)``."""
        age = f" ({self.age_days}d)" if self.age_days is not None else ""
        if self.was is not None:
            until = f" until {self.was_until}" if self.was_until else ""
            age = f" (was {self.was}{until}){age}"
        if self.newer is not None:  # the model weighs both; the owner decides in review
            since = f", said {human_date(self.newer_since)}" if self.newer_since else ""
            age = f"{age} (newer value waiting for review: {self.newer}{since})"
        # a team vault's fact says whose it is: ``[team] John email …``
        whose = f"[{self.vault}] " if self.vault else ""
        if self.field in UNNAMED_FIELDS:  # a line before any heading names nobody: its text
            named = "" if self.entity == UNNAMED_ENTITY else f"{self.entity}: "
            return f"{whose}{named}{self.value}{age}"
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


def _evolve(result: _Result, **changes: Any) -> _Result:
    """``dataclasses.replace`` for the results above, at a fraction of its cost: recall copies
    a result per line of every answer, and ``replace`` calls ``__init__`` with every field.
    The results are frozen dataclasses with no ``__post_init__``, so a copy of the fields is
    the same result."""
    unknown = changes.keys() - type(result).__dataclass_fields__.keys()
    if unknown:
        raise TypeError(f"{type(result).__name__} has no field {sorted(unknown)[0]!r}")
    copy = object.__new__(type(result))
    fields = copy.__dict__
    fields.update(result.__dict__)
    fields.update(changes)
    return copy
