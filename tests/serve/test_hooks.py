"""The fail-open Python hooks: retrieval before the model call, logging after it."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryclaw import Vault
from memoryclaw.serve.hooks import MemoryHooks
from memoryclaw.vault.rawlogs import unprocessed_logs


def test_before_model_returns_the_memory_block(vault_dir: Path) -> None:
    with MemoryHooks(vault_dir, env={}) as hooks:
        context = hooks.before_model("What did I email John about?")
        assert context is not None and context.startswith("<memoryclaw>")
        assert "John email john@example.com" in context
        assert hooks.before_model("the and of") is None  # nothing to inject


def test_after_response_logs_the_exchange_in_order(vault_dir: Path) -> None:
    calls = [{"name": "send_email", "arguments": {"to": "john@example.com"}, "result": "sent"}]
    with MemoryHooks(vault_dir, channel="telegram", env={}) as hooks:
        assert hooks.after_response(
            "agent:main:telegram:9",
            user="Email John my token sk-abcdefghijklmnopqrstuvwx",
            assistant="Done.",
            tool_calls=calls,
            user_name="Alex",
        )
        assert hooks.end_session("agent:main:telegram:9")
    [log] = [g for g in unprocessed_logs(vault_dir) if g.session == "agent:main:telegram:9"]
    assert [(t.role, t.tool) for t in log.turns] == [
        ("user", None),
        ("tool_call", "send_email"),
        ("tool_result", "send_email"),
        ("assistant", None),
    ]
    assert log.turns[0].name == "Alex" and "sk-abc" not in log.turns[0].content
    assert log.turns[1].content == '{"to": "john@example.com"}'
    assert log.meta["channel"] == "telegram" and log.meta["closed"] is True


def test_missing_vault_fails_open_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memoryclaw.hooks")
    with MemoryHooks(tmp_path / "nowhere", env={}) as hooks:
        assert hooks.before_model("email John") is None
        assert hooks.after_response("s", user="hi") is False
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and all("continuing without memory" in m for m in messages)
    assert not (tmp_path / "nowhere").exists()


def test_bad_turn_fails_open(vault_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="memoryclaw.hooks")
    with MemoryHooks(vault_dir, env={}) as hooks:
        assert hooks.after_response("", user="no session id") is False
    assert "session" in caplog.records[0].getMessage()


_HOLD_LOGS_LOCK = """
import sys, time
from pathlib import Path
from memoryclaw.vault.files import file_lock
with file_lock(Path(sys.argv[1]), "logs"):
    print("held", flush=True)
    time.sleep(4)
