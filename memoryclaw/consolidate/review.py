"""The review queue (``semantic/_pending.md``) and the fact files it feeds.

A pending line is a fact line with a mark in front (``- LOW``, ``- INVALID``, ``- CONFLICT``
with ``(was <old value>)``, or ``- UNTRUSTED`` with ``(said by <who> in <conversation>)``: a
fact somebody other than the owner stated) and the usual provenance comment.  Its id is a hash of
the line, so it stays the same until the line changes.  Approving moves the fact into its
semantic file — for a conflict, the old value stays where it stands, marked superseded
(:mod:`memoryclaw.consolidate.supersede`), and the new one is written next to it; rejecting drops
the line.  Other lines of ``_pending.md`` (headings, notes) are left alone.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import NotFoundError
from ..vault.files import PENDING_FILE, SEMANTIC_DIR, atomic_write, read_text, resolve_inside
from ..vault.notes import (
    TRAILING_COMMENT_RE,
    format_fact_line,
    format_provenance,
    parse_facts,
    short_hash,
    value_key,
)
from .supersede import SupersedeReport, supersede

# Which semantic file a field's facts go to; anything else goes to facts.md.
FACT_FILES = {
    "contacts.md": ("Contacts", {"email", "phone", "birthday", "address"}),
    "preferences.md": ("Preferences", {"prefers", "likes", "dislikes"}),
    "projects.md": ("Projects", {"deadline", "url", "command", "path", "due"}),
    "life.md": ("Life", {"event", "bought", "hobby", "pet", "job", "employer", "lives in"}),
}
OTHER_FACTS = ("facts.md", "Facts")
# Fields a person has many values of at once: a new value is one more fact, not a conflict.
MANY_VALUED = frozenset(
    """likes dislikes prefers event bought hobby pet son daughter brother sister cousin niece
    nephew aunt uncle friend grandmother grandfather grandma grandpa kids children
    appointment""".split()
) | {"best friend", "moved from", "moved to"}
_MARKED_RE = re.compile(r"^-\s+(LOW|CONFLICT|INVALID|UNTRUSTED)\s+(.*)$")
_WAS_RE = re.compile(r"\s+\(was (?P<was>[^)]*)\)(?=\s*(<!--|$))")
_SAID_BY_RE = re.compile(r"\s+\(said by (?P<by>[^)]*)\)(?=\s*(<!--|$))")


def untrusted_note(name: str | None, sender: str | None, where: str) -> str:
    """`` (said by Alex [tg:42] in group:…)``: who stated an untrusted fact, and where."""
    who = " ".join(part for part in (name, f"[{sender}]" if sender else None) if part)
    text = f"said by {who or 'another participant'} in {where}"
    return f" ({text.replace('(', ' ').replace(')', ' ')})"


@dataclass(frozen=True)
class PendingFact:
    """One fact waiting for review."""

    id: str
    mark: str  # LOW | INVALID | CONFLICT | UNTRUSTED
    entity: str
    field: str
    value: str
    was: str | None
    line: str
    said_by: str | None = None  # for UNTRUSTED: the participant and the conversation

    def as_dict(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict."""
        return {
            "id": self.id,
            "mark": self.mark,
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "was": self.was,
            "said_by": self.said_by,
            "line": self.line,
        }


def same_value(a: Any, b: str) -> bool:
    """Values equal up to case, spacing and punctuation
    (:func:`~memoryclaw.vault.notes.value_key`)."""
    return value_key(str(a)) == value_key(b)


def target_file(fact_field: str) -> tuple[str, str]:
    """The semantic file (vault path) and heading a fact with this field belongs under."""
    for name, (heading, fields) in FACT_FILES.items():
        if fact_field in fields:
            return f"{SEMANTIC_DIR}/{name}", heading
    return f"{SEMANTIC_DIR}/{OTHER_FACTS[0]}", OTHER_FACTS[1]


def append_line(root: Path, rel: str, heading: str, line: str) -> None:
    """Append ``line`` to a semantic file, creating it with ``# heading`` when new."""
    path = resolve_inside(root, rel)
    text = read_text(root, rel) if path.exists() else f"# {heading}\n\n"
    if not text.endswith("\n"):
        text += "\n"
    atomic_write(path, text + line + "\n")


