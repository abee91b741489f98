"""The quoted lines of episodes and the turns of raw logs (passages) a query matches, ranked
by FTS5's BM25 within the files asked for, each with which of the query's phrases it holds
when that came with its score."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .fulltext import _PHRASE_RE, PASSAGE_BM25_WEIGHTS, FullTextSearch, Visible, visible_clause
from .rowids import LISTED_SPAN, rowid_filters

# Files of at most this many lines together are ranked phrase by phrase (see
# PassageSearch._phrase_passages), an expression of at most this many phrases.
PHRASE_LINES = 1_000
PHRASES_ALONE = 16


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
        the same as ``score``); ``phrases``, when present, the phrases of ``match`` (an OR of
        phrases) the line holds.

        A file's passages are stored together, so each file is one rowid range; the ranges
        filter one full-text cursor (see ``rowid_filters``), which scores only the rows kept.  A
        small table needs no cursor: its phrases' own scores add up to the same (see
        :meth:`_small_passages`); nor do a few short files (:meth:`_phrase_passages`).
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
            rows = self._phrase_passages(match, paths)
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

    def _spans(self, paths: Sequence[str]) -> list[tuple[int, int]]:
        """The rowid range of each of these files that has passages (kept until the index
        changes)."""
        memo = self._memo()
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
        return [span for path in paths if (span := memo[("span", path)]) is not None]

    def _ranked_passages(
        self, match: str, paths: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        """:meth:`search_passages`' best ``limit`` rows of these files, by one full-text
        cursor per statement that scores only the rows of the files' ranges (``rowid_filters``)."""
        rows: list[dict[str, Any]] = []
        for within, bounds in rowid_filters(self._spans(paths)):
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

    def _phrase_passages(self, match: str, paths: Sequence[str]) -> list[dict[str, Any]] | None:
        """:meth:`search_passages`' rows of a few short files (``PHRASE_LINES`` lines in all),
        every one that matches, scored phrase by phrase: bm25() of an OR of phrases sums each
        phrase's own score in the expression's order (see :meth:`_small_passages`), and
        which phrases a line holds, asked again to explain it otherwise, comes along; None
        for more or longer files, or another kind of expression."""
        phrases = match.split(" OR ")
        if len(phrases) > PHRASES_ALONE or not all(_PHRASE_RE.match(p) for p in phrases):
            return None
        spans = self._spans(paths)
        if any(high - low >= LISTED_SPAN for low, high in spans):
            return None
        listed = [row for low, high in spans for row in range(low, high + 1)]
        if len(listed) > PHRASE_LINES:
            return None
        among = json.dumps(listed)
        found: list[dict[int, float]] = [{} for _ in phrases]
        for position, rowid, score in self.execute(
            " UNION ALL ".join(
                f"SELECT {position}, rowid, -bm25(passages_fts, {PASSAGE_BM25_WEIGHTS})"
                " FROM passages_fts WHERE passages_fts MATCH ?"
                " AND +rowid IN (SELECT value FROM json_each(?))"
                for position in range(len(phrases))
            ),
            [value for phrase in phrases for value in (phrase, among)],
        ):
            found[position][rowid] = score
        return self._scored_rows(phrases, found, paths)

    def _scored_rows(
        self, phrases: Sequence[str], found: Sequence[dict[int, float]], paths: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The rows of ``paths`` among those ``found`` (each phrase's rows with its own
        score), each with the sum of its phrases' scores, added in the phrases' order as
        bm25() adds them, and the phrases it holds."""
        totals: dict[int, float] = {}
        for scores in found:
            for rowid, score in scores.items():
                totals[rowid] = totals.get(rowid, 0.0) + score
        cursor = self.execute(
            "SELECT * FROM passages WHERE rowid IN (SELECT value FROM json_each(?))",
            [json.dumps(list(totals))],
        )
        columns = [c[0] for c in cursor.description]
        wanted = set(paths)
        rows = [row for row in (dict(zip(columns, v)) for v in cursor) if row["path"] in wanted]
        for row in rows:
            rowid = row["rowid"]
            row["score"] = totals[rowid]
            row["phrases"] = tuple(p for p, scores in zip(phrases, found) if rowid in scores)
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
        phrases = match.split(" OR ")
        for row in rows:
            rowid = row["rowid"]
            row["score"] = totals[rowid]
            row["phrases"] = tuple(p for p, scores in zip(phrases, found[1]) if rowid in scores)
        return rows
