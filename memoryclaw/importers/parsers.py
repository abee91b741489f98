"""Read what other memory systems hold, as plain data: no disk, no clock, no vault.

Parsers for what ``memoryclaw openclaw import``, ``memoryclaw import-notes`` and ``ingest``
bring in (the writing is :mod:`memoryclaw.importers.filing`):

* :func:`memory_items` — the items of a memory file (OpenClaw's ``MEMORY.md`` and
  ``USER.md``, Claude Code's ``CLAUDE.md``, Codex's ``AGENTS.md``, any list of notes), each
  with its line;
* :func:`note_document` — a note as an episode's summary and detail lines, each with its line;
* :func:`daily_note_date` — the day a daily note (``YYYY-MM-DD.md``) is about;
* :func:`written_by_memoryclaw` and :func:`foreign_lines` — what of a note a vault wrote
  with a scope, an agent or a review mark (an import must not file it owner-level);
* :func:`session_turns` — the turns of one OpenClaw session transcript event;
* :func:`message_records` — an OpenAI-style ``messages`` array as ``ingest`` records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

from ..errors import InvalidInputError, ParseError
from ..vault.facts import parse_facts
from ..vault.safeyaml import load_yaml
from ..vault.scopes import valid_scope

_BULLET_RE = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(?P<text>.*)$")
_HEADING_RE = re.compile(r"^#{1,6}\s+(?P<text>.*?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_COMMENT_RE = re.compile(r"^\s*<!--(?P<body>.*?)-->\s*$")
_OBSERVED_RE = re.compile(r"observed:\s*(?P<day>\d{4}-\d{2}-\d{2})", re.I)
_SUPERSEDED_RE = re.compile(r"status:\s*superseded", re.I)
_LINK_ONLY_RE = re.compile(r"^\[[^\]]*\]\([^)]*\)$")
# Template text: an item of at most two words and "..." ("Prefer ...") or holding YYYY-MM-DD
# was never filled in.
_PLACEHOLDER_RE = re.compile(r"^[\w*`]*(?:\s+[\w*`]+)?\s*(?:\.\.\.|…)$|YYYY-MM-DD")
# "**Name:** Alice" (OpenClaw's older USER.md template) is "Name: Alice".
_BOLD_KEY_RE = re.compile(r"^(\*\*|__)(?P<key>[^*_:]{1,80}?)(?::\1|\1:)\s*")
_DAILY_RE = re.compile(r"^(?P<day>\d{4}-\d{2}-\d{2})(?:[-_ ][^/]*)?\.md$")
_DIRECTIVES = "directives"
EMPTY_ITEM = ""


@dataclass(frozen=True)
class NoteItem:
    """One item of a memory file: its 1-based line, the heading it sits under, its text
    (a nested item is prefixed by its parent key: ``Brightsmile Dental (phone): 020 …``)."""

    line: int
    section: str
    text: str
    observed: str | None = None  # YYYY-MM-DD, from OpenClaw's USER.md metadata line


@dataclass(frozen=True)
class ItemFact:
    """What a memory-file item states: an ``entity: value`` fact, or a note (field ``note``)."""

    entity: str
    field: str
    value: str

    @property
    def is_note(self) -> bool:
        """Whether the item is a note rather than an entity: value fact."""
        return self.field == "note"


def _body_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of ``text`` past a YAML frontmatter block, fenced code and HTML
    comments spanning lines left out; single-line comments are kept (they carry metadata)."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = 0
    if lines and lines[0].strip() == "---":
        closing = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if closing is not None:
            start = closing + 1
    out: list[tuple[int, str]] = []
    in_fence = in_comment = False
    for number, raw in enumerate(lines[start:], start=start + 1):
        if in_comment:
            in_comment = "-->" not in raw
            continue
        if _FENCE_RE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if "<!--" in raw and "-->" not in raw:
            in_comment = True
            continue
        out.append((number, raw))
    return out


def _clean(text: str) -> str:
    return " ".join(text.split())


def memory_items(text: str, *, user_model: bool = False) -> list[NoteItem]:
    """The items of a memory file, in file order.

    An item is a list item, or a line of prose outside lists.  Headings name the section;
    fenced code, HTML comments, frontmatter, bare links and unfilled template lines (a word or
    two and ``...``, anything holding ``YYYY-MM-DD``, a ``**Key:**`` left empty) are no items;
    a ``- Key:`` item heads the items nested under it.  ``user_model`` reads OpenClaw's
    ``USER.md``: only list items count (its prose is instructions), only those under
    ``## Directives`` when it has that heading, each dated by the ``<!-- observed: … |
    status: … -->`` line above it, and a ``superseded`` one is left out.
    """
    body = _body_lines(text)
    has_directives = any(
        (h := _HEADING_RE.match(raw)) and _clean(h.group("text")).lower() == _DIRECTIVES
        for _, raw in body
    )
    items: list[NoteItem] = []
    section = ""
    parent: str | None = None
    observed: str | None = None
    superseded = False
    for number, raw in body:
        if not raw.strip():
            continue
        comment = _COMMENT_RE.match(raw)
        if comment:
            day = _OBSERVED_RE.search(comment.group("body"))
            observed = day.group("day") if day else observed
            superseded = bool(_SUPERSEDED_RE.search(comment.group("body")))
            continue
        heading = _HEADING_RE.match(raw)
        if heading:
            section, parent = _clean(heading.group("text")), None
            continue
        if user_model and has_directives and section.lower() != _DIRECTIVES:
            continue
        bullet = _BULLET_RE.match(raw)
        if bullet is None and user_model:
            continue
        content = _clean(re.sub(r"<!--.*?-->", "", bullet.group("text") if bullet else raw))
        content = _BOLD_KEY_RE.sub(lambda m: f"{m.group('key')}: ", content).strip()
        nested = bullet is not None and len(bullet.group("indent").expandtabs(4)) >= 2
        if not nested:
            parent = content[:-1].strip() if content.endswith(":") and bullet else None
            if parent:
                continue  # "- Brightsmile Dental:" heads the nested items under it
        elif parent:
            key, sep, value = content.partition(":")
            content = (
                f"{parent} ({key.strip()}): {value.strip()}" if sep else f"{parent}: {content}"
            )
        if not content or _LINK_ONLY_RE.match(content) or _PLACEHOLDER_RE.search(content):
            continue
        if user_model and superseded:
            continue
        items.append(NoteItem(number, section, content, observed if user_model else None))
        if user_model:
            observed, superseded = None, False
    return items


def item_fact(item: NoteItem) -> ItemFact:
    """What ``item`` states, read as a line of a vault fact file reads (``Key: value`` is a
    fact, ``Name (field): value`` names the field, anything else is a note).  A value that
    held a secret (redacted) is no fact either: the line stays a note of its episode."""
    facts = parse_facts(f"- {item.text}\n", "<item>", "")
    if len(facts) == 1 and facts[0].form == "bullet" and "[REDACTED:" not in facts[0].value:
        fact = facts[0]
        return ItemFact(fact.entity, fact.field, fact.value)
    return ItemFact(item.section or "note", "note", item.text)


# Frontmatter keys only memoryclaw writes (an episode's or a fact file's); ``scope`` alone
# counts when it is written as a scope (an Obsidian note may have a "scope" property).
MEMORYCLAW_KEYS = frozenset({"agent", "session", "source_turns"})
REVIEW_FILE = "_pending.md"  # a vault's lines awaiting review
# A line awaiting review: UNTRUSTED and CONFLICT are marks enough; LOW and INVALID are
# words too, so only with the provenance comment memoryclaw puts after them.
_REVIEW_LINE_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:UNTRUSTED|CONFLICT)\b|^\s*[-*+]\s+(?:LOW|INVALID)\s.*<!--"
)
_PROVENANCE_RE = re.compile(r"<!--(?P<body>.*?)-->")
_PROVENANCE_KEY_RE = re.compile(r"(?:^|;)\s*(?P<key>agent|scope)\s*:\s*(?P<value>[^;]*)")


def written_by_memoryclaw(meta: Mapping[str, Any]) -> bool:
    """Whether a note's frontmatter ``meta`` is one memoryclaw wrote (an episode or a fact
    file of a vault): it names an agent, a session or source turns, or a scope written as
    one, or it is an episode (``id`` and ``timestamp``) with a scope."""
    if not MEMORYCLAW_KEYS.isdisjoint(meta):
        return True
    scope = meta.get("scope")
    if scope is None:
        return False
    episode = "id" in meta and "timestamp" in meta
    return episode or (isinstance(scope, str) and valid_scope(scope))


def foreign_lines(text: str) -> tuple[str, int]:
    """``text`` with each line an import may not file owner-level blanked (so line numbers
    stay), and how many: a line awaiting review, and a fact line whose provenance comment
    names an agent or a scope other than ``owner``."""
    lines = text.split("\n")
    count = 0
    for number, line in enumerate(lines):
        if _REVIEW_LINE_RE.match(line) or _scoped(line):
            lines[number] = ""
            count += 1
    return "\n".join(lines), count


def _scoped(line: str) -> bool:
    for comment in _PROVENANCE_RE.finditer(line):
        for key in _PROVENANCE_KEY_RE.finditer(comment.group("body")):
            value = key.group("value").strip()
            if value and not (key.group("key") == "scope" and value == "owner"):
                return True
    return False


def daily_note_date(name: str) -> date | None:
    """The day of a daily note named ``YYYY-MM-DD.md`` or ``YYYY-MM-DD-<slug>.md``."""
    match = _DAILY_RE.match(name)
    if match is None:
        return None
    try:
        return date.fromisoformat(match.group("day"))
    except ValueError:
        return None


def note_frontmatter(text: str) -> dict[str, Any]:
    """A note's YAML frontmatter (Obsidian properties, Claude Code memory ``name`` /
    ``description``), or ``{}`` when it has none or it cannot be read."""
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        return {}
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if closing is None:
        return {}
    try:
        value = load_yaml("\n".join(lines[1:closing]), "<note>", 2, "frontmatter")
    except ParseError:
        return {}
    return value if isinstance(value, dict) else {}


def note_title(meta: Mapping[str, Any]) -> str | None:
    """What a note's frontmatter calls it: ``title``, else ``description``, else ``name``."""
    for key in ("title", "description", "name"):
        value = meta.get(key)
        if isinstance(value, str) and value.strip():
            return _clean(value)[:200]
    return None


