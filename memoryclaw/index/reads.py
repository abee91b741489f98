"""Reading the index back by path, id or source: what it knows of each file, episode and
fact rows, turn sizes, cached vectors, counts and its health."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .schema import FTS_COLUMNS, RECALLS_SINCE, IndexDatabase

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_SPOTS_PER_QUERY = 300  # three parameters each, well within SQLite's limit of 999


@dataclass(frozen=True)
class FileState:
    """What the index last saw of a file."""

    path: str
    kind: str
    mtime_ns: int
    size: int
    sha: str
    error: str | None
    error_line: int | None


class IndexReads(IndexDatabase):
    """The index's look-ups that rank nothing: rows, counts, cached vectors, integrity."""

    def file_count(self, cap: int) -> int:
        """How many files the index knows, counting no further than ``cap`` (a count of every
        file of a large vault reads all of them)."""
        found = self.execute("SELECT count(*) FROM (SELECT 1 FROM files LIMIT ?)", [cap])
        return int(found.fetchone()[0])

    def file_stats(self) -> dict[str, tuple[int, int, str | None, int | None]]:
        """Every known file's (mtime_ns, size, error, error_line): all a no-op sync compares."""
        rows = self.execute("SELECT path, mtime_ns, size, error, error_line FROM files")
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}

    def raw_log_stats(self, folder: str) -> dict[str, tuple[int, int, str | None]]:
        """Each raw log directly in ``folder`` the index took in, by file name: its (mtime_ns,
        size, open session), the session None unless the log is open.  A log it skipped (one
        it could not read or parse) is not among them: what it holds is unknown."""
        rows = self.execute(
            "SELECT path, mtime_ns, size, open_session FROM files WHERE kind = 'log'"
            " AND error IS NULL AND path > ? AND path < ?",
            [folder + "/", folder + "0"],  # '0' sorts right after '/'
        )
        start = len(folder) + 1
        return {
            row[0][start:]: (row[1], row[2], row[3]) for row in rows if "/" not in row[0][start:]
        }

    def file_states(self, paths: Sequence[str]) -> dict[str, FileState]:
        """What the index knows of these files, by path."""
        sql = "SELECT path, kind, mtime_ns, size, sha, error, error_line FROM files"
        out: dict[str, FileState] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start : start + 500]
            rows = self.execute(f"{sql} WHERE path IN ({','.join('?' * len(chunk))})", chunk)
            out.update((row[0], FileState(*row)) for row in rows)
        return out

    def recalls_since(self) -> str | None:
        """Since when recalls are noted (an ISO timestamp); None before the first is."""
        return self.get_meta(RECALLS_SINCE)

    def recall_times(self, ids: Sequence[str] | None = None) -> dict[str, float]:
        """The last recall (epoch seconds) of these episode ids, of every one when None."""
        if ids is None:
            return {str(i): float(t) for i, t in self.execute("SELECT id, ts FROM recalls")}
        out: dict[str, float] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.execute(
                f"SELECT id, ts FROM recalls WHERE id IN ({','.join('?' * len(chunk))})", chunk
            )
            out.update((str(i), float(t)) for i, t in rows)
        return out

    def has_turn_sizes(self, path: str) -> bool:
        """Whether the turn sizes of the log ``path`` are stored."""
        found = self.execute("SELECT 1 FROM turn_sizes WHERE path = ? LIMIT 1", [path])
        return found.fetchone() is not None

    def source_chars(self, ids: Collection[str]) -> dict[str, int]:
        """For each episode id, the characters of the raw turns it summarises (its source
        log's turns ``source_turns``, or all of them when it names none); for an episode whose
        turns this index never saw, the characters of its own summary and details."""
        wanted = sorted(set(ids))
        out: dict[str, int] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.execute(
                "SELECT e.id, length(e.summary) + length(e.details),"
                " (SELECT sum(t.chars) FROM turn_sizes t WHERE t.path = e.source"
                "  AND t.turn BETWEEN coalesce(e.turn_first, 0) AND coalesce(e.turn_last, ?))"
                f" FROM episodes e WHERE e.id IN ({','.join('?' * len(chunk))})",
                [2**62, *chunk],
            )
            for ident, own, turns in rows:
                out[ident] = max(out.get(ident, 0), int(turns if turns is not None else own))
        return out

    def shown_episodes(self, idents: Sequence[str]) -> dict[str, tuple[int, str]]:
        """For each of these episodes, the rowid its words are looked up at (of its oldest
        file when two share an id) and its details (of the first indexed), in one statement:
        search hits come without them, most candidates are never shown."""
        if not idents:
            return {}
        rowid_of: dict[str, int] = {}
        details: dict[str, tuple[int, str]] = {}
        for ident, rowid, text in self.execute(
            "SELECT id, rowid, details FROM episodes"
            f" WHERE id IN ({','.join('?' * len(idents))}) ORDER BY ts_epoch DESC, id",
            list(idents),
        ):
            rowid_of[ident] = rowid
            if ident not in details or rowid < details[ident][0]:
                details[ident] = (rowid, text or "")
        return {ident: (rowid, details[ident][1]) for ident, rowid in rowid_of.items()}

    def newest_log_turns(
        self, speaker: str, limit: int, answerer: str, near: int
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` lines ``speaker`` said in raw logs not yet consolidated, newest
        first: ``path``, ``turn``, ``text``, ``timestamp``, ``session``, ``agent``, ``scope``,
        and ``answered``: whether ``answerer`` has a line within ``near`` turns of it."""
        # "+a.speaker": the neighbours are found by path and turn, not among every line the
        # answerer said in any log (the speaker index would read all of those for each row)
        cursor = self.execute(
            "SELECT path, turn, text, timestamp, session, agent, scope, EXISTS (SELECT 1"
            " FROM passages a WHERE a.kind = 'log' AND a.path = p.path AND +a.speaker = ?"
            " AND a.turn BETWEEN p.turn - ? AND p.turn + ?) AS answered FROM passages p"
            " WHERE kind = 'log' AND speaker = ? ORDER BY ts_epoch DESC, rowid DESC LIMIT ?",
            [answerer, near, near, speaker, limit],
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, row)) for row in cursor.fetchall()]

    def unscoped_counts(self) -> dict[str, int]:
        """How many episodes and facts carry no scope (owner-level, memoryclaw.vault.scopes)."""
        return {
            table: self.execute(
                f"SELECT count(*) FROM {table} WHERE coalesce(scope, '') = ''"
            ).fetchone()[0]
            for table in ("episodes", "facts")
        }

    def memory_marks(self, path: str) -> set[tuple[str | None, str | None]]:
        """The (agent, scope) of every memory indexed from the file ``path``."""
        marks: set[tuple[str | None, str | None]] = set()
        for table in ("episodes", "facts", "passages"):
            marks.update(
                self.execute(
                    f"SELECT DISTINCT agent, scope FROM {table} WHERE path = ?", [path]
                ).fetchall()
            )
        return marks

    def passage_neighbour_rows(
        self, spots: Sequence[tuple[str, int]]
    ) -> list[list[dict[str, Any]]]:
        """For each (path, line) of ``spots``, the passages of that file on the line just
        before and just after it, in order; one statement for all of them (recall asks for
        the neighbours of a query's best lines every turn)."""
        out: list[list[dict[str, Any]]] = [[] for _ in spots]
        for start in range(0, len(spots), _SPOTS_PER_QUERY):
            part = spots[start : start + _SPOTS_PER_QUERY]
            cursor = self.execute(
                f"WITH spot(n, path, line) AS (VALUES {', '.join(['(?, ?, ?)'] * len(part))})"
                " SELECT spot.n, p.turn, p.line, p.speaker, p.text, p.timestamp"
                " FROM spot JOIN passages p ON p.path = spot.path"
                " AND p.line BETWEEN spot.line - 1 AND spot.line + 1 AND p.line != spot.line"
                " ORDER BY spot.n, p.line, p.rowid",
                [v for n, (path, line) in enumerate(part, start) for v in (n, path, line)],
            )
            columns = [c[0] for c in cursor.description]
            for values in cursor.fetchall():
                out[values[0]].append(dict(zip(columns, values)))
        return out

    def consolidated_turns(
        self, sources: Sequence[str]
    ) -> dict[tuple[str, str | None], list[tuple[int, int]]]:
        """For each processed-log path and session, the turn ranges episodes already cover."""
        if not sources:
            return {}
        marks = ",".join("?" * len(sources))
        out: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
        for source, session, first, last in self.execute(
            f"SELECT source, session, turn_first, turn_last FROM episodes"
            f" WHERE source IN ({marks}) AND turn_first IS NOT NULL",
            list(sources),
        ).fetchall():
            out.setdefault((source, session), []).append((int(first), int(last)))
        return out

    def episode_count(self) -> int:
        """How many episodes are indexed (kept in ``meta`` by every sync)."""
        value = self.get_meta("episode_count")
        return int(value) if value is not None else 0

    def episode_rows(
        self, where: str, params: Sequence[Any], order: str = "ts_epoch DESC, id"
    ) -> list[dict[str, Any]]:
        """Episode rows by a WHERE clause (module-internal callers only)."""
        cursor = self.execute(
            f"SELECT * FROM episodes WHERE {where} ORDER BY {order}", list(params)
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

    def source_episodes(self, source: str, agent: str | None) -> list[dict[str, Any]]:
        """The episodes made from ``source`` for ``agent`` (an import's note), newest first,
        found through the index on ``source``: a re-run costs the same per note at any size."""
        cursor = self.execute(
            "SELECT * FROM episodes INDEXED BY idx_episodes_source_agent"
            " WHERE source = ? AND coalesce(agent, '') = ? ORDER BY ts_epoch DESC, id",
            [source, agent or ""],
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

    def episode_ids_ending(self, tails: Collection[str]) -> list[str]:
        """Ids of the episodes that end with one of ``tails`` (strings of one length)."""
        lengths = {len(tail) for tail in tails}
        if not lengths:
            return []
        if len(lengths) > 1:
            raise ValueError("tails of different lengths")
        length = lengths.pop()
        marks = ", ".join("?" * len(tails))
        cursor = self.execute(
            f"SELECT id FROM episodes WHERE substr(id, -?) IN ({marks}) ORDER BY id",
            [length, *tails],
        )
        return [row[0] for row in cursor.fetchall()]

    def fact_rows(self, where: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """Fact rows by a WHERE clause (module-internal callers only)."""
        cursor = self.execute(
            f"SELECT * FROM facts WHERE {where} ORDER BY path, line, id", list(params)
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

    def superseded_facts(
        self, keys: Sequence[tuple[str, str]], where: str = "1", params: Sequence[Any] = ()
    ) -> list[list[dict[str, Any]]]:
        """For each (entity, field) of ``keys``, the superseded fact rows of that entity (in
        any case) and field that pass ``where``, in file order: one statement for them all,
        and none when no key has any (which keys have any is kept until the index changes)."""
        out: list[list[dict[str, Any]]] = [[] for _ in keys]
        if not keys:
            return out
        memo = self._memo()
        held = memo.get(("superseded",))
        if held is None:
            held = memo[("superseded",)] = {
                (entity.lower(), field)
                for entity, field in self.execute(
                    "SELECT DISTINCT entity, field FROM facts WHERE superseded = 1"
                )
                if entity is not None
            }
        # SQLite's lower() folds ASCII letters only: keys it finds alike are alike here too
        asked = [n for n, (entity, field) in enumerate(keys) if (entity.lower(), field) in held]
        if not asked:
            return out
        cursor = self.execute(
            "SELECT q.key AS wanted, f.* FROM json_each(?) q JOIN facts f"
            " ON lower(f.entity) = lower(json_extract(q.value, '$[0]'))"
            " AND f.field = json_extract(q.value, '$[1]')"
            f" WHERE f.superseded = 1 AND ({where}) ORDER BY f.path, f.line, f.id",
            [json.dumps([keys[n] for n in asked]), *params],
        )
        columns = [c[0] for c in cursor.description]
        for values in cursor.fetchall():
            row = dict(zip(columns, values))
            out[asked[row.pop("wanted")]].append(row)
        return out

    def waiting_values(
        self, keys: Sequence[tuple[str, str]], where: str = "1", params: Sequence[Any] = ()
    ) -> list[list[dict[str, Any]]]:
        """For each (entity, field) of ``keys``, the other values of that entity (in any case)
        and field waiting for review as conflicts in ``_pending.md`` that pass ``where``, in
        file order (``value``, ``updated``)."""
        out: list[list[dict[str, Any]]] = [[] for _ in keys]
        if not keys:
            return out
        cursor = self.execute(
            "SELECT q.key AS wanted, p.value, p.updated FROM json_each(?) q JOIN pending p"
            " ON p.field = json_extract(q.value, '$[1]') AND p.mark = 'CONFLICT'"
            " AND lower(p.entity) = lower(json_extract(q.value, '$[0]'))"
            f" WHERE ({where}) ORDER BY p.rowid",
            [json.dumps(list(keys)), *params],
        )
        for wanted, value, updated in cursor.fetchall():
            out[wanted].append({"value": value, "updated": updated})
        return out

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables."""
        out = {}
        tables = ("files", "episodes", "facts", "passages", "tags", "aliases", "episode_vectors")
        for table in tables:
            out[table] = int(self.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        out["errors"] = int(
            self.execute("SELECT count(*) FROM files WHERE error IS NOT NULL").fetchone()[0]
        )
        out["distinct_tags"] = int(
            self.execute("SELECT count(DISTINCT tag) FROM tags").fetchone()[0]
        )
        return out

    def errors(self) -> list[tuple[str, str, int | None]]:
        """Files the last sync could not index: (path, reason, line)."""
        return [
            (r[0], r[1], r[2])
            for r in self.execute(
                "SELECT path, error, error_line FROM files WHERE error IS NOT NULL ORDER BY path"
            ).fetchall()
        ]

    def top_tags(self, limit: int) -> list[tuple[str, int]]:
        """The most used tags with their counts."""
        return [
            (r[0], int(r[1]))
            for r in self.execute(
                "SELECT tag, count(*) AS n FROM tags GROUP BY tag ORDER BY n DESC, tag LIMIT ?",
                [limit],
            ).fetchall()
        ]

    def episodes_without_vectors(
        self, embedder: str, dims: int | None = None
    ) -> list[dict[str, Any]]:
        """One episode per distinct text that has no vector from ``embedder`` (with ``dims``:
        or one of other dimensions), oldest row first: what needs embedding."""
        stale = "v.sha IS NULL" if dims is None else "(v.sha IS NULL OR v.dims != ?)"
        params: list[Any] = [embedder] if dims is None else [embedder, dims]
        cursor = self.execute(
            "SELECT min(e.rowid) AS rowid, e.embed_sha, e.summary, e.tags, e.entities, e.details"
            " FROM episodes e LEFT JOIN episode_vectors v"
            " ON v.sha = e.embed_sha AND v.embedder = ?"
            f" WHERE {stale} GROUP BY e.embed_sha ORDER BY min(e.rowid)",
            params,
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

    def vector_coverage(self, embedder: str) -> tuple[int, int]:
        """(episodes with a vector from ``embedder``, all episodes)."""
        row = self.execute(
            "SELECT count(v.sha), count(*) FROM episodes e LEFT JOIN episode_vectors v"
            " ON v.sha = e.embed_sha AND v.embedder = ?",
            [embedder],
        ).fetchone()
        return int(row[0]), int(row[1])

    def passages_without_vectors(
        self, embedder: str, dims: int | None = None
    ) -> list[dict[str, Any]]:
        """One episode line per distinct text with no vector from ``embedder`` (with ``dims``:
        or one of other dimensions), oldest row first, as :meth:`episodes_without_vectors`."""
        stale = "v.sha IS NULL" if dims is None else "(v.sha IS NULL OR v.dims != ?)"
        params: list[Any] = [embedder] if dims is None else [embedder, dims]
        cursor = self.execute(
            "SELECT min(p.rowid) AS rowid, p.embed_sha, p.speaker, p.text"
            " FROM passages p LEFT JOIN episode_vectors v"
            " ON v.sha = p.embed_sha AND v.embedder = ?"
            f" WHERE p.embed_sha IS NOT NULL AND {stale} GROUP BY p.embed_sha"
            " ORDER BY min(p.rowid)",
            params,
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

    def passage_hits(self, rowids: Sequence[int]) -> list[dict[str, Any]]:
        """These passages with their episode's summary, tags and confidence, as
        :meth:`search_passages` gives them (without its scores)."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(rowids), 500):
            chunk = list(rowids[start : start + 500])
            cursor = self.execute(
                "SELECT p.*, e.summary AS episode_summary, e.tags AS episode_tags,"
                " e.confidence AS episode_confidence FROM passages p"
                " LEFT JOIN episodes e ON e.rowid = (SELECT min(rowid) FROM episodes"
                f" WHERE id = p.episode_id) WHERE p.rowid IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            columns = [c[0] for c in cursor.description]
            out += [dict(zip(columns, values)) for values in cursor.fetchall()]
        return out

    def vector_matrix(
        self, embedder: str, dims: int, table: str = "episodes"
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Every cached vector from ``embedder`` with ``dims`` of the ``table`` (episodes, or
        passages: episodes' lines): (rowids, matrix).

        Kept for the life of the connection until a write here or a commit by another
        connection (SQLite's data_version) could have changed it.
        """
        import numpy as np

        if table not in ("episodes", "passages"):
            raise ValueError(f"no vectors for {table!r}")
        version = self.execute("PRAGMA data_version").fetchone()[0]
        key = (embedder, dims, version, self._writes)
        cached = self._matrix.get(table)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        rows = self.execute(
            f"SELECT t.rowid, v.vector FROM {table} t JOIN episode_vectors v"
            " ON v.sha = t.embed_sha AND v.embedder = ? AND v.dims = ?"
            " WHERE length(v.vector) = 4 * v.dims ORDER BY t.rowid",
            [embedder, dims],
        ).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        blob = b"".join(r[1] for r in rows)
        matrix = np.frombuffer(blob, dtype="<f4").astype(np.float32, copy=False)
        matrix = matrix.reshape(len(rows), dims)
        self._matrix[table] = (key, rowids, matrix)
        return rowids, matrix

    def integrity_problems(self) -> list[str]:
        """SQLite's own integrity check plus the FTS tables' consistency checks."""
        problems = [r[0] for r in self.execute("PRAGMA quick_check").fetchall() if r[0] != "ok"]
        for fts in FTS_COLUMNS:
            try:
                self.execute(f"INSERT INTO {fts}({fts}, rank) VALUES('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{fts}: {exc}")
        return problems
