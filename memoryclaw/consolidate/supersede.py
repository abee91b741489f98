"""Superseded, never deleted: a fact's old value stays in its file, marked, when a new one
replaces it (an approved conflict, ``memoryclaw facts set``).

The mark is a key of the line's provenance comment
(:data:`~memoryclaw.vault.facts.SUPERSEDED_KEY`)::

    - Sarah: sarah@example.com <!-- source: …; superseded: 2025-06-01 by sarah@newco.com -->
    - Sarah: sarah@newco.com <!-- source: …; updated: 2025-06-01; confidence: high -->

The new value goes on the line after the old one, written the way the old one was (same
bullet, key and indentation), so the chain reads top to bottom; an old value in a table row
is marked for its field only (``superseded email: …``) and the new value is appended where
new facts go (:func:`memoryclaw.consolidate.review.replace_value`).  Superseded facts are indexed
but not recalled as current; :func:`fact_chain` lists every value an entity's field has had.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..vault.facts import TRAILING_COMMENT_RE, Fact, mark_superseded, parse_facts
from ..vault.files import atomic_write, read_text, resolve_inside
from ..vault.values import value_key

MAX_VALUE_CHARS = 500


@dataclass(frozen=True)
class SupersedeReport:
    """What replacing a fact's value did: the new line (where it is) and the old ones marked."""

    entity: str
    field: str
    value: str
    path: str | None  # where the new value is stated; None when nothing was written
    line: int | None
    superseded: tuple[Mapping[str, Any], ...]  # {"value", "path", "line"} of each old value
    unchanged: bool = False  # the value was current already: nothing was written

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "path": self.path,
            "line": self.line,
            "superseded": [dict(s) for s in self.superseded],
            "unchanged": self.unchanged,
        }


