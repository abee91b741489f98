"""Team vaults (``sharedVaults``): searched after the own vault, labelled, never written."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import ConfigError, ReadOnlyVaultError, RecallContext, Vault
from memoryclaw.share.teams import _interleave
from tests.cli.test_cli import clean_env, one_error_line, run, run_json
from tests.share.test_sync import _git

RELEASE = "ep-20250501-100000-release-process"
RELEASE_FILE = "episodes/2025-05-01_10-00-00_release-process.md"
EPISODE = f"""---
id: {RELEASE}
timestamp: 2025-05-01T10:00:00Z
summary: "Team agreed the Falcon release checklist: QA sign-off by Priya, then the changelog."
tags: [release, falcon, checklist]
confidence: high
entities: [Priya, Falcon]
---
**Details:**
- QA sign-off by Priya before any release
- Changelog in docs/CHANGELOG.md, written by the release captain
- Release captain rota: Dana in May, Ilse in June
"""
OPS_FILE = "episodes/2025-05-02_09-00-00_pager-rota.md"
OPS_EPISODE = """---
id: ep-20250502-090000-pager-rota
timestamp: 2025-05-02T09:00:00Z
summary: "The ops agent set the zebrafish pager rota: Dana first, Ilse second."
tags: [pager, zebrafish]
confidence: high
agent: ops
---
**Details:**
- Zebrafish pager rota: Dana first, Ilse second
"""
CONTACTS = "# Contacts\n\n- Dana: dana@team.example\n- Ilse: ilse@team.example\n"


def _team(root: Path, *, git: bool = True) -> Path:
    """A team vault: one episode, one agent-scoped episode, a contacts file; a git repo."""
    Vault.init(root, env={}).close()
    (root / RELEASE_FILE).write_text(EPISODE, encoding="utf-8")
    (root / OPS_FILE).write_text(OPS_EPISODE, encoding="utf-8")
    (root / "semantic" / "contacts.md").write_text(CONTACTS, encoding="utf-8")
    if git:
        _git(root, "init", "-q", "-b", "main")
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "team memory")
    return root


def _share(own: Path, *entries: str) -> None:
    config = own / "memoryclaw.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    config.write_text(text + "sharedVaults:\n" + "".join(f"  - {e}\n" for e in entries))


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, git's own included, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def team(tmp_path: Path) -> Path:
    return _team(tmp_path / "team")


@pytest.fixture
def shared(vault_dir: Path, team: Path) -> Path:
    """The sample vault with the team vault listed (by a path relative to it)."""
    _share(vault_dir, "../team")
    return vault_dir


def test_team_memories_are_found_labelled_and_ranked_after_ties(shared: Path) -> None:
    with Vault(shared, env={}) as vault:
        found = vault.search("falcon release checklist priya")
    theirs = [e for e in found.results if e.vault == "team"]
    assert [e.id for e in theirs] == [f"team:{RELEASE}"]
    assert theirs[0].path == f"team:{RELEASE_FILE}"
    assert all(e.vault is None and ":" not in e.id for e in found.results if e not in theirs)
    doc = found.as_dict()
    labelled = [r for r in doc["results"] if r.get("vault") == "team"]
    assert labelled and all(p["vault"] == "team" for p in labelled[0]["passages"])
    assert all("vault" not in r for r in doc["results"] if r not in labelled)
    # both vaults' best matches have relevance 1: the own vault's comes first
    assert found.results[0].vault is None and found.results[0].relevance == 1.0
    assert found.results[1].vault == "team"


def test_team_facts_say_whose_they_are_in_the_payload(shared: Path) -> None:
    with Vault(shared, env={}) as vault:
        payload = vault.retrieve("what is Dana's email?")
    assert "- [team] Dana email dana@team.example" in payload.context
    assert [f.vault for f in payload.facts] == ["team"]


def test_the_payload_quotes_team_lines_under_the_qualified_id(shared: Path) -> None:
    with Vault(shared, env={}) as vault:
        payload = vault.retrieve("who is the release captain in June?")
    assert f"- team:{RELEASE} (1 May 2025)" in payload.context
    assert "Release captain rota: Dana in May, Ilse in June" in payload.context
    assert payload.tokens <= payload.budget


def test_get_and_read_a_team_memory_by_its_qualified_name(shared: Path) -> None:
    with Vault(shared, env={}) as vault:
        memory = vault.get(f"team:{RELEASE}")
        assert memory["vault"] == "team" and memory["path"] == f"team:{RELEASE_FILE}"
        assert "release captain" in memory["details"]
        page = vault.read(f"team:{RELEASE_FILE}", 10, 2)
        assert page["path"] == f"team:{RELEASE_FILE}"
        assert page["text"].splitlines()[0] == "- QA sign-off by Priya before any release"
        with pytest.raises(Exception, match="no vault file"):
            vault.read("team:episodes/none.md")


def test_recall_rules_apply_to_team_memories(shared: Path) -> None:
    main = RecallContext(agent="main", session="agent:main:telegram:dm:1", kind="direct")
    with Vault(shared, env={}) as vault:
        owner = vault.search("zebrafish pager")
        agent = vault.search("zebrafish pager", context=main, explain_scope=True)
        assert [e.id for e in owner.results if e.vault] == ["team:ep-20250502-090000-pager-rota"]
        assert not [e for e in agent.results if e.vault]
        withheld = [w for w in agent.withheld or () if w.vault == "team"]
        assert withheld and "made by agent ops" in withheld[0].reason
        with pytest.raises(Exception, match="no memory"):
            vault.get("team:ep-20250502-090000-pager-rota", context=main)


def test_a_hand_edit_in_the_team_vault_is_searchable_and_its_index_lives_here(
    shared: Path, team: Path
) -> None:
    with Vault(shared, env={}) as vault:
        assert not [e for e in vault.search("quokka").results if e.vault]
        edited = EPISODE.replace("Ilse in June", "Ilse in June, the quokka sprint")
        (team / RELEASE_FILE).write_text(edited, encoding="utf-8")
        assert [e.id for e in vault.search("quokka").results] == [f"team:{RELEASE}"]
    assert (shared / ".memoryclaw" / "shared" / "team.db").is_file()
    assert not (team / ".memoryclaw").exists()


def test_a_missing_team_vault_is_skipped_and_doctor_says_why(vault_dir: Path) -> None:
    _share(vault_dir, "../not-cloned-yet")
    with Vault(vault_dir, env={}) as vault:
        assert vault.search("email john").results  # the own vault answers all the same
        checks = {c["check"]: c for c in vault.doctor()}
    check = checks["team vault not-cloned-yet"]
    assert check["status"] == "warn" and "does not exist" in check["detail"]


@pytest.mark.parametrize("path", [".", "..", "episodes"], ids=["itself", "its-parent", "inside-it"])
def test_a_team_vault_must_be_another_vault(vault_dir: Path, path: str) -> None:
    _share(vault_dir, f"{{name: other, path: '{path}'}}")
    with pytest.raises(ConfigError, match=r"sharedVaults\[0\]\.path: .* is this vault"):
        Vault(vault_dir, env={}).search("email")


@pytest.mark.parametrize(
    ("call", "action"),
    [
        (lambda v: v.forget(episode_id=f"team:{RELEASE}"), "forget"),
        (lambda v: v.forget(episode_id=RELEASE), "forget"),  # unqualified: still theirs
        (lambda v: v.forget(fact_id="team:f-000000000000"), "forget"),
        (lambda v: v.restore(f"team:{RELEASE}"), "archive --restore"),
        (lambda v: v.approve_pending("team:p-1"), "pending approve"),
        (lambda v: v.reject_pending("team:p-1"), "pending reject"),
        (lambda v: v.approve_skill("team:deploy"), "skills approve"),
        (lambda v: v.reject_skill("team:deploy"), "skills reject"),
        (lambda v: v.purge_history([f"team:{RELEASE_FILE}"]), "purge-history"),
    ],
    ids=[
        "forget-episode",
        "forget-unqualified",
        "forget-fact",
        "restore",
        "approve",
        "reject",
        "approve-skill",
        "reject-skill",
        "purge",
    ],
)
def test_an_api_write_to_a_team_memory_is_refused(
    shared: Path, team: Path, call: Callable[[Vault], object], action: str
) -> None:
    before = _tree(team)
    with Vault(shared, env={}) as vault, pytest.raises(ReadOnlyVaultError) as caught:
        call(vault)
    assert caught.value.name == "team" and caught.value.action == action
    assert "read-only" in str(caught.value)
    assert _tree(team) == before


def test_every_writing_command_leaves_the_team_vault_byte_identical(
    shared: Path, team: Path, tmp_path: Path
) -> None:
    """Each CLI command that writes, run on the own vault; those naming a team memory are
    refused with one line; the team vault (its .git included) never changes."""
    before = _tree(team)
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps({"session": "s9", "role": "user", "content": "Falcon QA"}) + "\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "falcon.md").write_text("# Falcon\n\nThe Falcon release needs QA sign-off.\n")
    archive = tmp_path / "export.tar.gz"
    writing = [
        ("log", "--session", "s1", "--role", "user", "Falcon release needs Priya's sign-off"),
        ("ingest", str(turns)),
        ("consolidate", "--all"),
        ("facts", "set", "Dana", "email", "dana@home.example"),
        ("forget", "Falcon release checklist", "--yes"),
        ("archive",),
        ("reindex",),
        ("reindex", "--full"),
        ("import-notes", str(notes)),
        ("export", str(archive)),
        ("daemon", "--once"),
        ("search", "release captain"),
        ("retrieve", "release captain"),
        ("doctor",),
        ("stats",),
    ]
    for args in writing:
        proc = run(shared, *args)
        assert proc.returncode == 0, (args, proc.stderr)
    refused = [
        ("forget", "--episode", f"team:{RELEASE}", "--yes"),
        ("forget", "--episode", RELEASE, "--yes"),
        ("forget", "--fact", "team:f-1", "--yes"),
        ("archive", "--restore", f"team:{RELEASE}"),
        ("pending", "approve", "team:p-1"),
        ("pending", "reject", "team:p-1"),
        ("skills", "approve", "team:deploy"),
        ("skills", "reject", "team:deploy"),
    ]
    for args in refused:
        proc = run(shared, *args)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        line = one_error_line(proc)
        assert "team vault 'team'" in line and "read-only" in line, line
    assert _tree(team) == before
    found = run_json(shared, "search", "release captain rota")
    assert f"team:{RELEASE}" in [r["id"] for r in found["results"] if r.get("vault")]


def test_rpc_writes_never_reach_the_team_vault(shared: Path, team: Path) -> None:
    before = _tree(team)
    calls = [
        {
            "id": 1,
            "method": "log_turn",
            "params": {"session": "s", "role": "user", "text": "hi Dana"},
        },
        {"id": 2, "method": "end_session", "params": {"session": "s"}},
        {"id": 3, "method": "consolidate", "params": {}},
        {"id": 4, "method": "forget", "params": {"episode_id": f"team:{RELEASE}"}},
        {"id": 5, "method": "get", "params": {"id": f"team:{RELEASE}"}},
        {"id": 6, "method": "search", "params": {"query": "release captain"}},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(shared), "serve", "--stdio"],
        input="".join(json.dumps(c) + "\n" for c in calls),
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert all("result" in answers[n] for n in (1, 2, 3, 5, 6)), answers
    assert "read-only" in answers[4]["error"]["message"]
    assert answers[5]["result"]["vault"] == "team"
    assert _tree(team) == before


def test_mcp_tools_read_team_memories_and_cannot_forget_them(
    shared: Path, team: Path, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    from tests.serve.test_mcp import error, ok, with_server

    before = _tree(team)

    async def scenario(session: Any) -> None:
        found = ok(await session.call_tool("memory_search", {"query": "release captain rota"}))
        assert f"team:{RELEASE}" in [r["id"] for r in found["results"]]
        got = ok(await session.call_tool("memory_get", {"id": f"team:{RELEASE}"}))
        assert got["vault"] == "team"
        for ident in (f"team:{RELEASE}", RELEASE):
            refused = error(await session.call_tool("memory_forget", {"episode_id": ident}))
            assert "read-only" in refused
        logged = {"session": "s", "role": "user", "content": "Dana runs the release in May"}
        ok(await session.call_tool("memory_log", logged))

    with_server(shared, tmp_path, scenario)
    assert _tree(team) == before


def _team_remote(tmp_path: Path) -> Path:
    """A team repository on a bare remote, and a member's clone of it at ``tmp_path/team``."""
    source = _team(tmp_path / "team-source")
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(bare)], check=True)
    subprocess.run(["git", "clone", "-q", str(bare), str(tmp_path / "team")], check=True)
    return bare


