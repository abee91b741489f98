"""Standing instructions and preferences read from the owner's turns, filed as facts, and
taken back by a later contrary statement with their history kept."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from memoryclaw import Vault
from memoryclaw.consolidate.standing import (
    restates,
    reverses,
    standing_facts,
    standing_statements,
)
from memoryclaw.recall.standing import LABEL, topic_of
from memoryclaw.vault.facts import parse_facts

from ..conftest import NOW

INSTRUCTIONS = {
    "always": "Always include dividend yield percentages when I ask about ETFs.",
    "never": "Never use emojis in your answers.",
    "from-now-on": "From now on, reply in British English.",
    "going-forward": "Going forward, show prices in euros.",
    "whenever-i-ask": "Whenever I ask about recipes, list the calories first.",
    "make-sure": "Make sure to cite your sources.",
    "keep-short": "Please keep your answers short.",
    "lead-words": "Oh and also, please always double-check the math.",
    "stop": "Actually, stop adding yields.",
    "dont-ever": "Don't ever book red-eye flights for me.",
    "want-you-to": "I want you to always mention the fees.",
    "id-like-you-to": "I'd like you to always ask before booking anything.",
    "from-now-on-at-the-end": "Please call me Sam from now on.",
    "going-forward-at-the-end": "Use metric units going forward, please.",
    "dont-from-now-on": "Don't use emojis in replies from now on.",
    "keep-to-a-count": "Also, keep your answers to two sentences max.",
}
PREFERENCES = {
    "prefer": "I prefer ETFs over individual stocks for lower fees.",
    "rather": "I'd rather get bullet points than long paragraphs.",
    "love": "I love spicy Thai food.",
    "like": "I really like morning runs.",
    "hate": "I hate cilantro.",
    "cant-stand": "I can't stand horror films.",
    "favourite": "My favourite color is teal.",
    "favorite": "My favorite airline is KLM.",
    "person": "I'm more of a morning person.",
    "fan": "I'm a big fan of jazz.",
    "prefer-to": "I prefer to negotiate rent increases early.",
    "prioritize": "I prioritize crust texture over crumb softness.",
    "prioritizing": "I'm prioritizing quiet streets and natural light.",
    "quoted-title": 'I love "The Office" and "Parks and Recreation".',
    "allergic": "I'm allergic to peanuts.",
    "an-allergy": "I have a severe shellfish allergy.",
    "vegetarian": "I'm vegetarian.",
    "a-vegan": "I'm a vegan, so no dairy either.",
    "dont-eat": "I don't eat pork.",
    "dont-eat-anymore": "I don't eat meat anymore.",
    "an-allergy-then-why": "I have a peanut allergy, so no satay.",
    "a-diet-and-a-taste": "I'm vegetarian and I love curry.",
    "a-lead-word-before-a-dash": "Honestly - I prefer tea.",
    "after-a-quick-note": "Quick note: I'm allergic to peanuts.",
    "after-a-heads-up": "Just a heads up, I prefer email to calls.",
}
NOT_STANDING = {
    "question-about-a-preference": "Do I prefer tea or coffee?",
    "question-about-a-favourite": "What's my favourite color?",
    "if-i-always": "If I always ask about taxes, is that a problem?",
    "if-i-always-statement": "If I always pay late, the fees add up.",
    "someone-elses-preference": "My sister prefers tea.",
    "someone-elses-instruction": "My boss always wants a summary first.",
    "quoted": 'My boss said "always cc me on invoices".',
    "quoted-curly": "The sign read “never feed the ducks”.",
    "own-plan": "I'll make sure to bring the documents.",
    "wish": "I'd love to help with that.",
    "feedback": "I like that.",
    "never-mind": "Never mind.",
    "past": "I've never read that book.",
    "past-always": "Always been a fan of the sea.",
    "want-to-make-sure": "I want to make sure I'm on track.",
    "irregular-past": "Never saw this coming.",
    "remark": "Always good to hear!",
    "own-plan-going-forward": "Moving forward, I think I'll focus on interval training.",
    "own-plan-from-now-on": "I'll cook at home from now on.",
    "a-remark-from-now-on": "Things will be different from now on.",
    "advice-to-a-person": "Don't ever quit on what you love.",
    "advice-about-respondents": "Always thank the respondents to the survey.",
    "advice-about-being-answerable": "Never forget you're answerable to the team.",
    "advice-to-a-person-make-sure": "Make sure you watch other videos first to learn the craft!",
    "a-task-of-the-moment": "Just make sure to keep an eye on how these funds are used.",
    "asking-what-my-preference-is": "What's my preference for coffee again?",
    "hate-to": "I hate to say it.",
    "other-persons-preference-for": "Her preference for tea is well known.",
    "someone-elses-allergy": "My son is allergic to peanuts.",
    "asking-about-an-allergy": "Am I allergic to penicillin?",
    "if-allergic": "If I'm allergic to it, what should I take instead?",
    "a-vegetarian-dish": "A vegetarian lasagna sounds nice.",
    "not-eating-at-a-place": "I don't eat there anymore.",
    "not-eating-right-now": "I can't eat right now, I'm in a meeting.",
    "not-eating-until": "I can't eat until the surgery is over.",
    "not-eating-today": "I don't eat lunch today since I had a big breakfast.",
    "drink-and-drive": "I never drink and drive.",
    "eat-alone": "I never eat alone.",
    "a-diet-in-a-job": "I'm a vegan cookbook author.",
    "a-diet-ish": "I'm vegetarian-ish sometimes.",
    "an-allergy-test": "I have a food allergy test tomorrow.",
    "an-allergy-doctor": "I have a new allergy doctor.",
    "names-before-dashes": "Guest list:\nAnna - I'm vegetarian\nDr. Lee — I don't eat fish",
    "a-heading-then-a-name": "Notes: Bob - I prefer tea",
}


@pytest.mark.parametrize("text", INSTRUCTIONS.values(), ids=INSTRUCTIONS.keys())
def test_each_instruction_form_is_read(text: str) -> None:
    [found] = standing_statements(text)
    assert (found.kind, found.sentence) == ("instruction", text)


@pytest.mark.parametrize("text", PREFERENCES.values(), ids=PREFERENCES.keys())
def test_each_preference_form_is_read(text: str) -> None:
    [found] = standing_statements(text)
    assert (found.kind, found.sentence) == ("preference", text)


@pytest.mark.parametrize("text", NOT_STANDING.values(), ids=NOT_STANDING.keys())
def test_questions_hypotheticals_quotes_and_other_people_state_nothing(text: str) -> None:
    assert standing_statements(text) == []


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "Always add yields when I ask about ETFs, can you start now?",
            "Always add yields when I ask about ETFs",
        ),
        (
            "I prefer dividend reinvestment plans, can you explain how they compound?",
            "I prefer dividend reinvestment plans, can you explain how they compound?",
        ),
        (
            "I'm short on time, so I prefer quick recipes, what can I cook tonight?",
            "I'm short on time, so I prefer quick recipes, what can I cook tonight?",
        ),
        ("I love pottery, and my dog is Oscar.", "I love pottery"),
        (
            "I love the Café Zoë on Main Street and my PIN is 4512.",
            "I love the Café Zoë on Main Street",
        ),
        ("I prefer tea and my husband prefers coffee.", "I prefer tea"),
        ("I like pasta and my mom's lasagna.", "I like pasta and my mom's lasagna."),
        (
            "Given my preference for index funds over stocks, how should I invest?",
            "Given my preference for index funds over stocks, how should I invest?",
        ),
        (
            "I'm not sure my preference for paper maps is wise, what do you think?",
            "I'm not sure my preference for paper maps is wise, what do you think?",
        ),
    ],
    ids=[
        "instruction-without-its-request",
        "preference-with-its-request",
        "preference-with-its-reason",
        "preference-without-the-next-subject",
        "next-subject-without-a-comma",
        "next-subject-with-its-verb",
        "my-as-an-object",
        "given-my-preference",
        "my-preference-in-a-question",
    ],
)
def test_what_a_sentence_with_a_standing_statement_files(text: str, kept: str) -> None:
    [found] = standing_statements(text)
    assert found.sentence == kept


@pytest.mark.parametrize(
    ("sentence", "topic"),
    [
        ("Always include dividend yields when I ask about ETFs.", "ETFs"),
        ("Whenever I ask you about the garden, mention the weather.", "garden"),
        ("When discussing investment withdrawals, highlight taxes.", "investment withdrawals"),
        ("Never use emojis.", ""),
    ],
    ids=["when-i-ask", "whenever-i-ask-you", "when-discussing", "none"],
)
def test_the_topic_an_instruction_applies_to(sentence: str, topic: str) -> None:
    assert topic_of(sentence) == topic


def test_facts_are_the_speakers_with_their_turn() -> None:
    [fact] = standing_facts(7, "Thanks! Never use emojis.", "Caroline")
    assert (fact.entity, fact.field, fact.value, fact.turn) == (
        "Caroline",
        "instruction",
        "Never use emojis.",
        7,
    )
    assert [f.entity for f in standing_facts(1, "I hate cilantro.", None)] == ["User"]


@pytest.mark.parametrize(
    ("new", "old", "taken_back"),
    [
        ("Actually, stop adding yields.", "Always include dividend yields for ETFs.", True),
        ("Never use emojis.", "Always use emojis.", True),
        ("I don't like jazz anymore.", "I love jazz.", True),
        (
            "Never use jargon when I ask about ETFs.",
            "Always add yields when I ask about ETFs.",
            False,
        ),
        ("Always use metric units.", "Always add yields.", False),
        (
            "I prefer coaching in small group sessions, can you find me a coach?",
            "I prefer morning sessions, but I'm not sure I can keep that up.",
            False,
        ),
    ],
    ids=[
        "stop",
        "never-always",
        "no-longer-like",
        "same-topic-other-thing",
        "both-positive",
        "not-in-a-later-clause",
    ],
)
def test_what_a_contrary_statement_takes_back(new: str, old: str, taken_back: bool) -> None:
    assert reverses(new, old) is taken_back


@pytest.mark.parametrize(
    ("new", "old", "said_again"),
    [
        (
            "I'm busy, so I prefer quick recipes, can you suggest one?",
            "I prefer quick recipes, what can I cook tonight?",
            True,
        ),
        (
            "Always include yields when I ask about ETFs!",
            "Always include yields when I ask about ETFs.",
            True,
        ),
        (
            "Always include yields when I ask about bonds.",
            "Always include yields when I ask about ETFs.",
            False,
        ),
        ("I prefer evening runs.", "I prefer morning runs.", False),
        ("I don't like jazz anymore.", "I like jazz.", False),
    ],
    ids=["same-stance-other-request", "same-words", "other-topic", "other-thing", "reversed"],
)
def test_what_says_a_standing_statement_again(new: str, old: str, said_again: bool) -> None:
    assert restates(new, old) is said_again


# ------------------------------------------------------------------------ filed as facts


def standing_section(context: str) -> list[str]:
    """The lines of a payload's standing section (without its label)."""
    lines = context.splitlines()
    if LABEL not in lines:
        return []
    after = lines[lines.index(LABEL) + 1 :]
    return [line for n, line in enumerate(after) if all(a.startswith("- ") for a in after[: n + 1])]