"""


def test_slow_vault_times_out_without_blocking(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memoryclaw.hooks")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOGS_LOCK, str(vault_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with MemoryHooks(vault_dir, timeout=0.5, env={}) as hooks:
            started = time.monotonic()
            assert hooks.after_response("slow", user="waiting on a lock") is False
            assert time.monotonic() - started < 2.0
            assert "took over 0.5s" in caplog.records[0].getMessage()
    finally:
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    # the timed-out write still finished once the lock was free: nothing was lost
    assert any(g.session == "slow" for g in unprocessed_logs(vault_dir))


def test_recovers_after_the_vault_comes_back(vault_dir: Path, tmp_path: Path) -> None:
    with MemoryHooks(vault_dir, env={}) as hooks:
        assert hooks.before_model("email John") is not None
        shutil.move(vault_dir, tmp_path / "away")
        assert hooks.before_model("email John") is None
        shutil.move(tmp_path / "away", vault_dir)
        assert hooks.before_model("email John") is not None


AGENT_LOOP = Path(__file__).resolve().parents[2] / "plugins" / "python" / "agent_loop.py"


@pytest.mark.parametrize("vault_ok", [True, False], ids=["vault", "missing-vault"])
def test_example_agent_loop_recalls_and_logs(
    vault_dir: Path, tmp_path: Path, vault_ok: bool
) -> None:
    """plugins/python/agent_loop.py against a loopback stand-in for an OpenAI-compatible server."""
    from ..loopback_model import LoopbackModel, prompt_text

    model = LoopbackModel(reply="It is 020 7946 0321.").start()
    vault = vault_dir if vault_ok else tmp_path / "gone"
    try:
        done = subprocess.run(
            [
                sys.executable,
                str(AGENT_LOOP),
                "--vault",
                str(vault),
                "--base-url",
                model.base_url,
                "--model",
                "loopback-model",
                "--session",
                "loop-1",
                "-m",
                "What is my dentist's phone number?",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        model.stop()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is 020 7946 0321."
    [request] = model.chat_requests()
    sent = prompt_text(request)
    if vault_ok:
        assert "</memoryclaw>" in sent and "Brightsmile Dental phone 020 7946 0321" in sent
        [log] = [g for g in unprocessed_logs(vault_dir) if g.session == "loop-1"]
        assert [(t.role, t.content) for t in log.turns] == [
            ("user", "What is my dentist's phone number?"),
            ("assistant", "It is 020 7946 0321."),
        ]
        assert log.meta["closed"]
    else:
        assert "</memoryclaw>" not in sent and "gone" in done.stderr  # a warning, not a failure


# --------------------------------------------------------------------- scopes

QUINN = "Quinn's email is quinn@zephyrine.example."
QUINN_EMAIL = "quinn@zephyrine.example"
ZED = "Zed's email is zed@grouphost.example."
ZED_EMAIL = "zed@grouphost.example"
GROUP_KEY = "agent:main:telegram:group:-1001"


def _consolidate(vault_dir: Path) -> None:
    with Vault(vault_dir, env={}) as vault:
        vault.consolidate(all_logs=True)


def _say(hooks: MemoryHooks, session: str, text: str, sender: str | None = None) -> None:
    assert hooks.after_response(session, user=text, assistant="Noted.", sender=sender)
    assert hooks.end_session(session)


@pytest.mark.parametrize("share", [False, True], ids=["agents-apart", "shareAcrossAgents"])
def test_one_agents_memories_are_not_recalled_for_another(vault_dir: Path, share: bool) -> None:
    if share:
        with (vault_dir / "memoryclaw.yaml").open("a") as config:
            config.write("scopes:\n  shareAcrossAgents: true\n")
    with (
        MemoryHooks(vault_dir, agent="alpha", env={}) as alpha,
        MemoryHooks(vault_dir, agent="beta", env={}) as beta,
    ):
        _say(alpha, "agent:alpha:main", QUINN)
        _consolidate(vault_dir)
        question = "What is Quinn's email?"
        assert QUINN_EMAIL in (alpha.before_model(question, session="agent:alpha:main") or "")
        seen_by_beta = beta.before_model(question, session="agent:beta:main") or ""
        assert (QUINN_EMAIL in seen_by_beta) is share
        # owner-level (hand-written) memories reach both agents' direct conversations
        assert "020 7946 0321" in (beta.before_model("my dentist's phone number") or "")


@pytest.mark.parametrize(
    ("kind", "group_session"),
    [(None, GROUP_KEY), ("group", "room-7")],
    ids=["session-key-says-group", "kind-says-group"],
)
def test_a_direct_fact_stays_out_of_group_recall(
    vault_dir: Path, kind: str | None, group_session: str
) -> None:
    with MemoryHooks(vault_dir, agent="main", env={}) as direct:
        _say(direct, "agent:main:main", QUINN)
    _consolidate(vault_dir)
    question = "What is Quinn's email?"
    with MemoryHooks(vault_dir, agent="main", env={}) as direct:
        payload = direct.retrieve(question, session="agent:main:main")
        assert payload is not None and QUINN_EMAIL in payload.context
        assert any(f.value == QUINN_EMAIL for f in payload.facts)
    with MemoryHooks(vault_dir, agent="main", kind=kind, env={}) as group:
        payload = group.retrieve(question, session=group_session)
        assert payload is not None and QUINN_EMAIL not in payload.context
        assert not payload.facts and not payload.episodes


def test_a_participants_fact_waits_in_pending_and_is_not_recalled(vault_dir: Path) -> None:
    with MemoryHooks(vault_dir, agent="main", env={}) as group:
        _say(group, GROUP_KEY, ZED, sender="tg:9")
        [log] = [g for g in unprocessed_logs(vault_dir) if g.session == GROUP_KEY]
        assert log.turns[0].role == "participant" and log.meta["kind"] == "group"
        _consolidate(vault_dir)
        pending = (vault_dir / "semantic" / "_pending.md").read_text()
        assert f"- UNTRUSTED Zed: {ZED_EMAIL} (said by [tg:9] in group:" in pending
        for path in (vault_dir / "semantic").glob("*.md"):
            if path.name != "_pending.md":
                assert ZED_EMAIL not in path.read_text(), path
        for hooks, session in [(group, GROUP_KEY), (group, "agent:main:main")]:
            payload = hooks.retrieve("What is Zed's email?", session=session)
            assert payload is not None
            assert not [f for f in payload.facts if ZED_EMAIL in f.value], session
    with Vault(vault_dir, env={}) as vault:
        assert not [f for f in vault.search("Zed email").facts if ZED_EMAIL in f.value]


def test_working_memory_reflects_the_previous_turns_tool_result(vault_dir: Path) -> None:
    session = "agent:main:cli:wm"
    calls = [{"name": "draft_email", "arguments": {"to": "John"}, "result": "draft d-17 created"}]
    with MemoryHooks(vault_dir, agent="main", env={}) as hooks:
        first = hooks.retrieve("email John the projectX update", session=session)
        assert first is not None
        assert first.working_memory["plan"] == ["lookup_contact", "draft_email", "send_email"]
        assert hooks.after_response(
            session,
            user="email John the projectX update",
            assistant="Drafted.\nNext I will show you the draft",
            tool_calls=calls,
        )
        second = hooks.retrieve("send it", session=session)
        assert second is not None
        memory = second.working_memory
        assert memory["goal"] == "send it"
        assert memory["recent_observations"][:3] == [
            "assistant: Drafted. Next I will show you the draft",
            "draft_email: draft d-17 created",
            'draft_email call: {"to": "John"}',
        ]
        assert memory["facts"]["John email"] == "john@example.com"
        assert hooks.working_memory(session) == memory
        assert hooks.working_memory("another") == {
            "goal": "",
            "plan": [],
            "facts": {},
            "recent_observations": [],
            "active_skill": None,
        }
        unsessioned = hooks.retrieve("send it")
        assert unsessioned is not None  # no session: today's query-only working memory
        assert not any("d-17" in o for o in unsessioned.working_memory["recent_observations"])
        assert hooks.end_session(session)
        assert hooks.working_memory(session)["goal"] == ""


def test_a_new_hooks_object_rebuilds_a_sessions_working_memory(vault_dir: Path) -> None:
    """An agent restarted mid-task finds its last tool result in the session's open log (in
    its working memory; the block leaves it out, as the host sends it as history)."""
    calls = [{"name": "read_inbox", "arguments": {}, "result": "invoice 8841 is due Friday"}]
    with MemoryHooks(vault_dir, env={}) as hooks:
        assert hooks.after_response("s-9", user="what is due?", tool_calls=calls)
    with MemoryHooks(vault_dir, env={}) as restarted:
        memory = restarted.working_memory("s-9")
        assert memory["goal"] == "what is due?"
        assert memory["recent_observations"][0] == "read_inbox: invoice 8841 is due Friday"
        block = restarted.before_model("and after that?", session="s-9")
        assert "8841" not in (block or "")
        assert restarted.after_response("s-9", assistant="Next I will pay it")
        observed = restarted.working_memory("s-9")["recent_observations"]
        assert observed == [
            "assistant: Next I will pay it",
            "read_inbox: invoice 8841 is due Friday",
            "read_inbox call: {}",
        ]
