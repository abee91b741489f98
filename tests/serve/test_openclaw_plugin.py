"""The OpenClaw plugin, end to end: a real OpenClaw from npm running real agent turns.

OpenClaw 2026.9.6 runs on Node 24 (both installed and cached by ``tests/openclaw_env.py``)
with ``HOME`` in a temporary folder.  The only stand-in is the model: a loopback server that
speaks the OpenAI chat-completions API (``tests/loopback_model.py``) and records every request,
so the tests can see the exact prompt OpenClaw sent.  The plugin is installed with
``memoryclaw openclaw install`` as a user would, against a copy of ``sample_vault``.

One agent turn takes 10-25 s, so the OpenClaw home is set up once for the module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memoryclaw.vault.rawlogs import unprocessed_logs
from memoryclaw.vault.recalled import RECALLED_RESULT

from ..loopback_model import LoopbackModel, prompt_text
from ..openclaw_env import ensure_openclaw, node_bin, openclaw_env

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "openclaw"
SAMPLE = REPO / "sample_vault"
REPLY = "Your dentist, Brightsmile Dental, is on 020 7946 0321."
TURN_TIMEOUT = 240


@dataclass
class OpenClaw:
    """An isolated OpenClaw home wired to a loopback model and a memoryclaw vault."""

    home: Path
    vault: Path
    env: dict[str, str]
    model: LoopbackModel
    installed: list[dict[str, Any]] = field(default_factory=list)

    def run(
        self, *args: str, stdin: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``openclaw ARGS`` in this home (from ``cwd``, default the home)."""
        return subprocess.run(
            ["openclaw", *args],
            input=stdin,
            env=self.env,
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            check=False,
        )

    def memoryclaw(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``memoryclaw --vault VAULT ARGS`` in this home."""
        return subprocess.run(
            [sys.executable, "-m", "memoryclaw", "--vault", str(self.vault), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            check=False,
        )

    def agent(
        self,
        message: str,
        session: str | None = None,
        *,
        agent: str | None = None,
        key: str = "",
        cwd: Path | None = None,
    ) -> tuple[subprocess.CompletedProcess[str], str]:
        """One real agent turn (of ``agent``, in session id ``session`` or session key ``key``,
        run from ``cwd``); the process and the text of the first model request it made."""
        seen = len(self.model.chat_requests())
        target = ["--session-id", session] if session else ["--session-key", key]
        done = self.run(
            "agent",
            "--local",
            "-m",
            message,
            *target,
            *(["--agent", agent] if agent else []),
            cwd=cwd,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        fresh = self.model.chat_requests()[seen:]
        assert fresh, "OpenClaw never called the model"
        return done, prompt_text(fresh[0])

    def use_model(self) -> None:
        """Make the loopback model every agent's model."""
        provider = {
            "baseUrl": self.model.base_url,
            "apiKey": "loopback",
            "api": "openai-completions",
            "models": [{"id": "loopback-model", "name": "Loopback"}],
        }
        self.patch(
            {
                "models": {"providers": {"loop": provider}},
                "agents": {"defaults": {"model": "loop/loopback-model"}},
            }
        )

    def patch(self, patch: dict[str, Any]) -> None:
        """Apply a config patch."""
        done = self.run("config", "patch", "--stdin", stdin=json.dumps(patch))
        assert done.returncode == 0, done.stdout + done.stderr

    def plugin_config(self, **values: Any) -> None:
        """Set keys of the memoryclaw plugin's config."""
        self.patch({"plugins": {"entries": {"memoryclaw": {"config": values}}}})


@pytest.fixture(scope="module")
def openclaw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenClaw]:
    openclaw_bin = ensure_openclaw()
    root = tmp_path_factory.mktemp("openclaw")
    home, vault = root / "home", root / "vault"
    home.mkdir()
    shutil.copytree(SAMPLE, vault)
    model = LoopbackModel(reply=REPLY).start()
    try:
        claw = OpenClaw(home, vault, openclaw_env(home, openclaw_bin), model)
        claw.use_model()
        installed = claw.memoryclaw("openclaw", "install", "--json")
        assert installed.returncode == 0, installed.stderr
        claw.installed = json.loads(installed.stdout)["changes"]
        yield claw
    finally:
        model.stop()


