"""Recall rules: session keys, conversation scopes, who spoke, and what a request may see."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.errors import InvalidInputError
from memoryclaw.vault.scopes import (
    Policy,
    RecallContext,
    conversation_scope,
    parse_session_key,
    speaker_role,
    valid_scope,
)

GROUP = "agent:main:telegram:group:-1001234567890"


@pytest.mark.parametrize(
    ("key", "agent", "kind", "conversation", "peer"),
    [
        ("agent:main:main", "main", "direct", "main", None),
        ("agent:work:telegram:dm:4477", "work", "direct", "telegram:dm:4477", "4477"),
        ("agent:main:dm:+4477", "main", "direct", "dm:+4477", "+4477"),
        (GROUP, "main", "group", "telegram:group:-1001234567890", None),
        ("agent:main:discord:channel:123456", "main", "group", "discord:channel:123456", None),
        (
            "agent:main:discord:channel:123456:thread:987654",
            "main",
            "thread",
            "discord:channel:123456:thread:987654",
            None,
        ),
        (
            "agent:main:telegram:group:-100:topic:42",
            "main",
            "thread",
            "telegram:group:-100:topic:42",
            None,
        ),
        ("agent:ops:cron:nightly-report", "ops", "cron", "cron:nightly-report", None),
        ("s1", None, "direct", None, None),
        ("conv-26-session-3", None, "direct", None, None),
    ],
    ids=[
        "main",
        "channel-dm",
        "dm",
        "group",
        "channel",
        "thread",
        "topic",
        "cron",
        "plain",
        "other",
    ],
)
def test_session_keys_tell_agent_kind_and_conversation(
    key: str, agent: str | None, kind: str, conversation: str | None, peer: str | None
) -> None:
    info = parse_session_key(key)
    assert (info.agent, info.kind, info.conversation, info.peer) == (
        agent,
        kind,
        conversation,
        peer,
    )


@pytest.mark.parametrize(
    ("session", "kind", "owners", "scope"),
    [
        ("agent:main:main", None, (), "direct"),
        (GROUP, None, (), "group:telegram:group:-1001234567890"),
        ("s1", "group", (), "group:s1"),
        ("agent:main:telegram:dm:4477", None, (), "direct"),
        ("agent:main:telegram:dm:4477", None, ("4477",), "direct"),
        ("agent:main:telegram:dm:4477", None, ("99",), "peer:telegram:dm:4477"),
        ("agent:ops:cron:nightly", None, (), "direct"),
    ],
    ids=["main", "group", "explicit-group", "dm", "owner-dm", "stranger-dm", "cron"],
)
def test_memories_are_scoped_to_their_conversation(
    session: str, kind: str | None, owners: tuple[str, ...], scope: str
) -> None:
    assert conversation_scope(session, kind, owners) == scope
    assert valid_scope(scope)


@pytest.mark.parametrize(
    ("role", "sender", "kind", "owners", "logged"),
    [
        ("user", None, "direct", (), "user"),
        ("user", None, "group", (), "participant"),
        ("user", "tg:1", "group", ("tg:1",), "user"),
        ("user", "tg:2", "group", ("tg:1",), "participant"),
        ("user", "tg:2", "direct", ("tg:1",), "participant"),
        ("assistant", "tg:2", "group", ("tg:1",), "assistant"),
        ("tool_result", None, "thread", (), "tool_result"),
    ],
    ids=[
        "owner-direct",
        "group-unknown",
        "group-owner",
        "group-other",
        "direct-other",
        "assistant",
        "tool",
    ],
)
def test_only_the_owner_speaks_as_user(
    role: str, sender: str | None, kind: str, owners: tuple[str, ...], logged: str
) -> None:
    assert speaker_role(role, sender, kind, owners) == logged


DIRECT = RecallContext(agent="main", session="agent:main:main")
IN_GROUP = RecallContext(session=GROUP)
OTHER_AGENT = RecallContext(agent="work", session="agent:work:main")


@pytest.mark.parametrize(
    ("context", "agent", "scope", "share", "admitted", "because"),
    [
        (RecallContext(), "work", "group:x", False, True, "terminal"),
        (DIRECT, None, None, False, True, "owner-level"),
        (DIRECT, "main", "direct", False, True, "direct conversation"),
        (DIRECT, "work", "direct", False, False, "agent work"),
        (DIRECT, "work", "direct", True, True, "direct conversation"),
        (DIRECT, "main", "group:telegram:group:-1", False, False, "recalled only there"),
        (IN_GROUP, None, None, False, False, "where other people read"),
        (IN_GROUP, "main", "direct", False, False, "where other people read"),
        (IN_GROUP, "main", "group:telegram:group:-1001234567890", False, True, "this conversation"),
        (IN_GROUP, "main", "group:telegram:group:-5", False, False, "another conversation"),
        (OTHER_AGENT, None, "owner", False, True, "owner-level"),
        (RecallContext(kind="cron", agent="main"), "main", "direct", False, True, "direct"),
        (RecallContext(kind="group"), None, None, False, False, "where other people read"),
    ],
    ids=[
        "terminal",
        "unscoped",
        "own-direct",
        "other-agent",
        "shared-agents",
        "group-into-direct",
        "owner-into-group",
        "direct-into-group",
        "same-group",
        "other-group",
        "hand-notes-other-agent",
        "cron",
        "group-without-session",
    ],
)
def test_rules_admit_and_say_why(
    context: RecallContext,
    agent: str | None,
    scope: str | None,
    share: bool,
    admitted: bool,
    because: str,
) -> None:
    verdict, reason = Policy(context, share).admit(agent, scope)
    assert verdict is admitted
    assert because in reason


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="kind"):
        RecallContext(kind="broadcast")


_AGENTS = st.sampled_from([None, "", "main", "work"])
_SCOPES = st.sampled_from(
    [None, "", "owner", "direct", f"group:{GROUP[11:]}", "group:x:group:1", "peer:t:dm:9"]
)
_CONTEXTS = st.builds(
    RecallContext,
    agent=st.sampled_from([None, "main", "work"]),
    session=st.sampled_from([None, "agent:main:main", GROUP, "agent:work:t:dm:9", "s1"]),
    kind=st.sampled_from([None, "direct", "group", "thread", "cron"]),
)


@given(
    memories=st.lists(st.tuples(_AGENTS, _SCOPES), min_size=1, max_size=12),
    context=_CONTEXTS,
    share=st.booleans(),
    owners=st.sampled_from([(), ("9",), ("1", "2")]),
)
def test_the_sql_filter_is_the_same_rule(
    memories: list[tuple[str | None, str | None]],
    context: RecallContext,
    share: bool,
    owners: tuple[str, ...],
) -> None:
    """What SQLite lets through is exactly what ``admit`` admits."""
    policy = Policy(context, share, owners)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE m (n INTEGER, agent TEXT, scope TEXT)")
    conn.executemany(
        "INSERT INTO m VALUES (?, ?, ?)", [(n, a, s) for n, (a, s) in enumerate(memories)]
    )
    where, params = policy.sql_filter()
    through = {n for (n,) in conn.execute(f"SELECT n FROM m WHERE {where}", params)}
    admitted = {n for n, (a, s) in enumerate(memories) if policy.admit(a, s)[0]}
    assert through == admitted


# ----------------------------------------------------------------- contexts fail closed

MALFORMED_KEYS = [
    "agent:main:telegram:group:-100 x",
    " agent:main:main",
    "AGENT:main:telegram:group:-100\t",
    "agent::telegram:group:-100",
    "agent:main",
    "agent:main:",
    "",
    "   ",
    "s1\nscope: owner",
    "x" * 401,
    "agent:main:telegram:gro\u200bup:-100",
]


@pytest.mark.parametrize(
    "key",
    MALFORMED_KEYS,
    ids=[
        "space",
        "leading-space",
        "tab",
        "no-agent",
        "no-rest",
        "empty-rest",
        "empty",
        "blank",
        "newline",
        "over-400",
        "zero-width-space",
    ],
)
def test_a_session_key_that_does_not_parse_sees_nothing(key: str) -> None:
    policy = Policy(RecallContext(agent="main", session=key), share_across_agents=True)
    assert policy.context.problem is not None
    for agent, scope in [(None, None), ("main", "direct"), ("main", "owner"), (None, "group:x")]:
        admitted, reason = policy.admit(agent, scope)
        assert not admitted and "does not parse" in reason
    assert policy.sql_filter() == ("0", [])


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("agent:main:telegram:GROUP:-100", "group"),
        ("agent:main:discord:Channel:1:THREAD:2", "thread"),
        ("Agent:main:telegram:group:-100", "group"),
        ("agent:main:CRON:nightly", "cron"),
        ("agent:main:telegram:\uff27\uff32\uff2f\uff35\uff30:-100", "group"),
    ],
    ids=["upper-group", "mixed-thread", "upper-head", "upper-cron", "full-width-group"],
)
def test_a_session_keys_kind_is_read_whatever_its_case(key: str, kind: str) -> None:
    assert parse_session_key(key).kind == kind
    if kind != "cron":
        assert not Policy(RecallContext(session=key)).admit("main", "owner")[0]


@pytest.mark.parametrize(
    ("key", "kind", "scope"),
    [
        (GROUP, "direct", f"group:{GROUP[11:]}"),
        (GROUP, "cron", f"group:{GROUP[11:]}"),
        ("agent:main:discord:channel:1:thread:2", "direct", "thread:discord:channel:1:thread:2"),
        ("agent:main:main", "group", "group:main"),
        ("agent:main:main", "cron", "direct"),
        ("team-chat", "group", "group:team-chat"),
    ],
    ids=[
        "group-as-direct",
        "group-as-cron",
        "thread-as-direct",
        "direct-as-group",
        "direct-as-cron",
        "plain-id-as-group",
    ],
)
def test_an_explicit_kind_narrows_a_session_key_but_never_widens_it(
    key: str, kind: str, scope: str
) -> None:
    context = RecallContext(session=key, kind=kind)
    assert context.scope() == scope
    assert conversation_scope(key, kind) == scope  # what a turn logged so is filed under
    if scope != "direct":
        assert not Policy(context).admit("main", "direct")[0]


def test_a_session_id_that_names_no_agent_sees_only_the_default_agents_memories() -> None:
    policy = Policy(RecallContext(session="s1"))
    assert not policy.admit("work", "direct")[0]
    assert policy.admit("main", "direct")[0] and policy.admit(None, "owner")[0]
    assert Policy(RecallContext(kind="direct")).admit("work", "owner")[0] is False
    assert Policy(RecallContext(session="s1"), share_across_agents=True).admit("work", "direct")[0]


@pytest.mark.parametrize(
    "agent",
    ["", " ", "main ", "a b", "main\nscope: owner", "ma\x00in", "m" * 129],
    ids=["empty", "blank", "trailing-space", "space", "newline", "nul", "too-long"],
)
def test_an_agent_id_that_is_not_one_is_refused(agent: str) -> None:
    with pytest.raises(InvalidInputError, match=r"^agent: "):
        RecallContext(agent=agent)


NOW = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def test_malformed_contexts_recall_nothing_private_end_to_end(empty_vault: Vault) -> None:
    """Another agent's direct memory and the owner's direct memory stay out of every context
    that does not parse or names another conversation; the owner's own terminal sees both."""
    vault = empty_vault
    vault.log_turn("agent:work:main", "user", "The staging cluster is bluefin", timestamp=NOW)
    vault.log_turn("agent:main:main", "user", "My locker code is 4471", timestamp=NOW)
    contexts = [
        RecallContext(session="agent:main:telegram:GROUP:-100"),
        RecallContext(session="agent:main:telegram:group:-100 "),
        RecallContext(session=GROUP, kind="direct"),
        RecallContext(session=""),
    ]
    query = "bluefin staging locker code"
    for context in contexts:
        found = vault.search(query, context=context).as_dict()
        shown = str(found["results"]) + str(found["recent"])
        assert "staging" not in shown and "4471" not in shown, context
    # a session id that is no agent key is agent main's: its own memory, not another agent's
    found = vault.search(query, context=RecallContext(session="not-an-agent-key")).as_dict()
    shown = str(found["results"]) + str(found["recent"])
    assert "4471" in shown and "staging" not in shown
    everything = vault.search(query).as_dict()
    shown = str(everything["results"]) + str(everything["recent"])
    assert "staging" in shown and "4471" in shown


