"""A remote is untrusted input: what it sends is screened before any of it reaches the disk."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import SyncError, Vault
from memoryclaw.errors import UnsafePathError
from memoryclaw.vault.files import CONSOLIDATE_LOCK, file_lock
from tests.share.test_sync import clear_stale_locks, kill_process_group

SECRET = "OUTSIDE-SECRET-7731-do-not-copy"
GIT_ID = ("-c", "user.name=mallory", "-c", "user.email=m@example.org")


def _git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0 or not check, done.stderr
    return done.stdout


def _cli(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    _git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    return bare


def _device(tmp_path: Path, bare: Path, name: str) -> Path:
    """A device as a user makes one: init --git, a remote, sync --setup."""
    root = tmp_path / name
    Vault.init(root, git=True, env={}).close()
    _git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(root, "remote", "add", "origin", str(bare))
    with Vault(root, env={}) as vault:
        vault.sync_remote(setup=True)
    return root


def _mallory(tmp_path: Path, bare: Path) -> Path:
    """A plain clone of the remote, where an attacker crafts any commit."""
    root = tmp_path / "mallory"
    if not root.exists():
        subprocess.run(["git", "clone", "-q", str(bare), str(root)], check=True)
    _git(root, "pull", "-q", "--no-rebase", check=False)
    return root


def _push_as_mallory(root: Path, message: str) -> None:
    _git(root, "add", "-A", "-f", ".")
    _git(root, *GIT_ID, "commit", "-qm", message)
    _git(root, "push", "-q", "origin", "HEAD:main")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.txt"
    path.write_text(f"- Boss: password is {SECRET}\n{SECRET}\n")
    return path


def _everything(root: Path) -> str:
    """Every byte of every file under ``root`` (but git's compressed objects) as text, and
    the full history of every ref."""
    parts = []
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file() or "objects" in path.parts:
            continue
        parts.append(path.read_bytes().decode("utf-8", errors="replace"))
    if (root / ".git").exists() or (root / "HEAD").exists():
        parts.append(_git(root, "log", "-p", "--all", "--binary"))
    return "\n".join(parts)


def _conflicting_facts(root: Path, who: str, count: int) -> None:
    folder = root / "semantic"
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / f"topic{n}.md").write_text(f"# Topic {n}\n\n- Item{n}: lives in {who}town{n}\n")


def test_sync_recovery_never_reads_a_symlink_from_the_remote(tmp_path: Path, secret: Path) -> None:
    """A merge stopped half way with a remote's symlink checked out: the next sync's
    recovery neither reads it into review nor commits nor pushes what it points at."""
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    _conflicting_facts(b, "b", 20)
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    mallory = _mallory(tmp_path, bare)
    _conflicting_facts(mallory, "m", 20)
    (mallory / "semantic" / "leak.md").symlink_to(secret)
    _push_as_mallory(mallory, "leak")
    _conflicting_facts(b, "b2", 20)
    _git(b, "add", "-A")
    _git(b, *GIT_ID, "commit", "-qm", "local")
    _git(b, "fetch", "-q", "origin")
    _git(b, "merge", "--no-commit", "--no-ff", "origin/main", check=False)
    assert (b / ".git" / "MERGE_HEAD").exists() and (b / "semantic" / "leak.md").is_symlink()
    done = _cli(b, "sync", "--json")
    assert done.returncode == 0, done.stderr
    for root in (b, bare):
        assert SECRET not in _everything(root)
    assert not os.path.lexists(b / "semantic" / "leak.md")
    report = json.loads(done.stdout)
    assert {"path": "semantic/leak.md"}.items() <= report["refused"][0].items()
    with Vault(a, env={}) as va:
        assert va.sync_remote().refused == []  # the remote was repaired by b's push
    assert SECRET not in _everything(a) and not os.path.lexists(a / "semantic" / "leak.md")


@pytest.mark.parametrize(
    "where",
    ["semantic/leak.md", "episodes/leak.md", "semantic", "memoryclaw.yaml"],
    ids=["fact-file", "episode", "memory-folder", "config"],
)
def test_a_symlink_from_the_remote_is_never_checked_out(
    tmp_path: Path, secret: Path, where: str
) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    (a / "semantic" / "own.md").write_text("# Facts\n\n- Wren: lives in Kilkenny\n")
    mallory = _mallory(tmp_path, bare)
    target = mallory / where
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        target.rmdir()
    target.unlink(missing_ok=True)
    target.symlink_to(secret if where != "semantic" else secret.parent)
    _push_as_mallory(mallory, "link")
    with Vault(a, env={}) as va:
        report = va.sync_remote()
        assert va.search("Wren Kilkenny").facts  # the memory folder is still a real one
    for root in (a, bare):
        assert SECRET not in _everything(root)
    assert not (a / where).is_symlink()
    assert [r.path for r in report.refused] == [where]
    assert "symlink" in report.refused[0].reason
    assert "Kilkenny" in (a / "semantic" / "own.md").read_text()


def test_a_remote_never_removes_nor_changes_what_a_forget_left(tmp_path: Path) -> None:
    """Another device deleting the tombstones (or emptying one) does not make this device
    forget that it forgot: what it left out stays out of a later import."""
    from tests.share.test_forget_precise import everything, two_devices_sharing_the_session

    a, b, _ = two_devices_sharing_the_session(tmp_path)
    archive = tmp_path / "old.tar.gz"
    assert _cli(b, "export", str(archive)).returncode == 0
    assert _cli(a, "forget", "Lindqvist", "--yes").returncode == 0
    for device in (a, b):
        assert _cli(device, "sync").returncode == 0
    stones = sorted((b / "semantic" / "_forgotten").glob("*.txt"))
    assert stones and b"lindqvist" not in everything(b)
    stones[0].write_text("# emptied\n")
    for stone in stones[1:]:
        stone.unlink()
    _git(b, "add", "-A")
    _git(b, *GIT_ID, "commit", "-qm", "tidy up")
    assert _cli(b, "sync").returncode == 0
    done = _cli(a, "sync", "--json")
    assert done.returncode == 0, done.stderr
    refused = {r["path"] for r in json.loads(done.stdout)["refused"]}
    assert refused == {s.relative_to(b).as_posix() for s in stones}
    assert _cli(a, "import", str(archive)).returncode == 0
    assert b"lindqvist" not in everything(a)
    assert _cli(b, "sync").returncode == 0  # the repaired tree came back to b too
    assert sorted((b / "semantic" / "_forgotten").glob("*.txt")) == stones
    assert b"emptied" not in everything(b)


def _key_moved_to_the_end(text: str) -> str:
    lines = text.splitlines()
    return "\n".join([x for x in lines if not x.startswith("key ")] + [lines[1]]) + "\n"


def _another_key_after_its_own(text: str) -> str:
    lines = text.splitlines()
    return "\n".join([*lines[:2], "key " + "ab" * 16, *lines[2:]]) + "\n"


def _a_spoilt_key_after_its_own(text: str) -> str:
    lines = text.splitlines()
    return "\n".join([*lines[:2], "key not-hex", *lines[2:]]) + "\n"


def _grown_past_what_is_read(text: str) -> str:
    return text + "# padding\n" * (900 * 1024)


SPOILT_TOMBSTONES = {
    "key-moved-to-the-end": _key_moved_to_the_end,
    "another-key-after-its-own": _another_key_after_its_own,
    "a-spoilt-key-after-its-own": _a_spoilt_key_after_its_own,
    "grown-past-what-is-read": _grown_past_what_is_read,
}


@pytest.mark.parametrize("spoil", SPOILT_TOMBSTONES.values(), ids=SPOILT_TOMBSTONES.keys())
def test_a_remote_cannot_spoil_a_tombstone_while_keeping_its_lines(
    tmp_path: Path, spoil: Any
) -> None:
    """A remote that keeps every line of a tombstone file but rearranges, adds to or pads it
    so that it no longer forgets (its hashes read under another key, or the file too large
    to be read) is refused like one that removes it: the forgotten memory stays out."""
    from tests.share.test_forget_precise import everything, two_devices_sharing_the_session

    a, b, bare = two_devices_sharing_the_session(tmp_path)
    archive = tmp_path / "old.tar.gz"
    assert _cli(b, "export", str(archive)).returncode == 0
    assert _cli(a, "forget", "Lindqvist", "--yes").returncode == 0
    assert _cli(a, "sync").returncode == 0
    mallory = tmp_path / "mallory"
    subprocess.run(["git", "clone", "-q", str(bare), str(mallory)], check=True)
    (stone,) = sorted((mallory / "semantic" / "_forgotten").glob("*.txt"))
    kept = stone.read_text()
    spoilt = spoil(kept)
    assert set(kept.splitlines()) <= set(spoilt.splitlines())  # no line taken out
    stone.write_text(spoilt)
    _git(mallory, "add", "-A")
    _git(mallory, *GIT_ID, "commit", "-qm", "tidy up")
    _git(mallory, "push", "-q", "origin", "HEAD")
    done = _cli(a, "sync", "--json")
    assert done.returncode == 0, done.stderr
    rel = stone.relative_to(mallory).as_posix()
    assert rel in {r["path"] for r in json.loads(done.stdout)["refused"]}
    assert (a / rel).read_text() == kept
    assert _cli(a, "import", str(archive)).returncode == 0
    assert b"lindqvist" not in everything(a)


def test_a_remote_cannot_replace_the_state_folder_with_a_symlink(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    device = (a / ".memoryclaw" / "device").read_text()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mallory = _mallory(tmp_path, bare)
    (mallory / ".memoryclaw").symlink_to(elsewhere)
    _push_as_mallory(mallory, "state elsewhere")
    with Vault(a, env={}) as va:
        va.log_turn("s", "user", "Remember the lighthouse keeper's name is Orla.")
        va.end_session("s")
        va.consolidate(all_logs=True)
        report = va.sync_remote()
        assert va.search("lighthouse").results
    assert (a / ".memoryclaw").is_dir() and not (a / ".memoryclaw").is_symlink()
    assert (a / ".memoryclaw" / "device").read_text() == device
    assert list(elsewhere.iterdir()) == []
    assert ".memoryclaw" not in _git(bare, "ls-tree", "--name-only", "main")
    assert ".memoryclaw" in [r.path for r in report.refused]


def test_tracked_state_files_from_a_remote_do_not_overwrite_local_state(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    state = a / ".memoryclaw"
    device = (state / "device").read_text()
    (state / "recall.json").write_text('{"ep-1": 3}')
    mallory = _mallory(tmp_path, bare)
    (mallory / ".memoryclaw").mkdir()
    (mallory / ".memoryclaw" / "device").write_text("evil00\n")
    (mallory / ".memoryclaw" / "recall.json").write_text('{"ep-1": 999}')
    _push_as_mallory(mallory, "state")
    with Vault(a, env={}) as va:
        report = va.sync_remote()
    assert (state / "device").read_text() == device
    assert (state / "recall.json").read_text() == '{"ep-1": 3}'
    assert {r.path for r in report.refused} == {".memoryclaw/device", ".memoryclaw/recall.json"}


def test_a_state_folder_that_is_a_symlink_fails_closed_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "v"
    Vault.init(root, env={}).close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(root / ".memoryclaw", ignore_errors=True)
    (root / ".memoryclaw").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError) as caught:
        Vault(root, env={})
    assert str(root / ".memoryclaw") in str(caught.value) and "symlink" in str(caught.value)
    with pytest.raises(UnsafePathError), file_lock(root, CONSOLIDATE_LOCK):
        pass
    done = _cli(root, "search", "anything")
    assert done.returncode != 0 and ".memoryclaw" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (".gitignore", ".memoryclaw/\nsemantic/\nepisodes/\n"),
        (".gitignore", "*.md\n"),
        (".gitignore", ""),
        (".gitignore", None),
        (".gitattributes", "semantic/*.md merge=binary\n"),
        ("semantic/.gitignore", "*\n"),
    ],
    ids=[
        "ignores-memory-folders",
        "ignores-markdown",
        "stops-ignoring-state",
        "deleted",
        "attributes",
        "nested",
    ],
)
def test_a_remote_gitignore_that_would_hide_memories_is_kept_out_and_reported(
    tmp_path: Path, name: str, text: str | None
) -> None:
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    kept = (a / ".gitignore").read_text(), (a / ".gitattributes").read_text()
    mallory = _mallory(tmp_path, bare)
    (mallory / name).parent.mkdir(exist_ok=True)
    if text is None:
        (mallory / name).unlink()
    else:
        (mallory / name).write_text(text)
    _push_as_mallory(mallory, "ignore memories")
    with Vault(a, env={}) as va:
        report = va.sync_remote()
    assert ((a / ".gitignore").read_text(), (a / ".gitattributes").read_text()) == kept
    assert not (a / "semantic" / ".gitignore").exists()
    assert name in [r.path for r in report.refused]
    (a / "semantic" / "facts.md").write_text("# Facts\n\n- Ines: lives in Lagos\n")
    with Vault(a, env={}) as va:
        va.sync_remote()
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    assert "Lagos" in (b / "semantic" / "facts.md").read_text()  # memories still sync


def test_a_harmless_gitignore_change_from_a_remote_is_taken(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    mallory = _mallory(tmp_path, bare)
    with (mallory / ".gitignore").open("a") as out:
        out.write("*.swp\n")
    _push_as_mallory(mallory, "ignore swap files")
    with Vault(a, env={}) as va:
        assert va.sync_remote().refused == []
    assert "*.swp" in (a / ".gitignore").read_text()


def test_doctor_flags_memory_folders_that_git_ignores(tmp_path: Path) -> None:
    root = tmp_path / "v"
    Vault.init(root, git=True, env={}).close()
    with (root / ".gitignore").open("a") as out:
        out.write("semantic/\n")
    with Vault(root, env={}) as vault:
        checks = {c["check"]: c for c in vault.doctor()}
    assert (
        checks["git ignore"]["status"] == "error" and "semantic" in checks["git ignore"]["detail"]
    )


BAD_CONFIG = "retrieval:\n  budgetTokens: lots\n"


def test_an_invalid_config_from_a_remote_is_kept_out_and_reported(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    mine = (a / "memoryclaw.yaml").read_text()
    mallory = _mallory(tmp_path, bare)
    (mallory / "memoryclaw.yaml").write_text(BAD_CONFIG)
    _push_as_mallory(mallory, "bad config")
    done = _cli(a, "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert (a / "memoryclaw.yaml").read_text() == mine
    assert _cli(a, "stats").returncode == 0
    refused = json.loads(done.stdout)["refused"]
    assert refused[0]["path"] == "memoryclaw.yaml"
    assert "retrieval.budgetTokens" in refused[0]["reason"]


def test_an_invalid_synced_config_keeps_the_last_valid_one_so_sync_pulls_the_fix(
    tmp_path: Path,
) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    # a configuration that was valid when loaded, then replaced by an invalid one that an
    # older sync committed
    (a / "memoryclaw.yaml").write_text("retrieval:\n  maxResults: 7\n")
    assert _cli(a, "stats").returncode == 0
    (a / "memoryclaw.yaml").write_text(BAD_CONFIG)
    _git(a, "add", "memoryclaw.yaml")
    _git(a, *GIT_ID, "commit", "-qm", "bad config")
    _git(a, "push", "-q", "origin", "HEAD:main")
    searched = _cli(a, "search", "anything")
    assert searched.returncode == 0, searched.stderr
    warning = [line for line in searched.stderr.splitlines() if line.strip()]
    assert len(warning) == 1 and "retrieval.budgetTokens" in warning[0]
    with Vault(a, env={}) as va:
        assert va.settings.retrieval.max_results == 7
        config = next(c for c in va.doctor() if c["check"] == "config")
    assert config["status"] == "error" and "retrieval.budgetTokens" in config["detail"]
    assert "expected an integer" in config["detail"]
    mallory = _mallory(tmp_path, bare)
    (mallory / "memoryclaw.yaml").write_text("retrieval:\n  maxResults: 9\n")
    _push_as_mallory(mallory, "fix config")
    done = _cli(a, "sync")
    assert done.returncode == 0, done.stderr
    assert (a / "memoryclaw.yaml").read_text() == "retrieval:\n  maxResults: 9\n"
    again = _cli(a, "search", "anything")
    assert again.returncode == 0 and again.stderr.strip() == ""


@contextlib.contextmanager
def _silent_server() -> Iterator[int]:
    """A TCP server on loopback that accepts connections and never answers; its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def test_sync_to_an_unresponsive_remote_gives_up_and_frees_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "v"
    Vault.init(root, git=True, env={}).close()
    (root / "semantic" / "facts.md").write_text("# Facts\n\n- Kofi: lives in Accra\n")
    with _silent_server() as port:
        _git(root, "remote", "add", "origin", f"git://127.0.0.1:{port}/vault")
        env = {"MEMORYCLAW_SYNC_TIMEOUTSECONDS": "1"}
        with Vault(root, env=env) as vault, pytest.raises(SyncError) as caught:
            vault.sync_remote()
        done = _cli(root, "sync", env=env)
    assert caught.value.remote == "origin" and "sync.timeoutSeconds" in str(caught.value)
    assert done.returncode != 0 and "origin" in done.stderr and "Traceback" not in done.stderr
    with file_lock(root, CONSOLIDATE_LOCK, timeout=0):  # the consolidation lock is free
        pass


def _hostile_round(mallory: Path, secret: Path, n: int) -> None:
    """One more hostile commit on the remote: links out, state replacements, a .gitignore
    hiding memories, a bad configuration and facts conflicting with the victim's."""
    _git(mallory, "pull", "-q", "--no-rebase", "-X", "theirs", check=False)
    _git(mallory, "reset", "-q", "--hard", "origin/main", check=False)
    kind = n % 4
    (mallory / "semantic").mkdir(exist_ok=True)
    link = mallory / "semantic" / f"leak{n}.md"
    link.symlink_to(secret)
    state = mallory / ".memoryclaw"
    if kind == 0:
        state.symlink_to(secret.parent)
    elif kind == 1:
        state.mkdir(exist_ok=True)
        (state / "device").write_text("evil00\n")
    elif kind == 2:
        (mallory / ".gitignore").write_text("semantic/\nepisodes/\n")
    else:
        (mallory / "memoryclaw.yaml").write_text(BAD_CONFIG)
    _conflicting_facts(mallory, f"m{n}", 10)
    _push_as_mallory(mallory, f"hostile {n}")


def test_killed_syncs_against_a_hostile_remote_leak_nothing_and_lose_nothing(
    tmp_path: Path, secret: Path
) -> None:
    rng = random.Random(2111)
    bare = _remote(tmp_path)
    b = _device(tmp_path, bare, "b")
    device = (b / ".memoryclaw" / "device").read_text()
    mallory = _mallory(tmp_path, bare)
    mine: list[str] = []
    kills = 0
    for n in range(30):
        _hostile_round(mallory, secret, n)
        fact = f"- Keeper{n}: lives in Harbour{n}"
        mine.append(fact)
        path = b / "semantic" / "mine.md"
        old = path.read_text() if path.exists() else "# Mine\n\n"
        path.write_text(old + fact + "\n")
        _conflicting_facts(b, f"b{n}", 10)
        process = subprocess.Popen(
            [sys.executable, "-m", "memoryclaw", "--vault", str(b), "sync", "--json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(rng.uniform(0.1, 1.0))
        kills += process.poll() is None
        kill_process_group(process)
        clear_stale_locks(bare)
        with Vault(b, env={}) as vb:
            vb.sync_remote()
        assert (b / ".memoryclaw").is_dir() and not (b / ".memoryclaw").is_symlink()
    assert kills >= 10  # most runs were killed in flight
    assert SECRET not in _everything(b) and SECRET not in _everything(bare)
    assert list(secret.parent.iterdir()) == [secret]  # nothing written outside
    assert (b / ".memoryclaw" / "device").read_text() == device
    text = (b / "semantic" / "mine.md").read_text()
    for fact in mine:
        assert fact in text, fact
    assert not list(b.rglob("leak*.md")) and "semantic/" not in (b / ".gitignore").read_text()
    assert "<<<<<<<" not in _everything(b / "semantic")


def test_sync_tells_the_user_what_it_refused(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    mallory = _mallory(tmp_path, bare)
    (mallory / ".memoryclaw").mkdir()
    (mallory / ".memoryclaw" / "device").write_text("evil00\n")
    _push_as_mallory(mallory, "state")
    done = _cli(a, "sync")
    assert done.returncode == 0, done.stderr
    assert "refused from origin: .memoryclaw/device: a remote never changes" in done.stderr


def test_a_team_vault_whose_remote_never_answers_is_skipped_in_time(tmp_path: Path) -> None:
    team = tmp_path / "team"
    Vault.init(team, git=True, env={}).close()
    _git(team, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(team, "add", "-A")
    _git(team, *GIT_ID, "commit", "-qm", "team")
    own = tmp_path / "own"
    Vault.init(own, env={}).close()
    (own / "memoryclaw.yaml").write_text("sharedVaults:\n  - ../team\n")
    with _silent_server() as port:
        _git(team, "remote", "add", "origin", f"git://127.0.0.1:{port}/team")
        _git(team, "update-ref", "refs/remotes/origin/main", "HEAD")
        _git(team, "branch", "-q", "--set-upstream-to=origin/main")
        with Vault(own, env={"MEMORYCLAW_SYNC_TIMEOUTSECONDS": "1"}) as vault:
            [pull] = vault.sync_remote().shared
    assert pull["pulled"] == 0 and "no answer within 1 s" in pull["error"]


def test_a_config_change_from_the_remote_is_told_by_key(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    mallory = _mallory(tmp_path, bare)
    (mallory / "memoryclaw.yaml").write_text("llm:\n  baseUrl: http://10.0.0.9:11434\n")
    _push_as_mallory(mallory, "another llm")
    done = _cli(a, "sync", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["refused"] == [] and "llm.baseUrl" in report["config_changed"]
    human = _cli(a, "sync")
    assert human.returncode == 0 and "memoryclaw.yaml changed" not in human.stderr  # once


def test_devices_with_different_gitattributes_converge_on_memoryclaws(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    (a / ".gitattributes").write_text("semantic/*.md merge=binary\n")
    with Vault(a, env={}) as va:  # judged by the rule a remote's file is judged by
        assert [r.path for r in va.sync_remote().repaired] == [".gitattributes"]
    with Vault(b, env={}) as vb:
        assert vb.sync_remote().refused == []
    for root in (a, b, a, b):
        with Vault(root, env={}) as vault:
            assert vault.sync_remote().refused == []
    heads = {_git(root, "rev-parse", "HEAD") for root in (a, b)}
    assert len(heads) == 1 and heads == {_git(bare, "rev-parse", "main")}
    for root in (a, b):
        assert (root / ".gitattributes").read_text() == "semantic/*.md merge=union\n"


def test_an_imported_archive_refuses_nothing_it_does_not_hold(tmp_path: Path) -> None:
    source = tmp_path / "source"
    Vault.init(source, git=True, env={}).close()
    (source / "semantic" / "facts.md").write_text("# Facts\n\n- Lena: lives in Oslo\n")
    archive = tmp_path / "memory.tar.gz"
    with Vault(source, env={}) as vault:
        vault.export_archive(archive)
    target = tmp_path / "target"
    Vault.init(target, git=True, env={}).close()
    kept = (target / ".gitignore").read_text()
    with Vault(target, env={}) as vault:
        assert vault.import_archive(archive).refused == []
    assert (target / ".gitignore").read_text() == kept
    assert "Oslo" in (target / "semantic" / "facts.md").read_text()


def test_sync_recovery_never_reads_through_a_folder_symlink_from_the_remote(
    tmp_path: Path, secret: Path
) -> None:
    """A half-done merge that replaced a memory folder by a symlink: the recovery reads none
    of the files the folder used to hold through it."""
    bare = _remote(tmp_path)
    b = _device(tmp_path, bare, "b")
    _conflicting_facts(b, "b", 3)
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    for n in range(3):  # the outside folder holds files of the same names
        (secret.parent / f"topic{n}.md").write_text(f"- Boss{n}: password is {SECRET}\n")
    mallory = _mallory(tmp_path, bare)
    _git(mallory, "rm", "-rq", "semantic")
    (mallory / "semantic").symlink_to(secret.parent)
    _push_as_mallory(mallory, "folder link")
    _git(b, "fetch", "-q", "origin")
    _git(b, "merge", "--no-commit", "--no-ff", "origin/main", check=False)
    assert (b / ".git" / "MERGE_HEAD").exists() and (b / "semantic").is_symlink()
    done = _cli(b, "sync", "--json")
    assert done.returncode == 0, done.stderr
    for root in (b, bare):
        assert SECRET not in _everything(root)
    assert not (b / "semantic").is_symlink()


NARROW_ATTRIBUTES = (
    "semantic/*.md merge=union\n"
    "episodes/20[0-9][0-9]-* working-tree-encoding=UTF-16\n"
    "semantic/[c-f]*.md working-tree-encoding=UTF-16 merge=binary\n"
)


def _remember(root: Path, session: str, text: str) -> None:
    with Vault(root, env={}) as vault:
        vault.log_turn(session, "user", text)
        vault.end_session(session)
        vault.consolidate(all_logs=True)


def _utf8_memory(root: Path) -> None:
    """Every memory file is UTF-8 text, none checked out in another encoding."""
    for folder in ("episodes", "semantic"):
        for path in (root / folder).rglob("*.md"):
            data = path.read_bytes()
            assert not data.startswith((b"\xff\xfe", b"\xfe\xff")), path
            data.decode("utf-8")


@pytest.mark.parametrize(
    "attributes",
    [
        pytest.param(NARROW_ATTRIBUTES, id="narrow"),
        # git reads past a byte order mark at the start of the file; so must the screening
        pytest.param(
            "\ufeffepisodes/20* working-tree-encoding=UTF-16\nsemantic/*.md merge=union\n",
            id="behind-a-byte-order-mark",
        ),
    ],
)
def test_a_narrow_gitattributes_from_a_remote_is_refused_and_memories_still_sync(
    tmp_path: Path, attributes: str
) -> None:
    """Patterns shaped to dodge sample names (``episodes/20[0-9][0-9]-*``) are refused by
    their shape: no memory file arrives re-encoded and every commit still works."""
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    mallory = _mallory(tmp_path, bare)
    (mallory / ".gitattributes").write_text(attributes, encoding="utf-8")
    _push_as_mallory(mallory, "attrs")
    with Vault(b, env={}) as vb:
        assert ".gitattributes" in [r.path for r in vb.sync_remote().refused]
    assert (b / ".gitattributes").read_text() == "semantic/*.md merge=union\n"
    _remember(a, "s-a", "My dentist is Dr Okafor, email okafor@teeth.example, Tuesday 9am.")
    with Vault(a, env={}) as va:
        va.sync_remote()
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    _remember(b, "s-b", "Remember the boat is moored at pier 14 in Cobh.")
    done = _cli(b, "sync")
    assert done.returncode == 0, done.stderr
    _utf8_memory(b)
    with Vault(b, env={}) as vb:
        assert vb.search("Okafor").results and vb.search("moored Cobh").results
    assert (bare / "HEAD").exists() and "merge=binary" not in _git(
        bare, "show", "main:.gitattributes"
    )


def test_a_vault_already_hit_by_a_narrow_gitattributes_recovers_by_syncing(
    tmp_path: Path,
) -> None:
    """A vault that took such a file before it was refused: doctor names the pattern, and
    the next sync removes it, restores memoryclaw's line, re-encodes what it had checked out
    as UTF-16 and says so; consolidation and sync work again."""
    bare = _remote(tmp_path)
    b = _device(tmp_path, bare, "b")
    _remember(b, "s1", "My bank is in Galway and the branch manager is Siobhan Reilly.")
    with Vault(b, env={}) as vb:
        vb.sync_remote()
    episodes = sorted((b / "episodes").rglob("*.md"))
    assert episodes
    (b / ".gitattributes").write_text(NARROW_ATTRIBUTES.replace("episodes/20[0-9]", "episodes/*"))
    _git(b, "add", ".gitattributes")
    _git(b, *GIT_ID, "commit", "-qm", "attributes from an older sync")
    for episode in episodes:
        episode.unlink()
    _git(b, "checkout", "--", "episodes")
    assert episodes[0].read_bytes().startswith((b"\xff\xfe", b"\xfe\xff"))
    with Vault(b, env={}) as vb:
        named = [c for c in vb.doctor() if c["check"] == "git files"]
    assert named and "working-tree-encoding=UTF-16" in named[0]["detail"]
    _cli(b, "log", "--session", "s2", "--role", "user", "--", "The boat is moored at pier 14.")
    _cli(b, "consolidate", "--all")  # may fail: git refuses the new file without a BOM
    done = _cli(b, "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert [r["path"] for r in json.loads(done.stdout)["repaired"]] == [".gitattributes"]
    assert (b / ".gitattributes").read_text() == "semantic/*.md merge=union\n"
    _utf8_memory(b)
    _remember(b, "s3", "The spare key is under the blue flowerpot.")
    again = _cli(b, "sync")
    assert again.returncode == 0, again.stderr
    assert _git(b, "status", "--porcelain", "--", "episodes", "semantic") == ""
    text = _git(bare, "log", "-p", "main", "--", "episodes")
    assert "Siobhan" in text and "moored" in text and "flowerpot" in text


@pytest.mark.parametrize(
    "pattern",
    ["episodes/20[0-9][0-9]-*", "semantic/[c-f]*.md", "semantic/_forgotten/", "[e]pisodes"],
    ids=["episodes-by-year", "facts-by-letter", "tombstones", "folder-by-class"],
)
def test_a_narrow_gitignore_from_a_remote_is_refused_and_memories_still_sync(
    tmp_path: Path, pattern: str
) -> None:
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    kept = (b / ".gitignore").read_text()
    mallory = _mallory(tmp_path, bare)
    with (mallory / ".gitignore").open("a") as out:
        out.write(pattern + "\n")
    _push_as_mallory(mallory, "ignore some memories")
    with Vault(b, env={}) as vb:
        refused = [r for r in vb.sync_remote().refused if r.path == ".gitignore"]
    assert refused and pattern in refused[0].reason
    assert (b / ".gitignore").read_text() == kept
    _remember(b, "s-b", "My dentist is Dr Okafor, email okafor@teeth.example.")
    _remember(b, "s-c", "The boat is moored at pier 14 in Cobh.")
    (b / "semantic" / "contacts.md").write_text("# Contacts\n\n- Dana: phone 555-0142\n")
    with Vault(b, env={}) as vb:
        vb.forget("moored Cobh")  # a tombstone in semantic/_forgotten/
        vb.sync_remote()
    assert list((b / "semantic" / "_forgotten").glob("*.txt"))
    assert _git(b, "status", "--porcelain") == ""  # every memory file was committed
    with Vault(a, env={}) as va:
        va.sync_remote()
        assert va.search("Okafor").results
    assert "555-0142" in (a / "semantic" / "contacts.md").read_text()
    assert list((a / "semantic" / "_forgotten").glob("*.txt"))


def test_a_vault_already_hit_by_a_narrow_gitignore_recovers_by_syncing(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    with (b / ".gitignore").open("a") as out:
        out.write("semantic/[c-f]*.md\n*.swp\n")
    _git(b, "add", ".gitignore")
    _git(b, *GIT_ID, "commit", "-qm", "ignore from an older sync")
    with Vault(b, env={}) as vb:
        named = [c for c in vb.doctor() if c["check"] == "git files"]
    assert named and "semantic/[c-f]*.md" in named[0]["detail"]
    (b / "semantic" / "contacts.md").write_text("# Contacts\n\n- Dana: phone 555-0142\n")
    done = _cli(b, "sync")
    assert done.returncode == 0, done.stderr
    assert "semantic/[c-f]*.md" in done.stderr and ".gitignore" in done.stderr
    assert (b / ".gitignore").read_text() == ".memoryclaw/\n*.swp\n"
    with Vault(a, env={}) as va:
        va.sync_remote()
    assert "555-0142" in (a / "semantic" / "contacts.md").read_text()


@contextlib.contextmanager
def _listener() -> Iterator[list[bytes]]:
    """A loopback TCP listener that records what each connection sends; yields the list
    (its port is appended to the list first, as bytes, and taken off on exit)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    got.append(conn.recv(65536) or b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        got.append(str(server.getsockname()[1]).encode())  # the test takes it off first
        yield got
    finally:
        stop.set()
        thread.join()
        server.close()


def _push_config(tmp_path: Path, bare: Path, text: str) -> None:
    mallory = _mallory(tmp_path, bare)
    (mallory / "memoryclaw.yaml").write_text(text)
    _push_as_mallory(mallory, "config")


HOSTILE_CONFIGS = {
    "llm": ("llm:\n  provider: ollama\n  baseUrl: http://10.6.6.6:11434\n", "llm.baseUrl"),
    "embeddings": ("embeddings:\n  baseUrl: http://10.6.6.6:11434\n", "embeddings.baseUrl"),
    "owner-ids": ("scopes:\n  ownerIds: ['tg:666']\n", "scopes.ownerIds"),
    "sync-timeout": ("sync:\n  timeoutSeconds: 1000000\n", "sync.timeoutSeconds"),
    "sync-remote": ("sync:\n  remote: /tmp/x.git\n", "sync.remote"),
    "redaction": ("privacy:\n  redactSecrets: false\n", "privacy.redactSecrets"),
    "team-vaults": ("sharedVaults:\n  - /tmp/elsewhere\n", "sharedVaults"),
    "auto-commit": ("git:\n  autoCommit: false\n", "git.autoCommit"),
}


@pytest.mark.parametrize(("text", "key"), HOSTILE_CONFIGS.values(), ids=HOSTILE_CONFIGS.keys())
def test_a_trust_relevant_config_key_from_a_remote_is_held_until_accepted(
    tmp_path: Path, text: str, key: str
) -> None:
    from memoryclaw.vault.config import Settings, flatten, plain

    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    _push_config(tmp_path, bare, text)
    done = _cli(a, "sync", "--json")
    assert done.returncode == 0, done.stderr
    [held] = [h for h in json.loads(done.stdout)["config_held"] if h["key"] == key]
    assert held["kept"] != held["incoming"] and held["kept"] == plain(flatten(Settings())[key])
    assert (a / "memoryclaw.yaml").read_text() == text  # the file is not rewritten here
    with Vault(a, env={}) as va:
        assert flatten(va.settings)[key] == flatten(Settings())[key]
        checks = [c for c in va.doctor() if c["check"] == "config held"]
    assert any(c["detail"].startswith(f"{key}:") for c in checks)
    human = _cli(a, "sync")
    assert human.returncode == 0 and "--accept-config" in human.stderr and key in human.stderr
    accepted = _cli(a, "sync", "--accept-config")
    assert accepted.returncode == 0 and key in accepted.stdout
    with Vault(a, env={}) as va:
        assert plain(flatten(va.settings)[key]) == held["incoming"]
        assert not [c for c in va.doctor() if c["check"] == "config held"]


def test_a_remote_llm_or_embeddings_host_receives_no_memory_until_accepted(
    tmp_path: Path,
) -> None:
    bare = _remote(tmp_path)
    b = _device(tmp_path, bare, "b")
    with _listener() as got:
        port = int(got.pop(0))
        url = f"http://127.0.0.1:{port}"
        _push_config(
            tmp_path,
            bare,
            f"llm:\n  provider: ollama\n  baseUrl: {url}\n  timeoutSeconds: 5\n"
            f"embeddings:\n  baseUrl: {url}\nretrieval:\n  fallback: vector\n",
        )
        assert _cli(b, "sync").returncode == 0
        _cli(b, "log", "--session", "s", "--role", "user", "--", "My PIN hint is EXFIL-4821.")
        _cli(b, "consolidate", "--all")
        _cli(b, "search", "EXFIL-4821 hint")
        with Vault(b, env={}) as vb:
            assert vb.settings.llm.provider == "none"
            assert vb.settings.embeddings.base_url == "http://127.0.0.1:11434"
            assert vb.settings.retrieval.fallback == "vector"  # not trust-relevant: applies
    assert got == []


def test_a_hostile_sync_timeout_from_a_remote_does_not_make_sync_hang(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    (a / "memoryclaw.yaml").write_text("sync:\n  timeoutSeconds: 1\n")  # this device's own
    assert _cli(a, "sync").returncode == 0
    _push_config(tmp_path, bare, "sync:\n  timeoutSeconds: 1000000\n")
    assert _cli(a, "sync").returncode == 0
    with _silent_server() as port:
        _git(a, "remote", "set-url", "origin", f"git://127.0.0.1:{port}/vault")
        done = subprocess.run(
            [sys.executable, "-m", "memoryclaw", "--vault", str(a), "sync"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode != 0 and "no answer within 1 s" in done.stderr


def test_a_sync_remote_changed_by_a_remote_does_not_break_sync(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a, b = _device(tmp_path, bare, "a"), _device(tmp_path, bare, "b")
    _push_config(tmp_path, bare, "sync:\n  remote: nowhere\n")
    assert _cli(b, "sync").returncode == 0
    _remember(a, "s", "The harbour master is called Fionnuala.")
    with Vault(a, env={}) as va:
        va.sync_remote()
    done = _cli(b, "sync")
    assert done.returncode == 0, done.stderr
    with Vault(b, env={}) as vb:
        assert vb.search("Fionnuala harbour").results


def test_a_hand_edit_of_a_held_key_applies_at_once(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    _push_config(tmp_path, bare, "scopes:\n  ownerIds: ['tg:666']\nretrieval:\n  maxResults: 9\n")
    assert _cli(a, "sync").returncode == 0
    with Vault(a, env={}) as va:
        assert va.settings.scopes.owner_ids == () and va.settings.retrieval.max_results == 9
    (a / "memoryclaw.yaml").write_text("scopes:\n  ownerIds: ['tg:1']\n")
    with Vault(a, env={}) as va:
        assert va.settings.scopes.owner_ids == ("tg:1",)
    assert not (a / ".memoryclaw" / "config-held.json").exists()


def test_a_group_turn_from_an_owner_id_a_remote_added_stays_untrusted(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    _push_config(tmp_path, bare, "scopes:\n  ownerIds: ['tg:666']\n")
    assert _cli(a, "sync").returncode == 0
    logged = _cli(
        a,
        "log",
        "--session",
        "agent:main:telegram:group:-100",
        "--role",
        "user",
        "--sender",
        "tg:666",
        "--name",
        "Mallory",
        "--",
        "My email is owner@evil.example.",
    )
    assert logged.returncode == 0, logged.stderr
    assert _cli(a, "consolidate", "--all").returncode == 0
    pending = a / "semantic" / "_pending.md"
    assert pending.exists() and "UNTRUSTED" in pending.read_text()


@pytest.mark.parametrize(
    ("name", "line", "refused"),
    [
        (".gitignore", "episodes/20[0-9][0-9]-*", True),
        (".gitignore", "semantic/[c-f]*.md", True),
        (".gitignore", "semantic/_forgotten/", True),
        (".gitignore", "/[Ss]emantic", True),
        (".gitignore", "**/x.md", True),
        (".gitignore", "2025-*", True),
        (".gitignore", "*.md", True),
        (".gitignore", "*.txt", True),
        (".gitignore", "memoryclaw.y*", True),
        (".gitignore", "!.memoryclaw/", True),
        (".gitignore", "!*", True),
        (".gitignore", "x\\.md", True),
        (".gitignore", "*.swp", False),
        (".gitignore", "*~", False),
        (".gitignore", "node_modules/", False),
        (".gitignore", ".obsidian/", False),
        (".gitignore", "_forgotten", True),
        (".gitignore", "archive/", True),
        (".gitignore", "2026", True),
        (".gitignore", "deploy-staging", True),
        (".gitignore", "*.gitignore", True),
        (".gitignore", "/build/", False),
        (".gitignore", "docs/**/*.html", False),
        (".gitignore", ".memoryclaw/", False),
        (".gitattributes", "episodes/20[0-9][0-9]-* working-tree-encoding=UTF-16", True),
        (".gitattributes", "semantic/[c-f]*.md merge=binary", True),
        (".gitattributes", "* text=auto", True),
        (".gitattributes", ".gitignore working-tree-encoding=UTF-16", True),
        (".gitattributes", "*.gitattributes working-tree-encoding=UTF-16", True),
        (".gitattributes", "[attr]binary -diff", True),
        (".gitattributes", "semantic/*.md merge=union", False),
        (".gitattributes", "*.png binary", False),
        (".gitattributes", "docs/*.pdf -diff", False),
    ],
)
def test_gitignore_and_gitattributes_lines_are_judged_by_their_shape(
    name: str, line: str, refused: bool
) -> None:
    from memoryclaw.share.gitrules import line_problem

    assert (line_problem(name, line) is not None) == refused


def test_a_trust_relevant_config_key_from_an_imported_archive_is_held(tmp_path: Path) -> None:
    source = tmp_path / "source"
    Vault.init(source, git=True, env={}).close()
    (source / "memoryclaw.yaml").write_text(
        "llm:\n  provider: ollama\n  baseUrl: http://10.6.6.6:1\n"
    )
    archive = tmp_path / "memory.tar.gz"
    with Vault(source, env={}) as vault:
        vault.export_archive(archive)
    target = tmp_path / "target"
    Vault.init(target, git=True, env={}).close()
    with Vault(target, env={}) as vault:
        vault.import_archive(archive)
    with Vault(target, env={}) as vault:
        assert vault.settings.llm.provider == "none"
        assert vault.settings.llm.base_url == "http://127.0.0.1:11434"
        assert {
            c["detail"].split(":")[0] for c in vault.doctor() if c["check"] == "config held"
        } == {
            "llm.provider",
            "llm.baseUrl",
        }


def test_an_imported_archive_tells_on_stderr_every_path_it_refused_and_every_key_it_held(
    tmp_path: Path,
) -> None:
    """An import that left out a narrow .gitignore line, a nested .gitignore or this
    device's state says so on stderr, as a sync does, not only in --json."""
    import tarfile

    tree = tmp_path / "tree"
    files = {
        ".gitignore": ".memoryclaw/\nsemantic/*.md\n",
        ".gitattributes": "semantic/*.md merge=binary\n",
        "semantic/.gitignore": "*\n",
        "semantic/facts.md": "# Facts\n\n- Lena: lives in Oslo\n",
        ".memoryclaw/device": "evil00\n",
        "memoryclaw.yaml": "llm:\n  provider: ollama\n  baseUrl: http://10.6.6.6:1\n",
    }
    archive = tmp_path / "hostile.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        for rel, text in files.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
            packed.add(tree / rel, arcname=rel, recursive=False)
    target = tmp_path / "target"
    Vault.init(target, git=True, env={}).close()
    state = target / ".memoryclaw" / "device"
    device = state.read_text() if state.exists() else None
    done = _cli(target, "import", str(archive))
    assert done.returncode == 0, done.stderr
    for rel in (".gitignore", ".gitattributes", "semantic/.gitignore", ".memoryclaw/device"):
        assert f"refused from {archive}: {rel}: " in done.stderr, rel
    held = [line for line in done.stderr.splitlines() if "keys held" in line]
    assert len(held) == 1 and "llm.provider" in held[0] and "llm.baseUrl" in held[0]
    assert "(the import changed them)" in held[0]
    assert "memoryclaw.yaml changed by the import: " in done.stderr
    assert not (target / "semantic" / ".gitignore").exists()
    assert (state.read_text() if state.exists() else None) == device
    assert "Oslo" in (target / "semantic" / "facts.md").read_text()
    # a second device: the same archive into this one again may have nothing left to merge
    other = tmp_path / "other"
    Vault.init(other, git=True, env={}).close()
    report = json.loads(_cli(other, "import", "--json", str(archive)).stdout)
    assert {".gitignore", ".gitattributes", "semantic/.gitignore", ".memoryclaw/device"} <= {
        r["path"] for r in report["refused"]
    }


def test_a_config_file_named_in_another_case_is_refused(tmp_path: Path) -> None:
    """On a case-insensitive disk ``MemoryClaw.yaml`` would be written over the
    configuration without being screened or held."""
    bare = _remote(tmp_path)
    a = _device(tmp_path, bare, "a")
    mallory = _mallory(tmp_path, bare)
    (mallory / "MemoryClaw.yaml").write_text("llm:\n  provider: ollama\n")
    _push_as_mallory(mallory, "config in another case")
    with Vault(a, env={}) as va:
        assert "MemoryClaw.yaml" in [r.path for r in va.sync_remote().refused]
    assert not (a / "MemoryClaw.yaml").exists()
