"""Fact extraction (SPEC section 5), as the episodes of :func:`summarize_log` keep it: what a
person's turn states, whom a tool call writes to, and what states nothing."""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw.consolidate.extraction import facts_from_turn
from memoryclaw.consolidate.summarize import summarize_log
from memoryclaw.vault.logformat import RawLog, Turn
from memoryclaw.vault.words import sentences
from tests.consolidate.test_summarize import SECRET, UTC, make_log


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Sarah's new email is sarah.k@newco.com",
            ("Sarah", "email", "sarah.k@newco.com", "high"),
            id="email-possessive",
        ),
        pytest.param(
            "Email John at john@example.com",
            ("John", "email", "john@example.com", "high"),
            id="email-name",
        ),
        pytest.param(
            "my email is me@example.org",
            ("User", "email", "me@example.org", "high"),
            id="email-mine",
        ),
        pytest.param(
            "send it to bob@corp.com", ("Bob", "email", "bob@corp.com", "low"), id="email-unnamed"
        ),
        pytest.param(
            "call me on +44 7700 900123",
            ("User", "phone", "+44 7700 900123", "high"),
            id="phone-intl",
        ),
        pytest.param(
            "my phone number is 020 7946 0958",
            ("User", "phone", "020 7946 0958", "medium"),
            id="phone-mine",
        ),
        pytest.param(
            "The projectX deadline is April 10.",
            ("projectX", "deadline", "2025-04-10", "medium"),
            id="deadline-month-day",
        ),
        pytest.param(
            "Report due 2025-04-10", ("User", "deadline", "2025-04-10", "high"), id="deadline-iso"
        ),
        pytest.param(
            "The deadline is February 30",
            ("User", "deadline", "February 30", "low"),
            id="deadline-bad-date",
        ),
        pytest.param(
            "deadline is next Friday",
            ("User", "deadline", "2025-04-18", "medium"),  # said on Tuesday 2025-04-08
            id="deadline-vague",
        ),
        pytest.param(
            "Docs are at https://example.com/docs.",
            ("User", "url", "https://example.com/docs", "high"),
            id="url",
        ),
        pytest.param(
            "Please run `make test` now",
            ("User", "command", "make test", "medium"),
            id="command-backticks",
        ),
        pytest.param(
            "run npm install --save-dev x",
            ("User", "command", "npm install --save-dev x", "low"),
            id="command-run",
        ),
        pytest.param(
            "Notes live in ~/notes/projectx.md",
            ("User", "path", "~/notes/projectx.md", "medium"),
            id="path",
        ),
        pytest.param(
            "My favorite color is blue.",
            ("User", "favorite color", "blue", "medium"),
            id="my-x-is-y",
        ),
        pytest.param(
            "Emma's birthday is March 3rd", ("Emma", "birthday", "March 3", "medium"), id="birthday"
        ),
        pytest.param(
            "my birthday is 12 March 1990",
            ("User", "birthday", "1990-03-12", "medium"),
            id="birthday-mine",
        ),
        pytest.param(
            "I prefer window seats", ("User", "prefers", "window seats", "medium"), id="prefers"
        ),
        pytest.param("Honestly, I love hiking", ("User", "likes", "hiking", "medium"), id="likes"),
        pytest.param(
            "I don't like loud restaurants",
            ("User", "dislikes", "loud restaurants", "medium"),
            id="dont-like",
        ),
        pytest.param("I hate mornings", ("User", "dislikes", "mornings", "medium"), id="hates"),
    ],
)
def test_facts_stated_by_the_user(text: str, expected: tuple[str, str, str, str]) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    assert [(f.entity, f.field, f.value, f.confidence) for f in episode.facts] == [expected]
    assert episode.facts[0].turn == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my daughter Mia is 6", {("User", "daughter", "Mia"), ("Mia", "age", "6")}),
        ("My dog Rex is 3 years old", {("User", "pet", "Rex (dog)"), ("Rex", "age", "3")}),
        ("my brother Tom is really tall", {("User", "brother", "Tom")}),
    ],
    ids=["kin-age", "pet-age", "kin-no-age"],
)
def test_a_relative_named_in_my_x_is_y_gets_their_age_not_a_field_of_their_name(
    text: str, expected: set[tuple[str, str, str]]
) -> None:
    """Not "User (daughter mia): 6": whom the kin rule names, and how old they are."""
    (episode,) = summarize_log(make_log(("user", text)))
    assert {(f.entity, f.field, f.value) for f in episode.facts} == expected


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Hi! I'm Priya, and I'm new here", "Priya"),
        ("Hello, I am Sam Lee.", "Sam Lee"),
        ("Please call me Bob.", "Bob"),
        ("my name's Ana Lima", "Ana Lima"),
        ("I'm British.", None),
        ("Hey there, I'm tired", None),
        ("Hi, I'm Sorry to bother you", None),
        ("Call me Monday, then", None),
        ("Call me back tomorrow", None),
    ],
    ids=[
        "greeting",
        "hello-full-name",
        "call-me",
        "names",
        "no-greeting",
        "not-a-name",
        "capitalised-word",
        "calendar",
        "call-back",
    ],
)
def test_the_speaker_s_name_is_a_fact_when_they_give_it(text: str, name: str | None) -> None:
    """Whom "my" stands for, so "what's my name?" is answered; not every "I'm X"."""
    (episode,) = summarize_log(make_log(("user", text)))
    names = [f.value for f in episode.facts if f.entity == "User" and f.field == "name"]
    assert names == ([name] if name else [])


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("I moved to Porto last week!", "Porto"),
        ("We moved to New York last month.", "New York"),
        ("I moved to Rio de Janeiro in May.", "Rio de Janeiro"),
        ("I live in Porto de Galinhas.", "Porto de Galinhas"),
    ],
    ids=["last-week", "two-words", "de", "de-then-a-name"],
)
def test_a_place_ends_with_its_last_name_word(text: str, place: str) -> None:
    """Not "Porto la": "la" is part of a place name only as a word of its own."""
    (episode,) = summarize_log(make_log(("user", text)))
    assert [f.value for f in episode.facts if f.field in {"moved to", "lives in"}] == [place]


