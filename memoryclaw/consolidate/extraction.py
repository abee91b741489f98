"""Facts read from conversation turns: what a person states, and whom a tool call writes to.

No model is involved; a fact is kept only where a regular expression can validate it.  A human
turn's statements (never its questions) give emails, URLs, phone numbers, deadlines, birthdays,
``my X is Y`` fields, likes, dislikes and preferences, file paths and commands, and the
speaker's own dated appointments; a tool call's ``to``, ``cc`` and ``bcc`` addresses give the
email of a person its request named.  A value belongs to the name or role ("the plumber")
written closest before it (a deadline to a project code like projectX; a name beside the role
rather than the role), else to the speaker, whose ``my X is Y`` and ``I like Z`` are always
their own.  A title is part of a name ("Dr. Okafor"); a currency or unit ("EUR") is none.
Everything is read from redacted text: a value redaction would change is dropped, and so is
one that is not what its field says (an email that is no address) or a field named like a
secret (password, PIN, token, card ...).

Confidence is how sure the reading is:

- high: an ISO date; a URL; an email, or a phone number in international form, whose owner
  the sentence names ("Sarah's email is", "my email is"); a recipient whose address matches
  a name in the request;
- medium: a date with its month in words (without a year, in the year that puts it at most
  six months before the turn; a birthday keeps only month and day); a phone number in local
  form whose owner the sentence names; any other ``my X is Y``; a taste; a path; a command in
  backticks; the recipient of a request naming one person; an appointment (high with an ISO
  date; a date without a year is the next one);
- low: an email or phone number whose owner is only guessed; a date that is no date
  ("February 30"); a vague deadline ("next Friday"); a command after "run".

Names are read with the words and rules of :mod:`memoryclaw.consolidate.names`, which the
summarizer shares; sentences, keywords and small talk are :mod:`memoryclaw.vault.words`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

from ..vault.factnames import OWNER_ENTITY
from ..vault.profile import profile_facts, without_quoted_speech
from ..vault.redact import redact
from ..vault.values import value_kind
from ..vault.words import STOPWORDS, sentences
from .lifefacts import KIN, PETS, clean_value, life_facts
from .names import (
    CODE_PATTERN,
    EMAIL_PATTERN,
    GENERIC,
    MONTHS,
    NOT_NAMES,
    VERBS,
    describes_a_state,
    local_name,
    name_ok,
    name_runs,
    name_spans,
)

_CLI = frozenset(
    """git npm npx pip pipx python python3 make docker kubectl cargo go yarn pnpm uv pytest ls
    cd curl ssh brew apt sudo bash sh node ruff mypy memoryclaw rsync scp tar""".split()
)
# Fields whose values must never be kept as facts, whatever reads them (extractor or model).
SECRET_FIELD_RE = re.compile(r"pass|pin\b|token|secret|key|ssn|social security|card|cvv|login")

_CODE_RE = re.compile(CODE_PATTERN)
_EMAIL_RE = re.compile(EMAIL_PATTERN)
_URL_RE = re.compile(r"https?://[^\s<>()\"']+")
_PHONE_RE = re.compile(r"(?<![\w+])\+?\d[\d \t().-]{5,18}\d(?!\w)")
_PHONE_CONTEXT_RE = re.compile(r"(?i)\b(?:phone|mobile|cell|number|call|tel|whatsapp|text)\b")
# A file's extension has a letter: "f/2.8" is an aperture, "1/2.5" a fraction.
_PATH_RE = re.compile(
    r"(?<![\w:/.@])(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[A-Za-z][\w.-]*"
    r"|(?<![\w:/.@-])[\w.-]+/(?:[\w.-]+/)*[\w-]+\.(?=[A-Za-z0-9]{0,5}[A-Za-z])[A-Za-z0-9]{1,6}\b"
)
_BACKTICK_RE = re.compile(r"`([^`\n]{2,200})`")
_RUN_RE = re.compile(r"\brun\s+(?P<cmd>[a-z][\w.+-]*(?:\s+[^\s,;!?`]+){0,12})")
_MONTH_ALT = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE_RE = re.compile(
    rf"(?i)(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b"
    rf"|(?P<m1>{_MONTH_ALT})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y1>\d{{4}})\b)?"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>{_MONTH_ALT})\b\.?"
    r"(?:,?\s+(?P<y2>\d{4})\b)?"
)
_VAGUE_DATE_RE = re.compile(
    rf"(?i)(?:next|this|end of|tomorrow|tonight|today|eod|eow|(?:{_MONTH_ALT})\b|\w+day\b)[^,;]*"
)
_DEADLINE_RE = re.compile(
    r"(?i)\b(?:deadline|due(?:\s+date)?)\b(?:\s+(?:is|was|will be|by|on|for|date))*\s*:?\s*"
)
_BIRTHDAY_RE = re.compile(
    r"\b(?P<who>[A-Z][\w-]*(?: [A-Z][\w-]*)?)['’]s birthday is (?:on )?(?:the )?"
    r"|\b(?P<who2>[A-Z][a-z]+) turns \d{1,3} on (?:the )?"
)
# Only a clause's own subject: "in my art is ..." or "the things I love makes ..." state nothing.
_CLAUSE = r"(?:^|[,;:]\s+|\b(?:and|but|so|because|that|since|also|oh|btw|well|now|fyi)\s+)"
# the value runs to a comma, but not one of a number's thousands ("$4,000")
_MY_RE = re.compile(
    rf"(?i){_CLAUSE}my (?P<field>[a-z][a-z'’ -]{{0,30}}?) is"
    r" (?P<value>(?:[^,;]|(?<=\d),(?=\d{3}))+)"
)
_PREF_RE = re.compile(
    rf"{_CLAUSE}I (?P<mod>(?:really |also |just |absolutely |totally )?(?:don['’]t |do not )?"
    r"(?:really )?)(?P<verb>prefer|like|love|enjoy|hate|dislike|can['’]t stand) (?P<value>[^,;]+)"
)
# What people say about themselves in conversation: each pattern names its field; the value
# is the capture, cut at the first clause boundary.
# People known by what they do for the speaker: "the plumber", "my dentist".
ROLES = (
    "plumber|electrician|dentist|doctor|gp|vet|accountant|lawyer|solicitor|attorney|landlord"
    "|landlady|mechanic|builder|contractor|cleaner|gardener|babysitter|nanny|therapist"
    "|hairdresser|barber|tutor|teacher|coach|trainer|realtor|estate agent|pharmacist|nurse"
    "|optician|physio|physiotherapist|surgeon|banker|advisor|adviser|handyman|locksmith|decorator"
    "|painter|roofer|courier|driver|caterer|photographer|florist|architect"
)
_ROLE_RE = re.compile(rf"(?i)\b(?:the|my|our|a|an|his|her|their)\s+(?P<role>{ROLES})\b")
# "I have a dentist appointment on 14 March at 9:30", "my appointment with Dr. Okafor is ..."
_APPOINTMENT_RE = re.compile(r"(?i)\b(?:(?P<kind>[a-z]+)(?:['’]s)?\s+)?(?:appointment|appt)\b")
_WHOSE_RE = re.compile(
    r"(?i)\b(?P<who>my|our|I|I['’]\w+|we|we['’]\w+|your|you|his|her|he|she|their|they)\b"
)
_WITH_RE = re.compile(rf"(?i)\s+with\s+(?:(?:the|my|our|a|an)\s+)?(?:(?P<role>{ROLES})\b)?")
_TIME_RE = re.compile(
    r"(?i)(?<![\d:.-])(?P<h>[01]?\d|2[0-3])"
    r"(?::(?P<m>[0-5]\d)(?!\d)(?:\s*(?P<ap>[ap])\.?m\b\.?)?|\s*(?P<ap2>[ap])\.?m\b\.?)"
)
# "my daughter Mia is …", a relative or pet named in the field of "my X is Y"; and an age
_KIN_NAMED_RE = re.compile(rf"(?i:{KIN}|{PETS}) (?P<name>[A-Z][a-z]+)")
_AGE_RE = re.compile(r"(\d{1,3})(?: (?:years?|yrs?) old)?")
# A word pointing back to what was said before: a taste holding one means nothing alone.
_BACK_REFERENCE_RE = re.compile(r"\b(?:it|its|them|they|their|this|these|those)\b", re.IGNORECASE)
# The speaker's name: "Hi! I'm Priya", "call me Sam", "my name's Ana" ("my name is": _MY_RE).
# "I'm" only after a greeting, which may end a sentence: "I'm British" names no one.
_NAME_RE = re.compile(
    # the cue opens a clause of the speaker's own: "never call me Bob", "she said call me Tom"
    # and a quoted "hi, I'm Bob" name no one
    r"(?:^|(?<=[.!?,;:\n]) *|\b(?:[Aa]nd|[Bb]ut|[Ss]o|[Oo]h|[Aa]lso|[Jj]ust) )"
    r"(?:(?:[Hh]i|[Hh]ello|[Hh]ey)(?: there| all| everyone)?[,!.]? +I(?:['’]m| am)"
    r"|(?:[Pp]lease |[Yy]ou can )?[Cc]all me|[Mm]y name['’]s) "
    # nor does a possessive name the speaker: "I'm Alice's mom", "I'm Sam Lee's brother"
    r"(?P<name>[A-Z][a-z'’-]+(?: [A-Z][a-z'’-]+)?)(?<!['’]s)(?![\w'’-]| [A-Z]\w*['’]s\b)"
)
# A relative date the summarizer resolved, right after the words it stands for.
_RESOLVED_RE = re.compile(r"[^,;()\n]{0,40}\((?P<iso>\d{4}-\d{2}-\d{2})\)")
_DIGIT_RE = re.compile(r"\d")


@dataclass(frozen=True)
class FactDraft:
    """A candidate fact read from one turn, validated but not yet written anywhere."""

    entity: str
    field: str
    value: str
    confidence: str
    turn: int


def _owner(before: str, speaker: str, hint: str = "") -> tuple[str, bool]:
    """Who a value belongs to, and whether the sentence says so: the name or role ("the
    plumber") closest before it, a name beside that role rather than the role (preferring a
    name matching ``hint``), or the speaker's "my"; else the speaker, unconfirmed."""
    names = name_spans(before, sentence=True)
    for _, _, name in reversed(names):
        if hint and name.lower().split()[0] == hint.lower():
            return name, True
    roles = list(_ROLE_RE.finditer(before))
    if roles and (not names or roles[-1].start() > names[-1][1]):
        role, near = roles[-1], name_spans(before)  # "Mario the plumber" opens a sentence
        # "Mario the plumber", "the plumber Mario": the name says who
        beside = [n for n in near if 0 <= role.start() - n[1] <= 8 or 0 <= n[0] - role.end() <= 3]
        return (beside[-1][2] if beside else _role_name(role["role"])), True
    if names:
        return names[-1][2], True
    return speaker, re.search(r"(?i)\b(?:my|me|mine)\b", before) is not None


