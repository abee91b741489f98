"""memoryclaw: deterministic, file-based long-term memory for AI agents.

Memories are markdown files with YAML frontmatter in a vault; a SQLite FTS5 index derived
from them serves explainable keyword retrieval.  Start with :class:`Vault`.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import ForgetReport, IngestReport, Vault
from .archive import ArchiveReport
from .config import Settings, load_settings
from .errors import (
    ArchiveConflictError,
    ConfigError,
    EmbeddingError,
    ExternalToolError,
    InvalidInputError,
    LockTimeoutError,
    MemoryclawError,
    NotFoundError,
    ParseError,
    SyncError,
    UnsafePathError,
    VaultNotFoundError,
)
from .hooks import MemoryHooks
from .notes import Episode, Fact, RawLog, Turn
from .payload import RetrievePayload
from .remote import RemoteSyncReport
from .retrieval import EpisodeResult, FactResult, SearchResult, Withheld, extract_keywords
from .scopes import Policy, RecallContext
from .sync import SyncReport
from .transcripts import LoggedTurn
from .working import WorkingMemories, WorkingMemory

__all__ = [
    "ArchiveConflictError",
    "ArchiveReport",
    "ConfigError",
    "EmbeddingError",
    "Episode",
    "EpisodeResult",
    "ExternalToolError",
    "Fact",
    "FactResult",
    "ForgetReport",
    "IngestReport",
    "InvalidInputError",
    "LockTimeoutError",
    "LoggedTurn",
    "MemoryHooks",
    "MemoryclawError",
    "NotFoundError",
    "ParseError",
    "Policy",
    "RawLog",
    "RecallContext",
    "RemoteSyncReport",
    "RetrievePayload",
    "SearchResult",
    "Settings",
    "SyncError",
    "SyncReport",
    "Turn",
    "UnsafePathError",
    "Vault",
    "VaultNotFoundError",
    "Withheld",
    "WorkingMemories",
    "WorkingMemory",
    "__version__",
    "extract_keywords",
    "load_settings",
]