@pytest.mark.parametrize(
    "text",
    [
        "Never call me Bob.",
        "Don't call me Sam, it's Samantha",
        "She said call me Tom",
        'My boss said "hi, I\'m Bob" to everyone',
        "Hi, I'm Alice's mom",
    ],
    ids=["never", "dont", "reported", "quoted", "possessive"],
)
def test_a_name_the_speaker_does_not_give_as_theirs_is_no_fact(text: str) -> None:
    """The cue opens a clause of the speaker's own: not after a negation, another person's
    words or a quote, and a possessive names someone else."""
    (episode,) = summarize_log(make_log(("user", text)))
    assert [f.value for f in episode.facts if f.field == "name"] == []


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("my hobby is painting landscapes", ("hobby", "painting landscapes")),
        ("my job is head of marketing", ("job", "head of marketing")),
        ("my favourite food is fishing pie", ("favourite food", "fishing pie")),
    ],
    ids=["gerund-object", "noun-of", "ing-noun"],
)
def test_my_x_is_y_keeps_a_value_that_names_something(text: str, fact: tuple[str, str]) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    assert [(f.field, f.value) for f in episode.facts] == [fact]


@pytest.mark.parametrize(
    ("text", "events"),
    [
        ("I went to a pottery class yesterday.", ["went to a pottery class"]),
        ("I gave a talk yesterday.", ["gave a talk"]),
        ("I met Sarah yesterday.", ["met Sarah"]),
        ("We met up yesterday!", []),
        ("I had a great time yesterday.", []),
        ("I had a blast yesterday.", []),
        ("I painted it after I visited the beach yesterday.", []),
    ],
    ids=["place", "thing", "person", "met-up", "great-time", "blast", "points-back"],
)
def test_a_dated_event_says_what_happened(text: str, events: list[str]) -> None:
    """An event is kept for what happened, not for how it went or for a word pointing back
    to a sentence before."""
    (episode,) = summarize_log(make_log(("user", text)))
    found = [f.value.rpartition(" (")[0] for f in episode.facts if f.field == "event"]
    assert found == events


