"""Relative time in a turn, made absolute against the turn's own timestamp.

Pure and deterministic: ``resolve_relative_dates("I went yesterday", date(2023, 5, 8))`` is
``"I went yesterday (2023-05-07)"``.  The absolute form is ISO: a day ``2023-05-07``, a month
``2023-04``, a year ``2022``, a week ``week of 2023-05-01`` (its Monday).  Weeks run Monday
to Sunday:

- ``last Friday`` is the latest Friday before the day; ``this Friday`` the Friday of the
  day's week; ``next Friday`` the Friday of the following week;
- ``this weekend`` / ``last weekend`` / ``next weekend`` is the Saturday of that week;
- ``last``/``this``/``next`` ``week``, ``month`` and ``year`` are the calendar week, month or
  year before, of, or after the day's;
- ``N days|weeks ago`` and ``in N days|weeks`` are days; ``N months|years ago`` and ``in N
  months|years`` are a month or a year (N a numeral, a number word up to twelve, ``a``/``an``).

An expression already followed by a parenthesis is left alone, so resolving twice changes
nothing.  :func:`human_date` renders an ISO day or month for a reader (``7 May 2023``), and
:func:`human_annotations` does so for the dates resolution added.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta
from functools import cache, lru_cache

_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "a couple of": 2,
}
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|month|year)s?"


# Compiled on first use, as the other patterns marked so: a fresh process (a recall, a logged
# turn) pays for every pattern compiled at import, and most serve a question it is not asked.
@cache
def _relative_re() -> re.Pattern[str]:
    return re.compile(
        r"\b(?:"
        r"(?P<dby>the day before yesterday)"
        r"|(?P<day>yesterday|today|tonight|tomorrow)"
        r"|(?P<which>last|this|next|this past|this coming) "
        r"(?P<span>weekend|week|month|year|" + "|".join(_WEEKDAYS) + r")"
        r"|" + _COUNT + r" " + _UNIT + r" ago"
        r"|in " + _COUNT.replace("count", "ahead") + r" " + _UNIT.replace("unit", "unit2") + r"\b"
        r")\b(?! ?\()",
        # ASCII: a Unicode case fold would let "Tonİght" or "laſt ſaturday" match, words that
        # lower() then spells differently from every key of the tables below
        re.IGNORECASE | re.ASCII,
    )


# What every relative expression holds, as lower() makes it: a unit or weekday ("day"),
# "tomorrow" or "tonight"
_HINTS = ("day", "week", "month", "year", "tomorrow", "tonight")
_ISO_DAY_RE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_ISO_MONTH_RE = re.compile(r"\b(\d{4})-(\d{2})\b(?!-\d)")


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _year(year: int) -> int:
    if not 1 <= year <= 9999:
        raise ValueError(f"year {year} is out of range")
    return year


def _shift_month(day: date, months: int) -> str:
    index = day.year * 12 + day.month - 1 + months
    return f"{_year(index // 12):04d}-{index % 12 + 1:02d}"


def _count(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS[text]


def resolve_expression(match: re.Match[str], day: date) -> str | None:
    """The absolute date an expression found by the module's pattern stands for."""
    if match["dby"]:
        return (day - timedelta(days=2)).isoformat()
    if match["day"]:
        word = match["day"].lower()
        offset = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[word]
        return (day + timedelta(days=offset)).isoformat()
    if match["which"]:
        which = match["which"].lower()
        step = {"last": -1, "this past": -1, "this": 0, "this coming": 1, "next": 1}[which]
        span = match["span"].lower()
        if span in _WEEKDAYS:
            if step < 0:  # the latest one strictly before the day
                back = (day.weekday() - _WEEKDAYS[span] - 1) % 7 + 1
                return (day - timedelta(days=back)).isoformat()
            if which == "this coming":  # the first one strictly after the day
                ahead = (_WEEKDAYS[span] - day.weekday() - 1) % 7 + 1
                return (day + timedelta(days=ahead)).isoformat()
            target = _monday(day) + timedelta(weeks=step, days=_WEEKDAYS[span])
            return target.isoformat()
        if span == "weekend":
            return (_monday(day) + timedelta(weeks=step, days=5)).isoformat()
        if span == "week":
            return f"week of {(_monday(day) + timedelta(weeks=step)).isoformat()}"
        if span == "month":
            return _shift_month(day, step)
        return f"{_year(day.year + step):04d}"
    ago = match["count"] is not None
    count = _count(match["count"] if ago else match["ahead"])
    unit = (match["unit"] if ago else match["unit2"]).lower()
    sign = -1 if ago else 1
    if unit == "day":
        return (day + timedelta(days=sign * count)).isoformat()
    if unit == "week":
        return (day + timedelta(weeks=sign * count)).isoformat()
    if unit == "month":
        return _shift_month(day, sign * count)
    return f"{_year(day.year + sign * count):04d}"


