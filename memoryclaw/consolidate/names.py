"""Which words of conversation text name someone or something: the common, calendar and verb
words that never do, titles and units, and the patterns of names, project codes and emails.

The fact extractor (:mod:`memoryclaw.consolidate.extraction`) and the summarizer read names
with these same words and rules, kept here once.
"""

from __future__ import annotations

import re

from ..vault.words import SMALL_TALK, STOPWORDS, TITLE_ALT


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Too common in conversation to tag an episode, or to be a name when capitalised.
GENERIC = SMALL_TALK | _words(
    """really lot lots much many well way time times day days going gonna wanna gotta want
    wanted need make made making look looks looking feel feeling felt think thought sounds
    sound hope bit kind kinda pretty totally always never still even back new one two keep let
    done come coming found give try trying tried work working use using mean right fun amazing
    wonderful fantastic super true special definitely absolutely actually maybe probably
    everything nothing someone everyone stuff big little small best better bad today tomorrow
    yesterday now ago ready able glad happy love loved loving lovely sweet agree people life
    lately recently last next first week year month redacted let's i'd incredible exciting
    excited cute beautiful proud guess course though sorry wish means tough dear utc btw since
    others around together long hear heard helps helping seeing seen taking getting bring
    staying stay wait join met happened important difference hard motivated appreciate
    favorite positive inspiring inspired impact congrats interesting lucky strong real crazy
    busy must ones part cause reminds pushing blast awesome words ideas idea every thing
    things pic pics enjoy talk feels makes start ask another different huge worth gorgeous"""
)
MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
CALENDAR = frozenset(MONTHS) | _words(
    "jan feb mar apr jun jul aug sep sept oct nov dec"
    " monday tuesday wednesday thursday friday saturday sunday mon tue tues wed weds thu thurs"
    " fri sat"
)
# Verbs only: never a tag.  REQUEST_VERBS adds verbs that are nouns too ("email", "book").
VERBS = _words(
    """add arrange buy cancel change check compare create delete explain fetch find fix get give
    help look lookup make move pay prepare put query read remind remember remove renew reply
    reschedule run save schedule send set share show summarise summarize track translate write"""
)
REQUEST_VERBS = VERBS | _words("book call draft email list note order plan search text update")
NOT_NAMES = REQUEST_VERBS | _words(
    "email e-mail phone number mobile contact address new work home please info support admin"
    " noreply team sales"
)
# A title is part of the name after it ("Dr. Okafor"): its dot ends no sentence, and alone
# it names no one.
TITLES = _words("dr mr mrs ms mx prof st rev fr sr jr capt lt sgt col gen hon")
# Currency codes and units read as capitalised words ("120 EUR", "3 PM"): never a name.
UNITS = _words(
    """eur usd gbp jpy chf cad aud nzd sek nok dkk pln czk huf inr cny rmb hkd sgd zar brl mxn
    rub try krw am pm utc gmt cet cest est edt pst pdt bst kg km mb gb tb kb"""
)
EMAIL_PATTERN = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
CODE_PATTERN = r"\b[A-Za-z][A-Za-z-]*\d[\w-]*|\b[a-z]+[A-Z]\w*"  # projectX, Q3, BX4TQ7
# A capitalised word, with the titles and initials before it: "Dr. J. Okafor"
_NAME_WORD = rf"(?:(?:{TITLE_ALT}|[A-Z])\.[ \t]+(?=[A-Z]))*[A-Z][\w'’-]*"
CAPS_PATTERN = rf"\b{_NAME_WORD}(?:(?:[ \t]+(?:of|the|de|da|van|von|del))*[ \t]+{_NAME_WORD})*"
CONNECTORS = _words("of the de da van von del")  # inside a name: "Lord of the Rings"
_CAPS_RE = re.compile(CAPS_PATTERN)
_AFTER_NUMBER_RE = re.compile(r"\d\s*$")


def name_ok(word: str) -> bool:
    """Whether a capitalised word can be part of a name: no grammar, calendar or common word,
    no currency or unit ("EUR", "PM")."""
    lower = word.lower()
    unit = word.isupper() and lower in UNITS
    return len(word) > 1 and not (
        unit or lower in STOPWORDS or lower in GENERIC or lower in CALENDAR
    )


def is_title(word: str) -> bool:
    """Whether a word is a title that belongs to the name after it: "Dr.", "Mrs"."""
    return word.rstrip(".").lower() in TITLES


def titled(words: list[str]) -> list[str]:
    """A name's words, none when they are only titles ("Mr" of "Mr and Mrs Smith")."""
    return [] if all(map(is_title, words)) else words


_BARE_RE = re.compile(r"['’]s?$|-+$")


def bare_word(word: str) -> str:
    """The word without a possessive or trailing hyphens: "Sarah's" -> "Sarah"."""
    return _BARE_RE.sub("", word)


def local_name(address: str) -> str:
    """An email address's first name-like part: "john.smith@x.com" -> "john"."""
    return re.split(r"[.+_@-]", address)[0]


def name_runs(text: str, *, sentence: bool = False) -> list[str]:
    """Capitalised runs that could be a person or project (no verbs, months or grammar).  A
    sentence's first word counts only when possessive: "Sarah's email", not "Report due"."""
    return [name for _, _, name in name_spans(text, sentence=sentence)]


def name_spans(text: str, *, sentence: bool = False) -> list[tuple[int, int, str]]:
    """:func:`name_runs` with where each run starts and ends in ``text``."""
    out, lead = [], len(text) - len(text.lstrip("\"'“‘(*-•#> "))
    for match in _CAPS_RE.finditer(text):
        words = match.group(0).split()
        opening = sentence and match.start() == lead
        if opening and not (re.search(r"['’]s$", words[0]) or is_title(words[0])):
            words = words[1:]
        if _AFTER_NUMBER_RE.search(text, 0, match.start()) and words[0].isupper():
            words = words[1:]  # "120 EUR", "3 PM": a unit
        words = [w for w in map(bare_word, words) if name_ok(w) and w.lower() not in NOT_NAMES]
        if words := titled(words):
            out.append((match.start(), match.end(), " ".join(words)))
    return out


# What follows a verb in "-ing" when it says how something goes, not what it is: "my writing
# is consuming me", "my hard work is paying off"; and the adjectives before "of" that
# describe: "my cork board is full of quotes".  ("my hobby is painting landscapes" names one.)
_GOING = _words("me us him her them it off up out well better worse away on over down along")
_DESCRIBING = _words("full proud tired sick afraid scared fond aware capable short")


def describes_a_state(value: str) -> bool:
    """Whether the value of "my X is VALUE" says how X is or goes rather than what it is."""
    words = value.lower().split()
    if len(words) < 2:
        return False
    going = words[0].endswith("ing") and len(words[0]) > 4 and words[1] in _GOING
    return going or (words[0] in _DESCRIBING and words[1] == "of")


_POINTING = _words("it them this these those that him her")
# How an event went, not what it was (and the words around): "had a great time", "had a
# blast", "met up again".
_HOW_IT_WENT = STOPWORDS | _words(
    "great good nice fun amazing awesome wonderful fantastic lovely blast time times together"
)


def names_something(words: str) -> bool:
    """Whether what follows an event's verb names what happened: "met up" and "had a great
    time" do not, nor "painted it" (what "it" was is in an earlier sentence)."""
    said = words.lower().split()
    if not said or said[0] in _POINTING:
        return False
    return any(w.strip(".,!?'’\"") not in _HOW_IT_WENT for w in said)
