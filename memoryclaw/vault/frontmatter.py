"""The YAML frontmatter that opens a markdown file in the vault: split it from the body, join
the two, and read its common keys (``agent``, ``scope``) with errors that name the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ParseError
from .safeyaml import dump_yaml, load_yaml
from .scopes import SCOPE_PROBLEM, valid_scope

_FM_BOUNDARY_RE = re.compile(r"^---\s*$")


def split_frontmatter(text: str, path: str) -> tuple[dict[str, Any], str, int]:
    """Split a document into (frontmatter mapping, body, 1-based line where the body starts).

    Written by hand rather than with python-frontmatter so that line numbers in errors are
    exact and blank lines after the closing ``---`` survive a round trip.
    """
    if "\x00" in text:
        raise ParseError(path, "binary content (NUL byte), not a markdown file")
    text = text.lstrip("\ufeff")
    lines = text.split("\n")
    if not _FM_BOUNDARY_RE.match(lines[0]):
        return {}, text, 1
    for end in range(1, len(lines)):
        if _FM_BOUNDARY_RE.match(lines[end]):
            break
    else:
        raise ParseError(path, "frontmatter is opened with '---' but never closed", 1)
    meta = load_yaml("\n".join(lines[1:end]), path, first_line=2, what="YAML frontmatter")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise ParseError(path, f"frontmatter must be a mapping, not {type(meta).__name__}", 2)
    return meta, "\n".join(lines[end + 1 :]), end + 2


def join_frontmatter(meta: Mapping[str, Any], body: str) -> str:
    """Render frontmatter and body as one markdown document."""
    body = body.strip("\n")
    return f"---\n{dump_yaml(meta)}---\n" + (f"{body}\n" if body else "")


def body_lines(text: str) -> list[str]:
    """Split on LF only (as editors count lines); ``str.splitlines`` would also split on
    U+2028, form feeds and other characters that may legitimately sit inside a line."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def optional_str(meta: Mapping[str, Any], key: str, path: str) -> str | None:
    """A key's value as text: None when absent, a :class:`ParseError` when a list or map."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ParseError(path, f"{key}: expected a string, got {type(value).__name__}")
    return str(value)


def meta_scope(meta: Mapping[str, Any], path: str, line: int | None = None) -> str | None:
    """A memory's ``scope`` key: None when absent, a :class:`ParseError` when not a scope."""
    value = optional_str(meta, "scope", path)
    if value is None or not value.strip():
        return None
    if not valid_scope(value.strip()):
        raise ParseError(path, f"scope: {SCOPE_PROBLEM}, got {value!r}", line)
    return value.strip()


def with_key_line(exc: ParseError, text: str) -> ParseError:
    """Point a ``key: problem`` error at the frontmatter line that sets that key."""
    if exc.line is not None:
        return exc
    key = exc.reason.split(":", 1)[0]
    lines = body_lines(text)
    for number, line in enumerate(lines[1:], start=2):
        if _FM_BOUNDARY_RE.match(line):
            break
        if line.startswith(f"{key}:"):
            return ParseError(exc.path, exc.reason, number)
    return exc
