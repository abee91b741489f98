"""Settings from ``memoryclaw.yaml`` and the environment (SPEC section 3)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from memoryclaw.errors import ConfigError
from memoryclaw.vault.config import (
    CONFIG_FILE,
    DEFAULT_VAULT,
    Settings,
    default_config_yaml,
    resolve_vault_path,
)
from memoryclaw.vault.configcheck import settings_from_mapping
from memoryclaw.vault.configfile import load_settings

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


def _write(vault: Path, text: str | bytes) -> Path:
    vault.mkdir(parents=True, exist_ok=True)
    path = vault / CONFIG_FILE
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _config_error(vault: Path, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_settings(vault, env=env or {})
    return info.value


# ------------------------------------------------------------------------------ defaults


def test_defaults_match_spec() -> None:
    s = Settings()
    assert (s.retrieval.primary, s.retrieval.min_primary_results, s.retrieval.fallback) == (
        "keyword",
        2,
        "none",
    )
    assert (s.retrieval.max_results, s.retrieval.blend_strategy, s.retrieval.budget_tokens) == (
        5,
        "primary_first",
        800,
    )
    assert (s.llm.provider, s.llm.base_url, s.llm.model, s.llm.timeout_seconds) == (
        "none",
        "http://127.0.0.1:11434",
        "llama3.1:8b",
        60,
    )
    assert (s.embeddings.provider, s.embeddings.model) == ("ollama", "nomic-embed-text")
    c = s.consolidation
    assert (c.interval, c.after_logs, c.session_idle_minutes, c.skill_threshold) == (60, 10, 30, 7)
    assert (c.fact_validation, c.pending_review, c.log_retention_days) == (True, True, 30)
    assert s.privacy.redact_secrets is True
    assert s.git.auto_commit is True
    assert (s.working_memory.max_tokens, s.working_memory.max_sessions) == (2000, 256)


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert load_settings(tmp_path, env={}) == Settings()
    assert load_settings(tmp_path / "does-not-exist", env={}) == Settings()
    assert settings_from_mapping(None) == Settings()
    assert settings_from_mapping({}) == Settings()


@pytest.mark.parametrize(
    "text",
    ["", "# only comments\n", "retrieval:\nllm:\n", "retrieval: {}\n", "---\n...\n"],
    ids=["empty", "comments", "null-sections", "empty-mapping", "empty-document"],
)
def test_empty_configs_give_defaults(tmp_path: Path, text: str) -> None:
    _write(tmp_path, text)
    assert load_settings(tmp_path, env={}) == Settings()


def test_default_config_yaml_parses_back_to_defaults(tmp_path: Path) -> None:
    text = default_config_yaml()
    raw = yaml.safe_load(text)
    assert settings_from_mapping(raw) == Settings()
    # every key of every section is shown
    assert raw["sharedVaults"] == []  # a top-level list, not a section
    for section in dataclasses.fields(Settings):
        if section.name == "shared_vaults":
            continue
        head, *rest = section.name.split("_")
        shown = raw[head + "".join(part.title() for part in rest)]  # sections are camelCase
        assert len(shown) == len(dataclasses.fields(getattr(Settings(), section.name)))
    assert raw["retrieval"]["maxResults"] == 5
    assert raw["llm"]["baseUrl"] == "http://127.0.0.1:11434"
    assert raw["llm"]["model"] == "llama3.1:8b"
    _write(tmp_path, text)
    assert load_settings(tmp_path, env={}) == Settings()


def test_sample_vault_config() -> None:
    s = load_settings(SAMPLE_VAULT, env={})
    assert s.git.auto_commit is False
    assert s.retrieval.max_results == 5
    assert s.consolidation.skill_threshold == 7
    assert s.llm == Settings().llm


def test_values_from_file(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "retrieval:\n  maxResults: 9\n  fallback: vector\n  blendStrategy: rrf\n"
        "llm:\n  timeoutSeconds: 5\n  provider: ollama\n"
        "embeddings:\n  provider: sentence-transformers\n"
        "consolidation:\n  factValidation: false\n  logRetentionDays: 0\n"
        "privacy:\n  redactSecrets: no\n",
    )
    s = load_settings(tmp_path, env={})
    assert s.retrieval.max_results == 9
    assert s.retrieval.fallback == "vector"
    assert s.retrieval.blend_strategy == "rrf"
    assert s.llm.timeout_seconds == 5.0 and isinstance(s.llm.timeout_seconds, float)
    assert s.llm.provider == "ollama"
    assert s.embeddings.provider == "sentence-transformers"
    assert s.consolidation.fact_validation is False
    assert s.consolidation.log_retention_days == 0
    assert s.privacy.redact_secrets is False
    assert s.git == Settings().git


# ----------------------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("retrieval:\n  maxResults: five\n", "retrieval.maxResults", "an integer"),
        ("retrieval:\n  maxResults: true\n", "retrieval.maxResults", "an integer"),
        ("retrieval:\n  maxResults: 5.5\n", "retrieval.maxResults", "an integer"),
        ("retrieval:\n  maxResults: '5'\n", "retrieval.maxResults", "an integer"),
        ("retrieval:\n  budgetTokens: [800]\n", "retrieval.budgetTokens", "an integer"),
        ("retrieval:\n  fallback: vectors\n", "retrieval.fallback", "one of 'none', 'vector'"),
        ("retrieval:\n  primary: vector\n", "retrieval.primary", "one of 'keyword'"),
        ("retrieval:\n  blendStrategy: 1\n", "retrieval.blendStrategy", "'primary_first'"),
        ("llm:\n  timeoutSeconds: soon\n", "llm.timeoutSeconds", "a number"),
        ("llm:\n  timeoutSeconds: true\n", "llm.timeoutSeconds", "a number"),
        ("llm:\n  baseUrl: 8080\n", "llm.baseUrl", "a string"),
        ("llm:\n  model: [llama]\n", "llm.model", "a string"),
        ("llm:\n  provider: openai\n", "llm.provider", "one of 'none', 'ollama'"),
        ("embeddings:\n  provider: openai\n", "embeddings.provider", "'sentence-transformers'"),
        ("consolidation:\n  factValidation: 1\n", "consolidation.factValidation", "true or false"),
        ("consolidation:\n  pendingReview: 'no'\n", "consolidation.pendingReview", "true or false"),
        ("consolidation:\n  interval: 1h\n", "consolidation.interval", "an integer"),
        ("privacy:\n  redactSecrets: null\n", "privacy.redactSecrets", "true or false"),
        ("git:\n  autoCommit: 'false'\n", "git.autoCommit", "true or false"),
    ],
    ids=[
        "int-word",
        "int-bool",
        "int-float",
        "int-quoted",
        "int-list",
        "literal-typo",
        "literal-other",
        "literal-int",
        "float-word",
        "float-bool",
        "str-int",
        "str-list",
        "llm-provider",
        "embeddings-provider",
        "bool-int",
        "bool-quoted-no",
        "int-unit",
        "bool-null",
        "bool-quoted-false",
    ],
)
def test_wrong_type_names_file_key_and_type(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    path = _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert err.path == str(path)
    assert err.key == key
    assert expected in err.problem
    message = str(err)
    assert str(path) in message and key in message and expected in message


def test_unknown_section(tmp_path: Path) -> None:
    path = _write(tmp_path, "retrival:\n  maxResults: 3\n")
    err = _config_error(tmp_path)
    assert (err.path, err.key) == (str(path), "retrival")
    assert "unknown section" in err.problem and "retrieval" in err.problem


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("retrieval:\n  max_results: 3\n", "retrieval.max_results"),
        ("retrieval:\n  maxresults: 3\n", "retrieval.maxresults"),
        ("llm:\n  temperature: 0.2\n", "llm.temperature"),
        ("git:\n  autoCommit: true\n  autoPush: true\n", "git.autoPush"),
        ("privacy:\n  1: x\n", "privacy.1"),
    ],
    ids=["snake-case", "lowercase", "unknown-llm", "unknown-after-valid", "int-key"],
)
def test_unknown_key(tmp_path: Path, text: str, key: str) -> None:
    path = _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert (err.path, err.key) == (str(path), key)
    assert "unknown key" in err.problem


@pytest.mark.parametrize(
    "text",
    ["retrieval: 5\n", "retrieval: [maxResults]\n", "git: true\n", "llm: ollama\n"],
    ids=["int", "list", "bool", "string"],
)
def test_non_mapping_section(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert err.path == str(path)
    assert err.key == text.split(":")[0]
    assert "mapping" in err.problem


@pytest.mark.parametrize(
    "text",
    ["retrieval: []\n", "retrieval: 0\n", "git: false\n", "[]\n"],
    ids=["empty-list", "zero", "false", "top-level-empty-list"],
)
def test_falsy_non_mapping_is_rejected(tmp_path: Path, text: str) -> None:
    _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert "mapping" in err.problem


@pytest.mark.parametrize(
    "text",
    ["- retrieval\n", "just a string\n", "42\n"],
    ids=["list", "string", "number"],
)
def test_non_mapping_top_level(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert err.path == str(path)
    assert err.key == "(top level)"
    assert "mapping" in err.problem


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("retrieval:\n  maxResults: 5\n bad: x\n", 3),
        ("a: b: c\n", 1),
        ("retrieval:\n  maxResults: 5\n\tfallback: none\n", 3),
        ("retrieval:\n  fallback: [none\n  maxResults: 5\nllm: {}\n", 3),
    ],
    ids=["bad-indent", "mapping-in-scalar", "tab", "unclosed-flow"],
)
def test_invalid_yaml_names_line(tmp_path: Path, text: str, line: int) -> None:
    path = _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert err.path == str(path)
    assert err.key == "(file)"
    assert f"line {line}:" in err.problem
    assert "invalid YAML" in err.problem


def test_invalid_yaml_at_end_of_file_names_a_line_in_the_file(tmp_path: Path) -> None:
    _write(tmp_path, "retrieval:\n  maxResults: [5\n")
    assert "line 2:" in _config_error(tmp_path).problem


@pytest.mark.parametrize(
    "data",
    [b"retrieval:\n  fallback: caf\xe9\n", b"\xff\xfe\x00r\x00"],
    ids=["latin1", "utf16-bom"],
)
def test_non_utf8_file(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, data)
    err = _config_error(tmp_path)
    assert err.path == str(path)
    assert err.key == "(file)"
    assert "UTF-8" in err.problem


@pytest.mark.parametrize(
    ("text", "key", "minimum"),
    [
        ("retrieval:\n  maxResults: -1\n", "retrieval.maxResults", 1),
        ("retrieval:\n  maxResults: 0\n", "retrieval.maxResults", 1),
        ("retrieval:\n  budgetTokens: -800\n", "retrieval.budgetTokens", 1),
        ("retrieval:\n  minPrimaryResults: -2\n", "retrieval.minPrimaryResults", 0),
        ("llm:\n  timeoutSeconds: -1.5\n", "llm.timeoutSeconds", 1),
        ("consolidation:\n  interval: 0\n", "consolidation.interval", 1),
        ("consolidation:\n  skillThreshold: -7\n", "consolidation.skillThreshold", 1),
        ("consolidation:\n  logRetentionDays: -1\n", "consolidation.logRetentionDays", 0),
        ("consolidation:\n  archiveAfterDays: -30\n", "consolidation.archiveAfterDays", 0),
    ],
    ids=[
        "max-results-negative",
        "max-results-zero",
        "budget-negative",
        "min-primary-negative",
        "timeout-negative",
        "interval-zero",
        "skill-threshold-negative",
        "retention-negative",
        "archive-negative",
    ],
)
def test_out_of_range_numbers_rejected(tmp_path: Path, text: str, key: str, minimum: int) -> None:
    path = _write(tmp_path, text)
    err = _config_error(tmp_path)
    assert (err.path, err.key) == (str(path), key)
    assert f">= {minimum}" in err.problem


@pytest.mark.parametrize(
    ("text", "attr", "value"),
    [
        ("retrieval:\n  minPrimaryResults: 0\n", ("retrieval", "min_primary_results"), 0),
        ("consolidation:\n  logRetentionDays: 0\n", ("consolidation", "log_retention_days"), 0),
        ("consolidation:\n  archiveAfterDays: 0\n", ("consolidation", "archive_after_days"), 0),
        ("llm:\n  timeoutSeconds: 1\n", ("llm", "timeout_seconds"), 1.0),
    ],
    ids=["min-primary-zero", "retention-zero", "archive-off", "timeout-one"],
)
def test_boundary_values_accepted(
    tmp_path: Path, text: str, attr: tuple[str, str], value: float
) -> None:
    _write(tmp_path, text)
    s = load_settings(tmp_path, env={})
    assert getattr(getattr(s, attr[0]), attr[1]) == value


@pytest.mark.parametrize(
    ("text", "env"),
    [("llm:\n  timeoutSeconds: .nan\n", {}), ("", {"MEMORYCLAW_LLM_TIMEOUTSECONDS": "nan"})],
    ids=["file", "env"],
)
def test_nan_timeout_rejected(tmp_path: Path, text: str, env: dict[str, str]) -> None:
    _write(tmp_path, text)
    err = _config_error(tmp_path, env)
    assert err.key == "llm.timeoutSeconds"


# --------------------------------------------------------------------------- environment


@pytest.mark.parametrize(
    "var",
    [
        "MEMORYCLAW_RETRIEVAL_MAXRESULTS",
        "MEMORYCLAW_RETRIEVAL_MAX_RESULTS",
        "memoryclaw_retrieval_max_results",
    ],
    ids=["squashed", "snake", "lowercase"],
)
def test_env_override_spellings(tmp_path: Path, var: str) -> None:
    _write(tmp_path, "retrieval:\n  maxResults: 3\n  budgetTokens: 500\n")
    s = load_settings(tmp_path, env={var: " 9 "})
    assert s.retrieval.max_results == 9
    assert s.retrieval.budget_tokens == 500  # the file still applies to other keys


def test_env_override_without_file(tmp_path: Path) -> None:
    env = {
        "MEMORYCLAW_RETRIEVAL_FALLBACK": "vector",
        "MEMORYCLAW_LLM_TIMEOUT_SECONDS": "2.5",
        "MEMORYCLAW_LLM_BASE_URL": "http://ollama:11434",
        "MEMORYCLAW_CONSOLIDATION_LOG_RETENTION_DAYS": "0",
        "MEMORYCLAW_VAULT": "/elsewhere",
        "HOME": "/home/x",
    }
    s = load_settings(tmp_path, env=env)
    assert s.retrieval.fallback == "vector"
    assert s.llm.timeout_seconds == 2.5
    assert s.llm.base_url == "http://ollama:11434"
    assert s.consolidation.log_retention_days == 0
    assert s.git == Settings().git


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("false", False),
        ("0", False),
        ("no", False),
        (" OFF ", False),
        ("yes", True),
        ("TRUE", True),
        ("1", True),
        ("on", True),
    ],
    ids=["false", "zero", "no", "off-padded", "yes", "true-upper", "one", "on"],
)
def test_env_bool_values(tmp_path: Path, text: str, expected: bool) -> None:
    s = load_settings(tmp_path, env={"MEMORYCLAW_PRIVACY_REDACTSECRETS": text})
    assert s.privacy.redact_secrets is expected
    s = load_settings(tmp_path, env={"MEMORYCLAW_GIT_AUTO_COMMIT": text})
    assert s.git.auto_commit is expected


@pytest.mark.parametrize(
    ("var", "value", "key", "expected"),
    [
        ("MEMORYCLAW_RETRIEVAL_MAXRESULTS", "lots", "retrieval.maxResults", "an integer"),
        ("MEMORYCLAW_RETRIEVAL_MAX_RESULTS", "5.0", "retrieval.maxResults", "an integer"),
        ("MEMORYCLAW_PRIVACY_REDACT_SECRETS", "maybe", "privacy.redactSecrets", "true or false"),
        ("MEMORYCLAW_LLM_TIMEOUTSECONDS", "soon", "llm.timeoutSeconds", "a number"),
        ("MEMORYCLAW_RETRIEVAL_FALLBACK", "bm25", "retrieval.fallback", "one of"),
    ],
    ids=["int-word", "int-float", "bool-word", "float-word", "literal"],
)
def test_bad_env_value_names_the_variable(
    tmp_path: Path, var: str, value: str, key: str, expected: str
) -> None:
    _write(tmp_path, "retrieval:\n  maxResults: 3\n")
    err = _config_error(tmp_path, {var: value})
    assert err.path == var
    assert err.key == key
    assert expected in err.problem
    assert var in str(err)


def test_out_of_range_env_value_names_the_variable(tmp_path: Path) -> None:
    _write(tmp_path, "retrieval:\n  budgetTokens: 500\n")
    err = _config_error(tmp_path, {"MEMORYCLAW_RETRIEVAL_MAXRESULTS": "-1"})
    assert err.key == "retrieval.maxResults"
    assert err.path == "MEMORYCLAW_RETRIEVAL_MAXRESULTS"


def test_env_does_not_hide_a_bad_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "retrieval:\n  maxResults: many\n")
    err = _config_error(tmp_path, {"MEMORYCLAW_RETRIEVAL_MAXRESULTS": "4"})
    assert err.path == str(path)


def test_explicit_env_mapping_isolates_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYCLAW_RETRIEVAL_MAXRESULTS", "42")
    assert load_settings(tmp_path, env={}).retrieval.max_results == 5
    assert load_settings(tmp_path).retrieval.max_results == 42


# ---------------------------------------------------------------------------- vault path


def test_resolve_vault_path_precedence(tmp_path: Path) -> None:
    env = {"MEMORYCLAW_VAULT": str(tmp_path / "from-env")}
    assert resolve_vault_path(tmp_path / "explicit", env) == tmp_path / "explicit"
    assert resolve_vault_path(str(tmp_path / "explicit"), env) == tmp_path / "explicit"
    assert resolve_vault_path(None, env) == tmp_path / "from-env"
    assert resolve_vault_path(None, {}) == Path(DEFAULT_VAULT).expanduser()
    assert resolve_vault_path(None, {}) == Path.home() / ".openclaw" / "workspace" / "memoryclaw"
    assert resolve_vault_path(None, {"MEMORYCLAW_VAULT": ""}) == Path(DEFAULT_VAULT).expanduser()


def test_resolve_vault_path_expands_user() -> None:
    got = resolve_vault_path("~/notes/vault", {})
    assert got == Path.home() / "notes" / "vault"
    assert resolve_vault_path(None, {"MEMORYCLAW_VAULT": "~/v"}) == Path.home() / "v"


@pytest.mark.parametrize(
    ("text", "env", "owners"),
    [
        ("scopes:\n  ownerIds: ['tg:1', 42]\n", {}, ("tg:1", "42")),
        ("", {"MEMORYCLAW_SCOPES_OWNER_IDS": "tg:1, wa:+4477"}, ("tg:1", "wa:+4477")),
        ("scopes:\n  ownerIds: []\n", {}, ()),
    ],
    ids=["yaml-list", "env-commas", "empty"],
)
def test_owner_ids_are_a_list_of_strings(
    tmp_path: Path, text: str, env: dict[str, str], owners: tuple[str, ...]
) -> None:
    (tmp_path / "memoryclaw.yaml").write_text(text, "utf-8")
    assert load_settings(tmp_path, env=env).scopes.owner_ids == owners


@pytest.mark.parametrize(
    "value", ["'tg:1'", "[true]", "[[a]]", "{a: 1}"], ids=["string", "bool", "nested", "map"]
)
def test_owner_ids_of_another_type_are_refused(tmp_path: Path, value: str) -> None:
    (tmp_path / "memoryclaw.yaml").write_text(f"scopes:\n  ownerIds: {value}\n", "utf-8")
    with pytest.raises(ConfigError, match=r"scopes\.ownerIds: expected a list of strings"):
        load_settings(tmp_path, env={})


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("", {}, 0.3),
        ("retrieval:\n  minScore: 0.35\n", {}, 0.35),
        ("retrieval:\n  minScore: 1\n", {}, 1.0),
        ("", {"MEMORYCLAW_RETRIEVAL_MIN_SCORE": "0.2"}, 0.2),
    ],
    ids=["default", "file", "integer-one", "environment"],
)
def test_min_score_is_a_share(text: str, env: dict[str, str], expected: float) -> None:
    raw = yaml.safe_load(text) if text else None
    assert settings_from_mapping(raw, env=env).retrieval.min_score == expected


@pytest.mark.parametrize("value", ["-0.1", "1.5", "'high'"], ids=["negative", "above-one", "word"])
def test_min_score_outside_zero_to_one_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping(yaml.safe_load(f"retrieval:\n  minScore: {value}\n"), env={})
    assert caught.value.key == "retrieval.minScore"


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("workingMemory:\n  maxTokens: 500\n  maxSessions: 3\n", {}, (500, 3)),
        ("", {"MEMORYCLAW_WORKINGMEMORY_MAXTOKENS": "120"}, (120, 256)),
        ("", {"MEMORYCLAW_WORKING_MEMORY_MAX_SESSIONS": "9"}, (2000, 9)),
    ],
    ids=["file", "env-squashed", "env-underscored"],
)
def test_working_memory_section(
    tmp_path: Path, text: str, env: dict[str, str], expected: tuple[int, int]
) -> None:
    _write(tmp_path, text)
    working = load_settings(tmp_path, env=env).working_memory
    assert (working.max_tokens, working.max_sessions) == expected


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("workingMemory:\n  maxTokens: 0\n", "workingMemory.maxTokens"),
        ("workingMemory:\n  maxSessions: -1\n", "workingMemory.maxSessions"),
        ("working_memory:\n  maxTokens: 10\n", "working_memory"),
    ],
    ids=["zero-tokens", "negative-sessions", "snake-case-section"],
)
def test_working_memory_section_refuses_bad_values(tmp_path: Path, text: str, key: str) -> None:
    _write(tmp_path, text)
    assert key in str(_config_error(tmp_path))


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"sync": {"deviceId": "Laptop!"}}, "sync.deviceId"),
        ({"sync": {"interval": -5}}, "sync.interval"),
        ({"sync": {"auto": "yes"}}, "sync.auto"),
    ],
    ids=["device-id-not-hex", "negative-interval", "auto-not-bool"],
)
def test_bad_sync_settings_name_the_key(raw: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping(raw, path="memoryclaw.yaml")
    assert caught.value.key == key and caught.value.path == "memoryclaw.yaml"


def test_sync_settings_default_and_parse() -> None:
    assert settings_from_mapping({}).sync.interval == 0
    parsed = settings_from_mapping({"sync": {"interval": 15, "auto": True, "deviceId": "ab12cd"}})
    assert (parsed.sync.interval, parsed.sync.auto, parsed.sync.device_id) == (15, True, "ab12cd")


def test_shared_vaults_take_paths_or_names_and_paths() -> None:
    raw = {"sharedVaults": ["../team-memory/", {"name": "acme", "path": "~/acme"}]}
    shared = settings_from_mapping(raw).shared_vaults
    assert [(v.name, v.path) for v in shared] == [
        ("team-memory", "../team-memory/"),
        ("acme", "~/acme"),
    ]
    assert shared[0].root(Path("/v/own")) == Path("/v/team-memory")


@pytest.mark.parametrize(
    ("value", "key", "problem"),
    [
        ("../team", "sharedVaults", "expected a list"),
        ([3], "sharedVaults[0]", "expected a path or {name, path}"),
        ([{"name": "x"}], "sharedVaults[0].path", "expected a folder path"),
        ([{"path": "x", "url": "y"}], "sharedVaults[0].url", "unknown key"),
        ([{"path": "x", "name": "a:b"}], "sharedVaults[0].name", "it labels results"),
        (["a/t", "b/t"], "sharedVaults[1].name", "'t' names two team vaults"),
    ],
    ids=["not-a-list", "not-a-path", "no-path", "unknown-key", "colon-in-name", "same-name"],
)
def test_bad_shared_vaults_name_the_entry(value: object, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping({"sharedVaults": value}, path="/v/memoryclaw.yaml")
    assert caught.value.key == key and problem in caught.value.problem


def _state_vault(tmp_path: Path, text: str) -> Path:
    vault = tmp_path / "v"
    (vault / ".memoryclaw").mkdir(parents=True)
    _write(vault, text)
    return vault


def test_an_invalid_config_from_another_device_falls_back_to_the_last_valid_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = _state_vault(tmp_path, "retrieval:\n  maxResults: 7\n")
    assert load_settings(vault, env={}).retrieval.max_results == 7
    _write(vault, "retrieval:\n  budgetTokens: lots\n")
    with caplog.at_level("WARNING", logger="memoryclaw.config"):
        settings = load_settings(vault, env={})
    assert settings.retrieval.max_results == 7
    [warning] = caplog.messages
    assert "retrieval.budgetTokens" in warning and "last valid" in warning
    assert "\n" not in warning


def test_an_invalid_config_with_no_valid_one_before_still_fails(tmp_path: Path) -> None:
    vault = _state_vault(tmp_path, "retrieval:\n  budgetTokens: lots\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(vault, env={})
    assert caught.value.key == "retrieval.budgetTokens"


def test_an_invalid_environment_variable_never_falls_back(tmp_path: Path) -> None:
    vault = _state_vault(tmp_path, "retrieval:\n  maxResults: 7\n")
    load_settings(vault, env={})
    with pytest.raises(ConfigError) as caught:
        load_settings(vault, env={"MEMORYCLAW_RETRIEVAL_MAXRESULTS": "many"})
    assert caught.value.path == "MEMORYCLAW_RETRIEVAL_MAXRESULTS"


def test_the_last_valid_copy_is_never_written_through_a_symlinked_state_folder(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / ".memoryclaw").symlink_to(elsewhere)
    _write(vault, "retrieval:\n  maxResults: 7\n")
    load_settings(vault, env={})
    assert list(elsewhere.iterdir()) == []


def test_config_file_problem_names_the_key_and_the_expected_type(tmp_path: Path) -> None:
    from memoryclaw.vault.configfile import config_file_problem

    vault = _state_vault(tmp_path, "retrieval:\n  budgetTokens: lots\n")
    problem = config_file_problem(vault)
    assert problem is not None and problem.key == "retrieval.budgetTokens"
    assert "expected an integer" in str(problem)
    _write(vault, "retrieval:\n  budgetTokens: 900\n")
    assert config_file_problem(vault) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [({}, 60.0), ({"sync": {"timeoutSeconds": 5}}, 5.0)],
    ids=["default", "set"],
)
def test_sync_timeout_seconds(raw: dict[str, Any], expected: float) -> None:
    assert settings_from_mapping(raw).sync.timeout_seconds == expected


def test_sync_timeout_seconds_must_be_positive() -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping({"sync": {"timeoutSeconds": 0}})
    assert caught.value.key == "sync.timeoutSeconds"


def _hold(vault: Path, before: str, after: str) -> list[str]:
    """Hold what a sync that changed memoryclaw.yaml from ``before`` to ``after`` would."""
    from memoryclaw.vault.configfile import file_settings, hold_changes

    _write(vault, before)
    old = file_settings(vault)
    _write(vault, after)
    new = file_settings(vault)
    assert old is not None and new is not None
    return hold_changes(vault, old, new)


def test_a_held_key_keeps_this_devices_value_while_the_file_holds_the_incoming_one(
    tmp_path: Path,
) -> None:
    vault = _state_vault(tmp_path, "")
    mine = "llm:\n  baseUrl: http://127.0.0.1:11434\nretrieval:\n  maxResults: 3\n"
    theirs = "llm:\n  baseUrl: http://10.6.6.6:1\nretrieval:\n  maxResults: 9\n"
    assert _hold(vault, mine, theirs) == ["llm.baseUrl"]
    settings = load_settings(vault, env={})
    assert settings.llm.base_url == "http://127.0.0.1:11434"
    assert settings.retrieval.max_results == 9  # not trust-relevant: applies at once


def test_a_later_sync_keeps_the_first_trusted_value(tmp_path: Path) -> None:
    from memoryclaw.vault.configfile import held_config

    vault = _state_vault(tmp_path, "")
    _hold(vault, "sync:\n  timeoutSeconds: 5\n", "sync:\n  timeoutSeconds: 1000\n")
    _hold(vault, "sync:\n  timeoutSeconds: 1000\n", "sync:\n  timeoutSeconds: 99999\n")
    assert held_config(vault)["sync.timeoutSeconds"] == {"trusted": 5.0, "incoming": 99999.0}
    assert load_settings(vault, env={}).sync.timeout_seconds == 5.0
    assert _hold(vault, "sync:\n  timeoutSeconds: 99999\n", "sync:\n  timeoutSeconds: 5\n") == []


def test_a_hand_edit_of_a_held_key_drops_the_hold(tmp_path: Path) -> None:
    from memoryclaw.vault.configfile import held_config

    vault = _state_vault(tmp_path, "")
    _hold(vault, "", "scopes:\n  ownerIds: ['tg:666']\n")
    assert load_settings(vault, env={}).scopes.owner_ids == ()
    _write(vault, "scopes:\n  ownerIds: ['tg:1']\n")
    assert load_settings(vault, env={}).scopes.owner_ids == ("tg:1",)
    assert held_config(vault) == {}


def test_accepting_held_keys_applies_them(tmp_path: Path) -> None:
    from memoryclaw.vault.configfile import accept_held

    vault = _state_vault(tmp_path, "")
    _hold(
        vault, "", "sharedVaults:\n  - {name: t, path: /tmp/t}\nprivacy:\n  redactSecrets: false\n"
    )
    held = load_settings(vault, env={})
    assert held.shared_vaults == () and held.privacy.redact_secrets
    assert accept_held(vault) == ["privacy.redactSecrets", "sharedVaults"]
    settings = load_settings(vault, env={})
    assert [v.name for v in settings.shared_vaults] == ["t"]
    assert not settings.privacy.redact_secrets


def test_the_environment_still_overrides_a_held_key(tmp_path: Path) -> None:
    vault = _state_vault(tmp_path, "")
    _hold(vault, "", "sync:\n  timeoutSeconds: 1000000\n")
    env = {"MEMORYCLAW_SYNC_TIMEOUTSECONDS": "7"}
    assert load_settings(vault, env=env).sync.timeout_seconds == 7.0
    assert load_settings(vault, env={}).sync.timeout_seconds == 60.0


def test_held_keys_apply_to_the_last_valid_copy_too(tmp_path: Path) -> None:
    vault = _state_vault(tmp_path, "")
    _hold(vault, "", "llm:\n  provider: ollama\n")
    assert load_settings(vault, env={}).llm.provider == "none"  # the copy holds ollama
    _write(vault, "retrieval:\n  budgetTokens: lots\n")
    assert load_settings(vault, env={}).llm.provider == "none"


def test_a_damaged_held_file_falls_back_to_defaults_never_to_the_incoming_value(
    tmp_path: Path,
) -> None:
    vault = _state_vault(tmp_path, "")
    _hold(vault, "", "llm:\n  baseUrl: http://10.6.6.6:1\n")
    held = vault / ".memoryclaw" / "config-held.json"
    held.write_text(held.read_text().replace('"http://127.0.0.1:11434"', "[1, 2]"))
    assert load_settings(vault, env={}).llm.base_url == "http://127.0.0.1:11434"
