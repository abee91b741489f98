"""YAML as the vault reads it: the flat fast path agrees with PyYAML; size, nesting and
alias limits hold."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryclaw.errors import ParseError
from memoryclaw.vault import safeyaml
from memoryclaw.vault.config import default_config_yaml
from memoryclaw.vault.episodes import (
    Episode,
    dump_episode,
    parse_episode,
)
from memoryclaw.vault.logformat import dump_log

MTIME = 1_700_000_000.75  # 2023-11-14T22:13:20Z
SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


SPEC_EPISODE = """\
---
id: ep-20250408-143210-email-john        # stable; derived from source when written by consolidation
timestamp: 2025-04-08T14:32:10Z
summary: "User asked to send a project update email to John; deadline April 10."
tags: [email, projectx, deadline]        # 3-7 lowercase tags
participants: [user, assistant]
confidence: high                         # low | medium | high
source: logs/processed/2025-04-08_14-30-02_telegram_raw.md
source_turns: [1, 12]                    # 1-based inclusive range of turns of the source log
session: agent:main:telegram:12345
entities: [John, projectX]
---
**Details:**
- Recipient: John <john@example.com>
- ...
"""


def _spec_episode() -> Episode:
    return parse_episode(SPEC_EPISODE, "episodes/2025-04-08_14-32-10_email-john.md", MTIME)


_TRICKY_SCALARS = st.sampled_from(
    [
        "yes",
        "No",
        "on",
        "OFF",
        "true",
        "False",
        "TRUE",
        "tRue",
        "y",
        "null",
        "Null",
        "NULL",
        "~",
        "0755",
        "0x1f",
        "1_000",
        "1:30",
        "12",
        "0",
        "-3",
        "3.5",
        "30.0",
        "1.",
        "+1.5",
        "00.5",
        ".5",
        "1.5e+3",
        "+5",
        "1.2.3",
        "<<",
        "=",
        ".inf",
        "1e3",
        "2025-04-08",
        "2025-04-08T14:32:10Z",
        "a: b",
        "a #b",
        "x#y",
        "-x",
        "?x",
        "'q'",
        "'it''s'",
        '"dq"',
        '"a\\\\b"',
        "@x",
        "`x",
        "%x",
        "!x",
        "&x",
        "*x",
        "|x",
        ">x",
        "[x]",
        "{x}",
        "a,b",
        "agent:main:cli:1",
        "café",
        "x ",
        " x",
        "",
    ]
)


_PLAUSIBLE_SCALARS = st.from_regex(r"[A-Za-z0-9'\"][A-Za-z0-9 ./@+:'\"-]{0,15}", fullmatch=True)


_JSON_VALUES = st.builds(
    json.dumps,
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=6,
    ),
    ensure_ascii=st.booleans(),
)
_FLAT_VALUES = st.one_of(
    _JSON_VALUES,
    _PLAUSIBLE_SCALARS,
    _PLAUSIBLE_SCALARS,
    st.lists(st.one_of(_PLAUSIBLE_SCALARS, _TRICKY_SCALARS), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
    _TRICKY_SCALARS,
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.lists(st.one_of(_TRICKY_SCALARS, st.text(max_size=6)), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
)


_FLAT_KEYS = st.one_of(
    st.sampled_from(["id", "tags", "yes", "null", "on", "a-b", "_x", "1a"]),
    st.from_regex(r"[a-z_][a-z0-9_-]{0,8}", fullmatch=True),
)


@given(st.lists(st.tuples(_FLAT_KEYS, _FLAT_VALUES), max_size=6))
@settings(max_examples=2000, deadline=None)
def test_flat_yaml_agrees_with_pyyaml(pairs: list[tuple[str, str]]) -> None:
    text = "\n".join(f"{key}: {value}" for key, value in pairs)
    fast = safeyaml.flat_yaml(text)
    if fast is None:
        return  # PyYAML decides
    parsed = yaml.load(text, Loader=safeyaml._loader())
    assert fast == parsed
    assert [type(v) for v in fast.values()] == [type(v) for v in parsed.values()]


def _typed(value: object) -> object:
    """``value`` with the type of every scalar in it, so ``1``, ``1.0`` and ``True`` differ."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value), value)


