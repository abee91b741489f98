"""What a speaker says of their own life, in passing: pets, family, job, home, purchases,
hobbies, and the dated events the summarizer annotates ("I went to a support group yesterday
(2023-05-07)").  Read for :mod:`.extraction`, whose other rules (``my X is Y``, tastes,
contacts, deadlines) share :func:`clean_value` with these.
"""

from __future__ import annotations

import re

from ..vault.profile import PLACE_WORD
from .names import GENERIC, NOT_NAMES, name_ok, names_something

PETS = "dog|cat|puppy|kitten|pup|bird|parrot|hamster|rabbit|bunny|horse|turtle|fish|snake"
KIN = (
    "wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|son|daughter|mother|mom|mum|father"
    "|dad|brother|sister|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew"
    "|best friend|roommate|boss"
)
_NAME = r"(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
# "Porto", "New York", "Rio de Janeiro"; not the "la" of "Porto last week"
_PLACE = rf"(?P<value>{PLACE_WORD}(?: (?:{PLACE_WORD}|(?:of|de|la)(?![\w'’-])))*)"
_AFTER_THING = re.compile(
    r"(?:^|\s+)(?:yesterday|today|tonight|tomorrow|last|this|next|recently|lately|\d|on|at|for|with|"
    r"because|and|but|so|from|since|when)\b.*$",
    re.IGNORECASE,
)
# A thing bought is no article alone, nor a word pointing back ("I bought it", "signed up
# for it"), nor a word cut at its slash ("f" of "f/1.8")
_ARTICLES = frozenset("a an the some my new first it them this that these those".split())
_CUT_WORD_RE = re.compile(r"[/.$'’-][^\W_]")
_TRAILING_WHEN = re.compile(
    r"\s+(?:the day before yesterday|yesterday|today|tonight|tomorrow"
    r"|(?:last|this|next|this past|this coming) \w+|\S+ (?:days?|weeks?|months?|years?) ago"
    r"|in \S+ (?:days?|weeks?|months?|years?))\s*$",
    re.IGNORECASE,
)
_LIFE_RES = (
    # "my dog Max", "our cat named Bailey", "a puppy called Luna"
    (
        "pet",
        re.compile(
            rf"\b(?:[Mm]y|[Oo]ur|[Aa]n?|new|another) (?P<kind>{PETS})(?:,)? (?:(?:named|called) )?"
            + _NAME
            + r"\b"
        ),
    ),
    # "my sister Anna", "my husband, Tom,"
    ("kin", re.compile(rf"\b[Mm]y (?P<kind>{KIN})(?:,)? (?:(?:named|called) )?" + _NAME + r"\b")),
    # "I work as a nurse at St Mary's", "I'm working at Google", "I got a job at the bank";
    # not how one works: "as a team" (together), "as fast as I can" (a comparison, no article)
    (
        "job",
        re.compile(
            r"(?i)\bI(?:['’]m| am)? (?:now |currently |still |just )?(?:work(?:ing|ed)?|got a job|"
            r"started (?:a new job|working)) as (?!(?:an? |the )?(?:team|group|unit|pair|couple"
            r"|family|whole)\b(?! (?!(?:at|for|and|but|so|on|in|with|to)\b)[a-z]))"
            r"(?:an? |the |(?!\w+ as\b))(?P<value>[a-z][\w -]{2,40}?)"
            r"(?= (?:at|for|and|but|since|so) |[.,;!]|$)"
        ),
    ),
    (
        "employer",
        re.compile(
            r"\bI(?:['’]m| am|['’]ve been| have been)? (?:now |currently |still |just )?"
            r"(?:work(?:ing|ed)?(?: as [\w -]+?)?|"
            r"got a job|started (?:a new job|working)) (?:at|for) (?P<value>[A-Z][\w&'’.-]*"
            r"(?: [A-Z][\w&'’.-]*){0,3})"
        ),
    ),
    # "I live in Boston", "we moved to Denver", "I moved here from Sweden"
    ("lives in", re.compile(r"\b(?:I|[Ww]e) (?:still |now )?live in " + _PLACE)),
    (
        "moved",
        re.compile(
            r"\b(?:I|[Ww]e) (?:just |recently )?(?:moved|relocated) (?:here )?"
            r"(?P<dir>to|from) " + _PLACE
        ),
    ),
    # "I bought a new guitar", "I just got a Kindle"
    (
        "bought",
        re.compile(
            r"(?i)\bI (?:just |finally |recently )?(?:bought|purchased|got myself) "
            r"(?P<value>(?:an? |a new |some |my first )?[\w -]{2,40})"
        ),
    ),
    # "I took up pottery", "I started learning the violin", "my hobby is painting" (via _MY_RE)
    (
        "hobby",
        re.compile(
            r"(?i)\bI (?:just |recently )?(?:took up|picked up|started learning|"
            r"signed up for) (?P<value>(?:an? |the )?[\w -]{2,40})"
        ),
    ),
)
# A word each of _LIFE_RES needs, as lower() makes it (for a pattern that ignores case, one
# without "i" or "s", which other letters match then): most sentences have none
_LIFE_HINTS = {
    "pet": tuple(PETS.split("|")),
    "kin": ("my ",),
    "job": ("work", "job"),
    "employer": ("work", "got a job", "started"),
    "lives in": ("live in ",),
    "moved": ("moved", "relocated"),
    "bought": ("bought", "purcha", "got my"),
    "hobby": ("took up", "cked up", "tarted", "gned up"),
}
# A dated event: "I went to a support group yesterday (2023-05-07)": the annotation
# the summarizer adds after resolving a relative date (memoryclaw.vault.dates).
_EVENT_RE = re.compile(
    r"(?i)\b(?:I|[Ww]e) (?:just |finally )?(?P<what>(?:went|ran|visited|attended|joined|"
    r"finished|started|signed up|volunteered|adopted|painted|hiked|traveled|travelled|"
    r"camped|gave|had|took|won|met|celebrated)\b[^.!?;()]{3,80}?)\s*"
    r"\((?P<when>(?:week of )?\d{4}-\d{2}(?:-\d{2})?)\)"
)
_VALUE_END_RE = re.compile(r"\s+(?:and|but|because|so|which|who|since|when|if)\s.*$|[.!?:]+$")


