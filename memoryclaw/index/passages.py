"""The quoted lines of episodes and the turns of raw logs (passages) a query matches, ranked
by FTS5's BM25 within the files asked for."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .fulltext import PASSAGE_BM25_WEIGHTS, FullTextSearch, Visible, visible_clause
from .rowids import rowid_filters


class PassageSearch(FullTextSearch):
    """Passages ranked within a set of files."""

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

        A file's passages are stored together, so each file is one rowid range; the ranges
        filter one full-text cursor (see ``rowid_filters``), which scores only the rows kept.  A
        small table needs no cursor: its phrases' own scores add up to the same (see
        :meth:`_small_passages`).
        """
        only, only_params = visible_clause(visible)
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
        rows = self._small_passages(match, paths, limit)
        if rows is None:
            rows = self._ranked_passages(match, paths, limit)
        rows.sort(key=lambda r: (-r["score"], -r["ts_epoch"], r["path"], r["line"]))
        rows = rows[:limit]
        # what each line's episode (the first indexed of its id) says of itself, read once
        # per episode, not once per line
        episodes = {
            found[0]: found[1:]
            for found in self.execute(
                "SELECT id, summary, tags, confidence FROM episodes WHERE rowid IN"
                " (SELECT min(rowid) FROM episodes WHERE id IN (SELECT value FROM json_each(?))"
                " GROUP BY id)",
                [json.dumps(list({row["episode_id"] for row in rows}))],
            )
        }
        for row in rows:
            found = episodes.get(row["episode_id"], (None, None, None))
            row["episode_summary"], row["episode_tags"], row["episode_confidence"] = found
        smoothed = self._smoothed(
            "passages", PASSAGE_BM25_WEIGHTS, match, [row["rowid"] for row in rows]
        )
        for row in rows:
            row["smooth"] = smoothed[row["rowid"]] if smoothed is not None else row["score"]
        return rows

    def _ranked_passages(
        self, match: str, paths: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        """:meth:`search_passages`' best ``limit`` rows of these files, by one full-text
        cursor per statement that scores only the rows of the files' ranges (``rowid_filters``)."""
        memo = self._memo()  # each file's rowids change rarely
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
        rows: list[dict[str, Any]] = []
        for within, bounds in rowid_filters(spans):
            # every match is scored inside SQLite, and only the best ``limit`` of the files
            # asked for (a merged range holds others) become rows: a common word's hundreds
            # of matches cost no Python object each
            cursor = self.execute(
                "WITH c AS MATERIALIZED (SELECT rowid,"
                f" -bm25(passages_fts, {PASSAGE_BM25_WEIGHTS}) AS score"
                f" FROM passages_fts WHERE passages_fts MATCH ? AND {within}),"
                " k AS MATERIALIZED (SELECT c.rowid, c.score FROM c"
                " JOIN passages p ON p.rowid = c.rowid"
                " WHERE +p.path IN (SELECT value FROM json_each(?))"
                " ORDER BY c.score DESC, p.ts_epoch DESC, p.path, p.line, c.rowid LIMIT ?)"
                " SELECT p.*, k.score FROM k JOIN passages p ON p.rowid = k.rowid",
                [match, *bounds, json.dumps(paths), limit],
            )
            columns = [c[0] for c in cursor.description]
            rows += [dict(zip(columns, values)) for values in cursor.fetchall()]
        return rows

    def _small_passages(
        self, match: str, paths: Sequence[str], limit: int
    ) -> list[dict[str, Any]] | None:
        """:meth:`search_passages`' best ``limit`` rows of these files in a small table (see
        :meth:`_phrase_scores`), without a full-text query: bm25() of an OR of phrases sums
        each phrase's own score in the expression's order, so the same sum of the phrases'
        kept scores is the same float; None for a larger table or another expression."""
        found = self._phrase_scores("passages", PASSAGE_BM25_WEIGHTS, match)
        if found is None:
            return None
        memo = self._memo()
        places = memo.get(("places", "passages"))
        if places is None:  # a small table: where each line is, and when, kept too
            places = memo[("places", "passages")] = {
                rowid: (path, ts_epoch, line)
                for rowid, path, ts_epoch, line in self.execute(
                    "SELECT rowid, path, ts_epoch, line FROM passages"
                )
            }
        wanted = set(paths)
        totals: dict[int, float] = {}
        for scores in found[1]:  # phrase by phrase, so each sum is in bm25()'s order
            for rowid, score in scores.items():
                place = places.get(rowid)
                if place is not None and place[0] in wanted:
                    totals[rowid] = totals.get(rowid, 0.0) + score
        best = sorted(
            totals,
            key=lambda r: (-totals[r], -places[r][1], places[r][0], places[r][2], r),
        )[:limit]
        cursor = self.execute(
            "SELECT * FROM passages WHERE rowid IN (SELECT value FROM json_each(?))",
            [json.dumps(best)],
        )
        columns = [c[0] for c in cursor.description]
        found_rows = {row["rowid"]: row for row in (dict(zip(columns, v)) for v in cursor)}
        rows = [found_rows[rowid] for rowid in best if rowid in found_rows]
        for row in rows:
            row["score"] = totals[row["rowid"]]
        return rows
