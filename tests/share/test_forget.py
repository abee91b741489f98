"""Forgetting removes a memory from every place memoryclaw wrote it, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryclaw.share.history import MEMORY_FOLDERS
from tests.test_bad_input import run as mc

SESSION = "s-health"
SECRET_WORD = "diabetes"
DOCTOR_EMAIL = "dr.silva@clinic.example"
TURNS = [
    ("user", f"I was diagnosed with {SECRET_WORD} today; email Silva at {DOCTOR_EMAIL}"),
    ("assistant", f"Sorry to hear about the {SECRET_WORD}. I will email Silva."),
    ("tool_call", json.dumps({"to": DOCTOR_EMAIL, "subject": f"{SECRET_WORD} plan"})),
]


def ok(vault: Path, *args: str, stdin: str | None = None) -> Any:
    """Run a ``--json`` command that must succeed; its document."""
    proc = mc(vault, *args, "--json", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def git(vault: Path, *args: str) -> str:
    """Output of a git command in the vault."""
    return subprocess.run(
        ["git", "-C", str(vault), *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def vault_bytes(vault: Path) -> bytes:
    """Every file of the vault but .git (the index included), concatenated."""
    files = [p for p in sorted(vault.rglob("*")) if p.is_file() and ".git" not in p.parts]
    return b"\n".join(p.read_bytes() for p in files)


@pytest.fixture
def git_vault(tmp_path: Path) -> Path:
    """A git vault in which one consolidated session told of an illness and an email."""
    vault = tmp_path / "vault"
    subprocess.run([sys.executable, "-m", "memoryclaw", "init", "--git", str(vault)], check=True)
    git(vault, "config", "user.email", "t@example.com")
    git(vault, "config", "user.name", "t")
    lines = [
        json.dumps({"session": SESSION, "role": role, "content": text, "tool": "send_email"})
        if role == "tool_call"
        else json.dumps({"session": SESSION, "role": role, "content": text})
        for role, text in TURNS
    ]
    ok(vault, "ingest", "-", stdin="\n".join(lines) + "\n")
    other = json.dumps({"session": "s-other", "role": "user", "content": "book a table at Lumi"})
    ok(vault, "ingest", "-", stdin=other + "\n")
    report = ok(vault, "consolidate", "--all")
    assert report["commit"] and len(report["episodes"]) == 2
    assert DOCTOR_EMAIL.encode() in vault_bytes(vault / "semantic")
    return vault


def test_forget_removes_every_trace_and_commits(git_vault: Path) -> None:
    proc = mc(git_vault, "forget", SECRET_WORD, "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "git history still holds" in proc.stdout and "--purge-history" in proc.stdout
    everything = vault_bytes(git_vault)
    assert SECRET_WORD.encode() not in everything
    assert DOCTOR_EMAIL.encode() not in everything
    assert ok(git_vault, "search", SECRET_WORD)["results"] == []
    assert b"Lumi" in everything  # the other session's memory stays
    assert git(git_vault, "status", "--porcelain", "--", *MEMORY_FOLDERS) == ""
    assert git(git_vault, "log", "-1", "--format=%s").startswith("memoryclaw: forget 1 episode ")
    processed = next((git_vault / "logs" / "processed").glob("*s-health*.md"), None) or next(
        p
        for p in (git_vault / "logs" / "processed").glob("*.md")
        if b"[forgotten]" in p.read_bytes()
    )
    rel = processed.relative_to(git_vault).as_posix()
    request = json.dumps({"id": 1, "method": "get", "params": {"path": rel}}) + "\n"
    served = mc(git_vault, "serve", "--stdio", stdin=request)
    assert SECRET_WORD not in served.stdout and "[forgotten]" in served.stdout
    assert SECRET_WORD in git(git_vault, "log", "-p", "--all")  # until purged, as it says


def test_forget_purge_history_rewrites_every_commit(git_vault: Path) -> None:
    refused = mc(git_vault, "forget", SECRET_WORD, "--purge-history")
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    report = ok(git_vault, "forget", SECRET_WORD, "--purge-history", "--yes")
    assert report["history_purged"] >= 2
    assert SECRET_WORD not in git(git_vault, "log", "-p", "--all")
    assert DOCTOR_EMAIL not in git(git_vault, "log", "-p", "--all")
    assert "Lumi" in git(git_vault, "log", "-p", "--all")
    assert git(git_vault, "status", "--porcelain", "--", *MEMORY_FOLDERS) == ""


def _episode(vault: Path, name: str, summary: str) -> str:
    rel = f"episodes/{name}"
    (vault / rel).write_text(f"---\nid: ep-shared\nsummary: {summary}\n---\nbody\n")
    return rel


def test_shared_episode_ids_are_reported_and_forget_asks(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "memoryclaw", "init", str(vault)], check=True)
    first = _episode(vault, "a.md", "tea with Ana")
    second = _episode(vault, "b.md", "coffee with Bo")
    doctor = mc(vault, "doctor", "--json")
    assert f"{first}: episode id ep-shared is also used by {second}" in doctor.stdout
    audit = ok(vault, "audit")
    assert {e["path"] for e in audit["errors"]} == {first, second}
    refused = mc(vault, "forget", "--episode", "ep-shared")
    assert refused.returncode == 1
    assert first in refused.stderr and second in refused.stderr and "--yes" in refused.stderr
    assert (vault / first).exists() and (vault / second).exists()
    report = ok(vault, "forget", "--episode", "ep-shared", "--yes")
    assert report["files_deleted"] == [first, second]
    assert not (vault / first).exists() and not (vault / second).exists()