def test_a_date_without_a_year_is_the_next_one() -> None:
    december = Turn("user", datetime(2025, 12, 20, 9, 0, tzinfo=UTC), "the deadline is 3rd of Jan")
    (episode,) = summarize_log(RawLog("logs/x.md", {}, (december,)))
    assert [(f.field, f.value, f.confidence) for f in episode.facts] == [
        ("deadline", "2026-01-03", "medium")
    ]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Is your email x@y.com?", id="question"),
        pytest.param("I love it", id="pronoun"),
        pytest.param("I'd love to help", id="wish"),
        pytest.param("I love to paint", id="infinitive"),
        pytest.param("Showing diversity in my art is important to me", id="my-not-subject"),
        pytest.param("the things I love make me happy", id="relative-clause"),
        pytest.param("my sister is a doctor", id="my-relation"),
        pytest.param(f"My password is hunter2xyz and my api key is {SECRET}", id="secrets"),
        pytest.param("we were late due to the rain", id="due-to"),
        pytest.param("I run for office", id="run-not-a-command"),
        pytest.param("It works 24/7, and/or on weekends", id="slashes-not-paths"),
        pytest.param("Give me 3-4 options between 1200 and 1500", id="numbers-not-phones"),
        pytest.param("I shot the portraits at f/2.8 and 1/250.", id="aperture-not-a-path"),
        pytest.param("I'll take the stick since I prefer the shot power it offers.", id="back-ref"),
        pytest.param("I love their wood-fired pizza", id="back-ref-their"),
        pytest.param("The monitor I bought on December 2 is great.", id="bought-relative"),
        pytest.param("I bought from Home Depot on May 9.", id="bought-no-thing"),
        pytest.param("I just purchased a $250 glucose monitor.", id="bought-article-only"),
        pytest.param("Lately my writing is consuming me.", id="how-it-goes"),
        pytest.param("All my hard work is paying off!", id="how-it-goes-particle"),
        pytest.param("My cork board is full of inspiring quotes.", id="describing-of"),
        pytest.param("I bought it yesterday.", id="bought-back-ref"),
        pytest.param("I signed up for them.", id="hobby-back-ref"),
        pytest.param("I'm 20, 30 minutes out.", id="two-guesses-not-an-age"),
        pytest.param("We work as a team.", id="as-a-team"),
        pytest.param("I work as a team on this.", id="as-a-team-on"),
        pytest.param("I'm working as fast as I can.", id="as-fast-as"),
        pytest.param("My sister is 12.", id="an-unnamed-relative-s-age"),
    ],
)
def test_no_fact_from_what_is_not_stated(text: str) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    assert episode.facts == ()


def test_facts_belong_to_a_named_speaker_and_never_to_the_assistant() -> None:
    log = make_log(
        ("user", "I love pottery, and my dog is Oscar.", "Caroline", None),
        ("assistant", "My email is bot@example.com and I love chess."),
        ("tool_result", '{"email": "ann@example.com", "to": "ann@example.com"}', None, "lookup"),
    )
    (episode,) = summarize_log(log)
    assert {(f.entity, f.field, f.value, f.turn) for f in episode.facts} == {
        # said to the agent: one preference in her words, not also "likes: pottery"
        ("Caroline", "preference", "I love pottery", 1),
        ("Caroline", "dog", "Oscar", 1),
    }


@pytest.mark.parametrize(
    ("request_text", "args", "expected"),
    [
        pytest.param(
            "Email Sarah the notes",
            {"to": "sarah@example.com"},
            {("Sarah", "high")},
            id="name-matches",
        ),
        pytest.param(
            "Send the notes to my boss Ana",
            {"to": "a.k@example.com"},
            {("Ana", "medium")},
            id="one-name",
        ),
        pytest.param("Send it to Ana and Ben", {"to": ["x@example.com"]}, set(), id="ambiguous"),
        pytest.param(
            "Add Ben in cc", {"cc": ["ben@example.com"], "to": "nope"}, {("Ben", "high")}, id="cc"
        ),
    ],
)
def test_tool_call_recipients_become_contacts(
    request_text: str, args: dict[str, object], expected: set[tuple[str, str]]
) -> None:
    log = make_log(("user", request_text), ("tool_call", json.dumps(args), None, "send_email"))
    (episode,) = summarize_log(log)
    emails = [f for f in episode.facts if f.field == "email"]
    assert {(f.entity, f.confidence) for f in emails} == expected
    assert all(f.turn == 2 for f in emails)


