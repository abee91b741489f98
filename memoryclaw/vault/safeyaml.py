"""YAML as the vault reads and writes it: a safe loader bounded in size, nesting and alias
expansion, a fast path for plain mappings (frontmatter, ``memoryclaw.yaml``), and a dumper
that writes the spec's layout.

Pure functions over text: no disk I/O.  Every way a text can fail to load is a
:class:`ParseError` naming the file and, where it can, the line.  PyYAML is imported when a
text needs it: a recall reads its config and frontmatter by the fast path alone.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ParseError

if TYPE_CHECKING:
    import yaml


@functools.cache
def _loader() -> Any:
    """The safe loader, built on first use."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):  # type: ignore[misc]
        """Safe loader that leaves dates and times as text: the parsers read them, so an
        impossible date is reported against its key instead of failing inside YAML."""

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return _Loader


@functools.cache
def _dumper() -> Any:
    """The dumper, built on first use."""
    import yaml

    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class _Dumper(base):  # type: ignore[misc]
        """Block mappings at the top, flow lists of scalars (``tags: [a, b]``) as in the spec.
        Date-like strings stay quoted, so any other YAML reader sees the same text."""

    def represent_list(dumper: Any, data: list[Any]) -> Any:
        flow = all(not isinstance(item, (list, dict)) for item in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    _Dumper.add_representer(list, represent_list)
    return _Dumper


MAX_YAML_NESTING = 64
MAX_YAML_BYTES = 1024 * 1024
# Aliases may repeat this many values in all; a few lines of anchors can otherwise stand for
# billions of them, which every reader of the result would walk.
MAX_YAML_ALIAS_VALUES = 10_000
# One nesting level per indentation step or compact indicator (`- - x`, `? `, `- a: `).
_COMPACT_INDICATORS = r"(?:[-?:](?: +|$))+"


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
        compact = re.match(_COMPACT_INDICATORS, content)
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
    import yaml

    _check_yaml_shape(text, path, first_line, what)
    last_line = first_line + len(text.rstrip("\n").split("\n")) - 1
    try:
        value = yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        line = _yaml_line(exc, first_line, last_line)
        if _tab_indented(text, line - first_line) and "tab" not in problem:
            problem += " (the line is indented with a tab: YAML indents with spaces)"
        raise ParseError(path, f"invalid {what}: {problem}", line) from None
    except (ValueError, OverflowError) as exc:
        raise ParseError(path, f"invalid value in {what}: {exc}") from None
    except RecursionError:
        raise ParseError(path, f"{what} nested too deeply", first_line) from None
    if "*" in text:  # only an alias can make a value larger than its text
        _check_alias_expansion(value, path, what)
    return value


def _tab_indented(text: str, index: int) -> bool:
    """Whether line ``index`` (0-based) of ``text`` starts with a tab among its indentation."""
    lines = text.split("\n")
    if not 0 <= index < len(lines):
        return False
    line = lines[index]
    return "\t" in line[: len(line) - len(line.lstrip())]


_FLAT_LINE_RE = re.compile(r"^([A-Za-z_][\w-]*):(?: (.*))?$")
_PLAIN_RE = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`](?:[^#]*[^\s#])?$")
_FLOW_ITEM_RE = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`](?:[^#,\[\]{}]*[^\s#,\[\]{}])?$")
_SQUOTED_RE = re.compile(r"^'((?:[^']|'')*)'$")
_DQUOTED_RE = re.compile(r'^"([^"\\]*)"$')
_DECIMAL_RE = re.compile(r"^(?:0|[1-9][0-9]*)$")
_SIMPLE_FLOAT_RE = re.compile(r"^\+?[0-9]+\.[0-9]*$")
# Characters YAML refuses or reads as line breaks; text holding them takes the full parser.
_YAML_SPECIAL_CHARS_RE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff\t]"
)
# The plain scalars YAML 1.1 reads as something other than text (PyYAML's implicit
# resolvers, timestamps aside: the loader leaves those as text).
_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_NULL = frozenset({"~", "null", "Null", "NULL"})
_NUMBER_START = frozenset("-+0123456789.")
_NOT_TEXT = object()  # a scalar the fast path leaves to PyYAML


@functools.cache
def _number_re() -> re.Pattern[str]:
    """PyYAML's float and int resolvers in one: what may be read as a number."""
    return re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
        |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN)
        |[-+]?0b[0-1_]+
        |[-+]?0[0-7_]+
        |[-+]?(?:0|[1-9][0-9_]*)
        |[-+]?0x[0-9a-fA-F_]+
        |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""",
        re.X,
    )


def _plain_value(text: str) -> Any:
    """What PyYAML's safe loader reads the plain scalar ``text`` as, or ``_NOT_TEXT`` when
    only PyYAML can say (octal, sexagesimal, ``.inf``, ``<<``...)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _NULL:
        return None
    if text in ("<<", "="):  # a merge key, a value key
        return _NOT_TEXT
    if text[0] in _NUMBER_START:
        if _DECIMAL_RE.match(text):
            return int(text)
        if _SIMPLE_FLOAT_RE.match(text):
            return float(text)
        if _number_re().match(text):
            return _NOT_TEXT
    return text