def clean_value(text: str) -> str:
    """A value as read: cut where its clause ends, unquoted; "" when too long to be one."""
    value = _VALUE_END_RE.sub("", text.strip()).strip(" \"'“”")
    return value if 0 < len(value) <= 60 and len(value.split()) <= 8 else ""


def life_facts(sentence: str, me: str) -> list[tuple[str, str, str, str] | None]:
    """What a speaker says of their own life: pets, family, job, home, purchases, hobbies and
    dated events, all ``medium`` (stated once, in passing)."""
    out: list[tuple[str, str, str, str] | None] = []
    low = sentence.lower()
    for field, pattern in _LIFE_RES:
        if not any(hint in low for hint in _LIFE_HINTS[field]):
            continue
        for m in pattern.finditer(sentence):
            if field in {"pet", "kin"}:
                name = m["name"]
                if not name_ok(name.split()[0]) or name.split()[0].lower() in NOT_NAMES:
                    continue
                kind = " ".join(m["kind"].lower().split())
                said = ("pet", f"{name} ({kind})") if field == "pet" else (kind, name)
                out.append((me, *said, "medium"))
                continue
            value = m["value"]
            if field in {"bought", "hobby"}:
                if _CUT_WORD_RE.match(sentence, m.end("value")):
                    value = value.rstrip().rpartition(" ")[0]
                # "a new guitar last week": the thing, not when; "the lamp I bought on
                # Monday", "I bought from Home Depot": no thing at all
                value = _AFTER_THING.sub("", value)
                if not set(value.lower().split()) - _ARTICLES:  # "I bought a $250 monitor"
                    continue
            value = clean_value(value)
            named = field in {"lives in", "moved", "employer"}  # "New York" is a name
            if not value or (not named and value.lower().split()[0] in GENERIC):
                continue
            if field == "moved":
                field_name = "moved to" if m["dir"] == "to" else "moved from"
                out.append((me, field_name, value, "medium"))
            else:
                out.append((me, field, value, "medium"))
    for m in _EVENT_RE.finditer(sentence) if "(" in sentence else ():
        what = clean_value(_TRAILING_WHEN.sub("", m["what"]))
        if what and names_something(what.partition(" ")[2]):
            out.append((me, "event", f"{what} ({m['when']})", "medium"))
    return out
