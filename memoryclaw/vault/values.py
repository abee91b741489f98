"""The values memories hold: what kind a value plainly is (email, url, date, phone), when two
values are the same (:func:`value_key`), and the shape tokens that let a query for "her
number" find the line that holds one.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
URL_RE = re.compile(r"^https?://\S+$")
PHONE_RE = re.compile(r"^\+?[\d\s().-]{7,20}$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


# Punctuation that carries meaning in a value ("C#", "50%", "R&D") is kept; any other
# punctuation only separates words, as whitespace does.
_KEPT_PUNCTUATION = frozenset("#%&")


def _separator(char: str) -> bool:
    return char.isspace() or (
        unicodedata.category(char).startswith("P") and char not in _KEPT_PUNCTUATION
    )


def normalise_value(text: str) -> str:
    """A value as compared for duplicates: case folded (NFKC), and every run of whitespace
    and separating punctuation one space, none at either end.

    ``Dr. Lena  Hoffman`` and ``dr lena hoffman``, ``+44 7700-900214`` and ``+44 7700 900214``
    are the same value; ``C#`` and ``C``, ``50%`` and ``50`` are not.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # ASCII by table, the rest character by character: episode fingerprints run this over
    # every detail line a consolidation writes.
    spaced = _NON_ASCII_RE.sub(_spaced, folded.translate(_ASCII_SEPARATORS))
    return " ".join(spaced.split())


_ASCII_SEPARATORS = {code: " " for code in range(128) if _separator(chr(code))}
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def _spaced(match: re.Match[str]) -> str:
    char = match.group()
    return " " if _separator(char) else char


def value_key(text: str) -> str:
    """What two values of one fact must share to be the same value (a near-duplicate).

    Addresses (email, url) compare whole, up to case and trailing sentence punctuation, since
    ``j.smith@x.com`` and ``j-smith@x.com`` are different people; phone numbers by their
    digits (and a leading ``+``); anything else by :func:`normalise_value`.
    """
    trimmed = unicodedata.normalize("NFKC", text).strip().rstrip(".,;:!?").strip()
    kind = value_kind(trimmed)
    if kind in {"email", "url"}:
        return f"{kind}:{trimmed.casefold()}"
    if kind == "phone":
        return "phone:" + ("+" if trimmed.startswith("+") else "") + re.sub(r"\D", "", trimmed)
    return normalise_value(text)


def value_kind(value: str) -> str | None:
    """``email``, ``url``, ``date`` or ``phone`` when the value plainly is one, else None."""
    text = value.strip()
    if EMAIL_RE.match(text):
        return "email"
    if URL_RE.match(text):
        return "url"
    if DATE_RE.match(text):
        return "date"
    if PHONE_RE.match(text) and sum(ch.isdigit() for ch in text) >= 7:
        return "phone"
    return None


# What a question calls a kind of value a text holds without naming it: "what's my dentist's
# number?" asks for the phone number on the line "- Dentist: Dr. Lena Hoffman, 020 7946 0321".
# The index stores a token per kind found (``shapephone``), never shown, and a query using
# one of the kind's words searches for its token as well (shape_terms).
_SHAPE_WORDS = {
    "phone": "phone number call telephone mobile tel",
    "email": "email mail",
    "url": "website site link url web homepage",
    "date": "date birthday born birth",
    "address": "address live lives street postcode",
    # kinds only a fact's field names, never the look of a value: "how old is she?" asks for
    # "- Mia (age): 6", "what do I do for a living?" for "- User (job): nurse"
    "age": "age old aged",
    "job": "job occupation profession career living",
    "income": "income salary earn earns earning earnings wage wages",
    # what a fact's field files it under, where a question names the category, not the
    # thing: "what do I like to drink?" asks for "- Coffee: flat white", "what can't I
    # eat?" for "- Allergy: cashews" (a field of a later kind as well: the keyword's kind is
    # the last it names, the most particular)
    "food": "food foods eat eating diet dietary meal meals cuisine allergy allergies",
    "drink": "drink drinks drinking beverage beverages",
    "pet": "pet pets",
    "allergy": "allergy allergies allergic intolerance intolerances intolerant",
}
# The things a field files under a category, which a question names for itself alone: "what
# wine do I like?" asks for the wine, not for every drink.
_FIELD_WORDS = {"drink": "coffee tea beer wine", "pet": "dog dogs cat cats puppy kitten"}
# A field's last word that names a kind only after a word of it ("Phone number", "Email
# address") or alone ("Number"): a "Passport number" is no phone number.
_QUALIFIED_HEADS = {"number": False, "numbers": False, "address": True}  # head: kind alone?
SHAPE_PREFIX = "shape"
# Words that ask how to get hold of someone, which any way of reaching them on file answers:
# "how do I reach Ana?" asks for "- Ana: ana@example.org", "how can I contact Erik?" for his
# phone number, whichever is written down (a kind's own word, "Ana's email", asks for that one).
_CONTACT_WORDS = frozenset("contact contacting reach reaching touch".split())
_CONTACT_KINDS = frozenset(SHAPE_PREFIX + kind for kind in ("phone", "email", "address"))
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"  # Sept.


