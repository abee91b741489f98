"""Relative time made absolute against a turn's day: every expression form, and the edges of
weeks, months and years."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw.vault.dates import (
    human_annotations,
    human_date,
    named_period,
    resolve_relative_dates,
)

MONDAY = date(2023, 5, 8)  # a Monday: weeks run Monday to Sunday


@pytest.mark.parametrize(
    ("text", "resolved"),
    [
        pytest.param("I went yesterday", "I went yesterday (2023-05-07)", id="yesterday"),
        pytest.param("today is fine", "today (2023-05-08) is fine", id="today"),
        pytest.param("see you tonight", "see you tonight (2023-05-08)", id="tonight"),
        pytest.param("Tomorrow we fly", "Tomorrow (2023-05-09) we fly", id="tomorrow"),
        pytest.param(
            "the day before yesterday", "the day before yesterday (2023-05-06)", id="day-before"
        ),
        pytest.param("last Friday I ran", "last Friday (2023-05-05) I ran", id="last-weekday"),
        pytest.param("this Friday", "this Friday (2023-05-12)", id="this-weekday"),
        pytest.param("next Friday", "next Friday (2023-05-19)", id="next-weekday"),
        pytest.param("this past Sunday", "this past Sunday (2023-05-07)", id="this-past"),
        pytest.param("this coming Monday", "this coming Monday (2023-05-15)", id="this-coming"),
        pytest.param("this weekend", "this weekend (2023-05-13)", id="this-weekend"),
        pytest.param("last weekend", "last weekend (2023-05-06)", id="last-weekend"),
        pytest.param("next weekend", "next weekend (2023-05-20)", id="next-weekend"),
        pytest.param("last week", "last week (week of 2023-05-01)", id="last-week"),
        pytest.param("next week", "next week (week of 2023-05-15)", id="next-week"),
        pytest.param("next month", "next month (2023-06)", id="next-month"),
        pytest.param("last month", "last month (2023-04)", id="last-month"),
        pytest.param("last year", "last year (2022)", id="last-year"),
        pytest.param("this year", "this year (2023)", id="this-year"),
        pytest.param("two weeks ago", "two weeks ago (2023-04-24)", id="weeks-ago"),
        pytest.param("3 days ago", "3 days ago (2023-05-05)", id="days-ago"),
        pytest.param("a couple of months ago", "a couple of months ago (2023-03)", id="couple"),
        pytest.param("10 years ago", "10 years ago (2013)", id="years-ago"),
        pytest.param("in 3 days", "in 3 days (2023-05-11)", id="in-days"),
        pytest.param("in a month", "in a month (2023-06)", id="in-a-month"),
    ],
)
def test_each_expression_form(text: str, resolved: str) -> None:
    assert resolve_relative_dates(text, MONDAY) == resolved


@pytest.mark.parametrize(
    ("text", "day", "resolved"),
    [
        pytest.param("last week", date(2023, 1, 1), "(week of 2022-12-19)", id="week-over-year"),
        pytest.param("this weekend", date(2023, 1, 1), "(2022-12-31)", id="sunday-weekend"),
        pytest.param("last Sunday", date(2023, 5, 7), "(2023-04-30)", id="same-weekday"),
        pytest.param("next month", date(2023, 12, 31), "(2024-01)", id="month-over-year"),
        pytest.param("last month", date(2023, 1, 15), "(2022-12)", id="month-back-year"),
        pytest.param("yesterday", date(2024, 3, 1), "(2024-02-29)", id="leap-day"),
        pytest.param("tomorrow", date(2023, 12, 31), "(2024-01-01)", id="new-year"),
        pytest.param("last year", date(2023, 1, 1), "(2022)", id="year-edge"),
        pytest.param("a month ago", date(2023, 3, 31), "(2023-02)", id="short-month"),
    ],
)
def test_week_month_and_year_edges(text: str, day: date, resolved: str) -> None:
    assert resolve_relative_dates(text, day) == f"{text} {resolved}"


def test_dates_beyond_the_calendar_are_left_as_words() -> None:
    assert resolve_relative_dates("yesterday", date(1, 1, 1)) == "yesterday"
    assert resolve_relative_dates("in 20 years", date(9990, 1, 1)) == "in 20 years"


def test_words_that_only_look_relative_are_left_alone() -> None:
    text = "Lastly, the weekday schedule and yesterdays news"
    assert resolve_relative_dates(text, MONDAY) == text


@pytest.mark.parametrize(
    "text",
    ["See you Tonİght", "laſt ſaturday", "laſt week", "in two daKs", "ſix dayſ ago"],
    ids=["dotted-capital-i", "long-s-weekday", "long-s-week", "kelvin-sign", "long-s-count"],
)
def test_letters_that_only_fold_to_ascii_are_left_alone(text: str) -> None:
    assert resolve_relative_dates(text, MONDAY) == text


@given(text=st.text(alphabet=st.sampled_from("tonightlasweekdyfrİıſK 0123456789"), max_size=40))
def test_any_text_resolves_without_error(text: str) -> None:
    assert resolve_relative_dates(text, MONDAY).startswith(text[:1])


_PIECES = st.sampled_from(
    [
        "yesterday",
        "last week",
        "next Friday",
        "two weeks ago",
        "this weekend",
        "in 3 days",
        "hello",
        "(2023-01-01)",
        " ",
        ".",
        "Last Year",
        "tomorrow",
    ]
)


@given(pieces=st.lists(_PIECES, max_size=12), offset=st.integers(0, 3_000_000))
def test_resolving_twice_changes_nothing(pieces: list[str], offset: int) -> None:
    text = " ".join(pieces)
    day = date.fromordinal(offset + 1)
    once = resolve_relative_dates(text, day)
    assert resolve_relative_dates(once, day) == once
    assert once.replace(" (", "(").count("(") >= text.count("(")


def test_dates_for_a_reader() -> None:
    assert human_date("2023-05-07") == "7 May 2023"
    assert human_date("2023-04") == "April 2023"
    assert human_date("2023-13-01 and 2023-00") == "2023-13-01 and 2023-00"
    assert human_annotations("yesterday (2023-05-07) on 2023-05-07") == (
        "yesterday (7 May 2023) on 2023-05-07"
    )
    assert human_annotations("last week (week of 2023-05-01)") == "last week (week of 1 May 2023)"


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("on 9 November, 2022", (date(2022, 11, 9), date(2022, 11, 10))),
        ("the 3rd of June 2023", (date(2023, 6, 3), date(2023, 6, 4))),
        ("Nov. 9th, 2022", (date(2022, 11, 9), date(2022, 11, 10))),
        ("on 2022-12-31", (date(2022, 12, 31), date(2023, 1, 1))),
        ("in December 2023", (date(2023, 12, 1), date(2024, 1, 1))),
        ("during 2022-02", (date(2022, 2, 1), date(2022, 3, 1))),
        ("recently in 2024", (date(2024, 1, 1), date(2025, 1, 1))),
        ("31 February 2022", (date(2022, 2, 1), date(2022, 3, 1))),
        ("in May", None),
        ("on the 9th", None),
        ("room 2024 and 2023-13", None),
        ("in 2022-23", None),
    ],
    ids=[
        "day-month-year",
        "ordinal-of",
        "month-day-year",
        "iso-day",
        "month-year",
        "iso-month",
        "in-year",
        "no-such-day-is-its-month",
        "month-without-year",
        "day-alone",
        "numbers-not-dates",
        "year-range",
    ],
)
def test_named_period(text: str, period: tuple[date, date] | None) -> None:
    assert named_period(text) == period