def _role_name(role: str) -> str:
    """How a role is filed: "Plumber", "Estate agent", "GP"."""
    role = " ".join(role.lower().split())
    return role.upper() if len(role) < 3 else role.capitalize()


def _norm_date(
    match: re.Match[str], ref: date, *, yearly: bool = False, ahead: bool = False
) -> tuple[str, str]:
    """(value, confidence): ISO when the year is stated or inferable, else the text, low.
    Without a year, a date is at most six months past, or (``ahead``) on or after ``ref``."""
    try:
        if match["iso"]:
            return date.fromisoformat(match["iso"]).isoformat(), "high"
        prefix = (match["m1"] or match["m2"]).lower()[:3]
        month = next(i for i, name in enumerate(MONTHS, 1) if name.startswith(prefix))
        day, year = int(match["d1"] or match["d2"]), match["y1"] or match["y2"]
        if year:
            return date(int(year), month, day).isoformat(), "medium"
        if yearly:  # a birthday recurs: month and day are the fact
            date(2000, month, day)
            return f"{MONTHS[month - 1].capitalize()} {day}", "medium"
        moment = date(ref.year, month, day)
        if (ref - moment).days > (0 if ahead else 183):  # "deadline is January 5", in December
            moment = date(ref.year + 1, month, day)
        return moment.isoformat(), "medium"
    except ValueError:
        return match.group(0).strip(), "low"


