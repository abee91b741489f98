"""YAML as the vault reads and writes it: a safe loader bounded in size, nesting and alias
expansion, a fast path for flat frontmatter, and a dumper that writes the spec's layout.

Pure functions over text: no disk I/O.  Every way a text can fail to load is a
:class:`ParseError` naming the file and, where it can, the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from ..errors import ParseError

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that leaves dates and times as text: the parsers read them, so an
    impossible date is reported against its key instead of failing inside YAML."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Block mappings at the top, flow lists of scalars (``tags: [a, b]``) as in the spec.
    Date-like strings stay quoted, so any other YAML reader sees the same text."""


def _represent_list(dumper: Any, data: list[Any]) -> Any:
    flow = all(not isinstance(item, (list, dict)) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


MAX_YAML_NESTING = 64
MAX_YAML_BYTES = 1024 * 1024
# Aliases may repeat this many values in all; a few lines of anchors can otherwise stand for
# billions of them, which every reader of the result would walk.
MAX_YAML_ALIAS_VALUES = 10_000
# One nesting level per indentation step or compact indicator (`- - x`, `? `, `- a: `).
_COMPACT_INDICATORS_RE = re.compile(r"(?:[-?:](?: +|$))+")


def _flow_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


def _block_depth_over(text: str, limit: int) -> int | None:
    """The 0-based line where block-style nesting first exceeds ``limit``, or None.

    Counts the open indentation levels plus the compact indicators a line starts with: an
    upper bound on the depth libyaml reaches that needs no parsing.
    """
    indents: list[int] = []
    for number, line in enumerate(text.split("\n")):
        content = line.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        indent = len(line) - len(content)
        while indents and indents[-1] > indent:
            indents.pop()
        if not indents or indents[-1] < indent:
            indents.append(indent)
        compact = _COMPACT_INDICATORS_RE.match(content)
        depth = len(indents) + (sum(c in "-?:" for c in compact.group()) if compact else 0)
        if depth > limit:
            return number
    return None


def _check_yaml_shape(text: str, path: str, first_line: int, what: str) -> None:
    """Refuse YAML that would take the parser's stack or memory, before it sees it.

    libyaml recurses once per nesting level and overflows the C stack (a crash, not an
    exception) on input a few tens of kilobytes long.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise ParseError(
            path, f"{what} is {size // 1024} KiB, over the {MAX_YAML_BYTES // 1024} KiB limit"
        )
    too_deep = f"{what} nested deeper than {MAX_YAML_NESTING} levels"
    brackets = text.count("[") + text.count("{")
    if brackets > MAX_YAML_NESTING and _flow_depth(text) > MAX_YAML_NESTING:
        raise ParseError(path, too_deep, first_line)
    line = _block_depth_over(text, MAX_YAML_NESTING)
    if line is not None:
        raise ParseError(path, too_deep, first_line + line)


def _check_alias_expansion(value: Any, path: str, what: str) -> None:
    """Refuse a value whose aliases repeat more than ``MAX_YAML_ALIAS_VALUES`` values.

    Walks at most that many repeats, so a billion-value alias bomb costs no more to refuse
    than a small file.
    """
    seen: set[int] = set()
    repeats = 0
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, repeated = stack.pop()
        if not isinstance(item, (list, dict)):
            continue
        repeated = repeated or id(item) in seen
        seen.add(id(item))
        children = list(item.items()) if isinstance(item, dict) else item
        if repeated:
            repeats += len(children)
            if repeats > MAX_YAML_ALIAS_VALUES:
                raise ParseError(
                    path, f"{what} aliases expand to over {MAX_YAML_ALIAS_VALUES:,} values"
                )
        for child in children:
            if isinstance(child, tuple):  # a mapping's (key, value)
                stack += [(part, repeated) for part in child]
            else:
                stack.append((child, repeated))


def load_yaml(text: str, path: str, first_line: int = 1, what: str = "YAML") -> Any:
    """Parse YAML written by a person, turning every way it can fail into a :class:`ParseError`.

    ``first_line`` is the file line the text starts on.  Size, nesting (block and flow) and
    alias expansion are bounded, so no file can crash the process or exhaust its memory.
    """
    flat = flat_yaml(text)
    if flat is not None:
        return flat
    _check_yaml_shape(text, path, first_line, what)
    last_line = first_line + len(text.rstrip("\n").split("\n")) - 1
    try:
        value = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        line = _yaml_line(exc, first_line, last_line)
        raise ParseError(path, f"invalid {what}: {problem}", line) from None
    except (ValueError, OverflowError) as exc:
        raise ParseError(path, f"invalid value in {what}: {exc}") from None
    except RecursionError:
        raise ParseError(path, f"{what} nested too deeply", first_line) from None
    if "*" in text:  # only an alias can make a value larger than its text
        _check_alias_expansion(value, path, what)
    return value


_FLAT_LINE_RE = re.compile(r"^([A-Za-z_][\w-]*):(?: (.*))?$")
_PLAIN_RE = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`](?:[^#]*[^\s#])?$")
_FLOW_ITEM_RE = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`](?:[^#,\[\]{}]*[^\s#,\[\]{}])?$")
_SQUOTED_RE = re.compile(r"^'((?:[^']|'')*)'$")
_DQUOTED_RE = re.compile(r'^"([^"\\]*)"$')
_DECIMAL_RE = re.compile(r"^(?:0|[1-9][0-9]*)$")
_STR_TAG = "tag:yaml.org,2002:str"
# Characters YAML refuses or reads as line breaks; text holding them takes the full parser.
_YAML_SPECIAL_CHARS_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\t]")


def _implicit_tag(value: str) -> str:
    """The tag PyYAML's resolver gives a plain scalar (as ``BaseResolver.resolve`` does)."""
    table = _Loader.yaml_implicit_resolvers
    for tag, regexp in table.get(value[:1], []) + table.get(None, []):
        if regexp.match(value):
            return str(tag)
    return _STR_TAG


def _flat_scalar(text: str, pattern: re.Pattern[str]) -> tuple[bool, Any]:
    """(True, value) for a scalar whose YAML meaning is certain, else (False, None)."""
    quoted = _SQUOTED_RE.match(text)
    if quoted:
        return True, quoted.group(1).replace("''", "'")
    quoted = _DQUOTED_RE.match(text)
    if quoted:
        return True, quoted.group(1)
    if not pattern.match(text) or ": " in text or text.endswith(":"):
        return False, None
    tag = _implicit_tag(text)
    if tag == _STR_TAG:
        return True, text
    if tag == "tag:yaml.org,2002:int" and _DECIMAL_RE.match(text):
        return True, int(text)
    if tag == "tag:yaml.org,2002:bool":  # `processed: false` in every raw log
        return True, text.lower() in ("yes", "true", "on")
    if tag == "tag:yaml.org,2002:null":
        return True, None
    return False, None


def flat_yaml(text: str) -> dict[str, Any] | None:
    """Read a flat mapping of plain scalars and flow lists without the YAML machinery.

    Frontmatter as memoryclaw writes it (``key: value``, ``tags: [a, b]``) is most of what a
    reindex parses, and PyYAML builds it in Python at ~0.2 ms a file.  Whatever is not
    certainly that shape returns None and goes to PyYAML; scalars are typed by PyYAML's own
    resolver, so both paths give the same value.
    """
    if _YAML_SPECIAL_CHARS_RE.search(text):
        return None
    out: dict[str, Any] = {}
    for line in text.split("\n"):
        if not line:
            continue
        match = _FLAT_LINE_RE.match(line)
        if match is None or match.group(1) in out or line.endswith(" "):
            return None
        if _implicit_tag(match.group(1)) != _STR_TAG:  # `yes:` is a boolean key in YAML
            return None
        value = match.group(2)
        if not value:
            return None
        if value.startswith("[") and value.endswith("]"):
            inner = value[1:-1]
            items: list[Any] = []
            for part in inner.split(", ") if inner else []:
                ok, item = _flat_scalar(part, _FLOW_ITEM_RE)
                if not ok or (isinstance(item, str) and any(c in item for c in ",[]{}")):
                    return None
                items.append(item)
            out[match.group(1)] = items
            continue
        ok, scalar = _flat_scalar(value, _PLAIN_RE)
        if not ok:
            return None
        out[match.group(1)] = scalar
    return out or None


def _yaml_line(exc: yaml.YAMLError, first_line: int, last_line: int) -> int:
    """The file line to blame for a YAML error.

    An unterminated quote swallows the lines after it, so it is blamed on where it opened.
    Anything else is blamed where it was found, or, when that is past the end of the text,
    where the unfinished construct began.
    """
    context = str(getattr(exc, "context", "") or "")
    order = ("problem_mark", "context_mark")
    if "quoted scalar" in context:
        order = ("context_mark", "problem_mark")
    for name in order:
        mark = getattr(exc, name, None)
        if mark is not None and mark.line + first_line <= last_line:
            return int(mark.line) + first_line
    return last_line


def dump_yaml(data: Mapping[str, Any]) -> str:
    """``data`` as block YAML, keys in their order, flow lists of scalars, never wrapped."""
    text: str = yaml.dump(
        dict(data),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    return text
