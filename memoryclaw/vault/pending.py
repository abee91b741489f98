"""The review queue's file, ``semantic/_pending.md``: facts waiting for review.

A pending line is a fact line with a mark in front (``- LOW``, ``- INVALID``, ``- CONFLICT``
with ``(was <old value>)``, or ``- UNTRUSTED`` with ``(said by <who> in <conversation>)``: a
fact somebody other than the owner stated) and the usual provenance comment.  Its id is a hash
of the line, so it stays the same until the line changes.  Other lines of ``_pending.md``
(headings, notes) are left alone.  Approving and rejecting is
:mod:`memoryclaw.consolidate.review`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .facts import parse_facts
from .files import PENDING_FILE, atomic_write, is_staged, read_text, resolve_inside
from .naming import short_hash

# Fields a person has many values of at once: a new value is one more fact, not a conflict.
MANY_VALUED = frozenset(
    """likes dislikes prefers event bought hobby pet son daughter brother sister cousin niece
    nephew aunt uncle friend grandmother grandfather grandma grandpa kids children
    appointment instruction preference""".split()
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
    updated: str = ""  # of its provenance comment: when it was said
    agent: str | None = None
    scope: str | None = None

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


def append_line(root: Path, rel: str, heading: str, line: str) -> None:
    """Append ``line`` to a semantic file, creating it with ``# heading`` when new."""
    path = resolve_inside(root, rel)
    text = read_text(root, rel) if is_staged(path) or path.exists() else f"# {heading}\n\n"
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
        updated=fact.updated,
        agent=fact.agent,
        scope=fact.scope,
    )


def pending_facts(root: Path) -> list[PendingFact]:
    """Every fact in ``_pending.md``, in file order."""
    if not (is_staged(root / PENDING_FILE) or (root / PENDING_FILE).exists()):
        return []
    return parse_pending(read_text(root, PENDING_FILE))


def parse_pending(text: str) -> list[PendingFact]:
    """Every fact of the text of a ``_pending.md``, in file order."""
    entries = (_parse(line) for line in text.splitlines())
    return [entry for entry in entries if entry is not None]
