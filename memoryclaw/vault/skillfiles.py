"""The skill file, ``skills/<name>/SKILL.md``: its frontmatter, status and sections.

A skill is an AgentSkills folder holding a ``SKILL.md``; memoryclaw's own metadata (status,
occurrences, tool pattern) is the ``metadata.memoryclaw`` mapping of its frontmatter, and a
hand-written skill without it counts as approved.  This module reads a skill
(:func:`read_skill`), rewrites only its status (:func:`with_status`), and reads the sections
recall uses: "When to use" (:func:`when_to_use`) and the plan (:func:`skill_steps`), and
chooses the approved skill a query asks for (:func:`active_skill`).  Suggesting and approving
skills is :mod:`memoryclaw.consolidate.skills`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ParseError, UnsafePathError
from .files import SKILLS_DIR, read_text
from .frontmatter import split_frontmatter
from .safeyaml import load_yaml

_UNREADABLE = (ParseError, UnsafePathError)  # a broken file, or a link out of the vault
STATUSES = ("draft", "approved", "rejected")
# The fewest query keywords a skill must share with the query to be its active skill.
MIN_KEYWORD_HITS = 2
_TODO_RE = re.compile(r"\bTODO\b")
_WHEN_RE = re.compile(r"^#{1,6}\s*when to use\b", re.IGNORECASE)
_HEADING_RE = re.compile(r"^#{1,6}\s")
_FM_RE = re.compile(r"^---\s*$")


@dataclass(frozen=True)
class SkillInfo:
    """A skill folder as read from disk; ``status`` is ``invalid`` when it cannot be parsed."""

    name: str  # the folder name, which approve and reject take
    path: str
    status: str
    description: str = ""
    occurrences: int | None = None
    pattern: tuple[str, ...] = ()
    todos: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``skills --json`` shape of one skill."""
        return {
            "name": self.name,
            "path": self.path,
            "status": self.status,
            "description": self.description,
            "occurrences": self.occurrences,
            "pattern": list(self.pattern),
            "todos": self.todos,
            "error": self.error,
        }


def skill_folders(root: Path) -> dict[str, bool]:
    """Each folder holding a SKILL.md, by name, with whether the path has no symbolic link:
    such a file is read directly; a linked one is checked as any vault path is."""
    top = root / SKILLS_DIR
    try:
        entries = list(os.scandir(top))
        linked_top = top.is_symlink()
    except OSError:
        return {}
    found: dict[str, bool] = {}
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        skill = os.path.join(entry.path, "SKILL.md")
        try:
            mode = os.lstat(skill).st_mode
        except OSError:
            continue
        plain = stat.S_ISREG(mode) and not entry.is_symlink() and not linked_top
        if plain or os.path.isfile(skill):
            found[entry.name] = plain
    return dict(sorted(found.items()))


def skill_text(root: Path, name: str, plain: bool) -> str:
    """The text of skill ``name``'s SKILL.md (``plain``: a path without links, read directly)."""
    return read_text(root, f"{SKILLS_DIR}/{name}/SKILL.md", scanned=plain)


def _mapping(value: Any, path: str, key: str) -> dict[str, Any]:
    if isinstance(value, str):  # OpenClaw also accepts the JSON as a quoted string
        try:
            value = json.loads(value)
        except ValueError:
            raise ParseError(path, f"{key}: not a JSON object") from None
    if not isinstance(value, dict):
        raise ParseError(path, f"{key}: expected a mapping, got {type(value).__name__}")
    return value


