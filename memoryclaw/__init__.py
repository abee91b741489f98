"""memoryclaw: deterministic, file-based long-term memory for AI agents.

Memories are markdown files with YAML frontmatter in a vault; a SQLite FTS5 index derived
from them serves explainable keyword retrieval.  Start with :class:`Vault`.
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api.forgetting import ForgetReport
    from .api.importing import IngestReport
    from .api.vault import Vault
    from .consolidate.archive import ArchiveReport
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
    from .importers.workspace import ImportReport
    from .index.update import SyncReport
    from .recall.metrics import Metrics
    from .recall.payload import RetrievePayload
    from .recall.results import (
        EpisodeResult,
        FactResult,
        SearchResult,
        Withheld,
    )
    from .recall.working import WorkingMemories, WorkingMemory
    from .serve.hooks import MemoryHooks
    from .share.sync import RemoteSyncReport
    from .vault.config import Settings, SharedVault
    from .vault.configfile import load_settings
    from .vault.episodes import Episode
    from .vault.facts import Fact
    from .vault.logformat import RawLog, Turn
    from .vault.rawlogs import LoggedTurn
    from .vault.scopes import Policy, RecallContext
    from .vault.words import extract_keywords

# Where each public name lives.  Names are imported on first use (PEP 562), so a command
# that needs a few modules (``memoryclaw search``) does not pay for every one of them.
_HOMES = {
    "ArchiveConflictError": "errors",
    "ArchiveReport": "consolidate.archive",
    "ConfigError": "errors",
    "EmbeddingError": "errors",
    "Episode": "vault.episodes",
    "EpisodeResult": "recall.results",
    "ExternalToolError": "errors",
    "Fact": "vault.facts",
    "FactResult": "recall.results",
    "ForgetReport": "api.forgetting",
    "ImportReport": "importers.workspace",
    "IngestReport": "api.importing",
    "InvalidInputError": "errors",
    "LockTimeoutError": "errors",
    "LoggedTurn": "vault.rawlogs",
    "MemoryHooks": "serve.hooks",
    "MemoryclawError": "errors",
    "Metrics": "recall.metrics",
    "NotFoundError": "errors",
    "ParseError": "errors",
    "Policy": "vault.scopes",
    "RawLog": "vault.logformat",
    "ReadOnlyVaultError": "errors",
    "RecallContext": "vault.scopes",
    "RemoteSyncReport": "share.sync",
    "RetrievePayload": "recall.payload",
    "SearchResult": "recall.results",
    "Settings": "vault.config",
    "SharedVault": "vault.config",
    "SyncError": "errors",
    "SyncReport": "index.update",
    "Turn": "vault.logformat",
    "UnsafePathError": "errors",
    "Vault": "api.vault",
    "VaultNotFoundError": "errors",
    "Withheld": "recall.results",
    "WorkingMemories": "recall.working",
    "WorkingMemory": "recall.working",
    "extract_keywords": "vault.words",
    "load_settings": "vault.configfile",
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
