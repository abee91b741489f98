"""Take forgotten lines out of one vault file, and say exactly what went.

A :class:`Matcher` says which line, turn or fact text and which episode id is forgotten
(a query's words while a forget plans, the vault's tombstones after a sync or on an
import).  :func:`scrub` turns one file's text into its text without them: an episode loses
its matching detail lines (its summary is rewritten from what remains when the summary
matches; the whole episode goes only when nothing else is left or its id is forgotten); a
raw or processed log's matching turns become :data:`FORGOTTEN` (every other turn keeps its
number); a fact file loses the matching fact lines (with the lines nested under them) and a
table the matching cells.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..errors import MemoryclawError
from .episodes import detail_passages, episode_id_for_path
from .facts import TRAILING_COMMENT_RE, parse_facts, table_cells
from .files import EPISODES_DIR, LOGS_DIR, SEMANTIC_DIR, SKILLS_DIR, active_path
from .frontmatter import join_frontmatter, split_frontmatter
from .logformat import dump_log, parse_log
from .naming import short_hash, slugify
from .tombstones import words

FORGOTTEN = "[forgotten]"
_PREVIEW = 120
_STAMPED_NAME_RE = re.compile(r"^(?P<stamp>\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})_.*\.md$")
_HEADING_RE = re.compile(r"^(#{1,6})\s")
_LABEL_RE = re.compile(r"^\*\*[^*]{1,60}:?\*\*:?$")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_SAID_RE = re.compile(r'^[^":]{1,40}? said: "(.*)"$', re.DOTALL)
_KEPT_KEYS = {"id", "timestamp", "summary", "source", "source_turns", "session", "agent", "scope"}


class Matcher(Protocol):
    """Which texts and ids are forgotten."""

    def line(self, text: str) -> bool:
        """Whether this line, turn text or fact line is forgotten."""

    def ident(self, ident: str | None) -> bool:
        """Whether this episode id (or import source key) is forgotten."""

    def speaker(self, name: str) -> bool:
        """Whether this speaker (a turn's name, an episode's participant) is forgotten: named
        by a forget query, never by a tombstone (what was said stays forgotten, not who)."""


@dataclass
class Edit:
    """What scrubbing one file changes; ``text`` None deletes the file."""

    path: str
    kind: str  # episode | log | facts | lines
    text: str | None
    new_path: str | None = None  # an episode whose file name held forgotten words
    episode_id: str | None = None
    whole: str | None = None  # why the whole episode goes
    summary: bool = False  # the summary was rewritten from what remains
    lines: list[tuple[int, str]] = field(default_factory=list)  # removed (line, text)
    turns: list[tuple[int, str]] = field(default_factory=list)  # blanked (turn, text)
    facts: list[dict[str, Any]] = field(default_factory=list)  # entity, field, value, line
    removed_text: list[str] = field(default_factory=list)  # every text taken out

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready account of the edit (texts shortened)."""
        doc: dict[str, Any] = {"path": self.path, "kind": self.kind, "delete": self.text is None}
        if self.new_path:
            doc["renamed_to"] = self.new_path
        if self.episode_id:
            doc["episode"] = self.episode_id
        if self.whole:
            doc["whole_episode"] = self.whole
        if self.summary:
            doc["summary_rewritten"] = True
        if self.lines:
            doc["lines"] = [{"line": n, "text": preview(t)} for n, t in self.lines]
        if self.turns:
            doc["turns"] = [{"turn": n, "text": preview(t)} for n, t in self.turns]
        if self.facts:
            doc["facts"] = [{**f, "value": preview(str(f["value"]))} for f in self.facts]
        return doc


