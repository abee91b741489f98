"""Ingest records, one JSON object each, read as the turns the vault will store: the keys a
record may have, an OpenAI-style chat's turns, and the checks a turn passes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..errors import InvalidInputError
from ..vault.newturns import NewTurn, validate_turn
from ..vault.timestamps import now_utc, parse_timestamp


def as_timestamp(value: datetime | str | None, key: str) -> datetime:
    """``value`` as a moment (None: now); a bad one is an error naming ``key``."""
    if value is None:
        return now_utc()
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(key, f"not an ISO timestamp: {value!r} ({exc})") from None


RECORD_KEYS = {
    "session",
    "role",
    "content",
    "timestamp",
    "name",
    "channel",
    "tool",
    "agent",
    "kind",
    "sender",
}


def record_turns(
    record: Mapping[str, Any], source: str, line: int, *, check: bool = True
) -> list[NewTurn]:
    """The turns of one ingest record: a turn, or an OpenAI-style chat's turns; each turn
    checked as the vault will store it unless ``check`` is false (already checked)."""
    from .parsers import conversation_records

    if isinstance(record, Mapping) and "messages" in record:
        expanded = conversation_records(record, source=source, line=line)
        return [_turn_from_record(r, source, line, check=check) for r in expanded]
    return [_turn_from_record(record, source, line, check=check)]


def _turn_from_record(
    record: Mapping[str, Any], source: str, line: int, *, check: bool = True
) -> NewTurn:
    if not isinstance(record, Mapping):
        raise InvalidInputError(
            "record",
            f"expected a JSON object, got {type(record).__name__}",
            source=source,
            line=line,
        )
    unknown = sorted(set(record) - RECORD_KEYS)
    if unknown:
        raise InvalidInputError(
            unknown[0],
            f"unknown key (known: {', '.join(sorted(RECORD_KEYS))})",
            source=source,
            line=line,
        )
    for key in ("session", "role", "content"):
        if not isinstance(record.get(key), str):
            raise InvalidInputError(key, "required, and must be a string", source=source, line=line)
    for key in ("name", "channel", "tool", "agent", "kind", "sender"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise InvalidInputError(key, "must be a string", source=source, line=line)
    try:
        moment = as_timestamp(record.get("timestamp"), "timestamp")
    except InvalidInputError as exc:
        raise InvalidInputError("timestamp", exc.problem, source=source, line=line) from None
    turn = NewTurn(
        session=record["session"],
        role=record["role"],
        content=record["content"],
        timestamp=moment,
        name=record.get("name"),
        channel=record.get("channel"),
        tool=record.get("tool"),
        agent=record.get("agent"),
        kind=record.get("kind"),
        sender=record.get("sender"),
    )
    if check:
        validate_turn(turn, source=source, line=line)
    return turn