def facts_from_turn(
    turn: int, text: str, speaker: str | None, said_on: date
) -> Iterator[FactDraft]:
    """Facts a human turn states; questions state nothing.  ``turn`` is its number in the log,
    ``text`` its redacted content, ``speaker`` the name "my" stands for (``OWNER_ENTITY``
    without one) and ``said_on`` its day, which completes a date written without a year."""
    me, ref, text = speaker or OWNER_ENTITY, said_on, without_quoted_speech(text)
    found: list[tuple[str, str, str, str] | None] = [
        (me, "name", m["name"], "medium")
        for m in _NAME_RE.finditer(text)
        if m["name"] != me  # "call me Monday", "Hi, I'm Sorry": no name
        and all(name_ok(w) and w.lower() not in NOT_NAMES for w in m["name"].split())
    ]
    every = sentences(text)
    # who the speaker is, they often say inside a request (see .profile)
    found += [fact for sentence in every for fact in profile_facts(sentence, me)]
    for sentence in (s for s in every if not s.endswith("?")):
        # Each pattern is tried only on a sentence holding a word it needs (as lower() makes
        # it, for a pattern that ignores case; never an "i" or "s", which other letters
        # match then): most sentences state no fact, and trying every pattern on every
        # sentence was most of the summarizer's time.
        low = sentence.lower()
        at, backtick = "@" in sentence, "`" in sentence
        plain = _EMAIL_RE.sub(" ", sentence) if at else sentence
        plain = _URL_RE.sub(" ", plain) if "http" in plain else plain
        bare = _BACKTICK_RE.sub(" ", plain) if backtick else plain
        for m in _EMAIL_RE.finditer(sentence) if at else ():
            local = local_name(m.group(0))
            who, sure = _owner(sentence[: m.start()], me, local)
            if not sure and local.isalpha() and local.lower() not in NOT_NAMES:
                who = local.capitalize()  # "send it to bob@x.com": likely Bob's, unconfirmed
            found.append((who, "email", m.group(0), "high" if sure else "low"))
        for m in _URL_RE.finditer(sentence) if "http" in sentence else ():
            url = m.group(0).rstrip(".,;:!?")
            found.append((_owner(sentence[: m.start()], me)[0], "url", url, "high"))
        for m in _PHONE_RE.finditer(plain) if _DIGIT_RE.search(plain) else ():
            number, before = m.group(0).strip(), plain[: m.start()]
            if not 7 <= sum(c.isdigit() for c in number) <= 15 or _DATE_RE.search(number):
                continue
            if number.startswith("+") or _PHONE_CONTEXT_RE.search(before):
                who, sure = _owner(before, me)
                level = "high" if number.startswith("+") else "medium"
                found.append((who, "phone", number, level if sure else "low"))
        for m in _DEADLINE_RE.finditer(sentence) if "deadl" in low or "due" in low else ():
            rest, project = sentence[m.end() :], _CODE_RE.search(sentence)
            owner = project.group(0) if project else _owner(sentence[: m.start()], me)[0]
            if when := _DATE_RE.match(rest):
                found.append((owner, "deadline", *_norm_date(when, ref)))
            elif resolved := _RESOLVED_RE.match(rest):  # "next Friday (2025-04-18)"
                found.append((owner, "deadline", resolved["iso"], "medium"))
            elif not rest.lower().startswith("to ") and (vague := _VAGUE_DATE_RE.match(rest)):
                found.append((owner, "deadline", clean_value(vague.group(0)), "low"))
        birthday = "s birthday is " in sentence or " turns " in sentence
        for m in _BIRTHDAY_RE.finditer(sentence) if birthday else ():
            who = m["who"] or m["who2"]
            if (when := _DATE_RE.match(sentence[m.end() :])) and name_ok(who):
                found.append((who, "birthday", *_norm_date(when, ref, yearly=True)))
        if "my " in low:
            found += [_my_fact(m, me, ref) for m in _MY_RE.finditer(sentence)]
        if "app" in low:
            booked = _APPOINTMENT_RE.finditer(sentence)
            found += [_appointment(m, sentence, me, ref) for m in booked]
        found += life_facts(sentence, me)
        if "I " in sentence:
            found += [_preference(m, me) for m in _PREF_RE.finditer(sentence)]
        for m in _BACKTICK_RE.finditer(sentence) if backtick else ():
            code, who = m.group(1).strip(), _owner(sentence[: m.start()], me)[0]
            if _PATH_RE.fullmatch(code):
                found.append((who, "path", code, "medium"))
            elif re.match(r"[a-z.][\w.+-]*(?:\s|$)", code):
                found.append((who, "command", code, "medium"))
        for m in _RUN_RE.finditer(bare) if "run" in bare else ():
            command = m["cmd"].rstrip(".")
            if command.split()[0] in _CLI or re.search(r"\s--?[a-z]", command):
                found.append((me, "command", command, "low"))
        for m in _PATH_RE.finditer(bare) if "/" in bare else ():
            found.append((_owner(bare[: m.start()], me)[0], "path", m.group(0), "medium"))
    for entity, field, value, confidence in (f for f in found if f is not None):
        kind = {"email": "email", "url": "url", "phone": "phone"}.get(field)
        if (
            value
            and "[REDACTED" not in value
            and redact(value) == value
            and (kind is None or value_kind(value) == kind)
        ):
            yield FactDraft(entity, field, value, confidence, turn)


