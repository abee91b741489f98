"""A turn handed over to be logged (:class:`NewTurn`), as a hook, ``ingest`` or an import
gives it, and the checks it must pass before anything of it is written."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..errors import InvalidInputError
from .inputs import require_label, require_text
from .logformat import ROLE_RE
from .scopes import check_kind, session_problem
from .timestamps import now_utc, utc_iso

MAX_TURN_CHARS = 1_000_000
# A turn from before this or from the future is a broken clock or input: accepted, it would
# sort wrongly and keep its session's log from ever going idle (and being consolidated).
EARLIEST_TURN = datetime(1970, 1, 1, tzinfo=timezone.utc)
MAX_CLOCK_SKEW = timedelta(days=1)  # the message says "a day"


@dataclass(frozen=True)
class NewTurn:
    """A turn to be logged, as a hook or ``ingest`` hands it over."""

    session: str
    role: str
    content: str
    timestamp: datetime
    name: str | None = None
    channel: str | None = None
    tool: str | None = None
    agent: str | None = None
    kind: str | None = None  # direct | group | thread | cron; None: read from the session key
    sender: str | None = None  # who wrote a user turn (a sender id), when the caller knows


def validate_turn(turn: NewTurn, *, source: str | None = None, line: int | None = None) -> None:
    """Raise :class:`InvalidInputError` for a turn that must not be written."""
    for field in ("session", "role", "content", "name", "channel", "tool", "agent", "sender"):
        value = getattr(turn, field)
        if value is not None:
            require_text(field, value, source=source, line=line)
    now, stamp = now_utc(), utc_iso(turn.timestamp)
    if turn.timestamp < EARLIEST_TURN:
        problem: str | None = f"{stamp} is before {EARLIEST_TURN.year}"
    elif turn.timestamp > now + MAX_CLOCK_SKEW:
        problem = f"{stamp} is more than a day ahead of this machine's clock ({utc_iso(now)})"
    else:
        problem = None
    if problem is not None:
        raise InvalidInputError("timestamp", problem, source=source, line=line)
    if not turn.session.strip() or "\n" in turn.session:
        raise InvalidInputError(
            "session", "must be a non-empty single line", source=source, line=line
        )
    # ids name a file, a heading, a frontmatter value and a provenance comment: one line each
    for field in ("agent", "channel", "sender"):  # a name or tool is flattened when written
        value = getattr(turn, field)
        if value is not None:
            require_label(field, value, source=source, line=line)
    problem = session_problem(turn.session)
    if problem is not None:
        raise InvalidInputError("session", problem, source=source, line=line)
    if not ROLE_RE.match(turn.role):
        raise InvalidInputError(
            "role",
            f"{turn.role!r} is not a role (lowercase letters and _, e.g. user, assistant)",
            source=source,
            line=line,
        )
    check_kind(turn.kind, source=source, line=line)
    if len(turn.content) > MAX_TURN_CHARS:
        raise InvalidInputError(
            "content",
            f"{len(turn.content)} characters, over the {MAX_TURN_CHARS} limit of one turn",
            source=source,
            line=line,
        )