def _facts_of(*turns: tuple[str, str]) -> set[tuple[str, str, str]]:
    (episode,) = summarize_log(make_log(*turns))
    return {(f.entity, f.field, f.value) for f in episode.facts}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        pytest.param("Dr. Okafor's number is +44 20 7946 0011.", "Dr. Okafor", id="dr"),
        pytest.param("Call Mr. Smith on +44 20 7946 0012.", "Mr. Smith", id="mr"),
        pytest.param("Mrs. Patel's phone is +44 20 7946 0013.", "Mrs. Patel", id="mrs"),
        pytest.param("Reach Ms. Lee at +44 20 7946 0014.", "Ms. Lee", id="ms"),
        pytest.param("Prof. Ng can be reached at +44 20 7946 0015.", "Prof. Ng", id="prof"),
    ],
)
def test_a_title_neither_ends_the_sentence_nor_stands_for_the_person(text: str, name: str) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    assert [(f.entity, f.field) for f in episode.facts] == [(name, "phone")]
    assert name in episode.entities
    titles = {"Dr", "Mr", "Mrs", "Ms", "Prof", "Dr.", "Mr.", "Mrs.", "Ms.", "Prof."}
    assert not titles & set(episode.entities)
    assert not {t.lower().rstrip(".") for t in titles} & set(episode.tags)


def test_st_and_initials_do_not_cut_a_sentence() -> None:
    text = "We met at St. Mary's with John F. Kennedy's nephew on Baker St. near the station."
    assert sentences(text) == [text]
    assert sentences("I saw Dr. Okafor. Then I left.") == ["I saw Dr. Okafor.", "Then I left."]
    (episode,) = summarize_log(make_log(("user", f"{text} Mr. and Mrs. Smith came too.")))
    assert episode.entities == ("St. Mary", "John F. Kennedy", "Baker St", "Mrs. Smith")


@given(
    title=st.sampled_from(["Dr", "Mr", "Mrs", "Ms", "Prof", "St"]),
    name=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True),
    rest=st.from_regex(r"[a-z]{2,8}( [a-z]{2,8}){0,4}", fullmatch=True),
)
def test_no_title_ends_a_sentence(title: str, name: str, rest: str) -> None:
    text = f"I saw {title}. {name} {rest}. Then {rest}."
    assert sentences(text) == [f"I saw {title}. {name} {rest}.", f"Then {rest}."]