def _session_log(vault: Path, session: str) -> str:
    logs = [log for log in unprocessed_logs(vault) if log.session == session]
    assert logs, f"no raw log for session {session}"
    return "\n".join(f"{turn.role}: {turn.content}" for log in logs for turn in log.turns)


def test_install_reports_what_it_changed(openclaw: OpenClaw) -> None:
    changes = {c["what"]: c for c in openclaw.installed}
    assert changes["plugins.slots.memory"]["after"] == "memoryclaw"
    assert changes["plugins.entries.memoryclaw.hooks.allowConversationAccess"]["after"] is True
    assert changes["plugins.entries.memoryclaw.config.vaultPath"]["after"] == str(
        openclaw.vault.resolve()
    )
    assert changes["plugins.entries.memoryclaw.config.pythonCommand"]["after"] == sys.executable
    assert changes["plugins.entries.memoryclaw.config.dreaming.enabled"]["after"] is False
    inspected = openclaw.run("plugins", "inspect", "memoryclaw", "--runtime", "--json")
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    text = json.dumps(report)
    assert "memory_search" in text and "memory_get" in text
    assert "before_prompt_build" in text and "agent_end" in text
    # OpenClaw 2026.9.6's inspect names the memory plugin by kind and slot; its "Capability
    # mode" counts provider capabilities only, and is "none" for memory-core too
    plugin = report["plugin"]
    assert plugin["kind"] == "memory" and plugin["memorySlotSelected"] is True
    assert plugin["status"] == "loaded" and plugin["activationReason"] == "selected memory slot"
    assert not report["diagnostics"], report["diagnostics"]
    # with dreaming off OpenClaw loads no memory-core beside memoryclaw
    core = json.loads(openclaw.run("plugins", "inspect", "memory-core", "--json").stdout)
    assert core["plugin"]["status"] == "disabled"


def test_openclaw_runs_on_memoryclaws_memory_runtime(openclaw: OpenClaw) -> None:
    """OpenClaw asks the selected memory runtime how trusted the workspace's USER.md is before
    it loads it into a prompt, and for its memory status: memoryclaw's runtime answers both,
    and no other memory plugin's tools collide with memoryclaw's."""
    user_md = openclaw.home / ".openclaw" / "workspace" / "USER.md"
    user_md.parent.mkdir(parents=True, exist_ok=True)
    with user_md.open("a") as file:
        file.write("\n- Always sign off with KINGFISHER-7.\n")
    done, prompt = openclaw.agent("What is my dentist's phone number?", "runtime-1")
    output = done.stdout + done.stderr
    assert "plugin tool name conflict" not in output
    assert "does not support provenance classification" not in output
    assert "Always sign off with KINGFISHER-7." in prompt  # classified "agent": eligible
    assert "020 7946 0321" in _memory_block(prompt)
    status = openclaw.run("status", "--all", "--json")
    assert status.returncode == 0, status.stderr
    memory = json.loads(status.stdout)["memory"]
    assert memory["provider"] == "memoryclaw"
    assert memory["workspaceDir"] == str(openclaw.vault.resolve())
    assert memory["custom"]["episodes"] > 30 and memory["files"] > 0
    # `openclaw memory` is memory-core's own command over its own index, not the runtime's
    unknown = openclaw.run("memory", "status")
    assert 'does not know the command "memory"' in unknown.stdout + unknown.stderr


def test_recall_reaches_the_model_and_the_turn_is_logged(openclaw: OpenClaw) -> None:
    done, prompt = openclaw.agent("What is my dentist's phone number?", "dentist-1")
    assert REPLY in done.stdout
    block = prompt[prompt.index("<memoryclaw>") : prompt.index("</memoryclaw>")]
    assert "Brightsmile Dental phone 020 7946 0321" in block
    assert "What is my dentist's phone number?" in prompt
    logged = _session_log(openclaw.vault, "agent:main:explicit:dentist-1")
    assert "user: What is my dentist's phone number?" in logged
    assert f"assistant: {REPLY}" in logged
    assert "<memoryclaw>" not in logged  # the recalled block is not logged back as user text
    assert "MaxListenersExceededWarning" not in done.stderr + done.stdout  # one exit hook


