"""Full-text search over the index: episodes and facts ranked by FTS5's BM25 (passages in
:mod:`.passages`), which query terms each row matches, and the alias groups that widen a
query."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..vault.files import ARCHIVE_DIR
from .rowids import sqlite_varint
from .schema import FTS_COLUMNS, IndexDatabase

# A condition on a memory table's agent and scope columns and its parameters: what a recall
# may see (memoryclaw.vault.scopes.Policy.sql_filter).
Visible = tuple[str, Sequence[str]]
# Column weights for bm25(): a tag outranks an entity, which outranks the summary and body.
EPISODE_WEIGHTS = (10.0, 6.0, 4.0, 1.0)
# The kinds of value a fact holds (values.shape_tokens) count as its field does.
FACT_WEIGHTS = (10.0, 3.0, 1.0, 0.5, 3.0)
# A passage's words and the kinds of value it holds count fully; who said it counts a little
# ("what did Caroline say about").
PASSAGE_WEIGHTS = (1.0, 0.5, 1.0)
PASSAGE_BM25_WEIGHTS = ", ".join(str(w) for w in PASSAGE_WEIGHTS)  # as bm25() is given them
# FTS5's bm25() weighs a term by log((N - n + 0.5) / (n + 0.5)), which is 0 (FTS5 makes it
# 1e-6) for a term in half the rows or more: in a vault of three files nearly every word of a
# question is, and a line sharing only such a word with it scores 0.  In a table of at most
# SMOOTH_ROWS rows, passages also get a ``smooth`` score that weighs each term as if the table
# had SMOOTH_ROWS more rows without it, log(1 + (N + SMOOTH_ROWS - n + 0.5) / (n + 0.5)):
# recall judges relevance by it too (it never ranks), so a small vault's lines are judged as
# a larger vault's would be.
SMOOTH_ROWS = 2_000
_PHRASE_RE = re.compile(r'^"[^"]*"$')
# Parts of a compound SELECT (SQLite allows 500)
# Episodes of an OR of common phrases are ranked among those holding two of them first (see
# FullTextSearch._narrowing): when the phrases' rows number at least this many, each phrase
# is in more than this share of the rows, and with at most this many pairs of them in one
# expression.  FTS5's bm25() uses k1 = 1.2.
_NARROW_FROM_MATCHES = 2_000
_NARROW_SHARE = 0.05
_NARROWINGS = 64
_BM25_K1 = 1.2
_AMONG = " AND +rowid IN (SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH ?)"
_PARTS_PER_QUERY = 200
# What a search hit reads of its episode: all but the details, read for the results shown
# only (Index.shown_episodes), and the derived text of the full-text table.
_HIT_COLUMNS = ", ".join(
    f"e.{column}"
    for column in (
        "rowid",
        "id",
        "path",
        "timestamp",
        "ts_epoch",
        "summary",
        "tags",
        "entities",
        "participants",
        "confidence",
        "source",
        "turn_first",
        "turn_last",
        "session",
        "agent",
        "scope",
    )
)
# Archived episodes (memoryclaw.consolidate.archive) are those whose path lies under
# episodes/archive/: a range on the indexed path column, so leaving them out costs a look-up per
# archived file.
_NOT_ARCHIVED = (
    " AND episodes_fts.rowid NOT IN (SELECT rowid FROM episodes WHERE path >= ? AND path < ?)"
)
ARCHIVE_RANGE = (ARCHIVE_DIR + "/", ARCHIVE_DIR + "0")  # "0" is the character after "/"


def visible_clause(visible: Visible | None) -> tuple[str, list[Any]]:
    """`` AND (condition)`` with its parameters, for rows a recall may see: nothing when it
    may see every row."""
    if visible is None or visible[0] == "1":
        return "", []
    return f" AND ({visible[0]})", list(visible[1])


def owner_files_clause(
    names: Sequence[str], alias: str = "", entity: str | None = None
) -> tuple[str, list[str]]:
    """A condition on a fact, true in the fact files of ``names`` in ``semantic/`` or any
    folder under it (and, given an ``entity``, for that entity's facts wherever they are), and
    its parameters."""
    column = f"{alias}.path" if alias else "path"
    # GLOB, not LIKE: a file's name is matched in its case, as the fact parser reads it
    # ("semantic/work/Preferences.md" is no more the owner's file than "semantic/Preferences.md")
    clause = " OR ".join(f"{column} = ? OR {column} GLOB ?" for _ in names)
    params = [v for name in names for v in (f"semantic/{name}", f"semantic/*/{name}")]
    if entity is not None:
        clause += f" OR {alias + '.' if alias else ''}entity = ? COLLATE NOCASE"
        params.append(entity)
    return f"({clause})", params


@dataclass(frozen=True)
class EpisodeHit:
    """An episode row returned by a keyword query, with its raw BM25 score (higher is better)."""

    rowid: int
    bm25: float
    row: Mapping[str, Any]


class FullTextSearch(IndexDatabase):
    """The index's full-text queries, their answers kept until the index changes."""

    def synonyms(self, terms: Iterable[str]) -> dict[str, list[str]]:
        """Alias expansions for each term that has any."""
        wanted = sorted(set(terms))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.execute(
            f"SELECT term, synonym FROM aliases WHERE term IN ({marks}) ORDER BY term, synonym",
            wanted,
        ).fetchall()
        out: dict[str, list[str]] = {}
        for term, synonym in rows:
            out.setdefault(term, []).append(synonym)
        return out

    def search_episodes(
        self, match: str, limit: int, visible: Visible | None = None, *, archived: bool = True
    ) -> list[EpisodeHit]:
        """Episodes matching an FTS5 expression, best BM25 first (ties: newer, then id); only
        those passing ``visible`` (an SQL condition on ``episodes`` and its parameters), and
        without the archived ones unless ``archived``.

        One statement scores every match once, inside the FTS table, and joins to their rows
        only the matches scoring at least the ``limit``-th best score: all of those tied with
        it too, so the tie-break on the rows decides who is in.
        """
        weights = ", ".join(str(w) for w in EPISODE_WEIGHTS)
        score = f"-bm25(episodes_fts, {weights})"
        # a vault without archived episodes needs no condition to leave them out
        archived = archived or not self._any_archived()
        if visible is not None and visible[0] != "1":
            # as a condition of the FTS query itself SQLite would run the MATCH once per
            # visible rowid; joined, it filters each match once
            archive_out = "" if archived else " AND NOT (e.path >= ? AND e.path < ?)"
            return self._episode_hits(
                f"SELECT {_HIT_COLUMNS}, {score} AS score FROM episodes_fts"
                " JOIN episodes e ON e.rowid = episodes_fts.rowid"
                f" WHERE episodes_fts MATCH ? AND ({visible[0]}){archive_out}"
                " ORDER BY score DESC, e.ts_epoch DESC, e.id LIMIT ?",
                [match, *visible[1], *([] if archived else ARCHIVE_RANGE), limit],
            )
        only = "" if archived else _NOT_ARCHIVED

        def ranked(narrow: str = "") -> str:
            return (
                f"WITH c AS MATERIALIZED (SELECT rowid, {score} AS score FROM episodes_fts"
                f" WHERE episodes_fts MATCH ?{narrow}{only})"
                f" SELECT {_HIT_COLUMNS}, c.score FROM c JOIN episodes e ON e.rowid = c.rowid"
                " WHERE c.score >= (SELECT min(score) FROM"
                " (SELECT score FROM c ORDER BY score DESC LIMIT ?))"
                " ORDER BY c.score DESC, e.ts_epoch DESC, e.id LIMIT ?"
            )

        rest = [*([] if archived else ARCHIVE_RANGE), limit, limit]
        narrowing = self._narrowing(match, limit)
        if narrowing is not None:
            # scored by ``match`` itself wherever the rows are picked by another expression:
            # bm25() sums over an expression's phrases, so only one with the same phrases in
            # the same order scores alike
            expression, among, bound = narrowing
            hits = self._episode_hits(
                ranked("" if among is None else _AMONG),
                [expression, *([] if among is None else [among]), *rest],
            )
            if len(hits) >= limit and hits[limit - 1].bm25 >= bound:
                return hits
        return self._episode_hits(ranked(), [match, *rest])

    def _any_archived(self) -> bool:
        """Whether any indexed episode is archived (kept until the index changes)."""
        memo = self._memo()
        if ("archived",) not in memo:
            memo[("archived",)] = (
                self.execute(
                    "SELECT 1 FROM episodes WHERE path >= ? AND path < ? LIMIT 1", ARCHIVE_RANGE
                ).fetchone()
                is not None
            )
        return bool(memo[("archived",)])

    def _narrowing(self, match: str, limit: int) -> tuple[str, str | None, float] | None:
        """A cheaper way to the same top ``limit`` episodes of an OR of common phrases: the
        rows holding at least two of them, as (the expression to match, one whose rows to
        keep or None, the score the ``limit``-th of them must reach for no other row to be
        able to beat or tie it); None for an expression this does not pay for.

        A row's BM25 is a sum over the phrases it holds, each under its idf x (k1 + 1): a row
        holding one phrase scores under (k1 + 1) x the largest idf.  Only for an expression
        whose rows are many enough for scoring them all to cost more than a narrower pass
        (``_NARROW_FROM_MATCHES``), of phrases each in more than ``_NARROW_SHARE`` of the rows
        (a rarer one's rows outscore pairs of common ones, and it costs little anyway), and
        few enough for their pairs to be one expression (``_NARROWINGS``)."""
        phrases = match.split(" OR ")
        pairs = len(phrases) * (len(phrases) - 1) // 2
        if not 0 < pairs <= _NARROWINGS or not all(_PHRASE_RE.match(p) for p in phrases):
            return None
        total = self._fts_rows("episodes")
        if total is None:
            return None
        # counted no further than needed first (a rare phrase ends it; and retrieval's
        # pruning asks the same counts), then exactly, for the idfs
        common = int(total * _NARROW_SHARE) + 1
        if any(self.match_count(p, common) < common for p in phrases):
            return None
        found = [self.match_count(p, total + 1) for p in phrases]
        if sum(found) < _NARROW_FROM_MATCHES:
            return None
        ratios = [(total - n + 0.5) / (n + 0.5) for n in found]
        bound = (_BM25_K1 + 1) * max(math.log(r) if r > 1 else 1e-6 for r in ratios)
        bound *= 1 + 1e-9  # the sums are of floats
        if len(phrases) == 2:  # the same phrases in the same order: scored alike
            return " AND ".join(phrases), None, bound
        among = " OR ".join(f"({a} AND {b})" for a, b in itertools.combinations(phrases, 2))
        return match, among, bound

    def _fts_rows(self, table: str) -> int | None:
        """How many rows BM25 counts in a full-text table: the first varint of FTS5's
        averages record (None when it cannot be read)."""
        memo = self._memo()
        key = ("fts rows", table)
        if key not in memo:
            row = self.execute(f"SELECT block FROM {table}_fts_data WHERE id = 1").fetchone()
            memo[key] = sqlite_varint(row[0]) if row is not None and row[0] else None
        rows: int | None = memo[key]
        return rows

    def _episode_hits(self, sql: str, params: Sequence[Any]) -> list[EpisodeHit]:
        cursor = self.execute(sql, params)
        columns = [c[0] for c in cursor.description]
        hits = []
        for values in cursor.fetchall():
            row = dict(zip(columns, values))
            hits.append(EpisodeHit(rowid=row["rowid"], bm25=float(row.pop("score")), row=row))
        return hits

    def _phrase_scores(
        self, table: str, weights: str, match: str
    ) -> tuple[int, list[dict[int, float]]] | None:
        """In a table of at most ``SMOOTH_ROWS`` rows, its row count and, for each phrase of
        ``match`` (an OR of phrases) in order, every row it matches with its own BM25 (kept
        until the index changes); None for a larger table or another kind of expression."""
        memo = self._memo()
        total = memo.get(("rows", table))
        if total is None:  # counted no further than needed: a big table is not scanned
            total = memo[("rows", table)] = self.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT ?)", [SMOOTH_ROWS + 1]
            ).fetchone()[0]
        phrases = match.split(" OR ")
        if total > SMOOTH_ROWS or not all(_PHRASE_RE.match(p) for p in phrases):
            return None
        fts, out = f"{table}_fts", []
        for phrase in phrases:
            key = ("phrase", table, weights, phrase)
            scores = memo.get(key)
            if scores is None:
                scores = memo[key] = dict(
                    self.execute(
                        f"SELECT rowid, -bm25({fts}, {weights}) FROM {fts} WHERE {fts} MATCH ?",
                        [phrase],
                    ).fetchall()
                )
            out.append(scores)
        return int(total), out

    def _smoothed(
        self, table: str, weights: str, match: str, rowids: Sequence[int]
    ) -> dict[int, float] | None:
        """In a table of at most ``SMOOTH_ROWS`` rows, each of ``rowids`` (rows matching
        ``match``, an OR of phrases) with its BM25 with each phrase weighed as in a larger
        table (see ``SMOOTH_ROWS``); None for a larger table or another kind of expression.

        bm25() of one phrase is that phrase's idf times its term-frequency part, and of an OR
        the sum of those, so each phrase's own score, rescaled, makes the sum exact."""
        found = self._phrase_scores(table, weights, match)
        if found is None:
            return None
        total, scaled = found[0], []
        for scores in found[1]:
            ratio = (total - len(scores) + 0.5) / (len(scores) + 0.5)
            fts_idf = math.log(ratio) if ratio > 1 else 1e-6
            scaled.append((scores, math.log1p(ratio + SMOOTH_ROWS / (len(scores) + 0.5)) / fts_idf))
        out: dict[int, float] = {}
        for rowid in rowids:
            out[rowid] = 0.0
            for scores, scale in scaled:  # summed in the phrases' order, as bm25() sums them
                if rowid in scores:
                    out[rowid] += scores[rowid] * scale
        return out

    def match_count(self, match: str, cap: int, table: str = "episodes") -> int:
        """How many episodes (or rows of another full-text ``table``) match an FTS5
        expression, counting no further than ``cap``.

        Queries ask about the same common words again and again: answers are kept until
        the index changes (:meth:`_memo`)."""
        if f"{table}_fts" not in FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        memo = self._memo()
        found = memo.get(("count", table, match, cap))
        if found is None:
            row = self.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {table}_fts WHERE {table}_fts MATCH ?"
                " LIMIT ?)",
                [match, cap],
            ).fetchone()
            found = memo[("count", table, match, cap)] = int(row[0])
        return int(found)

    def bare_match(self, match: str, limit: int) -> list[tuple[int, float]]:
        """The floor: a plain FTS5 MATCH ordered by rank, nothing else (for benchmarks)."""
        return [
            (int(r[0]), float(r[1]))
            for r in self.execute(
                "SELECT rowid, rank FROM episodes_fts WHERE episodes_fts MATCH ?"
                " ORDER BY rank LIMIT ?",
                [match, limit],
            ).fetchall()
        ]

    def terms_matching(
        self,
        table: str,
        rowids: Sequence[int],
        terms: Mapping[str, str],
        known: Mapping[int, Collection[str]] | None = None,
        among: Collection[str] = (),
    ) -> dict[int, list[str]]:
        """For each row, which of ``terms`` (label -> FTS5 phrase) it matches, in one query;
        of the phrases ``among``, a row of ``known`` holds those it lists (they came with its
        score, see ``search_passages``), and is not asked about them again."""
        if not rowids or not terms:
            return {}
        fts = f"{table}_fts"
        if fts not in FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        labels = list(terms)
        known = known or {}
        out: dict[int, list[str]] = {}
        # a small table's phrases were read whole for its smoothed scores (see _smoothed):
        # which rows they match is known already
        memo = self._memo() if table == "passages" else {}
        asked = sorted(set(rowids))
        unread: list[tuple[int, str, list[int]]] = []
        for position, phrase in enumerate(terms.values()):
            read = memo.get(("phrase", table, PASSAGE_BM25_WEIGHTS, phrase))
            todo: list[int] = []
            if read is None and phrase in among:
                read = {r for r in asked if phrase in known.get(r, ())}
                todo = [r for r in asked if r not in known]
            elif read is None:
                read, todo = (), asked
            if todo:
                unread.append((position, phrase, todo))
            for rowid in asked:
                if rowid in read:
                    out.setdefault(rowid, []).append(labels[position])
        # one cursor per phrase, the rows asked for a filter of its matches (see
        # rowid_filters); a phrase of episodes or their lines as common in episodes as those
        # planning leaves out of the ranking (its count is known) is looked up at each row
        # instead of read whole
        total = self._fts_rows("episodes") if table in ("episodes", "passages") else None
        common = int(total * _NARROW_SHARE) + 1 if total is not None else 0
        where = "rowid IN (SELECT value FROM json_each(?))"
        for start in range(0, len(unread), _PARTS_PER_QUERY):
            part = unread[start : start + _PARTS_PER_QUERY]
            sql = " UNION ALL ".join(
                f"SELECT ?, rowid FROM {fts} WHERE {fts} MATCH ? AND "
                + (where if common and self.match_count(phrase, common) >= common else "+" + where)
                for _, phrase, _ in part
            )
            params = [
                value
                for position, phrase, todo in part
                for value in (position, phrase, json.dumps(todo))
            ]
            for position, rowid in self.execute(sql, params):
                out.setdefault(rowid, []).append(labels[position])
        return {rowid: sorted(found, key=labels.index) for rowid, found in out.items()}

    def search_facts(
        self,
        named: str,
        match: str,
        limit: int,
        visible: Visible | None = None,
        *,
        current_only: bool = True,
    ) -> list[dict[str, Any]]:
        """Facts whose entity or value matches ``named`` (a question names whom it is about,
        or what: "Joanna Lindqvist" finds "- Wife: Joanna Lindqvist"), ranked by how much of
        ``match`` they hit; only those passing ``visible`` (an SQL condition on ``facts``),
        and only current ones (not superseded) unless ``current_only`` is off."""
        weights = ", ".join(str(w) for w in FACT_WEIGHTS)
        expression = f"{{entity value}} : ({named}) AND ({match})"
        only, only_params = visible_clause(visible)
        only = f"{' AND f.superseded = 0' if current_only else ''}{only}"
        cursor = self.execute(
            f"SELECT f.*, -bm25(facts_fts, {weights}) AS score"
            f" FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid"
            f" WHERE facts_fts MATCH ?{only}"
            " ORDER BY score DESC, f.updated DESC, f.path, f.line, f.id LIMIT ?",
            [expression, *only_params, limit],
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

    def search_facts_in(
        self,
        files: Sequence[str],
        match: str,
        limit: int,
        visible: Visible | None = None,
        entity: str | None = None,
    ) -> list[dict[str, Any]]:
        """Current facts of the fact files ``files`` and of ``entity`` (``owner_files_clause``)
        whose field, value or the kind of value its field names (``values.shape_tokens``)
        matches ``match``, ranked as :meth:`search_facts` ranks: a question about the owner
        names no entity, "what's my coffee order?" asks for "- Coffee: flat white" of a
        "# Food" section, "what's my job?" for "- User (job): …", "how old am I?" for
        "- User (age): 34"."""
        weights = ", ".join(str(w) for w in FACT_WEIGHTS)
        within, params = owner_files_clause(files, "f", entity)
        only, only_params = visible_clause(visible)
        cursor = self.execute(
            f"SELECT f.*, -bm25(facts_fts, {weights}) AS score"
            f" FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid"
            f" WHERE facts_fts MATCH ? AND {within} AND f.superseded = 0{only}"
            " ORDER BY score DESC, f.updated DESC, f.path, f.line, f.id LIMIT ?",
            [f"{{field value shape}} : ({match})", *params, *only_params, limit],
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]
