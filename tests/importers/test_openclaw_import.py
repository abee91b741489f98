"""Day-one memory, end to end: a real OpenClaw (npm, with its own memory-core) builds up a
workspace and session transcripts, ``memoryclaw openclaw import`` brings them in, and the
next turn with memoryclaw as OpenClaw's memory recalls them.

As in ``test_openclaw_plugin.py``, the only stand-in is the model (``tests/loopback_model.py``);
the agent writes ``MEMORY.md`` and a daily note with OpenClaw's own ``write`` tool, called
through the loopback model, as a real model would when asked to remember something.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from memoryclaw.importers.transcripts import turn_identity
from memoryclaw.vault.logformat import parse_log
from tests.serve.test_openclaw_plugin import REPLY, OpenClaw

from ..loopback_model import LoopbackModel
from ..openclaw_env import ensure_openclaw, openclaw_env

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


WEEK = [
    "The plumber quoted 340 pounds for replacing the radiator valve.",
    "ok",
    "Where is my parcel?",  # the model reads a file with OpenClaw's read tool
    "My wifi password is Tr0ub4dor&3, and the router is in the hall.",
    "ok",
]
LATER = ["ok", "The valve arrived on Tuesday.", "Book the boiler service for Thursday."]


def _vault_turns(vault: Path) -> Counter[tuple[str, str, str]]:
    """Each turn the vault's raw logs (open and processed) hold, by session and by what
    was said (as the importer compares them), with how many times."""
    found: Counter[tuple[str, str, str]] = Counter()
    for path in [*(vault / "logs").glob("*.md"), *(vault / "logs" / "processed").glob("*.md")]:
        log = parse_log(path.read_text(), path.name)
        said = [turn.content for turn in log.turns]
        for n, turn in enumerate(log.turns):
            speaker, words = turn_identity(
                turn.role, turn.content, turn.tool, said[max(0, n - 2) : n]
            )
            found[(str(log.session), speaker, words)] += 1
    return found


def _memoryclaw(claw: OpenClaw, vault: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args, "--json"],
        env=claw.env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_importing_after_or_before_installing_adds_no_turn_twice(tmp_path: Path) -> None:
    """A week of turns through the real plugin, some consolidated, then ``openclaw import``
    of the same OpenClaw: nothing is added twice.  Three vaults of one OpenClaw: ``after``
    had the plugin from the start and imports at the end; ``before`` imported first, then
    had the plugin; ``only`` never had it and only imports.  All three end with each turn
    once, the same turns, and each thing said in one episode."""
    home = tmp_path / "home"
    home.mkdir()
    after, before, only = tmp_path / "after", tmp_path / "before", tmp_path / "only"
    model = LoopbackModel(reply=REPLY).start()
    try:
        claw = OpenClaw(home, after, openclaw_env(home, ensure_openclaw()), model)
        claw.use_model()
        for vault in (after, before, only):
            assert claw.memoryclaw("--vault", str(vault), "init").returncode == 0
        installed = claw.memoryclaw("openclaw", "install", "--json")
        assert installed.returncode == 0, installed.stderr
        parcel = home / "parcel.txt"
        parcel.write_text("Parcel ZX-4471 left the Dunmore depot at 06:40.\n")
        for n, said in enumerate(WEEK):
            if said.startswith("Where"):
                model.next_tool_call = ("tool_call", {"id": "read", "args": {"path": str(parcel)}})
            claw.agent(said, "week-1")
            if n == 3:  # the first days' logs are consolidated: processed logs, episodes
                assert _memoryclaw(claw, after, "consolidate", "--all")["logs_processed"]
        captured = _vault_turns(after)
        assert sum(captured.values()) >= 2 * len(WEEK) + 2  # each turn, a reply, the tool's two

        first = _memoryclaw(claw, before, "openclaw", "import")  # before installing
        assert first["turns"] == sum(captured.values())
        claw.plugin_config(vaultPath=str(before))  # ... then installing
        for said in LATER[:2]:
            claw.agent(said, "week-1")
        claw.agent(LATER[2], "week-2")

        imported = _memoryclaw(claw, after, "openclaw", "import")
        assert imported["known_turns"] == sum(captured.values())
        assert imported["turns"] == 2 * len(LATER)  # what the plugin logged into the other
        again = _memoryclaw(claw, before, "openclaw", "import")
        assert again["turns"] == 0 and again["known_turns"] == first["turns"] + 2 * len(LATER)
        _memoryclaw(claw, only, "openclaw", "import")

        turns = {vault.name: _vault_turns(vault) for vault in (after, before, only)}
        assert turns["after"] == turns["before"] == turns["only"]
        said = Counter(words for (_, _, words), n in turns["after"].items() for _ in range(n))
        assert said["ok"] == 3  # said three times in one session, each kept
        assert said[REPLY] == len(WEEK) + len(LATER)  # the model's reply, once a turn
        for vault in (after, before, only):
            _memoryclaw(claw, vault, "consolidate", "--all")
            episodes = [p.read_text() for p in (vault / "episodes").glob("*.md")]
            assert "Tr0ub4dor&3" not in "".join(episodes)
            for said in [WEEK[0], *LATER[1:]]:
                assert sum(said in text for text in episodes) == 1, (vault.name, said)
    finally:
        model.stop()
