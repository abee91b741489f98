"""Settings: one frozen object, loaded from ``memoryclaw.yaml`` and the environment.

Keys are camelCase in YAML (as in the spec) and snake_case in Python.  Unknown keys and
wrong types fail with a :class:`ConfigError` naming the file, the key and what was expected.
Environment variables ``MEMORYCLAW_<SECTION>_<KEY>`` override the file (``KEY`` may be written
``MAXRESULTS`` or ``MAX_RESULTS``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import math
import os
import re
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import yaml

from ..errors import ConfigError, ParseError
from .files import STATE_DIR, atomic_write
from .safeyaml import load_yaml

_log = logging.getLogger("memoryclaw.config")

CONFIG_FILE = "memoryclaw.yaml"
# The last memoryclaw.yaml that loaded, used while the file is invalid (see load_settings).
LAST_VALID_FILE = f"{STATE_DIR}/config-last-valid.yaml"
# The trust-relevant keys a sync changed and this device holds at its own values until the
# user accepts them (see hold_changes).
HELD_FILE = f"{STATE_DIR}/config-held.json"
# Keys another device's memoryclaw.yaml may not change here on its own: where memory text
# is sent (llm, embeddings), who is trusted or sees what (scopes, the review of facts), how
# this device syncs, commits and redacts, and which other vaults it reads.
_TRUST_PREFIXES = ("llm.", "embeddings.", "scopes.", "sync.", "privacy.", "git.")
_TRUST_KEYS = frozenset(
    {"sharedVaults", "consolidation.factValidation", "consolidation.pendingReview"}
)
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


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _squash(name: str) -> str:
    return name.replace("_", "").replace("-", "").replace(".", "").lower()


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(v) for v in get_args(tp))
    if get_origin(tp) is tuple:
        return "a list of strings"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}[tp]


def _coerce(value: Any, tp: Any, *, path: str | None, key: str, from_env: bool) -> Any:
    """Check ``value`` against ``tp``; environment strings are converted first."""
    if from_env and isinstance(value, str):
        text = value.strip()
        if tp is bool:
            lowered = text.lower()
            if lowered in {"1", "true", "yes", "on"}:
                return True
            if lowered in {"0", "false", "no", "off"}:
                return False
        elif tp is int:
            try:
                return int(text)
            except ValueError:
                pass
        elif tp is float:
            try:
                return float(text)
            except ValueError:
                pass
        elif get_origin(tp) is tuple:
            return tuple(part.strip() for part in text.split(",") if part.strip())
        else:
            value = text
    if get_origin(tp) is tuple:
        if isinstance(value, list) and all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in value
        ):
            return tuple(str(v) for v in value)
        raise ConfigError(path, key, f"expected {_type_name(tp)}, got {value!r}")
    if get_origin(tp) is Literal:
        if value in get_args(tp):
            return value
    elif tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(value, tp) and not isinstance(value, bool):
        return value
    raise ConfigError(path, key, f"expected {_type_name(tp)}, got {value!r}")


_DEVICE_RE = re.compile(r"[a-z0-9]{1,16}")
_SHARES = frozenset({"min_score", "weight"})  # settings that are a share: 0..1


def _check_bounds(name: str, value: Any, path: str | None, key: str) -> None:
    if name == "device_id" and value and not _DEVICE_RE.fullmatch(str(value)):
        raise ConfigError(path, key, f"expected 1-16 lowercase letters or digits, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(path, key, f"expected a finite number, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        zero_ok = {
            "min_primary_results",
            "log_retention_days",
            "archive_after_days",
            "min_score",
            "keep_days",
            "weight",
        }
        minimum = 0 if name in zero_ok or key == "sync.interval" else 1
        if value < minimum:
            raise ConfigError(path, key, f"expected a number >= {minimum}, got {value!r}")
        if name in _SHARES and value > 1:
            raise ConfigError(path, key, f"expected a number from 0 to 1, got {value!r}")


def _build_section(
    section: str,
    cls: type[Any],
    raw: Mapping[str, Any],
    env: Mapping[str, str],
    path: str | None,
) -> Any:
    hints = get_type_hints(cls)
    by_camel = {_camel(f.name): f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    for yaml_key, value in raw.items():
        key = f"{section}.{yaml_key}"
        name = by_camel.get(str(yaml_key))
        if name is None:
            known = ", ".join(sorted(by_camel))
            raise ConfigError(path, key, f"unknown key (known keys: {known})")
        if dataclasses.is_dataclass(hints[name]):  # a group of keys: retrieval.recency
            if not isinstance(value, Mapping):
                got = type(value).__name__
                raise ConfigError(path, key, f"expected a mapping of settings, got {got}")
            values[name] = _build_section(key, hints[name], value, env, path)
            continue
        values[name] = _coerce(value, hints[name], path=path, key=key, from_env=False)
        _check_bounds(name, values[name], path, key)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            if f.name not in values:  # its keys may still be set by the environment
                group = f"{section}.{_camel(f.name)}"
                values[f.name] = _build_section(group, hints[f.name], {}, env, path)
            continue
        var = _env_lookup(env, section, f.name)
        if var is not None:
            env_name, text = var
            key = f"{section}.{_camel(f.name)}"
            values[f.name] = _coerce(text, hints[f.name], path=env_name, key=key, from_env=True)
            _check_bounds(f.name, values[f.name], env_name, key)
    return cls(**values)


def _env_lookup(env: Mapping[str, str], section: str, name: str) -> tuple[str, str] | None:
    wanted = "memoryclaw" + _squash(section) + _squash(name)
    for var, text in env.items():
        if var.upper().startswith("MEMORYCLAW_") and _squash(var) == wanted:
            return var, text
    return None


def settings_from_mapping(
    raw: Mapping[str, Any] | None,
    *,
    path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Validate a parsed configuration mapping (plus environment overrides) into Settings."""
    where = str(path) if path is not None else None
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise ConfigError(where, "(top level)", f"expected a mapping, got {type(raw).__name__}")
    # Only MEMORYCLAW_* variables can set a key; a process may have hundreds of others.
    env = {k: v for k, v in (env or {}).items() if k.upper().startswith("MEMORYCLAW_")}
    hints = get_type_hints(Settings)
    # Sections are camelCase in YAML too (``workingMemory``), as their keys are.
    sections = {_camel(f.name): (f.name, hints[f.name]) for f in _sections()}
    for key in raw:
        if key not in sections and key != _SHARED_KEY:
            known = ", ".join(sorted([*sections, _SHARED_KEY]))
            raise ConfigError(where, str(key), f"unknown section (known sections: {known})")
    built: dict[str, Any] = {"shared_vaults": _shared_vaults(raw.get(_SHARED_KEY), where)}
    for section, (name, cls) in sections.items():
        section_raw = raw.get(section)
        section_raw = {} if section_raw is None else section_raw
        if not isinstance(section_raw, Mapping):
            got = type(section_raw).__name__
            raise ConfigError(where, section, f"expected a mapping of settings, got {got}")
        built[name] = _build_section(section, cls, section_raw, env, where)
    return Settings(**built)


