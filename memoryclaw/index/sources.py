"""Where else a question's answer may be than in its best-matching episodes: the episodes
of the lines that hold the kind of value it asks for, and the episodes of the period it names."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .fulltext import (
    _BM25_K1,
    _PHRASE_RE,
    ARCHIVE_RANGE,
    EPISODE_WEIGHTS,
    PASSAGE_BM25_WEIGHTS,
    FullTextSearch,
    Visible,
    visible_clause,
)

# Episodes of a period and matches of an expression are counted no further than this to
# choose which of them drives the dated search (SourceSearch._fewer_dated).
_DATED_COUNT_CAP = 2_000
_NARROWED = " AND +rowid IN (SELECT rowid FROM passages_fts WHERE passages_fts MATCH ?)"


class SourceSearch(FullTextSearch):
    """Episode files found by a value kind or a date, for recall to read lines from."""

    def files_with_values(
        self, match: str, shapes: Sequence[str], limit: int, visible: Visible | None = None
    ) -> list[str]:
        """The episode files of the best ``limit`` lines by ``match`` that hold a value of one
        of the kinds whose tokens are ``shapes`` (``values.shape_tokens``), best first.

        When ``match`` names a kind's token, every line holding such a value matches it, so
        the lines holding one of the query's own words are ranked first: when the
        ``limit``-th of them beats every line holding none (see :meth:`_value_narrowing`),
        they are the answer, and the others are never scored."""
        only, only_params = visible_clause(visible)
        kinds = " OR ".join(f"shape : {shape}" for shape in shapes)
        expression = f"({match}) AND ({kinds})"
        rows = None
        narrowing = self._value_narrowing(match, shapes)
        if narrowing is not None:
            among, bound = narrowing
            rows = self._value_lines(expression, limit, only, only_params, among)
            if len(rows) < limit or -rows[limit - 1][0] < bound:
                rows = None
        if rows is None:
            rows = self._value_lines(expression, limit, only, only_params)
        return list(dict.fromkeys(str(path) for _, path, shown in rows if shown))

    def _value_lines(
        self,
        expression: str,
        limit: int,
        only: str,
        only_params: Sequence[Any],
        among: str | None = None,
    ) -> list[tuple[float, str, bool]]:
        """The best ``limit`` lines by ``expression`` (of those also matching ``among``), as
        (bm25, path, whether it is an episode's line the recall may see), best first."""
        cursor = self.execute(
            f"SELECT c.score, p.path, p.kind = 'episode'{only} FROM (SELECT rowid,"
            f" bm25(passages_fts, {PASSAGE_BM25_WEIGHTS}) AS score FROM passages_fts"
            f" WHERE passages_fts MATCH ?{'' if among is None else _NARROWED}"
            " ORDER BY score LIMIT ?) c JOIN passages p ON p.rowid = c.rowid ORDER BY c.score",
            [*only_params, expression, *([] if among is None else [among]), limit],
        )
        return [(float(score), str(path), bool(shown)) for score, path, shown in cursor]

    def _value_narrowing(self, match: str, shapes: Sequence[str]) -> tuple[str, float] | None:
        """The query's own words (its phrases but the kinds' tokens) as an expression, and
        the score a line holding none of them stays under: bm25() sums each phrase's idf x a
        term-frequency part under k1 + 1, so such a line scores under (k1 + 1) x the idfs of
        the tokens and the kinds' phrases it may hold; None without such words or tokens."""
        phrases = match.split(" OR ")
        tokens = {f'"{shape}"' for shape in shapes}
        own = [p for p in phrases if p not in tokens]
        if not own or len(own) == len(phrases) or not all(_PHRASE_RE.match(p) for p in phrases):
            return None  # no line holds none of them, or all of them are the tokens
        total = self._fts_rows("passages")
        if total is None:
            return None
        bound = 0.0
        for phrase in [*(p for p in phrases if p in tokens), *(f"shape : {s}" for s in shapes)]:
            found = self.match_count(phrase, total + 1, "passages")
            ratio = (total - found + 0.5) / (found + 0.5)
            bound += math.log(ratio) if ratio > 1 else 1e-6  # as FTS5 floors an idf
        return " OR ".join(own), (_BM25_K1 + 1) * bound * (1 + 1e-9)  # the sums are of floats

    def files_dated(
        self,
        match: str,
        period: tuple[int, int],
        limit: int,
        visible: Visible | None = None,
        *,
        archived: bool = True,
    ) -> list[str]:
        """The files of the best ``limit`` episodes by ``match`` (BM25; ties: newer, then id)
        dated within ``period`` (epoch seconds, its end left out); only those passing
        ``visible``, and without the archived ones unless ``archived``."""
        weights = ", ".join(str(w) for w in EPISODE_WEIGHTS)
        only, only_params = visible_clause(visible)
        if not archived:
            only += " AND NOT (e.path >= ? AND e.path < ?)"
            only_params += ARCHIVE_RANGE
        order = " ORDER BY c.score, e.ts_epoch DESC, e.id LIMIT ?"
        if self._fewer_dated(match, period):
            # a period holding fewer episodes than the expression matches: its episodes
            # (by the ts_epoch index) filter the matches, and only they are scored
            rows = self.execute(
                f"SELECT e.path FROM (SELECT rowid, bm25(episodes_fts, {weights}) AS score"
                " FROM episodes_fts WHERE episodes_fts MATCH ? AND +rowid IN"
                " (SELECT rowid FROM episodes WHERE ts_epoch >= ? AND ts_epoch < ?)) c"
                f" JOIN episodes e ON e.rowid = c.rowid WHERE 1{only}{order}",
                [match, *period, *only_params, limit],
            ).fetchall()
        else:
            # joined, not a condition of the FTS query: the MATCH runs once, each match is
            # filtered by its date
            rows = self.execute(
                "SELECT e.path FROM episodes_fts JOIN episodes e ON e.rowid = episodes_fts.rowid"
                f" WHERE episodes_fts MATCH ? AND e.ts_epoch >= ? AND e.ts_epoch < ?{only}"
                f" ORDER BY bm25(episodes_fts, {weights}), e.ts_epoch DESC, e.id LIMIT ?",
                [match, *period, *only_params, limit],
            ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

    def _fewer_dated(self, match: str, period: tuple[int, int]) -> bool:
        """Whether fewer episodes are dated within ``period`` than match ``match`` (each
        counted no further than needed)."""
        matches = self.match_count(match, _DATED_COUNT_CAP)
        dated = self.execute(
            "SELECT count(*) FROM (SELECT 1 FROM episodes WHERE ts_epoch >= ? AND ts_epoch < ?"
            " LIMIT ?)",
            [*period, matches],
        ).fetchone()[0]
        return bool(dated < matches)
