"""What consolidation does after it files a standing instruction or preference
(:mod:`memoryclaw.consolidate.standing`): the line is given the turn it was said in and the
topic it applies to, and the earlier statements of the same speaker that it takes back or
says again are marked superseded by it, kept in their file as history (the marker of
:mod:`memoryclaw.consolidate.supersede`)."""

from __future__ import annotations

from pathlib import Path

from ..recall.standing import topic_of
from ..vault.factnames import STANDING_FIELDS
from ..vault.facts import TRAILING_COMMENT_RE, mark_superseded, parse_facts
from ..vault.files import atomic_write, is_staged, read_text, resolve_inside
from ..vault.values import value_key
from .extraction import FactDraft
from .review import target_file
from .standing import restates, reverses


def after_filing(root: Path, fact: FactDraft, today: str) -> list[str]:
    """Note the turn and topic on ``fact``'s line and supersede what it takes back; the values
    it superseded.  Nothing happens unless ``fact`` is a standing one stated as current in its
    file (one held for review is not filed, so it takes nothing back)."""
    if fact.field not in STANDING_FIELDS:
        return []
    rel = target_file(fact.field)[0]
    path = resolve_inside(root, rel)
    if not (is_staged(path) or path.is_file()):
        return []
    lines = read_text(root, rel).split("\n")
    current = [
        f
        for f in parse_facts("\n".join(lines), rel, today)
        if not f.superseded
        and f.field == fact.field
        and f.entity.casefold() == fact.entity.casefold()
    ]
    key = value_key(fact.value)
    mine = [f for f in current if value_key(f.value) == key]
    if not mine:
        return []
    changed = _with_keys(lines, mine[-1].line, fact.turn, topic_of(fact.value))
    # what it takes back, and what it says again (the newest wording stands; the older is history)
    taken_back = [
        f
        for f in current
        if value_key(f.value) != key
        and (reverses(fact.value, f.value) or restates(fact.value, f.value))
    ]
    for old in taken_back:
        lines[old.line - 1] = mark_superseded(lines[old.line - 1], today, fact.value)
    if changed or taken_back:
        atomic_write(path, "\n".join(lines))
    return [f.value for f in taken_back]


def _with_keys(lines: list[str], number: int, turn: int, topic: str) -> bool:
    """Add ``turn`` (and ``topic``) to the provenance comment of line ``number``; whether the
    line changed (a line that has them, or has no comment, is left as it is)."""
    line = lines[number - 1]
    match = TRAILING_COMMENT_RE.search(line)
    if match is None or "turn:" in match.group("body"):
        return False
    extra = [f"turn: {turn}"] + ([f"topic: {_safe(topic)}"] if topic else [])
    body = "; ".join([match.group("body").strip(), *extra])
    lines[number - 1] = f"{line[: match.start()].rstrip()} <!-- {body} -->"
    return True


def _safe(text: str) -> str:
    return " ".join(text.replace(";", ",").replace("-->", "").replace("<!--", "").split())
