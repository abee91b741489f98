"""Git in the vault: one commit per consolidation run (only what it changed), file history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from memoryclaw import ExternalToolError, UnsafePathError, Vault
from memoryclaw.share import history
from memoryclaw.share.history import commit_changes, commit_journal, journal, snapshot

from ..conftest import NOW


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Vault:
    return Vault.init(tmp_path / "vault", git=True, env={})  # with its first commit


def _session(vault: Vault, session: str, text: str) -> None:
    vault.log_turn(session, "user", text, timestamp=NOW)
    vault.log_turn(session, "assistant", "Noted.", timestamp=NOW)
    vault.end_session(session)


def test_a_run_is_one_commit_of_exactly_what_it_changed(repo: Vault) -> None:
    _session(repo, "s1", "My sister Maya's email is maya@example.net, she moved to Porto.")
    hand = repo.root / "semantic" / "hand.md"
    hand.write_text("# Mine\n\n- Bike: blue\n")  # a hand edit the run does not touch
    report = repo.consolidate(now=NOW + timedelta(days=1))
    assert report.commit is not None
    assert git(repo.root, "rev-list", "--count", "HEAD").strip() == "2"
    message = git(repo.root, "log", "-1", "--format=%B")
    assert message.startswith("memoryclaw: consolidate 1 log into 1 episode")
    assert f"+ {report.episodes[0]}" in message
    committed = set(git(repo.root, "show", "--name-only", "--format=", "HEAD").split())
    assert set(report.episodes) <= committed and set(report.logs_processed) <= committed
    assert "semantic/hand.md" not in committed
    status = git(repo.root, "status", "--porcelain", "--untracked-files=all")
    assert status.strip() == "?? semantic/hand.md"
    author = git(repo.root, "log", "-1", "--format=%an <%ae>").strip()
    assert author == "memoryclaw <memoryclaw@localhost>"


def test_nothing_to_do_makes_no_commit(repo: Vault) -> None:
    assert repo.consolidate(now=NOW).commit is None
    assert git(repo.root, "rev-list", "--count", "HEAD").strip() == "1"


def test_auto_commit_off_leaves_git_alone(repo: Vault) -> None:
    (repo.root / "memoryclaw.yaml").write_text("git:\n  autoCommit: false\n")
    vault = Vault(repo.root, env={})
    _session(vault, "s2", "Remember the gate code changed.")
    assert vault.consolidate(now=NOW + timedelta(days=1)).commit is None
    assert git(repo.root, "rev-list", "--count", "HEAD").strip() == "1"


def test_history_lists_the_commits_of_a_memory(repo: Vault) -> None:
    _session(repo, "s3", "Book the Lisbon flight for May 3.")
    report = repo.consolidate(now=NOW + timedelta(days=1))
    [episode] = report.episodes
    [commit] = repo.history(episode)
    assert commit.sha == report.commit and commit.author == "memoryclaw"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memoryclaw",
            "--vault",
            str(repo.root),
            "history",
            episode,
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commits"][0]["sha"] == report.commit


@pytest.mark.parametrize("path", ["../outside.md", "/etc/passwd"], ids=["parent", "absolute"])
def test_history_refuses_paths_outside_the_vault(repo: Vault, path: str) -> None:
    with pytest.raises(UnsafePathError):
        repo.history(path)


def test_history_needs_a_repository(vault: Vault) -> None:
    with pytest.raises(ExternalToolError, match="not a git repository"):
        vault.history("semantic/contacts.md")


def test_a_raw_log_being_written_is_never_committed(repo: Vault) -> None:
    """With redaction off a raw log holds turns verbatim: a run commits only the processed,
    redacted copy, even when a writer adds a log while the run goes on."""
    (repo.root / "memoryclaw.yaml").write_text("privacy:\n  redactSecrets: false\n")
    verbatim = Vault(repo.root, env={})
    secret = "sk_" + "live_" + "FaKe0123456789fAkE0123ab"
    _session(verbatim, "s1", f"charge it with {secret}")
    before = snapshot(repo.root)
    verbatim.log_turn("s2", "user", f"again {secret}", timestamp=NOW)  # during a run
    assert commit_changes(repo.root, before, "m") is None
    report = verbatim.consolidate(now=NOW)
    assert report.commit and report.logs_processed
    assert secret not in git(repo.root, "log", "-p", "--all")
    assert any(secret in p.read_text() for p in (repo.root / "logs").glob("*.md"))


def test_the_next_run_commits_what_a_run_killed_before_its_commit_wrote(
    repo: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(repo, "s1", "My sister Maya's email is maya@example.net, she moved to Porto.")
    (repo.root / "semantic" / "hand.md").write_text("# Mine\n\n- Bike: blue\n")

    def killed(root: Path, message: str) -> None:
        raise SystemExit("killed before the commit")

    with monkeypatch.context() as patch:
        patch.setattr("memoryclaw.consolidate.pipeline.commit_journal", killed)
        with pytest.raises(SystemExit):
            repo.consolidate(now=NOW + timedelta(days=1))
    status = git(repo.root, "status", "--porcelain", "--untracked-files=all")
    assert "episodes/" in status and "logs/processed/" in status
    report = repo.consolidate(now=NOW + timedelta(days=2))
    assert report.logs_read == 0 and report.commit is not None
    status = git(repo.root, "status", "--porcelain", "--untracked-files=all")
    assert status.strip() == "?? semantic/hand.md"
    assert repo.consolidate(now=NOW + timedelta(days=3)).commit is None


def test_a_new_log_under_a_consolidated_logs_name_is_not_committed(repo: Vault) -> None:
    """A run notes the log it consolidates; a writer may start a new log under the same name
    before the commit: that one is live, verbatim, and stays out of git."""
    _session(repo, "s1", "My sister Maya's email is maya@example.net, she moved to Porto.")
    [log] = [p.relative_to(repo.root).as_posix() for p in (repo.root / "logs").glob("*.md")]
    journal(repo.root, [log])
    (repo.root / log).unlink()
    (repo.root / log).write_text("---\nsession: s2\n---\n\nuser: a new session\n")
    assert commit_journal(repo.root, "m") is None
    assert git(repo.root, "status", "--porcelain", "--", log).startswith("??")


@pytest.mark.parametrize("packed", [False, True], ids=["loose-ref", "packed-ref"])
def test_a_journal_left_by_a_run_killed_after_its_commit_still_commits_a_later_deletion(
    repo: Vault, packed: bool
) -> None:
    """A run notes a file it is about to create ("absent"), commits it, and is killed before
    it empties the journal; the next run deletes that file again (its log was consolidated
    anew), and its commit holds the deletion though the file is "absent" as first noted.  A
    hand edit noted by both runs and left alone by them stays uncommitted."""
    episode, hand = "episodes/made.md", "semantic/hobbies.md"
    (repo.root / hand).write_text("# Hobbies\n\n- Me: climbing\n")
    git(repo.root, "add", "-A")
    git(repo.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "hand")
    (repo.root / hand).write_text("# Hobbies\n\n- Me: climbing, chess\n")  # not committed
    journal(repo.root, [episode, hand])
    (repo.root / episode).write_text("---\nid: made\n---\n\nmade by the first run\n")
    left = (repo.root / history.JOURNAL_FILE).read_bytes()
    assert commit_journal(repo.root, "first run") is not None
    (repo.root / history.JOURNAL_FILE).write_bytes(left)  # killed before the journal went
    if packed:
        git(repo.root, "pack-refs", "--all")
    journal(repo.root, [episode, hand])
    (repo.root / episode).unlink()
    assert commit_journal(repo.root, "second run") is not None
    assert git(repo.root, "show", "--name-status", "--format=", "HEAD").split() == ["D", episode]
    status = git(repo.root, "status", "--porcelain", "--untracked-files=all")
    assert status.splitlines() == [f" M {hand}"]


def test_a_file_gone_between_gits_look_and_the_add_does_not_fail_the_commit(
    repo: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git refuses a whole ``add`` naming a file that is neither on disk nor in its index:
    a path that vanished after git listed it is dropped, the rest is committed."""
    kept, gone = "semantic/kept.md", "episodes/gone.md"
    (repo.root / gone).write_text("---\nid: gone\n---\n\nabout to go\n")
    journal(repo.root, [kept, gone])
    (repo.root / kept).write_text("# Kept\n\n- Bike: blue\n")
    (repo.root / gone).unlink()
    stale = {kept, gone}  # what git listed before the file went
    looks = iter([stale, stale])  # and again when looked at twice
    real = history._dirty
    monkeypatch.setattr(
        history, "_dirty", lambda root, paths: next(looks, None) or real(root, paths)
    )
    assert commit_journal(repo.root, "m") is not None
    assert git(repo.root, "show", "--name-only", "--format=", "HEAD").split() == [kept]
    assert not (repo.root / history.JOURNAL_FILE).exists()


