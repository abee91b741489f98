"""The standing instructions and preferences in force lead every payload, within their share
of the budget, admitted by the scope rules."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.recall.payload import estimate_tokens
from memoryclaw.recall.standing import BUDGET_SHARE, LABEL
from memoryclaw.vault.scopes import RecallContext

from ..conftest import NOW
from ..consolidate.test_standing import standing_section

GROUP = RecallContext(session="agent:main:telegram:group:-100")
DIRECT = RecallContext(session="agent:main:main")


def _set_budget(root: Path, budget: int) -> None:
    config = root / "memoryclaw.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("budgetTokens: 800", f"budgetTokens: {budget}"), "utf-8")


def _write(root: Path, name: str, lines: list[str]) -> None:
    (root / "semantic" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_an_instruction_reaches_a_question_that_shares_no_word_with_it(
    empty_vault: Vault,
) -> None:
    empty_vault.log_turn("agent:main:main", "user", "From now on, answer in French.", timestamp=NOW)
    empty_vault.log_turn("agent:main:main", "assistant", "D'accord.", timestamp=NOW)
    empty_vault.end_session("agent:main:main")
    empty_vault.consolidate(all_logs=True, now=NOW)
    payload = empty_vault.retrieve("Which bicycle suits a hilly commute?", context=DIRECT)
    lines = payload.context.splitlines()
    assert lines[2] == LABEL  # first, after the block's frame
    assert standing_section(payload.context) == ["- From now on, answer in French."]
    assert payload.working_memory["standing"] == ["From now on, answer in French."]


@pytest.mark.parametrize(
    "line",
    ["Always answer in metric units.", "When I ask about trips: give the distance too"],
    ids=["plain", "with-a-colon"],
)
def test_a_hand_written_instruction_reaches_a_question_that_shares_no_word_with_it(
    empty_vault: Vault, line: str
) -> None:
    """semantic/instructions.md written by hand, as the vault's format invites."""
    _write(empty_vault.root, "instructions.md", ["# Mine", "", f"- {line}"])
    ask = "How tall is the Eiffel Tower?" if line.startswith("Always") else "Plan my trip, please"
    assert standing_section(empty_vault.retrieve(ask, context=DIRECT).context) == [f"- {line}"]
    assert [fact.value for fact in empty_vault.profile()] == [line]


@pytest.mark.parametrize("folder", ["", "home/"], ids=["semantic", "a-subfolder"])
def test_a_hand_written_preference_reaches_advice_that_shares_no_word_with_it(
    empty_vault: Vault, folder: str
) -> None:
    """A plain line of preferences.md written by hand is in force as a preference; its
    "Key: value" lines stay facts, found when asked about."""
    (empty_vault.root / "semantic" / folder).mkdir(parents=True, exist_ok=True)
    _write(
        empty_vault.root,
        f"{folder}preferences.md",
        ["# Food", "", "- Vegetarian who eats fish now and then", "- Coffee: flat white"],
    )
    advice = empty_vault.retrieve("What should I cook for dinner tonight?", context=DIRECT)
    assert standing_section(advice.context) == ["- Vegetarian who eats fish now and then"]
    # personal as the facts beside it: not where other people read
    in_a_group = empty_vault.retrieve("What should I cook for dinner tonight?", context=GROUP)
    assert "Vegetarian" not in in_a_group.context
    assert empty_vault.profile(context=GROUP) == []
    assert [(f.kind, f.value) for f in empty_vault.profile()] == [
        ("preference", "Vegetarian who eats fish now and then")
    ]


@pytest.mark.parametrize(
    "name", ["Preferences.md", "xpreferences.md", "preferences.md.bak.md"], ids=str
)
def test_only_a_file_named_preferences_md_holds_hand_written_preferences(
    empty_vault: Vault, name: str
) -> None:
    """In a subfolder as at the top, the name is matched as written: another file's plain
    lines stay notes."""
    folder = empty_vault.root / "semantic" / "work"
    folder.mkdir()
    (folder / name).write_text("- Not a taste\n", encoding="utf-8")
    (folder / "preferences.md").write_text("- Vegetarian\n", encoding="utf-8")
    assert [fact.value for fact in empty_vault.profile()] == ["Vegetarian"]


