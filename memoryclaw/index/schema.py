"""The index database itself: opening the connection, the tables (the schema), rebuilding
them when the schema version changes, transactions and the ``meta`` table of index state.

The index is derived from the vault and disposable.  It holds one row per indexed file (with
the mtime, size and content hash that decide whether the file changed), the episodes with an
FTS5 table over tags, entities, summary and details, the facts with an FTS5 table over entity,
field, value, section and the kinds of value they hold (``values.shape_tokens``: a phone
number is found by "number"), the quoted lines likewise, the alias groups, and the length
of each turn of the raw logs episodes name as their source, read once when such an episode
is indexed (what recall metrics count as the transcript an episode stands for: these rows
outlive the log, which retention deletes, for as long as the index lives), and when each
episode was last recalled (``recalls``, see :mod:`memoryclaw.recall.usage`).  A schema version
in ``meta`` triggers a rebuild when this module's layout changes; the recall times, which no
file holds, are carried across it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..vault.files import FILE_MODE, ensure_dir

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SCHEMA_VERSION = "23"
MEMO_KEPT = 4096  # answers IndexDatabase._memo keeps at most
BUSY_TIMEOUT_MS = 10_000  # how long a statement waits for another connection's write
RECALLS_SINCE = "recalls_since"  # meta: since when recalls are noted (an ISO timestamp)
TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS_COLUMNS = {
    "episodes_fts": ("tags_text", "entities_text", "summary", "details"),
    "facts_fts": ("entity", "field", "value", "section", "shape"),
    "passages_fts": ("text", "speaker", "shape"),
}


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


class IndexDatabase:
    """A connection to one vault's index database, its tables created or rebuilt on opening."""

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
        self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        # a deleted row's text is overwritten, not left in a free page (see forget_deleted)
        self.conn.execute("PRAGMA secure_delete=ON")
        self._defer_fts = False
        # Bumped by every write that can change which vectors belong to which episodes; with
        # SQLite's data_version (other connections' commits) it keys the loaded vector matrix.
        self._writes = 0
        # by table (episodes, passages): (key, rowids, matrix)
        self._matrix: dict[str, tuple[tuple[Any, ...], NDArray[np.int64], NDArray[np.float32]]] = {}
        # answers kept for as long as no connection has written (see _memo)
        self._memo_store: dict[Any, Any] = {}
        self._memo_key: tuple[int, int] | None = None
        # inside read_once: whether in one, and the data_version read in it
        self._reading_once = False
        self._version_read: int | None = None
        self.rebuilt = self._ensure_schema()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement on the index connection."""
        return self.conn.execute(sql, list(params))

    def _memo(self) -> dict[Any, Any]:
        """Answers that hold until the index changes: SQLite's data_version (another
        connection's commit) and this connection's own changes key them."""
        version = self._version_read
        if version is None:
            version = int(self.execute("PRAGMA data_version").fetchone()[0])
            if self._reading_once:
                self._version_read = version
        key = (version, self.conn.total_changes)
        if key != self._memo_key or len(self._memo_store) > MEMO_KEPT:
            self._memo_store, self._memo_key = {}, key
        return self._memo_store

    @contextmanager
    def read_once(self) -> Iterator[None]:
        """A block of reads (a search asks :meth:`_memo` a dozen times) in which other
        connections' commits are looked for once, at the first ask; this connection's own
        writes still count at once."""
        outer = self._reading_once, self._version_read
        self._reading_once, self._version_read = True, None
        try:
            yield
        finally:
            self._reading_once, self._version_read = outer

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
            recalls = self._old_recalls({name for (name,) in tables})
            for (name,) in tables:
                self.execute(f'DROP TABLE IF EXISTS "{name}"')
            self._create_tables()
            self.set_meta("schema_version", SCHEMA_VERSION)
            if recalls is not None:
                self.set_meta(RECALLS_SINCE, recalls[0])
                self.conn.executemany("INSERT INTO recalls (id, ts) VALUES (?, ?)", recalls[1])
        return current is not None

    def _old_recalls(self, tables: set[str]) -> tuple[str, list[tuple[str, float]]] | None:
        """The recall times of the index being rebuilt, when it has them: derived from no
        file, they would otherwise fall back to the last ``recall.json`` copy."""
        if not {"recalls", "meta"} <= tables:
            return None
        try:
            since = self.get_meta(RECALLS_SINCE)
            rows = self.execute("SELECT id, ts FROM recalls").fetchall()
        except sqlite3.Error:
            return None  # a layout this version cannot read: the recall.json copy will do
        return None if since is None else (since, [(str(i), float(t)) for i, t in rows])

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
                # a raw log in logs/ that is open (neither closed nor consolidated): its session
                "open_session": str,
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
                "fingerprint": str,  # notes.episode_fingerprint: finds the same episode twice
            },
            pk="rowid",
        )
        db.table("episodes").create_index(["id"])
        db.table("episodes").create_index(["path"])
        db.table("episodes").create_index(["fingerprint"])
        db.table("episodes").create_index(["ts_epoch"])  # the episodes of a period
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
                "superseded": int,  # 1: kept in its file, not current (notes.SUPERSEDED_KEY)
                "superseded_on": str,
                "superseded_by": str,
                "shape": str,  # values.shape_tokens of the value and field (or label)
            },
            pk="rowid",
        )
        db.table("facts").create_index(["id"])
        db.table("facts").create_index(["path"])
        # which entities and fields have replaced facts is asked after every change: only
        # the replaced ones are read, however many facts there are
        self.execute("CREATE INDEX facts_superseded ON facts (entity, field) WHERE superseded = 1")
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
                "shape": str,  # values.shape_tokens of the text (a log turn: also profile_kinds)
                "embed_sha": str,  # an episode's line: text_hash(passage_text(...)), its vector
            },
            pk="rowid",
        )
        db.table("passages").create_index(["path"])
        db.table("passages").create_index(["episode_id"])
        # a log's turns near a turn (IndexReads.newest_log_turns), as well as a kind's paths
        db.table("passages").create_index(["kind", "path", "turn"])
        # a speaker's newest turns in logs not yet consolidated, in the order they are read;
        # of log lines only: kept in step with every episode line, it slowed a full reindex
        self.execute(
            "CREATE INDEX passages_log_speaker ON passages (speaker, ts_epoch) WHERE kind = 'log'"
        )
        db.table("passages").enable_fts(
            ["text", "speaker", "shape"], create_triggers=False, tokenize=TOKENIZER
        )
        # Characters of each turn of a processed log: the transcript its episodes stand for.
        db.table("turn_sizes").create({"path": str, "turn": int, "chars": int})
        db.table("turn_sizes").create_index(["path", "turn"])
        # _pending.md's entries: a conflict's newer value is shown beside the current one
        db.table("pending").create(
            {
                "path": str,
                "mark": str,  # LOW | INVALID | CONFLICT | UNTRUSTED
                "entity": str,
                "field": str,
                "value": str,
                "updated": str,
                "agent": str,
                "scope": str,
            }
        )
        db.table("pending").create_index(["field", "mark"])
        db.table("aliases").create({"path": str, "term": str, "synonym": str})
        db.table("aliases").create_index(["term"])
        # Episode id -> its last recall (epoch seconds); upserted by every retrieve.
        db.table("recalls").create({"id": str, "ts": float}, pk="id")
        # Content-addressed, so one table caches the vectors of episodes and of their lines.
        db.table("episode_vectors").create(
            {"sha": str, "embedder": str, "dims": int, "vector": bytes},
            pk=("sha", "embedder"),
        )

    def set_meta(self, key: str, value: str) -> None:
        """Store a small piece of index state."""
        self.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, value])

    def get_meta(self, key: str) -> str | None:
        """Read a piece of index state stored with :meth:`set_meta`."""
        row = self.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return str(row[0]) if row else None
