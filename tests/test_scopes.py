"""Recall rules: session keys, conversation scopes, who spoke, and what a request may see."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw.errors import InvalidInputError
from memoryclaw.scopes import (
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
