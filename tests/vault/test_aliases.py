"""``aliases.yaml``: synonym groups read both ways, and their limits (SPEC section 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryclaw.errors import ParseError
from memoryclaw.vault import aliases
from memoryclaw.vault.aliases import parse_aliases

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


def _parse_error(call, *args) -> ParseError:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        call(*args)
    return info.value


def test_aliases_both_directions() -> None:
    aliases = parse_aliases("marketing: [campaign-team, Campaign]\n", "semantic/aliases.yaml")
    assert aliases == {
        "campaign": ("campaign-team", "marketing"),
        "campaign-team": ("campaign", "marketing"),
        "marketing": ("campaign", "campaign-team"),
    }


def test_aliases_groups_sharing_a_term_merge_for_that_term() -> None:
    aliases = parse_aliases("john: [jd]\njohnny: [john]\n", "a.yaml")
    assert aliases["john"] == ("jd", "johnny")
    assert aliases["jd"] == ("john",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("john: johnny\n", {"john": ("johnny",), "johnny": ("john",)}),
        ("dad:\n", {"dad": ()}),
        ("dad: ~\nmom: [mum]\n", {"dad": (), "mom": ("mum",), "mum": ("mom",)}),
        ("", {}),
        ("# only a comment\n", {}),
        ("px: [2, ' ']\n", {"2": ("px",), "px": ("2",)}),
    ],
    ids=["string-value", "null-value", "null-and-list", "empty", "comment-only", "odd-items"],
)
def test_aliases_value_forms(text: str, expected: dict[str, tuple[str, ...]]) -> None:
    assert parse_aliases(text, "semantic/aliases.yaml") == expected


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: [b]\nb: c: d\n", 2),
        ("a: [b]\ne: [f\nc: [d]\n", 3),
        ("a:\n - b\n c: d\n", 3),
        ("\tx: y\n", 1),
    ],
    ids=["mapping-in-scalar", "unclosed-flow-mid-file", "bad-indent", "tab"],
)
def test_aliases_invalid_yaml_reports_line(text: str, line: int) -> None:
    err = _parse_error(parse_aliases, text, "semantic/aliases.yaml")
    assert err.line == line
    assert "invalid YAML" in err.reason


def test_aliases_unclosed_flow_at_end_blames_line_inside_file() -> None:
    err = _parse_error(parse_aliases, "a: [b]\nc: [d]\ne: [f\n", "semantic/aliases.yaml")
    assert err.line == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [("- a\n- b\n", "list"), ("just words\n", "str"), ("a: {b: c}\n", "a:")],
    ids=["top-level-list", "top-level-scalar", "mapping-value"],
)
def test_aliases_wrong_shape(text: str, needle: str) -> None:
    err = _parse_error(parse_aliases, text, "semantic/aliases.yaml")
    assert needle in err.reason


def test_sample_vault_aliases() -> None:
    text = (SAMPLE_VAULT / "semantic" / "aliases.yaml").read_text(encoding="utf-8")
    aliases = parse_aliases(text, "semantic/aliases.yaml")
    assert aliases["mum"] == ("mom", "mother")
    assert "projectx" in aliases["px"]
    assert aliases["johnny"] == ("jd", "john")


def test_synonym_groups_are_capped() -> None:
    group = ", ".join(f"s{i}" for i in range(aliases.MAX_SYNONYMS))
    assert len(parse_aliases(f"big: [{group}]\n", "a.yaml")["big"]) == aliases.MAX_SYNONYMS
    with pytest.raises(ParseError, match="big: more than 100 synonyms"):
        parse_aliases(f"big: [{group}, one-more]\n", "a.yaml")
    spread = "".join(f"g{i}: [shared]\n" for i in range(aliases.MAX_SYNONYMS + 1))
    with pytest.raises(ParseError, match="shared: more than 100 synonyms"):
        parse_aliases(spread, "a.yaml")
