"""How a recalled memory reads in the payload: one line of quoted data each (nothing hidden,
no markup, no block opener), cut to its length at a word, dated in words."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..vault.dates import human_annotations, human_date
from .results import PassageHit

# A quoted line is cut at this many characters: one long turn must not crowd out the rest.
PASSAGE_CHARS = 360
# A header's summary is cut at this many characters.  Only an episode none of whose lines is
# quoted shows one: where lines are quoted they are the evidence, and on LoCoMo dev the room a
# summary took brought more evidence as further lines than as a summary.
HEADER_SUMMARY_CHARS = 90
# Appended to a fact, an episode header or a timeline line of low confidence: such memories
# are shown only after all else.
LOW_CONFIDENCE = " (low confidence)"
_MIN_LINE_CHARS = 60  # below this a cut line says too little to be worth its place
SESSION_LINE_CHARS = 200
# Recalled text is rendered as data (see ``_clean``).  Characters that hide or reorder text
# are dropped: C0/C1 controls that are not whitespace (NUL ...), the Unicode format characters
# (zero-width spaces and joiners, bidi overrides and isolates, invisible operators, the
# "tag" letters U+E0000-E007F that spell text no one sees), Hangul fillers, the combining
# grapheme joiner and the variation selectors beyond the 16 emoji ones.
_HIDDEN_RE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd"
    "\u070f\u0890\u0891\u08e2\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
    "\U000e0100-\U000e01ef]"
)
# A run of emoji variation selectors shows as one (or none): its tail can only carry data.
_SELECTOR_RUN_RE = re.compile("([\ufe00-\ufe0f])[\ufe00-\ufe0f]+")
# Markup a model may read as structure wherever it stands: our own tag (any case or
# spacing, with or without its ">", so a cut-off one is caught too), chat-template tokens
# (<|im_start|>, <<SYS>>, [INST] ...) and any XML-like tag (<system>, </s>, <instructions>).
# Matched on the text's look-alike skeleton (_LOOKALIKES), so ＜/ｍemoryclaw＞ counts too.
_MARKUP_RE = re.compile(
    r"<<\s*/?\s*sys\s*>>"
    r"|<\|[^<>|]{0,80}\|>"
    r"|\[\s*/?\s*(?:inst|sys|system_prompt|available_tools|tool_calls|tool_results)\s*\]"
    r"|<\s*/?\s*memoryclaw[^<>]{0,80}>?"
    r"|</?[^\W\d_][\w:.-]{0,80}(?:\s[^<>]{0,200})?/?>",
    re.IGNORECASE,
)
# What a defanged tag's brackets become: visibly brackets, but no tag to a model or a parser.
_QUOTE_OPEN, _QUOTE_CLOSE = "‹", "›"
# Cyrillic and Greek letters that look Latin, each followed by the letter it looks like.
_LATIN_LOOKALIKES = (
    "аa еe оo рp сc уy хx іi јj ѕs ԁd ӏl οo αa АA ВB ЕE КK МM НH ОO РP СC ТT ХX УY"
    " ΑA ΒB ΕE ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX"
)
# Characters written in place of those that spell markup, one for one (positions are kept):
# fullwidth forms, bracket, slash and bar look-alikes, and Cyrillic and Greek letters that
# look Latin.  Used only to find markup; the text shown keeps its own characters.
_LOOKALIKES = str.maketrans(
    {
        **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
        **dict.fromkeys("\u2039\u3008\u2329\u27e8\u27ea\u02c2\u1438\u276c\u276e\ufe64", "<"),
        **dict.fromkeys("\u203a\u3009\u232a\u27e9\u27eb\u02c3\u1433\u276d\u276f\ufe65", ">"),
        **dict.fromkeys("\u2044\u2215\u29f8\u2571", "/"),
        **dict.fromkeys("\u2223\u01c0\u05c0", "|"),
        **{pair[0]: pair[1] for pair in _LATIN_LOOKALIKES.split()},
    }
)
# Markdown that opens a block when it starts a line (a heading, a quote, a code fence, a rule
# or setext underline).  Recalled text never starts a line, but it may follow the payload's
# bare indentation, so one at its start is escaped the markdown way.
_BLOCK_START_RE = re.compile(r"#{1,6}(?=\s|$)|>|`{3}|~{3}|([-*_=])\s*\1\s*\1")


def _clean(text: str) -> str:
    """Recalled text as quoted data: one line, nothing hidden, no markup, no block opener.

    Line breaks of every kind (and tabs, and other whitespace) become one space; characters
    that hide or reorder text are dropped; tags and chat-template tokens, however spelled,
    get ``‹ ›`` for brackets (so a stored ``</memoryclaw>`` shows as ``‹/memoryclaw›`` and
    cannot end the block); a heading, quote, fence or rule at the start is escaped with
    ``\\``.  Ordinary sentences come out as they went in.
    """
    # Most lines are printable ASCII, single-spaced: nothing in them is hidden or spaced, and
    # only one with a bracket may hold markup.
    plain = text.isascii() and text.isprintable() and " " not in (text[:1], text[-1:])
    if not plain or "  " in text:
        text = _SELECTOR_RUN_RE.sub(r"\1", _HIDDEN_RE.sub("", text))
        text = _defang(" ".join(text.split()))
    elif "<" in text or "[" in text:
        text = _defang(text)
    return "\\" + text if _BLOCK_START_RE.match(text) else text


def _defang(text: str) -> str:
    """``text`` with the outer brackets of its markup (``_MARKUP_RE``) made ``‹ ›``, markup
    inside a match included."""
    skeleton = text.translate(_LOOKALIKES)
    out, done = [], 0
    for match in _MARKUP_RE.finditer(skeleton):
        found = match.group(0)
        opening = len(found) - len(found.lstrip("<["))
        closing = len(found) - len(found.rstrip(">]"))
        # what a match spans may hold more markup (a cut-off "</memoryclaw[/INST]"): defanged too
        inner = _defang(text[match.start() + opening : match.end() - closing])
        out += [text[done : match.start()], _QUOTE_OPEN * opening, inner, _QUOTE_CLOSE * closing]
        done = match.end()
    return "".join([*out, text[done:]])


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` at a word boundary, marked with an ellipsis."""
    if len(text) <= max_chars:
        return text
    cut = text[: max(0, max_chars - 1)].rstrip()
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut + "…"