def _flat_scalar(text: str, pattern: re.Pattern[str]) -> Any:
    """The value of a scalar whose YAML meaning is certain, else ``_NOT_TEXT``."""
    quoted = _SQUOTED_RE.match(text)
    if quoted:
        return quoted.group(1).replace("''", "'")
    quoted = _DQUOTED_RE.match(text)
    if quoted:
        return quoted.group(1)
    if not pattern.match(text) or ": " in text or text.endswith(":"):
        return _NOT_TEXT
    return _plain_value(text)


def _flow_scalar(text: str) -> Any:
    """A scalar inside ``[...]`` or ``{...}``, else ``_NOT_TEXT``."""
    item = _flat_scalar(text, _FLOW_ITEM_RE)
    if isinstance(item, str) and any(c in item for c in ",[]{}"):
        return _NOT_TEXT
    return item


def _flat_value(value: str) -> Any:
    """The value after ``key: ``: a scalar, a flow list of scalars, a flow mapping of
    ``key: scalar``, a collection written by ``json.dumps``; ``_NOT_TEXT`` for anything else."""
    if value.startswith("[") and value.endswith("]"):
        items = [_flow_scalar(part) for part in value[1:-1].split(", ")] if value != "[]" else []
        return _json_value(value) if _NOT_TEXT in items else items
    if value.startswith("{") and value.endswith("}"):
        pairs = [_FLAT_LINE_RE.match(part) for part in value[1:-1].split(", ")]
        mapping: dict[str, Any] = {}
        for pair in pairs if value != "{}" else []:
            if pair is None or not pair.group(2) or not _is_text_key(pair.group(1), mapping):
                return _json_value(value)
            mapping[pair.group(1)] = _flow_scalar(pair.group(2))
        return _json_value(value) if _NOT_TEXT in mapping.values() else mapping
    return _flat_scalar(value, _PLAIN_RE)


def _json_value(value: str) -> Any:
    """A collection exactly as ``json.dumps`` writes it (a skill's ``metadata``), which YAML
    reads the same as JSON does as long as it holds no escape and no fraction (YAML 1.1
    reads ``1e+20`` as text); else ``_NOT_TEXT``."""
    if '"' not in value or "\\" in value or _flow_depth(value) > MAX_YAML_NESTING:
        return _NOT_TEXT  # the full parser refuses what is nested too deep, naming the line
    try:
        parsed = json.loads(value)
    except ValueError:
        return _NOT_TEXT
    if json.dumps(parsed, ensure_ascii=False) != value or _holds_float(parsed):
        return _NOT_TEXT
    return parsed


def _holds_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_float(item) for item in value)
    return isinstance(value, float)


def _is_text_key(key: str, mapping: Mapping[str, Any]) -> bool:
    """Whether ``key`` is a new key YAML reads as text (``yes:`` is a boolean key)."""
    return key not in mapping and _plain_value(key) == key


def flat_yaml(text: str) -> dict[str, Any] | None:
    """Read a plain mapping without the YAML machinery, or None to leave it to PyYAML.

    Frontmatter as memoryclaw writes it (``key: value``, ``tags: [a, b]``) is most of what a
    reindex parses, and PyYAML builds it in Python at ~0.2 ms a file; ``memoryclaw.yaml``
    (sections of ``key: value`` under a bare ``key:``, ``{a: 1}``, comments) is read by
    every command, and importing PyYAML alone costs a recall ~8 ms.  Whatever is not
    certainly such a mapping of plain or simply quoted scalars returns None; scalars are
    typed as PyYAML's resolver types them, so both paths give the same value.
    """
    if _YAML_SPECIAL_CHARS_RE.search(text):
        return None
    out: dict[str, Any] = {}
    section: dict[str, Any] | None = None  # the mapping a bare ``key:`` opened
    indent = 0  # the indentation of its keys, once the first one is read
    for line in text.split("\n"):
        content = line.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        depth = len(line) - len(content)
        if " #" in content:  # a comment; in quotes it cuts the value short, which is refused
            content = content[: content.index(" #")].rstrip(" ")
        elif line.endswith(" "):
            return None
        if depth == 0:
            if section == {}:
                return None  # a key with nothing under it: null
            target, section, indent = out, None, 0
        elif section is None or depth != (indent or depth):
            return None
        else:
            target, indent = section, depth
        match = _FLAT_LINE_RE.match(content)
        if match is None or not _is_text_key(match.group(1), target):
            return None
        if match.group(2) is None and target is out:
            section = out[match.group(1)] = {}
            continue
        value = _flat_value(match.group(2) or "")
        if value is _NOT_TEXT:
            return None
        target[match.group(1)] = value
    return out if out and section != {} else None


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
    import yaml

    text: str = yaml.dump(
        dict(data),
        Dumper=_dumper(),
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    return text