def note_date(meta: Mapping[str, Any]) -> date | None:
    """The day a note's frontmatter dates it (``date``, else ``created``)."""
    for key in ("date", "created"):
        value = meta.get(key)
        text = value.isoformat() if isinstance(value, date) else str(value or "")
        try:
            return date.fromisoformat(text[:10])
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class NoteDocument:
    """A note read as an episode: a one-line summary and its lines (line number, text)."""

    summary: str
    lines: tuple[tuple[int, str], ...]


def note_document(text: str, fallback_title: str) -> NoteDocument:
    """``text`` as an episode: the frontmatter's title (else the first heading, else the
    first line, else ``fallback_title``) is the summary; every other non-empty line is a
    detail."""
    lines: list[tuple[int, str]] = []
    title = note_title(note_frontmatter(text))
    for number, raw in _body_lines(text):
        if _COMMENT_RE.match(raw) or not raw.strip():
            continue
        heading = _HEADING_RE.match(raw)
        bullet = _BULLET_RE.match(raw)
        content = _clean(
            heading.group("text") if heading else bullet.group("text") if bullet else raw
        )
        if not content:
            continue
        if heading and title is None:
            title = content
            continue
        lines.append((number, content))
    if title is None:
        title = lines.pop(0)[1] if len(lines) > 1 else fallback_title
    return NoteDocument(title[:200], tuple(lines))


