"""The SQLite index at ``<vault>/.memoryclaw/index.db``: the only module that writes it.

The index is derived from the vault and disposable.  It holds one row per indexed file (with
the mtime, size and content hash that decide whether the file changed), the episodes with an
FTS5 table over tags, entities, summary and details, the facts with an FTS5 table over entity,
field, value, section and the kinds of value they hold (``values.shape_tokens``: a phone
number is found by "number"), the quoted lines likewise, the alias groups, and the length
of each turn of the raw logs episodes name as their source, read once when such an episode
is indexed (what recall metrics count as the transcript an episode stands for: these rows
outlive the log, which retention deletes, for as long as the index lives).  A schema version
in ``meta`` triggers a rebuild when this module's layout changes.

For the optional vector fallback it also caches episode embeddings, content-addressed: a
vector is stored under the hash of the text embedded and the embedder's name, so an edit,
a move or another model each leaves exactly the affected episodes without a current vector.
numpy is imported only by the methods that return or take vectors.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..vault.episodes import Episode, detail_passages, episode_fingerprint
from ..vault.facts import Fact
from ..vault.files import ARCHIVE_DIR, FILE_MODE, ensure_dir
from ..vault.timestamps import utc_iso
from ..vault.values import shape_tokens
from .embeddings import embedding_text, text_hash

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SCHEMA_VERSION = "11"
# A condition on a memory table's agent and scope columns and its parameters: what a recall
# may see (memoryclaw.vault.scopes.Policy.sql_filter).
Visible = tuple[str, Sequence[str]]
TOKENIZER = "porter unicode61 remove_diacritics 2"
# Column weights for bm25(): a tag outranks an entity, which outranks the summary and body.
EPISODE_WEIGHTS = (10.0, 6.0, 4.0, 1.0)
# The kinds of value a fact holds (values.shape_tokens) count as its field does.
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
_FTS_COLUMNS = {
    "episodes_fts": ("tags_text", "entities_text", "summary", "details"),
    "facts_fts": ("entity", "field", "value", "section", "shape"),
    "passages_fts": ("text", "speaker", "shape"),
}


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
class FileState:
    """What the index last saw of a file."""

    path: str
    kind: str
    mtime_ns: int
    size: int
    sha: str
    error: str | None
    error_line: int | None


@dataclass(frozen=True)
class EpisodeHit:
    """An episode row returned by a keyword query, with its raw BM25 score (higher is better)."""

    rowid: int
    bm25: float
    row: Mapping[str, Any]


def _memory_copy(seed: Path | None) -> sqlite3.Connection:
    """An in-memory database holding a copy of the index file ``seed``, read without writing
    anything next to it (no journal, no lock: ``immutable``); empty when there is none or it
    cannot be read."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    if seed is None or not seed.is_file():
        return conn
    try:
        with closing(sqlite3.connect(f"{seed.as_uri()}?immutable=1", uri=True)) as origin:
            origin.backup(conn)
    except sqlite3.Error:
        conn.close()
        return sqlite3.connect(":memory:", isolation_level=None)
    return conn


