"""Fact values: when two values are one, and how they are normalised."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memoryclaw.vault import values
from memoryclaw.vault.values import normalise_value, shape_tokens, value_key, value_kind


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Dr. Lena  Hoffman", "dr lena hoffman", True),
        ("Lisbon.", "lisbon", True),
        ("Café", "CAFÉ", True),
        ("+44 7700-900214", "+44 (7700) 900214", True),
        ("Sarah@Example.com.", "sarah@example.com", True),
        ("j.smith@x.com", "j-smith@x.com", False),
        ("https://x.example/a", "https://x.example/b", False),
        ("C#", "C", False),
        ("50%", "50", False),
        ("blue", "bleu", False),
    ],
    ids=[
        "punctuation-case-space",
        "trailing-full-stop",
        "unicode-case",
        "phone-separators",
        "email-case",
        "emails-differing-by-punctuation",
        "urls",
        "meaningful-hash",
        "meaningful-percent",
        "different-words",
    ],
)
def test_value_key_says_which_values_are_one(a: str, b: str, same: bool) -> None:
    assert (value_key(a) == value_key(b)) is same


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(_text)
def test_property_normalising_is_idempotent_and_ignores_case_and_spacing(text: str) -> None:
    once = normalise_value(text)
    assert normalise_value(once) == once
    assert normalise_value(f"  {text.upper()} \t") == normalise_value(text.upper())
    assert "  " not in once and once == once.strip()
    assert value_key(value_key(text)) == value_key(text) or value_key(text).startswith(
        ("email:", "url:", "phone:")
    )


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_property_normalising_separates_at_every_space_and_punctuation_mark(text: str) -> None:
    """The fast path (a table for ASCII) agrees with the rule, character by character."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    by_rule = "".join(
        " "
        if char.isspace() or (unicodedata.category(char).startswith("P") and char not in "#%&")
        else char
        for char in folded
    )
    assert normalise_value(text) == " ".join(by_rule.split())


@given(st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=6), st.data())
def test_property_separating_punctuation_does_not_make_a_new_value(
    words: list[str], data: st.DataObject
) -> None:
    gaps = [data.draw(st.sampled_from([" ", ", ", " - ", ". ", "  ", "; "])) for _ in words[1:]]
    spaced = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:]))
    end = data.draw(st.sampled_from(["", ".", "!", "?"]))
    assert normalise_value(spaced + end) == " ".join(words)
    # Digit groups joined by spaces can read as a phone number, which keys by its digits; the
    # same groups joined by ";" are a list of numbers.  The rule is for plain words.
    assume(value_kind(" ".join(words)) is None)
    assert value_key(spaced.title() + end) == value_key(" ".join(words))


def _every_pattern_searched(text: str) -> set[str]:
    """The kinds of value in ``text`` found by searching it with every kind's pattern."""
    found = set()
    for kind, pattern in values._shape_res().items():
        if kind == "phone":
            if any(values._is_phone(m.group(0)) for m in pattern.finditer(text)):
                found.add(kind)
        elif pattern.search(text):
            found.add(kind)
    return found


_VALUE_PIECES = st.sampled_from(
    [
        "@",
        "a@b.io",
        "http://x.org/a",
        "HTTPS://Y.COM",
        "www.site.io",
        "WWW.A.B",
        "020 7946 0321",
        "+44 20 7946",
        "12 Baker Street",
        "SW1A 1AA",
        "CA 94105",
        "3 May 2024",
        "2024-05-03",
        "May 3, 2024",
        "1/2/24",
        "٣",
        " ",
        "-",
        ".",
        "Lena",
        "call",
        "x",
    ]
)


@given(st.lists(_VALUE_PIECES | st.text(max_size=6), max_size=12))
def test_property_looking_for_hints_first_finds_the_same_kinds(pieces: list[str]) -> None:
    """Skipping the patterns whose "@", web address or digit a line lacks changes nothing."""
    text = "".join(pieces)
    assert set(filter(None, shape_tokens(text).split())) == {
        values.SHAPE_PREFIX + kind for kind in _every_pattern_searched(text)
    }
