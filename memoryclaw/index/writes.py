"""Writing the index: each file's episodes, facts, passages, raw-log turns and aliases
replace what it held before, with the full-text tables kept in step, and the vector cache.

For the optional vector fallback the index caches the embeddings of episodes and of their
quoted lines, content-addressed: a vector is stored under the hash of the text embedded and
the embedder's name, so an edit, a move or another model each leaves exactly the affected
episodes and lines without a current vector.
numpy is imported only by the methods that take vectors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from ..vault.episodes import Episode, detail_passages, episode_fingerprint
from ..vault.factnames import UNNAMED_FIELDS
from ..vault.timestamps import utc_iso
from ..vault.values import SHAPE_PREFIX, shape_tokens
from .embeddings import embedding_text, passage_text, text_hash
from .schema import BUSY_TIMEOUT_MS, FTS_COLUMNS, RECALLS_SINCE, IndexDatabase

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..vault.facts import Fact
    from ..vault.pending import PendingFact


class IndexWrites(IndexDatabase):
    """The index's writes: files, episodes, facts, passages, aliases and cached vectors."""

    def set_file(
        self,
        path: str,
        kind: str,
        mtime_ns: int,
        size: int,
        sha: str,
        error: str | None = None,
        error_line: int | None = None,
    ) -> None:
        """Record what the index saw of a file (and the error it had, if any); a raw log's
        open session (:meth:`set_open_session`) is kept."""
        self.execute(
            "INSERT INTO files (path, kind, mtime_ns, size, sha, error, error_line)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET kind = excluded.kind,"
            " mtime_ns = excluded.mtime_ns, size = excluded.size, sha = excluded.sha,"
            " error = excluded.error, error_line = excluded.error_line",
            [path, kind, mtime_ns, size, sha, error, error_line],
        )

    def set_open_session(self, path: str, session: str | None) -> None:
        """Record the session whose open log the raw log at ``path`` is (None: it is closed,
        consolidated or has no session): what finds a session's log without reading the others."""
        self.execute("UPDATE files SET open_session = ? WHERE path = ?", [session, path])

    def remove_file(self, path: str) -> None:
        """Forget a file and everything indexed from it."""
        self._clear_content(path)
        self.execute("DELETE FROM files WHERE path = ?", [path])

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many new rows with the full-text tables rebuilt once at the end.

        Keeping FTS5 in step row by row costs more than parsing a file; rebuilding it from the
        content tables in one statement is several times cheaper for a full reindex.
        """
        with self.transaction():
            self._defer_fts = True
            try:
                yield
            finally:
                self._defer_fts = False
            for fts in FTS_COLUMNS:
                self.execute(f"INSERT INTO {fts}({fts}) VALUES('rebuild')")
            self.optimize()

    def optimize(self) -> None:
        """Merge each full-text index into one segment.

        FTS5 writes every transaction (and a rebuild, every few thousand rows) as a segment of
        its own and merges them only bit by bit; a query looks each term up in every segment.
        Merged, a search's many small MATCHes cost about half as much (``bench/``).
        """
        for fts in FTS_COLUMNS:
            self.execute(f"INSERT INTO {fts}({fts}) VALUES('optimize')")

    def forget_deleted(self) -> None:
        """Leave no deleted text in the index file's bytes: FTS5 keeps a deleted row's terms
        in its segments until they are merged, so merge them (``secure_delete`` zeroes what
        the merge frees), then move the write-ahead log into the file and truncate it.  The
        vectors of texts nothing has go too, whichever embedder made them (the fallback may be
        off here and on in another process): a vector is its text's embedding."""
        if self.path is None:
            return
        self.prune_vectors(None)
        self.optimize()
        for _ in range(50):
            busy = self.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            time.sleep(0.1)  # a reader holds an old snapshot: wait for it to end

    def _fts_delete(self, table: str, path: str) -> None:
        fts = f"{table}_fts"
        if fts not in FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        columns = ", ".join(FTS_COLUMNS[fts])
        self.execute(
            f"INSERT INTO {fts}({fts}, rowid, {columns})"
            f" SELECT 'delete', rowid, {columns} FROM {table} WHERE path = ?",
            [path],
        )

    def _fts_insert(self, table: str, path: str, after: int = 0) -> None:
        """Add the file's rows past rowid ``after`` (all of them by default) to the FTS."""
        if self._defer_fts:
            return
        fts = f"{table}_fts"
        if fts not in FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        columns = ", ".join(FTS_COLUMNS[fts])
        self.execute(
            f"INSERT INTO {fts}(rowid, {columns})"
            f" SELECT rowid, {columns} FROM {table} WHERE path = ? AND rowid > ?",
            [path, after],
        )

    def _clear_content(self, path: str) -> None:
        self._writes += 1
        if not self._defer_fts:
            self._fts_delete("episodes", path)
            self._fts_delete("facts", path)
            self._fts_delete("passages", path)
        self.execute(
            "DELETE FROM tags WHERE episode_rowid IN (SELECT rowid FROM episodes WHERE path = ?)",
            [path],
        )
        self.execute("DELETE FROM episodes WHERE path = ?", [path])
        self.execute("DELETE FROM facts WHERE path = ?", [path])
        self.execute("DELETE FROM passages WHERE path = ?", [path])
        self.execute("DELETE FROM aliases WHERE path = ?", [path])
        self.execute("DELETE FROM pending WHERE path = ?", [path])

    def put_episode(self, episode: Episode, *, replace: bool = True) -> None:
        """Index an episode; ``replace`` first removes what its file held before."""
        if replace:
            self._clear_content(episode.path)
        self._writes += 1
        first, last = episode.source_turns or (None, None)
        text = embedding_text(episode.summary, episode.tags, episode.entities, episode.details)
        cursor = self.execute(
            "INSERT INTO episodes (id, path, timestamp, ts_epoch, summary, details, tags,"
            " tags_text, entities, entities_text, participants, confidence, source,"
            " turn_first, turn_last, session, agent, scope, embed_sha, fingerprint)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                episode.id,
                episode.path,
                utc_iso(episode.timestamp),
                int(episode.timestamp.timestamp()),
                episode.summary,
                episode.details,
                json.dumps(list(episode.tags)),
                " ".join(episode.tags),
                json.dumps(list(episode.entities)),
                " ".join(episode.entities),
                json.dumps(list(episode.participants)),
                episode.confidence,
                episode.source,
                first,
                last,
                episode.session,
                episode.agent,
                episode.scope,
                text_hash(text),
                episode_fingerprint(episode.summary, episode.details),
            ],
        )
        rowid = cursor.lastrowid
        self._fts_insert("episodes", episode.path)
        stamp, epoch = utc_iso(episode.timestamp), int(episode.timestamp.timestamp())
        self._put_passages(
            episode.path,
            "episode",
            episode.id,
            [
                (p.turn, p.line, p.speaker, p.text, stamp, epoch)
                for p in detail_passages(episode.details)
            ],
            episode.session,
            episode.source,
            episode.agent,
            episode.scope,
        )
        self.conn.executemany(
            "INSERT INTO tags (tag, episode_rowid) VALUES (?, ?)",
            [(tag, rowid) for tag in episode.tags],
        )

    def put_turn_sizes(self, path: str, sizes: Sequence[tuple[int, int]]) -> None:
        """Remember how long each turn (number, characters) of the processed log ``path`` is.

        Kept when the log is deleted (retention): its episodes still stand for those turns."""
        self.execute("DELETE FROM turn_sizes WHERE path = ?", [path])
        self.conn.executemany(
            "INSERT INTO turn_sizes (path, turn, chars) VALUES (?, ?, ?)",
            [(path, turn, chars) for turn, chars in sizes],
        )

    def put_log_turns(
        self,
        path: str,
        log_id: str,
        session: str | None,
        turns: Sequence[tuple[int, str | None, str, datetime]],
        *,
        replace: bool = True,
        agent: str | None = None,
        scope: str | None = None,
    ) -> None:
        """Index the turns of a raw log not yet consolidated: (number, speaker, text, time)."""
        if replace:
            self._clear_content(path)
        rows = [
            (number, number, speaker, text, utc_iso(moment), int(moment.timestamp()))
            for number, speaker, text, moment in turns
        ]
        self._put_passages(path, "log", log_id, rows, session, path, agent, scope)

    def _put_passages(
        self,
        path: str,
        kind: str,
        owner: str,
        rows: Sequence[tuple[int | None, int, str | None, str, str, int]],
        session: str | None,
        source: str | None,
        agent: str | None,
        scope: str | None,
    ) -> None:
        self._writes += 1
        last = self.execute("SELECT max(rowid) FROM passages").fetchone()[0] or 0
        shapes = [shape_tokens(row[3]) for row in rows]
        if kind == "log":
            # who a speaker says they are, found before consolidation files it as a fact
            from ..vault.profile import profile_kinds

            shapes = [
                " ".join(
                    dict.fromkeys(
                        [*shape.split(), *(SHAPE_PREFIX + k for k in profile_kinds(row[3]))]
                    )
                )
                for shape, row in zip(shapes, rows)
            ]
        self.conn.executemany(
            "INSERT INTO passages (path, kind, episode_id, turn, line, speaker, text, timestamp,"
            " ts_epoch, session, source, agent, scope, shape, embed_sha)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    *(path, kind, owner, *row, session, source, agent, scope),
                    shape,
                    # only episodes' lines get vectors: a raw log's turns are soon consolidated
                    text_hash(passage_text(row[2], row[3])) if kind == "episode" else None,
                )
                for row, shape in zip(rows, shapes)
            ],
        )
        self._fts_insert("passages", path, after=last)  # only these: a log grows turn by turn

    def put_facts(self, path: str, facts: Sequence[Fact], *, replace: bool = True) -> None:
        """Index a fact file's facts; ``replace`` first removes what it held before."""
        if replace:
            self._clear_content(path)
        self.conn.executemany(
            "INSERT INTO facts (id, path, line, section, entity, field, value, form, source,"
            " updated, confidence, agent, scope, superseded, superseded_on, superseded_by, shape)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    f.id,
                    f.path,
                    f.line,
                    f.section,
                    f.entity,
                    f.field,
                    f.value,
                    f.form,
                    f.source,
                    f.updated,
                    f.confidence,
                    f.agent,
                    f.scope,
                    int(f.superseded),
                    f.superseded_on,
                    f.superseded_by,
                    # "- Allergy: cashews" names its kind by its label
                    shape_tokens(f.value, f.entity if f.field in UNNAMED_FIELDS else f.field),
                )
                for f in facts
            ],
        )
        self._fts_insert("facts", path)

    def put_pending(self, path: str, entries: Sequence[PendingFact]) -> None:
        """Index the facts waiting for review in ``_pending.md``."""
        self._clear_content(path)
        self.conn.executemany(
            "INSERT INTO pending (path, mark, entity, field, value, updated, agent, scope)"
            " VALUES (?,?,?,?,?,?,?,?)",
            [
                (path, e.mark, e.entity, e.field, e.value, e.updated, e.agent, e.scope)
                for e in entries
            ],
        )

    def put_aliases(self, path: str, groups: Mapping[str, Sequence[str]]) -> None:
        """Index the alias groups of ``aliases.yaml``."""
        self._clear_content(path)
        self.conn.executemany(
            "INSERT INTO aliases (path, term, synonym) VALUES (?, ?, ?)",
            [(path, term, syn) for term, syns in groups.items() for syn in syns],
        )

    def record_episode_count(self) -> None:
        """Store the episode count that :meth:`episode_count` reads."""
        count = self.execute("SELECT count(*) FROM episodes").fetchone()[0]
        self.set_meta("episode_count", str(count))

    def store_vectors(
        self, embedder: str, shas: Sequence[str], vectors: NDArray[np.float32]
    ) -> None:
        """Cache one vector (a row of ``vectors``) per text hash, replacing older ones."""
        import numpy as np

        rows = np.ascontiguousarray(vectors, dtype="<f4")
        if rows.ndim != 2 or rows.shape[0] != len(shas):
            raise ValueError(f"{len(shas)} hashes but vectors of shape {rows.shape}")
        self._writes += 1
        with self.transaction():
            self.conn.executemany(
                "INSERT OR REPLACE INTO episode_vectors (sha, embedder, dims, vector)"
                " VALUES (?, ?, ?, ?)",
                [(sha, embedder, rows.shape[1], row.tobytes()) for sha, row in zip(shas, rows)],
            )

    def prune_vectors(self, embedder: str | None) -> int:
        """Drop vectors of texts no episode or line has and, given an ``embedder``, those
        of other embedders; how many."""
        where = (
            "embedder != ? OR (sha NOT IN (SELECT embed_sha FROM episodes"
            " WHERE embed_sha IS NOT NULL) AND sha NOT IN (SELECT embed_sha FROM passages"
            " WHERE embed_sha IS NOT NULL))"
        )
        # Looked for first: a search process should not take the write lock for nothing.
        found = self.execute(f"SELECT 1 FROM episode_vectors WHERE {where} LIMIT 1", [embedder])
        if found.fetchone() is None:
            return 0
        self._writes += 1
        cursor = self.execute(f"DELETE FROM episode_vectors WHERE {where}", [embedder])
        return max(cursor.rowcount, 0)

    def note_recalls(self, times: Sequence[tuple[str, float]], since: str, wait: float) -> None:
        """Upsert episodes' last recalls (epoch seconds; a later one wins) and, when unset,
        since when recalls are noted; waits at most ``wait`` seconds for another writer
        (then ``sqlite3.OperationalError``).  Not synced by itself: see
        :mod:`memoryclaw.recall.usage`."""
        self.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
        try:
            with self.transaction():
                self.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", [RECALLS_SINCE, since]
                )
                self.conn.executemany(
                    "INSERT INTO recalls (id, ts) VALUES (?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET ts = max(ts, excluded.ts)",
                    times,
                )
        finally:
            self.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
