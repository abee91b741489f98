"""What the speaker says of who they are: age, occupation, home and income.

People tell an assistant these in passing, often inside a request: "what's a good nutrition
plan for someone like me, a 69-year-old science writer?", "how do I make my home comfortable,
considering I'm living in Leeds and I've got an income of $52,000 annually?".  So unlike the
other rules of fact extraction, these read questions too: each needs the speaker's own
declarative words ("I'm 60 years old", "I live in", "I work as", "someone like me, a …"),
which an actual question about them does not use ("am I too old?", "do I live in…?").  A
clause opened by "if", "when", "unless" and the like is a hypothetical: it states nothing, and
neither does a sentence with quoted speech before the match.

Consolidation files what they find as facts; until it runs, the index marks a logged turn
that says one with its kind (:func:`profile_kinds`), so "how old am I?" finds "I'm 34" in
the log of an earlier session.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .words import sentences

# A person's occupation, by its head noun: "I'm a nurse", "a retired science teacher".  A
# closed list, so "I'm a big believer" or "I'm a fast learner" is no job.
_OCCUPATIONS = (
    "accountant|actor|actress|analyst|architect|artist|attorney|baker|barista|bartender|buyer"
    "|carpenter|cashier|chef|chemist|cleaner|coach|consultant|cook|counselor|counsellor"
    "|dancer|dentist|designer|developer|dietitian|doctor|driver|economist|editor|electrician"
    "|engineer|entrepreneur|farmer|firefighter|freelancer|gardener|hairdresser|historian"
    "|illustrator|instructor|journalist|judge|lawyer|lecturer|librarian|manager|mechanic"
    "|midwife|musician|nurse|nutritionist|officer|painter|paramedic|pharmacist|photographer"
    "|physician|physicist|physiotherapist|pilot|plumber|producer|professor|programmer"
    "|psychologist|realtor|receptionist|reporter|researcher|retiree|salesperson|scientist"
    "|secretary|singer|surgeon|student|tailor|teacher|technician|therapist|translator|tutor"
    "|veterinarian|waiter|waitress|writer"
)
_WHO = r"(?:\bI(?:['’]m| am)|\b(?:someone|somebody|people|a person) like me,?)"
_AGE = r"(?P<age>\d{1,3})"
# "I'm a 69-year-old science writer", "someone like me, a retired nurse"
_DESCRIBED_RE = re.compile(
    rf"{_WHO} (?:an? |(?:who|that)['’]s an? )(?:{_AGE}[- ]years?[- ]old )?"
    rf"(?P<job>(?:(?:retired|former|freelance|senior|junior|self-employed|part-time|full-time|"
    rf"[a-z]+) )?(?:{_OCCUPATIONS}))\b(?![-'’])",
    re.IGNORECASE,
)
_AGE_RES = (
    # "I'm 60 years old", "I am 34, and", "I just turned 40"
    re.compile(
        r"\bI(?:['’]m| am) (?:now |only |already )?(\d{1,3})(?: years? old\b|(?=[,.;!?]|$| and\b))"
        r"|\bI (?:just |recently )?turned (\d{1,3})\b(?! (?:minutes|hours|days|weeks|months))",
        re.IGNORECASE,
    ),
    # "someone like me, who's 23", "people my age, 55"
    re.compile(
        rf"{_WHO} who['’]s (\d{{1,3}})\b(?![.,]\d)|\bmy age,? (\d{{1,3}})\b(?![.,]\d)",
        re.IGNORECASE,
    ),
)
_PLACE = (
    r"(?P<place>[A-Z][\w'’-]*(?: (?:[A-Z][\w'’-]*|(?:of|de|la)(?= [A-Z])))*"
    r"(?:, [A-Z][\w'’-]*(?: [A-Z][\w'’-]*)*(?=[,.;!?]|$| (?:and|where|so|but|since)\b))?)"
)
_HOME_RES = (
    re.compile(rf"\bI(?:['’]m| am) (?:currently |now |still )?(?:living|based) in {_PLACE}"),
    re.compile(rf"\bin {_PLACE},? where I (?:currently |now )?live\b"),
)
_MONEY = (
    r"(?P<income>[$£€]\s?\d(?:[\d,.]*\d)?(?:k\b| ?(?:thousand|million)\b)?"
    r"(?: (?:a|an|per) (?:year|month|week|hour)\b| (?:annually|monthly|yearly)\b)?)"
)
# The speaker's own: "my income is", "I've got a decent income of", "I earn"; not "the
# average salary of $35,000" they were told about.
_KIND_OF_PAY = r"(?:(?:annual|yearly|monthly|current|side|decent|good|steady|fixed) )*"
_INCOME_RE = re.compile(
    rf"\b(?:my {_KIND_OF_PAY}(?:income|salary|pay) (?:is |of )"
    rf"|\bI(?:['’]ve got| have| get| am on|['’]m on|['’]m living on| live on) (?:an? |my )?"
    rf"{_KIND_OF_PAY}(?:income|salary|pay) of "
    rf"|\bI (?:earn|make) |(?:\bI['’]m |\bI am |\bjob,? |\bme,? )earning )"
    rf"(?:about |around |roughly )?{_MONEY}",
    re.IGNORECASE,
)
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|when|once|unless|whether|suppose|supposing|imagine|pretend|say)\b[^,;]*$",
    re.IGNORECASE,
)
_QUOTES = '"“”‘'
_FIRST_PERSON_RE = re.compile(r"\b(?:I|me|my)\b", re.IGNORECASE)


def profile_facts(sentence: str, me: str) -> Iterator[tuple[str, str, str, str]]:
    """(entity, field, value, confidence) of what ``sentence`` says of its speaker ``me``:
    ``age``, ``job``, ``lives in`` and ``income``, each ``medium`` (said once, in passing)."""
    if not _FIRST_PERSON_RE.search(sentence):
        return
    for pattern in _AGE_RES:
        for m in pattern.finditer(sentence):
            age = next(a for a in m.groups() if a)
            if _stated(sentence, m.start()) and 0 < int(age) <= 120:
                yield me, "age", age, "medium"
    for m in _DESCRIBED_RE.finditer(sentence):
        if not _stated(sentence, m.start()):
            continue
        if m["age"] and 0 < int(m["age"]) <= 120:
            yield me, "age", m["age"], "medium"
        yield me, "job", " ".join(m["job"].lower().split()), "medium"
    for pattern in _HOME_RES:
        for m in pattern.finditer(sentence):
            if _stated(sentence, m.start()):
                yield me, "lives in", m["place"], "medium"
    if "$" in sentence or "£" in sentence or "€" in sentence:
        for m in _INCOME_RE.finditer(sentence):
            if _stated(sentence, m.start()):
                yield me, "income", m["income"].strip(), "medium"


def _stated(sentence: str, start: int) -> bool:
    """Whether the words at ``start`` are the speaker's own statement: not in a hypothetical
    clause, not after quoted speech."""
    before = sentence[:start]
    return not _HYPOTHETICAL_RE.search(before) and not any(q in before for q in _QUOTES)


# The kind of value (``values.shape_tokens``) each field is: "where do I live?" asks for an
# address, "how old am I?" for an age.
_KIND_OF_FIELD = {"age": "age", "job": "job", "lives in": "address", "income": "income"}


# "I work as a nurse" (the occupation itself consolidation reads with its other rules)
_WORKS_AS_RE = re.compile(
    r"\bI(?:['’]m| am)? (?:now |currently |still |just )?work(?:ing)? as an? ", re.IGNORECASE
)


def profile_kinds(text: str) -> list[str]:
    """The kinds of value ``text`` (one turn) states of its speaker, in a fixed order."""
    found = {_KIND_OF_FIELD[f[1]] for s in sentences(text) for f in profile_facts(s, "")}
    if _WORKS_AS_RE.search(text):
        found.add("job")
    return [kind for kind in _KIND_OF_FIELD.values() if kind in found]
