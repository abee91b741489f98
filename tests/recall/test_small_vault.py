"""Recall in a vault of three hand-written files works as in a big one.

In a vault this small nearly every word of a question is in half of its files or more, which
a plain BM25 counts as worthless; and a question names a fact's field ("number", "email",
"birthday") that the fact's line never spells out.  Each case below is a question a user
would ask of a three-file vault, with what the ``retrieve`` payload must quote to answer it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryclaw import RecallContext, Vault
from memoryclaw.vault.values import shape_terms, shape_tokens

from ..conftest import NOW

CONTACTS = """\
# Contacts
- Dentist: Dr. Lena Hoffman, 020 7946 0321
- Ana's email: ana.ruiz@example.com
- Plumber: Ruth Adeyemi, ruth@adeyemi-plumbing.example
"""

FAMILY = """\
# Family
- Mum:
    birthday: 14 March 1961
    address: 14 Elm Grove, Leeds LS6 2AB
- Wife: Joanna Lindqvist

| Name | Relation | Phone |
|---|---|---|
| Erik | brother | +46 70 123 45 67 |
"""

GYM = """\
---
timestamp: 2025-06-02T18:00:00Z
summary: User joined the PureGym in Islington.
tags: [gym, fitness]
---
**Details:**
- Membership: PG-88213, £24.99 a month, cancel with a month's notice
- Website: https://puregym.example/islington
"""

# The locksmith: an imported memory file holds the number; two conversations only asked.
ASKED = """\
---
id: ep-20251020-100000-7bb05aa4
timestamp: '2025-10-20T10:00:00Z'
summary: 'User asked about locksmith, number and phone: "What''s my locksmith''s phone number?"'
tags: [locksmith, number, phone, saved]
participants: [user, assistant]
source_turns: [1, 2]
---
**Details:**
- #1 User: What's my locksmith's phone number?
- #2 Assistant: I don't have your locksmith's number saved yet.
"""

ASKED_AGAIN = """\
---
id: ep-20251027-090000-1c2d3e4f
timestamp: '2025-10-27T09:00:00Z'
summary: 'User asked about locksmith and call: "Should I call a locksmith about the back door?"'
tags: [locksmith, call, door]
participants: [user, assistant]
source_turns: [1, 2]
---
**Details:**
- #1 User: Should I call a locksmith about the back door? The lock is stiff again.
- #2 Assistant: Try graphite powder first; if it still sticks, a locksmith can replace it.
"""

IMPORTED = """\
---
id: ep-20251001-120000-3fa32b89
timestamp: '2025-10-01T12:00:00Z'
summary: MEMORY.md of OpenClaw agent main
tags: [imported, memory-file]
source: openclaw:MEMORY.md
---
- Locksmith: Dave Kowalski, 07700 900461
- Boiler service: every October, Northside Heating
- Favourite coffee: flat white
"""

# Who the owner is, as a user writes it down: no question below repeats a field's name.
ME = """\
# Facts
- User (age): 34
- User (job): nurse
- User (lives in): Leeds
- User (income): £41,000 a year
"""

MINE = """\
# Food
- Allergy: cashews
- Favourite coffee: flat white with oat milk
- Wine: Rioja
- Budget: under £50 a week on takeaways

# Home
- Dog: Biscuit, a beagle
- Dog's age: 3