def _quote(passage: PassageHit) -> str:
    """``  #3 8 May 2023 Caroline: I went … yesterday (7 May 2023) …``"""
    mark = f"#{passage.turn} " if passage.turn is not None else ""
    who = f"{_clean(passage.speaker)}: " if passage.speaker else ""
    text = human_annotations(_clean(passage.text))
    # a line under an episode's header is dated by it; a recent turn carries its own date
    day = f"{human_date(passage.timestamp[:10])} " if passage.via == "log" else ""
    head = f"  {mark}{day}{who}"
    return head + shorten(text, max(PASSAGE_CHARS - len(head), _MIN_LINE_CHARS))


def _header(name: str, timestamp: str, summary: str = "") -> str:
    """``- ep-d6b27f26 (8 May 2023)``, and ``: summary`` when one is given."""
    summary = shorten(_clean(summary), HEADER_SUMMARY_CHARS)
    day, shown = human_date(timestamp[:10]), _clean(name)  # an id is hand-editable text
    return f"- {shown} ({day}): {summary}" if summary else f"- {shown} ({day})"


def _beyond_a_quote(summary: str) -> str:
    """What a summary says besides quoting a turn: all of a summary that quotes none; of
    ``Ann asked Bob about rent: "…?"`` the topic; of ``Ann told Bob: "…"`` nothing (the quoted
    lines of its episode are the turns the query matched, and say more in the same room)."""
    head, quote, _ = summary.partition(': "')
    if not quote:
        return summary
    return head if " about " in head else ""


def session_lines(working: Mapping[str, Any]) -> list[str]:
    """What a live session is doing that its history does not hold, as payload lines: the
    steps of its active skill (read from the vault).  Its goal, observations and the steps
    the assistant stated are turns of the session, which the host sends as its history."""
    skill = working.get("active_skill")
    plan = [str(step) for step in working.get("plan") or ()]
    if not (isinstance(skill, str) and skill and plan):
        return []
    return [shorten(_clean(f"- plan ({skill}): {'; '.join(plan)}"), SESSION_LINE_CHARS)]
