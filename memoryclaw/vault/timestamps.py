"""Timestamps as vault files write them: ``YYYY-MM-DDTHH:MM:SSZ`` in UTC, read back from ISO
text, YAML dates or datetimes, and the current time in the same whole-second form.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any


def utc_iso(moment: datetime) -> str:
    """Format a datetime as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC (naive values are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    # not strftime: its %Y gives year 1 as "1", which no ISO reader takes back
    return moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat("T", "seconds") + "Z"


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


def now_utc() -> datetime:
    """The current time, UTC, whole seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0)
