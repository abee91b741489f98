"""The Vault API: opening, init, ingest, get, forget, stats, doctor, audit."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from memoryclaw import InvalidInputError, NotFoundError, RecallContext, Vault, VaultNotFoundError
from memoryclaw.vault.config import CONFIG_FILE
from memoryclaw.vault.episodes import episode_handle

from ..conftest import NOW

JOHN_ID = "ep-20250408-143210-email-john"


def test_open_uses_env_then_explicit(vault_dir: Path, tmp_path: Path) -> None:
    with Vault.open(env={"MEMORYCLAW_VAULT": str(vault_dir)}) as opened:
        assert opened.root == vault_dir.resolve()
    with pytest.raises(VaultNotFoundError):
        Vault.open(tmp_path / "nope", env={"MEMORYCLAW_VAULT": str(vault_dir)})


def test_settings_come_from_vault_and_env(vault_dir: Path) -> None:
    env = {"MEMORYCLAW_RETRIEVAL_MAXRESULTS": "2"}
    with Vault(vault_dir, env=env) as opened:
        assert opened.settings.retrieval.max_results == 2
        assert len(opened.search("falcon", now=NOW).results) == 2


def test_init_creates_layout_and_keeps_existing_config(tmp_path: Path) -> None:
    root = tmp_path / "new"
    Vault.init(root, env={}).close()
    for folder in ("episodes", "semantic", "logs", "logs/processed", "skills"):
        assert (root / folder).is_dir()
        assert stat.S_IMODE((root / folder).stat().st_mode) == 0o700
    assert (root / ".gitignore").read_text() == ".memoryclaw/\n"
    (root / CONFIG_FILE).write_text("retrieval:\n  maxResults: 9\n")
    with Vault.init(root, env={}) as again:
        assert again.settings.retrieval.max_results == 9


def test_init_with_git_makes_a_repository_that_ignores_the_index(tmp_path: Path) -> None:
    root = tmp_path / "versioned"
    with Vault.init(root, git=True, env={}) as opened:
        opened.log_turn("s", "user", "hello")
        opened.reindex()
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".memoryclaw" not in status
    assert "logs/" in status


def test_init_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInputError):
        Vault.init(tmp_path / "file")


def test_ingest_groups_sessions_and_closes_logs(empty_vault: Vault) -> None:
    records = [
        {"session": "a", "role": "user", "content": "a1", "timestamp": "2025-01-01T10:00:00Z"},
        {
            "session": "b",
            "role": "user",
            "content": "b1",
            "timestamp": "2025-01-01T10:00:01Z",
            "name": "Bo",
        },
        {"session": "a", "role": "assistant", "content": "a2", "timestamp": "2025-01-01T10:00:02Z"},
    ]
    report = empty_vault.ingest(records)
    assert report.turns == 3 and report.sessions == ("a", "b") and len(report.logs) == 2
    from memoryclaw.vault.rawlogs import unprocessed_logs

    logs = {log.session: log for log in unprocessed_logs(empty_vault.root)}
    assert [t.content for t in logs["a"].turns] == ["a1", "a2"]
    assert logs["b"].turns[0].name == "Bo"
    assert all(log.meta["closed"] is True for log in logs.values())


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"role": "user", "content": "x"}, "session"),
        ({"session": "s", "role": "user", "content": 3}, "content"),
        ({"session": "s", "role": "user", "content": "x", "timestamp": "yesterday"}, "timestamp"),
        ({"session": "s", "role": "user", "content": "x", "mood": "happy"}, "mood"),
        ({"session": "s", "role": "USER", "content": "x"}, "role"),
        ({"session": "s", "role": "user", "content": "x", "kind": "broadcast"}, "kind"),
        ({"session": "s", "role": "user", "content": "x", "sender": 42}, "sender"),
    ],
    ids=[
        "missing-session",
        "content-type",
        "bad-timestamp",
        "unknown-key",
        "bad-role",
        "bad-kind",
        "sender-type",
    ],
)
def test_ingest_rejects_bad_records_before_writing(
    empty_vault: Vault, record: dict[str, object], field: str
) -> None:
    good = {"session": "s", "role": "user", "content": "fine"}
    with pytest.raises(InvalidInputError) as info:
        empty_vault.ingest([good, record], source="turns.jsonl")
    assert info.value.field == field and info.value.line == 2
    assert "turns.jsonl:2" in str(info.value)
    assert list((empty_vault.root / "logs").glob("*.md")) == []


def test_get_episode_and_fact(vault: Vault) -> None:
    episode = vault.get(JOHN_ID)
    assert episode["kind"] == "episode" and "john@example.com" in episode["details"]
    assert episode["source_turns"] == [1, 12]
    fact_id = vault.search("John", now=NOW).facts[0].id
    fact = vault.get(fact_id)
    assert fact["kind"] == "fact" and fact["entity"] == "John"
    with pytest.raises(NotFoundError):
        vault.get("ep-nope")


def test_forget_episode_deletes_file_and_index_row(vault: Vault) -> None:
    path = vault.root / vault.get(JOHN_ID)["path"]
    report = vault.forget(episode_id=JOHN_ID)
    assert report.episodes == (JOHN_ID,) and not path.exists()
    assert JOHN_ID not in [r.id for r in vault.search("email John", now=NOW, limit=20).results]


def test_forget_fact_removes_only_its_line(vault: Vault) -> None:
    contacts = vault.root / "semantic" / "contacts.md"
    before = contacts.read_text().split("\n")
    fact = next(f for f in vault.search("John", now=NOW).facts if f.path == "semantic/contacts.md")
    vault.forget(fact_id=fact.id)
    after = contacts.read_text().split("\n")
    assert after == before[: fact.line - 1] + before[fact.line :]
    assert fact.id not in [f.id for f in vault.search("John", now=NOW).facts]


def test_forget_table_fact_blanks_only_its_cell(vault: Vault) -> None:
    """The row keeps its other cells; the same fact written as a line of the file
    (``- Ana: ana@example.com``) goes with it, as a forgotten line's twin does."""
    contacts = vault.root / "semantic" / "contacts.md"
    vault.refresh()
    [fact] = vault.index.fact_rows("entity = 'Ana' AND form = 'table' AND field = 'email'", [])
    row_before = contacts.read_text().split("\n")[fact["line"] - 1]
    assert "- Ana: ana@example.com" in contacts.read_text()
    vault.forget(fact_id=fact["id"])
    [row_after] = [r for r in contacts.read_text().split("\n") if r.startswith("| Ana |")]
    assert fact["value"] in row_before and fact["value"] not in row_after
    assert row_after.split("|")[:3] == row_before.split("|")[:3]  # entity and role stay
    assert "ana@example.com" not in contacts.read_text()
    remaining = vault.index.fact_rows("entity = 'Ana' AND form = 'table'", [])
    assert remaining and all(f["field"] != "email" for f in remaining)


