"""Episode files: one compressed record of a past interaction, as markdown with frontmatter;
parse and render them, their ids and short handles, and their quotable detail lines.

Pure functions over text: no disk I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import ParseError
from .files import active_path
from .frontmatter import (
    body_lines,
    join_frontmatter,
    meta_scope,
    optional_str,
    split_frontmatter,
    with_key_line,
)
from .naming import short_hash, slugify
from .timestamps import parse_timestamp, utc_iso
from .values import normalise_value

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


_TURN_MARK_RE = re.compile(r"^(\s*[-*+]\s+)#\d{1,7}\s+", re.MULTILINE)


def episode_fingerprint(summary: str, details: str) -> str:
    """The sha256 of an episode's normalised summary and details: equal for two episodes that
    say the same thing, whatever turns of whichever log they quote (``- #3 ...`` marks)."""
    body = _TURN_MARK_RE.sub(r"\1", details)
    text = normalise_value(summary) + "\n" + normalise_value(body)
    import hashlib  # here: a recall hashes nothing, and OpenSSL is slow to load

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
    for line in body_lines(body):
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
        raise with_key_line(exc, text) from None


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
    ident = (optional_str(meta, "id", path) or "").strip() or fallback
    return Episode(
        id=ident.strip(),
        path=path,
        timestamp=timestamp,
        summary=summary,
        details=details,
        tags=_string_list(meta, "tags", path, lower=True),
        participants=_string_list(meta, "participants", path, lower=False),
        confidence=confidence,
        source=optional_str(meta, "source", path),
        source_turns=_source_turns(meta, path),
        session=optional_str(meta, "session", path),
        entities=_string_list(meta, "entities", path, lower=False),
        extra={k: v for k, v in meta.items() if k not in _EPISODE_KEYS},
        agent=optional_str(meta, "agent", path),
        scope=meta_scope(meta, path),
    )


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
