"""Reading this vault's ``memoryclaw.yaml``: the last valid copy used while it is invalid, and
the trust-relevant keys a sync changed, held at this device's values until accepted.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ParseError, warn
from .config import CONFIG_FILE, Settings, flatten, plain
from .configcheck import settings_from_mapping
from .files import STATE_DIR, atomic_write
from .safeyaml import load_yaml

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
        warn(
            "memoryclaw.config",
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