def _sections() -> list[dataclasses.Field[Any]]:
    """The fields of :class:`Settings` that are sections of keys."""
    return [f for f in dataclasses.fields(Settings) if f.name != "shared_vaults"]


_SHARED_KEY = "sharedVaults"
_VAULT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _shared_vaults(raw: Any, where: str | None) -> tuple[SharedVault, ...]:
    """``sharedVaults``: a list of paths, or of ``{name, path}`` mappings."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        got = type(raw).__name__
        expected = f"expected a list of paths or {{name, path}}, got {got}"
        raise ConfigError(where, _SHARED_KEY, expected)
    out: list[SharedVault] = []
    for n, item in enumerate(raw):
        key = f"{_SHARED_KEY}[{n}]"
        if isinstance(item, str):
            item = {"path": item}
        if not isinstance(item, Mapping):
            raise ConfigError(where, key, f"expected a path or {{name, path}}, got {item!r}")
        unknown = sorted(str(k) for k in item if k not in {"name", "path"})
        if unknown:
            raise ConfigError(where, f"{key}.{unknown[0]}", "unknown key (known keys: name, path)")
        path = item.get("path")
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(where, f"{key}.path", f"expected a folder path, got {path!r}")
        name = item.get("name", Path(path.rstrip("/\\")).expanduser().name)
        if not isinstance(name, str) or not _VAULT_NAME_RE.fullmatch(name):
            raise ConfigError(
                where,
                f"{key}.name",
                f"expected 1-64 letters, digits, '_', '.' or '-' (it labels results), got {name!r}",
            )
        if any(v.name == name for v in out):
            raise ConfigError(where, f"{key}.name", f"{name!r} names two team vaults")
        out.append(SharedVault(name, path.strip()))
    return tuple(out)


def load_settings(vault_path: str | Path, env: Mapping[str, str] | None = None) -> Settings:
    """Read ``<vault>/memoryclaw.yaml`` (optional) and apply environment overrides.

    The file may come from another device (a sync): when it is invalid and an earlier valid
    one was kept (:data:`LAST_VALID_FILE`, saved after each good load), that one is used with
    a one-line warning, so every command, ``sync`` included, keeps working until it is fixed.
    An invalid environment variable is this device's own and always fails."""
    env = os.environ if env is None else env
    root = Path(vault_path)
    path = root / CONFIG_FILE
    try:
        text = _config_text(path)
        raw = _parse(text, path)
        settings = settings_from_mapping(raw, path=path, env=env)
        settings = _apply_held(root, raw, path, env, settings, drop=True)
    except ConfigError as exc:
        if exc.path != str(path):
            raise
        fallback = _last_valid(root, env)
        if fallback is None:
            raise
        _log.warning(
            "memoryclaw: %s; using the last valid configuration (%s) until it is fixed",
            exc,
            LAST_VALID_FILE,
        )
        return fallback
    if text is not None:
        _keep_valid(root, text)
    return settings