def _push_team_change(tmp_path: Path, bare: Path) -> None:
    other = tmp_path / "other-member"
    subprocess.run(["git", "clone", "-q", str(bare), str(other)], check=True)
    (other / "semantic" / "contacts.md").write_text(CONTACTS + "- Noor: noor@team.example\n")
    _git(other, "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qam", "Noor")
    _git(other, "push", "-q", "origin", "main")


def test_sync_pulls_the_team_vault_fast_forward_and_search_follows(
    vault_dir: Path, tmp_path: Path
) -> None:
    bare = _team_remote(tmp_path)
    _share(vault_dir, "../team")
    assert "noor@team" not in json.dumps(run_json(vault_dir, "search", "Noor email"))
    _push_team_change(tmp_path, bare)
    report = run_json(vault_dir, "sync")
    assert report["remote"] == ""  # the own vault has no git: only the team vault moved
    assert report["shared"] == [{"vault": "team", "pulled": 1, "files_changed": 1, "error": None}]
    facts = run_json(vault_dir, "search", "Noor email")["facts"]
    noor = [(f.get("vault"), f["value"]) for f in facts if f["entity"] == "Noor"]
    assert noor == [("team", "noor@team.example")]
    again = run(vault_dir, "sync")
    assert again.returncode == 0
    assert "team vault team: pulled 0 commits" in again.stdout


