"""The vector fallback's two halves: embedding what a sync left stale, and the nearest
episodes and episode lines (the passages quoted in episodes; a raw log's turns get none).

Episodes and their lines are embedded when they are indexed (after a sync, a reindex or a
consolidation), never when they are searched: a query embeds only itself.  Search is exact
cosine similarity, one matrix product over every cached vector; ties go to the newer episode,
then the smaller id, as in keyword ranking.  numpy is imported inside the functions, so
importing this module costs nothing when the fallback is off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import EmbeddingError
from .embeddings import Embedder, embedding_text, passage_text, text_hash
from .store import Index

if TYPE_CHECKING:
    from .update import Progress

VectorHit = tuple[Mapping[str, Any], float]
# Episodes per embed call and per write: the progress bar's step and the work a failure loses.
CHUNK = 64
_ROWS_PER_QUERY = 500


def update_vectors(
    index: Index,
    name: str,
    embedder: Callable[[], Embedder],
    progress: Progress | None = None,
) -> int:
    """Embed every episode and episode line without a current vector from the embedder called
    ``name``; how many texts.

    ``embedder`` is called only when something needs embedding, so an up-to-date index never
    loads a model.  Vectors of other embedders and of texts nothing has are dropped first.
    """
    index.prune_vectors(name)
    pending = _pending(index, name, None)
    if not pending:
        return 0
    model = embedder()
    done, total, dims = 0, len(pending), None
    while pending:
        chunk, pending = pending[:CHUNK], pending[CHUNK:]
        vectors = model.embed(chunk)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunk) or vectors.shape[1] == 0:
            raise EmbeddingError(name, f"{vectors.shape} vectors for {len(chunk)} texts")
        index.store_vectors(name, [text_hash(text) for text in chunk], vectors)
        done += len(chunk)
        if dims is None:
            # Vectors of other dimensions under this name came from a different model (an
            # Ollama tag pulled again, a folder's weights replaced): they are stale too.
            dims = int(vectors.shape[1])
            pending = _pending(index, name, dims)
            total = done + len(pending)
        if progress is not None:
            progress(done, total)
    return done


def _pending(index: Index, name: str, dims: int | None) -> list[str]:
    """The texts to embed: each episode's, then each episode line's, without a vector."""
    texts = [_text(row) for row in index.episodes_without_vectors(name, dims)]
    lines = index.passages_without_vectors(name, dims)
    return texts + [passage_text(row["speaker"], row["text"]) for row in lines]


def _text(row: Mapping[str, Any]) -> str:
    return embedding_text(
        row["summary"], json.loads(row["tags"]), json.loads(row["entities"]), row["details"] or ""
    )


class QueryMemo:
    """The last query's vector: one search looks for episodes and for lines with it."""

    def __init__(self) -> None:
        self._last: tuple[Embedder, str, Any] | None = None

    def embed(self, embedder: Embedder, query: str) -> Any:
        """``embedder.embed([query])``, reused while the embedder and the query are the same."""
        last = self._last
        if last is None or last[0] is not embedder or last[1] != query:
            last = self._last = (embedder, query, embedder.embed([query]))
        return last[2]


def _asked(embedder: Embedder, query: str, memo: QueryMemo | None) -> Any:
    asked = memo.embed(embedder, query) if memo is not None else embedder.embed([query])
    if asked.ndim != 2 or asked.shape[0] != 1:
        raise EmbeddingError(embedder.name, f"{asked.shape} vectors for one query")
    return asked


def nearest(
    index: Index,
    embedder: Embedder,
    query: str,
    limit: int,
    also: Sequence[str] = (),
    memo: QueryMemo | None = None,
) -> list[VectorHit]:
    """The ``limit`` episodes most similar to the query, then those of the ``also`` ids left.

    Each hit is (row, cosine); the top ``limit`` come first, best first, and the ``also``
    episodes not among them follow (a blend that scores keyword hits needs their cosines).
    """
    import numpy as np

    if limit <= 0 and not also:
        return []
    asked = _asked(embedder, query, memo)
    rowids, matrix = index.vector_matrix(embedder.name, int(asked.shape[1]))
    if not len(rowids):
        return []
    scores = matrix @ asked[0]
    chosen = _best(scores, limit)  # ties included, so the cut is exact
    score_of = {int(rowids[i]): float(scores[i]) for i in chosen}
    top = _hits(_rows_in(index, "rowid", sorted(score_of)), score_of)[:limit]
    extra = _rows_in(index, "id", sorted(set(also) - {row["id"] for row, _ in top}))
    if not extra:
        return top
    positions = np.flatnonzero(np.isin(rowids, [row["rowid"] for row in extra]))
    extra_score = {int(rowids[i]): float(scores[i]) for i in positions}
    return top + _hits([row for row in extra if row["rowid"] in extra_score], extra_score)


def nearest_passages(
    index: Index,
    embedder: Embedder,
    query: str,
    limit: int,
    also: Sequence[int] = (),
    memo: QueryMemo | None = None,
) -> list[VectorHit]:
    """The ``limit`` episode lines most similar to the query, then those of the ``also``
    rowids left, as :func:`nearest` (rows as ``Index.passage_hits`` gives them).

    Ties go to the newer line, then path and line, as in keyword ranking."""
    import numpy as np

    if limit <= 0 and not also:
        return []
    asked = _asked(embedder, query, memo)
    rowids, matrix = index.vector_matrix(embedder.name, int(asked.shape[1]), "passages")
    if not len(rowids):
        return []
    scores = matrix @ asked[0]
    chosen = _best(scores, limit)
    chosen = np.union1d(chosen, np.flatnonzero(np.isin(rowids, list(also))))
    score_of = {int(rowids[i]): float(scores[i]) for i in chosen}
    rows = index.passage_hits(sorted(score_of))
    rows.sort(key=lambda r: (-score_of[r["rowid"]], -r["ts_epoch"], r["path"], r["line"]))
    wanted = set(also)
    top = rows[: max(limit, 0)]
    taken = {row["rowid"] for row in top}
    rows = top + [row for row in rows if row["rowid"] in wanted and row["rowid"] not in taken]
    return [(row, score_of[row["rowid"]]) for row in rows]


def _best(scores: Any, limit: int) -> Any:
    """Positions of everything scoring at least the ``limit``-th best, ties included."""
    import numpy as np

    if limit <= 0:
        return np.arange(0)
    if limit >= len(scores):
        return np.arange(len(scores))
    kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
    return np.flatnonzero(scores >= kth)


def _hits(rows: list[dict[str, Any]], score_of: Mapping[int, float]) -> list[VectorHit]:
    """``rows`` with their scores, best first, then the newer episode, then the smaller id."""
    rows.sort(key=lambda r: (-score_of[r["rowid"]], -r["ts_epoch"], r["id"], r["path"]))
    return [(row, score_of[row["rowid"]]) for row in rows]


def _rows_in(index: Index, column: str, values: Sequence[Any]) -> list[dict[str, Any]]:
    """Episode rows whose ``column`` is one of ``values``, fetched a bounded batch at a time."""
    rows: list[dict[str, Any]] = []
    for start in range(0, len(values), _ROWS_PER_QUERY):
        part = values[start : start + _ROWS_PER_QUERY]
        rows += index.episode_rows(f"{column} IN ({','.join('?' * len(part))})", part)
    return rows
