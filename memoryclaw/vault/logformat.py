"""The raw log file format: frontmatter, then each turn under a ``### role · timestamp``
header; parse a log, render one, append a turn or replace the frontmatter as text.

Pure functions over text: no disk I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ParseError
from .frontmatter import body_lines, meta_scope, split_frontmatter
from .safeyaml import dump_yaml
from .timestamps import parse_timestamp, utc_iso

ROLE_RE = re.compile(r"^[a-z][a-z_]{0,31}$")
_TURN_HEADER_RE = re.compile(
    r"^### (?P<role>[a-z][a-z_]{0,31})"
    r"(?: \((?P<name>[^()\n]*)\))?"
    r"(?: \[(?P<sender>[^\[\]\n]*)\])?"
    r"(?: · (?P<tool>[^·\n]+?))?"
    r" · (?P<ts>\d{4}-\d\d-\d\dT[\d:]+(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))\s*$"
)
_ESCAPED_HEADING_RE = re.compile(r"^(\\*)(###)", re.MULTILINE)
_UNESCAPED_HEADING_RE = re.compile(r"^(\\+)(###)", re.MULTILINE)


@dataclass(frozen=True)
class Turn:
    """One message of a raw log."""

    role: str
    timestamp: datetime
    content: str
    name: str | None = None
    tool: str | None = None
    sender: str | None = None  # the sender id of a participant who is not the owner


@dataclass(frozen=True)
class RawLog:
    """A raw transcript: its frontmatter and its turns (1-based in file order)."""

    path: str
    meta: Mapping[str, Any]
    turns: tuple[Turn, ...]

    @property
    def session(self) -> str | None:
        """The agent session this log belongs to."""
        value = self.meta.get("session")
        return str(value) if value is not None else None

    @property
    def agent(self) -> str | None:
        """The agent whose session this is."""
        value = self.meta.get("agent")
        return str(value) if value is not None else None

    @property
    def scope(self) -> str | None:
        """Where what this log holds may be recalled (None: owner-level; see parse_log)."""
        value = self.meta.get("scope")
        return str(value) if value is not None else None


def clean_label(text: str | None) -> str | None:
    """A speaker or tool name made safe for a turn header (no parentheses, dots, newlines)."""
    if text is None:
        return None
    cleaned = re.sub(r"[()\n\r·\x00]+", " ", text)
    cleaned = " ".join(cleaned.split())
    return cleaned or None


def format_turn(turn: Turn) -> str:
    """Render one turn: its header line, then its content with heading-like lines escaped."""
    header = f"### {turn.role}"
    name, tool = clean_label(turn.name), clean_label(turn.tool)
    sender = clean_label(turn.sender.replace("[", " ").replace("]", " ")) if turn.sender else None
    if name:
        header += f" ({name})"
    if sender:
        header += f" [{sender}]"
    if tool:
        header += f" · {tool}"
    header += f" · {utc_iso(turn.timestamp)}"
    content = normalize_content(turn.content)
    escaped = _ESCAPED_HEADING_RE.sub(lambda m: "\\" + m.group(1) + m.group(2), content)
    return f"{header}\n{escaped}\n" if escaped else f"{header}\n"


def normalize_content(text: str) -> str:
    """Turn content as stored: LF line ends, no leading or trailing blank lines, and no NUL
    (replaced by U+FFFD, since a NUL would make the whole log read as binary)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() for line in lines)


def dump_log(meta: Mapping[str, Any], turns: Iterable[Turn]) -> str:
    """Render a raw log: frontmatter, then each turn separated by a blank line."""
    body = "\n".join(format_turn(turn) for turn in turns)
    return f"---\n{dump_yaml(meta)}---\n" + body


def log_outline(text: str, path: str) -> tuple[dict[str, Any], int, datetime | None]:
    """A raw log's frontmatter, turn count and last turn time, without reading turn bodies.

    Raises :class:`ParseError` for the same structural faults as :func:`parse_log`.
    """
    meta, body, first_line = split_frontmatter(text, path)
    count, last = 0, None
    for offset, raw in enumerate(body_lines(body)):
        header = _TURN_HEADER_RE.match(raw) if raw.startswith("### ") else None
        if header:
            count, last = count + 1, header.group("ts")
        elif count == 0 and raw.strip():
            raise ParseError(
                path,
                "text before the first turn header ('### role · timestamp')",
                first_line + offset,
            )
    try:
        return meta, count, parse_timestamp(last) if last else None
    except ValueError:
        raise ParseError(path, f"bad turn timestamp {last!r}") from None


def append_turn_text(text: str, has_turns: bool, turn: Turn) -> str:
    """A raw log's text with one more turn, exactly as :func:`dump_log` would render it."""
    return (text.rstrip("\n") + "\n\n" if has_turns else text) + format_turn(turn)


def replace_log_meta(text: str, path: str, meta: Mapping[str, Any]) -> str:
    """A raw log's text with new frontmatter and the body left byte for byte."""
    _, body, _ = split_frontmatter(text, path)
    return f"---\n{dump_yaml(meta)}---\n" + body


def parse_log(text: str, path: str) -> RawLog:
    """Parse a raw log into its frontmatter and turns."""
    meta, body, first_line = split_frontmatter(text, path)
    turns: list[Turn] = []
    current: dict[str, Any] | None = None
    lines: list[str] = []

    def close() -> None:
        if current is not None:
            content = _UNESCAPED_HEADING_RE.sub(
                lambda m: m.group(1)[1:] + m.group(2), "\n".join(lines)
            )
            turns.append(Turn(content=normalize_content(content), **current))

    for offset, raw in enumerate(body_lines(body)):
        header = _TURN_HEADER_RE.match(raw)
        if header:
            close()
            try:
                moment = parse_timestamp(header.group("ts"))
            except ValueError:
                raise ParseError(
                    path, f"bad turn timestamp {header.group('ts')!r}", first_line + offset
                ) from None
            current = {
                "role": header.group("role"),
                "timestamp": moment,
                "name": header.group("name") or None,
                "tool": header.group("tool") or None,
                "sender": header.group("sender") or None,
            }
            lines = []
        elif current is not None:
            lines.append(raw)
        elif raw.strip():
            raise ParseError(
                path,
                "text before the first turn header ('### role · timestamp')",
                first_line + offset,
            )
    close()
    meta_scope(meta, path)  # a log whose scope is not one must not pass as owner-level
    return RawLog(path=path, meta=meta, turns=tuple(turns))
