"""Input from outside the vault, read safely: lines of bounded length, JSON, Unicode text.

Every JSON-lines reader (``serve --stdio``, ``mcp``, ``ingest``) reads through
:func:`bounded_lines` and :func:`parse_json_line`, and every text written to the vault passes
:func:`require_text`, so each refuses the same bad input the same way: bytes that are not
UTF-8, lone surrogates (from ``\\udfff`` escapes, or from command-line arguments and standard
input that are not UTF-8, which Python decodes into them), JSON nested deeper than
:data:`MAX_DEPTH`, and lines longer than a limit, which are read past in bounded memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInputError, warn

MAX_LINE_BYTES = 32 * 1024 * 1024
# The longest request line of ``serve --stdio`` and ``mcp``: room for the largest turn a
# ``log_turn`` may carry (MAX_TURN_CHARS, a million characters, each escaped as a 12-byte
# surrogate pair at worst) and its other fields; a longer line is refused, read past in pieces.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
# The most a derived-state JSON file (``.memoryclaw/recall.json``, ``metrics.json``) is read
# to: a few hundred bytes a day or an episode, so years of use stay far below it.
MAX_STATE_BYTES = 8 * 1024 * 1024
# The longest id each field may hold.  A session key is at most 400 characters because the
# scope of its memories (``group:`` and the key without its ``agent:<id>:`` head) is read
# back only up to 400 (:data:`memoryclaw.vault.scopes.MAX_CONVERSATION_CHARS`); a longer one was
# logged and then never consolidated.
LABEL_LIMITS = {"session": 400, "agent": 128, "channel": 128, "sender": 256}
# An agent id holds no whitespace at all: "main " is not "main".  (A session id may: only an
# OpenClaw key, ``agent:<id>:<rest>``, may not, see
# :func:`memoryclaw.vault.scopes.session_problem`.)
_ONE_WORD = frozenset({"agent"})


_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: each can split a
# heading, a frontmatter value or a provenance comment into lines of its own.
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def bounded_lines(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """Each line of ``stream`` (newline included), or ``None`` for a line over ``limit`` bytes,
    which is read past in pieces: no line costs more memory than ``limit``."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(limit)
            yield None
        else:
            yield line