def remove_lines(root: Path, rel: str, lines: set[str]) -> None:
    """Drop these exact lines from a file."""
    text = read_text(root, rel)
    kept = [line for line in text.split("\n") if line not in lines]
    atomic_write(resolve_inside(root, rel), "\n".join(kept))


def _parse(line: str) -> PendingFact | None:
    marked = _MARKED_RE.match(line)
    if marked is None:
        return None
    # A sync's conflict (see memoryclaw.share.sync) is reviewed like any other conflict.
    body = f"- {marked.group(2).removeprefix('(sync) ')}"
    was, said_by = _WAS_RE.search(body), _SAID_BY_RE.search(body)
    body = _SAID_BY_RE.sub("", _WAS_RE.sub("", body))
    facts = parse_facts(body, PENDING_FILE, "")
    if len(facts) != 1:
        return None
    fact = facts[0]
    return PendingFact(
        id=f"p-{short_hash(line, length=8)}",
        mark=marked.group(1),
        entity=fact.entity,
        field=fact.field,
        value=fact.value,
        was=was.group("was") if was else None,
        line=line,
        said_by=said_by.group("by") if said_by else None,
    )


def pending_facts(root: Path) -> list[PendingFact]:
    """Every fact in ``_pending.md``, in file order."""
    if not (root / PENDING_FILE).exists():
        return []
    entries = (_parse(line) for line in read_text(root, PENDING_FILE).splitlines())
    return [entry for entry in entries if entry is not None]


def matching(root: Path, entity: str, field: str, value: str) -> list[PendingFact]:
    """Pending entries holding this (entity, field, value)."""
    return [
        p
        for p in pending_facts(root)
        if p.entity.casefold() == entity.casefold()
        and p.field.casefold() == field.casefold()
        and same_value(p.value, value)
    ]


def _find(root: Path, ident: str) -> PendingFact:
    for entry in pending_facts(root):
        if entry.id == ident:
            return entry
    raise NotFoundError("pending fact", ident)


def reject(root: Path, ident: str) -> PendingFact:
    """Drop a pending fact; the entry that was dropped."""
    entry = _find(root, ident)
    remove_lines(root, PENDING_FILE, {entry.line})
    return entry


def replace_value(
    root: Path,
    paths: Sequence[str],
    entity: str,
    field: str,
    value: str,
    provenance: str,
    today: str,
) -> SupersedeReport:
    """Make ``value`` current for ``entity``'s ``field``: the current values in ``paths`` are
    kept, marked superseded (:func:`memoryclaw.consolidate.supersede.supersede`), and the new value
    is
    stated next to them, or appended where a new fact of that field goes."""
    report = supersede(root, paths, entity, field, value, provenance, today)
    if report.path is not None:
        return report
    rel, heading = target_file(field)
    append_line(root, rel, heading, format_fact_line(entity, field, value, provenance))
    line = len(read_text(root, rel).rstrip("\n").split("\n"))
    return dataclasses.replace(report, path=rel, line=line)


def approve(
    root: Path, ident: str, known: list[dict[str, Any]], today: str | None = None
) -> PendingFact:
    """Move a pending fact into its semantic file; ``known`` are the index rows of the current
    values it conflicts with.

    For a conflict the old values stay where they are, marked superseded on ``today`` (default:
    the current UTC date) by the new one, which is written next to them
    (:func:`replace_value`): approving loses no value.
    """
    entry = _find(root, ident)
    comment = TRAILING_COMMENT_RE.search(entry.line)
    provenance = comment.group(0).strip() if comment else None
    if entry.mark == "CONFLICT":
        day = today or datetime.now(timezone.utc).date().isoformat()
        replace_value(
            root,
            [str(row["path"]) for row in known],
            entry.entity,
            entry.field,
            entry.value,
            provenance or format_provenance("review", day, "high"),
            day,
        )
    else:
        rel, heading = target_file(entry.field)
        append_line(
            root, rel, heading, format_fact_line(entry.entity, entry.field, entry.value, provenance)
        )
    remove_lines(root, PENDING_FILE, {entry.line})
    return entry