# ------------------------------------------------------------------ OpenClaw transcripts


@dataclass(frozen=True)
class SessionTurn:
    """One turn of an OpenClaw session transcript: who spoke, what, when (event id for
    provenance and idempotence)."""

    event_id: str
    role: str  # user | assistant | tool_call | tool_result
    content: str
    timestamp: datetime
    tool: str | None = None
    sender: str | None = None


def _moment(value: Any) -> datetime | None:
    """A transcript time: epoch milliseconds or an ISO 8601 string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value / 1000, timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return None


def event_time(event: Mapping[str, Any]) -> datetime | None:
    """When a transcript event happened: its message's own time, else the event's."""
    message = event.get("message")
    own = _moment(message.get("timestamp")) if isinstance(message, Mapping) else None
    return own or _moment(event.get("timestamp"))


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
        if block.get("type") in ("image", "image_url", "input_image"):
            return "[image]"
    return ""


def content_text(content: Any) -> str:
    """The text of message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    return ""


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_call(block: Mapping[str, Any]) -> tuple[str, str]:
    """(tool name, arguments) of a tool-call block; OpenClaw's ``tool_call`` wrapper, which
    runs another tool by id, is unwrapped to that tool."""
    name = str(block.get("name") or "tool")
    arguments = block.get("arguments", block.get("input", {}))
    if (
        name == "tool_call"
        and isinstance(arguments, Mapping)
        and isinstance(arguments.get("id"), str)
    ):
        return str(arguments["id"]), _json_text(arguments.get("args", {}))
    return name, _json_text(arguments)