# Travel
- Travels with hand luggage only for trips of up to two nights
"""

VAULTS = {
    "me": {"semantic/facts.md": ME, "semantic/preferences.md": MINE},
    "people": {
        "semantic/contacts.md": CONTACTS,
        "semantic/family.md": FAMILY,
        "episodes/2025-06-02_18-00-00_gym.md": GYM,
    },
    "locksmith": {
        "episodes/2025-10-20_10-00-00_locksmith-number-phone.md": ASKED,
        "episodes/2025-10-27_09-00-00_locksmith-back-door.md": ASKED_AGAIN,
        "episodes/2025-10-01_12-00-00_imported-memory-md.md": IMPORTED,
    },
}

# (vault, question, what the payload must quote)
CASES = [
    ("people", "What's my dentist's number?", "020 7946 0321"),
    ("people", "who is my dentist?", "Dr. Lena Hoffman"),
    ("people", "dentist", "020 7946 0321"),
    ("people", "dentist phone number", "020 7946 0321"),
    ("people", "Lena Hoffman's phone", "020 7946 0321"),
    ("people", "What's Ana's email address?", "ana.ruiz@example.com"),
    ("people", "how do I mail Ana?", "ana.ruiz@example.com"),
    # asking how to reach someone names no kind: any way of reaching them on file answers
    ("people", "how do I reach Ana?", "ana.ruiz@example.com"),
    ("people", "how do I reach Mum?", "14 Elm Grove"),
    ("people", "how can I get in touch with Erik?", "+46 70 123 45 67"),
    ("people", "plumber email", "ruth@adeyemi-plumbing.example"),
    ("people", "When is Mum's birthday?", "14 March 1961"),
    ("people", "When was Mum born?", "14 March 1961"),
    ("people", "Where does Mum live?", "14 Elm Grove"),
    ("people", "What's Mum's address?", "14 Elm Grove"),
    ("people", "Joanna Lindqvist", "Joanna Lindqvist"),
    ("people", "Erik's phone?", "+46 70 123 45 67"),
    ("people", "what's the gym's website?", "https://puregym.example/islington"),
    ("people", "gym membership number", "PG-88213"),
    ("locksmith", "what's my locksmith's phone number?", "07700 900461"),
    ("locksmith", "locksmith number", "07700 900461"),
    ("locksmith", "How do I call the locksmith?", "07700 900461"),
    ("locksmith", "locksmith", "07700 900461"),
    # the only word shared with the answer is in every file, a word of a question in one
    ("locksmith", "what's my locksmith called?", "Dave Kowalski"),
    ("locksmith", "did I save a locksmith?", "Dave Kowalski"),
    ("me", "how old am I?", "age 34"),
    ("me", "What do I do for a living?", "job nurse"),
    ("me", "what's my profession?", "job nurse"),
    ("me", "where do I live?", "lives in Leeds"),
    ("me", "how much do I earn?", "£41,000 a year"),
    ("me", "what's my salary?", "£41,000 a year"),
    ("me", "am I allergic to anything?", "cashews"),
    # a question names the category a field files under, not the thing
    ("me", "what do I like to drink?", "flat white"),
    ("me", "what can't I eat?", "cashews"),
    ("me", "where should we eat tonight?", "cashews"),
    ("me", "what's my pet called?", "Biscuit"),
    ("me", "what wine do I like?", "Rioja"),
]


def _make(root: Path, files: dict[str, str]) -> Vault:
    vault = Vault.init(root, env={})
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return vault


@pytest.fixture(scope="module")
def vaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Vault]]:
    root = tmp_path_factory.mktemp("small")
    opened = {name: _make(root / name, files) for name, files in VAULTS.items()}
    try:
        yield opened
    finally:
        for vault in opened.values():
            vault.close()


@pytest.mark.parametrize(
    ("name", "question", "answer"), CASES, ids=[f"{v}:{q}" for v, q, _ in CASES]
)
def test_a_small_vault_recalls_the_answer(
    vaults: dict[str, Vault], name: str, question: str, answer: str
) -> None:
    payload = vaults[name].retrieve(question, now=NOW)
    assert answer in payload.context, payload.context or "(nothing recalled)"


def test_the_line_that_answers_comes_before_the_questions(vaults: dict[str, Vault]) -> None:
    """The imported note holding the number is quoted first; the conversations where the user
    only asked come after it, if at all."""
    context = vaults["locksmith"].retrieve("what's my locksmith's phone number?", now=NOW).context
    answer = context.index("07700 900461")
    for asked in ("What's my locksmith's phone number?", "Should I call a locksmith"):
        assert asked not in context or context.index(asked) > answer, context


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("how old am I?", "I'm 34"),
        ("what do I do for a living?", "work as a nurse"),
        ("where do I live?", "living in Leeds"),
        ("how much do I earn?", "earning £41,000 a year"),
    ],
    ids=["age", "job", "home", "income"],
)
def test_who_the_owner_said_they_are_is_found_before_consolidation(
    tmp_path: Path, question: str, answer: str
) -> None:
    """An earlier session's words, not yet consolidated into facts, answer a question that
    does not repeat them."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        for role, text in [
            ("user", "Hi! I'm Priya. I'm 34, I work as a nurse and I'm living in Leeds."),
            ("assistant", "Nice to meet you, Priya!"),
            ("user", "What's a budget for someone like me, earning £41,000 a year?"),
            ("assistant", "Try 50/30/20."),
        ]:
            vault.log_turn("agent:main:first", role, text)
        context = vault.retrieve(question, context=RecallContext(session="agent:main:next")).context
    assert answer in context, context


