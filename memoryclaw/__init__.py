"""memoryclaw: deterministic, file-based long-term memory for AI agents.

Memories are markdown files with YAML frontmatter in a vault; a SQLite FTS5 index derived
from them serves explainable keyword retrieval.  Start with :class:`Vault`.
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import ForgetReport, IngestReport, Vault
    from .archive import ArchiveReport
    from .config import Settings, SharedVault, load_settings
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
        ReadOnlyVaultError,
        SyncError,
        UnsafePathError,
        VaultNotFoundError,
    )
    from .hooks import MemoryHooks
    from .importing import ImportReport
    from .metrics import Metrics
    from .notes import Episode, Fact, RawLog, Turn
    from .payload import RetrievePayload
    from .remote import RemoteSyncReport
    from .retrieval import EpisodeResult, FactResult, SearchResult, Withheld, extract_keywords
    from .scopes import Policy, RecallContext
    from .sync import SyncReport
    from .transcripts import LoggedTurn
    from .working import WorkingMemories, WorkingMemory

# Where each public name lives.  Names are imported on first use (PEP 562), so a command
# that needs a few modules (``memoryclaw search``) does not pay for every one of them.
_HOMES = {
    "ArchiveConflictError": "errors",
    "ArchiveReport": "archive",
    "ConfigError": "errors",
    "EmbeddingError": "errors",
    "Episode": "notes",
    "EpisodeResult": "retrieval",
    "ExternalToolError": "errors",
    "Fact": "notes",
    "FactResult": "retrieval",
    "ForgetReport": "api",
    "ImportReport": "importing",
    "IngestReport": "api",
    "InvalidInputError": "errors",
    "LockTimeoutError": "errors",
    "LoggedTurn": "transcripts",
    "MemoryHooks": "hooks",
    "MemoryclawError": "errors",
    "Metrics": "metrics",
    "NotFoundError": "errors",
    "ParseError": "errors",
    "Policy": "scopes",
    "RawLog": "notes",
    "ReadOnlyVaultError": "errors",
    "RecallContext": "scopes",
    "RemoteSyncReport": "remote",
    "RetrievePayload": "payload",
    "SearchResult": "retrieval",
    "Settings": "config",
    "SharedVault": "config",
    "SyncError": "errors",
    "SyncReport": "sync",
    "Turn": "notes",
    "UnsafePathError": "errors",
    "Vault": "api",
    "VaultNotFoundError": "errors",
    "Withheld": "retrieval",
    "WorkingMemories": "working",
    "WorkingMemory": "working",
    "extract_keywords": "retrieval",
    "load_settings": "config",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memoryclaw' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "ImportReport",
    "IngestReport",
    "InvalidInputError",
    "LockTimeoutError",
    "LoggedTurn",
    "MemoryHooks",
    "MemoryclawError",
    "Metrics",
    "NotFoundError",
    "ParseError",
    "Policy",
    "RawLog",
    "ReadOnlyVaultError",
    "RecallContext",
    "RemoteSyncReport",
    "RetrievePayload",
    "SearchResult",
    "Settings",
    "SharedVault",
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