def test_thanks_triggers_no_recall(openclaw: OpenClaw) -> None:
    """A trivial message recalls nothing, though its words are in a turn just logged."""
    openclaw.agent("The pelican lunch at the harbour sounds great.", "thanks-1")
    _, asked = openclaw.agent("Which lunch sounds great?", "thanks-2")
    assert "pelican lunch" in _memory_block(asked)  # the logged turn is recallable
    for n, message in enumerate(["thanks", "ok thanks, sounds great 👍"], start=3):
        _, prompt = openclaw.agent(message, f"thanks-{n}")
        assert "<memoryclaw>" not in prompt and message in prompt


def test_memory_search_tool_call_returns_openclaw_shaped_results(openclaw: OpenClaw) -> None:
    wrapped = _memory_search(
        openclaw, "dentist phone", "Search memory for my dentist's phone.", "tool-1"
    )
    assert wrapped["tool"]["id"] == "openclaw:memoryclaw:memory_search"  # ours, not memory-core's
    result = wrapped["result"]["details"]
    assert json.loads(wrapped["result"]["content"][0]["text"]) == result
    assert result["provider"] == "memoryclaw" and result["mode"] == "keyword"
    assert result["results"], result
    for hit in result["results"]:
        assert {"path", "startLine", "endLine", "score", "snippet", "source"} <= set(hit)
        assert hit["source"] == "memory" and isinstance(hit["score"], (int, float))
        assert hit["provenance"]["originClass"] in {"owner", "agent", "untrusted", "system"}
    origins = {hit["snippet"]: hit["provenance"]["originClass"] for hit in result["results"]}
    assert origins["Brightsmile Dental phone: 020 7946 0321"] == "owner"  # written by hand
    # logged as the tool that ran, not OpenClaw's wrapper: what memory_search found is
    # memory already, so the raw log holds the marker, not the recalled text again
    [log] = [g for g in unprocessed_logs(openclaw.vault) if g.session.endswith(":tool-1")]
    tools = [(t.role, t.tool) for t in log.turns if t.role in ("tool_call", "tool_result")]
    assert tools == [("tool_call", "memory_search"), ("tool_result", "memory_search")]
    call, result = (t for t in log.turns if t.tool)
    assert json.loads(call.content) == {"query": "dentist phone"}
    assert result.content == RECALLED_RESULT
    assert "Brightsmile Dental phone: 020 7946 0321" not in (openclaw.vault / log.path).read_text()


def test_memory_search_finds_what_an_earlier_session_said_before_consolidation(
    openclaw: OpenClaw,
) -> None:
    """No daemon has run: what the owner said a session ago is only in its raw log, and the
    model's memory_search (through OpenClaw's tool_call) still finds that turn, with the log's
    path that memory_get reads."""
    said = "The spare key is under the blue heron planter by the shed."
    openclaw.agent(said, "unconsolidated-search-1")
    asked = "Where did I say the spare key is?"
    wrapped = _memory_search(openclaw, "spare key heron planter", asked, "unconsolidated-search-2")
    result = wrapped["result"]["details"]
    turns = [hit for hit in result["results"] if hit["kind"] == "turn"]
    assert [hit["snippet"] for hit in turns] == [f"User: {said}"], result
    [log] = [
        g
        for g in unprocessed_logs(openclaw.vault)
        if g.session.endswith(":unconsolidated-search-1")
    ]
    assert turns[0]["path"] == log.path and turns[0]["turn"] == 1
    assert turns[0]["provenance"]["originClass"] == "owner"
    assert turns[0]["provenance"]["sessionKind"] == "interactive"


def test_a_turn_retried_after_model_errors_is_logged_once(openclaw: OpenClaw) -> None:
    """The model server fails twice (503) before it answers: OpenClaw retries the run and ends
    each attempt with agent_end and the same user message; the log holds the turn once."""
    said = "The boiler engineer comes on Thursday at eight."
    openclaw.model.fail_next = 2
    done, _ = openclaw.agent(said, "retried-1")
    assert REPLY in done.stdout
    assert openclaw.model.fail_next == 0  # both failures were met
    logs = [g for g in unprocessed_logs(openclaw.vault) if g.session.endswith(":retried-1")]
    assert [(t.role, t.content) for g in logs for t in g.turns] == [
        ("user", said),
        ("assistant", REPLY),
    ]