_FLOW_MAPPINGS = st.lists(
    st.tuples(_FLAT_KEYS, st.one_of(_PLAUSIBLE_SCALARS, _TRICKY_SCALARS)), max_size=3
).map(lambda pairs: "{" + ", ".join(f"{key}: {value}" for key, value in pairs) + "}")
_ENTRIES = st.tuples(
    _FLAT_KEYS,
    st.one_of(_FLAT_VALUES, _FLOW_MAPPINGS),
    st.sampled_from(["", "", "", " # a comment", "  #x", " #", "#x", " # x: y"]),
).map(lambda parts: f"{parts[0]}: {parts[1]}{parts[2]}")
_ASIDES = st.sampled_from(["", "# a comment", "#", "  # indented", "   ", "#: x"])


@st.composite
def _plain_documents(draw: st.DrawFn) -> str:
    """Top-level keys, sections of indented keys under a bare ``key:``, comments, blank
    lines; now and then an indentation or a bare key that YAML reads otherwise."""
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        lines += draw(st.lists(_ASIDES, max_size=1))
        if draw(st.booleans()):
            lines.append(draw(_ENTRIES))
            continue
        lines.append(f"{draw(_FLAT_KEYS)}:")
        indent = draw(st.integers(1, 4))
        for _ in range(draw(st.integers(0, 3))):
            lines += draw(st.lists(_ASIDES, max_size=1))
            shift = draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
            lines.append(" " * max(0, indent + shift) + draw(_ENTRIES))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


@given(_plain_documents())
@example("id: [0?]")
@settings(max_examples=3000, deadline=None)
def test_flat_yaml_reads_sections_as_pyyaml_does(text: str) -> None:
    fast = safeyaml.flat_yaml(text)
    if fast is None:
        return  # PyYAML decides
    assert _typed(fast) == _typed(yaml.load(text, Loader=safeyaml._loader()))
    try:
        safe = _typed(yaml.safe_load(text))
    except yaml.YAMLError:
        return  # "[0?]": libyaml, which the vault's loader uses, reads what PyYAML's own refuses
    if "datetime" not in repr(safe):  # the vault's loader alone leaves dates as text
        assert _typed(fast) == safe


def test_flat_yaml_reads_the_default_config() -> None:
    text = default_config_yaml()
    assert safeyaml.flat_yaml(text) is not None
    assert _typed(safeyaml.flat_yaml(text)) == _typed(yaml.safe_load(text))


def test_flat_yaml_reads_a_skill_s_metadata() -> None:
    text = (SAMPLE_VAULT / "skills" / "send-project-update" / "SKILL.md").read_text("utf-8")
    meta = text.split("---\n")[1]
    assert "metadata: {" in meta
    assert safeyaml.flat_yaml(meta) is not None
    assert _typed(safeyaml.flat_yaml(meta)) == _typed(yaml.load(meta, Loader=safeyaml._loader()))


def test_flat_yaml_takes_what_memoryclaw_writes() -> None:
    text = dump_episode(_spec_episode()).split("---\n")[1]
    assert safeyaml.flat_yaml(text) == yaml.load(text, Loader=safeyaml._loader())
    log_meta = {"id": "log-x", "session": "s", "processed": False, "closed": True}
    text = dump_log(log_meta, []).split("---\n")[1]
    assert safeyaml.flat_yaml(text) == yaml.load(text, Loader=safeyaml._loader()) == log_meta


@pytest.mark.parametrize(
    "text",
    [
        "id: 0:",
        "a: x: y",
        "yes: 1",
        "a: 0755",
        "a: [b, 'c, d']",
        "a: 'b # c'",
        "a: x\u2028y",
        "a:",
        "a:\n  b:\n    c: 1",
        "a:\n  b: 1\n   c: 2",
        "a:\nb: 1",
        "a: 1\n  b: 2",
        "  a: 1",
        "a:\n  b: 1\n- c",
        "a: {b: 1, c}",
        "a: {on: 1}",
        "a: {b: 1,c: 2}",
        "a: {b: 0x1f}",
        "a: <<",
        "a:\n\tb: 1",
        "a: 1.5e+3",
        'a: {"b": 1e+20}',
        'a: {"b": "c\\"d"}',
        'a: {"b":1}',
        "a: " + "[" * 100 + '"b"' + "]" * 100,
    ],
    ids=[
        "trailing-colon",
        "colon-space",
        "bool-key",
        "octal",
        "quoted-comma",
        "comment-in-quotes",
        "ls",
        "null",
        "third-level",
        "uneven-indent",
        "null-section",
        "continued-scalar",
        "indented-top",
        "sequence-after-section",
        "flow-key-without-value",
        "flow-bool-key",
        "flow-comma-without-space",
        "flow-hex",
        "merge",
        "tab",
        "exponent",
        "json-fraction",
        "json-escape",
        "json-not-as-dumped",
        "json-too-deep",
    ],
)
def test_flat_yaml_leaves_anything_unusual_to_pyyaml(text: str) -> None:
    assert safeyaml.flat_yaml(text) is None


