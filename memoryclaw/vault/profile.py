"""What the speaker says of who they are: age, occupation, home and income.

People tell an assistant these in passing, often inside a request: "what's a good nutrition
plan for someone like me, a 69-year-old science writer?", "how do I make my home comfortable,
considering I'm living in Leeds and I've got an income of $52,000 annually?".  So unlike the
other rules of fact extraction, these read questions too: each needs the speaker's own
declarative words ("I'm 60 years old", "I live in", "I work as", "someone like me, a …"),
which an actual question about them does not use ("am I too old?", "do I live in…?").  A
clause opened by "if", "when", "unless", "before" and the like is a hypothetical: it states
nothing, nor does an "I'm" someone else thinks ("he thinks I'm a doctor") or a pretence
("explain it like I'm 5"), nor a sentence with quoted speech before the match.  What
somebody else said, quoted after a word of saying ("my friend said “I'm 45 and I live in
Oslo”", "he told me: I work as a pilot"), is theirs: :func:`without_quoted_speech` takes it
out of a turn before any fact is read from it.

Consolidation files what they find as facts; until it runs, the index marks a logged turn
that says one with its kind (:func:`profile_kinds`), so "how old am I?" finds "I'm 34" in
the log of an earlier session.
"""

from __future__ import annotations

import functools
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
# What makes "a cook" or "a driver" a trait or a pastime, not a job: "I'm a terrible cook",
# "a better writer than", "an amateur photographer", "a home cook", "a backseat driver".
_NOT_A_JOB = (
    "good|great|bad|terrible|awful|horrible|decent|excellent|amazing|lousy|poor|lazy|slow|fast"
    "|quick|nervous|careful|confident|messy|picky|keen|avid|passionate|enthusiastic|big|huge"
    "|total|natural|born|secret|closet|better|best|worse|worst|amateur|aspiring|wannabe"
    "|hobbyist|hobby|budding|future|beginner|novice|weekend|home|backyard|bedroom"
    "|shower|bathroom|karaoke|backseat|designated|perpetual|lifelong|eternal|occasional"
    "|casual|cash|repeat"
)
_WHO = r"(?:\bI(?:['’]m| am)|\b(?:someone|somebody|people|a person) like me,?)"
_AGE = r"(?P<age>\d{1,3})"
# "I'm a 69-year-old science writer", "someone like me, a retired nurse"
_DESCRIBED = (
    rf"{_WHO} (?:an? |(?:who|that)['’]s an? )(?:{_AGE}[- ]years?[- ]old )?"
    rf"(?P<job>(?:(?:retired|former|freelance|senior|junior|self-employed|part-time|full-time|"
    rf"(?!(?:{_NOT_A_JOB}) )[a-z]+) )?(?:{_OCCUPATIONS})"
    # "a nurse practitioner", "a physician assistant": the second noun is the job
    rf"(?: (?:assistant|aide|practitioner|apprentice|trainee|intern|technician))?)"
    rf"\b(?![-'’])(?! than\b)"
)
_AGES = (
    # "I'm 60 years old", "I am 34, and", "I just turned 40"; not "I'm 20, 30 minutes
    # away", where the number is one of two guesses at something else
    (
        r"\bI(?:['’]m| am) (?:now |only |already )?(\d{1,3})(?: now)?"
        r"(?: years? old\b|(?=,(?! ?\d)|[.;!?]|$| and\b))"
        r"|\bI (?:just |recently )?turned (\d{1,3})"
        # "turned 40 last week", not "turned 30 pages"
        r"(?= years? old\b|[,.;:!?)]|$| (?:and|but|so|last|this|on|in|at|today|yesterday"
        r"|recently|earlier|over|during|back|with|the|a)\b)"
    ),
    # "someone like me, who's 23", "people my age, 55"
    (
        rf"{_WHO} who['’]s (\d{{1,3}})\b(?![.,]?\d|%| ?per ?cent)"
        rf"|\bmy age,? (\d{{1,3}})\b(?![.,]?\d|%| ?per ?cent| ?(?:to|-|–) ?\d)"
    ),
)
# A name's word, or an abbreviation written with its dots: "St. Louis", "D.C.", "U.K."
PLACE_WORD = r"(?:(?:[A-Z]\.){2,}|St\.(?= [A-Z])|[A-Z][\w'’-]*)"
_PLACE = (
    rf"(?P<place>{PLACE_WORD}(?: (?:{PLACE_WORD}|(?:of|de|la)(?= [A-Z])))*"
    rf"(?:, {PLACE_WORD}(?: {PLACE_WORD})*(?=[,.;!?]|$| (?:and|where|so|but|since)\b))?)"
)
_HOMES = (
    rf"\bI(?:['’]m| am) (?:currently |now |still )?(?:living|based) in {_PLACE}",
    rf"\bin {_PLACE},? where I (?:currently |now )?live\b",
)
_MONEY = (
    r"(?P<income>[$£€]\s?\d(?:[\d,.]*\d)?(?:k\b| ?(?:thousand|million)\b)?"
    r"(?: (?:a|an|per) (?:year|month|week|hour)\b| (?:annually|monthly|yearly)\b)?)"
)
# The speaker's own: "my income is", "I've got a decent income of", "I earn"; not "the
# average salary of $35,000" they were told about.
_KIND_OF_PAY = r"(?:(?:annual|yearly|monthly|weekly|current|side|decent|good|steady|fixed) )*"
# "my monthly income is $4,000" is $4,000 a month
_PERIOD_OF_PAY = {"annual": "a year", "yearly": "a year", "monthly": "a month", "weekly": "a week"}
_PERIOD_RE = re.compile(r"\b(?:a|an|per) \w+$|\b(?:annually|monthly|yearly)$")
_INCOME = (
    rf"\b(?:my {_KIND_OF_PAY}(?:income|salary|pay) (?:is |of )"
    rf"|\bI(?:['’]ve got| have| get| am on|['’]m on|['’]m living on| live on) (?:an? |my )?"
    rf"{_KIND_OF_PAY}(?:income|salary|pay) of "
    rf"|\bI (?:earn|make) |(?:\bI['’]m |\bI am |\bjob,? |\bme,? )earning )"
    rf"(?:about |around |roughly )?{_MONEY}(?![.,]?\d)"
    # "I make $12 coffee at home", "I earn $10 per referral": a price, not a pay
    r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:and|but|so|or|before|after|gross|net|now|at|as|from my|with"
    r"|which|while|plus|working|doing|pre-tax|after-tax|take-home)\b)"
)