def test_a_file_name_that_is_not_utf8_breaks_neither_forget_nor_sync_nor_import_notes(
    repo: Vault, tmp_path: Path
) -> None:
    """A vault file named with the byte 0xff once crashed forget and sync (a
    UnicodeDecodeError reading git's output) and a note so named crashed import-notes (a
    UnicodeEncodeError in the index): git's output is read with the names' bytes kept, and
    such a file is skipped, named, by the index and the importer."""
    root = repo.root
    (root / "episodes" / os.fsdecode(b"\xff.md")).write_bytes(b"---\nsummary: x\n---\nhello\n")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(root, "remote", "add", "origin", str(remote))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / os.fsdecode(b"\xfe-bikes.md")).write_bytes(b"# Bikes\nThe blue bike is in the shed.\n")
    (notes / "trains.md").write_text("# Trains\nThe night train leaves at 22:10.\n", "utf-8")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "memoryclaw", "--vault", str(root), *args]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-1500:]
        return done

    cli("log", "--session", "s1", "--role", "user", "My dentist is Dr Heron at Elm Street")
    cli("consolidate", "--all")
    cli("forget", "Heron", "--yes")
    cli("sync", "--setup")
    cli("sync")
    imported = json.loads(cli("import-notes", str(notes), "--json").stdout)
    assert imported["skipped"] == [f"{notes}/\\xfe-bikes.md: file name is not valid UTF-8"]
    assert imported["episodes"] == 1
    skipped = json.loads(cli("reindex", "--json").stdout)["skipped"]
    assert {
        "path": "episodes/\\xff.md",
        "reason": "file name is not valid UTF-8",
        "line": None,
    } in skipped