def preview(text: str) -> str:
    """One line of at most ``_PREVIEW`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…"


def kind_of(rel: str) -> str | None:
    """Which scrubber a vault path takes, or None when forgetting never edits it."""
    name = rel.rsplit("/", 1)[-1]
    if not name.endswith(".md") or name.startswith("."):
        return None
    if rel.startswith(EPISODES_DIR + "/"):
        return "episode"
    if rel.startswith(LOGS_DIR + "/"):
        return "log"
    if rel.startswith(SEMANTIC_DIR + "/"):
        return "facts"
    if rel.startswith(SKILLS_DIR + "/"):
        return "lines"
    return None


def scrub(rel: str, text: str, match: Matcher) -> Edit | None:
    """The edit that takes what ``match`` forgets out of this file; None when nothing goes."""
    kind = kind_of(rel)
    try:
        if kind == "episode":
            return _episode(rel, text, match)
        if kind == "log":
            return _log(rel, text, match)
        if kind == "facts":
            return _facts(rel, text, match)
    except MemoryclawError:
        pass  # a file that does not parse loses its matching lines all the same
    return _lines(rel, text, match) if kind else None


def _lines(rel: str, text: str, match: Matcher) -> Edit | None:
    lines = text.split("\n")
    gone = [(n, line) for n, line in enumerate(lines, 1) if line.strip() and match.line(line)]
    if not gone:
        return None
    dropped = {n for n, _ in gone}
    kept = [line for n, line in enumerate(lines, 1) if n not in dropped]
    edit = Edit(rel, "lines", "\n".join(kept), lines=gone)
    edit.removed_text = [t for _, t in gone]
    return edit


def _substantive(lines: list[str]) -> bool:
    return any(
        s and not _HEADING_RE.match(s) and not _LABEL_RE.match(s) and s != "---"
        for s in (line.strip() for line in lines)
    )


def _episode(rel: str, text: str, match: Matcher) -> Edit | None:
    meta, body, start = split_frontmatter(text, rel)
    ident = str(meta.get("id") or "").strip() or episode_id_for_path(active_path(rel))
    summary = str(meta.get("summary") or "").strip()
    held = [summary, body]
    if match.ident(ident) or match.ident(str(meta.get("source") or "")):
        edit = Edit(rel, "episode", None, episode_id=ident, whole="its id was forgotten")
        edit.removed_text = held
        return edit
    lines = body.split("\n")
    gone = [(n, line) for n, line in enumerate(lines) if line.strip() and match.line(line)]
    quoted = _SAID_RE.match(summary)  # a summary quoting one turn: 'User said: "…"'
    summary_hit = bool(summary) and (
        match.line(summary) or (quoted is not None and match.line(quoted.group(1)))
    )
    removed = [line for _, line in gone] + ([summary] if summary_hit else [])
    lists = {key: meta.get(key) for key in ("tags", "entities", "participants")}
    list_hits = {
        key: [
            v
            for v in value
            if isinstance(v, str) and (match.speaker(v) if key == "participants" else match.line(v))
        ]
        for key, value in lists.items()
        if isinstance(value, list)
    }
    if not removed and not any(list_hits.values()):
        return None
    dropped = {n for n, _ in gone}
    kept = [line for n, line in enumerate(lines) if n not in dropped]
    edit = Edit(rel, "episode", None, episode_id=ident)
    edit.lines = [(start + n, line.strip()) for n, line in gone]
    edit.removed_text = removed
    if not _substantive(kept):
        edit.whole = "nothing else is left in it"
        edit.removed_text = held
        return edit
    if summary_hit:
        summary = _summary_from(kept)
        meta["summary"] = summary
        edit.summary = True
    gone_words = set().union(*(words(t) for t in removed)) if removed else set()
    left = words(summary + "\n" + "\n".join(kept))
    for key, value in lists.items():
        if isinstance(value, list):
            # a tag or entity goes with the text it came from; a participant only when named
            # (taking part is not what a forget of their words removes)
            meta[key] = [
                v
                for v in value
                if not (
                    isinstance(v, str)
                    and (
                        v in list_hits[key]
                        or (key != "participants" and _only_in(v, gone_words, left))
                    )
                )
            ]
    for key in [k for k, v in meta.items() if k not in _KEPT_KEYS and isinstance(v, str)]:
        if match.line(meta[key]):
            del meta[key]
    body_left = "\n".join(kept)
    edit.text = join_frontmatter(meta, body_left) if meta else body_left.strip("\n") + "\n"
    edit.new_path = _renamed(rel, gone_words, left, summary, ident)
    return edit


def _only_in(value: str, gone: set[str], left: set[str]) -> bool:
    """Whether a tag or entity came from removed text only (its words are gone, not left)."""
    own = words(value)
    return bool(own) and bool(own & gone) and not own <= left


def _summary_from(kept: list[str]) -> str:
    """A summary from the first line that remains (the old one held what was forgotten)."""
    passages = detail_passages("\n".join(kept))
    if passages:
        first = passages[0].text
    else:
        first = next(s for s in (line.strip() for line in kept) if s and not _HEADING_RE.match(s))
    return preview(first)


def _renamed(rel: str, gone: set[str], left: set[str], summary: str, ident: str) -> str | None:
    """A new name for an episode whose file name holds a forgotten word; None to keep it."""
    folder, _, name = rel.rpartition("/")
    if not words(name.removesuffix(".md")) & (gone - left):
        return None
    stamped = _STAMPED_NAME_RE.match(name)
    slug = slugify(summary) or "episode"
    stem = f"{stamped['stamp']}_{slug}" if stamped else slug
    return f"{folder}/{stem}-{short_hash(ident, length=6)}.md"


def forgotten_turn(content: str, match: Matcher) -> bool:
    """Whether a turn is forgotten: its whole text or one of its first 200 lines matches
    (a turn already blanked is not)."""
    if content == FORGOTTEN:
        return False
    if match.line(content):
        return True
    if "\n" not in content:
        return False
    return any(line.strip() and match.line(line) for line in content.split("\n", 200)[:200])


def _log(rel: str, text: str, match: Matcher) -> Edit | None:
    log = parse_log(text, rel)
    turns = list(log.turns)
    edit = Edit(rel, "log", None)
    for n, turn in enumerate(turns, 1):
        # a forgotten speaker's turns go whole, as the episode lines naming them do
        named = turn.content != FORGOTTEN and bool(turn.name) and match.speaker(turn.name or "")
        if named or forgotten_turn(turn.content, match):
            edit.turns.append((n, turn.content))
            edit.removed_text.append(turn.content)
            turns[n - 1] = replace(turn, content=FORGOTTEN, name=None, tool=None)
    if not edit.turns:
        return None
    edit.text = dump_log(log.meta, turns)
    return edit


def _facts(rel: str, text: str, match: Matcher) -> Edit | None:
    lines = text.split("\n")
    by_line = {f.line: f for f in parse_facts(text, rel, "")}
    out: list[str] = []
    edit = Edit(rel, "facts", None)
    skip_under: int | None = None  # drop lines indented deeper than a dropped line
    section: int | None = None  # drop a matching heading's whole section
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        heading = _HEADING_RE.match(stripped)
        if section is not None and heading and len(heading.group(1)) <= section:
            section = None
        if skip_under is not None and (not stripped or indent <= skip_under or heading):
            skip_under = None
        if section is not None or (skip_under is not None and stripped):
            _drop(edit, n, line, by_line)
            continue
        body = TRAILING_COMMENT_RE.sub("", line)
        if not stripped or not match.line(body):
            out.append(_table_cells_out(line, match, edit, n) if _is_row(stripped) else line)
            continue
        _drop(edit, n, line, by_line)
        if heading:
            section = len(heading.group(1))
        else:
            skip_under = indent
    if not edit.lines:
        return None
    edit.text = "\n".join(out)
    return edit


def _is_row(stripped: str) -> bool:
    return stripped.startswith("|") and not _TABLE_SEP_RE.match(stripped)


def _table_cells_out(line: str, match: Matcher, edit: Edit, n: int) -> str:
    """A table row with its forgotten value cells blanked (the entity cell stays)."""
    comment = TRAILING_COMMENT_RE.search(line)
    body = line[: comment.start()] if comment else line
    cells = table_cells(body)
    hits = [
        i
        for i, cell in enumerate(cells)
        if i and cell and (match.line(cell) or match.line(f"{cells[0]} | {cell}"))
    ]
    if not hits:
        return line
    for i in hits:
        edit.facts.append({"entity": cells[0], "field": "", "value": cells[i], "line": n})
        edit.removed_text.append(f"{cells[0]} | {cells[i]}")
        cells[i] = ""
    edit.lines.append((n, "cells of " + cells[0]))
    return "| " + " | ".join(cells) + " |" + (comment.group(0) if comment else "")


def _drop(edit: Edit, n: int, line: str, by_line: dict[int, Any]) -> None:
    edit.lines.append((n, line.strip()))
    edit.removed_text.append(TRAILING_COMMENT_RE.sub("", line))
    fact = by_line.get(n)
    if fact is not None:
        edit.facts.append(
            {"entity": fact.entity, "field": fact.field, "value": fact.value, "line": n}
        )
