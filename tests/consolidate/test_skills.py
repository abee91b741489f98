"""Skill suggestion from repeated tool sequences, review, and the active skill at retrieval."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import frontmatter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw import NotFoundError, ParseError, Vault
from memoryclaw.consolidate.skills import (
    list_skills,
    pattern_counts,
    suggest_skills,
    tool_sequences,
)
from memoryclaw.vault.logformat import Turn, dump_log, parse_log

EMAIL = ("lookup_contact", "draft_email", "send_email")
NAME = "lookup-contact-draft-email-send-email"
SKILL = f"skills/{NAME}/SKILL.md"
START = datetime(2025, 5, 1, 9, 0, 0, tzinfo=timezone.utc)
PEOPLE = ["John", "Priya", "Ana", "Bo", "Carmen", "Dev", "Eve", "Femi", "Gus", "Hana"]


def _session(vault: Vault, number: int, tools: Sequence[str] = EMAIL, channel: str = "cli") -> None:
    """One closed session: a user request answered by ``tools`` in order, then a reply."""
    person = PEOPLE[number % len(PEOPLE)]
    moment = START + timedelta(days=number)
    session = f"s-{channel}-{number}"

    def turn(role: str, text: str, tool: str | None = None) -> None:
        nonlocal moment
        moment += timedelta(seconds=5)
        vault.log_turn(session, role, text, tool=tool, channel=channel, timestamp=moment)

    turn("user", f"Please email {person} the weekly projectX update")
    for tool in tools:
        args: dict[str, object]
        result: dict[str, object]
        if tool == "lookup_contact":
            args, result = {"name": person}, {"email": f"{person.lower()}@example.com"}
        elif tool == "draft_email":
            args = {"to": f"{person.lower()}@example.com", "subject": "projectX update"}
            result = {"draft_id": f"dr-{number}"}
        elif tool == "send_email":
            args, result = {"draft_id": f"dr-{number}"}, {"status": "sent"}
        else:
            args, result = {"query": person}, {"ok": True}
        turn("tool_call", json.dumps(args), tool)
        turn("tool_result", json.dumps(result), tool)
    turn("assistant", "Done.")
    vault.end_session(session)


def _noise(vault: Vault) -> None:
    """Sessions that must not become skills: rare pairs, single calls, no calls at all."""
    _session(vault, 40, ("search_flights", "book_flight"), channel="telegram")
    _session(vault, 41, ("search_flights", "book_flight"), channel="telegram")
    _session(vault, 42, ("create_reminder",), channel="telegram")
    _session(vault, 43, (), channel="telegram")


def _emails(vault: Vault, count: int, first: int = 0) -> None:
    for number in range(first, first + count):
        _session(vault, number)


def _metadata_line(text: str) -> str:
    return next(line for line in text.split("\n") if line.startswith("metadata:"))


# ------------------------------------------------------------------ suggestion


def test_no_draft_below_the_threshold(empty_vault: Vault) -> None:
    _emails(empty_vault, 6)
    _noise(empty_vault)
    assert suggest_skills(empty_vault.root, empty_vault.settings) == []
    assert empty_vault.skills() == []


def test_a_draft_at_the_threshold(empty_vault: Vault) -> None:
    _emails(empty_vault, 7)
    _noise(empty_vault)
    assert suggest_skills(empty_vault.root, empty_vault.settings) == [SKILL]
    [skill] = empty_vault.skills()
    assert (skill.name, skill.status, skill.occurrences) == (NAME, "draft", 7)
    assert skill.pattern == EMAIL
    assert skill.todos >= 3
    text = (empty_vault.root / SKILL).read_text(encoding="utf-8")
    for heading in ("## When to use", "## Steps", "## Parameters", "## Examples"):
        assert heading in text
    assert "1. Call `lookup_contact` with `name`." in text
    assert "2. Call `draft_email` with `to`, `subject`." in text
    assert "matched the result of `lookup_contact` in 3 of 3 examples" in text
    assert 'lookup_contact {"name": "Eve"}' in text  # examples are the newest logs
    doc = frontmatter.loads(text)  # what any other frontmatter reader sees
    assert doc["name"] == NAME
    metadata: Any = doc["metadata"]
    own = metadata["memoryclaw"]
    assert own["status"] == "draft" and own["occurrences"] == 7 and own["pattern"] == list(EMAIL)
    assert len(own["examples"]) == 3
    assert all((empty_vault.root / path).is_file() for path in own["examples"])
    assert len(_metadata_line(text)) == len(_metadata_line(text).strip())  # one line


def test_a_second_run_writes_nothing(empty_vault: Vault) -> None:
    _emails(empty_vault, 7)
    suggest_skills(empty_vault.root, empty_vault.settings)
    before = (empty_vault.root / SKILL).read_bytes()
    _emails(empty_vault, 2, first=7)
    assert suggest_skills(empty_vault.root, empty_vault.settings) == []
    assert (empty_vault.root / SKILL).read_bytes() == before


def test_secrets_in_arguments_are_redacted(empty_vault: Vault) -> None:
    token = "sk-" + "a1b2c3d4" * 4
    privacy = dataclasses.replace(empty_vault.settings.privacy, redact_secrets=False)
    raw = Vault(empty_vault.root, dataclasses.replace(empty_vault.settings, privacy=privacy))
    for number in range(7):
        moment = START + timedelta(days=number)
        for role, text, tool in [
            ("user", f"deploy the site with {token}", None),
            ("tool_call", json.dumps({"key": token}), "build"),
            ("tool_call", "{}", "deploy"),
        ]:
            moment += timedelta(seconds=1)
            raw.log_turn(f"d{number}", role, text, tool=tool, timestamp=moment)
    assert token in next((empty_vault.root / "logs").glob("*.md")).read_text(encoding="utf-8")
    [path] = suggest_skills(empty_vault.root, empty_vault.settings)
    text = (empty_vault.root / path).read_text(encoding="utf-8")
    assert token not in text and "[REDACTED:api-key]" in text


def test_secret_looking_argument_values_are_never_copied(empty_vault: Vault) -> None:
    """A value under a key that names a secret stays out of the draft, whatever it looks
    like; a key in any other value is redacted by its format."""
    stripe = "sk_" + "live_" + "FaKe0123456789fAkE0123ab"
    privacy = dataclasses.replace(empty_vault.settings.privacy, redact_secrets=False)
    raw = Vault(empty_vault.root, dataclasses.replace(empty_vault.settings, privacy=privacy))
    arguments = {
        "to": "ops@example.com",
        "smtpPass": "blue harbour",
        "auth": {"clientSecret": "quiet river"},
        "notes": [f"charge with {stripe}"],
    }
    for number in range(7):
        moment = START + timedelta(days=number)
        for role, text, tool in [
            ("user", "mail the report to ops", None),
            ("tool_call", json.dumps(arguments), "send_mail"),
            ("tool_call", "{}", "archive"),
        ]:
            moment += timedelta(seconds=1)
            raw.log_turn(f"m{number}", role, text, tool=tool, timestamp=moment)
    [path] = suggest_skills(empty_vault.root, empty_vault.settings)
    text = (empty_vault.root / path).read_text(encoding="utf-8")
    for secret in ("blue harbour", "quiet river", stripe):
        assert secret not in text
    assert "ops@example.com" in text and "smtpPass" in text


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ((("draft_email", "send_email"), 5), [SKILL]),
        ((("lookup_contact", "draft_email", "send_email", "archive"), 3), [SKILL]),
        (
            (("lookup_contact", "draft_email", "send_email", "archive"), 7),
            [f"skills/{NAME}-archive/SKILL.md"],
        ),
    ],
    ids=["sub-pattern-not-separate", "rare-longer-pattern", "longest-pattern-wins"],
)
def test_only_the_longest_frequent_pattern_is_suggested(
    empty_vault: Vault, extra: tuple[tuple[str, ...], int], expected: list[str]
) -> None:
    tools, count = extra
    for number in range(20, 20 + count):
        _session(empty_vault, number, tools)
    _emails(empty_vault, 7)
    assert suggest_skills(empty_vault.root, empty_vault.settings) == expected


def test_an_existing_skill_blocks_its_pattern_and_its_parts(vault: Vault) -> None:
    # the sample vault's approved send-project-update covers lookup -> draft -> send
    for number in range(7):
        _session(vault, number)
        _session(vault, 20 + number, ("draft_email", "send_email"))
    assert suggest_skills(vault.root, vault.settings) == []


def test_a_rejected_skill_is_not_suggested_again(empty_vault: Vault) -> None:
    _emails(empty_vault, 7)
    suggest_skills(empty_vault.root, empty_vault.settings)
    assert empty_vault.reject_skill(NAME).status == "rejected"
    _emails(empty_vault, 3, first=7)
    assert suggest_skills(empty_vault.root, empty_vault.settings) == []
    assert [s.status for s in empty_vault.skills()] == ["rejected"]


def test_a_taken_name_gets_a_suffix_and_the_old_file_is_untouched(empty_vault: Vault) -> None:
    mine = empty_vault.root / SKILL
    mine.parent.mkdir(parents=True)
    mine.write_text("# My own notes on email\n", encoding="utf-8")
    _emails(empty_vault, 7)
    assert suggest_skills(empty_vault.root, empty_vault.settings) == [f"skills/{NAME}-2/SKILL.md"]
    assert mine.read_text(encoding="utf-8") == "# My own notes on email\n"


def test_consolidation_suggests_from_processed_logs(empty_vault: Vault) -> None:
    _emails(empty_vault, 7)
    report = empty_vault.consolidate(all_logs=True)
    assert report.skills_suggested == [SKILL]
    assert report.as_dict()["skills_suggested"] == [SKILL]
    doc = frontmatter.loads((empty_vault.root / SKILL).read_text(encoding="utf-8"))
    metadata: Any = doc["metadata"]
    examples: list[str] = metadata["memoryclaw"]["examples"]
    assert all(p.startswith("logs/processed/") for p in examples)
    assert empty_vault.consolidate(all_logs=True).skills_suggested == []


# ---------------------------------------------------------------------- review


def test_approve_changes_only_the_metadata_line(empty_vault: Vault) -> None:
    _emails(empty_vault, 7)
    suggest_skills(empty_vault.root, empty_vault.settings)
    before = (empty_vault.root / SKILL).read_text(encoding="utf-8")
    done = empty_vault.approve_skill(NAME)
    after = (empty_vault.root / SKILL).read_text(encoding="utf-8")
    assert done.status == "approved"
    assert done.todos == before.count("TODO") > 0
    changed = [(a, b) for a, b in zip(before.split("\n"), after.split("\n")) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("metadata:")
    assert json.loads(changed[0][1].removeprefix("metadata: "))["memoryclaw"] == {
        **json.loads(changed[0][0].removeprefix("metadata: "))["memoryclaw"],
        "status": "approved",
    }
    assert len(before) + len("approved") - len("draft") == len(after)
    assert empty_vault.approve_skill(NAME).status == "approved"  # again: nothing changes
    assert (empty_vault.root / SKILL).read_text(encoding="utf-8") == after


def test_a_hand_written_skill_counts_as_approved(vault: Vault) -> None:
    path = vault.root / "skills/send-project-update/SKILL.md"
    (vault.root / "skills/notes").mkdir()
    plain = vault.root / "skills/notes/SKILL.md"
    plain.write_text("# Notes\n\nWhen asked for notes, read them.\n", encoding="utf-8")
    assert {s.name: s.status for s in vault.skills()} == {
        "notes": "approved",
        "send-project-update": "approved",
    }
    before = path.read_bytes()
    assert vault.approve_skill("send-project-update").status == "approved"
    assert path.read_bytes() == before
    assert vault.reject_skill("notes").status == "rejected"
    assert plain.read_text(encoding="utf-8").endswith(
        "---\n# Notes\n\nWhen asked for notes, read them.\n"
    )


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_status_change_keeps_other_metadata_and_line_ends(vault: Vault, newline: str) -> None:
    lines = [
        "---",
        "name: mail",
        'metadata: {"openclaw": {"emoji": "📧"}, "memoryclaw": {"status": "draft", "x": 1}}',
        "---",
        "# Mail",
        "",
    ]
    path = vault.root / "skills/mail/SKILL.md"
    path.parent.mkdir()
    path.write_bytes(newline.join(lines).encode("utf-8"))
    assert vault.reject_skill("mail").status == "rejected"
    after = path.read_bytes().decode("utf-8").split(newline)
    assert after[:2] == lines[:2] and after[3:] == lines[3:]
    assert json.loads(after[2].removeprefix("metadata: ")) == {
        "openclaw": {"emoji": "📧"},
        "memoryclaw": {"status": "rejected", "x": 1},
    }


def test_multi_line_metadata_is_listed_but_not_rewritten(vault: Vault) -> None:
    path = vault.root / "skills/mail/SKILL.md"
    path.parent.mkdir()
    text = "---\nname: mail\nmetadata:\n  memoryclaw:\n    status: draft\n---\n# Mail\n"
    path.write_text(text, encoding="utf-8")
    assert {s.name: s.status for s in vault.skills()}["mail"] == "draft"
    with pytest.raises(ParseError, match="one line"):
        vault.approve_skill("mail")
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("action", ["approve_skill", "reject_skill"], ids=["approve", "reject"])
@pytest.mark.parametrize(
    "name", ["no-such-skill", "../skills", "send-project-update/SKILL.md"], ids=str
)
def test_an_unknown_skill_is_not_found(vault: Vault, action: str, name: str) -> None:
    with pytest.raises(NotFoundError):
        getattr(vault, action)(name)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("---\nname: x\n", "never closed"),
        ("---\nname: x\nmetadata: {memoryclaw: {status: maybe}}\n---\n", "status"),
        ("---\nmetadata: {memoryclaw: {pattern: lookup}}\n---\n", "pattern"),
        ("---\nmetadata: [1, 2]\n---\n", "metadata"),
        ("---\nmetadata: '{not json'\n---\n", "JSON"),
        ("\x00binary", "binary"),
    ],
    ids=["unclosed", "bad-status", "bad-pattern", "metadata-list", "metadata-text", "binary"],
)
def test_a_malformed_skill_is_reported_not_fatal(vault: Vault, content: str, reason: str) -> None:
    (vault.root / "skills/broken").mkdir()
    (vault.root / "skills/broken/SKILL.md").write_text(content, encoding="utf-8")
    found = {s.name: s for s in vault.skills()}
    broken = found["broken"]
    assert broken.status == "invalid"
    assert broken.error is not None
    assert "skills/broken/SKILL.md" in broken.error and reason in broken.error
    assert found["send-project-update"].status == "approved"
    assert suggest_skills(vault.root, vault.settings) == []
    assert vault.retrieve("email John the projectX update").working_memory["active_skill"]
    with pytest.raises(ParseError):
        vault.approve_skill("broken")


def test_a_skill_linked_from_outside_the_vault_is_not_read(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    source = vault.root / "skills/send-project-update/SKILL.md"
    (outside / "SKILL.md").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    source.unlink()
    (vault.root / "skills/linked").symlink_to(outside, target_is_directory=True)
    found = {s.name: s for s in vault.skills()}
    assert found["linked"].status == "invalid"
    assert "outside the vault" in (found["linked"].error or "")
    assert vault.retrieve("email John the projectX update").working_memory["active_skill"] is None


# ---------------------------------------------------------------------- active


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("email John the projectX update", "send-project-update"),
        ("share the weekly status report with Priya", "send-project-update"),
        ("what is John's phone number", None),
        ("update", None),
    ],
    ids=["email-update", "status-report", "one-hit", "one-keyword"],
)
def test_the_active_skill_is_the_approved_match(
    vault: Vault, query: str, expected: str | None
) -> None:
    assert vault.retrieve(query).working_memory["active_skill"] == expected


@pytest.mark.parametrize(
    ("decide", "active"),
    [(None, None), ("approve_skill", NAME), ("reject_skill", None)],
    ids=["draft", "approved", "rejected"],
)
def test_only_an_approved_draft_becomes_active(
    empty_vault: Vault, decide: str | None, active: str | None
) -> None:
    _emails(empty_vault, 7)
    suggest_skills(empty_vault.root, empty_vault.settings)
    if decide is not None:
        getattr(empty_vault, decide)(NAME)
    payload = empty_vault.retrieve("please email Carmen the weekly projectX update")
    assert payload.working_memory["active_skill"] == active
    assert payload.as_dict()["working_memory"]["active_skill"] == active


# ------------------------------------------------------------------------- CLI


def _cli(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_lists_approves_and_rejects(empty_vault: Vault) -> None:
    _emails(empty_vault, 7)
    suggest_skills(empty_vault.root, empty_vault.settings)
    root = empty_vault.root
    listed = _cli(root, "skills", "--json")
    assert listed.returncode == 0, listed.stderr
    [skill] = json.loads(listed.stdout)["skills"]
    assert (skill["name"], skill["status"], skill["occurrences"]) == (NAME, "draft", 7)
    assert skill["pattern"] == list(EMAIL)
    text = _cli(root, "skills")
    assert text.returncode == 0 and NAME in text.stdout and "draft" in text.stdout
    approved = _cli(root, "skills", "approve", NAME, "--json")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["status"] == "approved"
    assert json.loads(approved.stdout)["todos"] > 0
    rejected = _cli(root, "skills", "reject", NAME)
    assert rejected.returncode == 0 and rejected.stdout.startswith("rejected")
    assert "TODO" in rejected.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [(("skills", "approve", "nope"), 1), (("skills", "approve"), 2), (("skills", "bless"), 2)],
    ids=["unknown-name", "missing-name", "unknown-action"],
)
def test_cli_skill_errors(vault_dir: Path, args: tuple[str, ...], code: int) -> None:
    proc = _cli(vault_dir, *args)
    assert proc.returncode == code
    assert proc.stdout == ""
    if code == 1:
        assert proc.stderr.count("\n") == 1 and "nope" in proc.stderr


def test_cli_reports_a_malformed_skill_on_stderr(vault_dir: Path) -> None:
    (vault_dir / "skills/broken").mkdir()
    (vault_dir / "skills/broken/SKILL.md").write_text("---\nname: x\n", encoding="utf-8")
    proc = _cli(vault_dir, "skills")
    assert proc.returncode == 0
    assert "send-project-update" in proc.stdout
    assert "skills/broken/SKILL.md" in proc.stderr


# -------------------------------------------------------------------- properties

_TOOLS = st.sampled_from(["a", "b", "c", "d"])
_REQUEST = st.lists(_TOOLS, max_size=6)
_LOG = st.lists(_REQUEST, max_size=4)


def _turns(requests: list[list[str]]) -> list[Turn]:
    moment = START
    turns = []
    for request in requests:
        for role, tool in [("user", None), *(("tool_call", t) for t in request)]:
            moment += timedelta(seconds=1)
            turns.append(Turn(role, moment, "{}", tool=tool))
    return turns


def _contains(whole: Sequence[str], part: Sequence[str]) -> bool:
    return any(tuple(whole[i : i + len(part)]) == tuple(part) for i in range(len(whole)))


@given(_LOG)
@settings(max_examples=200, deadline=None)
def test_tool_sequences_are_the_requests_calls(requests: list[list[str]]) -> None:
    text = dump_log({"id": "log-x", "session": "s"}, _turns(requests))
    log = parse_log(text, "logs/x.md")
    assert tool_sequences(log) == [tuple(r) for r in requests if r]


@given(st.lists(_LOG, max_size=5))
@settings(max_examples=60, deadline=None)
def test_pattern_counts_match_a_brute_force_count(logs: list[list[list[str]]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "logs/processed").mkdir(parents=True)
        for number, requests in enumerate(logs):
            where = "logs/processed" if number % 2 else "logs"
            name = f"{where}/2025-01-0{number + 1}_00-00-00_cli_raw.md"
            meta = {"id": f"log-{number}", "session": f"s{number}"}
            (root / name).write_text(dump_log(meta, _turns(requests)), encoding="utf-8")
        counts = pattern_counts(root)
        assert pattern_counts(root) == counts
        assert list(counts) == sorted(counts, key=lambda p: (-len(counts[p]), -len(p), p))
        for pattern, paths in counts.items():
            assert len(pattern) >= 2
            assert len(paths) == len(set(paths)) <= len(logs)
            expected = sum(any(_contains(r, pattern) for r in requests) for requests in logs)
            assert len(paths) == expected


def test_list_skills_on_a_vault_without_skills(tmp_path: Path) -> None:
    assert list_skills(tmp_path) == []
    assert pattern_counts(tmp_path) == {}
