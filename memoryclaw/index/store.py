"""The SQLite index at ``<vault>/.memoryclaw/index.db``: ``Index``, the only writer of it.

``Index`` is one connection composed of the database and its schema (``schema``), the writes
(``writes``), the look-ups (``reads``), the full-text search (``fulltext``; ``passages`` for
the lines of episodes and logs) and the episodes found by value kind or date (``sources``).
"""

from __future__ import annotations

from .passages import PassageSearch
from .reads import IndexReads
from .sources import SourceSearch
from .writes import IndexWrites


class Index(IndexWrites, IndexReads, PassageSearch, SourceSearch):
    """A connection to one vault's index database."""