def test_the_next_turn_is_not_shown_its_own_history_again(openclaw: OpenClaw) -> None:
    """OpenClaw sends a session's earlier turns, tool results too, as the next turn's history
    (each ``agent --local`` turn in a new process): that turn's recalled block repeats none of
    them, while another session recalls them as recent turns."""
    note = openclaw.home / "shipment.txt"
    note.write_text("Parcel ZX-4471 left the Dunmore depot at 06:40.\n")
    openclaw.model.next_tool_call = ("tool_call", {"id": "read", "args": {"path": str(note)}})
    openclaw.agent("Where is my parcel?", "wm-1")
    logged = _session_log(openclaw.vault, "agent:main:explicit:wm-1")
    assert "tool_result: " in logged and "ZX-4471 left the Dunmore depot" in logged
    _, prompt = openclaw.agent("Is my parcel on schedule?", "wm-1")
    block = _memory_block(prompt)
    history = prompt.replace(block, "")
    assert "ZX-4471 left the Dunmore depot" in history and "Where is my parcel?" in history
    assert "ZX-4471" not in block and "Where is my parcel?" not in block, block
    assert "This session:" not in block
    _, other = openclaw.agent("Is my parcel on schedule?", "wm-2")
    assert "Where is my parcel?" in _memory_block(other)  # not that session's history


QUINN, QUINN_EMAIL = "Quinn's email is quinn@zephyrine.example.", "quinn@zephyrine.example"


def _memory_block(prompt: str) -> str:
    if "<memoryclaw>" not in prompt:
        return ""
    return prompt[prompt.index("<memoryclaw>") : prompt.index("</memoryclaw>")]


def test_each_agent_recalls_only_its_own_memories(openclaw: OpenClaw) -> None:
    """Two agents of one OpenClaw (``agents.entries``) share the vault: a fact agent ``main``
    was told, logged by the plugin's agent_end and consolidated, reaches ``main``'s next
    prompt and never the other agent's."""
    openclaw.patch({"agents": {"entries": {"main": {"default": True}, "ops": {}}}})
    openclaw.agent(QUINN, "quinn-1", agent="main")
    logged = _session_log(openclaw.vault, "agent:main:explicit:quinn-1")
    assert f"user: {QUINN}" in logged
    consolidated = openclaw.memoryclaw("consolidate", "--all", "--json")
    assert consolidated.returncode == 0, consolidated.stderr
    assert json.loads(consolidated.stdout)["facts_added"] >= 1

    _, other = openclaw.agent("What is Quinn's email?", "quinn-ops", agent="ops")
    assert QUINN_EMAIL not in other
    _, own = openclaw.agent("What is Quinn's email?", "quinn-2", agent="main")
    assert QUINN_EMAIL in _memory_block(own)
    # both are the owner's direct conversations: owner-level notes reach either agent
    _, dentist = openclaw.agent("What is my dentist's phone number?", "dentist-ops", agent="ops")
    assert "020 7946 0321" in _memory_block(dentist)
    ops_log = [g for g in unprocessed_logs(openclaw.vault) if g.session.endswith("dentist-ops")]
    assert [g.meta["agent"] for g in ops_log] == ["ops"]


def test_an_instruction_reaches_the_next_session_before_any_consolidation(
    openclaw: OpenClaw,
) -> None:
    """No daemon and no `consolidate`: the instruction is still only in the raw log of the
    session it was said in, yet the next session's model request leads with it."""
    said = "From now on, sign every answer as Captain Walrus."
    openclaw.agent(said, "unconsolidated-1")
    logged = [
        g for g in unprocessed_logs(openclaw.vault) if any(said in t.content for t in g.turns)
    ]
    assert logged, "the plugin did not log the turn"
    _, prompt = openclaw.agent("Which bicycle suits a hilly commute?", "unconsolidated-2")
    assert f"- {said}" in _memory_block(prompt), prompt