# Compiled on first use, as the other patterns marked so: a logged turn that says nothing of
# its speaker (most of them) pays for none of these.
@functools.cache
def _patterns() -> tuple[
    re.Pattern[str], tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...], re.Pattern[str]
]:
    """The occupation, age, home and income patterns."""
    return (
        re.compile(_DESCRIBED, re.IGNORECASE),
        tuple(re.compile(p, re.IGNORECASE) for p in _AGES),
        tuple(re.compile(p) for p in _HOMES),
        re.compile(_INCOME, re.IGNORECASE),
    )


_HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|when|once|unless|whether|suppose|supposing|imagine|pretend|say|before|until|till"
    r"|after|by the time)\b[^,;]*$",
    re.IGNORECASE,
)
# Words that make an "I'm" someone's view or a pretence: "explain it like I'm 5", "as though
# I'm a programmer", "my mum thinks I'm a lawyer".
_NOT_SAID_RE = re.compile(
    r"\b(?:like|as though|assume|assuming|think|thinks|thought|believe|believes|believed"
    r"|assumed|guess|guessed)\s+(?:that\s+)?$",
    re.IGNORECASE,
)
_QUOTES = '"“”‘'
# A word of saying, then what was said: in quotes (to the closing one, else the line's end;
# a closing ’ is one no letter follows, as an apostrophe's is) or after a colon (to the
# sentence's end).  "I said" is quoted speech too: the owner's own words then, mostly
# not about themselves.
_SAID = (
    r"said|says|say|tells? (?:me|us|him|her|them)|told (?:me|us|him|her|them)|wrote|writes"
    r"|asked|asks|replied|replies|texted|messaged|yelled|shouted|added|explained|claimed"
)
_QUOTED_SPEECH_RE = re.compile(
    rf"(?i)\b(?:{_SAID})[,:]?[^\S\n]*(?:(?P<quote>\"[^\"\n]*(?:\"|$)|“[^”\n]*(?:”|$)"
    r"|‘[^\n]*?(?:’(?![^\W\d_])|$))|(?<=:)(?P<plain>[^.!?\n]+)|(?<=: )(?P<spaced>[^.!?\n]+))",
    re.MULTILINE,
)
_FIRST_PERSON_RE = re.compile(r"\b(?:I|me|my)\b", re.IGNORECASE)
_DIGIT_RE = re.compile(r"\d")