# Compiled on first use, as the other patterns marked so: a fresh process (a recall, a logged
# turn) pays for every pattern compiled at import, and most serve a question it is not asked.
@functools.cache
def _shape_res() -> dict[str, re.Pattern[str]]:
    return {
        "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
        "url": re.compile(r"\bhttps?://\S+|\bwww\.[\w-]+\.\S+", re.IGNORECASE),
        # seven digits or more, in groups a phone number is written in
        "phone": re.compile(r"(?<![\w-])\+?\(?\d(?:[\d().-]| (?=[\d(]))*\d(?![\w-])"),
        "date": re.compile(
            rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH} \d{{4}}\b"
            rf"|\b{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b",
            re.IGNORECASE,
        ),
        # a house number and a street, or a UK postcode or a US state and ZIP
        "address": re.compile(
            r"\b\d+[a-z]? (?:[A-Z][\w'-]* ){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr"
            r"|Boulevard|Blvd|Way|Place|Pl|Court|Ct|Square|Sq|Terrace|Close|Crescent|Grove"
            r"|Gardens|Row|Hill|Park|Parade|Mews)\b"
            r"|\b[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}\b|\b[A-Z]{2} \d{5}(?:-\d{4})?\b"
        ),
    }


# Every kind of value holds an "@", a web address or a digit; most lines hold none, and
# looking for those first keeps indexing fast (each kind's pattern would scan the whole line).
@functools.cache
def _value_hint_re() -> re.Pattern[str]:
    return re.compile(r"@|https?:|www\.|\d", re.IGNORECASE)


_HINT_OF_KIND = {"email": "@", "url": "web", "phone": "digit", "date": "digit", "address": "digit"}
# Every kind's token: what a fact matches besides the words of a query.
SHAPE_TOKENS = frozenset(SHAPE_PREFIX + kind for kind in _SHAPE_WORDS)
# The tokens of the kinds only a field names (no look of a value, so no hint): no line of an
# episode holds one (see shape_tokens), only a raw log's turn (every one of which a search
# reads) that says who its speaker is.
FIELD_SHAPES = frozenset(SHAPE_PREFIX + kind for kind in _SHAPE_WORDS if kind not in _HINT_OF_KIND)


def shape_tokens(text: str, field: str = "") -> str:
    """The tokens of the kinds of value in ``text`` (a phone number, an email, a URL, a date,
    an address) or that its ``field`` names: ``"Dr. Lena Hoffman, 020 7946 0321"`` ->
    ``"shapephone"``; "" when there is none."""
    kinds = _field_kinds(field)
    hints = {
        "@" if hint == "@" else "digit" if hint.isdigit() else "web"
        for hint in _value_hint_re().findall(text)
    }
    for kind, pattern in _shape_res().items():
        if _HINT_OF_KIND[kind] not in hints:
            continue
        if kind == "phone":
            found = any(_is_phone(m.group(0)) for m in pattern.finditer(text))
        else:
            found = pattern.search(text) is not None
        if found and kind not in kinds:
            kinds.append(kind)
    return " ".join(SHAPE_PREFIX + kind for kind in kinds)


def _field_kinds(field: str) -> list[str]:
    """The kinds a fact's field (or label) names by its head, its last word ("Favourite
    coffee", "Work email"; "Date of birth" before its "of"); a word before a head such as
    "number" or "address" names it first ("Email address"); none for somebody's field ("Dog's
    age" answers no "how old am I?")."""
    words = field.lower().partition(" of ")[0].split()
    if not words or any(w.endswith(("'s", "’s")) for w in words):
        return []
    head = words[-1]
    alone = _QUALIFIED_HEADS.get(head)
    if alone is not None and len(words) > 1:
        before = _word_kinds(words[-2])
        if before or not alone:
            return before
    return _word_kinds(head)


def _word_kinds(word: str) -> list[str]:
    """The kinds one word of a field names."""
    return [
        kind
        for kind, words in _SHAPE_WORDS.items()
        if word in words.split() or word in _FIELD_WORDS.get(kind, "").split()
    ]


# Words that name a kind only in a phrase of the question: "how old am I?" asks for an age,
# "where's my old laptop?" does not; "what do I do for a living?" asks for a job, "what
# colour is my living room?" does not.
_SHAPE_PHRASES = {
    "old": re.compile(r"\bhow old\b|\byears? old\b", re.IGNORECASE),
    "living": re.compile(r"\bfor a living\b", re.IGNORECASE),
}


def shape_terms(keywords: Iterable[str], query: str | None = None) -> dict[str, str]:
    """The query's ``keywords`` that name a kind of value (a plural read as its singular),
    each with that kind's token: ``["dentist", "number"]`` -> ``{"number": "shapephone"}``.
    With the ``query`` they come from, a word that names a kind only in a phrase
    (``_SHAPE_PHRASES``) names it only there."""
    out = {}
    for keyword in keywords:
        phrase = _SHAPE_PHRASES.get(keyword)
        if query is not None and phrase is not None and not phrase.search(query):
            continue
        for kind, words in _SHAPE_WORDS.items():
            if keyword in words.split() or keyword.removesuffix("s") in words.split():
                out[keyword] = SHAPE_PREFIX + kind
    return out


def reaches(keyword: str, value: str, field: str = "") -> bool:
    """Whether ``keyword`` asks how to get hold of someone (``_CONTACT_WORDS``) and ``value``
    (or its ``field``) is a way to: a phone number, an email or an address."""
    return keyword in _CONTACT_WORDS and not _CONTACT_KINDS.isdisjoint(
        shape_tokens(value, field).split()
    )


def _is_phone(text: str) -> bool:
    """Whether a run of digits reads as a phone number: 7 to 15 digits, not a date or time,
    a range of years or an amount (without a leading ``+``, ``0`` or ``(`` it needs three
    groups of digits)."""
    digits = sum(ch.isdigit() for ch in text)
    if not 7 <= digits <= 15 or DATE_RE.match(text.strip("()")) or "." in text:
        return False
    groups = [group for group in re.split(r"[\s().-]+", text) if group]
    return text.startswith(("+", "0", "(")) or len(groups) >= 3
