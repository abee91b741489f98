"""``memoryclaw mcp``: the real server process, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from memoryclaw import ConfigError, Vault
from memoryclaw.cli import cli
from memoryclaw.serve.mcp import build_server
from memoryclaw.vault.inputs import MAX_REQUEST_BYTES
from memoryclaw.vault.rawlogs import unprocessed_logs

from ..line_client import line_client

JOHN_ID = "ep-20250408-143210-email-john"
EMAIL_QUERY = "what did I email John about"
TOOLS = {"memory_search", "memory_get", "memory_profile", "memory_log", "memory_forget"}


@asynccontextmanager
async def connect(vault_dir: Path, stderr: Path, *flags: str) -> AsyncIterator[ClientSession]:
    """A session with ``python -m memoryclaw --vault VAULT mcp FLAGS``; its stderr goes to
    ``stderr``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryclaw", "--vault", str(vault_dir), "mcp", *flags],
        # the SDK passes on only a few variables by default (PYTHONPATH is not one of them)
        env={k: v for k, v in os.environ.items() if not k.startswith("MEMORYCLAW_")},
    )
    with stderr.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def with_server(
    vault_dir: Path,
    tmp_path: Path,
    scenario: Callable[[ClientSession], Awaitable[None]],
    *flags: str,
) -> None:
    """Run ``scenario`` against a fresh server (started with ``flags``); the server must not
    have printed a traceback."""
    stderr = tmp_path / "mcp-stderr.txt"

    async def main() -> None:
        async with connect(vault_dir, stderr, *flags) as session:
            await scenario(session)

    anyio.run(main)
    assert "Traceback" not in stderr.read_text(encoding="utf-8")


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured answer of a successful call, which the text content repeats as JSON."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    [text] = result.content
    assert isinstance(text, TextContent)
    assert json.loads(text.text) == result.structured_content
    return result.structured_content


def error(result: CallToolResult) -> str:
    """The one-line memoryclaw message of a failed call, without the SDK's prefix."""
    assert result.is_error
    [text] = result.content
    assert isinstance(text, TextContent)
    assert text.text.startswith("Error executing tool memory_") and "\n" not in text.text
    return text.text.split(": ", 1)[1]


def invalid(result: CallToolResult) -> None:
    """A call the SDK refused: its arguments do not fit the tool's input schema."""
    assert result.is_error
    [text] = result.content
    assert isinstance(text, TextContent) and "validation error" in text.text