def config_file_problem(vault_path: str | Path) -> ConfigError | None:
    """What makes ``<vault>/memoryclaw.yaml`` invalid (key and expected type), or None."""
    path = Path(vault_path) / CONFIG_FILE
    try:
        settings_from_mapping(_parse(_config_text(path), path), path=path, env={})
    except ConfigError as exc:
        return exc
    return None


def _config_text(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, "(file)", f"not UTF-8 text ({exc.reason})") from exc


def _parse(text: str | None, path: Path) -> Any:
    if text is None:
        return None
    try:
        return load_yaml(text, str(path))
    except ParseError as exc:
        line = f"line {exc.line}: " if exc.line is not None else ""
        raise ConfigError(path, "(file)", f"{line}{exc.reason}") from exc


def _last_valid(root: Path, env: Mapping[str, str]) -> Settings | None:
    """The settings of the last valid ``memoryclaw.yaml`` kept here, if any."""
    state = root / STATE_DIR
    if state.is_symlink():
        return None
    copy = root / LAST_VALID_FILE
    try:
        raw = _parse(_config_text(copy), copy)
        if not copy.is_file():
            return None
        settings = settings_from_mapping(raw, path=copy, env=env)
        return _apply_held(root, raw, copy, env, settings, drop=False)
    except ConfigError:
        return None


def file_settings(vault_path: str | Path) -> Settings | None:
    """What ``memoryclaw.yaml`` alone says (no environment, no held keys): the last valid
    copy's settings when it is invalid, None when there is neither."""
    root = Path(vault_path)
    for path in (root / CONFIG_FILE, root / LAST_VALID_FILE):
        try:
            return settings_from_mapping(_parse(_config_text(path), path), path=path, env={})
        except ConfigError:
            continue
    return None


def trust_relevant(key: str) -> bool:
    """Whether a change of ``key`` by another device is held until accepted here."""
    return key in _TRUST_KEYS or key.startswith(_TRUST_PREFIXES)