def test_a_team_clone_that_cannot_fast_forward_is_left_as_it_is(
    vault_dir: Path, tmp_path: Path
) -> None:
    bare = _team_remote(tmp_path)
    team = tmp_path / "team"
    (team / "semantic" / "local.md").write_text("- Mine: a local note\n")
    _git(team, "add", "-A")
    _git(team, "-c", "user.name=l", "-c", "user.email=l@x", "commit", "-qm", "local")
    _push_team_change(tmp_path, bare)
    head = _git(team, "rev-parse", "HEAD")
    _share(vault_dir, "../team")
    with Vault(vault_dir, env={}) as vault:
        report = vault.sync_remote()
    [pull] = report.shared
    assert pull["pulled"] == 0 and pull["error"]
    assert _git(team, "rev-parse", "HEAD") == head
    assert (team / "semantic" / "local.md").read_text() == "- Mine: a local note\n"


def test_interleave_keeps_each_lists_order_and_prefers_the_first_on_ties() -> None:
    own = [("own", 1.0), ("own", 0.5), ("own", 0.9)]  # a vector hit after keyword hits
    team = [("team", 1.0), ("team", 0.7)]
    merged = _interleave([own, team], lambda item: item[1])
    assert merged == [own[0], team[0], team[1], own[1], own[2]]