def _appointment(
    m: re.Match[str], sentence: str, me: str, ref: date
) -> tuple[str, str, str, str] | None:
    """The speaker's own dated appointment: with whom (a name or role after "with", else the
    role before it: "dentist appointment"), on which day (``YYYY-MM-DD``) and, when said, at
    what time (`` HH:MM``).  Not one that is someone else's, undated, or only asked for."""
    whose = [w["who"].lower() for w in _WHOSE_RE.finditer(sentence, 0, m.end())]
    if not whose or not re.match(r"my|our|i\b|i['’]|we", whose[-1]):
        return None
    when = _DATE_RE.search(sentence, m.end()) or _DATE_RE.search(sentence)
    if when is None or sentence[: when.start()].endswith("week of "):
        return None
    past = re.search(r"(?i)\b(?:had|was|went|missed)\b", sentence[: m.start()]) is not None
    day, confidence = _norm_date(when, ref, ahead=not past)
    if when["iso"] and sentence[: when.start()].endswith("("):  # a relative date, resolved
        confidence = "medium"
    if clock := _TIME_RE.search(sentence, when.end()) or _TIME_RE.search(sentence):
        hour, meridiem = int(clock["h"]), (clock["ap"] or clock["ap2"] or "").lower()
        if meridiem and not 1 <= hour <= 12:
            return None
        hour = hour % 12 + 12 * (meridiem == "p") if meridiem else hour
        day = f"{day} {hour:02d}:{clock['m'] or '00'}"
    kind, field, who = (m["kind"] or "").lower(), "appointment", me
    if with_ := _WITH_RE.match(sentence, m.end()):
        names = name_spans(sentence[with_.end() :])
        if with_["role"]:
            who = _role_name(with_["role"])
        elif names and names[0][0] == 0:
            who = names[0][2]
    if who == me and re.fullmatch(ROLES, kind):
        who = _role_name(kind)
    elif who == me and kind and not (kind in STOPWORDS | GENERIC | VERBS or kind.endswith("ed")):
        field = f"{kind} appointment"  # "my hair appointment"
    return (who, field, day, confidence)


