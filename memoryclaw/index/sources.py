"""Where else a question's answer may be than in its best-matching episodes: the episodes
of the lines that hold the kind of value it asks for, and the episodes of the period it names."""

from __future__ import annotations

from collections.abc import Sequence

from .fulltext import (
    ARCHIVE_RANGE,
    EPISODE_WEIGHTS,
    PASSAGE_BM25_WEIGHTS,
    Visible,
    visible_clause,
)
from .schema import IndexDatabase


class SourceSearch(IndexDatabase):
    """Episode files found by a value kind or a date, for recall to read lines from."""

    def files_with_values(
        self, match: str, shapes: Sequence[str], limit: int, visible: Visible | None = None
    ) -> list[str]:
        """The episode files of the best ``limit`` lines by ``match`` that hold a value of one
        of the kinds whose tokens are ``shapes`` (``values.shape_tokens``), best first."""
        only, only_params = visible_clause(visible)
        kinds = " OR ".join(f"shape : {shape}" for shape in shapes)
        rows = self.execute(
            f"SELECT p.path FROM (SELECT rowid, bm25(passages_fts, {PASSAGE_BM25_WEIGHTS}) AS score"
            " FROM passages_fts WHERE passages_fts MATCH ? ORDER BY score LIMIT ?) c"
            f" JOIN passages p ON p.rowid = c.rowid WHERE p.kind = 'episode'{only}"
            " ORDER BY c.score",
            [f"({match}) AND ({kinds})", limit, *only_params],
        ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

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
        # joined, not a condition of the FTS query: the MATCH runs once, each match is
        # filtered by its date
        rows = self.execute(
            "SELECT e.path FROM episodes_fts JOIN episodes e ON e.rowid = episodes_fts.rowid"
            f" WHERE episodes_fts MATCH ? AND e.ts_epoch >= ? AND e.ts_epoch < ?{only}"
            f" ORDER BY bm25(episodes_fts, {weights}), e.ts_epoch DESC, e.id LIMIT ?",
            [match, *period, *only_params, limit],
        ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))