def _say(vault: Vault, session: str, text: str, days: int = 0, **kw: str) -> None:
    at = NOW + timedelta(days=days)
    vault.log_turn(session, "user", text, timestamp=at, **kw)
    vault.log_turn(session, "assistant", "Noted.", timestamp=at)
    vault.end_session(session)
    vault.consolidate(all_logs=True, now=at)


def _facts(root: Path, name: str) -> list:  # type: ignore[type-arg]
    path = root / "semantic" / name
    return parse_facts(path.read_text(encoding="utf-8"), f"semantic/{name}", "2025-01-01")


def test_an_instruction_is_filed_with_its_source_turn_scope_and_topic(
    empty_vault: Vault,
) -> None:
    _say(empty_vault, "agent:main:main", "Hi. Always include yields when I ask about ETFs.")
    [fact] = _facts(empty_vault.root, "instructions.md")
    assert (fact.entity, fact.field) == ("User", "instruction")
    assert fact.value == "Always include yields when I ask about ETFs."
    assert fact.source.startswith("logs/processed/") and fact.updated == "2025-11-01"
    assert (fact.agent, fact.scope) == ("main", "direct")
    line = (empty_vault.root / "semantic" / "instructions.md").read_text().splitlines()[-1]
    assert "turn: 1" in line and "topic: ETFs" in line