def test_a_removal_already_staged_by_a_killed_run_is_committed(tmp_path: Path) -> None:
    """A git a killed run started can stage a deletion and end: the next commit takes it."""
    from memoryclaw.share.history import commit_changes

    root = tmp_path / "v"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "episodes").mkdir()
    (root / "episodes" / "a.md").write_text("a\n")
    (root / "episodes" / "b.md").write_text("b\n")
    for args in (
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    (root / "episodes" / "a.md").unlink()
    subprocess.run(["git", "-C", str(root), "rm", "-q", "--cached", "episodes/a.md"], check=True)
    (root / "episodes" / "b.md").write_text("b2\n")
    assert commit_changes(root, {}, "memoryclaw: test")
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""


def test_a_file_a_killed_run_staged_and_a_later_run_deleted_is_left_staged_by_no_commit(
    repo: Vault,
) -> None:
    """A killed run's git can stage a new episode and end before its commit; when the next
    run deletes that episode again, the staged copy must not stay behind, for the user's
    next commit to bring a memory back that no file holds."""
    root = repo.root
    ghost, kept = "episodes/ghost.md", "episodes/kept.md"
    journal(root, [ghost, kept])
    (root / ghost).write_text("---\nid: ep-ghost\n---\nwritten by a killed run\n")
    (root / kept).write_text("---\nid: ep-kept\n---\nwritten and kept\n")
    git(root, "add", "--", ghost)  # the killed run's git got this far
    (root / ghost).unlink()  # the next run deletes what it wrote
    assert git(root, "status", "--porcelain", "--", ghost).startswith("AD")
    assert commit_journal(root, "memoryclaw: test") is not None
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(root, "ls-files", "--", "episodes").split() == [kept]