def test_a_word_of_a_compound_alone_does_not_bring_a_fact(vaults: dict[str, Vault]) -> None:
    """ "two" of "phase-two" is no reason to recall the trips of up to two nights."""
    context = vaults["me"].retrieve("when is my phase-two kickoff?", now=NOW).context
    assert "hand luggage" not in context, context


@pytest.mark.parametrize(
    ("question", "unasked"),
    [
        ("where is my old laptop?", "age 34"),
        ("what's my favourite old movie?", "age 34"),
        ("what's my living room colour?", "job nurse"),
        # a thing of a category names itself, not the category
        ("what wine do I like?", "flat white"),
        # somebody's field is no answer about the owner
        ("how old am I?", "Dog's age"),
        # "we" asks with the owner in mind, not about them; "US" is a country
        ("what's our budget for the Q3 launch?", "£50 a week"),
        ("what did the US team say about the budget?", "£50 a week"),
    ],
)
def test_a_fact_the_question_does_not_ask_for_is_not_brought(
    vaults: dict[str, Vault], question: str, unasked: str
) -> None:
    """ "old" asks for an age in "how old", not in "my old laptop"; "living" for a job in
    "for a living", not in "my living room"; "wine" for the wine, not every drink; "Dog's
    age" is not the owner's; "our budget" is not the owner's own."""
    context = vaults["me"].retrieve(question, now=NOW).context
    assert unasked not in context, context


def test_asking_how_to_reach_someone_brings_no_other_fact_of_theirs(
    vaults: dict[str, Vault],
) -> None:
    """Mum's address answers "how do I reach Mum?"; her birthday does not."""
    context = vaults["people"].retrieve("how do I reach Mum?", now=NOW).context
    assert "14 Elm Grove" in context and "14 March 1961" not in context, context
    # and the search says why: the address matched "reach"
    found = vaults["people"].search("how do I reach Mum?", now=NOW)
    why = {f.field: ("reach" in f.matched, f.relevance) for f in found.facts}
    assert why["address"] == (True, 1.0) and why["birthday"] == (False, 0.0), why


def test_a_question_naming_only_a_busy_entity_does_not_bring_all_its_facts(
    tmp_path: Path,
) -> None:
    """An entity with a dozen facts: asking for it by name alone brings not all of them (a
    field named brings that one)."""
    lines = [f"- Priya ({field}): {value}" for field, value in _PRIYA]
    with _make(tmp_path / "v", {"semantic/priya.md": "# Priya\n" + "\n".join(lines)}) as vault:
        named = vault.retrieve("Priya", now=NOW)
        assert len(named.facts) < len(_PRIYA) // 2, named.context
        email = vault.retrieve("Priya's email", now=NOW)
        assert "priya.n@example.com" in email.context


_PRIYA = [
    ("email", "priya.n@example.com"),
    ("phone", "07700 900555"),
    ("role", "staff engineer"),
    ("team", "payments"),
    ("city", "Bristol"),
    ("partner", "Sam"),
    ("dog", "Biscuit"),
    ("started", "2021-09-01"),
    ("manager", "Olu"),
    ("language", "Python"),
    ("hobby", "bouldering"),
    ("coffee", "oat flat white"),
]