@dataclass(frozen=True)
class ChainLink:
    """One value in the history of an entity's field."""

    id: str
    entity: str
    field: str
    value: str
    since: str  # the fact's ``updated`` date
    until: str | None  # the date it was superseded on ("" when the marker has none); None: current
    superseded_by: str
    source: str
    path: str
    line: int

    @property
    def current(self) -> bool:
        """Whether this is a value recalled as current."""
        return self.until is None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready row."""
        return {
            "id": self.id,
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "from": self.since,
            "until": self.until,
            "superseded_by": self.superseded_by or None,
            "current": self.current,
            "source": self.source,
            "path": self.path,
            "line": self.line,
        }


def check_fact(entity: str, field: str, value: str) -> tuple[str, str, str]:
    """A fact a person gives, stripped; :class:`InvalidInputError` for one no line can hold."""
    out = []
    for name, text in (("entity", entity), ("field", field), ("value", value)):
        text = text.strip()
        if not text:
            raise InvalidInputError(name, "must not be empty")
        if "\n" in text or "\r" in text:
            raise InvalidInputError(name, "must be one line")
        if "<!--" in text or "-->" in text:
            raise InvalidInputError(name, "must not hold an HTML comment marker")
        if len(text) > MAX_VALUE_CHARS:
            raise InvalidInputError(name, f"over {MAX_VALUE_CHARS} characters")
        out.append(text)
    if ":" in out[0] or "|" in out[0] or "(" in out[0] or ")" in out[0]:
        raise InvalidInputError("entity", "must not hold ':', '|' or parentheses")
    if ":" in out[1] or not out[1].replace(" ", "").replace("-", "").replace("_", "").isalnum():
        raise InvalidInputError("field", "letters, digits, spaces, '-' and '_' only")
    return out[0], out[1].lower(), out[2]


def supersede(
    root: Path,
    paths: Sequence[str],
    entity: str,
    field: str,
    value: str,
    provenance: str,
    today: str,
) -> SupersedeReport:
    """Make ``value`` the current value of ``entity``'s ``field``: every other current value
    of it in ``paths`` (the fact files the index found it in) is marked superseded on
    ``today`` by ``value``, and ``value`` is stated with ``provenance`` after the first old
    line that states one fact.  When there is none (only table rows, or no old value) the
    report's ``path`` is None: the caller appends the new line where new facts go.

    Files are parsed afresh, so a stale index can neither misplace a mark nor drop one.  Safe
    to repeat after a crash: a marked value is not marked again, and a value already stated as
    current is not stated twice.
    """
    key = value_key(value)
    texts = {rel: read_text(root, rel).split("\n") for rel in sorted(set(paths))}
    found = {
        rel: _current(rel, lines, entity, field, _mtime_date(root, rel))
        for rel, lines in texts.items()
    }
    placed = next(
        ((rel, f.line) for rel, facts in found.items() for f in facts if value_key(f.value) == key),
        None,
    )
    existing = placed is not None
    marked: list[dict[str, Any]] = []
    for rel, lines in texts.items():
        old = [f for f in found[rel] if value_key(f.value) != key]
        if not old:
            continue
        insert_at: int | None = None
        new_line = ""
        for fact in old:
            index = fact.line - 1
            if TRAILING_COMMENT_RE.search(lines[index]) is None:
                # a hand line is dated by its file's mtime, which this write moves: keep the date
                lines[index] = f"{lines[index].rstrip()} <!-- updated: {fact.updated} -->"
            lines[index] = mark_superseded(
                lines[index], today, value, fact.field if fact.form == "table" else None
            )
            marked.append({"value": fact.value, "path": rel, "line": fact.line})
            if placed is None and insert_at is None and fact.form in {"bullet", "nested"}:
                written = _restated(lines[index], fact, value, provenance)
                if written is not None:
                    insert_at, new_line = fact.line, written
        if insert_at is not None:
            lines.insert(insert_at, new_line)
            placed = (rel, insert_at + 1)
            for entry in marked:  # the lines after the new one moved down
                if entry["path"] == rel and entry["line"] > insert_at:
                    entry["line"] += 1
        atomic_write(resolve_inside(root, rel), "\n".join(lines))
    unchanged = existing and not marked
    where = placed or (None, None)
    return SupersedeReport(entity, field, value, where[0], where[1], tuple(marked), unchanged)


def _mtime_date(root: Path, rel: str) -> str:
    """The date a hand line of the file is taken to be from (as the index dates it)."""
    moment = datetime.fromtimestamp(resolve_inside(root, rel).stat().st_mtime, tz=timezone.utc)
    return moment.date().isoformat()


def _current(rel: str, lines: list[str], entity: str, field: str, updated: str) -> list[Fact]:
    """The current (not superseded) facts of ``entity``'s ``field`` in one file."""
    facts = parse_facts("\n".join(lines), rel, updated)
    return [
        f
        for f in facts
        if not f.superseded
        and f.entity.casefold() == entity.casefold()
        and f.field == field.lower()
    ]


def _restated(marked_line: str, fact: Fact, value: str, provenance: str) -> str | None:
    """The line stating ``value`` the way ``fact``'s line stated its value (bullet, key and
    indentation kept), with ``provenance``; None when the line does not end with its value."""
    match = TRAILING_COMMENT_RE.search(marked_line)
    content = marked_line[: match.start()].rstrip() if match else marked_line.rstrip()
    if not content.endswith(fact.value):
        return None
    return f"{content[: len(content) - len(fact.value)]}{value} {provenance}"


def fact_chain(rows: Sequence[Mapping[str, Any]]) -> list[ChainLink]:
    """Index rows of facts as their history: by field, superseded values first (oldest
    first), then the current ones."""
    links = [
        ChainLink(
            id=str(r["id"]),
            entity=str(r["entity"]),
            field=str(r["field"]),
            value=str(r["value"]),
            since=str(r["updated"] or ""),
            until=str(r["superseded_on"] or "") if r["superseded"] else None,
            superseded_by=str(r["superseded_by"] or ""),
            source=str(r["source"] or ""),
            path=str(r["path"]),
            line=int(r["line"]),
        )
        for r in rows
    ]

    def order(link: ChainLink) -> tuple[str, int, str, str, str, int]:
        rank = 1 if link.current else 0
        return (link.field, rank, link.until or "", link.since, link.path, link.line)

    return sorted(links, key=order)