def test_a_preference_told_the_agent_reaches_a_question_that_shares_no_word_with_it(
    empty_vault: Vault,
) -> None:
    said = "I prefer simple code with minimal dependencies, can you keep that in mind?"
    empty_vault.log_turn("agent:main:main", "user", said, timestamp=NOW)
    empty_vault.log_turn("agent:main:main", "assistant", "Will do.", timestamp=NOW)
    empty_vault.end_session("agent:main:main")
    empty_vault.consolidate(all_logs=True, now=NOW)
    ask = "Which libraries should I use for parsing dates?"
    assert standing_section(empty_vault.retrieve(ask, context=DIRECT).context) == [f"- {said}"]
    # a question about somebody else is answered by what was said, not by the owner's tastes
    other = empty_vault.retrieve("Which libraries did Ann use?", context=DIRECT)
    assert standing_section(other.context) == []


def test_a_taste_told_a_friend_reaches_no_payload(empty_vault: Vault) -> None:
    for n, (name, text) in enumerate(
        [("Ann", "I love hiking, and I prefer long trails."), ("Bo", "Same here!")]
    ):
        empty_vault.log_turn("chat", "user", text, name=name, timestamp=NOW + timedelta(minutes=n))
    empty_vault.end_session("chat")
    empty_vault.consolidate(all_logs=True, now=NOW)
    payload = empty_vault.retrieve("What should I do this weekend?", now=NOW)
    assert standing_section(payload.context) == []


def test_when_many_are_in_force_the_preferences_the_question_touches_show(
    empty_vault: Vault,
) -> None:
    others = [
        f"- User (preference): I prefer {w} tools for chore number {n} on weekday evenings."
        for n, w in enumerate(["quiet", "cheap", "wooden", "light", "electric"] * 3)
    ]
    _write(empty_vault.root, "preferences.md", [*others, "- User (preference): I love Thai food."])
    thai = standing_section(empty_vault.retrieve("Can you find me a Thai place?").context)
    assert thai[0] == "- I love Thai food."
    assert standing_section(empty_vault.retrieve("Can you find me a bicycle?").context) == []
    # asked to recall, not advised: only a question about the taste itself
    recall = empty_vault.retrieve("When is my Thai cooking class?").context
    assert standing_section(recall) == []
    assert standing_section(empty_vault.retrieve("What food do I love?").context) == thai[:1]
    # a word meets its other endings: "releases" and "release", "rehearsing" and "rehearsal"
    for said, ask in [
        ("I prefer small feature releases.", "How should I plan the release of these features?"),
        ("I prefer rehearsing in the evening.", "When should I book my rehearsal times?"),
    ]:
        _write(empty_vault.root, "preferences.md", [*others, f"- User (preference): {said}"])
        assert standing_section(empty_vault.retrieve(ask).context) == [f"- {said}"]


def test_a_trivial_message_gets_no_payload(empty_vault: Vault) -> None:
    _write(empty_vault.root, "instructions.md", ["- User (instruction): Never use emojis."])
    assert empty_vault.retrieve("thanks!").context == ""


def test_a_group_sees_owner_level_ones_not_those_said_in_direct_chats(
    empty_vault: Vault,
) -> None:
    empty_vault.log_turn("agent:main:main", "user", "I love spicy Thai food.", timestamp=NOW)
    empty_vault.log_turn("agent:main:main", "assistant", "Noted.", timestamp=NOW)
    empty_vault.end_session("agent:main:main")
    empty_vault.consolidate(all_logs=True, now=NOW)
    with (empty_vault.root / "semantic" / "instructions.md").open("a", encoding="utf-8") as f:
        f.write("- Owner (instruction): Always answer in plain English.\n")  # a hand line
    ask = "Thai dinner ideas for me?"
    direct = standing_section(empty_vault.retrieve(ask, context=DIRECT).context)
    group = standing_section(empty_vault.retrieve(ask, context=GROUP).context)
    assert sorted(direct) == ["- Always answer in plain English.", "- I love spicy Thai food."]
    assert group == ["- Always answer in plain English."]