def test_the_readme_dentist_example_from_the_command_line(tmp_path: Path) -> None:
    """The README's example as a user types it: a new vault, one hand-written line."""
    root = tmp_path / "rk"

    def memoryclaw(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "memoryclaw", "--vault", str(root), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    memoryclaw("init")
    with (root / "semantic" / "contacts.md").open("a") as contacts:
        contacts.write("- Dentist: Dr. Lena Hoffman, 020 7946 0321\n")
    for question in ("What's my dentist's number?", "who is my dentist?", "dentist"):
        out = memoryclaw("retrieve", question)
        assert "020 7946 0321" in out, textwrap.shorten(out, 300)
    # the explanation names the words the user typed, not the kind of value they asked for
    [fact] = json.loads(memoryclaw("search", "--json", "What's my dentist's number?"))["facts"]
    assert fact["matched"] == ["dentist", "number"], fact


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Dr. Lena Hoffman, 020 7946 0321", "shapephone"),
        ("+46 70 123 45 67", "shapephone"),
        ("(555) 123-4567", "shapephone"),
        ("ana.ruiz@example.com", "shapeemail"),
        ("see https://puregym.example/islington", "shapeurl"),
        ("14 March 1961", "shapedate"),
        ("Lost my job yesterday (2023-01-19), so", "shapedate"),
        ("14 Elm Grove, Leeds LS6 2AB", "shapeaddress"),
        ("Brightsmile Dental, 42 Upper Street; phone 020 7946 0321", "shapephone shapeaddress"),
        ("PG-88213, £24.99 a month", ""),
        ("from 2019-2021 I paid 1234567 in total", ""),
        ("version 1.2.3.4567 of the app", ""),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 25 else None,
)
def test_the_kinds_of_value_a_line_holds(text: str, tokens: str) -> None:
    """A date in brackets is no phone number, nor a range of years, an amount or a version."""
    assert shape_tokens(text) == tokens


def test_a_field_names_its_kind_and_a_question_its_kinds() -> None:
    assert shape_tokens("Bristol", "city") == ""
    assert shape_tokens("the 14th", "birthday") == "shapedate"
    assert shape_terms(["dentist", "numbers", "live"]) == {
        "numbers": "shapephone",
        "live": "shapeaddress",
    }
    # kinds only a field names: no text is of them by its look
    assert shape_tokens("34", "age") == "shapeage"
    assert shape_tokens("34 years old") == ""
    assert shape_terms(["old", "living", "salary"]) == {
        "old": "shapeage",
        "living": "shapejob",
        "salary": "shapeincome",
    }
    # in a question, "old" and "living" name them only in a phrase
    assert shape_terms(["old", "laptop"], "where's my old laptop?") == {}
    assert shape_terms(["old"], "how old am I?") == {"old": "shapeage"}
    assert shape_terms(["living", "room"], "paint my living room") == {}
    assert shape_terms(["living"], "what do I do for a living?") == {"living": "shapejob"}


def test_a_field_names_its_category_by_its_last_word() -> None:
    """ "Favourite coffee" is filed under drinks, "Work email" under emails; an allergy is
    food too, while a question about allergies asks for allergies only."""
    assert shape_tokens("flat white", "Favourite coffee") == "shapedrink"
    assert shape_tokens("Dana", "Work email") == "shapeemail"
    assert shape_tokens("cashews", "Allergy") == "shapefood shapeallergy"
    assert shape_tokens("Rex", "Dogs") == "shapepet"
    assert shape_tokens("nurse", "Coffee shop job") == "shapejob"
    assert shape_tokens("short", "Email style") == ""
    # a head that names its kind only after a word of it, or alone
    assert shape_tokens("533112984", "Passport number") == ""
    assert shape_tokens("x", "Mobile number") == shape_tokens("x", "Number") == "shapephone"
    assert shape_tokens("me@example.com", "Email address") == "shapeemail"
    assert shape_tokens("x", "Home address") == "shapeaddress"
    assert shape_tokens("1990", "Date of birth") == "shapedate"
    assert shape_tokens("Leeds", "Place of birth") == ""
    assert shape_tokens("3", "Dog's age") == ""
    assert shape_terms(["eat", "allergies", "drinking", "wine", "dog"]) == {
        "eat": "shapefood",
        "allergies": "shapeallergy",
        "drinking": "shapedrink",
    }


def test_a_vault_typed_without_bullets_is_recalled(tmp_path: Path) -> None:
    """Facts and an instruction written as plain lines, the way a person types notes (no
    "- " in front, one bullet indented by a tab): each is recalled, the instruction in every
    payload."""
    files = {
        "semantic/notes.md": (
            "Ana's email is ana@example.org\n"
            "Our wifi password is in the blue notebook\n"
            "\t- Bin day: Thursday\n"
        ),
        "semantic/instructions.md": "Always answer in British English\r\n",
    }
    with _make(tmp_path / "v", files) as vault:
        for question, answer in [
            ("where is the wifi password?", "blue notebook"),
            ("how do I reach Ana?", "ana@example.org"),
            ("when is bin day?", "Thursday"),
            ("what's the capital of France?", "Always answer in British English"),
        ]:
            context = vault.retrieve(question, now=NOW).context
            assert answer in context and "British English" in context, (question, context)