def parse_json_line(line: bytes | str) -> Any:
    """One JSON text in strict UTF-8, nested at most :data:`MAX_DEPTH` deep.

    Raises :class:`InvalidInputError` (field ``line``) saying what is wrong.  Its strings may
    still hold lone surrogates: :func:`text_problem` finds them.
    """
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = f"not UTF-8 text (byte 0x{line[exc.start]:02x} at offset {exc.start})"
            raise InvalidInputError("line", problem) from None
    too_deep = f"JSON nested more than {MAX_DEPTH} deep"
    try:
        value = json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInputError("line", f"not JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # an integer too long to convert, NaN, Infinity
        raise InvalidInputError("line", f"not JSON: {exc}") from None
    except RecursionError:
        raise InvalidInputError("line", too_deep) from None
    if not _within_depth(value):
        raise InvalidInputError("line", too_deep)
    return value


def read_state_json(path: Path, limit: int = MAX_STATE_BYTES) -> Any | None:
    """The JSON a derived-state file holds, or None when it is missing, or (logged as a
    warning, so that counting starts over) larger than ``limit`` bytes, not UTF-8 JSON, or
    nested deeper than :data:`MAX_DEPTH`.  Never reads more than ``limit`` bytes of it."""
    try:
        with path.open("rb") as stream:
            data = stream.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(
            "memoryclaw.inputs", "%s: unreadable (%s); starting it over", path, exc.strerror or exc
        )
        return None
    if len(data) > limit:
        warn("memoryclaw.inputs", "%s: over %d bytes; starting it over", path, limit)
        return None
    try:
        return parse_json_line(data)
    except InvalidInputError as exc:
        warn("memoryclaw.inputs", "%s: %s; starting it over", path, exc.problem)
        return None


def text_problem(value: Any) -> str | None:
    """``"where: problem"`` for the first string in a parsed JSON value (keys included) that
    is not valid Unicode text, e.g. ``"params.query: not valid Unicode text: ..."``."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return None  # the common case, at C speed
    except (UnicodeEncodeError, RecursionError):
        pass
    for names, name, node in _walk(value):
        if isinstance(node, str):
            problem = _string_problem(node)
            if problem is not None:
                return f"{_path(names, name) or 'value'}: {problem}"
    return None


def require_text(
    field: str, value: str, *, source: str | None = None, line: int | None = None
) -> None:
    """Raise :class:`InvalidInputError` naming ``field`` if ``value`` cannot be stored as UTF-8."""
    problem = _string_problem(value)
    if problem is not None:
        raise InvalidInputError(field, problem, source=source, line=line)


def label_problem(field: str, value: str) -> str | None:
    """What makes ``value`` unfit to be the ``field`` id of a turn or a request (``session``,
    ``agent``, ``channel``, ``sender``), or None: it must be valid text,
    not blank, one line without control characters, and at most ``LABEL_LIMITS[field]``
    characters; an agent id holds no whitespace either."""
    problem = _string_problem(value)
    if problem is not None:
        return problem
    if not value.strip():
        return "must not be empty"
    control = _CONTROL_RE.search(value)
    if control is not None:
        return (
            f"holds control character U+{ord(control.group()):04X} at character {control.start()}"
        )
    if field in _ONE_WORD and any(char.isspace() for char in value):
        return "must not hold spaces"
    if field == "session" and value != value.strip():
        return "must not begin or end with a space"
    limit = LABEL_LIMITS.get(field)
    if limit is not None and len(value) > limit:
        return f"{len(value)} characters, over the limit of {limit}"
    return None


def require_label(
    field: str, value: str, *, source: str | None = None, line: int | None = None
) -> None:
    """Raise :class:`InvalidInputError` naming ``field`` when :func:`label_problem` finds one."""
    problem = label_problem(field, value)
    if problem is not None:
        raise InvalidInputError(field, problem, source=source, line=line)


def _string_problem(value: str) -> str | None:
    match = _SURROGATE_RE.search(value)
    if match is None:
        return None
    code = ord(match.group())
    # Python decodes each byte that is not UTF-8 (argv, stdin) into U+DC80..U+DCFF.
    if 0xDC80 <= code <= 0xDCFF:
        cause = f"byte 0x{code - 0xDC00:02x} is not UTF-8"
    else:
        cause = "half of a UTF-16 pair"
    where = f"at character {match.start()}"
    return f"not valid Unicode text: lone surrogate U+{code:04X} {where} ({cause})"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _within_depth(value: Any) -> bool:
    """Whether containers nest at most :data:`MAX_DEPTH` deep, level by level, no recursion."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(MAX_DEPTH):
        below: list[Any] = []
        for node in level:
            children = node.values() if isinstance(node, dict) else node
            below.extend([c for c in children if isinstance(c, (dict, list))])
        if not below:
            return True
        level = below
    return False


_Name = str | int  # a dict key or a list index


def _walk(value: Any) -> Iterator[tuple[list[_Name], _Name, Any]]:
    """(names of the enclosing containers, own name, node) for every node of a parsed JSON
    value, dict keys as nodes too.  Iterative, holding one iterator per level; the names
    list is live (see :func:`_path`)."""
    names: list[_Name] = []
    stack: list[Iterator[tuple[_Name, Any]]] = [iter([("", value)])]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            if names:
                names.pop()
            continue
        name, node = entry
        yield names, name, node
        if isinstance(node, (dict, list)):
            names.append(name)
            stack.append(enumerate(node) if isinstance(node, list) else _members(node))


def _members(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, child in node.items():
        yield key, key
        yield key, child


def _path(names: list[_Name], name: _Name) -> str:
    """``params.content[2].text``; built only for an error, from :func:`_walk`'s names."""
    parts = [f"[{n}]" if isinstance(n, int) else f".{n}" for n in [*names[1:], name]]
    # The path is part of an error message, which must itself be valid text.
    return "".join(parts).lstrip(".").encode("utf-8", "backslashreplace").decode("utf-8")