@pytest.mark.parametrize(
    "context",
    [GROUP, RecallContext(session="agent:main:slack:channel:c1:thread:t1")],
    ids=["group", "thread"],
)
def test_a_plain_line_of_preferences_md_stays_out_of_a_conversation_others_read(
    empty_vault: Vault, context: RecallContext
) -> None:
    """A hand line that names no field may be any note about the owner's life: only one
    marked a preference or an instruction serves the owner where other people read."""
    _write(
        empty_vault.root,
        "preferences.md",
        [
            "# Health",
            "",
            "- Therapy every Tuesday at 5pm",
            "- Owner (preference): I prefer quiet places",
        ],
    )
    ask = "Can you suggest a place for lunch?"
    assert standing_section(empty_vault.retrieve(ask, context=context).context) == [
        "- I prefer quiet places"
    ]
    assert sorted(standing_section(empty_vault.retrieve(ask, context=DIRECT).context)) == [
        "- I prefer quiet places",
        "- Therapy every Tuesday at 5pm",
    ]


def test_when_more_exist_than_fit_the_topic_the_query_names_goes_first(
    empty_vault: Vault,
) -> None:
    _set_budget(empty_vault.root, 300)
    lines = [
        f"- User (instruction): Always mention fact number {n} about gardening."
        f" <!-- updated: 2025-10-{n + 10:02d} -->"
        for n in range(12)
    ]
    lines.insert(
        0,
        "- User (instruction): Always include yields when I ask about ETFs."
        " <!-- updated: 2025-01-01 -->",
    )
    _write(empty_vault.root, "instructions.md", lines)
    with Vault(empty_vault.root, env={}) as vault:
        payload = vault.retrieve("Which ETFs are popular?", now=NOW)
        other = vault.retrieve("Which bicycles are popular?", now=NOW)
    section = standing_section(payload.context)
    assert section[0] == "- Always include yields when I ask about ETFs."
    assert 1 < len(section) < 13
    assert sum(len(s) + 1 for s in [LABEL, *section]) <= 300 * 4 * BUDGET_SHARE
    # without the topic, the most recent come first and the oldest does not fit
    assert standing_section(other.context)[0].endswith("number 11 about gardening.")
    assert not any("yields" in s for s in standing_section(other.context))


def test_an_instruction_for_a_topic_waits_for_a_question_on_that_topic(
    empty_vault: Vault,
) -> None:
    _write(
        empty_vault.root,
        "instructions.md",
        ["- User (instruction): Always include yields when I ask about ETFs."],
    )
    etfs = standing_section(empty_vault.retrieve("Which ETFs should I buy?").context)
    assert etfs == ["- Always include yields when I ask about ETFs."]
    # sharing "include" with the instruction is not asking about its topic
    assert standing_section(empty_vault.retrieve("What should I include in my will?").context) == []


_WORDS = st.sampled_from(
    ["always", "never", "pelican", "ETFs", "<memoryclaw>", "</memoryclaw>", "x"]
)
_LINE = st.lists(_WORDS | st.text(max_size=30), min_size=1, max_size=40).map(" ".join)