def _my_fact(m: re.Match[str], me: str, ref: date) -> tuple[str, str, str, str] | None:
    """``my X is Y``: X names the field; a well-known field is validated."""
    field = " ".join(m["field"].lower().replace("’", "'").split())
    value = clean_value(m["value"])
    if not value or len(field.split()) > 3 or SECRET_FIELD_RE.search(field):
        return None
    if re.search(r"\b(?:appointment|appt)$", field):  # read with its time by _appointment
        return None
    if value.split()[0].lower() in STOPWORDS | GENERIC or describes_a_state(value):
        return None  # "my sister is a doctor": no field; "my work is paying off": no value
    if re.fullmatch(rf"{KIN}|{PETS}", field) and _AGE_RE.fullmatch(value):
        return None  # "my sister is 12": her age, and not who she is
    named = _KIN_NAMED_RE.fullmatch(" ".join(m["field"].split()))
    if named:  # "my daughter Mia is 6": who Mia is comes from the kin rule, her age from here
        age = _AGE_RE.fullmatch(value)
        return (named["name"], "age", age[1], "medium") if age else None
    if field in {"email", "e-mail", "email address"}:
        return (me, "email", value, "high" if value_kind(value) == "email" else "low")
    if field in {"phone", "phone number", "number", "mobile", "mobile number", "cell"}:
        return (me, "phone", value, "medium" if value_kind(value) == "phone" else "low")
    if field == "birthday":
        when = _DATE_RE.match(value)
        return (me, field, *(_norm_date(when, ref, yearly=True) if when else (value, "low")))
    return (me, field, value, "medium")


