"""Checking a parsed ``memoryclaw.yaml`` mapping and the environment into :class:`Settings`.

Unknown keys and wrong types fail with a :class:`ConfigError` naming the file, the key and what
was expected.  Environment variables ``MEMORYCLAW_<SECTION>_<KEY>`` override the file (``KEY``
may be written ``MAXRESULTS`` or ``MAX_RESULTS``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from ..errors import ConfigError
from .config import SHARED_KEY, Settings, SharedVault, camel, section_fields
from .device import DEVICE_RE


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


_SHARES = frozenset({"min_score", "weight"})  # settings that are a share: 0..1


def _check_bounds(name: str, value: Any, path: str | None, key: str) -> None:
    if name == "device_id" and value and not DEVICE_RE.fullmatch(str(value)):
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
    by_camel = {camel(f.name): f.name for f in dataclasses.fields(cls)}
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
                group = f"{section}.{camel(f.name)}"
                values[f.name] = _build_section(group, hints[f.name], {}, env, path)
            continue
        var = _env_lookup(env, section, f.name)
        if var is not None:
            env_name, text = var
            key = f"{section}.{camel(f.name)}"
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
    sections = {camel(f.name): (f.name, hints[f.name]) for f in section_fields()}
    for key in raw:
        if key not in sections and key != SHARED_KEY:
            known = ", ".join(sorted([*sections, SHARED_KEY]))
            raise ConfigError(where, str(key), f"unknown section (known sections: {known})")
    built: dict[str, Any] = {"shared_vaults": _shared_vaults(raw.get(SHARED_KEY), where)}
    for section, (name, cls) in sections.items():
        section_raw = raw.get(section)
        section_raw = {} if section_raw is None else section_raw
        if not isinstance(section_raw, Mapping):
            got = type(section_raw).__name__
            raise ConfigError(where, section, f"expected a mapping of settings, got {got}")
        built[name] = _build_section(section, cls, section_raw, env, where)
    return Settings(**built)


_VAULT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _shared_vaults(raw: Any, where: str | None) -> tuple[SharedVault, ...]:
    """``sharedVaults``: a list of paths, or of ``{name, path}`` mappings."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        got = type(raw).__name__
        expected = f"expected a list of paths or {{name, path}}, got {got}"
        raise ConfigError(where, SHARED_KEY, expected)
    out: list[SharedVault] = []
    for n, item in enumerate(raw):
        key = f"{SHARED_KEY}[{n}]"
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
