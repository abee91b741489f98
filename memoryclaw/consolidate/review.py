"""The review queue (``semantic/_pending.md``, whose lines :mod:`memoryclaw.vault.pending`
reads and writes) and the fact files it feeds.

Approving moves the fact into its semantic file — for a conflict, the old value stays where it
stands, marked superseded (:mod:`memoryclaw.consolidate.supersede`), and the new one is written
next to it; rejecting drops the line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import NotFoundError
from ..vault.facts import TRAILING_COMMENT_RE, format_fact_line, format_provenance
from ..vault.files import PENDING_FILE, SEMANTIC_DIR, read_text
from ..vault.pending import PendingFact, append_line, pending_facts, remove_lines
from ..vault.values import value_key
from .supersede import SupersedeReport, supersede

# Which semantic file a field's facts go to; anything else goes to facts.md.
FACT_FILES = {
    "contacts.md": ("Contacts", {"email", "phone", "birthday", "address"}),
    "preferences.md": ("Preferences", {"prefers", "likes", "dislikes", "preference"}),
    "projects.md": ("Projects", {"deadline", "url", "command", "path", "due"}),
    "life.md": ("Life", {"event", "bought", "hobby", "pet", "job", "employer", "lives in"}),
    "instructions.md": ("Instructions", {"instruction"}),
}
OTHER_FACTS = ("facts.md", "Facts")


def same_value(a: Any, b: str) -> bool:
    """Values equal up to case, spacing and punctuation
    (:func:`~memoryclaw.vault.values.value_key`)."""
    return value_key(str(a)) == value_key(b)


def target_file(fact_field: str) -> tuple[str, str]:
    """The semantic file (vault path) and heading a fact with this field belongs under."""
    for name, (heading, fields) in FACT_FILES.items():
        if fact_field in fields:
            return f"{SEMANTIC_DIR}/{name}", heading
    return f"{SEMANTIC_DIR}/{OTHER_FACTS[0]}", OTHER_FACTS[1]


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
    is stated next to them, or appended where a new fact of that field goes."""
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