def _preference(m: re.Match[str], me: str) -> tuple[str, str, str, str] | None:
    """``I prefer / like / love / hate Z``; "don't" turns a like into a dislike."""
    value = clean_value(m["value"])
    if value.startswith("to "):  # "I'd love to help" is a wish, not a taste
        return None
    head = re.sub(r"^(?:the|a|an)\s+", "", value.lower()).split(" ", 1)[0] if value else ""
    if not head or head in STOPWORDS or head in GENERIC:  # "I love it", "I like that"
        return None
    if _BACK_REFERENCE_RE.search(value):  # "the shot power it offers": of what, unsaid
        return None
    negated = re.search(r"not|n['’]t", m["mod"]) is not None
    if m["verb"] in {"like", "love", "enjoy"}:
        field: str | None = "dislikes" if negated else "likes"
    else:
        field = None if negated else "prefers" if m["verb"] == "prefer" else "dislikes"
    return (me, field, value, "medium") if field else None


def facts_from_tool_call(turn: int, arguments: str, request: str) -> Iterator[FactDraft]:
    """Recipients of a tool call, named by the human turn that asked for it.  ``turn`` is the
    call's number in the log, ``arguments`` its redacted JSON and ``request`` the redacted text
    of the turn that asked ("" without one)."""
    try:
        args = json.loads(arguments)
    except (ValueError, RecursionError):
        return
    names = list(dict.fromkeys(name_runs(request)))
    for key in ("to", "cc", "bcc") if isinstance(args, dict) else ():
        value = args.get(key)
        for address in (
            [value] if isinstance(value, str) else value if isinstance(value, list) else []
        ):
            if not isinstance(address, str) or value_kind(address) != "email":
                continue
            match = [n for n in names if n.lower() == local_name(address).lower()]
            if match:
                yield FactDraft(match[0], "email", address, "high", turn)
            elif key == "to" and len(names) == 1:
                yield FactDraft(names[0], "email", address, "medium", turn)
