"""Settings: one frozen object of sections, their defaults and their camelCase YAML keys.

Keys are camelCase in YAML (as in the spec) and snake_case in Python; reading and checking
``memoryclaw.yaml`` is :mod:`memoryclaw.vault.configfile` and :mod:`memoryclaw.vault.configcheck`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

CONFIG_FILE = "memoryclaw.yaml"
DEFAULT_VAULT = "~/.openclaw/workspace/memoryclaw"


@dataclass(frozen=True)
class RecencySettings:
    """How much newer and recently used memories rank up (``retrieval.recency``)."""

    # The share of an episode's or a line's score that recency decides: 0 ranks by relevance
    # alone (the default: on LoCoMo dev any weight lost evidence, see README).
    weight: float = 0.0
    # Days after which a memory's recency factor is one half.
    half_life_days: float = 30.0


@dataclass(frozen=True)
class RetrievalSettings:
    """How queries are answered."""

    primary: Literal["keyword"] = "keyword"
    min_primary_results: int = 2
    fallback: Literal["none", "vector"] = "none"
    max_results: int = 5
    blend_strategy: Literal["primary_first", "rrf", "weighted"] = "primary_first"
    budget_tokens: int = 800
    # Results of lower relevance (0..1, score / the query's best: see memoryclaw.recall.retrieval)
    # are not put in the retrieve payload (0.3: chosen on LoCoMo dev, see README); 0 keeps all.
    min_score: float = 0.3
    recency: RecencySettings = field(default_factory=RecencySettings)


@dataclass(frozen=True)
class LlmSettings:
    """The model consolidation may use to summarize."""

    provider: Literal["none", "ollama"] = "none"
    base_url: str = "http://127.0.0.1:11434"
    model: str = "llama3.1:8b"
    timeout_seconds: float = 60.0


@dataclass(frozen=True)
class EmbeddingSettings:
    """The embedder behind the vector fallback."""

    provider: Literal["ollama", "sentence-transformers"] = "ollama"
    model: str = "nomic-embed-text"
    # The Ollama server for embeddings; the same default as llm.baseUrl, set on its own so
    # summaries and embeddings may come from different machines.
    base_url: str = "http://127.0.0.1:11434"


@dataclass(frozen=True)
class ConsolidationSettings:
    """When and how raw logs become episodes, facts and skills."""

    interval: int = 60
    after_logs: int = 10
    session_idle_minutes: int = 30
    skill_threshold: int = 7
    fact_validation: bool = True
    pending_review: bool = True
    log_retention_days: int = 30
    # Days an episode may go unused (not recalled, not edited) before it moves to
    # episodes/archive/ (memoryclaw.consolidate.archive); 0 keeps every episode in recall.
    archive_after_days: int = 0


@dataclass(frozen=True)
class PrivacySettings:
    """What never reaches the vault."""

    redact_secrets: bool = True


@dataclass(frozen=True)
class ScopeSettings:
    """Who may see a memory (see :mod:`memoryclaw.vault.scopes`)."""

    share_across_agents: bool = False
    # Sender ids of the owner: a turn from anybody else in a group is a participant's, and a
    # direct chat with anybody else is that person's own.  Empty: direct chats are the owner's.
    owner_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class GitSettings:
    """Versioning of the vault."""

    auto_commit: bool = True


@dataclass(frozen=True)
class SyncSettings:
    """Sharing the vault between devices through a git remote (see :mod:`memoryclaw.share.sync`)."""

    remote: str = "origin"
    # Minutes between the daemon's syncs; 0 never syncs on a timer.
    interval: int = 0
    # Whether the daemon syncs after each consolidation.
    auto: bool = False
    # This device's id in new log names; empty: a random one kept in .memoryclaw/device.
    device_id: str = ""
    # Seconds a fetch or push may take before the sync gives up: a remote that never
    # answers must not hold the vault's consolidation lock for ever.
    timeout_seconds: float = 60.0


@dataclass(frozen=True)
class WorkingMemorySettings:
    """The per-session working memory a long-lived process keeps (see
    :mod:`memoryclaw.recall.working`)."""

    # Estimated tokens (characters / 4) the working-memory object may hold; primary design
    # 2.1 gives ~2k as the default size limit.
    max_tokens: int = 2000
    # Live sessions kept at once; the least recently used one is dropped past this.
    max_sessions: int = 256


@dataclass(frozen=True)
class MetricsSettings:
    """Recall metrics (see :mod:`memoryclaw.recall.metrics`)."""

    # UTC days of per-day counters kept in .memoryclaw/metrics.json; 0 records none.
    keep_days: int = 90


@dataclass(frozen=True)
class SharedVault:
    """A team vault (``sharedVaults``): searched after this vault, never written."""

    name: str  # labels its results (``team:ep-…``); unique, letters, digits, ``_.-``
    path: str  # as written: ``~`` and paths relative to this vault are resolved on use

    def root(self, vault_root: Path) -> Path:
        """Where the team vault is, for the vault at ``vault_root``."""
        return (vault_root / Path(self.path).expanduser()).resolve()


@dataclass(frozen=True)
class Settings:
    """All configuration of one vault."""

    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    embeddings: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    consolidation: ConsolidationSettings = field(default_factory=ConsolidationSettings)
    privacy: PrivacySettings = field(default_factory=PrivacySettings)
    git: GitSettings = field(default_factory=GitSettings)
    scopes: ScopeSettings = field(default_factory=ScopeSettings)
    working_memory: WorkingMemorySettings = field(default_factory=WorkingMemorySettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    # A top-level list, not a section: read-only team vaults (see memoryclaw.share.teams).
    shared_vaults: tuple[SharedVault, ...] = ()


def camel(name: str) -> str:
    """A snake_case field name as its camelCase YAML key."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def section_fields() -> list[dataclasses.Field[Any]]:
    """The fields of :class:`Settings` that are sections of keys."""
    return [f for f in dataclasses.fields(Settings) if f.name != "shared_vaults"]


