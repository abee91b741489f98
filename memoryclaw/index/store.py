"""The SQLite index at ``<vault>/.memoryclaw/index.db``: ``Index``, the only writer of it.

``Index`` is one connection composed of the database and its schema (``schema``), the writes
(``writes``), the look-ups (``reads``), the full-text search (``fulltext``) and the episodes
found by value kind or date (``sources``).
"""

from __future__ import annotations

from .fulltext import FullTextSearch
from .reads import IndexReads
from .sources import SourceSearch
from .writes import IndexWrites


class Index(IndexWrites, IndexReads, FullTextSearch, SourceSearch):
    """A connection to one vault's index database."""