def _result_tool(name: str, text: str) -> str:
    """The tool a result came from (through OpenClaw's ``tool_call`` wrapper, the wrapped one)."""
    if name != "tool_call":
        return name
    try:
        wrapped = json.loads(text[text.index("{") :]) if "{" in text else None
    except ValueError:
        return name
    tool = wrapped.get("tool") if isinstance(wrapped, dict) else None
    return str(tool.get("name") or name) if isinstance(tool, dict) else name


def _sender(message: Mapping[str, Any]) -> str | None:
    meta = message.get("__openclaw")
    for holder in (message, meta if isinstance(meta, Mapping) else {}):
        value = holder.get("senderId")
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def session_turns(event: Mapping[str, Any]) -> list[SessionTurn]:
    """The turns one OpenClaw transcript event holds (none for anything but a user,
    assistant or tool-result ``message``): the user's text, the assistant's text, each of its
    tool calls, a tool's result."""
    message = event.get("message")
    if event.get("type") != "message" or not isinstance(message, Mapping):
        return []
    moment = event_time(event)
    if moment is None:
        return []
    ident = str(event.get("id") or "")
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        text = content_text(content)
        return (
            [SessionTurn(ident, "user", text, moment, sender=_sender(message))]
            if text.strip()
            else []
        )
    if role == "assistant":
        turns = []
        text = content_text(content)
        if text.strip():
            turns.append(SessionTurn(ident, "assistant", text, moment))
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping) and block.get("type") in ("toolCall", "tool_use"):
                tool, arguments = _tool_call(block)
                turns.append(SessionTurn(ident, "tool_call", arguments, moment, tool=tool))
        return turns
    if role in ("toolResult", "tool"):
        text = content_text(content) or "(no output)"
        tool = _result_tool(str(message.get("toolName") or message.get("name") or "tool"), text)
        return [SessionTurn(ident, "tool_result", text, moment, tool=tool)]
    return []


# ------------------------------------------------------------ OpenAI-style messages arrays

# How an OpenAI-style message role is logged; system and developer messages are instructions
# to the model, not something said, and are left out.
MESSAGE_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool_result"}
_SKIPPED_ROLES = frozenset({"system", "developer"})


