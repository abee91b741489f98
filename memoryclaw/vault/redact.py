"""Remove secrets from text before it is written to the vault.

The rules, and the order they run in, are in :mod:`memoryclaw.vault.secretpatterns`.

:func:`redact` also takes the turns said just before: a lone word that answers a turn ending
on "my password is" (or "what is the token?") is that secret, whatever it looks like.

A match is replaced by ``[REDACTED:<kind>]`` so the reader still sees that something was
there.  :func:`redact_fields` does the same for a parsed JSON value and drops every value
whose key looks secret, whatever the value looks like.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .secretpatterns import (
    ALL_MARKERS,
    ASKED_RE,
    BASIC_RE,
    CARD_RE,
    COMMAND_RES,
    ENTROPY_RE,
    HTPASSWD_RE,
    IS_RE,
    ITEM_RE,
    KEY_ASSIGNMENT_RE,
    MARKERS,
    MIN_ENTROPY,
    NOT_VALUES,
    PASSWORD_ASSIGNMENT_RE,
    PASSWORD_WORD_RE,
    PATTERNS,
    PHRASE_ASKED_RE,
    PHRASE_IS_RE,
    PHRASE_PROSE,
    PHRASE_WORD_RE,
    PIN_RE,
    PROSE_WORDS,
    SECRET_KEY_RE,
    SHAPES,
    SHELL_WORD_RE,
)

_REDACTED = "[REDACTED:secret]"
_MARKER_RE = re.compile(r"\[REDACTED:[\w-]+\]")


def _is_marker(value: str) -> bool:
    """Whether ``value`` starts with a whole redaction mark: one this module wrote, so
    redacting again changes nothing ("[REDACTEDsk-…" is no mark and is judged as it is)."""
    return _MARKER_RE.match(value) is not None


def _replace_value(match: re.Match[str]) -> str:
    groups = match.groupdict()
    value = groups.get("dq") or groups.get("sq") or groups.get("bare") or ""
    prose = groups.get("bare") and value.strip().lower().rstrip(".!?") in PROSE_WORDS
    if _is_marker(value) or prose:
        return match.group(0)
    quote = groups["q"] if groups.get("dq") else "'" if groups.get("sq") else ""
    return f"{match.group('key')}{quote}{_REDACTED}{quote}"


def _replace_command(match: re.Match[str]) -> str:
    """The value of a command-line credential redacted; for ``user:pass`` only the password."""
    name = next(n for n in ("sq", "dq", "bare") if match.group(n) is not None)
    start, end = match.span(name)
    value = match.group(name)
    if _is_marker(value):
        return match.group(0)  # redacted already ("-u [REDACTED:secret]" is no user:pass)
    if "user" in match.re.groupindex:
        if ":" not in value:
            return match.group(0)  # a user name alone
        start += value.index(":") + 1
        value = value.partition(":")[2]
    if not value or _is_marker(value) or value.casefold() in NOT_VALUES:
        return match.group(0)
    offset = match.start()
    whole = match.group(0)
    return whole[: start - offset] + _REDACTED + whole[end - offset :]


def _replace_phrase(match: re.Match[str]) -> str:
    """A passphrase said in prose redacted to the end of the line, unless what follows "is"
    reads as prose ("the passphrase is in the safe", "… is wrong"); then a phrase announced
    further on the line is judged by itself ("recovery words: my recovery words are: …")."""
    kept: list[str] = []
    key, value = match.group("key"), match.group("bare")
    while True:
        redacted, rest = _phrase_value(value)
        if redacted is not None and not rest:
            return "".join(kept) + key + redacted
        if redacted is not None:  # a quoted phrase: the line goes on after its quotes
            kept += (key, redacted)
            key, value = "", rest
        # only a bounded stretch is searched, so a line of announcements stays linear
        later = PHRASE_IS_RE.search(value[:300])
        if later is None:
            return "".join(kept) + key + value
        kept += (key, value[: later.start()])
        key, value = later.group("key"), value[later.start("bare") :]


def _phrase_value(value: str) -> tuple[str | None, str]:
    """What a phrase's value becomes (None: it reads as prose and stays), and for a quoted
    phrase the rest of the line after its closing quote."""
    quote = '\\"' if value.startswith('\\"') else value[0] if value[0] in "\"'" else ""
    if quote:
        # a quoted phrase: the quotes hold the secret, what follows them stays
        end = value.find(quote, len(quote))
        inner = value[len(quote) : end]
        if end < 0 or not inner.strip() or _is_marker(inner):
            return None, ""
        return quote + _REDACTED + quote, value[end + len(quote) :]
    if _is_marker(value) or _reads_as_prose(value.split()):
        return None, ""
    return _REDACTED, ""


def _reads_as_prose(said: Sequence[str]) -> bool:
    """Whether the words said after "the passphrase is" read as prose, not as a phrase."""
    words = [word.casefold().rstrip(".,;:!?") for word in said]
    if not words or words[0] in PHRASE_PROSE:
        return True
    # "is correct" is prose, "is correct horse battery staple" four words of a phrase
    return words[0] in PROSE_WORDS and (len(words) < 4 or not PHRASE_PROSE.isdisjoint(words))


def _replace_htpasswd(match: re.Match[str]) -> str:
    """``htpasswd -b [-c…] FILE USER PASSWORD`` (``-nb USER PASSWORD``) with its password
    redacted; without ``-b`` htpasswd asks for the password, and the command stays."""
    flags = ""
    arguments: list[re.Match[str]] = []
    for word in SHELL_WORD_RE.finditer(match.group("rest")):
        text = word.group(0)
        if text == "\\":
            continue  # a line continuation
        if text.startswith("-") and not arguments:
            flags += text[1:]
        elif text.isdigit() and not arguments and flags[-1:] in ("C", "r"):
            continue  # the bcrypt cost of -C, the rounds of -r
        else:
            arguments.append(word)
    place = 1 if "n" in flags else 2
    if "b" not in flags or len(arguments) <= place:
        return match.group(0)
    word = arguments[place]
    value = word.group(0).strip("'\"")
    if not value or _is_marker(value) or value.startswith("$"):
        return match.group(0)
    start, end = word.span()
    quote = word.group(0)[0] if word.group(0)[0] in "'\"" else ""
    rest = match.group("rest")
    return f"htpasswd{rest[:start]}{quote}{_REDACTED}{quote}{rest[end:]}"


def _answered(text: str, previous: Sequence[str]) -> str:
    """``text`` redacted whole when it is one word answering one of the ``previous`` turns
    that asked for, or announced, a secret (an ordinary word, "yes" or "Thanks!", stays)."""
    said = text.strip()
    if _phrase_answer(said, previous):
        return text.replace(said, _REDACTED)
    word = said.rstrip(".,;!?")  # trailing punctuation, only to judge the word
    if not 4 <= len(word) <= 200 or any(c.isspace() for c in word) or _is_marker(word):
        return text
    if word.isalpha() and (word.islower() or word.isupper() or word[1:].islower()):
        return text
    if not any(ASKED_RE.search(turn[-200:]) for turn in previous):
        return text
    return text.replace(said, _REDACTED)


def _phrase_answer(said: str, previous: Sequence[str]) -> bool:
    """Whether ``said``, one line of 2 to 24 words, answers a turn that announced a phrase:
    12 or more plain words are a seed; fewer, words that do not read as prose."""
    words = said.split()
    if not 2 <= len(words) <= 24 or "\n" in said or len(said) > 300:
        return False
    if not all(PHRASE_WORD_RE.fullmatch(word.rstrip(".,;!?") or "-") for word in words):
        return False
    if not any(PHRASE_ASKED_RE.search(turn[-200:]) for turn in previous):
        return False
    if len(words) >= 12 and all(word.rstrip(".").isalpha() for word in words):
        return True
    folded = {word.casefold().rstrip(".,;:!?") for word in words}
    return not _reads_as_prose(words) and PHRASE_PROSE.isdisjoint(folded)


def _answered_lines(text: str) -> str:
    """A document's lines, each lone word under a line that announced a secret redacted
    (``## Wifi password`` then ``- FakeWifi0042``), as :func:`_answered` does for turns."""
    lines = text.split("\n")
    before: list[str] = []
    for number, line in enumerate(lines):
        item = ITEM_RE.match(line)
        head = item.group(0) if item else ""
        if before and line.strip():
            lines[number] = head + _answered(line[len(head) :], before[-2:])
        if line.strip():
            before.append(line)
    return "\n".join(lines)


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _replace_random(match: re.Match[str]) -> str:
    value = match.group("value")
    has_digit = any(c.isdigit() for c in value)
    if not (has_digit and any(c.isalpha() for c in value)) or _entropy(value) < MIN_ENTROPY:
        return match.group(0)
    return match.group(0)[: match.start("value") - match.start()] + _REDACTED


def _replace_basic(match: re.Match[str]) -> str:
    """HTTP Basic credentials are base64 of ``user:password``; other words after "basic" stay."""
    try:
        decoded = base64.b64decode(match.group("value"), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return match.group(0)
    if ":" not in decoded or not decoded.isprintable():
        return match.group(0)
    return match.group(0)[: match.start("value") - match.start()] + "[REDACTED:basic-auth]"


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _replace_card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group(0))
    if 13 <= len(digits) <= 19 and digits[0] in "23456" and _luhn(digits):
        return "[REDACTED:card-number]"
    return match.group(0)


_CALLBACKS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    ("basic-auth", BASIC_RE, _replace_basic),
    ("card-number", CARD_RE, _replace_card),
    *(("command-line", pattern, _replace_command) for pattern in COMMAND_RES),
    ("command-line", HTPASSWD_RE, _replace_htpasswd),
    ("phrase", PHRASE_IS_RE, _replace_phrase),
    ("pin", PIN_RE, _replace_value),
    ("password", PASSWORD_ASSIGNMENT_RE, _replace_value),
    ("key-value", KEY_ASSIGNMENT_RE, _replace_value),
    ("key-value", IS_RE, _replace_value),
    ("key-value", PASSWORD_WORD_RE, _replace_value),
    ("key-value", ENTROPY_RE, _replace_random),
)