class Index:
    """A connection to one vault's index database."""

    def __init__(self, path: Path | None, *, seed: Path | None = None) -> None:
        """Open (or create) the index at ``path``; ``None`` keeps it in memory, starting from
        a copy of the index file ``seed`` when that can be read (it is never written)."""
        self.path = path
        if path is None:
            self.conn = _memory_copy(seed)
        else:
            ensure_dir(path.parent)
            created = not path.exists()
            self.conn = sqlite3.connect(path, isolation_level=None)
            if created:
                path.chmod(FILE_MODE)
        self.conn.execute("PRAGMA busy_timeout=10000")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        # a deleted row's text is overwritten, not left in a free page (see forget_deleted)
        self.conn.execute("PRAGMA secure_delete=ON")
        self._defer_fts = False
        # Bumped by every write that can change which vectors belong to which episodes; with
        # SQLite's data_version (other connections' commits) it keys the loaded vector matrix.
        self._writes = 0
        self._matrix: tuple[tuple[Any, ...], NDArray[np.int64], NDArray[np.float32]] | None = None
        # answers kept for as long as no connection has written (see _memo)
        self._memo_store: dict[Any, Any] = {}
        self._memo_key: tuple[int, int] | None = None
        self.rebuilt = self._ensure_schema()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement on the index connection."""
        return self.conn.execute(sql, list(params))

    # ------------------------------------------------------------------ schema

    def _ensure_schema(self) -> bool:
        """Create the tables, or drop and recreate them when the schema version changed."""
        if self._schema_version() == SCHEMA_VERSION:
            return False
        with self.transaction():
            # Asked again under the write lock: another process may have built the index
            # since, and dropping its fresh tables would empty an index it just filled.
            current = self._schema_version()
            if current == SCHEMA_VERSION:
                return False
            tables = self.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
            for (name,) in tables:
                self.execute(f'DROP TABLE IF EXISTS "{name}"')
            self._create_tables()
            self.set_meta("schema_version", SCHEMA_VERSION)
        return current is not None

    def _schema_version(self) -> str | None:
        if not self.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            return None
        row = self.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return row[0] if row else None

    def _create_tables(self) -> None:
        # sqlite-utils builds the schema and the FTS5 tables with their sync triggers; it is
        # imported here only, because importing it costs more than a whole search.
        import sqlite_utils

        db = sqlite_utils.Database(self.conn)
        db.table("meta").create({"key": str, "value": str}, pk="key")
        db.table("files").create(
            {
                "path": str,
                "kind": str,
                "mtime_ns": int,
                "size": int,
                "sha": str,
                "error": str,
                "error_line": int,
            },
            pk="path",
        )
        db.table("episodes").create(
            {
                "rowid": int,
                "id": str,
                "path": str,
                "timestamp": str,
                "ts_epoch": int,
                "summary": str,
                "details": str,
                "tags": str,
                "tags_text": str,
                "entities": str,
                "entities_text": str,
                "participants": str,
                "confidence": str,
                "source": str,
                "turn_first": int,
                "turn_last": int,
                "session": str,
                "agent": str,
                "scope": str,
                "embed_sha": str,  # text_hash(embedding_text(...)): keys its cached vector
                "fingerprint": str,  # episodes.episode_fingerprint: finds the same episode twice
            },
            pk="rowid",
        )
        db.table("episodes").create_index(["id"])
        db.table("episodes").create_index(["path"])
        db.table("episodes").create_index(["fingerprint"])
        # An import finds a note's episode by its source: a scan per note made re-runs quadratic.
        db.table("episodes").create_index(["source", "agent"])
        db.table("episodes").enable_fts(
            ["tags_text", "entities_text", "summary", "details"],
            create_triggers=False,
            tokenize=TOKENIZER,
        )
        db.table("tags").create({"tag": str, "episode_rowid": int})
        db.table("tags").create_index(["tag"])
        db.table("tags").create_index(["episode_rowid"])
        db.table("facts").create(
            {
                "rowid": int,
                "id": str,
                "path": str,
                "line": int,
                "section": str,
                "entity": str,
                "field": str,
                "value": str,
                "form": str,
                "source": str,
                "updated": str,
                "confidence": str,
                "agent": str,
                "scope": str,
                "superseded": int,  # 1: kept in its file, not current (facts.SUPERSEDED_KEY)
                "superseded_on": str,
                "superseded_by": str,
                "shape": str,  # values.shape_tokens of the value and field
            },
            pk="rowid",
        )
        db.table("facts").create_index(["id"])
        db.table("facts").create_index(["path"])
        db.table("facts").enable_fts(
            ["entity", "field", "value", "section", "shape"],
            create_triggers=False,
            tokenize=TOKENIZER,
        )
        db.table("passages").create(
            {
                "rowid": int,
                "path": str,  # the episode file, or the raw log, the passage was read from
                "kind": str,  # episode | log
                "episode_id": str,  # the episode's id; a raw log's own id
                "turn": int,  # the source log's turn, when known
                "line": int,
                "speaker": str,
                "text": str,
                "timestamp": str,
                "ts_epoch": int,
                "session": str,
                "source": str,  # an episode's source log
                "agent": str,
                "scope": str,
                "shape": str,  # values.shape_tokens of the text
            },
            pk="rowid",
        )
        db.table("passages").create_index(["path"])
        db.table("passages").create_index(["episode_id"])
        db.table("passages").create_index(["kind", "path"])
        db.table("passages").enable_fts(
            ["text", "speaker", "shape"], create_triggers=False, tokenize=TOKENIZER
        )
        # Characters of each turn of a processed log: the transcript its episodes stand for.
        db.table("turn_sizes").create({"path": str, "turn": int, "chars": int})
        db.table("turn_sizes").create_index(["path", "turn"])
        db.table("aliases").create({"path": str, "term": str, "synonym": str})
        db.table("aliases").create_index(["term"])
        db.table("episode_vectors").create(
            {"sha": str, "embedder": str, "dims": int, "vector": bytes},
            pk=("sha", "embedder"),
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes so a crash leaves the index as it was before the block."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    # ------------------------------------------------------------------ files

    def file_count(self) -> int:
        """How many files the index knows."""
        return int(self.execute("SELECT count(*) FROM files").fetchone()[0])

    def file_stats(self) -> dict[str, tuple[int, int, str | None, int | None]]:
        """Every known file's (mtime_ns, size, error, error_line): all a no-op sync compares."""
        rows = self.execute("SELECT path, mtime_ns, size, error, error_line FROM files")
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}

    def file_states(self, paths: Sequence[str]) -> dict[str, FileState]:
        """What the index knows of these files, by path."""
        sql = "SELECT path, kind, mtime_ns, size, sha, error, error_line FROM files"
        out: dict[str, FileState] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start : start + 500]
            rows = self.execute(f"{sql} WHERE path IN ({','.join('?' * len(chunk))})", chunk)
            out.update((row[0], FileState(*row)) for row in rows)
        return out

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
        """Record what the index saw of a file (and the error it had, if any)."""
        self.execute(
            "INSERT OR REPLACE INTO files (path, kind, mtime_ns, size, sha, error, error_line)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [path, kind, mtime_ns, size, sha, error, error_line],
        )

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
            for fts in _FTS_COLUMNS:
                self.execute(f"INSERT INTO {fts}({fts}) VALUES('rebuild')")
            self.optimize()

    def optimize(self) -> None:
        """Merge each full-text index into one segment.

        FTS5 writes every transaction (and a rebuild, every few thousand rows) as a segment of
        its own and merges them only bit by bit; a query looks each term up in every segment.
        Merged, a search's many small MATCHes cost about half as much (``bench/``).
        """
        for fts in _FTS_COLUMNS:
            self.execute(f"INSERT INTO {fts}({fts}) VALUES('optimize')")

    def forget_deleted(self) -> None:
        """Leave no deleted text in the index file's bytes: FTS5 keeps a deleted row's terms
        in its segments until they are merged, so merge them (``secure_delete`` zeroes what
        the merge frees), then move the write-ahead log into the file and truncate it."""
        if self.path is None:
            return
        self.optimize()
        for _ in range(50):
            busy = self.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            time.sleep(0.1)  # a reader holds an old snapshot: wait for it to end

    def _fts_delete(self, table: str, path: str) -> None:
        fts = f"{table}_fts"
        if fts not in _FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        columns = ", ".join(_FTS_COLUMNS[fts])
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
        if fts not in _FTS_COLUMNS:
            raise ValueError(f"no full-text table for {table!r}")
        columns = ", ".join(_FTS_COLUMNS[fts])
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
        self.conn.executemany(
            "INSERT INTO passages (path, kind, episode_id, turn, line, speaker, text, timestamp,"
            " ts_epoch, session, source, agent, scope, shape) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (path, kind, owner, *row, session, source, agent, scope, shape_tokens(row[3]))
                for row in rows
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
                    shape_tokens(f.value, f.field),
                )
                for f in facts
            ],
        )
        self._fts_insert("facts", path)

    def put_aliases(self, path: str, groups: Mapping[str, Sequence[str]]) -> None:
        """Index the alias groups of ``aliases.yaml``."""
        self._clear_content(path)
        self.conn.executemany(
            "INSERT INTO aliases (path, term, synonym) VALUES (?, ?, ?)",
            [(path, term, syn) for term, syns in groups.items() for syn in syns],
        )

    def set_meta(self, key: str, value: str) -> None:
        """Store a small piece of index state."""
        self.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, value])

    def get_meta(self, key: str) -> str | None:
        """Read a piece of index state stored with :meth:`set_meta`."""
        row = self.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return str(row[0]) if row else None

    # ------------------------------------------------------------------ vectors

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

    def prune_vectors(self, embedder: str) -> int:
        """Drop vectors of other embedders and of texts no episode has any more; how many."""
        where = (
            "embedder != ? OR sha NOT IN (SELECT embed_sha FROM episodes"
            " WHERE embed_sha IS NOT NULL)"
        )
        # Looked for first: a search process should not take the write lock for nothing.
        found = self.execute(f"SELECT 1 FROM episode_vectors WHERE {where} LIMIT 1", [embedder])
        if found.fetchone() is None:
            return 0
        self._writes += 1
        cursor = self.execute(f"DELETE FROM episode_vectors WHERE {where}", [embedder])
        return max(cursor.rowcount, 0)

    def vector_coverage(self, embedder: str) -> tuple[int, int]:
        """(episodes with a vector from ``embedder``, all episodes)."""
        row = self.execute(
            "SELECT count(v.sha), count(*) FROM episodes e LEFT JOIN episode_vectors v"
            " ON v.sha = e.embed_sha AND v.embedder = ?",
            [embedder],
        ).fetchone()
        return int(row[0]), int(row[1])

    def vector_matrix(
        self, embedder: str, dims: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Every episode's cached vector from ``embedder`` with ``dims``: (rowids, matrix).

        Kept for the life of the connection until a write here or a commit by another
        connection (SQLite's data_version) could have changed it.
        """
        import numpy as np

        version = self.execute("PRAGMA data_version").fetchone()[0]
        key = (embedder, dims, version, self._writes)
        if self._matrix is not None and self._matrix[0] == key:
            return self._matrix[1], self._matrix[2]
        rows = self.execute(
            "SELECT e.rowid, v.vector FROM episodes e JOIN episode_vectors v"
            " ON v.sha = e.embed_sha AND v.embedder = ? AND v.dims = ?"
            " WHERE length(v.vector) = 4 * v.dims ORDER BY e.rowid",
            [embedder, dims],
        ).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        blob = b"".join(r[1] for r in rows)
        matrix = np.frombuffer(blob, dtype="<f4").astype(np.float32, copy=False)
        matrix = matrix.reshape(len(rows), dims)
        self._matrix = (key, rowids, matrix)
        return rowids, matrix

    # ------------------------------------------------------------------ reads

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

    def episode_rowids(self, idents: Sequence[str]) -> dict[str, int]:
        """The rowid of each of these episodes (of its newest file when two share an id)."""
        marks = ",".join("?" * len(idents))
        return {
            ident: rowid
            for ident, rowid in self.execute(
                f"SELECT id, rowid FROM episodes WHERE id IN ({marks}) ORDER BY ts_epoch DESC, id",
                list(idents),
            )
        }

    def episode_details(self, idents: Sequence[str]) -> dict[str, str]:
        """The details of these episodes (search hits come without them: most candidates
        are never shown)."""
        if not idents:
            return {}
        marks = ",".join("?" * len(idents))
        return {
            ident: details or ""
            for ident, details in self.execute(
                "SELECT id, details FROM episodes WHERE rowid IN"
                f" (SELECT min(rowid) FROM episodes WHERE id IN ({marks}) GROUP BY id)",
                list(idents),
            )
        }

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

    def passage_rows(self, path: str, first: int, last: int) -> list[dict[str, Any]]:
        """The passages of one file with ``line`` in ``first..last``, in order."""
        cursor = self.execute(
            "SELECT * FROM passages WHERE path = ? AND line BETWEEN ? AND ? ORDER BY line",
            [path, first, last],
        )
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, values)) for values in cursor.fetchall()]

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

    def episode_count(self) -> int:
        """How many episodes are indexed (kept in ``meta`` by every sync)."""
        value = self.get_meta("episode_count")
        return int(value) if value is not None else 0

    def record_episode_count(self) -> None:
        """Store the episode count that :meth:`episode_count` reads."""
        count = self.execute("SELECT count(*) FROM episodes").fetchone()[0]
        self.set_meta("episode_count", str(count))

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
        if fts not in _FTS_COLUMNS:
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

    def integrity_problems(self) -> list[str]:
        """SQLite's own integrity check plus the FTS tables' consistency checks."""
        problems = [r[0] for r in self.execute("PRAGMA quick_check").fetchall() if r[0] != "ok"]
        for fts in _FTS_COLUMNS:
            try:
                self.execute(f"INSERT INTO {fts}({fts}, rank) VALUES('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{fts}: {exc}")
        return problems