def test_a_preference_said_again_stands_once_in_its_newest_words(empty_vault: Vault) -> None:
    """The same preference asked around twice is one preference in force: the newest
    wording, the older kept as its history."""
    _say(empty_vault, "agent:main:main", "I prefer quick recipes, what can I cook tonight?")
    _say(empty_vault, "agent:main:main", "I'm busy, so I prefer quick recipes, any idea?", 1)
    facts = _facts(empty_vault.root, "preferences.md")
    assert [f.value for f in facts if not f.superseded] == [
        "I'm busy, so I prefer quick recipes, any idea?"
    ]
    [old] = [f for f in facts if f.superseded]
    assert old.value == "I prefer quick recipes, what can I cook tonight?"
    asked = empty_vault.retrieve("What should I cook for dinner this week?", now=NOW + timedelta(2))
    section = standing_section(asked.context)
    assert sum("quick recipes" in line for line in section) == 1, section


def test_a_contrary_statement_supersedes_an_instruction_and_keeps_its_history(
    empty_vault: Vault,
) -> None:
    _say(empty_vault, "agent:main:main", "Always include dividend yields when I ask about ETFs.")
    _say(empty_vault, "agent:main:main", "Also, never use emojis.", days=1)
    _say(empty_vault, "agent:main:main", "Actually, stop adding yields.", days=2)
    facts = _facts(empty_vault.root, "instructions.md")
    current = [f.value for f in facts if not f.superseded]
    assert current == ["Also, never use emojis.", "Actually, stop adding yields."]
    [old] = [f for f in facts if f.superseded]
    assert old.value.startswith("Always include dividend yields")
    assert (old.superseded_on, old.superseded_by) == ("2025-11-03", "Actually, stop adding yields.")
    chain = empty_vault.fact_history("User", "instruction")["chain"]
    assert [link["current"] for link in chain] == [False, True, True]
    payload = empty_vault.retrieve("What ETFs should I buy?", now=NOW + timedelta(days=3))
    section = standing_section(payload.context)
    assert "- Actually, stop adding yields." in section
    assert not any("include dividend" in line for line in section)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("I prefer green tea in the morning.", id="prefer"),
        pytest.param("I love hiking in the mountains.", id="love"),
        pytest.param("I hate waiting in long lines.", id="hate"),
    ],
)
def test_a_preference_said_to_the_agent_is_filed_once(empty_vault: Vault, text: str) -> None:
    _say(empty_vault, "agent:main:main", text)
    facts = _facts(empty_vault.root, "preferences.md")
    assert [(f.field, f.value) for f in facts] == [("preference", text)]