def profile_facts(sentence: str, me: str) -> Iterator[tuple[str, str, str, str]]:
    """(entity, field, value, confidence) of what ``sentence`` says of its speaker ``me``:
    ``age``, ``job``, ``lives in`` and ``income``, each ``medium`` (said once, in passing)."""
    if not _FIRST_PERSON_RE.search(sentence):
        return
    # each pattern only where its words are: most sentences say none of this
    low = sentence.lower().replace("’", "'")
    who = "i'm " in low or "i am " in low or "like me" in low
    aged = who or "turned" in low or "my age" in low
    for pattern in _patterns()[1] if aged and _DIGIT_RE.search(sentence) else ():
        for m in pattern.finditer(sentence):
            age = next(a for a in m.groups() if a)
            if _stated(sentence, m.start()) and 0 < int(age) <= 120:
                yield me, "age", age, "medium"
    for m in _patterns()[0].finditer(sentence) if who and " a" in low else ():
        if not _stated(sentence, m.start()):
            continue
        if m["age"] and 0 < int(m["age"]) <= 120:
            yield me, "age", m["age"], "medium"
        yield me, "job", " ".join(m["job"].lower().split()), "medium"
    for pattern in _patterns()[2] if " in " in low and ("liv" in low or "based" in low) else ():
        for m in pattern.finditer(sentence):
            if _stated(sentence, m.start()):
                yield me, "lives in", m["place"], "medium"
    if "$" in sentence or "£" in sentence or "€" in sentence:
        for m in _patterns()[3].finditer(sentence):
            if _stated(sentence, m.start()):
                income = m["income"].strip()
                said = m.group(0).lower().split()
                period = next((_PERIOD_OF_PAY[w] for w in said if w in _PERIOD_OF_PAY), "")
                if period and not _PERIOD_RE.search(income):
                    income = f"{income} {period}"
                yield me, "income", income, "medium"


def without_quoted_speech(text: str) -> str:
    """``text`` with what it quotes others as saying after a word of saying replaced by an
    ellipsis: a fact read there would be the quoted person's, filed as the speaker's."""
    if not _QUOTED_SPEECH_RE.search(text):
        return text

    def cut(m: re.Match[str]) -> str:
        said = next(name for name in ("quote", "plain", "spaced") if m.group(name) is not None)
        return m.group(0)[: m.start(said) - m.start()] + "…"

    return _QUOTED_SPEECH_RE.sub(cut, text)


def _stated(sentence: str, start: int) -> bool:
    """Whether the words at ``start`` are the speaker's own statement: not in a hypothetical
    clause, not after quoted speech."""
    before = sentence[:start]
    if sentence.startswith("I", start) and _NOT_SAID_RE.search(before):
        return False
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