def _own_metadata(meta: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The ``metadata.memoryclaw`` mapping, or None for a skill memoryclaw did not write."""
    if meta.get("metadata") is None:
        return None
    own = _mapping(meta["metadata"], path, "metadata").get("memoryclaw")
    return None if own is None else _mapping(own, path, "metadata.memoryclaw")


def read_skill(root: Path, name: str, plain: bool = False) -> tuple[SkillInfo, str]:
    """One skill's info and body; a file that cannot be parsed gives status ``invalid``."""
    rel = f"{SKILLS_DIR}/{name}/SKILL.md"
    try:
        return parse_skill(name, rel, skill_text(root, name, plain))
    except _UNREADABLE as exc:
        return SkillInfo(name=name, path=rel, status="invalid", error=str(exc)), ""


def parse_skill(name: str, rel: str, text: str) -> tuple[SkillInfo, str]:
    """A skill's info and body from its text; :class:`ParseError` when it is malformed."""
    meta, body, _ = split_frontmatter(text, rel)
    own = _own_metadata(meta, rel)
    status: Any = "approved"
    occurrences: Any = None
    pattern: Any = []
    if own is not None:
        status = own.get("status", "draft")
        occurrences = own.get("occurrences")
        pattern = own.get("pattern", [])
        if status not in STATUSES:
            raise ParseError(
                rel,
                f"metadata.memoryclaw.status: {status!r} is not one of {', '.join(STATUSES)}",
            )
        if not (isinstance(pattern, list) and all(isinstance(t, str) for t in pattern)):
            raise ParseError(rel, "metadata.memoryclaw.pattern: expected a list of tool names")
        if occurrences is not None and not isinstance(occurrences, int):
            raise ParseError(rel, "metadata.memoryclaw.occurrences: expected a number")
    description = meta.get("description")
    info = SkillInfo(
        name=name,
        path=rel,
        status=status,
        description=description if isinstance(description, str) else "",
        occurrences=occurrences,
        pattern=tuple(pattern),
        todos=len(_TODO_RE.findall(text)),
    )
    return info, body


def with_status(text: str, path: str, status: str) -> str:
    """``text`` with only its ``metadata:`` line rewritten (or added) to carry ``status``."""
    lines = text.split("\n")
    if not lines or not _FM_RE.match(lines[0].lstrip("\ufeff")):
        entry = json.dumps({"memoryclaw": {"status": status}})
        return f"---\nmetadata: {entry}\n---\n{text}"
    end = next(i for i in range(1, len(lines)) if _FM_RE.match(lines[i]))  # parsed already
    for number in range(1, end):
        line = lines[number]
        if not line.startswith("metadata:"):
            continue
        content = line.removesuffix("\r")
        value, ending = content[len("metadata:") :].strip(), line[len(content) :]
        if not value:
            raise ParseError(
                path, "metadata spans several lines; make it one line of JSON", number + 1
            )
        data = _mapping(load_yaml(value, path, number + 1, "metadata"), path, "metadata")
        own = dict(_mapping(data.get("memoryclaw") or {}, path, "metadata.memoryclaw"))
        own["status"] = status
        lines[number] = f"metadata: {json.dumps({**data, 'memoryclaw': own}, ensure_ascii=False)}"
        lines[number] += ending
        return "\n".join(lines)
    lines.insert(end, f"metadata: {json.dumps({'memoryclaw': {'status': status}})}")
    return "\n".join(lines)


def when_to_use(body: str) -> str:
    """The lines of a skill body's "When to use" section."""
    kept: list[str] = []
    inside = False
    for line in body.split("\n"):
        if _HEADING_RE.match(line):
            inside = bool(_WHEN_RE.match(line))
        elif inside:
            kept.append(line)
    return "\n".join(kept)


_STEPS_RE = re.compile(r"^#{1,6}\s*steps\b", re.IGNORECASE)
_NUMBERED_RE = re.compile(r"^\s*\d+[.)]\s+(\S.*)$")


def skill_steps(root: Path, name: str) -> list[str]:
    """The plan skill ``name`` gives: its tool pattern, else the numbered lines of its
    "Steps" section (each its first line); empty when it cannot be read."""
    info, body = read_skill(root, name)
    if info.pattern:
        return list(info.pattern)
    steps: list[str] = []
    inside = False
    for line in body.split("\n"):
        if _HEADING_RE.match(line):
            inside = bool(_STEPS_RE.match(line))
        elif inside and (numbered := _NUMBERED_RE.match(line)):
            steps.append(numbered.group(1).strip())
    return steps


def _fold(text: str) -> str:
    """Text as query keywords are written: lowercase, typographic apostrophes plain."""
    return text.lower().replace("’", "'")


def _hits(keywords: Sequence[str], text: str) -> int:
    """How many keywords occur in ``text`` as whole words (``project`` in ``project-update``)."""
    return sum(bool(re.search(rf"(?<!\w){re.escape(k)}(?!\w)", text)) for k in keywords)


def active_skill(root: Path, keywords: Sequence[str]) -> str | None:
    """The approved skill whose name, description and "When to use" share the most keywords
    (at least :data:`MIN_KEYWORD_HITS`; ties go to the first name), else None.

    Every call reads the SKILL.md files, so an edit counts at once; only a file holding
    enough of the keywords somewhere is parsed.
    """
    wanted = sorted(set(keywords))
    best: tuple[int, str] | None = None
    for name, plain in skill_folders(root).items():
        needed = MIN_KEYWORD_HITS if best is None else best[0] + 1
        rel = f"{SKILLS_DIR}/{name}/SKILL.md"
        try:
            text = skill_text(root, name, plain)
            folded = _fold(f"{name.replace('-', ' ')}\n{text}")
            if sum(k in folded for k in wanted) < needed:
                continue  # cannot win, whatever its status
            info, body = parse_skill(name, rel, text)
        except _UNREADABLE:
            continue  # list_skills reports it
        if info.status != "approved":
            continue
        searched = " ".join((name.replace("-", " "), info.description, when_to_use(body)))
        hits = _hits(wanted, _fold(searched))
        if hits >= needed:
            best = (hits, name)
    return best[1] if best else None
