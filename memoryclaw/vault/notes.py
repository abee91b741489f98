"""Parse and write vault files: episodes, fact files, aliases and raw logs.

Pure functions over text: no disk I/O, no clock.  Every parser takes the file's path
(relative to the vault, for messages and ids) and raises :class:`ParseError` with a line
number when it can point at one.  Every writer produces text its parser reads back to an
equal value.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

import yaml

from ..errors import ParseError
from .files import active_path
from .scopes import SCOPE_PROBLEM, valid_scope

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

CONFIDENCE_LEVELS = ("low", "medium", "high")
_EPISODE_KEYS = (
    "id",
    "timestamp",
    "summary",
    "tags",
    "participants",
    "confidence",
    "source",
    "source_turns",
    "session",
    "entities",
    "agent",
    "scope",
)
_SUMMARY_FALLBACK_CHARS = 200
# Far above what anything writes (consolidation keeps 6 tags, 15 entities), far below what
# makes indexing one file take seconds.
MAX_LIST_ITEMS = 1_000
MAX_TURN_NUMBER = 1_000_000
_SLUG_RE = re.compile(r"[^a-z0-9]+")
_FM_BOUNDARY_RE = re.compile(r"^---\s*$")

EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
URL_RE = re.compile(r"^https?://\S+$")
PHONE_RE = re.compile(r"^\+?[\d\s().-]{7,20}$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


# --------------------------------------------------------------------------- time


def utc_iso(moment: datetime) -> str:
    """Format a datetime as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC (naive values are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: Any) -> datetime:
    """Read a timestamp written as an ISO string, a YAML datetime or a date; UTC-aware result."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        moment = datetime.fromisoformat(text)
    else:
        raise ValueError(f"expected an ISO timestamp, got {value!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc).replace(microsecond=0)
    except OverflowError:  # 9999-12-31T23:00:00-05:00 has no UTC time
        raise ValueError("out of the range of dates") from None


def slugify(text: str, max_length: int = 48) -> str:
    """A lowercase ASCII slug safe in a file name (never empty, never ``..``)."""
    slug = _SLUG_RE.sub("-", text.lower()).strip("-")[:max_length].strip("-")
    return slug or "memory"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` with ``noun``, in the plural unless the count is one (``many``, else the
    noun plus an s): ``1 daily note``, ``3 daily notes``, ``0 entries``."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def short_hash(*parts: str, length: int = 12) -> str:
    """A stable hexadecimal digest of the given strings."""
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8"), usedforsecurity=False)
    return digest.hexdigest()[:length]


# ------------------------------------------------------------------- normalising

# Punctuation that carries meaning in a value ("C#", "50%", "R&D") is kept; any other
# punctuation only separates words, as whitespace does.
_KEPT_PUNCTUATION = frozenset("#%&")
_TURN_MARK_RE = re.compile(r"^(\s*[-*+]\s+)#\d{1,7}\s+", re.MULTILINE)


def _separator(char: str) -> bool:
    return char.isspace() or (
        unicodedata.category(char).startswith("P") and char not in _KEPT_PUNCTUATION
    )


def normalise_value(text: str) -> str:
    """A value as compared for duplicates: case folded (NFKC), and every run of whitespace
    and separating punctuation one space, none at either end.

    ``Dr. Lena  Hoffman`` and ``dr lena hoffman``, ``+44 7700-900214`` and ``+44 7700 900214``
    are the same value; ``C#`` and ``C``, ``50%`` and ``50`` are not.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # ASCII by table, the rest character by character: episode fingerprints run this over
    # every detail line a consolidation writes.
    spaced = _NON_ASCII_RE.sub(_spaced, folded.translate(_ASCII_SEPARATORS))
    return " ".join(spaced.split())


_ASCII_SEPARATORS = {code: " " for code in range(128) if _separator(chr(code))}
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def _spaced(match: re.Match[str]) -> str:
    char = match.group()
    return " " if _separator(char) else char