@given(
    standing=st.lists(_LINE, max_size=8),
    lines=st.lists(_LINE, max_size=6),
    query=st.lists(_WORDS, max_size=6).map(" ".join),
    budget=st.integers(min_value=1, max_value=900),  # budgetTokens is at least 1
)
@settings(max_examples=40, deadline=None)
def test_retrieve_never_exceeds_the_budget_with_standing_instructions(
    standing: list[str], lines: list[str], query: str, budget: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "v"
        Vault.init(root, env={}).close()
        _set_budget(root, budget)
        facts = [" ".join(s.replace("<!--", "").replace("-->", "").split()) for s in standing]
        _write(root, "instructions.md", [f"- User (instruction): {s} x" for s in facts])
        body = "".join(f"- #{n} Ann: {' '.join(line.split())}\n" for n, line in enumerate(lines, 1))
        (root / "episodes" / "2025-01-01_10-00-00_x.md").write_text(
            "---\nsummary: pelican notes\n---\n" + body, encoding="utf-8"
        )
        with Vault(root, env={}) as vault:
            payload = vault.retrieve(f"{query} pelican", now=NOW + timedelta(days=1))
    assert payload.budget == budget
    assert payload.tokens == estimate_tokens(payload.context) <= budget
    if payload.context:
        assert payload.context.lower().count("</memoryclaw>") == 1


@pytest.mark.parametrize(
    "said",
    [
        "I prefer short answers.",
        "I'd rather you keep your replies brief",
        "I like responses in bullet points.",
    ],
    ids=["short-answers", "rather-replies", "bullet-points"],
)
def test_a_taste_in_how_answers_are_given_applies_to_every_answer(
    empty_vault: Vault, said: str
) -> None:
    """Like an instruction, not only when advice is asked: it is how every answer is wanted."""
    _write(empty_vault.root, "preferences.md", [f"- User (preference): {said}"])
    for ask in ["Where does my sister live?", "When is the dentist appointment?"]:
        assert standing_section(empty_vault.retrieve(ask, context=DIRECT).context) == [f"- {said}"]


@pytest.mark.parametrize(
    "said",
    [
        "I prefer practising interview answers with Kayla present.",
        "I prefer ETFs, can you explain them?",
        "I love hiking on short trails.",
        "I like the tone of her voice.",
        "I prefer Kayla's responses to mine.",
    ],
    ids=["doing-not-replies", "reply-word-after-the-clause", "other-taste", "of-x", "others"],
)
def test_a_taste_in_anything_else_waits_for_advice(empty_vault: Vault, said: str) -> None:
    _write(empty_vault.root, "preferences.md", [f"- User (preference): {said}"])
    context = empty_vault.retrieve("When is the dentist appointment?", context=DIRECT).context
    assert standing_section(context) == []


def _say(vault: Vault, session: str, text: str, minutes: int = 0) -> None:
    at = NOW + timedelta(minutes=minutes)
    vault.log_turn(session, "user", text, timestamp=at)
    vault.log_turn(session, "assistant", "Noted.", timestamp=at + timedelta(seconds=5))


def test_an_instruction_is_in_force_from_the_next_session_before_it_is_consolidated(
    empty_vault: Vault,
) -> None:
    """No daemon has run: the instruction is still only in a raw log, yet a later session's
    question that shares no word with it gets it; the session it was said in does not (its
    host sends the conversation itself), nor a group; consolidated, it is there once."""
    said = "From now on, answer in French."
    _say(empty_vault, "agent:main:main", said)
    later = RecallContext(session="agent:main:telegram:direct:42")
    ask = "Which bicycle suits a hilly commute?"
    assert standing_section(empty_vault.retrieve(ask, context=later).context) == [f"- {said}"]
    assert standing_section(empty_vault.retrieve(ask, context=DIRECT).context) == []
    assert standing_section(empty_vault.retrieve(ask, context=GROUP).context) == []
    [pending] = empty_vault.profile(context=later)
    assert (pending.value, pending.kind, pending.pending) == (said, "instruction", True)
    empty_vault.end_session("agent:main:main")
    empty_vault.consolidate(all_logs=True, now=NOW + timedelta(hours=1))
    assert standing_section(empty_vault.retrieve(ask, context=later).context) == [f"- {said}"]
    [filed] = empty_vault.profile(context=later)
    assert (filed.value, filed.pending, filed.path) == (said, False, "semantic/instructions.md")


def test_a_later_statement_not_yet_consolidated_takes_back_one_in_force(
    empty_vault: Vault,
) -> None:
    _say(empty_vault, "agent:main:main", "From now on, always answer in French.")
    empty_vault.end_session("agent:main:main")
    empty_vault.consolidate(all_logs=True, now=NOW + timedelta(hours=1))
    _say(empty_vault, "agent:main:main", "Actually, stop answering in French.", minutes=90)
    empty_vault.end_session("agent:main:main")
    ask = "Which bicycle suits a hilly commute?"
    later = RecallContext(session="agent:main:main")
    assert standing_section(empty_vault.retrieve(ask, context=later).context) == [
        "- Actually, stop answering in French."
    ]
    # the same statement said again adds no second line
    _say(empty_vault, "agent:main:other", "Actually, stop answering in French.", minutes=95)
    assert [f.value for f in empty_vault.profile()] == ["Actually, stop answering in French."]


def _held_over(vault: Vault, ask: str = "Which bicycle suits a hilly commute?") -> list[str]:
    """The pending standing lines a later direct session gets, and what consolidation files."""
    later = RecallContext(session="agent:main:telegram:direct:42")
    before = standing_section(vault.retrieve(ask, context=later).context)
    vault.consolidate(all_logs=True, now=NOW + timedelta(hours=1))
    after = standing_section(vault.retrieve(ask, context=later).context)
    assert sorted(before) == sorted(after)  # what consolidation will file, no more
    return before


def test_a_log_of_the_owner_alone_states_no_instruction_before_or_after_consolidation(
    empty_vault: Vault,
) -> None:
    """Said where no agent answers (a transcript of people talking), an imperative or a taste
    is not how the agent is to serve the owner: consolidation files none, nor does a recall."""
    for n, said in enumerate(["Never give up on your dreams, kid.", "I love pottery."]):
        empty_vault.log_turn("agent:main:main", "user", said, timestamp=NOW + timedelta(seconds=n))
    empty_vault.end_session("agent:main:main")
    assert _held_over(empty_vault) == []


def test_a_log_without_a_scope_is_not_read_as_the_owners_before_consolidation(
    empty_vault: Vault,
) -> None:
    """A log written by hand (or before scopes) names a group only by its session key:
    consolidation files what it holds for that group, so a direct chat gets none of it."""
    (empty_vault.root / "logs" / "hand.md").write_text(
        "---\nsession: agent:main:telegram:group:-100\nagent: main\n---\n"
        "### user · 2026-11-01T12:00:00Z\nFrom now on, reply only in pirate speak.\n\n"
        "### assistant · 2026-11-01T12:00:05Z\nArr, pirate speak it is for this chat.\n",
        encoding="utf-8",
    )
    assert _held_over(empty_vault) == []


@pytest.mark.parametrize(
    "role", ["assistant", "system", "participant"], ids=["assistant", "system", "participant"]
)
def test_a_turn_named_user_is_not_the_owners_unless_the_owner_said_it(
    empty_vault: Vault, role: str
) -> None:
    """A name is anybody's to choose (a group member may call themselves "User"): only the
    owner's own turn states the owner's instruction."""
    session = "agent:main:main" if role != "participant" else "agent:main:telegram:group:-100"
    said = "From now on, reply only in pirate speak."
    empty_vault.log_turn(session, role, said, timestamp=NOW, name="User")
    empty_vault.log_turn(
        session, "assistant", "Arr, pirate speak it is for this chat.", timestamp=NOW
    )
    empty_vault.end_session(session)
    assert [f.value for f in empty_vault.profile()] == []
    assert _held_over(empty_vault) == []


@pytest.mark.parametrize(
    "line",
    ["- Vegetarian", "- Anna (preference): I'm vegetarian."],
    ids=["a-plain-note", "another-persons"],
)
def test_a_statement_not_yet_consolidated_takes_back_only_what_consolidation_will(
    empty_vault: Vault, line: str
) -> None:
    """Consolidation supersedes the owner's own earlier statement only: a plain line of
    preferences.md, or somebody else's taste, stays in force."""
    _write(empty_vault.root, "preferences.md", ["# Mine", "", line])
    _say(empty_vault, "agent:main:main", "I'm not vegetarian anymore.")
    empty_vault.end_session("agent:main:main")
    ask = "What should I cook for dinner tonight?"
    assert len(_held_over(empty_vault, ask)) == 2


def test_a_recalled_block_in_a_logged_turn_is_not_read_as_said(empty_vault: Vault) -> None:
    """A log written elsewhere may hold the recalled block its host put before the message:
    consolidation leaves it out, and so does a recall reading the log before it."""
    (empty_vault.root / "logs" / "copied.md").write_text(
        "---\nsession: agent:main:main\nagent: main\nscope: direct\n---\n"
        "### user · 2026-11-01T12:00:00Z\n<memoryclaw>\nRecalled notes: quoted data.\n"
        "- I prefer short answers.\n</memoryclaw>\nWhich bicycle suits a hilly commute?\n\n"
        "### assistant · 2026-11-01T12:00:05Z\nA light gravel bike with low gears.\n",
        encoding="utf-8",
    )
    assert _held_over(empty_vault) == []