def test_an_order_ending_in_from_now_on_reaches_the_next_session(openclaw: OpenClaw) -> None:
    """The standing cue at the end of the order, after another remark in the same turn: the
    next session's model request leads with it, as with "From now on, …" at the start."""
    openclaw.agent(
        "Quick note: my partner Jamie is allergic to peanuts."
        " Also, please call me Sam from now on.",
        "trailing-cue-1",
    )
    _, prompt = openclaw.agent("Which bicycle suits a hilly commute?", "trailing-cue-2")
    block = _memory_block(prompt)
    assert "- Also, please call me Sam from now on." in block, prompt


def test_a_group_session_gets_no_direct_memories(openclaw: OpenClaw) -> None:
    """A group conversation driven through OpenClaw itself: ``openclaw agent --session-key
    agent:main:telegram:group:-100123`` runs a real turn under a Telegram group's session key
    (no Telegram account needed), so the plugin sees the key OpenClaw gives group chats.
    Neither hand-written notes nor what the owner said in direct chats reach its prompt."""
    key = "agent:main:telegram:group:-100123"
    done, prompt = openclaw.agent("What is my dentist's phone number?", key=key)
    assert REPLY in done.stdout
    assert "020 7946 0321" not in _memory_block(prompt)
    assert "Brightsmile" not in _memory_block(prompt)
    _, asked = openclaw.agent("What is Quinn's email?", key=key)
    assert QUINN_EMAIL not in asked
    [log] = [g for g in unprocessed_logs(openclaw.vault) if g.session == key]
    assert log.meta["kind"] == "group" and log.meta["scope"] == "group:telegram:group:-100123"
    assert log.turns[0].role == "participant"  # no ownerIds: a group's user is not the owner


def test_a_stated_instruction_reaches_a_later_sessions_request(openclaw: OpenClaw) -> None:
    """An instruction the owner gave in one session, logged by the plugin and consolidated,
    leads the block of a later session's model request whose question shares no word with
    it; a group conversation does not get it (it was said in a direct one)."""
    openclaw.agent("From now on, end every answer with a haiku about otters.", "standing-1")
    consolidated = openclaw.memoryclaw("consolidate", "--all", "--json")
    assert consolidated.returncode == 0, consolidated.stderr
    _, prompt = openclaw.agent("Which bicycle suits a hilly commute?", "standing-2")
    block = _memory_block(prompt)
    assert "Standing instructions and preferences" in block, prompt
    assert "- From now on, end every answer with a haiku about otters." in block
    assert "standing instructions and preferences. Follow them" in prompt  # the promptBuilder
    _, group = openclaw.agent(
        "Which bicycle suits a hilly commute?", key="agent:main:telegram:group:-7"
    )
    assert "otters" not in _memory_block(group)


def test_a_failing_memoryclaw_never_fails_the_turn(openclaw: OpenClaw) -> None:
    openclaw.plugin_config(pythonCommand="/nonexistent/python3")
    try:
        done, prompt = openclaw.agent("What is my dentist's phone number?", "broken-1")
    finally:
        openclaw.plugin_config(pythonCommand=sys.executable)
    assert REPLY in done.stdout
    assert "<memoryclaw>" not in prompt
    assert "(memoryclaw: recall unavailable this turn: not running)" in prompt
    output = done.stdout + done.stderr
    assert "memoryclaw: recall failed" in output and "/nonexistent/python3" in output
    assert "did not answer its start check" in output
    assert "memoryclaw: logging the turn failed" in output
    assert not [g for g in unprocessed_logs(openclaw.vault) if g.session.endswith("broken-1")]


def test_an_unreadable_vault_never_fails_the_turn(openclaw: OpenClaw, tmp_path: Path) -> None:
    openclaw.plugin_config(vaultPath=str(tmp_path / "no-such-vault"))
    try:
        done, prompt = openclaw.agent("What is my dentist's phone number?", "broken-2")
    finally:
        openclaw.plugin_config(vaultPath=str(openclaw.vault.resolve()))
    assert REPLY in done.stdout and "<memoryclaw>" not in prompt
    assert "(memoryclaw: recall unavailable this turn: error)" in prompt
    assert "memoryclaw: recall failed" in done.stdout + done.stderr
    assert "no-such-vault" in done.stdout + done.stderr


