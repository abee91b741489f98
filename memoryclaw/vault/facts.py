"""Fact files (``semantic/*.md``): facts as bullets, nested bullets, tables and notes, each
with its provenance comment and superseded marker; parse a file, and format the lines and
comments written into one.

Pure functions over text: no disk I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ParseError
from .episodes import CONFIDENCE_LEVELS
from .factnames import INSTRUCTION, INSTRUCTIONS_FILE, UNNAMED_ENTITY
from .frontmatter import body_lines, meta_scope, optional_str, split_frontmatter
from .naming import short_hash
from .values import DATE_RE, value_kind


@dataclass(frozen=True)
class Fact:
    """One (entity, field, value) with where it came from."""

    id: str
    path: str
    line: int
    section: str
    entity: str
    field: str
    value: str
    form: str  # bullet | nested | table | note
    source: str = "hand"
    updated: str = ""
    confidence: str = "high"
    agent: str | None = None  # None: any agent
    scope: str | None = None  # None: owner-level
    # A superseded value stays in its file but is not current (see SUPERSEDED_KEY).
    superseded: bool = False
    superseded_on: str = ""  # YYYY-MM-DD, "" when the marker gives no date
    superseded_by: str = ""  # the value that replaced it, "" when the marker does not say


_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET_RE = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d{1,3}[.)])\s+(?P<text>.*?)\s*$")
# a thematic break ("---", "***", "___") or a line of no words: no fact
_BREAK_RE = re.compile(r"^\W*$|^\s*([-*_])(?:\s*\1){2,}\s*$")
_KEY_VALUE_RE = re.compile(r"^(?P<key>[^:|]{1,120}?)\s*:(?:\s+(?P<value>.*?)|\s*)$")
TRAILING_COMMENT_RE = re.compile(r"\s*<!--(?P<body>.*?)-->\s*$")
_COMMENT_LINE_RE = re.compile(r"^\s*<!--.*-->\s*$")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_COMMENT_OPEN_RE = re.compile(r"^\s*<!--(?!.*-->)")


def parse_provenance(comment: str) -> dict[str, str]:
    """Read ``source: x; updated: y; confidence: z`` from a comment body."""
    out: dict[str, str] = {}
    for part in comment.split(";"):
        key, sep, value = part.partition(":")
        if sep and key.strip() and value.strip():
            out[" ".join(key.split()).lower()] = value.strip()
    return out


def format_provenance(
    source: str,
    updated: str,
    confidence: str,
    *,
    agent: str | None = None,
    scope: str | None = None,
) -> str:
    """The trailing HTML comment a machine-written fact line carries; no value can break a
    line, end the comment or add a key to it (see :func:`_comment_safe`)."""
    values = {"source": source, "updated": updated, "confidence": confidence}
    values |= {"agent": agent or "", "scope": scope or ""}
    parts = [f"{key}: {_comment_safe(value)}" for key, value in values.items() if value]
    return f"<!-- {'; '.join(parts)} -->"


# The provenance key that marks a fact superseded: ``superseded: 2025-06-01 by new@example.com``
# (the date and the ``by`` part are each optional).  On a line stating several facts (a table
# row) ``superseded FIELD: ...`` marks only that field's fact.
SUPERSEDED_KEY = "superseded"
_SUPERSEDED_VALUE_RE = re.compile(r"^(?P<on>\d{4}-\d{2}-\d{2})?\s*(?:\bby\b\s*(?P<by>.*))?$", re.I)


_YES = frozenset({"yes", "true", "x"})  # ``superseded: yes`` says no more than that


def parse_superseded(text: str) -> tuple[str, str]:
    """Read a superseded marker's value into (date or "", replacing value or "").

    Lenient, since people edit it: text that is neither a date nor ``by X`` is kept whole as
    the ``by`` part.
    """
    text = text.strip()
    match = _SUPERSEDED_VALUE_RE.match(text)
    if match is None:
        on = text[:10] if DATE_RE.match(text[:10]) else ""
        rest = text[len(on) :].strip()
        return on, "" if rest.lower() in _YES else rest
    return match.group("on") or "", (match.group("by") or "").strip()


def _comment_safe(text: str) -> str:
    """Text that cannot end a provenance comment or split it into keys."""
    text = " ".join(text.split()).replace(";", ",")
    while "-->" in text or "<!--" in text:  # once is not enough: "--->" would become "-->"
        text = text.replace("-->", "->").replace("<!--", "<!-")
    return text.strip()


def format_superseded(on: str, by: str | None) -> str:
    """A superseded marker's value: ``2025-06-01 by new value``."""
    tail = _comment_safe(by or "")
    if not tail:
        return on or "yes"  # an empty value would not be read as a marker at all
    return f"{on} by {tail}".strip()


