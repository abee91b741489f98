"""Day-one memory, end to end: a real OpenClaw (npm, with its own memory-core) builds up a
workspace and session transcripts, ``memoryclaw openclaw import`` brings them in, and the
next turn with memoryclaw as OpenClaw's memory recalls them.

As in ``test_openclaw_plugin.py``, the only stand-in is the model (``tests/loopback_model.py``);
the agent writes ``MEMORY.md`` and a daily note with OpenClaw's own ``write`` tool, called
through the loopback model, as a real model would when asked to remember something.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .loopback_model import LoopbackModel
from .openclaw_env import ensure_openclaw, openclaw_env
from .test_openclaw_plugin import REPLY, OpenClaw

MEMORY = (
    "# Memory\n\n"
    "## People\n"
    "- Locksmith: Keyworth Locks, 020 7946 0555\n"
    "- Wren (birthday): 1990-04-12\n\n"
    "## Preferences\n"
    "- Prefers window seats on long flights\n"
)
DAILY = "# Boiler service booked\n\n- Hearthwarm Heating engineer comes Thursday at 8am\n"
SAID = "The plumber quoted 340 pounds for replacing the radiator valve."


def _write(path: str, content: str) -> tuple[str, dict[str, Any]]:
    """The loopback model's next answer: OpenClaw's ``write`` tool, through its tool_call."""
    return ("tool_call", {"id": "write", "args": {"path": path, "content": content}})


def _block(prompt: str) -> str:
    if "<memoryclaw>" not in prompt:
        return ""
    return prompt[prompt.index("<memoryclaw>") : prompt.index("</memoryclaw>")]


def _imported(claw: OpenClaw, *args: str) -> dict[str, Any]:
    done = claw.memoryclaw("openclaw", "import", "--json", *args)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_a_real_openclaw_workspace_is_imported_once_and_recalled(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", tmp_path / "vault"
    home.mkdir()
    model = LoopbackModel(reply=REPLY).start()
    try:
        claw = OpenClaw(home, vault, openclaw_env(home, ensure_openclaw()), model)
        claw.use_model()
        # OpenClaw's own memory (memory-core) is active: the agent keeps its memory files
        model.next_tool_call = _write("MEMORY.md", MEMORY)
        claw.agent("Remember my locksmith, Wren's birthday and my seat preference.", "day-1")
        model.next_tool_call = _write("memory/2026-11-20.md", DAILY)
        claw.agent("Note that the boiler service is booked.", "day-2")
        claw.agent(SAID, "day-3")
        workspace = home / ".openclaw" / "workspace"
        assert (workspace / "MEMORY.md").read_text() == MEMORY
        assert (workspace / "memory" / "2026-11-20.md").is_file()

        assert claw.memoryclaw("init").returncode == 0
        dry = _imported(claw, "--dry-run")
        assert dry["dry_run"] and dry["added"] > 0 and not dry["files"]
        first = _imported(claw)
        assert first == {**first, "facts": 2, "notes": 4, "episodes": 2, "sessions": 3}
        assert first["turns"] >= 6 and first["unreadable_events"] == 0  # 3 users, 3 replies ...
        assert len(first["consolidation"]["logs_processed"]) == 3
        facts = (vault / "semantic" / "openclaw-main.md").read_text()
        line = "- Locksmith: Keyworth Locks, 020 7946 0555 <!-- source: openclaw:MEMORY.md:4;"
        assert line in facts
        daily = vault / "episodes" / "2026-11-20_12-00-00_imported-boiler-service-booked.md"
        assert "source: openclaw:memory/2026-11-20.md" in daily.read_text()
        [memory] = (vault / "episodes").glob("*_imported-memory-md-of-openclaw-agent-main.md")
        assert "- Prefers window seats on long flights\n" in memory.read_text()

        again = _imported(claw)
        assert again["added"] == 0 and not again["files"]
        assert again["known_items"] == 6 and again["known_episodes"] == 2
        assert again["known_turns"] == first["turns"]

        installed = claw.memoryclaw("openclaw", "install", "--json")
        assert installed.returncode == 0, installed.stderr
        assert any("MEMORY.md" in line for line in json.loads(installed.stdout)["existing_memory"])

        _, prompt = claw.agent("What is the locksmith's phone number?", "after-1")
        block = _block(prompt)
        assert "MEMORY.md of OpenClaw agent main" in block
        assert "Locksmith: Keyworth Locks, 020 7946 0555" in block
        assert "recalled automatically" in prompt  # the memory capability's promptBuilder
        _, prompt = claw.agent("When is Wren's birthday?", "after-3")
        assert "1990-04-12" in _block(prompt)
        _, prompt = claw.agent("How much did the plumber quote for the radiator valve?", "after-2")
        assert "340 pounds" in _block(prompt)  # a turn from an imported session transcript
    finally:
        model.stop()