SHARED_KEY = "sharedVaults"


def plain(value: Any) -> Any:
    """A setting's value as YAML and JSON write it (lists, ``{name, path}`` mappings)."""
    if isinstance(value, SharedVault):
        return {"name": value.name, "path": value.path}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


def flatten(settings: Settings) -> dict[str, Any]:
    """Every setting by its YAML key (``retrieval.recency.weight``, ``sharedVaults``)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(
                    f"{prefix}.{camel(f.name)}" if prefix else camel(f.name),
                    getattr(value, f.name),
                )
        else:
            flat[prefix] = value

    walk("", settings)
    return flat


def default_config_yaml() -> str:
    """The commented default ``memoryclaw.yaml`` that ``init`` writes."""
    import yaml  # here: reading settings needs no PyYAML (see memoryclaw.vault.safeyaml)

    lines = ["# memoryclaw configuration; every key is optional and shows its default."]
    defaults = Settings()
    for f in section_fields():
        lines.append(f"{camel(f.name)}:")
        section = getattr(defaults, f.name)
        for sf in dataclasses.fields(section):
            value = getattr(section, sf.name)
            value = list(value) if isinstance(value, tuple) else value
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                group = dataclasses.asdict(value)
                value = {camel(name): item for name, item in group.items()}
            rendered = yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()
            rendered = rendered.removesuffix("\n...").removesuffix("...").strip()
            lines.append(f"  {camel(sf.name)}: {rendered}")
    lines.append("# Team vaults, searched after this one, never written: paths or {name, path}.")
    lines.append(f"{SHARED_KEY}: []")
    return "\n".join(lines) + "\n"


def resolve_vault_path(explicit: str | Path | None, env: Mapping[str, str] | None = None) -> Path:
    """The vault path: explicit argument, else ``MEMORYCLAW_VAULT``, else the default."""
    env = os.environ if env is None else env
    chosen = explicit or env.get("MEMORYCLAW_VAULT") or DEFAULT_VAULT
    return Path(chosen).expanduser()