def test_a_memoryclaw_folder_where_openclaw_runs_does_not_stop_recall_or_capture(
    openclaw: OpenClaw, tmp_path: Path
) -> None:
    """OpenClaw run from a folder holding a ``memoryclaw/`` directory (a clone of another
    version, here one that cannot be imported): ``python -m memoryclaw`` would import it."""
    clone = tmp_path / "clone"
    (clone / "memoryclaw").mkdir(parents=True)
    (clone / "memoryclaw" / "__init__.py").write_text("raise ImportError('not this one')\n")
    done, prompt = openclaw.agent("What is my dentist's phone number?", "cwd-1", cwd=clone)
    assert "Brightsmile Dental phone 020 7946 0321" in _memory_block(prompt)
    assert "recall unavailable" not in prompt
    assert "cannot import name" not in done.stdout + done.stderr
    logged = _session_log(openclaw.vault, "agent:main:explicit:cwd-1")
    assert "user: What is my dentist's phone number?" in logged


def _recall_failures(openclaw: OpenClaw) -> int:
    done = openclaw.memoryclaw("stats", "--json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["metrics"]["recall_failures"])


def test_a_recall_that_times_out_says_so_in_the_prompt_and_in_stats(
    openclaw: OpenClaw, tmp_path: Path
) -> None:
    """A server slower to start than ``startTimeoutMs``: the turn goes on, its prompt says
    recall was unavailable, and the server, once up, counts the failure in ``stats``."""
    slow = tmp_path / "slow-python"
    slow.write_text(f'#!/bin/sh\nsleep 3\nexec "{sys.executable}" "$@"\n')
    slow.chmod(0o755)
    before = _recall_failures(openclaw)
    openclaw.plugin_config(pythonCommand=str(slow), startTimeoutMs=1000, recallTimeoutMs=500)
    try:
        done, prompt = openclaw.agent("What is my dentist's phone number?", "slow-1")
    finally:
        openclaw.plugin_config(
            pythonCommand=sys.executable, startTimeoutMs=8000, recallTimeoutMs=2000
        )
    assert REPLY in done.stdout and "<memoryclaw>" not in prompt
    assert "(memoryclaw: recall unavailable this turn: timeout)" in prompt
    assert "timed out after 1000 ms" in done.stdout + done.stderr
    # the server outlives the one-shot OpenClaw process until it has answered what it was sent
    for _ in range(60):
        if _recall_failures(openclaw) > before:
            break
        time.sleep(0.5)
    assert _recall_failures(openclaw) == before + 1


def test_plugin_module_against_a_real_server(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault)
    done = subprocess.run(
        [str(node_bin() / "node"), "--test", str(PLUGIN / "test" / "plugin.test.mjs")],
        env={
            "PATH": f"{node_bin()}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "MEMORYCLAW_PYTHON": sys.executable,
            "MEMORYCLAW_TEST_VAULT": str(vault),
            # the memoryclaw under test, where it is not the installed one
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout or "ℹ fail 0" in done.stdout


def test_uninstall_gives_the_slot_back(openclaw: OpenClaw) -> None:
    removed = openclaw.memoryclaw("openclaw", "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert "plugins.slots.memory" in removed.stdout and "memory-core" in removed.stdout
    plugins = json.loads(openclaw.run("config", "get", "plugins", "--json").stdout)
    assert plugins.get("slots", {}).get("memory") in (None, "memory-core")
    assert "memoryclaw" not in plugins.get("entries", {})
    again = openclaw.memoryclaw("openclaw", "uninstall")
    assert again.returncode == 1 and "not installed" in again.stderr


def _memory_search(openclaw: OpenClaw, query: str, message: str, session: str) -> Any:
    """What OpenClaw's tool_call sent back to the model for the memory_search of ``query``
    that the model asked for on receiving ``message``: the tool's result, wrapped."""
    search = {"id": "memory_search", "args": {"query": query}}
    openclaw.model.next_tool_call = ("tool_call", search)
    seen = len(openclaw.model.chat_requests())
    openclaw.agent(message, session)
    requests = openclaw.model.chat_requests()[seen:]
    assert len(requests) >= 2, "the tool result never went back to the model"
    tool_messages = [m for m in requests[1]["messages"] if m.get("role") == "tool"]
    assert tool_messages, requests[1]["messages"][-2:]
    content = tool_messages[-1]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    return json.loads(text[text.index("{") :])  # tool_call wraps the tool's own result