def resolve_relative_dates(text: str, day: date) -> str:
    """``text`` with each relative time expression followed by its absolute date."""
    folded = text.lower()
    if not any(word in folded for word in _HINTS):
        return text  # most text names no time: the one big pattern need not try every word

    def annotate(match: re.Match[str]) -> str:
        try:
            absolute = resolve_expression(match, day)
        except (OverflowError, ValueError):  # beyond year 1..9999: leave the words alone
            return match.group(0)
        return f"{match.group(0)} ({absolute})" if absolute else match.group(0)

    return _relative_re().sub(annotate, text)


_ANNOTATION_RE = re.compile(r"\((?:week of )?\d{4}-\d{2}(?:-\d{2})?\)")


def human_annotations(text: str) -> str:
    """The dates :func:`resolve_relative_dates` added, rendered by :func:`human_date`; any
    other date in ``text`` is left as written."""
    return _ANNOTATION_RE.sub(lambda m: human_date(m.group(0)), text)


@lru_cache(maxsize=4096)  # recall dates every line and header it shows, of a few days
def human_date(iso: str) -> str:
    """``2023-05-07`` as ``7 May 2023`` and ``2023-05`` as ``May 2023``; other text unchanged."""

    def day(match: re.Match[str]) -> str:
        year, month, dom = (int(g) for g in match.groups())
        if not (1 <= month <= 12 and 1 <= dom <= 31):
            return match.group(0)
        return f"{dom} {calendar.month_name[month]} {year}"

    def month(match: re.Match[str]) -> str:
        year, number = int(match[1]), int(match[2])
        return f"{calendar.month_name[number]} {year}" if 1 <= number <= 12 else match.group(0)

    return _ISO_MONTH_RE.sub(month, _ISO_DAY_RE.sub(day, iso))


_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name[:3]: n for name, n in list(_MONTHS.items())} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r",? (?P<year>\d{4})\b"
_ORDINAL = r"(?:st|nd|rd|th)?"
# A day, a month or a year a text names in full: "9 November, 2022", "the 9th of Nov 2022",
# "November 9, 2022", "2022-11-09", "November 2022", "2022-11", "in 2022".  A month or day
# without its year ("in May") is left out: which year it means is a guess.
_PERIOD_RES = (
    re.compile(rf"\b(?P<day>\d{{1,2}}){_ORDINAL} (?:of )?{_MONTH}{_YEAR}", re.I | re.ASCII),
    re.compile(rf"\b{_MONTH} (?P<day>\d{{1,2}}){_ORDINAL}{_YEAR}", re.I | re.ASCII),
    re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})(?:-(?P<day>\d{2}))?\b(?!-\d)", re.ASCII),
    re.compile(rf"\b{_MONTH}{_YEAR}", re.I | re.ASCII),
    re.compile(r"\b(?:in|during|throughout) (?P<year>\d{4})\b(?! ?[-:/.]\d)", re.I | re.ASCII),
)


def named_period(text: str) -> tuple[date, date] | None:
    """The first calendar day, month or year ``text`` names in full (see ``_PERIOD_RES``), as
    its first day and the day after its last; None when it names none (or no real date)."""
    for pattern in _PERIOD_RES:
        match = pattern.search(text)
        if match is None:
            continue
        found = match.groupdict()
        month = found.get("month")
        try:
            year = _year(int(match["year"]))
            if month is None:
                return date(year, 1, 1), date(year + 1, 1, 1) if year < 9999 else date.max
            number = int(month) if month.isdigit() else _MONTHS[month.lower()]
            if found.get("day") is not None:
                day = date(year, number, int(found["day"]))
                return day, day + timedelta(days=1)
            first = date(year, number, 1)
            return first, date.fromisoformat(_shift_month(first, 1) + "-01")
        except (OverflowError, ValueError):
            continue  # "31 February 2022", month 13: not a date, maybe a later pattern's
    return None
