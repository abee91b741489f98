"""Disk I/O: atomic writes, permissions, safe paths, bounded reads, scans and locks."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryclaw.errors import LockTimeoutError, ParseError, UnsafePathError, VaultNotFoundError
from memoryclaw.vault.files import (
    atomic_write,
    atomic_write_all,
    classify,
    durable_batch,
    file_lock,
    is_staged,
    read_text,
    require_vault,
    resolve_inside,
    safe_relpath,
    staged_writes,
    unique_path,
)
from memoryclaw.vault.scanning import scan

from ..conftest import run_bounded


def test_atomic_write_creates_private_file_and_folders(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "note.md"
    atomic_write(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["note.md"]  # no temp file left


BATCH_WRITER = """
import sys
from pathlib import Path
from memoryclaw.vault.files import atomic_write, durable_batch

root = Path(sys.argv[1])
with durable_batch():
    for n in range(int(sys.argv[2])):
        atomic_write(root / f"f{n}.md", f"new {n}\\n" + "n" * 2_000_000)
        print(n, flush=True)
print("done", flush=True)
"""
BATCH_FILES = 12


@pytest.mark.parametrize("written", [0, 1, 5, 11], ids=["first", "second", "middle", "last"])
def test_a_batch_killed_mid_way_leaves_each_file_old_or_new(tmp_path: Path, written: int) -> None:
    """A real process is killed with SIGKILL just after its ``written``-th write of a batch
    (most likely inside the next one): every file holds its old text or its new one."""
    old = {n: f"old {n}\n" + "o" * (1000 * n) for n in range(BATCH_FILES)}
    new = {n: f"new {n}\n" + "n" * 2_000_000 for n in range(BATCH_FILES)}
    for n, text in old.items():
        atomic_write(tmp_path / f"f{n}.md", text)
    child = subprocess.Popen(
        [sys.executable, "-c", BATCH_WRITER, str(tmp_path), str(BATCH_FILES)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        for _ in range(written + 1):
            assert child.stdout.readline().strip() != "done"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    found = {n: (tmp_path / f"f{n}.md").read_text() for n in range(BATCH_FILES)}
    assert all(found[n] in (old[n], new[n]) for n in range(BATCH_FILES))
    assert all(found[n] == new[n] for n in range(written + 1))


def test_a_finished_batch_wrote_every_file_and_left_no_temp_file(tmp_path: Path) -> None:
    with durable_batch() as batch, durable_batch() as inner:
        atomic_write(tmp_path / "a" / "one.md", "one")
        atomic_write(tmp_path / "b" / "two.md", "two")
        assert inner is batch  # a nested block joins the outer one
        assert batch.folders == {tmp_path / "a", tmp_path / "b"}
    assert (tmp_path / "a" / "one.md").read_text() == "one"
    assert (tmp_path / "b" / "two.md").read_text() == "two"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "one.md", "two.md"]


def test_staged_writes_are_read_back_and_reach_the_disk_only_when_written(
    tmp_path: Path,
) -> None:
    """Writes in a staged block are held (read_text and is_staged see them, the disk does
    not) until atomic_write_all writes them, each file once with its last text."""
    (tmp_path / "semantic").mkdir()
    atomic_write(tmp_path / "semantic" / "a.md", "old\n")
    with staged_writes() as staged:
        atomic_write(tmp_path / "semantic" / "a.md", "one\n")
        atomic_write(tmp_path / "semantic" / "a.md", "one\ntwo\n")
        atomic_write(tmp_path / "new" / "b.md", "b\n")
        assert read_text(tmp_path, "semantic/a.md") == "one\ntwo\n"
        assert is_staged(tmp_path / "new" / "b.md")
        assert (tmp_path / "semantic" / "a.md").read_text() == "old\n"
        assert not (tmp_path / "new").exists()
    assert not is_staged(tmp_path / "new" / "b.md")
    atomic_write_all(list(staged.items()))
    assert (tmp_path / "semantic" / "a.md").read_text() == "one\ntwo\n"
    assert (tmp_path / "new" / "b.md").read_text() == "b\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.md", "b.md", "new", "semantic"]


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "note.md"
    atomic_write(target, "x" * 10_000)
    atomic_write(target, "short")
    assert target.read_text() == "short"


@pytest.mark.parametrize(
    "bad",
    ["../x.md", "a/../../x.md", "/etc/passwd", "", "a/\x00b", "..", "C:/x"],
    ids=["parent", "nested-parent", "absolute", "empty", "nul", "dotdot", "drive"],
)
def test_safe_relpath_refuses_escapes(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        safe_relpath(bad)


def test_safe_relpath_normalises() -> None:
    assert safe_relpath("episodes//./a.md") == "episodes/a.md"
    assert safe_relpath("episodes\\a.md") == "episodes/a.md"


def test_resolve_inside_refuses_link_out(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "episodes").mkdir(parents=True)
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    (root / "episodes" / "link.md").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="outside the vault"):
        resolve_inside(root.resolve(), "episodes/link.md")


def test_read_text_limits_and_encodings(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "big.md").write_bytes(b"a" * 2048)
    with pytest.raises(ParseError, match="limit"):
        read_text(root, "big.md", max_bytes=1024)
    (root / "bin.md").write_bytes(b"abc\x00def")
    with pytest.raises(ParseError, match="binary"):
        read_text(root, "bin.md")
    (root / "latin.md").write_bytes(b"line one\nline two\ncaf\xe9\n")
    with pytest.raises(ParseError) as info:
        read_text(root, "latin.md")
    assert info.value.line == 3 and "UTF-8" in info.value.reason
    with pytest.raises(ParseError, match="disappeared"):
        read_text(root, "missing.md")


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("episodes/a.md", "episode"),
        ("episodes/2025/a.md", "episode"),
        ("semantic/contacts.md", "facts"),
        ("semantic/aliases.yaml", "aliases"),
        ("semantic/_pending.md", "pending"),
        ("episodes/.hidden.md", None),
        ("episodes/a.txt", None),
        ("logs/x_raw.md", "log"),
        ("logs/processed/x_raw.md", None),
    ],
    ids=["episode", "nested", "facts", "aliases", "pending", "hidden", "txt", "log", "processed"],
)
def test_classify(rel: str, kind: str | None) -> None:
    assert classify(rel) == kind


def test_scan_reports_links_out_and_follows_links_in(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "episodes").mkdir(parents=True)
    (root / "semantic").mkdir()
    (root / "episodes" / "a.md").write_text("x")
    (tmp_path / "outside.md").write_text("y")
    (root / "episodes" / "out.md").symlink_to(tmp_path / "outside.md")
    (root / "episodes" / "in.md").symlink_to(root / "episodes" / "a.md")
    (root / "episodes" / "dangling.md").symlink_to(root / "nope.md")
    walked = scan(root.resolve())
    assert [f.path for f in walked.files] == ["episodes/a.md", "episodes/in.md"]
    assert set(walked.folders) == {"episodes", "semantic"}
    reasons = {s.path: s.reason for s in walked.skipped}
    assert "outside the vault" in reasons["episodes/out.md"]
    assert "broken" in reasons["episodes/dangling.md"]


def test_require_vault(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError, match="no such folder"):
        require_vault(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(VaultNotFoundError, match="not a folder"):
        require_vault(tmp_path / "file")


def test_unique_path(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    (tmp_path / "a-2.md").write_text("x")
    assert unique_path(tmp_path, "a.md").name == "a-3.md"
    assert unique_path(tmp_path, "b.md").name == "b.md"


def test_file_lock_excludes_another_process(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path\n"
            "from memoryclaw.vault.files import file_lock\n"
            "with file_lock(Path(sys.argv[1]), 'x'):\n"
            "    print('held', flush=True); time.sleep(3)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(LockTimeoutError), file_lock(tmp_path, "x", timeout=0.3):
            pass
        assert time.monotonic() - started >= 0.3
    finally:
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
    with file_lock(tmp_path, "x", timeout=1):
        assert (tmp_path / ".memoryclaw" / "locks" / "x.lock").exists()
    assert os.access(tmp_path / ".memoryclaw" / "locks" / "x.lock", os.R_OK)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277], ids=["000", "022", "277"])
def test_everything_memoryclaw_creates_is_private_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    root = tmp_path / "vault"
    turns = "".join(
        json.dumps({"session": f"s{n}", "role": "user", "content": f"Ana's email is a{n}@x.org"})
        + "\n"
        for n in range(3)
    )
    (tmp_path / "turns.jsonl").write_text(turns)
    commands = [
        ["init", str(root), "--git"],
        ["--vault", str(root), "log", "--session", "s", "--role", "user", "hello"],
        ["--vault", str(root), "ingest", str(tmp_path / "turns.jsonl")],
        ["--vault", str(root), "consolidate", "--all"],
        ["--vault", str(root), "search", "email"],
        ["--vault", str(root), "reindex", "--full"],
        ["--vault", str(root), "daemon", "--once"],
    ]
    for command in commands:
        done = run_bounded(None, *command, umask=umask)
        assert done.returncode == 0, (command, done.stderr)
    made = [root, *root.rglob("*")]
    assert (root / ".git" / "HEAD").exists()  # git's own files are checked too
    assert any(p.name == "locks" for p in made) and any(p.name == "index.db" for p in made)
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in made}
    wrong = {
        rel: oct(mode)
        for rel, mode in modes.items()
        if (
            mode & 0o077
            if "/.git/" in rel
            else mode != (0o700 if (tmp_path / rel).is_dir() else 0o600)
        )
    }  # git sets its own owner bits (hooks executable, objects read-only): none for others
    assert wrong == {}
