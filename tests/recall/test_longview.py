"""Which questions ask for the long view (a timeline), and what their topic is."""

from __future__ import annotations

import pytest

from memoryclaw.recall.longview import long_view

_ASKS = [
    ("in-what-order", "In what order did I visit the three dentists?", "order"),
    ("list-in-order", "Can you list the topics I brought up with Anna in order?", "order"),
    ("the-order-in-which", "Walk me through the order in which we fixed the build", "order"),
    ("chronological", "Show my job applications in chronological order", "order"),
    ("came-first", "Which came first, the move or the new job?", "order"),
    ("timeline-of", "Give me a timeline of the kitchen renovation", "order"),
    ("how-did-evolve", "How did my running routine evolve?", "progression"),
    ("how-has-changed", "How has my opinion of the new manager changed?", "progression"),
    ("over-time", "What have I decided about the budget over time?", "progression"),
    ("history-of", "Tell me the history of our pricing discussions", "progression"),
    ("summary-of-mine", "Can you give me a summary of what I learned about investing?", "summary"),
    ("summarize-so-far", "Summarize the project discussions so far", "summary"),
    ("recap", "Quick recap of my talks with the landlord", "summary"),
    ("overview", "Give me an overview of our trip planning", "summary"),
    ("everything-about", "Tell me everything about John", "everything"),
    ("everything-you-know", "What is everything you know about the Falcon project?", "everything"),
    ("all-about", "Tell me all about my visa application", "everything"),
]

_DETAIL = [
    ("in-order-to", "I need the invoice in order to pay the rent"),
    ("in-order-of", "Sort my tasks in order of priority"),
    ("how-do-i-change", "How do I change my password?"),
    ("how-did-i-change", "How did I change the router settings?"),
    ("over-time-plan", "How do I save money over time?"),
    ("summarize-this", "Summarize this article for me"),
    ("summarize-pasted", "Write a summary of my notes below"),
    ("summary-at-hand", "Give me a summary of my draft: the product launches in May"),
    ("summary-of-no-one", "Write a summary of the French Revolution"),
    ("yes-no-everything", "Is everything about the trip ready?"),
    ("plain-fact", "What is John's email address?"),
    ("plain-when", "When did I last see the dentist?"),
    ("trivial", "ok thanks"),
]


@pytest.mark.parametrize(("question", "kind"), [c[1:] for c in _ASKS], ids=[c[0] for c in _ASKS])
def test_questions_about_a_stretch_of_history_ask_for_the_long_view(
    question: str, kind: str
) -> None:
    view = long_view(question)
    assert view is not None and view.kind == kind
    assert view.query == question and view.reason


@pytest.mark.parametrize("question", [c[1] for c in _DETAIL], ids=[c[0] for c in _DETAIL])
def test_questions_about_a_moment_or_a_text_at_hand_do_not(question: str) -> None:
    assert long_view(question) is None


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        (
            "Can you list the order in which I brought up different garden topics "
            "throughout our conversations in order (mention 5 items)?",
            "you I garden ?",
        ),
        ("Give me a comprehensive summary of my garden", "me a of my garden"),
        (
            "How has my garden developed over time based on our conversations?",
            "How has my garden ?",
        ),
        ("Summarize how my garden changed over the past few weeks", "how my garden changed"),
        # nothing of its own is left: the question is its own topic
        ("How has my progress been so far?", "How has my progress been so far?"),
    ],
    ids=[
        "framing-dropped",
        "summary-words-dropped",
        "based-on-chats",
        "past-weeks",
        "nothing-left",
    ],
)
def test_the_topic_is_the_question_without_its_framing(question: str, topic: str) -> None:
    view = long_view(question)
    assert view is not None and view.topic == topic