def _cli(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("command", ["search", "retrieve"])
def test_an_empty_agent_id_is_an_error_at_the_command_line(
    empty_vault: Vault, command: str
) -> None:
    proc = _cli(empty_vault.root, command, "dentist", "--agent", "")
    assert proc.returncode == 1
    assert proc.stderr == "memoryclaw: error: agent: must not be empty\n"
    assert _cli(empty_vault.root, command, "dentist").returncode == 0  # no context: the owner


# A session key that reads as a group wherever its parts say so, however it is written.
GROUP_LOOKING_KEYS = [
    "agent :main:telegram:group:-100",
    "\uff41\uff47\uff45\uff4e\uff54:main:telegram:group:-100",
    "agent\uff1amain\uff1atelegram\uff1agroup\uff1a-100",
    "agent\u2236main\u2236telegram\u2236group\u2236-100",
    "agent:main:telegram:group",
    "agent:main:discord:thread",
    "telegram:group:-100",
    "group:-100",
    "Slack:Channel:C1",
    "telegram: group :-100",
    "agent:main:::",
    "agent main telegram group -100",
    "tele\u200bgram:group:-100",
]
GROUP_LOOKING_IDS = [
    "space-before-colon",
    "full-width-letters",
    "full-width-colons",
    "ratio-colons",
    "group-without-id",
    "thread-without-id",
    "plain-channel-group",
    "plain-group",
    "plain-upper-channel",
    "plain-spaced-group",
    "agent-key-without-parts",
    "agent-words-with-spaces",
    "plain-zero-width-space",
]


@pytest.mark.parametrize("key", GROUP_LOOKING_KEYS, ids=GROUP_LOOKING_IDS)
def test_a_group_looking_or_malformed_key_never_sees_the_owners_direct_memories(key: str) -> None:
    for kind in (None, "direct", "cron"):
        policy = Policy(RecallContext(session=key, kind=kind), share_across_agents=True)
        for scope in (None, "owner", "direct"):
            assert not policy.admit("main", scope)[0], (key, kind, scope)
        where, _ = policy.sql_filter()
        assert "'direct'" not in where
    assert parse_session_key(key).kind in ("group", "thread")


@pytest.mark.parametrize(
    "key",
    ["agent :main:telegram:group:-100", "agent main telegram", "agent:main:::", "agent"],
    ids=["space-before-colon", "spaces", "no-parts", "bare-head"],
)
def test_a_key_that_starts_like_an_agent_key_but_is_not_one_is_refused_when_logged(
    empty_vault: Vault, key: str
) -> None:
    with pytest.raises(InvalidInputError, match=r"^session: starts with agent: but is not"):
        empty_vault.log_turn(key, "user", "hello", timestamp=NOW)


@pytest.mark.parametrize(
    "key",
    ["s1", "conv-26-session-3", "team chat", "my-group-chat", "telegram:dm:4477", "cron:nightly"],
    ids=["short", "dashed", "spaced", "word-in-a-dashed-id", "plain-dm", "plain-cron"],
)
def test_a_plain_session_id_without_a_group_part_stays_a_direct_conversation(key: str) -> None:
    info = parse_session_key(key)
    assert (info.agent, info.kind, info.problem) == (None, "direct", None)
    assert Policy(RecallContext(session=key)).admit("main", "direct")[0]


def test_a_full_width_key_is_the_same_conversation_as_its_ascii_form(empty_vault: Vault) -> None:
    """A turn logged under a folded spelling is recalled under the plain one, and the other
    way round: both are one group, which sees nothing of the owner's direct chats."""
    wide = "\uff41\uff47\uff45\uff4e\uff54\uff1amain\uff1atelegram\uff1agroup\uff1a-100"
    assert conversation_scope(wide) == conversation_scope("agent:main:telegram:group:-100")
    vault = empty_vault
    vault.log_turn(wide, "user", "The picnic moved to Sunday", timestamp=NOW)
    found = vault.search("picnic", context=RecallContext(session="agent:main:telegram:group:-100"))
    assert "picnic" in str(found.as_dict()["recent"]).lower()


def test_group_looking_keys_recall_nothing_private_end_to_end(empty_vault: Vault) -> None:
    """``search --session K`` for each group-looking key finds the group's own turn at most,
    never the owner's direct one; the owner at the terminal finds it."""
    vault = empty_vault
    vault.log_turn("agent:main:main", "user", "My blood type is BLOODX negative", timestamp=NOW)
    for key in GROUP_LOOKING_KEYS:
        proc = _cli(vault.root, "search", "BLOODX", "--session", key, "--json")
        assert proc.returncode == 0, (key, proc.stderr)
        assert "negative" not in proc.stdout, key
    assert "negative" in _cli(vault.root, "search", "BLOODX", "--json").stdout