def mark_superseded(line: str, on: str, by: str | None, field: str | None = None) -> str:
    """``line`` with a superseded marker in its trailing comment (one is added if it has none).

    ``field`` names the fact on a line that states several (a table row); a marker already
    there for the same fact is replaced, everything else in the comment is kept.
    """
    key = f"{SUPERSEDED_KEY} {field.lower()}" if field else SUPERSEDED_KEY
    entry = f"{key}: {format_superseded(on, by)}"
    match = TRAILING_COMMENT_RE.search(line)
    if match is None:
        return f"{line.rstrip()} <!-- {entry} -->"
    parts = [p.strip() for p in match.group("body").split(";") if p.strip()]
    kept = [p for p in parts if p.partition(":")[0].strip().lower() != key]
    body = "; ".join([*kept, entry])
    return f"{line[: match.start()].rstrip()} <!-- {body} -->"


def format_fact_line(entity: str, field: str, value: str, provenance: str | None = None) -> str:
    """A bullet fact line; a field the value does not imply is written as ``Entity (field)``."""
    implied = value_kind(value) == field or field in {"value", ""}
    head = entity if implied else f"{entity} ({field})"
    tail = f" {provenance}" if provenance else ""
    return f"- {head}: {value}{tail}"


def _split_trailing_comment(text: str) -> tuple[str, dict[str, str]]:
    match = TRAILING_COMMENT_RE.search(text)
    if not match:
        return text, {}
    return text[: match.start()].rstrip(), parse_provenance(match.group("body"))