def test_a_question_in_the_first_person_is_not_answered_with_the_team_owners_facts(
    vault_dir: Path, team: Path
) -> None:
    """ "My" is the asking owner: the facts a team vault holds about its own owner (entity
    User, consolidated from that owner's turns) are somebody else's."""
    with (team / "semantic" / "preferences.md").open("w", encoding="utf-8") as f:
        f.write("- User (job): accountant at Deloitte\n")
    (vault_dir / "semantic" / "preferences.md").write_text("- User (job): nurse\n", "utf-8")
    _share(vault_dir, "../team")
    with Vault(vault_dir, env={}) as vault:
        found = vault.search("what is my job?")
    assert [(f.value, f.vault) for f in found.facts] == [("nurse", None)]


def test_a_forget_says_which_team_vault_still_holds_what_it_matched(
    shared: Path, team: Path
) -> None:
    """A forget changes only this vault; what a team vault holds of it is named, with its
    files, since recall still finds it there."""
    before = _tree(team)
    report = run_json(shared, "forget", "zebrafish pager rota", "--yes")
    assert report["removed"] == 0
    [there] = report["elsewhere"]
    assert there["vault"] == "team" and there["root"] == str(team.resolve())
    assert there["count"] >= 1 and there["files"] == [OPS_FILE]
    told = run(shared, "forget", "zebrafish pager rota", "--yes")
    assert told.returncode == 0, told.stderr
    assert f"still in the team vault 'team' ({team.resolve()})" in told.stdout
    assert OPS_FILE in told.stdout
    own = run_json(shared, "forget", "Falcon beta", "--dry-run")
    assert own["removed"] >= 1 and own["elsewhere"] == []
    assert _tree(team) == before
