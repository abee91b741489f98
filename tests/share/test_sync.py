"""Several devices syncing one vault through a git remote converge without losing anything."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryclaw import InvalidInputError, SyncError, Vault
from memoryclaw.serve.stdio import StdioServer
from memoryclaw.share.conflicts import SYNC_MARK
from memoryclaw.vault.episodes import parse_episode
from memoryclaw.vault.facts import parse_facts
from memoryclaw.vault.logformat import parse_log

FIRST = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
PEOPLE = ["Maya", "Tomas", "Ines", "Kofi", "Lena"]
MEMORY = ("episodes", "semantic", "logs/processed", "skills")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    _git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    return bare


def _first_device(tmp_path: Path, bare: Path, name: str = "a") -> Path:
    root = tmp_path / name
    Vault.init(root, git=True, env={}).close()
    _git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(root, "remote", "add", "origin", str(bare))
    (root / "memoryclaw.yaml").write_text("git:\n  autoCommit: true\n")
    with Vault(root, env={}) as vault:
        vault.sync_remote(setup=True)
    return root


def _clone(tmp_path: Path, bare: Path, name: str) -> Path:
    root = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(bare), str(root)], check=True)
    Vault.init(root, env={}).close()
    return root


def _files(root: Path) -> dict[str, str]:
    found = {}
    for folder in MEMORY:
        for path in sorted((root / folder).rglob("*.md")):
            found[str(path.relative_to(root))] = path.read_text(encoding="utf-8")
    return found


def _all_text(root: Path) -> str:
    return "\n".join(_files(root).values())


def test_sync_pushes_and_pulls_between_two_clones(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    b = _clone(tmp_path, bare, "b")
    with Vault(a, env={}) as va:
        va.log_turn("s1", "user", "Maya's email is maya@example.org, remember the zanzibar trip.")
        va.end_session("s1")
        va.consolidate(all_logs=True)
        assert va.sync_remote().pushed >= 1
    with Vault(b, env={}) as vb:
        report = vb.sync_remote()
        assert report.pulled >= 1 and report.files_changed
        assert vb.search("zanzibar").results
    assert _files(a) == _files(b)
    assert (a / ".gitattributes").read_text() == "semantic/*.md merge=union\n"


def test_log_names_carry_the_device_id(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    b = _clone(tmp_path, bare, "b")
    names = []
    for root in (a, b):
        with Vault(root, env={}) as vault:
            names.append(Path(vault.log_turn("s", "user", "hello there", timestamp=FIRST).path))
    device_a = (a / ".memoryclaw" / "device").read_text().strip()
    assert device_a in names[0].name and names[0].name != names[1].name


def test_same_fact_edited_on_two_devices_keeps_both_values(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    (a / "semantic" / "contacts.md").write_text("# Contacts\n\n- John: john@example.com\n")
    with Vault(a, env={}) as va:
        va.sync_remote()
    b = _clone(tmp_path, bare, "b")
    for root, value in ((a, "john@a.example"), (b, "john@b.example")):
        (root / "semantic" / "contacts.md").write_text(f"# Contacts\n\n- John: {value}\n")
    with Vault(a, env={}) as va:
        va.sync_remote()
    with Vault(b, env={}) as vb:
        report = vb.sync_remote()
        assert report.conflicts_resolved == 1
        pending = vb.pending()
    assert (b / "semantic" / "contacts.md").read_text().count("- John:") == 1
    assert "john@a.example" in (b / "semantic" / "contacts.md").read_text()
    assert [p.value for p in pending] == ["john@b.example"]
    assert SYNC_MARK in (b / "semantic" / "_pending.md").read_text()
    with Vault(a, env={}) as va:
        va.sync_remote()
    assert _files(a) == _files(b)
    with Vault(b, env={}) as vb:
        approved = vb.approve_pending(pending[0].id)
        assert approved.mark == "CONFLICT" and not vb.pending()
        vb.sync_remote()
    with Vault(a, env={}) as va:
        va.sync_remote()
    contacts = (a / "semantic" / "contacts.md").read_text()
    assert "- John: john@b.example" in contacts and "john@a.example" in contacts


JUNE = datetime(2025, 6, 1, tzinfo=timezone.utc)
OLD_LINE = "- John email: john@old.example\n"


def _john(root: Path) -> tuple[list[str], list[str]]:
    """John's current emails and his superseded ones, in the file's order."""
    text = (root / "semantic" / "contacts.md").read_text()
    facts = [f for f in parse_facts(text, "semantic/contacts.md", "") if f.entity == "John"]
    return [f.value for f in facts if not f.superseded], [f.value for f in facts if f.superseded]


def _set_on_a(a: Path, value: str) -> None:
    with Vault(a, env={}) as va:
        va.set_fact("John", "email", value, now=JUNE)
        va.sync_remote()


def _set_on_b(b: Path, value: str) -> None:
    with Vault(b, env={}) as vb:
        vb.set_fact("John", "email", value, now=JUNE + timedelta(days=1))


def _restate_on_b(b: Path, value: str) -> None:
    with (b / "semantic" / "contacts.md").open("a") as contacts:
        contacts.write(f"- John email: {value} <!-- source: user; updated: 2025-06-02 -->\n")


@pytest.mark.parametrize(
    ("on_b", "current", "to_review"),
    [
        # both replaced the old value: only the two new values can conflict
        (lambda b: _set_on_b(b, "john@b.example"), ["john@a.example"], ["john@b.example"]),
        # both replaced it by the same value: nothing to review
        (lambda b: _set_on_b(b, "john@a.example"), ["john@a.example"], []),
        # the old value said again where the news had not arrived: the remote replaced it
        (lambda b: _restate_on_b(b, "john@old.example"), ["john@a.example"], []),
        # B's old line, which the remote replaced, does not come back with the union merge
        (lambda b: None, ["john@a.example"], []),
    ],
    ids=["both-set-different-values", "both-set-the-same-value", "old-value-restated", "kept-old"],
)
def test_a_value_already_superseded_is_no_sync_conflict(
    tmp_path: Path, on_b: Callable[[Path], None], current: list[str], to_review: list[str]
) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    (a / "semantic" / "contacts.md").write_text("# Contacts\n\n" + OLD_LINE)
    with Vault(a, env={}) as va:
        va.sync_remote()
    b = _clone(tmp_path, bare, "b")
    _set_on_a(a, "john@a.example")  # A replaces the old value and pushes
    with (b / "semantic" / "contacts.md").open("a") as contacts:
        contacts.write("- Ann: ann@example.com\n")  # B edits the same file meanwhile
    on_b(b)
    with Vault(b, env={}) as vb:
        report = vb.sync_remote()
        pending = [p.value for p in vb.pending()]
    pending_text = b / "semantic" / "_pending.md"
    assert pending == to_review
    assert report.conflicts_resolved == len(to_review)
    if pending_text.exists():  # no superseded line is filed as a conflict
        assert "superseded" not in pending_text.read_text()
    now, before = _john(b)
    assert now == current
    assert before[0] == "john@old.example"  # the history stays, once per value replaced
    assert len(before) == len(set(before))
    with Vault(a, env={}) as va:
        va.sync_remote()
    assert _files(a) == _files(b)
    assert "- Ann: ann@example.com" in (a / "semantic" / "contacts.md").read_text()


def test_sync_over_the_stdio_server(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    (a / "semantic" / "facts.md").write_text("# Facts\n\n- Lena: lives in Oslo\n")
    bridge = StdioServer(a, env={})
    reply = bridge.handle(json.dumps({"id": 1, "method": "sync", "params": {}}))
    assert reply["result"]["pushed"] == 1 and reply["result"]["remote"] == "origin"
    bare.rename(tmp_path / "gone.git")
    reply = bridge.handle(json.dumps({"id": 2, "method": "sync", "params": {}}))
    assert "origin" in reply["error"]["message"]


def test_offline_remote_is_one_line_error_and_next_sync_catches_up(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    b = _clone(tmp_path, bare, "b")
    moved = tmp_path / "away.git"
    bare.rename(moved)
    (a / "semantic" / "facts.md").write_text("# Facts\n\n- Kofi: lives in Accra\n")
    with Vault(a, env={}) as va, pytest.raises(SyncError) as caught:
        va.sync_remote()
    assert caught.value.remote == "origin" and "\n" not in str(caught.value)
    assert "origin" in str(caught.value)
    moved.rename(bare)
    with Vault(a, env={}) as va:
        assert va.sync_remote().pushed >= 1
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    assert "Accra" in (b / "semantic" / "facts.md").read_text()


def _coverage(root: Path) -> Counter[tuple[str, int]]:
    covered: Counter[tuple[str, int]] = Counter()
    for path in (root / "episodes").rglob("*.md"):
        episode = parse_episode(path.read_text(encoding="utf-8"), str(path.relative_to(root)), 0.0)
        if episode.source_turns is not None and episode.source:
            first, last = episode.source_turns
            for n in range(first, last + 1):
                covered[(episode.source, n)] += 1
    return covered


def test_random_devices_converge_without_loss(tmp_path: Path) -> None:
    rng = random.Random(20251124)
    bare = _remote(tmp_path)
    roots = [_first_device(tmp_path, bare)]
    roots += [_clone(tmp_path, bare, name) for name in ("b", "c")]
    vaults = [Vault(root, env={}) for root in roots]
    (roots[0] / "semantic" / "contacts.md").write_text("# Contacts\n\n- John: john@example.com\n")
    vaults[0].sync_remote()
    for vault in vaults[1:]:
        vault.sync_remote()
    written = {"john@example.com"}
    islands: list[str] = []
    resolved = 0
    open_sessions: list[set[str]] = [set() for _ in roots]
    clock = FIRST
    try:
        for step in range(60):
            action = rng.choice(["log", "log", "consolidate", "edit", "approve", "sync", "sync"])
            d = rng.randrange(len(roots))
            vault, root = vaults[d], roots[d]
            clock += timedelta(minutes=7)
            if action == "log":
                session = f"agent:main:cli:{d}-{rng.randrange(3)}"
                person = rng.choice(PEOPLE)
                vault.log_turn(
                    session,
                    "user",
                    f"Remember step {step}: {person} booked the ferry to island{step}.",
                    timestamp=clock,
                )
                vault.log_turn(
                    session,
                    "assistant",
                    f"Noted island{step} for {person}.",
                    timestamp=clock + timedelta(seconds=5),
                )
                open_sessions[d].add(session)
                islands.append(f"island{step}")
            elif action == "consolidate":
                for session in sorted(open_sessions[d]):
                    vault.end_session(session)
                open_sessions[d].clear()
                vault.consolidate(all_logs=True)
            elif action == "edit":
                other = (d + 1) % len(roots)
                for k in (d, other):
                    value = f"john{step}{k}@example.com"
                    # What the hand edit replaces on that device is dropped on purpose.
                    seen = (roots[k] / "semantic" / "contacts.md").read_text(encoding="utf-8")
                    written = {v for v in written if v not in seen}
                    written.add(value)
                    (roots[k] / "semantic" / "contacts.md").write_text(
                        f"# Contacts\n\n- John: {value}\n"
                    )
            elif action == "approve":
                pending = vault.pending()
                if pending:
                    vault.approve_pending(pending[0].id)
            else:
                resolved += vault.sync_remote().conflicts_resolved
        for d, vault in enumerate(vaults):
            for session in sorted(open_sessions[d]):
                vault.end_session(session)
            vault.consolidate(all_logs=True)
        for _ in range(2):
            for vault in vaults:
                resolved += vault.sync_remote().conflicts_resolved
        assert resolved > 0  # the run did meet conflicting edits
        first = _files(roots[0])
        for root in roots[1:]:
            assert _files(root) == first
        for text in first.values():
            assert "<<<<<<<" not in text and ">>>>>>>" not in text
        semantic = "\n".join(t for p, t in first.items() if p.startswith("semantic/"))
        for value in written:
            assert value in semantic, value
        covered = _coverage(roots[0])
        assert covered and max(covered.values()) == 1
        for rel in first:
            if rel.startswith("logs/processed/"):
                turns = parse_log(first[rel], rel).turns
                for n in range(1, len(turns) + 1):
                    assert covered[(rel, n)] == 1, (rel, n)
        assert len(islands) >= 10
        for query in ("ferry", islands[0], islands[-1], "John"):
            found = [vault.search(query) for vault in vaults]
            ids = [[r.id for r in (*f.results, *f.facts)] for f in found]
            assert ids[0] and ids[0] == ids[1] == ids[2], query
    finally:
        for vault in vaults:
            vault.close()


def _sync_process(root: Path) -> subprocess.Popen[bytes]:
    # its own process group: a kill takes the git it runs with it, as a crash would
    return subprocess.Popen(
        [sys.executable, "-m", "memoryclaw", "--vault", str(root), "sync", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
        start_new_session=True,
    )


def kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sync and every process it started; return once all are gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    for _ in range(500):
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def clear_stale_locks(remote: Path) -> None:
    """Remove what a killed push left locked in a path remote.

    A path remote's receive-pack runs in the sync's process group and dies with it, possibly
    after updating a ref but before removing its lock; a real remote's server outlives the
    client, so its stale locks are cleared here as that server would have."""
    for lock in remote.rglob("*.lock"):
        lock.unlink()


def test_killed_syncs_are_finished_by_the_next(tmp_path: Path) -> None:
    rng = random.Random(7)
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    b = _clone(tmp_path, bare, "b")
    facts = []
    for round_ in range(10):
        for root, who in ((a, "a"), (b, "b")):
            fact = f"- Item{round_}{who}: lives in Town{round_}{who}"
            facts.append(fact)
            path = root / "semantic" / "facts.md"
            old = path.read_text(encoding="utf-8") if path.exists() else "# Facts\n\n"
            path.write_text(old + fact + "\n", encoding="utf-8")
        with Vault(b, env={}) as vb:
            vb.sync_remote()
        process = _sync_process(a)
        time.sleep(rng.uniform(0.0, 0.6))
        kill_process_group(process)
        clear_stale_locks(bare)
    with Vault(a, env={}) as va:
        va.sync_remote()
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    assert _files(a) == _files(b)
    text = (a / "semantic" / "facts.md").read_text(encoding="utf-8")
    assert "<<<<<<<" not in text
    for fact in facts:
        assert text.count(fact) == 1, fact
    assert not (a / ".git" / "MERGE_HEAD").exists()


def test_stale_index_lock_and_half_done_merge_are_recovered(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    b = _clone(tmp_path, bare, "b")
    for root, value in ((a, "Lisbon"), (b, "Porto")):
        (root / "semantic" / "facts.md").write_text(f"# Facts\n\n- Ana: lives in {value}\n")
        with Vault(root, env={}) as vault:
            vault.sync_remote() if root == a else None
    _git(b, "add", "-A")
    _git(b, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "local")
    _git(b, "fetch", "-q", "origin")
    # A merge stopped half way (as if killed), conflict markers and all, and a stale lock.
    (b / ".gitattributes").unlink()
    subprocess.run(["git", "-C", str(b), "merge", "origin/main"], capture_output=True)
    assert (b / ".git" / "MERGE_HEAD").exists()
    (b / ".git" / "index.lock").write_text("")
    with Vault(b, env={}) as vb:
        vb.sync_remote(setup=True)
    assert not (b / ".git" / "index.lock").exists()
    text = (b / "semantic" / "facts.md").read_text()
    pending = (b / "semantic" / "_pending.md").read_text()
    assert "<<<<<<<" not in text and "Lisbon" in text and "Porto" in pending


def test_export_then_import_merges_like_a_sync(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    (a / "semantic" / "facts.md").write_text("# Facts\n\n- Lena: lives in Oslo\n")
    other = tmp_path / "other"
    Vault.init(other, git=True, env={}).close()
    (other / "semantic" / "facts.md").write_text("# Facts\n\n- Tomas: lives in Braga\n")
    archive = tmp_path / "memory.tar.gz"
    with Vault(a, env={}) as va:
        assert va.export_archive(archive) >= 2
    with Vault(other, env={}) as vo:
        vo.import_archive(archive)
        text = (other / "semantic" / "facts.md").read_text()
        assert "Oslo" in text and "Braga" in text and "<<<<<<<" not in text
        assert vo.search("Lena Oslo").facts


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("/etc/evil.md", tarfile.REGTYPE),
        ("../evil.md", tarfile.REGTYPE),
        ("semantic/link.md", tarfile.SYMTYPE),
        ("semantic/dev", tarfile.CHRTYPE),
    ],
    ids=["absolute", "dotdot", "symlink", "device"],
)
def test_import_refuses_unsafe_members(tmp_path: Path, name: str, kind: bytes) -> None:
    archive = tmp_path / "bad.tar.gz"
    with tarfile.open(archive, "w:gz") as out:
        member = tarfile.TarInfo(name)
        member.type = kind
        member.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
        out.addfile(member, io.BytesIO(b""))
    root = tmp_path / "v"
    Vault.init(root, git=True, env={}).close()
    with Vault(root, env={}) as vault, pytest.raises(InvalidInputError) as caught:
        vault.import_archive(archive)
    assert name in str(caught.value)
    assert not (tmp_path / "evil.md").exists()


def test_a_recovery_killed_half_way_is_finished_by_the_next(tmp_path: Path) -> None:
    """The lines a recovery holds are on disk before the merge is aborted: a recovery
    killed right after the abort loses none of them."""
    from memoryclaw.share.recovery import HELD_FILE, _recover

    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    facts = a / "semantic" / "facts.md"
    held = a / HELD_FILE
    held.parent.mkdir(parents=True, exist_ok=True)
    held.write_text('{"semantic/facts.md": ["- Wren: lives in Kilkenny"]}', encoding="utf-8")
    _recover(a)  # as the next sync starts: the held line goes back, the file goes away
    assert "- Wren: lives in Kilkenny" in facts.read_text(encoding="utf-8")
    assert not held.exists()
    _recover(a)
    assert facts.read_text(encoding="utf-8").count("- Wren: lives in Kilkenny") == 1


def _cli_sync(root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memoryclaw", "--vault", str(root), "sync"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _stopped_by_a_busy_logs_lock(root: Path) -> None:
    """The sync merges, then waits for the logs lock to scrub the merge, and gives up."""
    process = _cli_sync(root)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1 and b"logs.lock" in stderr, stderr


def _killed_right_after_its_merge(root: Path) -> None:
    """The sync merges, then waits for the logs lock to scrub the merge, and is killed."""
    process = _cli_sync(root)
    deadline = time.monotonic() + 60
    while _git(root, "log", "-1", "--format=%s").strip() != "memoryclaw: sync merge":
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    kill_process_group(process)
    assert process.stderr is not None
    process.stderr.close()


STOPPED_SYNCS = {
    "stopped-by-a-busy-logs-lock": _stopped_by_a_busy_logs_lock,
    "killed-right-after-its-merge": _killed_right_after_its_merge,
}


@pytest.mark.parametrize("stop", STOPPED_SYNCS.values(), ids=STOPPED_SYNCS.keys())
def test_a_sync_stopped_between_its_merge_and_its_scrub_never_pushes_what_was_forgotten(
    tmp_path: Path, stop: Callable[[Path], None]
) -> None:
    """A merge that brings another device's forget is committed before the files it brought
    are scrubbed against it; a sync stopped in between (killed, or giving up on a writer
    holding the logs lock) is scrubbed by the next sync before it pushes, so no device gets
    the forgotten memory back and this device's index drops it."""
    from memoryclaw.vault.files import file_lock
    from tests.share.test_forget_precise import log_session

    said = "The locker combination at the Harbor gym is left 32 right 11"
    bare = _remote(tmp_path)
    a = _first_device(tmp_path, bare)
    b = _clone(tmp_path, bare, "b")
    for device in (a, b):
        log_session(device, [said, "We also talked about the weather"], session=device.name)
        with Vault(device, env={}) as vault:
            vault.consolidate(all_logs=True)  # b said it too, and has not synced since
    with Vault(a, env={}) as vault:
        assert vault.forget("locker combination").removed
        vault.sync_remote()
    with file_lock(b, "logs"):
        stop(b)
    assert "left 32 right 11" in _all_text(b)  # merged, not scrubbed yet
    with Vault(b, env={}) as vault:
        vault.sync_remote()
        assert not vault.search("locker combination").results
    assert "left 32 right 11" not in _all_text(b)
    assert "left 32 right 11" not in _all_text(_clone(tmp_path, bare, "c"))
    assert "weather" in _all_text(b)


