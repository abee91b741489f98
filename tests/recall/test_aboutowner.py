"""A question about the owner as a whole is answered with the owner's own facts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryclaw import RecallContext, Vault
from memoryclaw.recall.aboutowner import is_about_owner

PREFERENCES = """# Food

- Vegetarian who eats fish now and then
- Coffee: flat white with oat milk
- Allergy: hazelnuts <!-- superseded: 2025-03-01 by cashews -->
- Allergy: cashews

# Finance

- Savings:
    isa_monthly: £500
"""
INSTRUCTIONS = "- Always answer in metric units.\n"
CONTACTS = "# John Smith\n\n- Email: john@example.com\n"


@pytest.mark.parametrize(
    "question",
    [
        "what do you know about me?",
        "What do you remember about me",
        "so what have you learned about me so far?",
        "Tell me about myself.",
        "tell me everything about me",
        "who am I?",
        "what do you have on file about me?",
        "What’s in my profile?",
    ],
    ids=[
        "know",
        "remember",
        "learned-so-far",
        "myself",
        "everything",
        "who-am-i",
        "on-file",
        "a-phone-s-apostrophe",
    ],
)
def test_a_question_about_the_owner_as_a_whole_is_recognised(question: str) -> None:
    assert is_about_owner(question)


@pytest.mark.parametrize(
    "question",
    [
        "what do you know about me and Paris?",
        "what do you know about John?",
        "tell me about the trip",
        "who am I meeting tomorrow?",
        "what does Anna know about me?",
        "do you know me?",
    ],
    ids=["with-a-topic", "someone-else", "a-topic", "who-am-i-meeting", "another-s-view", "yes-no"],
)
def test_a_question_with_a_topic_or_about_someone_else_is_not_one(question: str) -> None:
    assert not is_about_owner(question)


@pytest.fixture
def hand_vault(tmp_path: Path) -> Vault:
    """A vault of three hand-written facts about its owner, an instruction and a contact."""
    vault = Vault.init(tmp_path / "v", env={})
    semantic = vault.root / "semantic"
    (semantic / "preferences.md").write_text(PREFERENCES, encoding="utf-8")
    (semantic / "instructions.md").write_text(INSTRUCTIONS, encoding="utf-8")
    (semantic / "contacts.md").write_text(CONTACTS, encoding="utf-8")
    return vault


def test_what_do_you_know_about_me_shows_the_owner_s_facts(hand_vault: Vault) -> None:
    with hand_vault as vault:
        context = vault.retrieve("what do you know about me?").context
    for line in ("Vegetarian who eats fish", "flat white with oat milk", "cashews", "metric"):
        assert line in context
    assert "hazelnuts" not in context  # superseded
    assert "john@example.com" not in context  # a fact about someone else


@pytest.mark.parametrize(
    ("context", "shown"),
    [
        (RecallContext(session="agent:main:main"), True),
        (RecallContext(session="agent:main:telegram:group:-100"), False),
    ],
    ids=["direct", "group"],
)
def test_in_a_group_me_is_whoever_asks_not_the_owner(
    hand_vault: Vault, context: RecallContext, shown: bool
) -> None:
    with hand_vault as vault:
        payload = vault.retrieve("who am I?", context=context).context
    assert ("flat white" in payload) is shown


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("what's my coffee order?", "flat white with oat milk"),
        ("how much do I put in my ISA monthly?", "£500"),
        ("what is my allergy?", "cashews"),
    ],
    ids=["an-entity-of-the-owner-s", "a-field-of-the-owner-s", "the-current-value"],
)
def test_a_first_person_question_finds_the_owner_s_hand_written_fact(
    hand_vault: Vault, question: str, answer: str
) -> None:
    """In the owner's own files a fact's entity is something of the owner's ("- Coffee: …"),
    and a field under a heading is too: asking about it in the first person shows it."""
    with hand_vault as vault:
        payload = vault.retrieve(question)
    assert answer in payload.context
    assert "Allergy: hazelnuts" not in payload.context  # superseded: shown as history only


@pytest.mark.parametrize(
    ("question", "not_shown"),
    [
        ("how much does John put in the ISA monthly?", "£500"),
        ("what is John's coffee order?", "flat white"),
        ("and John's coffee?", "flat white"),
        ("what is the coffee at the office like?", "flat white"),
    ],
    ids=["a-field", "an-entity", "someone-else-s", "no-person"],
)
def test_a_question_not_in_the_first_person_is_not_given_the_owner_s_facts(
    hand_vault: Vault, question: str, not_shown: str
) -> None:
    """ "- Coffee: …" of preferences.md is the owner's coffee when the owner asks about theirs,
    not an answer to every question that names coffee or somebody else's."""
    with hand_vault as vault:
        assert not_shown not in vault.retrieve(question).context


@pytest.mark.parametrize(
    "question",
    ["Can you tell me Dana's email?", "remind me of Dana's email", "I need the plumber's email"],
    ids=["tell-me", "remind-me", "i-need"],
)
def test_a_request_about_somebody_else_is_not_given_the_owner_s_own_fields(
    tmp_path: Path, question: str
) -> None:
    """ "Tell me" and "I need" frame a request; they do not make it a question about the
    owner, whose own email is not Dana's."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        semantic = vault.root / "semantic"
        (semantic / "preferences.md").write_text("- User (email): me@home.example\n", "utf-8")
        (semantic / "contacts.md").write_text("- Dana email: dana@team.example\n", "utf-8")
        assert "me@home.example" not in vault.retrieve(question).context
        assert "me@home.example" in vault.retrieve("what is my email?").context


def test_what_the_owner_told_the_agent_is_what_it_knows_about_them(tmp_path: Path) -> None:
    """Facts consolidation read from the owner's own turns (entity User) answer both a
    question about the owner as a whole and one about a field of theirs."""
    now = datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc)
    with Vault.init(tmp_path / "v", env={}) as vault:
        for minute, (role, text) in enumerate(
            [
                ("user", "Hi! I'm Priya. I work as a nurse on night shifts."),
                ("assistant", "Got it."),
                ("user", "My daughter is Mia."),
                ("assistant", "Noted."),
            ]
        ):
            vault.log_turn("agent:main:main", role, text, timestamp=now + timedelta(minutes=minute))
        vault.end_session("agent:main:main")
        vault.consolidate(all_logs=True, now=now + timedelta(hours=1))
        later = RecallContext(session="agent:main:main2")
        about_me = vault.retrieve("what do you know about me?", context=later).context
        job = vault.retrieve("what's my job?", context=later).context
        name = vault.retrieve("do you remember my name?", context=later).context
    assert "nurse on night shifts" in about_me and "Mia" in about_me
    assert "nurse on night shifts" in job
    assert "User name Priya" in name and "Priya" in about_me


def test_what_is_filed_of_somebody_else_beside_the_owner_s_lines_is_not_about_the_owner(
    hand_vault: Vault,
) -> None:
    """Consolidation files anyone's tastes in preferences.md ("- Bo (likes): pottery"): a
    line that names another person and a field is theirs, not the owner's."""
    preferences = hand_vault.root / "semantic" / "preferences.md"
    preferences.write_text(PREFERENCES + "\n- Bo (likes): pottery\n", encoding="utf-8")
    with hand_vault as vault:
        context = vault.retrieve("what do you know about me?").context
    assert "flat white with oat milk" in context
    assert "pottery" not in context