def _alias_bomb(levels: int) -> str:
    """Each anchor a list of ten aliases to the one before: 10**levels strings in all."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    return "\n".join(lines) + f"\ntags: *a{levels - 1}\n"


def test_alias_bomb_is_refused_without_expanding_it() -> None:
    text = _alias_bomb(9)
    assert len(text) < 1024
    with pytest.raises(ParseError, match="aliases expand to over 10,000 values"):
        parse_episode(f"---\nsummary: s\n{text}---\n", "episodes/bomb.md", 0)


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(ParseError, match="aliases expand"):
        safeyaml.load_yaml("a: &a [x, *a]\n", "x.yaml")


def test_modest_aliases_still_load() -> None:
    assert safeyaml.load_yaml(_alias_bomb(3), "x.yaml")["tags"][9][9] == ["lol"] * 10


def test_yaml_over_the_size_limit_is_refused() -> None:
    text = "k: |\n" + "  text\n" * (safeyaml.MAX_YAML_BYTES // 7 + 1)
    with pytest.raises(ParseError, match="KiB, over the 1024 KiB limit"):
        safeyaml.load_yaml(text, "x.yaml")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("k:\n" + "".join(" " * i + "- x\n" for i in range(1, 80)), 64),
        ("a: 1\nb:\n" + "  - " * 70 + "x\n", 3),
        ("? " * 70 + "x\n", 1),
    ],
    ids=["indentation", "compact-sequence", "complex-keys"],
)
def test_block_nesting_is_refused_at_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError, match="nested deeper than 64 levels") as caught:
        safeyaml.load_yaml(text, "x.yaml", first_line=1)
    assert caught.value.line == line


_NESTED = st.recursive(
    st.text("abc", min_size=1, max_size=3),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=2)
        | st.dictionaries(st.text("xyz", min_size=1, max_size=2), inner, min_size=1, max_size=2)
    ),
    max_leaves=80,
)


@given(_NESTED)
@settings(max_examples=150, deadline=None)
def test_block_yaml_within_the_nesting_limit_reads_back(value: object) -> None:
    text = yaml.safe_dump({"k": value}, default_flow_style=False)
    assert safeyaml.load_yaml(text, "x.yaml") == {"k": value}


@given(st.lists(st.sampled_from(["- ", "? ", ": ", "  ", " ", "a", "\n", "[", "{"]), max_size=400))
@settings(max_examples=300, deadline=None)
def test_any_mix_of_indentation_and_indicators_parses_or_is_refused(parts: list[str]) -> None:
    text = "".join(parts) * 100  # up to ~40,000 levels: would crash libyaml unguarded
    with contextlib.suppress(ParseError):
        safeyaml.load_yaml(text, "x.yaml")


@pytest.mark.parametrize(
    ("text", "line"),
    [("summary: s\ntags:\n\t- sofa\n", 4), ("\tsummary: s\n", 2)],
    ids=["list-item", "key"],
)
def test_a_line_indented_with_a_tab_is_named_as_such(text: str, line: int) -> None:
    """YAML refuses a tab where it indents; the error says that is the slip, at its line."""
    with pytest.raises(ParseError) as caught:
        safeyaml.load_yaml(text, "episodes/sofa.md", first_line=2, what="YAML frontmatter")
    assert caught.value.line == line
    assert "indented with a tab" in str(caught.value), caught.value


def test_a_yaml_error_on_a_line_without_a_tab_says_nothing_of_tabs() -> None:
    with pytest.raises(ParseError) as caught:
        safeyaml.load_yaml("tags: [a\n", "episodes/x.md", first_line=2)
    assert "tab" not in str(caught.value)