def held_config(vault_path: str | Path) -> dict[str, dict[str, Any]]:
    """The held keys: key -> ``{"trusted": this device's value, "incoming": the synced one}``
    (values as in YAML: lists, mappings)."""
    root = Path(vault_path)
    if (root / STATE_DIR).is_symlink():
        return {}
    try:
        data = json.loads((root / HELD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(key): {"trusted": pair["trusted"], "incoming": pair["incoming"]}
        for key, pair in data.items()
        if isinstance(pair, dict) and {"trusted", "incoming"} <= pair.keys()
    }


def _write_held(root: Path, held: Mapping[str, Any]) -> None:
    state = root / STATE_DIR
    if state.is_symlink() or not state.is_dir():
        return
    with suppress(OSError):
        if held:
            atomic_write(root / HELD_FILE, json.dumps(held, ensure_ascii=False, indent=1))
        else:
            (root / HELD_FILE).unlink(missing_ok=True)


def hold_changes(vault_path: str | Path, before: Settings, after: Settings) -> list[str]:
    """Hold each trust-relevant key a sync changed from ``before`` to ``after`` (what
    ``memoryclaw.yaml`` said before and after the merge): this device keeps applying its
    value until :func:`accept_held`; the keys held now."""
    root = Path(vault_path)
    held = held_config(root)
    old, new = flatten(before), flatten(after)
    for key, value in new.items():
        if not trust_relevant(key) or plain(old.get(key)) == plain(value):
            continue
        trusted = held[key]["trusted"] if key in held else plain(old.get(key))
        if plain(value) == trusted:
            held.pop(key, None)  # the remote went back to this device's value
        else:
            held[key] = {"trusted": trusted, "incoming": plain(value)}
    # a hold whose incoming value ``after`` no longer has was never taken (or was edited)
    held = {k: pair for k, pair in held.items() if plain(new.get(k)) == pair["incoming"]}
    _write_held(root, held)
    return sorted(held)


def accept_held(vault_path: str | Path) -> list[str]:
    """Accept every held key: the values ``memoryclaw.yaml`` holds apply from now on; the
    keys accepted."""
    root = Path(vault_path)
    keys = sorted(held_config(root))
    _write_held(root, {})
    return keys


def plain(value: Any) -> Any:
    """A setting's value as YAML and JSON write it (lists, ``{name, path}`` mappings)."""
    if isinstance(value, SharedVault):
        return {"name": value.name, "path": value.path}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


def _apply_held(
    root: Path,
    raw: Any,
    path: Path,
    env: Mapping[str, str],
    settings: Settings,
    *,
    drop: bool,
) -> Settings:
    """``settings`` with each held key at this device's trusted value, as long as the file
    still holds exactly the incoming one; a key the file now holds another value of was
    edited here, so that value applies and (``drop``) the hold is dropped."""
    held = held_config(root)
    if not held:
        return settings
    file_only = flatten(settings_from_mapping(raw, path=path, env={}))
    patched: dict[str, Any] = copy.deepcopy(dict(raw or {}))
    kept = {}
    defaults = flatten(Settings())
    for key, pair in held.items():
        if key in file_only and plain(file_only[key]) == pair["incoming"]:
            kept[key] = pair
            _set_key(patched, key, pair["trusted"])
            try:
                settings_from_mapping(patched, path=path, env={})
            except ConfigError:  # a held file edited by hand: the default, never the incoming
                _set_key(patched, key, plain(defaults.get(key)))
    if drop and kept != held:
        _write_held(root, kept)
    if not kept:
        return settings
    return settings_from_mapping(patched, path=path, env=env)


def _set_key(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set ``section.key`` (or ``retrieval.recency.weight``) in a parsed configuration."""
    *parents, last = key.split(".")
    where = raw
    for part in parents:
        inner = where.get(part)
        where[part] = dict(inner) if isinstance(inner, Mapping) else {}
        where = where[part]
    where[last] = value


def _keep_valid(root: Path, text: str) -> None:
    """Keep a copy of a configuration that just loaded; not in a vault that cannot be
    written, nor anywhere but a real ``.memoryclaw`` folder."""
    state = root / STATE_DIR
    if state.is_symlink() or not state.is_dir():
        return
    copy = root / LAST_VALID_FILE
    with suppress(OSError):
        if copy.is_file() and not copy.is_symlink() and copy.read_bytes() == text.encode():
            return
        atomic_write(copy, text)


def flatten(settings: Settings) -> dict[str, Any]:
    """Every setting by its YAML key (``retrieval.recency.weight``, ``sharedVaults``)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(
                    f"{prefix}.{_camel(f.name)}" if prefix else _camel(f.name),
                    getattr(value, f.name),
                )
        else:
            flat[prefix] = value

    walk("", settings)
    return flat


def default_config_yaml() -> str:
    """The commented default ``memoryclaw.yaml`` that ``init`` writes."""
    lines = ["# memoryclaw configuration; every key is optional and shows its default."]
    defaults = Settings()
    for f in _sections():
        lines.append(f"{_camel(f.name)}:")
        section = getattr(defaults, f.name)
        for sf in dataclasses.fields(section):
            value = getattr(section, sf.name)
            value = list(value) if isinstance(value, tuple) else value
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                group = dataclasses.asdict(value)
                value = {_camel(name): item for name, item in group.items()}
            rendered = yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()
            rendered = rendered.removesuffix("\n...").removesuffix("...").strip()
            lines.append(f"  {_camel(sf.name)}: {rendered}")
    lines.append("# Team vaults, searched after this one, never written: paths or {name, path}.")
    lines.append(f"{_SHARED_KEY}: []")
    return "\n".join(lines) + "\n"


def resolve_vault_path(explicit: str | Path | None, env: Mapping[str, str] | None = None) -> Path:
    """The vault path: explicit argument, else ``MEMORYCLAW_VAULT``, else the default."""
    env = os.environ if env is None else env
    chosen = explicit or env.get("MEMORYCLAW_VAULT") or DEFAULT_VAULT
    return Path(chosen).expanduser()
