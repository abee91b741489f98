"""Who the speaker says they are: age, occupation, home and income, also inside a request."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw.consolidate.extraction import facts_from_turn
from memoryclaw.vault.profile import profile_facts


@pytest.mark.parametrize(
    ("sentence", "facts"),
    [
        ("I'm 60 years old and I don't know where to start", [("age", "60")]),
        ("I am 34, and I work nights.", [("age", "34")]),
        ("I'm 35 now and still running.", [("age", "35")]),
        ("I just turned 40!", [("age", "40")]),
        ("how can someone like me, who's 23, start investing", [("age", "23")]),
        ("what should people my age, 55, watch out for", [("age", "55")]),
        (
            "a nutrition plan for someone like me, a 69-year-old science writer, please",
            [("age", "69"), ("job", "science writer")],
        ),
        (
            "what can I do for my community, considering I'm a retail buyer?",
            [("job", "retail buyer")],
        ),
        ("I'm a nurse.", [("job", "nurse")]),
        ("I'm living in Leeds now.", [("lives in", "Leeds")]),
        (
            "considering I'm living in New Gary, Saint Helena, and I've got a decent income of"
            " $52,000 annually?",
            [("lives in", "New Gary, Saint Helena"), ("income", "$52,000 annually")],
        ),
        (
            "what's the basketball scene like in Combsland, where I live",
            [("lives in", "Combsland")],
        ),
        ("my science writing job, earning $75,000 a year", [("income", "$75,000 a year")]),
        ("I make $20 an hour at the cafe.", [("income", "$20 an hour")]),
        ("My salary is £41,000.", [("income", "£41,000")]),
        ("My monthly income is $4,000.", [("income", "$4,000 a month")]),
        ("I'm a physician assistant.", [("job", "physician assistant")]),
        ("I'm living in St. Louis now.", [("lives in", "St. Louis")]),
        ("I'm living in Washington, D.C., and I love it.", [("lives in", "Washington, D.C.")]),
        (
            "how do I replace my current side income of $3,500 monthly",
            [("income", "$3,500 monthly")],
        ),
    ],
    ids=[
        "years-old",
        "am-34",
        "am-35-now",
        "turned",
        "like-me-who-is",
        "my-age",
        "aged-occupation",
        "considering-a-job",
        "i-am-a-nurse",
        "living-in",
        "place-and-income-in-a-question",
        "where-i-live",
        "earning",
        "an-hour",
        "my-salary",
        "monthly-income",
        "second-noun",
        "st-dot",
        "abbreviation",
        "my-side-income",
    ],
)
def test_what_the_speaker_says_of_themselves(sentence: str, facts: list[tuple[str, str]]) -> None:
    assert [(field, value) for _, field, value, _ in profile_facts(sentence, "User")] == facts


@pytest.mark.parametrize(
    "sentence",
    [
        "Am I too old at 45 to learn the piano?",
        "If I'm 60 years old, can I still retire early?",
        "When I'm a nurse, I'll work nights.",
        'She said "I\'m 34 and a nurse".',
        "My mum is a nurse and she is 61.",
        "I'm 100% sure about it.",
        "I'm 5 minutes away.",
        "I'm a big believer in morning routines.",
        "I'm a fast learner.",
        "Do I live in Leeds or in York?",
        "The fund is earning $500 a year.",
        "Is $50,000 a good income?",
        "Based on the average salary of $35,000/year, is that a good start?",
        "I'm a teacher's aide.",
        "Explain it like I'm 5.",
        "Talk to me as though I'm a programmer.",
        "Before I'm 40, I want to see Japan.",
        "My mum thinks I'm a lawyer.",
        "I'm a terrible cook.",
        "I'm an amateur photographer.",
        "I'm a better writer than my brother.",
        "I just turned 30 pages of my book.",
        "for someone like me, who's 90% sure",
        "I make $12 coffee at home.",
        "I earn $10 per referral.",
        "My wife and I earn $120,000 combined.",
    ],
    ids=[
        "asks-about-age",
        "hypothetical",
        "when-clause",
        "quoted",
        "someone-else",
        "percent",
        "minutes",
        "believer",
        "learner",
        "asks-where",
        "not-the-speaker-earning",
        "asks-about-income",
        "a salary heard of",
        "possessive-occupation",
        "like-i-am-5",
        "as-though",
        "before-a-birthday",
        "what-someone-else-thinks",
        "a-trait",
        "a-pastime",
        "a-comparison",
        "turned-pages",
        "percent-after-who-is",
        "a-price",
        "per-referral",
        "a-number-cut-short",
    ],
)
def test_what_states_nothing_about_the_speaker(sentence: str) -> None:
    assert list(profile_facts(sentence, "User")) == []


def test_a_turn_s_request_files_who_its_speaker_is() -> None:
    """A question states nothing else, but who its speaker is, it does."""
    text = (
        "I'm kinda curious, what's a good plan for someone like me, a 69-year-old science writer?"
    )
    found = {(f.entity, f.field, f.value) for f in facts_from_turn(3, text, None, date(2024, 3, 3))}
    assert found == {("User", "age", "69"), ("User", "job", "science writer")}
    named = {(f.entity, f.field) for f in facts_from_turn(3, text, "Mia", date(2024, 3, 3))}
    assert named == {("Mia", "age"), ("Mia", "job")}


@given(st.text(max_size=300))
def test_property_every_value_is_the_speaker_s_own_words(text: str) -> None:
    """Whatever is said, each value comes from the sentence itself, and an age is a
    plausible one."""
    for entity, field, value, confidence in profile_facts(text, "User"):
        assert entity == "User" and confidence == "medium"
        assert field in {"age", "job", "lives in", "income"}
        assert value.lower() in " ".join(text.lower().split()) or value in text
        if field == "age":
            assert 0 < int(value) <= 120


@pytest.mark.parametrize(
    ("text", "job"),
    [
        ("Hi! I'm Priya. I'm 34, I work as a nurse and I'm living in Leeds.", "nurse"),
        ("I work as a nurse on night shifts.", "nurse on night shifts"),
        ("I work as a software engineer at a bank.", "software engineer"),
        ("I work as a teacher but I'd rather paint.", "teacher"),
    ],
    ids=["and", "on", "at", "but"],
)
def test_an_occupation_ends_where_its_clause_does(text: str, job: str) -> None:
    found = {f.value for f in facts_from_turn(1, text, None, date(2026, 1, 1)) if f.field == "job"}
    assert found == {job}


def test_the_kinds_a_turn_states_of_its_speaker() -> None:
    from memoryclaw.vault.profile import profile_kinds

    said = "Hi! I'm Priya. I'm 34, I work as a nurse and I'm living in Leeds."
    assert profile_kinds(said) == ["age", "job", "address"]
    assert profile_kinds("What's a budget for someone like me, earning £41,000 a year?") == [
        "income"
    ]
    assert profile_kinds("Am I too old to start running at 45?") == []