def table_cells(line: str) -> list[str]:
    """The stripped cells of a markdown table row."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]


_EXPLICIT_FIELD_RE = re.compile(r"^(?P<entity>.+?)\s*\((?P<field>[\w][\w .-]{0,39})\)$")


def _field_for(entity: str, value: str) -> tuple[str, str]:
    """Read ``John (role)`` and ``John email`` keys; otherwise infer the field from the value."""
    explicit = _EXPLICIT_FIELD_RE.match(entity.strip())
    if explicit:
        return explicit.group("entity"), explicit.group("field")
    kind = value_kind(value)
    words = entity.split()
    if len(words) > 1 and kind is not None and words[-1].lower() == kind:
        return " ".join(words[:-1]), kind
    return entity, kind or "value"


class _FactCollector:
    def __init__(self, path: str, default_updated: str, defaults: Mapping[str, str | None]) -> None:
        self.path = path
        self.default_updated = default_updated
        self.defaults = defaults  # the file's own agent and scope
        self.facts: list[Fact] = []
        self._seen: dict[str, int] = {}

    def add(
        self,
        line: int,
        section: str,
        entity: str,
        field: str,
        value: str,
        form: str,
        provenance: Mapping[str, str],
    ) -> None:
        """Record one fact; blank entities or values are not facts."""
        entity, value = entity.strip().strip("*_`").strip(), value.strip()
        if not entity or not value:
            return
        base = f"f-{short_hash(self.path, form, entity.lower(), field.lower(), value)}"
        count = self._seen.get(base, 0) + 1
        self._seen[base] = count
        confidence = provenance.get("confidence", "high").lower()
        if confidence not in CONFIDENCE_LEVELS:
            confidence = "high"
        scope = meta_scope(provenance, self.path, line) if "scope" in provenance else None
        marker = provenance.get(f"{SUPERSEDED_KEY} {field.strip().lower()}")
        if marker is None:
            marker = provenance.get(SUPERSEDED_KEY)
        on, by = parse_superseded(marker) if marker is not None else ("", "")
        self.facts.append(
            Fact(
                id=base if count == 1 else f"{base}-{count}",
                path=self.path,
                line=line,
                section=section,
                entity=entity,
                field=field.strip().lower(),
                value=value,
                form=form,
                source=provenance.get("source", "hand"),
                updated=provenance.get("updated", self.default_updated),
                confidence=confidence,
                agent=provenance.get("agent") or self.defaults["agent"],
                scope=scope or self.defaults["scope"],
                superseded=marker is not None,
                superseded_on=on,
                superseded_by=by,
            )
        )


def parse_facts(text: str, path: str, default_updated: str) -> list[Fact]:
    """Every fact in a semantic file, in file order, in all three accepted forms.

    The file's frontmatter may set ``agent`` and ``scope`` for its facts; a fact's own
    provenance comment overrides them.

    ``default_updated`` (``YYYY-MM-DD``, usually the file's mtime) dates hand lines that carry
    no provenance comment.
    """
    if "\x00" in text:
        raise ParseError(path, "binary content (NUL byte), not a markdown file")
    meta, body, first_line = split_frontmatter(text, path)
    defaults = {"agent": optional_str(meta, "agent", path), "scope": meta_scope(meta, path)}
    out = _FactCollector(path, default_updated, defaults)
    folder, _, name = path.rpartition("/")
    instructions = name == INSTRUCTIONS_FILE and folder.split("/")[0] == "semantic"
    section = ""
    parent: str | None = None
    above: str | None = None  # the entity of the last "- key: value" line, for lines under it
    parent_provenance: dict[str, str] = {}
    header: list[str] | None = None
    in_fence = False
    in_comment = False
    for offset, raw in enumerate(body_lines(body)):
        lineno = first_line + offset
        if in_comment:  # inside a multi-line <!-- comment -->, invisible when rendered
            in_comment = "-->" not in raw
            continue
        if _COMMENT_OPEN_RE.match(raw):
            in_comment = True
            continue
        if _FENCE_RE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence or not raw.strip() or _COMMENT_LINE_RE.match(raw):
            header = None if not raw.strip() else header
            continue
        heading = _HEADING_RE.match(raw)
        if heading:
            section, parent, header, above = heading.group(2), None, None, None
            continue
        if raw.lstrip().startswith("|"):
            parent = above = None
            content, provenance = _split_trailing_comment(raw)
            if _TABLE_SEP_RE.match(content):
                continue
            cells = table_cells(content)
            if header is None:
                header = [cell.lower() for cell in cells]
                continue
            entity = cells[0] if cells else ""
            for column, value in zip(header[1:], cells[1:]):
                out.add(lineno, section, entity, column or "value", value, "table", provenance)
            continue
        header = None
        bullet = _BULLET_RE.match(raw)
        if bullet is None and _BREAK_RE.match(raw):
            continue
        text = bullet.group("text") if bullet else raw.strip()
        content, provenance = _split_trailing_comment(text)
        kv = _KEY_VALUE_RE.match(content)
        said = kv.group("value") if kv else None
        indented = raw[:1].isspace()
        if bullet is None or len(bullet.group("indent").expandtabs(4)) >= 2:
            # a line under "- Falcon:" is Falcon's, and so is one indented under
            # "- Tom: tom@example.org" Tom's: a "key: value" line a field, any other a note
            owner, meta = None, provenance
            if parent is not None and (said or bullet or indented):
                owner, meta = parent, {**parent_provenance, **provenance}
            elif above is not None and indented:
                owner = above
            if owner is not None:
                field, form = (kv.group("key"), "nested") if kv and said else ("note", "note")
                out.add(lineno, section, owner, field, said or content, form, meta)
                continue
        # Any other line is a fact of its own, as a bullet is: one written without a bullet,
        # one indented under no key (a slip of the tab key), a wrapped line.  A hand-made file
        # need not follow the accepted forms to the letter: none of it is left unread.
        parent = above = None
        if kv and said:
            entity, field = _field_for(kv.group("key"), said)
            if instructions and field != INSTRUCTION:  # "- When I ask about X: do Y"
                entity, field, said = section or UNNAMED_ENTITY, INSTRUCTION, content.strip()
            else:
                above = entity
            out.add(lineno, section, entity, field, said, "bullet", provenance)
        elif kv:
            parent, parent_provenance = kv.group("key").strip(), provenance
        else:
            field = INSTRUCTION if instructions else "note"
            out.add(lineno, section, section or UNNAMED_ENTITY, field, content, "note", provenance)
    return out.facts