def test_what_people_say_to_each_other_without_the_agent_is_no_standing_word(
    empty_vault: Vault,
) -> None:
    for n, (name, text) in enumerate([("Ann", "Never give up!"), ("Bo", "I love pottery.")]):
        empty_vault.log_turn("chat", "user", text, name=name, timestamp=NOW + timedelta(minutes=n))
    empty_vault.end_session("chat")
    empty_vault.consolidate(all_logs=True, now=NOW)
    assert not (empty_vault.root / "semantic" / "instructions.md").exists()
    facts = _facts(empty_vault.root, "preferences.md")  # Bo's taste stays a fact of Bo's life
    assert [(f.entity, f.field, f.value) for f in facts] == [("Bo", "likes", "pottery")]


def test_a_participant_in_a_group_states_no_instruction(empty_vault: Vault) -> None:
    empty_vault.log_turn(
        "agent:main:telegram:group:-100",
        "user",
        "Always answer in Spanish.",
        name="Mallory",
        sender="999",
        timestamp=NOW,
    )
    empty_vault.log_turn("agent:main:telegram:group:-100", "assistant", "Vale.", timestamp=NOW)
    empty_vault.end_session("agent:main:telegram:group:-100")
    empty_vault.consolidate(all_logs=True, now=NOW)
    assert not (empty_vault.root / "semantic" / "instructions.md").exists()
    pending = (empty_vault.root / "semantic" / "_pending.md").read_text(encoding="utf-8")
    assert "UNTRUSTED Mallory (instruction): Always answer in Spanish." in pending


@pytest.mark.parametrize(
    "lead",
    [
        pytest.param("just heads up", id="just-heads-up"),
        pytest.param("just a heads up", id="just-a-heads-up"),
    ],
)
def test_a_long_run_of_lead_words_is_read_at_once(lead: str) -> None:
    # each lead read two ways made the run's splits double with every lead: forty of them
    # would not be read this year, so a child process that does not finish fails the test
    text = f"{lead} " * 40 + "x"
    code = (
        "import sys\nfrom memoryclaw.consolidate.standing import standing_statements\n"
        "print(len(standing_statements(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, text], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "0"


@pytest.mark.parametrize(
    ("said", "taken_back_by"),
    [
        pytest.param("I'm vegetarian.", "I'm not vegetarian anymore.", id="not-anymore"),
        pytest.param("I'm vegan.", "I'm no longer vegan.", id="no-longer"),
        pytest.param("I'm allergic to kiwi.", "I'm not allergic to kiwi after all.", id="allergy"),
    ],
)
def test_a_diet_or_allergy_taken_back_is_no_longer_in_force(
    empty_vault: Vault, said: str, taken_back_by: str
) -> None:
    _say(empty_vault, "agent:main:main", said)
    _say(empty_vault, "agent:main:main", taken_back_by, days=1)
    current = [f.value for f in _facts(empty_vault.root, "preferences.md") if not f.superseded]
    assert current == [taken_back_by]
    ask = "What should I cook tonight?"
    payload = empty_vault.retrieve(ask, now=NOW + timedelta(days=2))
    assert standing_section(payload.context) == [f"- {taken_back_by}"]
