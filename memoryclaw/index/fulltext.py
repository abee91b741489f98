"""Full-text search over the index: episodes, facts and passages ranked by FTS5's BM25,
which query terms each row matches, and the alias groups that widen a query."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..vault.files import ARCHIVE_DIR
from .schema import FTS_COLUMNS, IndexDatabase

# A condition on a memory table's agent and scope columns and its parameters: what a recall
# may see (memoryclaw.vault.scopes.Policy.sql_filter).
Visible = tuple[str, Sequence[str]]
# Column weights for bm25(): a tag outranks an entity, which outranks the summary and body.
EPISODE_WEIGHTS = (10.0, 6.0, 4.0, 1.0)
# The kinds of value a fact holds (notes.shape_tokens) count as its field does.
FACT_WEIGHTS = (10.0, 3.0, 1.0, 0.5, 3.0)
# A passage's words and the kinds of value it holds count fully; who said it counts a little
# ("what did Caroline say about").
PASSAGE_WEIGHTS = (1.0, 0.5, 1.0)
# FTS5's bm25() weighs a term by log((N - n + 0.5) / (n + 0.5)), which is 0 (FTS5 makes it
# 1e-6) for a term in half the rows or more: in a vault of three files nearly every word of a
# question is, and a line sharing only such a word with it scores 0.  In a table of at most
# SMOOTH_ROWS rows, passages also get a ``smooth`` score that weighs each term as if the table
# had SMOOTH_ROWS more rows without it, log(1 + (N + SMOOTH_ROWS - n + 0.5) / (n + 0.5)):
# recall judges relevance by it too (it never ranks), so a small vault's lines are judged as
# a larger vault's would be.
SMOOTH_ROWS = 2_000
_PHRASE_RE = re.compile(r'^"[^"]*"$')
_RANGE_ROWS_PER_ROW = 64  # see terms_matching
_SPANS_PER_QUERY = 200  # see search_passages
_MEMO_KEPT = 4096  # see Index._memo
# What a search hit reads of its episode: all but the details, read for the results shown
# only (Index.episode_details), and the derived text of the full-text table.
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
_ARCHIVE_RANGE = (ARCHIVE_DIR + "/", ARCHIVE_DIR + "0")  # "0" is the character after "/"


def _merged(spans: Sequence[tuple[int, int]], gap: int = 64) -> list[tuple[int, int]]:
    """Sorted rowid ranges, those less than ``gap`` apart joined: one full-text query reads
    a range about as fast as a row, so fewer, slightly wider ranges cost less."""
    out: list[tuple[int, int]] = []
    for low, high in spans:
        if out and low - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


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

        The top ``limit + 1`` are picked inside the FTS table and only they are joined to their
        rows; when the last two tie, or some matches may not be seen, the exact (slower)
        query, which joins every match, decides who is in.
        """
        weights = ", ".join(str(w) for w in EPISODE_WEIGHTS)
        score = f"-bm25(episodes_fts, {weights})"
        exact = (
            f"SELECT {_HIT_COLUMNS}, {score} AS score FROM episodes_fts"
            " JOIN episodes e ON e.rowid = episodes_fts.rowid WHERE episodes_fts MATCH ?{only}"
            " ORDER BY score DESC, e.ts_epoch DESC, e.id LIMIT ?"
        )
        archive_out = "" if archived else " AND NOT (e.path >= ? AND e.path < ?)"
        archive_params = [] if archived else list(_ARCHIVE_RANGE)
        if visible is not None and visible[0] != "1":
            # as a condition of the FTS query itself SQLite would run the MATCH once per
            # visible rowid; joined, it filters each match once
            where = exact.format(only=f" AND ({visible[0]}){archive_out}")
            return self._episode_hits(where, [match, *visible[1], *archive_params, limit])
        only = "" if archived else _NOT_ARCHIVED
        inner = (
            f"SELECT rowid, {score} AS score FROM episodes_fts"
            f" WHERE episodes_fts MATCH ?{only} ORDER BY score DESC LIMIT ?"
        )
        hits = self._episode_hits(
            f"SELECT {_HIT_COLUMNS}, c.score FROM ({inner}) c"
            " JOIN episodes e ON e.rowid = c.rowid ORDER BY c.score DESC, e.ts_epoch DESC, e.id",
            [match, *archive_params, limit + 1],
        )
        if len(hits) > limit and hits[limit - 1].bm25 == hits[limit].bm25:
            wider = self._episode_hits(
                f"SELECT {_HIT_COLUMNS}, c.score FROM ({inner}) c"
                " JOIN episodes e ON e.rowid = c.rowid"
                " ORDER BY c.score DESC, e.ts_epoch DESC, e.id",
                [match, *archive_params, limit * 8 + 1],
            )
            if len(wider) <= limit * 8 or wider[-1].bm25 != hits[limit - 1].bm25:
                return wider[:limit]
            hits = self._episode_hits(
                exact.format(only=archive_out), [match, *archive_params, limit]
            )
        return hits[:limit]

    def _episode_hits(self, sql: str, params: Sequence[Any]) -> list[EpisodeHit]:
        cursor = self.execute(sql, params)
        columns = [c[0] for c in cursor.description]
        hits = []
        for values in cursor.fetchall():
            row = dict(zip(columns, values))
            hits.append(EpisodeHit(rowid=row["rowid"], bm25=float(row.pop("score")), row=row))
        return hits

    def search_passages(
        self,
        match: str,
        episode_paths: Sequence[str],
        limit: int,
        visible: Visible | None = None,
    ) -> list[dict[str, Any]]:
        """Passages matching an FTS5 expression, best BM25 first (as ``score``, higher is
        better; ties: newer, then path and line), from these episode files and every raw log;
        ``smooth`` is their BM25 as in a larger table (see ``SMOOTH_ROWS``; in a larger table
        the same as ``score``).

        A file's passages are stored together, so each file is one rowid range that FTS5
        reads straight from its doclists: the cost follows the files asked for, not how
        many passages in the whole vault share a common word.
        """
        only, only_params = "", []
        if visible is not None and visible[0] != "1":
            only, only_params = f" AND {visible[0]}", list(visible[1])
        memo = self._memo()  # which logs there are, and each file's rowids, change rarely
        logs = memo.get(("logs", only, tuple(only_params)))
        if logs is None:
            logs = memo[("logs", only, tuple(only_params))] = [
                r[0]
                for r in self.execute(
                    f"SELECT DISTINCT path FROM passages WHERE kind='log'{only}", only_params
                )
            ]
        paths = list(dict.fromkeys([*episode_paths, *logs]))
        unknown = [path for path in paths if ("span", path) not in memo]
        for start in range(0, len(unknown), 500):
            chunk = unknown[start : start + 500]
            for path, low, high in self.execute(
                "SELECT path, min(rowid), max(rowid) FROM passages"
                f" WHERE path IN ({','.join('?' * len(chunk))}) GROUP BY path",
                chunk,
            ):
                memo[("span", path)] = (low, high)
            for path in chunk:
                memo.setdefault(("span", path), None)  # a file without passages
        spans = [span for path in paths if (span := memo[("span", path)]) is not None]
        wanted, rows = set(paths), []
        weights = ", ".join(str(w) for w in PASSAGE_WEIGHTS)
        one = (
            f"SELECT rowid, -bm25(passages_fts, {weights}) AS score FROM passages_fts"
            " WHERE passages_fts MATCH ? AND rowid BETWEEN ? AND ?"
        )
        merged = _merged(sorted(spans))
        # SQLite caps a compound SELECT at 500 parts: many raw logs take several queries
        for start in range(0, len(merged), _SPANS_PER_QUERY):
            part = merged[start : start + _SPANS_PER_QUERY]
            cursor = self.execute(
                "SELECT p.*, c.score, e.summary AS episode_summary, e.tags AS episode_tags,"
                " e.confidence AS episode_confidence"
                f" FROM ({' UNION ALL '.join([one] * len(part))}) c"
                " JOIN passages p ON p.rowid = c.rowid"
                " LEFT JOIN episodes e ON e.rowid = (SELECT min(rowid) FROM episodes"
                " WHERE id = p.episode_id)",
                [value for low, high in part for value in (match, low, high)],
            )
            columns = [c[0] for c in cursor.description]
            found = (dict(zip(columns, values)) for values in cursor.fetchall())
            rows += [row for row in found if row["path"] in wanted]  # a merged range's others
        smoothed = self._smoothed("passages", weights, match)
        for row in rows:
            row["smooth"] = smoothed[row["rowid"]] if smoothed is not None else row["score"]
        rows.sort(key=lambda r: (-r["score"], -r["ts_epoch"], r["path"], r["line"]))
        return rows[:limit]

    def _smoothed(self, table: str, weights: str, match: str) -> dict[int, float] | None:
        """In a table of at most ``SMOOTH_ROWS`` rows, every row matching ``match`` (an OR of
        phrases) with its BM25 with each phrase weighed as in a larger table (see
        ``SMOOTH_ROWS``); None for a larger table or another kind of expression.

        bm25() of one phrase is that phrase's idf times its term-frequency part, and of an OR
        the sum of those, so each phrase's own score, rescaled, makes the sum exact."""
        memo = self._memo()
        total = memo.get(("rows", table))
        if total is None:  # counted no further than needed: a big table is not scanned
            total = memo[("rows", table)] = self.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT ?)", [SMOOTH_ROWS + 1]
            ).fetchone()[0]
        phrases = match.split(" OR ")
        if total > SMOOTH_ROWS or not all(_PHRASE_RE.match(p) for p in phrases):
            return None
        fts, out = f"{table}_fts", dict[int, float]()
        for phrase in phrases:
            key = ("phrase", table, weights, phrase)
            rows = memo.get(key)
            if rows is None:
                rows = memo[key] = self.execute(
                    f"SELECT rowid, -bm25({fts}, {weights}) FROM {fts} WHERE {fts} MATCH ?",
                    [phrase],
                ).fetchall()
            ratio = (total - len(rows) + 0.5) / (len(rows) + 0.5)
            fts_idf = math.log(ratio) if ratio > 1 else 1e-6
            scale = math.log1p(ratio + SMOOTH_ROWS / (len(rows) + 0.5)) / fts_idf
            for rowid, score in rows:
                out[rowid] = out.get(rowid, 0.0) + score * scale
        return out

    def match_count(self, match: str, cap: int) -> int:
        """How many episodes match an FTS5 expression, counting no further than ``cap``.

        Queries ask about the same common words again and again: answers are kept until
        the index changes (:meth:`_memo`)."""
        memo = self._memo()
        found = memo.get(("count", match, cap))
        if found is None:
            row = self.execute(
                "SELECT count(*) FROM (SELECT 1 FROM episodes_fts WHERE episodes_fts MATCH ?"
                " LIMIT ?)",
                [match, cap],
            ).fetchone()
            found = memo[("count", match, cap)] = int(row[0])
        return int(found)

    def _memo(self) -> dict[Any, Any]:
        """Answers that hold until the index changes: SQLite's data_version (another
        connection's commit) and this connection's own changes key them."""
        version = self.execute("PRAGMA data_version").fetchone()[0]
        key = (int(version), self.conn.total_changes)
        if key != self._memo_key or len(self._memo_store) > _MEMO_KEPT:
            self._memo_store, self._memo_key = {}, key
        return self._memo_store

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
        self, table: str, rowids: Sequence[int], terms: Mapping[str, str]
    ) -> dict[int, list[str]]:
        """For each row, which of ``terms`` (label -> FTS5 phrase) it matches, in one query."""
        if not rowids or not terms:
            return {}
        fts = f"{table}_fts"
        if fts not in FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        # FTS5 runs a MATCH once per value of "rowid IN (...)", but reads a rowid range from
        # its doclists in one pass: rows close together (a file's lines are) are asked for as
        # one range, the rows between them dropped here.
        wanted = set(rowids)
        ranges = _merged([(r, r) for r in sorted(wanted)], _RANGE_ROWS_PER_ROW)
        one = f"SELECT ?, rowid FROM {fts} WHERE {fts} MATCH ? AND rowid BETWEEN ? AND ?"
        asks = [
            (position, phrase, low, high)
            for position, phrase in enumerate(terms.values())
            for low, high in ranges
        ]
        labels = list(terms)
        out: dict[int, list[str]] = {}
        for start in range(0, len(asks), _SPANS_PER_QUERY):
            part = asks[start : start + _SPANS_PER_QUERY]
            params = [value for ask in part for value in ask]
            for position, rowid in self.execute(" UNION ALL ".join([one] * len(part)), params):
                if rowid in wanted:
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
        only, only_params = " AND f.superseded = 0" if current_only else "", []
        if visible is not None and visible[0] != "1":
            only, only_params = f"{only} AND ({visible[0]})", list(visible[1])
        cursor = self.execute(
            f"SELECT f.*, -bm25(facts_fts, {weights}) AS score"
            f" FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid"
            f" WHERE facts_fts MATCH ?{only}"
            " ORDER BY score DESC, f.updated DESC, f.path, f.line, f.id LIMIT ?",
            [expression, *only_params, limit],
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]
