"""Origin classes (owner, agent, untrusted, system) on search results, through the RPC the
OpenClaw plugin uses: one vault holding a memory of every kind memoryclaw makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import Vault
from memoryclaw.recall.origins import ORIGINS, episode_origin, fact_origin, line_origin
from memoryclaw.serve.stdio import StdioServer

GROUP = "agent:main:telegram:group:-100777"
CRON = "agent:main:cron:nightly"


def _call(bridge: StdioServer, method: str, **params: Any) -> Any:
    answer = bridge.handle(json.dumps({"id": 1, "method": method, "params": params}))
    assert "result" in answer, answer
    return answer["result"]


def _log(bridge: StdioServer, session: str, *turns: tuple[str, str], **at: str) -> None:
    for role, content in turns:
        params = {"session": session, "agent": "main", "role": role, "content": content, **at}
        _call(bridge, "log_turn", **params)


@pytest.fixture
def bridge(vault_dir: Path, tmp_path: Path) -> StdioServer:
    """The sample vault, plus a consolidated direct chat and group chat, an imported note,
    and an open log of a scheduled run."""
    bridge = StdioServer(vault_dir, env={})
    _log(bridge, "agent:main:main", ("user", "Quinn's email is quinn@zephyrine.example."))
    _log(bridge, GROUP, ("user", "The PELICAN offsite moved to Dunmore harbour."))
    for session in ("agent:main:main", GROUP):
        _call(bridge, "end_session", session=session)
    _call(bridge, "consolidate", all=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2025-03-01.md").write_text("Met the HERON supplier about crate sizes.\n")
    with Vault(vault_dir, env={}) as vault:
        vault.import_notes(notes)
    # dated apart from the logs above: a log named like a consolidated one would be read as it
    cron = (("user", "Summarise the ORIOLE backlog."), ("assistant", "ORIOLE: 3 open."))
    _log(bridge, CRON, *cron, timestamp="2026-01-02T03:04:05Z")
    return bridge


def _search(bridge: StdioServer, query: str, **context: str) -> dict[str, Any]:
    return dict(_call(bridge, "search", query=query, **context))


def test_every_result_names_its_origin(bridge: StdioServer) -> None:
    dentist = _search(bridge, "dentist phone")
    hand = [f for f in dentist["facts"] if f["source"] == "hand"]
    assert hand and {f["origin"] for f in hand} == {"owner"}  # written by hand
    from_log = [f for f in dentist["facts"] if f["source"].startswith("logs/")]
    assert from_log and {f["origin"] for f in from_log} == {"agent"}  # consolidated
    episodes = {r["id"]: r for r in dentist["results"]}
    assert episodes["ep-20250115-194002-dentist-appointment"]["origin"] == "agent"
    assert episodes["ep-be615c1253e6"]["origin"] == "owner"  # a hand-written episode
    for episode in dentist["results"]:  # its lines quote no turn: the episode's own text
        assert {p["origin"] for p in episode["passages"]} <= {episode["origin"]}

    quinn = _search(bridge, "Quinn email", agent="main", session="agent:main:main")
    [fact] = [f for f in quinn["facts"] if f["value"] == "quinn@zephyrine.example"]
    assert fact["origin"] == "agent" and fact["scope"] == "direct"

    group = _search(bridge, "PELICAN offsite", agent="main", session=GROUP)
    assert group["results"] and {r["origin"] for r in group["results"]} == {"untrusted"}
    assert all(p["origin"] == "untrusted" for r in group["results"] for p in r["passages"])

    heron = _search(bridge, "HERON supplier")["results"]
    assert [r["origin"] for r in heron if "imported" in r["tags"]] == ["untrusted"]

    oriole = {p["speaker"]: p["origin"] for p in _search(bridge, "ORIOLE")["recent"]}
    assert oriole == {"User": "system", "Assistant": "agent"}  # a scheduled run's prompt


@pytest.mark.parametrize(
    ("speaker", "scope", "session", "origin"),
    [
        ("User", "direct", "agent:main:main", "owner"),
        ("User", "direct", CRON, "system"),
        ("Assistant", "direct", "agent:main:main", "agent"),
        ("System", "direct", "agent:main:main", "system"),
        ("Participant", "direct", "agent:main:main", "untrusted"),
        ("tool search_flights", "direct", "agent:main:main", "untrusted"),
        ("User", f"group:{GROUP[11:]}", GROUP, "untrusted"),
        ("Assistant", "thread:x:thread:1", None, "untrusted"),
    ],
    ids=["owner", "cron-prompt", "assistant", "system", "participant", "tool", "group", "thread"],
)
def test_a_line_is_classed_by_its_speaker_and_where_it_was_said(
    speaker: str, scope: str, session: str | None, origin: str
) -> None:
    assert line_origin(speaker, scope, session) == origin


@pytest.mark.parametrize(
    ("source", "scope", "confidence", "vault", "origin"),
    [
        ("hand", "owner", "high", None, "owner"),
        ("user", "direct", "high", None, "owner"),
        ("review", "owner", "high", None, "owner"),
        ("logs/processed/x.md", "direct", "high", None, "agent"),
        ("logs/processed/x.md", "direct", "low", None, "untrusted"),
        ("openclaw:MEMORY.md:3", "owner", "high", None, "untrusted"),
        ("hand", "peer:telegram:dm:99", "high", None, "untrusted"),
        ("hand", "owner", "high", "team", "untrusted"),
    ],
    ids=["hand", "set", "review", "log", "log-low", "imported", "peer", "team-vault"],
)
def test_a_fact_is_classed_by_its_provenance(
    source: str, scope: str, confidence: str, vault: str | None, origin: str
) -> None:
    assert fact_origin(source, scope, confidence, vault) == origin
    assert origin in ORIGINS


def test_an_episode_is_never_the_owners_unless_written_by_hand() -> None:
    assert episode_origin("owner", None, None, ()) == "owner"
    assert episode_origin("direct", "logs/processed/x.md", "agent:main:main", ()) == "agent"
    assert episode_origin("owner", None, None, ("imported", "note")) == "untrusted"
    assert episode_origin("group:x:group:1", None, None, ()) == "untrusted"