def test_lists_five_tools_with_typed_inputs(vault_dir: Path, tmp_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
            for name, prop in tool.input_schema["properties"].items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"
        search = tools["memory_search"].input_schema
        assert search["required"] == ["query"]
        assert search["properties"]["query"]["type"] == "string"
        assert {"type": "integer", "minimum": 0} in search["properties"]["limit"]["anyOf"]
        assert tools["memory_get"].input_schema["required"] == ["id"]
        log = tools["memory_log"].input_schema
        assert log["required"] == ["session", "role", "content"]
        assert set(log["properties"]) == {"session", "role", "content", "name", "channel", "tool"}
        forget = tools["memory_forget"].input_schema
        assert "required" not in forget
        assert forget["properties"]["confirm"] == {
            "default": False,
            "description": forget["properties"]["confirm"]["description"],
            "title": "Confirm",
            "type": "boolean",
        }
        annotations = tools["memory_search"].annotations
        assert annotations is not None and annotations.read_only_hint
        annotations = tools["memory_forget"].annotations
        assert annotations is not None and annotations.destructive_hint

    with_server(vault_dir, tmp_path, scenario)


def test_search_and_get_find_johns_email(vault_dir: Path, tmp_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        found = ok(await session.call_tool("memory_search", {"query": EMAIL_QUERY}))
        assert found["query"] == EMAIL_QUERY and {"email", "john"} <= set(found["keywords"])
        by_id = {r["id"]: r for r in found["results"]}
        assert JOHN_ID in by_id and {"email", "john"} <= set(by_id[JOHN_ID]["matched"])
        assert all("email-john" in r["id"] for r in found["results"][:4])
        assert any(
            f["entity"] == "John" and f["value"] == "john@example.com" for f in found["facts"]
        )
        with Vault(vault_dir, env={}) as vault:
            expected = vault.search(EMAIL_QUERY).as_dict()
        assert [r["id"] for r in found["results"]] == [r["id"] for r in expected["results"]]

        limited = ok(await session.call_tool("memory_search", {"query": "email", "limit": 2}))
        assert len(limited["results"]) == 2

        episode = ok(await session.call_tool("memory_get", {"id": JOHN_ID}))
        assert episode["kind"] == "episode" and episode["id"] == JOHN_ID
        assert "john@example.com" in episode["details"]
        assert episode["session"] == "agent:main:telegram:12345"

        fact_id = next(f["id"] for f in found["facts"] if f["entity"] == "John")
        fact = ok(await session.call_tool("memory_get", {"id": fact_id}))
        assert fact["kind"] == "fact" and fact["value"] == "john@example.com"

    with_server(vault_dir, tmp_path, scenario)


def test_profile_lists_the_standing_instructions_the_conversation_may_see(
    vault_dir: Path, tmp_path: Path
) -> None:
    (vault_dir / "semantic" / "instructions.md").write_text(
        "- User (instruction): Never use emojis.\n"
        "- User (instruction): Always answer in Dutch. <!-- source: x.md; scope: direct -->\n",
        encoding="utf-8",
    )

    async def owner(session: ClientSession) -> None:
        found = ok(await session.call_tool("memory_profile", {}))["standing"]
        instructions = sorted(f["value"] for f in found if f["kind"] == "instruction")
        assert instructions == ["Always answer in Dutch.", "Never use emojis."]
        # the sample vault's hand-written preferences.md lines, to the owner only
        assert ("preference", "Prefers window seats on flights") in {
            (f["kind"], f["value"]) for f in found
        }
        about = ok(await session.call_tool("memory_profile", {}))["about"]
        assert ("Allergy", "cashews") in {(f["entity"], f["value"]) for f in about}

    async def group(session: ClientSession) -> None:
        profile = ok(await session.call_tool("memory_profile", {}))
        found = profile["standing"]
        assert [(f["kind"], f["value"]) for f in found] == [("instruction", "Never use emojis.")]
        assert profile["about"] == []  # in a group, "me" is whoever asks

    with_server(vault_dir, tmp_path, owner)
    with_server(vault_dir, tmp_path, group, "--session", "agent:main:telegram:group:-100")


def test_log_appends_turns_to_the_raw_log(vault_dir: Path, tmp_path: Path) -> None:
    session_id = "agent:main:mcp:1"

    async def scenario(session: ClientSession) -> None:
        first = ok(
            await session.call_tool(
                "memory_log",
                {
                    "session": session_id,
                    "role": "user",
                    "content": "Remind me to renew the car insurance in March.",
                    "name": "Caroline",
                    "channel": "cli",
                },
            )
        )
        assert first["session"] == session_id and first["turn"] == 1
        assert first["path"].startswith("logs/") and first["path"].endswith("_cli_raw.md")
        text = (vault_dir / first["path"]).read_text(encoding="utf-8")
        assert "Remind me to renew the car insurance in March." in text

        second = ok(
            await session.call_tool(
                "memory_log",
                {
                    "session": session_id,
                    "role": "tool_call",
                    "content": '{"when": "March"}',
                    "tool": "reminders",
                },
            )
        )
        assert second["path"] == first["path"] and second["turn"] == 2

        refused = error(
            await session.call_tool(
                "memory_log", {"session": session_id, "role": "Not A Role", "content": "x"}
            )
        )
        assert "role" in refused

    with_server(vault_dir, tmp_path, scenario)
    [log] = [g for g in unprocessed_logs(vault_dir) if g.session == "agent:main:mcp:1"]
    assert [(t.role, t.name, t.tool) for t in log.turns] == [
        ("user", "Caroline", None),
        ("tool_call", None, "reminders"),
    ]


def test_a_log_written_through_mcp_is_named_for_it(vault_dir: Path, tmp_path: Path) -> None:
    with Vault(vault_dir, env={}) as vault:  # a session the command line began, earlier
        earlier = vault.log_turn("agent:main:main", "user", "Call the plumber", channel=None)
    assert earlier.path.endswith("_cli_raw.md")

    async def scenario(session: ClientSession) -> None:
        turn = {"role": "user", "content": "Book the dentist for May."}
        new = ok(await session.call_tool("memory_log", {**turn, "session": "s-mcp"}))
        assert new["path"].startswith("logs/") and new["path"].endswith("_mcp_raw.md")
        named = {**turn, "session": "s-tg", "channel": "telegram"}
        assert ok(await session.call_tool("memory_log", named))["path"].endswith("_telegram_raw.md")
        # a session whose log the command line began goes on in that log, old name and all
        going_on = ok(await session.call_tool("memory_log", {**turn, "session": "agent:main:main"}))
        assert (going_on["path"], going_on["turn"]) == (earlier.path, 2)

    with_server(vault_dir, tmp_path, scenario)
    names = {log.path.rsplit("_", 2)[-2] for log in unprocessed_logs(vault_dir)}
    assert {"cli", "mcp", "telegram"} <= names


def test_forget_by_query_needs_confirm_and_the_server_keeps_serving(
    vault_dir: Path, tmp_path: Path
) -> None:
    episodes = vault_dir / "episodes"
    before = sorted(p.name for p in episodes.iterdir())

    async def scenario(session: ClientSession) -> None:
        refused = error(await session.call_tool("memory_forget", {"query": "dentist"}))
        assert refused == 'confirm: forgetting by query needs "confirm": true'
        assert sorted(p.name for p in episodes.iterdir()) == before

        preview = ok(
            await session.call_tool("memory_forget", {"query": "dentist", "dry_run": True})
        )
        assert preview["dry_run"] and preview["episodes"]
        assert sorted(p.name for p in episodes.iterdir()) == before

        none_chosen = error(await session.call_tool("memory_forget", {}))
        assert "exactly one" in none_chosen

        done = ok(await session.call_tool("memory_forget", {"episode_id": JOHN_ID}))
        assert done["episodes"] == [JOHN_ID] and not done["dry_run"]
        assert done["files_deleted"] == ["episodes/2025-04-08_14-32-10_email-john.md"]
        # what was drawn from its turns goes too: their text, and the facts they gave
        processed = "logs/processed/2025-04-08_14-30-02_telegram_raw.md"
        assert done["files_edited"] == [processed, "semantic/contacts.md"]
        assert not (vault_dir / done["files_deleted"][0]).exists()

        confirmed = ok(
            await session.call_tool("memory_forget", {"query": "dentist", "confirm": True})
        )
        assert confirmed["episodes"] == preview["episodes"]
        found = ok(await session.call_tool("memory_search", {"query": EMAIL_QUERY}))
        assert JOHN_ID not in [r["id"] for r in found["results"]]

    with_server(vault_dir, tmp_path, scenario)


def test_bad_calls_are_tool_errors(vault_dir: Path, tmp_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        missing = error(await session.call_tool("memory_get", {"id": "ep-nothing-here"}))
        assert missing == "no memory with id 'ep-nothing-here'"
        assert error(await session.call_tool("memory_forget", {"episode_id": "ep-nope"})) == (
            "no episode with id 'ep-nope'"
        )
        invalid(await session.call_tool("memory_search", {"query": "x", "limit": -1}))
        invalid(await session.call_tool("memory_search", {}))
        invalid(await session.call_tool("memory_get", {"id": 7}))

        shutil.move(vault_dir, tmp_path / "elsewhere")
        gone = error(await session.call_tool("memory_search", {"query": EMAIL_QUERY}))
        assert "no such folder" in gone
        lost = {"session": "s", "role": "user", "content": "lost?"}
        assert error(await session.call_tool("memory_log", lost))
        assert not vault_dir.exists()  # nothing recreated a half-empty vault in its place
        shutil.move(tmp_path / "elsewhere", vault_dir)
        found = ok(await session.call_tool("memory_search", {"query": EMAIL_QUERY}))
        assert JOHN_ID in [r["id"] for r in found["results"]]

    with_server(vault_dir, tmp_path, scenario)


def test_missing_vault_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--vault", str(tmp_path / "nowhere"), "mcp"])
    assert result.exit_code == 1
    assert result.output.strip().startswith("memoryclaw: error: ")
    assert "no such folder" in result.output


@pytest.fixture
def without_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every ``mcp`` import fail, as on an install without the extra."""
    names = [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]
    for name in [*names, "mcp", "mcp.server.mcpserver", "mcp.server.mcpserver.exceptions"]:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.usefixtures("without_sdk")
def test_missing_sdk_names_the_extra(vault: Vault, vault_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"pip install (-U )?'memoryclaw\[mcp\]'"):
        build_server(vault)
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "mcp"])
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("memoryclaw: error: mcp: ") and "memoryclaw[mcp]" in line


# ------------------------------------------------------- invalid messages on the raw wire

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
PROBE = b'{"jsonrpc": "2.0", "id": "probe", "method": "tools/list"}'
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
BAD_LINES = [
    (b"not json", PARSE_ERROR, "not JSON"),
    (b"\xff\xfe{}", PARSE_ERROR, "not UTF-8"),
    (b"[" * 100_000, PARSE_ERROR, "nested"),
    (rb'{"jsonrpc": "2.0", "id": "\udfff", "method": "tools/list"}', PARSE_ERROR, "U+DFFF"),
    (
        rb'{"jsonrpc": "2.0", "id": 7, "method": "tools/call",'
        rb' "params": {"name": "memory_search", "arguments": {"query": "\udfff"}}}',
        PARSE_ERROR,
        "params.arguments.query",
    ),
    (rb'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"\udfff": 1}}', PARSE_ERROR, "U+"),
    (b"[1, 2]", INVALID_REQUEST, "JSON-RPC"),
    (b'{"jsonrpc": "2.0", "id": 5}', INVALID_REQUEST, "JSON-RPC"),
    (b'{"id": 6, "method": "tools/list"}', INVALID_REQUEST, "JSON-RPC"),
    (b'{"jsonrpc": "2.0", "id": [1], "method": "tools/list"}', INVALID_REQUEST, '"id"'),
    (b"x" * (MAX_REQUEST_BYTES + 1), INVALID_REQUEST, "line over"),
]


def test_invalid_messages_get_json_rpc_errors_and_the_server_keeps_serving(
    vault_dir: Path,
) -> None:
    with line_client(vault_dir, "mcp") as client:
        assert client.ask(json.dumps(INITIALIZE).encode())["id"] == 0
        client.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n\n  \n')
        for line, code, words in BAD_LINES:
            reply = client.ask(line)
            assert reply["jsonrpc"] == "2.0" and reply["id"] is None, (line[:60], reply)
            assert reply["error"]["code"] == code and words in reply["error"]["message"], reply
            probe = client.ask(PROBE)
            assert probe["id"] == "probe" and {t["name"] for t in probe["result"]["tools"]} == TOOLS
        assert "Traceback" not in client.finish()


# ---------------------------------------------------------------- one conversation's server

QUINN, QUINN_EMAIL = "Quinn's email is quinn@zephyrine.example.", "quinn@zephyrine.example"
ZED, ZED_EMAIL = "Zed's email is zed@grouphost.example.", "zed@grouphost.example"
ALPHA = ("--agent", "alpha", "--session", "agent:alpha:main")
GROUP_KEY = "agent:alpha:telegram:group:-1001"


def _log_as(vault_dir: Path, tmp_path: Path, flags: tuple[str, ...], text: str) -> str:
    """Log ``text`` and a reply through a server started with ``flags``; the session key."""
    session_key = flags[flags.index("--session") + 1]

    async def scenario(session: ClientSession) -> None:
        for role, content in [("user", text), ("assistant", "Noted.")]:
            turn = {"session": session_key, "role": role, "content": content}
            ok(await session.call_tool("memory_log", turn))

    with_server(vault_dir, tmp_path, scenario, *flags)
    return session_key


def _consolidate(vault_dir: Path) -> None:
    with Vault(vault_dir, env={}) as vault:
        vault.consolidate(all_logs=True)


@pytest.mark.parametrize(
    ("flags", "sees", "direct"),
    [
        (ALPHA, True, True),
        (("--agent", "beta", "--session", "agent:beta:main"), False, True),
        (("--agent", "beta"), False, True),
        (("--agent", "alpha", "--session", GROUP_KEY), False, False),
        (("--agent", "alpha", "--session", "room-7", "--kind", "group"), False, False),
        (("--agent", "alpha", "--session", GROUP_KEY, "--kind", "direct"), False, False),
        (("--session", "agent:alpha:telegram:GROUP:-1001"), False, False),
        (("--session", "agent:alpha:telegram:group:-1001 x"), False, False),
        (("--session", "room-7"), False, True),
        ((), True, True),
    ],
    ids=[
        "same-agent",
        "other-agent",
        "other-agent-no-session",
        "group-key",
        "group-kind",
        "group-key-kind-direct",
        "upper-case-group-key",
        "key-with-space",
        "plain-session-is-agent-main",
        "owner",
    ],
)
def test_a_server_for_one_conversation_sees_only_its_memories(
    vault_dir: Path, tmp_path: Path, flags: tuple[str, ...], sees: bool, direct: bool
) -> None:
    _log_as(vault_dir, tmp_path, ALPHA, QUINN)
    _consolidate(vault_dir)
    with Vault(vault_dir, env={}) as vault:
        [fact] = [f for f in vault.search("Quinn email").facts if f.value == QUINN_EMAIL]
        assert fact.agent == "alpha" and fact.scope == "direct"

    async def scenario(session: ClientSession) -> None:
        found = ok(await session.call_tool("memory_search", {"query": "Quinn email"}))
        assert any(f["value"] == QUINN_EMAIL for f in found["facts"]) is sees
        assert any("quinn" in r["path"] for r in found["results"]) is sees
        got = await session.call_tool("memory_get", {"id": fact.id})
        if sees:
            assert ok(got)["value"] == QUINN_EMAIL
        else:
            assert error(got) == f"no memory with id {fact.id!r}"
        # hand-written, owner-level memories: only in direct conversations
        dentist = ok(await session.call_tool("memory_search", {"query": "dentist phone"}))
        assert bool(dentist["facts"]) is direct

    with_server(vault_dir, tmp_path, scenario, *flags)


def test_a_group_server_files_what_participants_say_as_untrusted(
    vault_dir: Path, tmp_path: Path
) -> None:
    group = ("--agent", "alpha", "--session", GROUP_KEY)
    _log_as(vault_dir, tmp_path, group, ZED)
    [log] = [g for g in unprocessed_logs(vault_dir) if g.session == GROUP_KEY]
    assert [t.role for t in log.turns] == ["participant", "assistant"]
    assert log.meta["agent"] == "alpha" and log.meta["kind"] == "group"
    _consolidate(vault_dir)
    pending = (vault_dir / "semantic" / "_pending.md").read_text()
    assert f"- UNTRUSTED Zed: {ZED_EMAIL} (said by" in pending
    for path in (vault_dir / "semantic").glob("*.md"):
        if path.name != "_pending.md":
            assert ZED_EMAIL not in path.read_text(), path

    async def scenario(session: ClientSession) -> None:
        found = ok(await session.call_tool("memory_search", {"query": "Zed email"}))
        assert not [f for f in found["facts"] if ZED_EMAIL in f["value"]]
        assert found["results"]  # the group's own episode is recalled there, as an episode

    with_server(vault_dir, tmp_path, scenario, *group)


def test_tool_arguments_cannot_reach_past_the_servers_conversation(
    vault_dir: Path, tmp_path: Path
) -> None:
    with Vault(vault_dir, env={}) as vault:
        [dentist] = [f for f in vault.search("dentist phone").facts if "0321" in f.value]
        episodes = sorted(p.name for p in (vault_dir / "episodes").iterdir())
    group = ("--agent", "alpha", "--session", GROUP_KEY)

    async def scenario(session: ClientSession) -> None:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools == TOOLS
        elsewhere = {"session": "agent:alpha:main", "role": "user", "content": QUINN}
        refused = error(await session.call_tool("memory_log", elsewhere))
        assert refused == f"session: this server logs only to session {GROUP_KEY!r}"
        by_query = {"query": "dentist", "confirm": True}
        assert "for the owner" in error(await session.call_tool("memory_forget", by_query))
        unseen = await session.call_tool("memory_forget", {"fact_id": dentist.id})
        assert error(unseen) == f"no fact with id {dentist.id!r}"
        dry = {"query": "dentist", "dry_run": True}
        assert "for the owner" in error(await session.call_tool("memory_forget", dry))

    with_server(vault_dir, tmp_path, scenario, *group)
    assert sorted(p.name for p in (vault_dir / "episodes").iterdir()) == episodes
    assert "0321" in (vault_dir / dentist.path).read_text()
    assert not [g for g in unprocessed_logs(vault_dir) if g.session == "agent:alpha:main"]


def test_the_mcp_command_refuses_an_unknown_kind(vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "mcp", "--kind", "party"])
    assert result.exit_code == 2 and "party" in result.output


@pytest.mark.parametrize(
    "flags",
    [("--agent", ""), ("--agent", "alpha\nscope: owner"), ("--agent", " ", "--session", "s1")],
    ids=["empty", "newline", "blank"],
)
def test_a_server_for_an_agent_id_that_is_not_one_refuses_to_start(
    vault_dir: Path, flags: tuple[str, ...]
) -> None:
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "mcp", *flags]
    done = subprocess.run(command, input="", capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("memoryclaw: error: agent: ") and done.stderr.count("\n") == 1


def test_memory_search_refuses_a_query_past_the_length_limit(
    vault_dir: Path, tmp_path: Path
) -> None:
    """A query of tens of thousands of words once held the server for half a minute."""
    query = "what did I email John about " + "lorem ipsum dolor " * 2_000

    async def scenario(session: ClientSession) -> None:
        refused = error(await session.call_tool("memory_search", {"query": query}))
        assert refused.startswith("query: ") and "byte limit of a search" in refused
        found = ok(await session.call_tool("memory_search", {"query": EMAIL_QUERY}))
        assert found["results"]  # still serving

    with_server(vault_dir, tmp_path, scenario)