@pytest.mark.parametrize(
    ("text", "owner"),
    [
        pytest.param(
            "The plumber (Mario, +44 20 7946 0958) charged 120 EUR.", "Mario", id="name-in-brackets"
        ),
        pytest.param(
            "I paid the plumber 120 EUR, his number is +44 20 7946 0958.",
            "Plumber",
            id="role-before-currency",
        ),
        pytest.param(
            "Mario the plumber charged 80 GBP, call him on +44 20 7946 0958.",
            "Mario",
            id="name-beside-role",
        ),
        pytest.param(
            "The electrician came at 9 AM and took 200 USD, phone +44 20 7946 0958.",
            "Electrician",
            id="time-and-currency",
        ),
        pytest.param("My plumber's number is +44 20 7946 0958.", "Plumber", id="my-role"),
        pytest.param("Our GP, +44 20 7946 0958, opens at 8.", "GP", id="acronym-role"),
    ],
)
def test_a_phone_belongs_to_the_person_or_role_never_to_a_unit(text: str, owner: str) -> None:
    (episode,) = summarize_log(make_log(("user", text)))
    phones = [(f.entity, f.value) for f in episode.facts if f.field == "phone"]
    assert phones == [(owner, "+44 20 7946 0958")]
    assert not {"EUR", "GBP", "USD", "AM"} & set(episode.entities)
    assert not {"eur", "gbp", "usd"} & set(episode.tags)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I have a dentist appointment on 14 March at 9:30.",
            ("Dentist", "appointment", "2026-03-14 09:30"),  # said 2025-04-08: next March
            id="kind-day-month-time",
        ),
        pytest.param(
            "My appointment with Dr. Okafor is next Tuesday at 3pm.",
            ("Dr. Okafor", "appointment", "2025-04-15 15:00"),
            id="with-title-relative",
        ),
        pytest.param(
            "I've booked an appointment with my accountant on 2025-05-02 at 10:15 am.",
            ("Accountant", "appointment", "2025-05-02 10:15"),
            id="with-role-iso",
        ),
        pytest.param(
            "My hair appointment is on April 20.",
            ("User", "hair appointment", "2025-04-20"),
            id="own-no-time",
        ),
        pytest.param(
            "Tomorrow at 2:45 PM I have an appointment with Anna Berg",
            ("Anna Berg", "appointment", "2025-04-09 14:45"),
            id="date-before",
        ),
    ],
)
def test_a_dated_appointment_is_a_fact(text: str, expected: tuple[str, str, str]) -> None:
    assert expected in _facts_of(("user", text))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Can you book me a dentist appointment on 14 March?", id="question"),
        pytest.param("Please book a dentist appointment on 14 March.", id="request"),
        pytest.param("I have an appointment soon.", id="undated"),
        pytest.param("Great, your appointment with Dr. Okafor is on 14 March.", id="not-mine"),
    ],
)
def test_no_appointment_from_what_is_not_stated(text: str) -> None:
    assert not {f for f in _facts_of(("user", text)) if "appointment" in f[1]}


@given(
    day=st.integers(1, 28),
    month=st.integers(1, 12),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
)
def test_an_appointment_keeps_its_day_and_time(
    day: int, month: int, hour: int, minute: int
) -> None:
    name = datetime(2000, month, 1).strftime("%B")
    text = f"I have a dentist appointment on {day} {name} 2027 at {hour}:{minute:02d}."
    assert _facts_of(("user", text)) == {
        ("Dentist", "appointment", f"2027-{month:02d}-{day:02d} {hour:02d}:{minute:02d}")
    }


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("My monthly rent is $1,450.", "monthly rent", "$1,450"),
        ("I live in St. Louis.", "lives in", "St. Louis"),
        ("I just bought a Canon EF 85mm f/1.8 lens.", "bought", "a Canon EF 85mm"),
    ],
    ids=["thousands", "abbreviated-place", "thing-before-a-cut-word"],
)
def test_a_value_is_not_cut_at_its_own_punctuation(text: str, field: str, value: str) -> None:
    found = {(f.field, f.value) for f in facts_from_turn(1, text, None, date(2026, 1, 1))}
    assert (field, value) in found, found


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('My friend said "I\'m 45 and I work as a pilot."', id="quoted"),
        pytest.param("She told me, “I live in Paris and my name is Claire.”", id="curly"),
        pytest.param("He said: “I'm 45. I work as a pilot.”", id="two-sentences"),
        pytest.param("He told me: I work as a pilot", id="after-a-colon"),
        pytest.param("Mum texted ‘I’m moving to Leeds, call me Ma’", id="single-curly"),
    ],
)
def test_what_somebody_else_is_quoted_saying_is_not_the_speaker_s(text: str) -> None:
    """A quote's "I" and "my" are the quoted person's: filed under the speaker's name, they
    would be facts about the wrong person."""
    assert list(facts_from_turn(1, text, None, date(2025, 5, 1))) == []


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ('He said "hi" and I work as a nurse.', "job", "nurse"),
        ('My nickname is "Bear".', "nickname", "Bear"),
        ("I work as a team lead at Acme.", "job", "team lead"),
        ("I'm 34, and I live in Leeds.", "age", "34"),
    ],
)
def test_what_the_speaker_says_beside_a_quote_is_still_theirs(
    text: str, field: str, value: str
) -> None:
    said = {(f.field, f.value) for f in facts_from_turn(1, text, None, date(2025, 5, 1))}
    assert (field, value) in said