def test_forget_dry_run_changes_nothing(vault: Vault) -> None:
    before = sorted(p.read_bytes() for p in vault.root.rglob("*.md"))
    report = vault.forget("dentist", dry_run=True)
    assert report.dry_run and report.episodes
    assert sorted(p.read_bytes() for p in vault.root.rglob("*.md")) == before


def test_forget_needs_exactly_one_selector(vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        vault.forget()
    with pytest.raises(InvalidInputError):
        vault.forget("x", episode_id=JOHN_ID)
    with pytest.raises(NotFoundError):
        vault.forget(episode_id="../../etc/passwd")


def test_reindex_from_scratch_restores_identical_results(vault: Vault, vault_dir: Path) -> None:
    queries = ["what did I email John about", "flight to Lisbon", "marketing budget", "dentist"]
    before = [vault.search(q, now=NOW).as_dict() for q in queries]
    vault.close()
    shutil.rmtree(vault_dir / ".memoryclaw")
    with Vault(vault_dir, env={}) as fresh:
        fresh.reindex()
        after = [fresh.search(q, now=NOW).as_dict() for q in queries]
    for doc in before + after:
        doc.pop("took_ms")
    assert after == before


def test_stats_counts(vault: Vault) -> None:
    data = vault.stats()
    assert data["episodes"] == len(list((vault.root / "episodes").glob("*.md")))
    assert data["logs_unprocessed"] == 3 and data["skills"] == 1
    assert data["files_with_errors"] == 0 and data["index_bytes"] > 0


def test_doctor_reports_bad_files_and_extras(vault: Vault) -> None:
    (vault.root / "episodes" / "broken.md").write_text("---\nsummary: [\n---\n")
    (vault.root / "logs" / "broken_raw.md").write_text("no header here\n")
    checks = vault.doctor()
    details = [c["detail"] for c in checks]
    assert any("episodes/broken.md:2" in d for d in details)
    assert any("logs/broken_raw.md" in d for d in details)
    assert any("memoryclaw[" in d for d in details) or all(
        c["status"] == "ok" for c in checks if c["check"].startswith("extra:")
    )
    assert not [c for c in checks if c["status"] == "error"]


def test_doctor_flags_a_corrupt_index(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    vault.close()
    (vault_dir / ".memoryclaw" / "index.db").write_bytes(b"this is not sqlite" * 100)
    for name in ("index.db-wal", "index.db-shm"):
        (vault_dir / ".memoryclaw" / name).unlink(missing_ok=True)
    with Vault(vault_dir, env={}) as broken:
        checks = broken.doctor()
    assert any(c["check"] == "index" and c["status"] == "error" for c in checks)
    with Vault(vault_dir, env={}) as repaired:
        repaired.reindex(full=True)
        assert repaired.search("John", now=NOW).results


def test_audit_lists_recent_machine_facts(vault: Vault) -> None:
    data = vault.audit(days=60, now=NOW)
    assert {e["id"] for e in data["episodes"]} >= {"ep-20251021-170244-projectx-retro"}
    assert all(f["source"] != "hand" for f in data["facts"])


# ------------------------------------------------------------------------ boundaries

GROUP = "agent:main:telegram:group:-1001"
DIRECT = RecallContext(agent="main", session="agent:main:main")
IN_GROUP = RecallContext(agent="main", session=GROUP)
WORK = RecallContext(agent="work", session="agent:work:main")


def _remember(vault: Vault, session: str, text: str, **extra: str) -> None:
    vault.log_turn(session, "user", text, timestamp=NOW, **extra)


def test_each_agent_recalls_only_its_own_memories(vault: Vault) -> None:
    # Said in earlier sessions: a session's own open log is in its host's history, not recalled.
    _remember(vault, "agent:main:earlier", "My locker code at the gym is 4471")
    _remember(vault, "agent:work:earlier", "The staging cluster is called bluefin")
    for _ in range(2):  # recalled from the raw log, then from the episode
        main = vault.retrieve("locker code bluefin cluster", context=DIRECT).context
        work = vault.retrieve("locker code bluefin cluster", context=WORK).context
        assert "4471" in main and "bluefin" not in main
        assert "bluefin" in work and "4471" not in work
        vault.consolidate(all_logs=True)
    everything = vault.retrieve("locker code bluefin cluster").context
    assert "4471" in everything and "bluefin" in everything


def test_agents_share_when_configured(vault_dir: Path) -> None:
    (vault_dir / CONFIG_FILE).write_text("scopes:\n  shareAcrossAgents: true\n", "utf-8")
    with Vault(vault_dir, env={}) as vault:
        _remember(vault, "agent:work:main", "The staging cluster is called bluefin")
        vault.consolidate(all_logs=True)
        assert "bluefin" in vault.retrieve("staging cluster", context=DIRECT).context


def test_direct_memories_stay_out_of_groups_and_group_memories_in_them(vault: Vault) -> None:
    _remember(vault, "agent:main:main", "My blood type is AB negative")
    vault.log_turn(
        GROUP, "assistant", "The group picnic moved to the blood bank park", timestamp=NOW
    )
    vault.consolidate(all_logs=True)
    direct = vault.retrieve("blood type picnic", context=DIRECT)
    group = vault.retrieve("blood type picnic", context=IN_GROUP)
    assert "AB negative" in direct.context and "picnic" not in direct.context
    assert "picnic" in group.context and "AB negative" not in group.context
    assert "dentist" not in vault.retrieve("dentist", context=IN_GROUP).context.lower()
    elsewhere = RecallContext(session="agent:main:telegram:group:-2002")
    assert vault.retrieve("blood type picnic", context=elsewhere).context == ""


def test_results_say_which_rule_admitted_them_and_what_was_withheld(vault: Vault) -> None:
    _remember(vault, "agent:main:main", "My blood type is AB negative")
    vault.consolidate(all_logs=True)
    found = vault.search("blood type dentist", context=IN_GROUP, explain_scope=True)
    assert found.results == ()
    reasons = {w.reason for w in found.withheld or ()}
    assert "made in a direct conversation; not recalled where other people read" in reasons
    assert "owner-level memory; not recalled where other people read" in reasons
    direct = vault.search("blood type dentist", context=DIRECT).as_dict()
    rules = {r["admitted_by"] for r in direct["results"]}
    assert rules == {
        "made in a direct conversation with the owner",
        "owner-level memory, recalled in the owner's direct conversations",
    }
    assert direct["context"] == {"agent": "main", "session": "agent:main:main", "kind": None}
    assert "withheld" not in direct


def test_a_requester_cannot_get_or_read_what_it_may_not_see(vault: Vault) -> None:
    _remember(vault, "agent:main:main", "My blood type is AB negative")
    vault.consolidate(all_logs=True)
    hit = vault.search("blood type", context=DIRECT).results[0]
    assert vault.get(hit.id, context=DIRECT)["scope"] == "direct"
    handle = episode_handle(hit.id)  # recall's short name for it reads it back alike
    assert handle and vault.get(handle, context=DIRECT)["id"] == hit.id
    for ident in (hit.id, handle):
        with pytest.raises(NotFoundError):
            vault.get(ident, context=IN_GROUP)
    with pytest.raises(NotFoundError):
        vault.read(hit.path, context=IN_GROUP)
    with pytest.raises(NotFoundError):  # not an indexed memory: the owner's terminal only
        vault.read("memoryclaw.yaml", context=DIRECT)
    assert "AB negative" in vault.read(hit.path, context=DIRECT)["text"]
    assert "AB negative" in vault.read(hit.path)["text"]


def test_doctor_counts_memories_without_scope(vault: Vault) -> None:
    (check,) = [c for c in vault.doctor() if c["check"] == "scopes"]
    episodes = vault.index.counts()["episodes"]
    assert check["status"] == "info"
    assert check["detail"].startswith(f"{episodes} episodes and ")
    assert "owner-level" in check["detail"]