def message_records(
    messages: Any, *, source: str | None = None, line: int | None = None
) -> list[dict[str, Any]]:
    """An OpenAI-style ``messages`` array as ``ingest`` records (without session and time).

    ``user`` and ``assistant`` messages are turns of that role (content a string or a list of
    parts, whose text parts are joined and images shown as ``[image]``); each of an
    assistant's ``tool_calls`` is a ``tool_call`` turn (the function's name and arguments); a
    ``tool`` message is a ``tool_result`` turn, named by its ``name`` or else by the call its
    ``tool_call_id`` answers; ``system`` and ``developer`` messages are left out.
    """
    if not isinstance(messages, list):
        raise InvalidInputError("messages", "expected a list of messages", source=source, line=line)
    records: list[dict[str, Any]] = []
    calls: dict[str, str] = {}
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        if not isinstance(message, Mapping):
            raise InvalidInputError(where, "expected a JSON object", source=source, line=line)
        role = message.get("role")
        if role in _SKIPPED_ROLES:
            continue
        if role not in MESSAGE_ROLES:
            known = ", ".join([*MESSAGE_ROLES, *sorted(_SKIPPED_ROLES)])
            problem = f"role {role!r} is not one of {known}"
            raise InvalidInputError(where, problem, source=source, line=line)
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            problem = "content must be a string, a list of parts or null"
            raise InvalidInputError(where, problem, source=source, line=line)
        text = content_text(content)
        name = message.get("name") if isinstance(message.get("name"), str) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            tool = name or calls.get(str(call_id)) or "tool"
            records.append({"role": "tool_result", "content": text or "(no output)", "tool": tool})
            continue
        if text.strip():
            record: dict[str, Any] = {"role": MESSAGE_ROLES[str(role)], "content": text}
            if name:
                record["name"] = name
            records.append(record)
        for call in _tool_calls(message, where, source, line):
            given = call.get("function")
            function: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
            tool = str(function.get("name") or "tool")
            calls[str(call.get("id"))] = tool
            arguments = _json_text(function.get("arguments", ""))
            records.append({"role": "tool_call", "content": arguments or "{}", "tool": tool})
    return records


def _tool_calls(
    message: Mapping[str, Any], where: str, source: str | None, line: int | None
) -> Sequence[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls):
        problem = "tool_calls must be a list of objects"
        raise InvalidInputError(where, problem, source=source, line=line)
    return calls


def conversation_records(
    conversation: Mapping[str, Any], *, source: str | None = None, line: int | None = None
) -> list[dict[str, Any]]:
    """A ``{"messages": [...]}`` object as ``ingest`` records: its ``session`` (else ``id``,
    else ``<source>#<line>``), ``agent``, ``channel`` and ``kind`` go with every turn, and its
    ``timestamp`` (ISO) or ``created`` (epoch seconds) dates every turn; other keys (``model``,
    ``tools``, ``metadata`` …) are left alone."""
    session = conversation.get("session", conversation.get("id"))
    if session is None:
        session = f"{source or 'input'}#{line or 1}"
    if not isinstance(session, (str, int)) or isinstance(session, bool):
        raise InvalidInputError("session", "must be a string", source=source, line=line)
    shared: dict[str, Any] = {"session": str(session)}
    for key in ("agent", "channel", "kind"):
        value = conversation.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(key, "must be a string", source=source, line=line)
        if value is not None:
            shared[key] = value
    moment = conversation.get("timestamp")
    created = conversation.get("created")
    if moment is None and isinstance(created, (int, float)) and not isinstance(created, bool):
        when = _moment(created * 1000)
        moment = when.isoformat() if when else None
    if moment is not None:
        shared["timestamp"] = moment
    records = message_records(conversation.get("messages"), source=source, line=line)
    return [{**shared, **record} for record in records]
