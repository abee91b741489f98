"""The SQLite index at ``<vault>/.memoryclaw/index.db``: ``Index``, the only writer of it.

``Index`` is one connection composed of the database and its schema (``schema``), the writes
(``writes``), the look-ups (``reads``) and the full-text search (``fulltext``).
"""

from __future__ import annotations

from .fulltext import FullTextSearch
from .reads import IndexReads
from .writes import IndexWrites


class Index(IndexWrites, IndexReads, FullTextSearch):
    """A connection to one vault's index database."""