def value_key(text: str) -> str:
    """What two values of one fact must share to be the same value (a near-duplicate).

    Addresses (email, url) compare whole, up to case and trailing sentence punctuation, since
    ``j.smith@x.com`` and ``j-smith@x.com`` are different people; phone numbers by their
    digits (and a leading ``+``); anything else by :func:`normalise_value`.
    """
    trimmed = unicodedata.normalize("NFKC", text).strip().rstrip(".,;:!?").strip()
    kind = value_kind(trimmed)
    if kind in {"email", "url"}:
        return f"{kind}:{trimmed.casefold()}"
    if kind == "phone":
        return "phone:" + ("+" if trimmed.startswith("+") else "") + re.sub(r"\D", "", trimmed)
    return normalise_value(text)


def episode_fingerprint(summary: str, details: str) -> str:
    """The sha256 of an episode's normalised summary and details: equal for two episodes that
    say the same thing, whatever turns of whichever log they quote (``- #3 ...`` marks)."""
    body = _TURN_MARK_RE.sub(r"\1", details)
    text = normalise_value(summary) + "\n" + normalise_value(body)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# --------------------------------------------------------------------------- yaml

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


# --------------------------------------------------------------------- frontmatter


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


def _dump_yaml(data: Mapping[str, Any]) -> str:
    text: str = yaml.dump(
        dict(data),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    return text


def join_frontmatter(meta: Mapping[str, Any], body: str) -> str:
    """Render frontmatter and body as one markdown document."""
    body = body.strip("\n")
    return f"---\n{_dump_yaml(meta)}---\n" + (f"{body}\n" if body else "")


# ------------------------------------------------------------------------ episodes


@dataclass(frozen=True)
class Episode:
    """One compressed record of a past interaction."""

    id: str
    path: str
    timestamp: datetime
    summary: str
    details: str = ""
    tags: tuple[str, ...] = ()
    participants: tuple[str, ...] = ()
    confidence: str = "medium"
    source: str | None = None
    source_turns: tuple[int, int] | None = None
    session: str | None = None
    entities: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    agent: str | None = None  # the agent it was made by; None: any agent
    scope: str | None = (
        None  # where it may be recalled (memoryclaw.vault.scopes); None: owner-level
    )


TURN_MARK = "#"  # a detail line "- #3 Caroline: …" quotes turn 3 of the episode's source log
_DETAIL_LINE_RE = re.compile(
    r"^\s*[-*+]\s+(?:#(?P<turn>\d{1,7})\s+)?"
    r"(?:(?P<speaker>[^\s:#*`\[][^:\n]{0,39}?):\s+)?(?P<text>\S.*?)\s*$"
)


@dataclass(frozen=True)
class Passage:
    """One quotable line of an episode's details (or one turn of a raw log): what recall
    shows the model, with the turn it came from and who spoke, when either is known."""

    line: int  # 1-based, within the details (a log's passages use the turn number)
    turn: int | None
    speaker: str | None
    text: str


def detail_passages(details: str) -> list[Passage]:
    """The bullet lines of an episode's details as passages (``- #3 Caroline: text``)."""
    out = []
    for number, raw in enumerate(details.split("\n"), start=1):
        match = _DETAIL_LINE_RE.match(raw)
        if match is None:
            continue
        turn = int(match["turn"]) if match["turn"] else None
        speaker = match["speaker"].strip() if match["speaker"] else None
        out.append(Passage(number, turn, speaker, match["text"].replace("**", "")))
    return out


def episode_id_for_path(rel_path: str) -> str:
    """The id a hand-written episode without one gets: a hash of its vault-relative path."""
    return f"ep-{short_hash(rel_path)}"


# A consolidated episode's id is ``ep-<date>-<time>-<hash>``; recall names it by ``ep-<hash>``,
# since the date is shown beside it and the hash alone tells the episodes of a vault apart.
_CONSOLIDATED_ID_RE = re.compile(r"^ep-\d{8}-\d{6}-([0-9a-f]{8})$")
_HANDLE_RE = re.compile(r"^ep-[0-9a-f]{8}$")


def episode_handle(episode_id: str) -> str | None:
    """The short handle of a consolidated episode's id (``ep-20230508-133000-d6b27f26`` ->
    ``ep-d6b27f26``); None for any other id."""
    match = _CONSOLIDATED_ID_RE.match(episode_id)
    return f"ep-{match[1]}" if match else None


def is_episode_handle(ident: str) -> bool:
    """Whether ``ident`` has the shape of a short episode handle (``ep-`` and 8 hex digits)."""
    return _HANDLE_RE.match(ident) is not None


def _string_list(meta: Mapping[str, Any], key: str, path: str, *, lower: bool) -> tuple[str, ...]:
    value = meta.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[Any] = [part for part in value.split(",", MAX_LIST_ITEMS)]
    elif isinstance(value, list):
        items = value
    else:
        raise ParseError(path, f"{key}: expected a list of strings, got {type(value).__name__}")
    if len(items) > MAX_LIST_ITEMS:
        raise ParseError(path, f"{key}: more than {MAX_LIST_ITEMS:,} items, over the limit")
    out: dict[str, None] = {}  # ordered, with O(1) membership
    for item in items:
        if isinstance(item, (dict, list)):
            raise ParseError(path, f"{key}: expected a list of strings, got a nested list or map")
        if item is None:
            continue
        text = str(item).strip()
        if lower:
            text = text.lower()
        if text:
            out[text] = None
    return tuple(out)


def _optional_str(meta: Mapping[str, Any], key: str, path: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ParseError(path, f"{key}: expected a string, got {type(value).__name__}")
    return str(value)


def _source_turns(meta: Mapping[str, Any], path: str) -> tuple[int, int] | None:
    value = meta.get("source_turns")
    if value is None:
        return None
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 1 <= value[0] <= value[1] <= MAX_TURN_NUMBER
    )
    if not ok:
        raise ParseError(path, f"source_turns: expected [first, last] turn numbers, got {value!r}")
    return (value[0], value[1])


def _first_line(body: str) -> str:
    for line in _lines(body):
        text = line.strip().lstrip("#>*-+ ").replace("**", "").strip()
        if text:
            return text[:_SUMMARY_FALLBACK_CHARS]
    return ""


_FILENAME_STAMP_RE = re.compile(r"(\d{4}-\d{2}-\d{2})_(\d{2})-(\d{2})-(\d{2})")


def timestamp_from_filename(path: str) -> datetime | None:
    """The ``YYYY-MM-DD_HH-MM-SS`` stamp that starts a vault file name, as UTC."""
    match = _FILENAME_STAMP_RE.match(path.rsplit("/", 1)[-1])
    if not match:
        return None
    try:
        return parse_timestamp(
            f"{match.group(1)}T{match.group(2)}:{match.group(3)}:{match.group(4)}Z"
        )
    except ValueError:
        return None


def parse_episode(text: str, path: str, mtime: float) -> Episode:
    """Parse an episode file.

    A missing timestamp is taken from the file name's ``YYYY-MM-DD_HH-MM-SS`` stamp, else from
    ``mtime`` (epoch seconds); a missing id is a hash of the path.
    """
    try:
        return _parse_episode(text, path, mtime)
    except ParseError as exc:
        raise _with_key_line(exc, text) from None


def _with_key_line(exc: ParseError, text: str) -> ParseError:
    """Point a ``key: problem`` error at the frontmatter line that sets that key."""
    if exc.line is not None:
        return exc
    key = exc.reason.split(":", 1)[0]
    lines = _lines(text)
    for number, line in enumerate(lines[1:], start=2):
        if _FM_BOUNDARY_RE.match(line):
            break
        if line.startswith(f"{key}:"):
            return ParseError(exc.path, exc.reason, number)
    return exc


def _parse_episode(text: str, path: str, mtime: float) -> Episode:
    meta, body, _ = split_frontmatter(text, path)
    details = body.strip()
    summary_value = meta.get("summary")
    if isinstance(summary_value, (dict, list)):
        raise ParseError(path, f"summary: expected a string, got {type(summary_value).__name__}")
    summary = str(summary_value).strip() if summary_value is not None else ""
    if not summary:
        summary = _first_line(details)
    if not summary:
        raise ParseError(path, "episode has neither a summary nor a body")
    raw_ts = meta.get("timestamp")
    try:
        if raw_ts is None:
            timestamp = timestamp_from_filename(path) or datetime.fromtimestamp(
                int(mtime), tz=timezone.utc
            )
        else:
            timestamp = parse_timestamp(raw_ts)
    except (ValueError, OverflowError) as exc:
        raise ParseError(path, f"timestamp: {exc}") from None
    confidence = str(meta.get("confidence") or "medium").strip().lower()
    if confidence not in CONFIDENCE_LEVELS:
        raise ParseError(path, f"confidence: expected low, medium or high, got {confidence!r}")
    # hashed from where it lives when not archived: archiving and restoring keep its id
    fallback = episode_id_for_path(active_path(path))
    ident = (_optional_str(meta, "id", path) or "").strip() or fallback
    return Episode(
        id=ident.strip(),
        path=path,
        timestamp=timestamp,
        summary=summary,
        details=details,
        tags=_string_list(meta, "tags", path, lower=True),
        participants=_string_list(meta, "participants", path, lower=False),
        confidence=confidence,
        source=_optional_str(meta, "source", path),
        source_turns=_source_turns(meta, path),
        session=_optional_str(meta, "session", path),
        entities=_string_list(meta, "entities", path, lower=False),
        extra={k: v for k, v in meta.items() if k not in _EPISODE_KEYS},
        agent=_optional_str(meta, "agent", path),
        scope=_scope(meta, path),
    )


def _scope(meta: Mapping[str, Any], path: str, line: int | None = None) -> str | None:
    """A memory's ``scope`` key: None when absent, a :class:`ParseError` when not a scope."""
    value = _optional_str(meta, "scope", path)
    if value is None or not value.strip():
        return None
    if not valid_scope(value.strip()):
        raise ParseError(path, f"scope: {SCOPE_PROBLEM}, got {value!r}", line)
    return value.strip()


def dump_episode(episode: Episode) -> str:
    """Render an episode as markdown with frontmatter, keys in the spec's order."""
    meta: dict[str, Any] = {
        "id": episode.id,
        "timestamp": utc_iso(episode.timestamp),
        "summary": episode.summary,
        "tags": list(episode.tags),
        "participants": list(episode.participants),
        "confidence": episode.confidence,
    }
    if episode.source is not None:
        meta["source"] = episode.source
    if episode.source_turns is not None:
        meta["source_turns"] = list(episode.source_turns)
    if episode.session is not None:
        meta["session"] = episode.session
    meta["entities"] = list(episode.entities)
    if episode.agent is not None:
        meta["agent"] = episode.agent
    if episode.scope is not None:
        meta["scope"] = episode.scope
    meta.update(episode.extra)
    return join_frontmatter(meta, episode.details)


def episode_filename(timestamp: datetime, slug: str) -> str:
    """``YYYY-MM-DD_HH-MM-SS_<slug>.md`` for an episode."""
    stamp = timestamp.astimezone(timezone.utc).strftime("%Y-%m-%d_%H-%M-%S")
    return f"{stamp}_{slugify(slug)}.md"


# --------------------------------------------------------------------------- facts


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
_BULLET_RE = re.compile(r"^(?P<indent>\s*)[-*+]\s+(?P<text>.*?)\s*$")
_KEY_VALUE_RE = re.compile(r"^(?P<key>[^:|]{1,120}?)\s*:(?:\s+(?P<value>.*?)|\s*)$")
_INDENTED_KV_RE = re.compile(
    r"^(?P<indent>\s{2,})(?P<key>[^\s:-][^:]{0,119}?)\s*:\s+(?P<value>.*?)\s*$"
)
TRAILING_COMMENT_RE = re.compile(r"\s*<!--(?P<body>.*?)-->\s*$")
_COMMENT_LINE_RE = re.compile(r"^\s*<!--.*-->\s*$")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_COMMENT_OPEN_RE = re.compile(r"^\s*<!--(?!.*-->)")


def _lines(text: str) -> list[str]:
    """Split on LF only (as editors count lines); ``str.splitlines`` would also split on
    U+2028, form feeds and other characters that may legitimately sit inside a line."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def value_kind(value: str) -> str | None:
    """``email``, ``url``, ``date`` or ``phone`` when the value plainly is one, else None."""
    text = value.strip()
    if EMAIL_RE.match(text):
        return "email"
    if URL_RE.match(text):
        return "url"
    if DATE_RE.match(text):
        return "date"
    if PHONE_RE.match(text) and sum(ch.isdigit() for ch in text) >= 7:
        return "phone"
    return None


# What a question calls a kind of value a text holds without naming it: "what's my dentist's
# number?" asks for the phone number on the line "- Dentist: Dr. Lena Hoffman, 020 7946 0321".
# The index stores a token per kind found (``shapephone``), never shown, and a query using
# one of the kind's words searches for its token as well (shape_terms).
_SHAPE_WORDS = {
    "phone": "phone number call telephone mobile tel",
    "email": "email mail",
    "url": "website site link url web homepage",
    "date": "date birthday born birth",
    "address": "address live lives street postcode",
}
SHAPE_PREFIX = "shape"
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"  # Sept.
_SHAPE_RES = {
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "url": re.compile(r"\bhttps?://\S+|\bwww\.[\w-]+\.\S+", re.IGNORECASE),
    # seven digits or more, in groups a phone number is written in
    "phone": re.compile(r"(?<![\w-])\+?\(?\d(?:[\d().-]| (?=[\d(]))*\d(?![\w-])"),
    "date": re.compile(
        rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH} \d{{4}}\b"
        rf"|\b{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b",
        re.IGNORECASE,
    ),
    # a house number and a street, or a UK postcode or a US state and ZIP
    "address": re.compile(
        r"\b\d+[a-z]? (?:[A-Z][\w'-]* ){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr"
        r"|Boulevard|Blvd|Way|Place|Pl|Court|Ct|Square|Sq|Terrace|Close|Crescent|Grove"
        r"|Gardens|Row|Hill|Park|Parade|Mews)\b"
        r"|\b[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}\b|\b[A-Z]{2} \d{5}(?:-\d{4})?\b"
    ),
}


def shape_tokens(text: str, field: str = "") -> str:
    """The tokens of the kinds of value in ``text`` (a phone number, an email, a URL, a date,
    an address) or that its ``field`` names: ``"Dr. Lena Hoffman, 020 7946 0321"`` ->
    ``"shapephone"``; "" when there is none."""
    kinds = [kind for kind, words in _SHAPE_WORDS.items() if field in words.split()]
    for kind, pattern in _SHAPE_RES.items():
        if kind == "phone":
            found = any(_is_phone(m.group(0)) for m in pattern.finditer(text))
        else:
            found = pattern.search(text) is not None
        if found and kind not in kinds:
            kinds.append(kind)
    return " ".join(SHAPE_PREFIX + kind for kind in kinds)


def shape_terms(keywords: Iterable[str]) -> dict[str, str]:
    """The query's ``keywords`` that name a kind of value (a plural read as its singular),
    each with that kind's token: ``["dentist", "number"]`` -> ``{"number": "shapephone"}``."""
    out = {}
    for keyword in keywords:
        for kind, words in _SHAPE_WORDS.items():
            if keyword in words.split() or keyword.removesuffix("s") in words.split():
                out[keyword] = SHAPE_PREFIX + kind
    return out


def _is_phone(text: str) -> bool:
    """Whether a run of digits reads as a phone number: 7 to 15 digits, not a date or time,
    a range of years or an amount (without a leading ``+``, ``0`` or ``(`` it needs three
    groups of digits)."""
    digits = sum(ch.isdigit() for ch in text)
    if not 7 <= digits <= 15 or DATE_RE.match(text.strip("()")) or "." in text:
        return False
    groups = [group for group in re.split(r"[\s().-]+", text) if group]
    return text.startswith(("+", "0", "(")) or len(groups) >= 3


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
        scope = _scope(provenance, self.path, line) if "scope" in provenance else None
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
    defaults = {"agent": _optional_str(meta, "agent", path), "scope": _scope(meta, path)}
    out = _FactCollector(path, default_updated, defaults)
    section = ""
    parent: str | None = None
    parent_provenance: dict[str, str] = {}
    header: list[str] | None = None
    in_fence = False
    in_comment = False
    for offset, raw in enumerate(_lines(body)):
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
            section, parent, header = heading.group(2), None, None
            continue
        if raw.lstrip().startswith("|"):
            parent = None
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
        if bullet and len(bullet.group("indent").expandtabs(4)) < 2:
            content, provenance = _split_trailing_comment(bullet.group("text"))
            kv = _KEY_VALUE_RE.match(content)
            parent = None
            if kv and kv.group("value"):
                entity, field = _field_for(kv.group("key"), kv.group("value"))
                out.add(lineno, section, entity, field, kv.group("value"), "bullet", provenance)
            elif kv:
                parent, parent_provenance = kv.group("key").strip(), provenance
            else:
                out.add(lineno, section, section or "note", "note", content, "note", provenance)
            continue
        if parent is not None:
            nested_text = bullet.group("text") if bullet else raw.strip()
            content, provenance = _split_trailing_comment(nested_text)
            kv = _KEY_VALUE_RE.match(content)
            if kv and kv.group("value"):
                merged = {**parent_provenance, **provenance}
                out.add(
                    lineno, section, parent, kv.group("key"), kv.group("value"), "nested", merged
                )
            continue
        parent = None
    return out.facts


# ------------------------------------------------------------------------- aliases


# A term is expanded to every other term of its groups in each query: past this many, a
# search would be one huge OR of synonyms (and the index one row per pair of them).
MAX_SYNONYMS = 100


def parse_aliases(text: str, path: str) -> dict[str, tuple[str, ...]]:
    """Read ``aliases.yaml`` into term -> every other term of its group, both directions.

    A term with more than ``MAX_SYNONYMS`` synonyms (in one group or across several) is
    refused, so reading and using the file costs time linear in its size.
    """
    raw = load_yaml(text, path) if text.strip() else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParseError(path, f"expected a mapping of term: [synonyms], got {type(raw).__name__}")
    groups: dict[str, set[str]] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            synonyms: list[Any] = [value]
        elif isinstance(value, list):
            synonyms = value
        elif value is None:
            synonyms = []
        else:
            raise ParseError(
                path, f"{key}: expected a list of synonyms, got {type(value).__name__}"
            )
        if len(synonyms) > MAX_SYNONYMS:
            raise _too_many_synonyms(path, key)
        terms = {str(t).strip().lower() for t in [key, *synonyms] if str(t).strip()}
        for term in terms:
            others = groups.setdefault(term, set())
            others.update(terms - {term})
            if len(others) > MAX_SYNONYMS:
                raise _too_many_synonyms(path, term)
    return {term: tuple(sorted(others)) for term, others in sorted(groups.items())}


def _too_many_synonyms(path: str, term: object) -> ParseError:
    return ParseError(path, f"{term}: more than {MAX_SYNONYMS} synonyms, over the limit")


# ------------------------------------------------------------------------ raw logs

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
    return f"---\n{_dump_yaml(meta)}---\n" + body


def log_outline(text: str, path: str) -> tuple[dict[str, Any], int, datetime | None]:
    """A raw log's frontmatter, turn count and last turn time, without reading turn bodies.

    Raises :class:`ParseError` for the same structural faults as :func:`parse_log`.
    """
    meta, body, first_line = split_frontmatter(text, path)
    count, last = 0, None
    for offset, raw in enumerate(_lines(body)):
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
    return f"---\n{_dump_yaml(meta)}---\n" + body


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

    for offset, raw in enumerate(_lines(body)):
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
    _scope(meta, path)  # a log whose scope is not one must not pass as owner-level
    return RawLog(path=path, meta=meta, turns=tuple(turns))
