"""``memoryclaw profile``: what the owner said of themselves, and the standing instructions
and preferences in force."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memoryclaw import Vault


def _run(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "profile", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)


def test_profile_lists_what_is_in_force_and_not_what_was_taken_back(vault_dir: Path) -> None:
    (vault_dir / "semantic" / "instructions.md").write_text(
        "# Instructions\n\n"
        "- User (instruction): Always add yields when I ask about ETFs."
        " <!-- updated: 2025-01-01; superseded: 2025-02-01 by Stop adding yields. -->\n"
        "- User (instruction): Stop adding yields. <!-- updated: 2025-02-01 -->\n"
        "- User (instruction): Whenever I ask about recipes, list the calories first."
        " <!-- updated: 2025-03-01 -->\n",
        encoding="utf-8",
    )
    (vault_dir / "semantic" / "preferences.md").write_text(
        "- User (preference): I prefer herbal teas. <!-- updated: 2025-01-05 -->\n",
        encoding="utf-8",
    )
    doc = json.loads(_run(vault_dir, "--json").stdout)
    rows = [(r["kind"], r["value"], r["topic"]) for r in doc["standing"]]
    assert rows == [
        ("instruction", "Whenever I ask about recipes, list the calories first.", "recipes"),
        ("instruction", "Stop adding yields.", ""),
        ("preference", "I prefer herbal teas.", ""),
    ]
    text = _run(vault_dir).stdout
    assert text.startswith("instructions:\n- Whenever I ask about recipes")
    assert "[about recipes]" in text and "preferences:\n- I prefer herbal teas." in text
    assert "Always add yields" not in text


def test_profile_lists_what_the_owner_said_of_themselves(vault_dir: Path) -> None:
    """The owner's hand-written lines and the facts read from their own turns, current values
    only; not what was filed there of somebody else, and nothing of it to a group."""
    (vault_dir / "semantic" / "preferences.md").write_text(
        "# Food\n"
        "- Coffee: flat white with oat milk\n"
        "- Allergy: hazelnuts <!-- updated: 2025-01-01; superseded: 2025-02-01 by cashews -->\n"
        "- Allergy: cashews <!-- updated: 2025-02-01 -->\n"
        "- Bo (likes): pottery\n",
        encoding="utf-8",
    )
    (vault_dir / "semantic" / "facts.md").write_text(
        "- User (age): 34 <!-- updated: 2025-03-01 -->\n- Bo (age): 7\n", encoding="utf-8"
    )
    doc = json.loads(_run(vault_dir, "--json").stdout)
    about = [(r["entity"], r["field"], r["value"]) for r in doc["about"]]
    assert ("Coffee", "value", "flat white with oat milk") in about
    assert ("Allergy", "value", "cashews") in about
    assert ("User", "age", "34") in about
    assert not {value for _, _, value in about} & {"hazelnuts", "pottery", "7"}
    text = _run(vault_dir).stdout
    assert text.startswith("about you:\n")
    assert "- User (age): 34\n    2025-03-01  semantic/facts.md:1" in text
    group = json.loads(
        _run(vault_dir, "--json", "--session", "agent:main:telegram:group:-100").stdout
    )
    assert group["about"] == []


def test_profile_marks_what_is_not_yet_consolidated(vault_dir: Path) -> None:
    with Vault(vault_dir, env={}) as vault:
        vault.log_turn("agent:main:first", "user", "I'm 34 now, and I work as a nurse.")
        vault.log_turn("agent:main:first", "assistant", "Noted!")
    text = _run(vault_dir).stdout
    assert "- User (age): 34\n    " in text
    assert ", turn 1, not yet consolidated\n- User (job): nurse" in text
