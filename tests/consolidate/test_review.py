"""The review queue: listing, approving and rejecting pending facts."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memoryclaw import NotFoundError, Vault
from memoryclaw.vault.pending import pending_facts


def test_sample_pending_facts_parse(vault: Vault) -> None:
    entries = {(p.mark, p.entity, p.field, p.value, p.was) for p in vault.pending()}
    assert entries == {
        ("CONFLICT", "Sarah", "email", "sarah@newco.com", "sarah@example.com"),
        ("LOW", "Ana", "birthday", "1992-06-14", None),
    }
    assert len({p.id for p in vault.pending()}) == 2


def test_approving_a_conflict_supersedes_the_old_value_and_loses_none(
    vault: Vault, vault_dir: Path
) -> None:
    contacts = (vault_dir / "semantic" / "contacts.md").read_text().splitlines()
    [conflict] = [p for p in vault.pending() if p.mark == "CONFLICT"]
    vault.approve_pending(conflict.id, now=datetime(2025, 10, 1, tzinfo=timezone.utc))
    after = (vault_dir / "semantic" / "contacts.md").read_text().splitlines()
    # every old line is still there (marked), and exactly one line was added: the new value
    assert len(after) == len(contacts) + 1
    old_bullet = next(i for i, line in enumerate(contacts) if line.startswith("- Sarah:"))
    assert after[old_bullet].startswith(contacts[old_bullet].removesuffix(" -->"))
    assert after[old_bullet].endswith("; superseded: 2025-10-01 by sarah@newco.com -->")
    assert after[old_bullet + 1].startswith("- Sarah: sarah@newco.com <!-- source: logs/")
    row = next(line for line in after if line.startswith("| Sarah |"))
    assert "superseded email: 2025-10-01 by sarah@newco.com" in row
    assert "Head of the campaign team" in row
    assert "sarah@newco.com" not in (vault_dir / "semantic" / "_pending.md").read_text()
    values = {f.value for f in vault.search("Sarah email").facts if f.entity == "Sarah"}
    assert "sarah@newco.com" in values and "sarah@example.com" not in values
    roles = {f.value for f in vault.search("Sarah role").facts if f.field == "role"}
    assert roles == {"Head of the campaign team"}  # only the row's email was superseded


def test_approving_a_doubtful_fact_files_it(vault: Vault, vault_dir: Path) -> None:
    [low] = [p for p in vault.pending() if p.mark == "LOW"]
    vault.approve_pending(low.id)
    assert (
        "- Ana (birthday): 1992-06-14 <!-- source: logs/processed/"
        in (vault_dir / "semantic" / "contacts.md").read_text()
    )
    assert [p.mark for p in vault.pending()] == ["CONFLICT"]


def test_rejecting_drops_only_that_line(vault: Vault, vault_dir: Path) -> None:
    before = (vault_dir / "semantic" / "_pending.md").read_text()
    [low] = [p for p in vault.pending() if p.mark == "LOW"]
    assert vault.reject_pending(low.id).value == "1992-06-14"
    after = (vault_dir / "semantic" / "_pending.md").read_text()
    assert after == before.replace(low.line + "\n", "")


@pytest.mark.parametrize("action", ["approve_pending", "reject_pending"], ids=["approve", "reject"])
def test_unknown_id_is_not_found(vault: Vault, action: str) -> None:
    with pytest.raises(NotFoundError, match="p-nope"):
        getattr(vault, action)("p-nope")


def test_no_pending_file_means_nothing_pending(empty_vault: Vault) -> None:
    assert pending_facts(empty_vault.root) == []


def test_cli_lists_and_decides(vault_dir: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "pending", *args],
            capture_output=True,
            text=True,
            check=False,
        )

    listed = json.loads(run("--json").stdout)["pending"]
    assert len(listed) == 2
    done = run("reject", listed[1]["id"])
    assert done.returncode == 0 and done.stdout.startswith(f"rejected {listed[1]['id']}")
    assert run("approve").returncode == 2  # usage: the ID is missing
    missing = run("approve", "p-0")
    assert missing.returncode == 1 and "no pending fact" in missing.stderr