_VERBATIM_LOG = (
    "---\nid: log-x\ntimestamp: 2025-01-01T10:00:00Z\nchannel: cli\nsession: s9\n"
    "processed: false\n---\n### user · 2025-01-01T10:00:00Z\n"
    "my aws key is AKIAIOSFODNN7EXAMPLE,"
    " AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
)
ARCHIVED_LOGS = {
    "raw-log": ("logs/2025-01-01_10-00-00_cli_raw.md", _VERBATIM_LOG),
    "processed-log": ("logs/processed/2025-01-01_10-00-00_cli_raw.md", _VERBATIM_LOG),
    "not-a-log": (
        "logs/notes.md",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    ),
}


@pytest.mark.parametrize(("rel", "text"), ARCHIVED_LOGS.values(), ids=ARCHIVED_LOGS.keys())
def test_an_imported_archive_s_logs_reach_git_redacted(tmp_path: Path, rel: str, text: str) -> None:
    """``export`` writes only redacted logs; a log put into an archive by hand (verbatim, as
    a vault with redaction off keeps it) is redacted before it becomes a commit, so the
    secret reaches neither the vault nor its history, and the rest of the log is kept."""
    archive = tmp_path / "crafted.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = text.encode("utf-8")
        member = tarfile.TarInfo(rel)
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    vault = tmp_path / "v"
    Vault.init(vault, git=True, env={}).close()
    with Vault(vault, env={}) as v:
        v.import_archive(archive)
        v.consolidate(all_logs=True)
    history = _git(vault, "log", "--all", "-p")
    files = "\n".join(p.read_text() for p in vault.rglob("*.md") if ".git" not in p.parts)
    for secret in ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI"):
        assert secret not in history and secret not in files
    assert "[REDACTED:" in history and "AWS_SECRET_ACCESS_KEY" in history