def redact(text: str, previous: str | Sequence[str] = "", *, keep_lines: bool = False) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``; ``previous`` is
    the turn said just before, or the last few, when ``text`` is a turn (a reply may come
    between "my password is" and the password; see the module docstring).  With
    ``keep_lines`` a secret over several lines leaves its line breaks, so a document's line
    numbers still point at the same lines."""
    if previous:
        text = _answered(text, (previous,) if isinstance(previous, str) else previous)
    if keep_lines and "\n" in text:
        text = _answered_lines(text)
    # A secret redacted can bring another into a pattern's reach ("htpasswd -b f u -k" takes
    # the "-k" of an "openssl enc -k" as its password, after which "enc -k Bearer" stands
    # alone): again, until nothing changes, so that redacting twice is redacting once.
    for _ in range(_MAX_ROUNDS):
        again = _redact_once(text, keep_lines)
        if again == text:
            break
        text = again
    return text


_MAX_ROUNDS = 8  # each round that changes the text replaces a secret with a marker


def _redact_once(text: str, keep_lines: bool) -> str:
    """One pass of every pattern over ``text`` (see :func:`redact`)."""
    folded = text.casefold()
    present = {marker for marker in ALL_MARKERS if marker in folded}
    shaped = SHAPES.search(text) is not None
    if not (present or shaped):
        return text

    def needed(kind: str) -> bool:
        markers = MARKERS[kind]
        return not present.isdisjoint(markers) if markers else shaped

    for kind, pattern in PATTERNS:
        if needed(kind):
            marker = f"[REDACTED:{kind}]"
            text = pattern.sub(_kept(_constant(marker)) if keep_lines else marker, text)
    for kind, pattern, replace in _CALLBACKS:
        if needed(kind):
            text = pattern.sub(_kept(replace) if keep_lines else replace, text)
    # A token redacted after a key word brings the next one into the word's reach: again,
    # until nothing changes (each round makes the text shorter), so redacting twice is once.
    if needed("key-value"):
        while (again := ENTROPY_RE.sub(_replace_random, text)) != text:
            text = again
    return text


def _constant(marker: str) -> Callable[[re.Match[str]], str]:
    return lambda _: marker


def _kept(replace: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """``replace``, followed by the line breaks it took out."""

    def keeping(match: re.Match[str]) -> str:
        out = replace(match)
        return out + "\n" * (match.group(0).count("\n") - out.count("\n"))

    return keeping


def redact_fields(value: Any) -> Any:
    """A JSON value with every string redacted and every value under a secret-looking key
    (``smtp_password``, ``api_key``, ``token``) replaced whole, whatever it holds."""
    if isinstance(value, dict):
        return {
            key: _REDACTED if SECRET_KEY_RE.search(str(key)) else redact_fields(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_fields(item) for item in value]
    return redact(value) if isinstance(value, str) else value
