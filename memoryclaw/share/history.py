"""Git for a vault: one commit per consolidation run, and the history of one memory (a
rewrite of that history, when a memory must be purged from it, is
:mod:`memoryclaw.share.purge`).

Only what consolidation wrote is committed.  Before it changes a file it notes the path, and
the file's state then, in a journal (``.memoryclaw/uncommitted``, :func:`journal`);
:func:`commit_journal` commits the noted files that changed since and empties the journal.
A run killed before its commit leaves the journal behind, so the next run commits what the
killed one wrote.  A hand edit waiting in the working tree stays the user's to commit, unless
consolidation wrote that same file; temp files and other programs' files are never noted.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..errors import ExternalToolError, UnsafePathError
from ..vault.files import (
    EPISODES_DIR,
    LOGS_DIR,
    SEMANTIC_DIR,
    SKILLS_DIR,
    STATE_DIR,
    ensure_dir,
    open_private,
    safe_relpath,
)
from .git import run_git

JOURNAL_FILE = f"{STATE_DIR}/uncommitted"
MEMORY_FOLDERS = (EPISODES_DIR, SEMANTIC_DIR, LOGS_DIR, SKILLS_DIR)
VAULT_FILES = ("memoryclaw.yaml", ".gitignore", ".gitattributes")  # what every clone shares
AUTHOR = ("memoryclaw", "memoryclaw@localhost")
_FIELD = "\x1f"


@dataclass(frozen=True)
class Commit:
    """One commit that touched a memory file."""

    sha: str
    date: str
    author: str
    message: str

    def as_dict(self) -> dict[str, str]:
        """The commit as a JSON-ready dict."""
        return {"sha": self.sha, "date": self.date, "author": self.author, "message": self.message}


def is_repository(root: Path) -> bool:
    """Whether the vault folder is the top of a git work tree."""
    if shutil.which("git") is None or not (root / ".git").exists():
        return False
    return run_git(root, "rev-parse", "--is-inside-work-tree", check=False).returncode == 0


def _dirty(root: Path, paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` git sees as changed, new or deleted (a staged rename as both: its
    old path's removal is a change to commit too)."""
    out = run_git(
        root, "status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--", *paths
    )
    dirty = set()
    skip = False
    for entry in out.stdout.split("\0"):
        if skip or not entry:
            skip = False
            continue
        skip = entry[0] in "RC"  # a rename's second field is the old path
        dirty.add(entry[3:])
    return dirty


def _fingerprint(root: Path, rel: str) -> str:
    """What tells a file's state apart: an atomic write makes a new inode and mtime."""
    try:
        st = os.lstat(root / rel)
    except OSError:
        return "absent"
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def _live_log(root: Path, rel: str) -> bool:
    """A raw log still in ``logs/``: a session being written (verbatim, with redaction off).
    Only its processed, redacted copy is committed, and its removal from ``logs/``."""
    folder, _, name = rel.rpartition("/")
    return folder == LOGS_DIR and name.endswith(".md") and (root / rel).exists()


def snapshot(root: Path) -> dict[str, str]:
    """Fingerprints of the memory files that are dirty now."""
    return {rel: _fingerprint(root, rel) for rel in _dirty(root, MEMORY_FOLDERS)}


def commit_changes(root: Path, before: dict[str, str], message: str) -> str | None:
    """Commit the memory files changed since ``before``; the new commit's sha, or None."""

    def changed() -> list[str]:
        dirty = _dirty(root, MEMORY_FOLDERS)
        return [rel for rel in sorted(dirty) if before.get(rel) != _fingerprint(root, rel)]

    staged = _stage(root, changed)
    return _commit_only(root, staged, message) if staged else None


def _stage(root: Path, changed: Callable[[], list[str]]) -> list[str]:
    """Stage the paths ``changed()`` names, less live logs; the paths staged.

    Between git's look and ``git add`` a path can leave the disk (a log consolidated, a git
    that a killed run started finishing its commit): then git refuses the whole add, so look
    again once and keep only what git can still stage, a file on disk or one in its index.
    """
    paths = [rel for rel in changed() if not _live_log(root, rel)]
    if not paths or run_git(root, "add", "-A", "--", *paths, check=False).returncode == 0:
        return paths
    paths = [rel for rel in changed() if not _live_log(root, rel)]
    known = (
        set(run_git(root, "ls-files", "-z", "--", *paths).stdout.split("\0")) if paths else set()
    )
    stageable = [rel for rel in paths if rel in known or os.path.lexists(root / rel)]
    if stageable:
        run_git(root, "add", "-A", "--", *stageable)
    # a removal already staged (by a git a killed run started) is in HEAD only: commit it too
    listed = run_git(root, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *paths, check=False)
    in_head = set(listed.stdout.split("\0")) if paths else set()
    return [rel for rel in paths if rel in stageable or rel in in_head]


def first_commit(root: Path) -> str | None:
    """Make a new repository's first commit: the vault's own files and the memory files
    already in the folder (hand-written ones too), never a live log nor anything outside the
    memory folders; its sha, or None when the repository has a commit already."""
    if run_git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0:
        return None
    staged = _stage(root, lambda: sorted(_dirty(root, (*VAULT_FILES, *MEMORY_FOLDERS))))
    return _commit_only(root, staged, "memoryclaw: init") if staged else None


def _commit_only(root: Path, paths: Sequence[str], message: str) -> str:
    """Commit exactly ``paths`` (staged already) as memoryclaw; the new commit's sha."""
    name, email = AUTHOR
    run_git(
        root,
        "-c",
        f"user.name={name}",
        "-c",
        f"user.email={email}",
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        message,
        "--only",
        "--",
        *paths,
    )
    return run_git(root, "rev-parse", "HEAD").stdout.strip()


def journal(root: Path, paths: Iterable[str]) -> None:
    """Note, before writing them, vault files consolidation is about to change or delete,
    each with its state and the commit HEAD was at (``state@commit``)."""
    head = _head_commit(root)
    text = "".join(f"{_fingerprint(root, rel)}@{head}\t{rel}\n" for rel in paths)
    if not text:
        return
    ensure_dir(root / STATE_DIR)
    fd = open_private(root / JOURNAL_FILE, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _noted(root: Path) -> dict[str, str]:
    """The journal: each path with its state when first noted (a torn last line is dropped)."""
    try:
        text = (root / JOURNAL_FILE).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return {}
    noted: dict[str, str] = {}
    for line in text.splitlines():
        fingerprint, tab, rel = line.partition("\t")
        try:
            if tab and safe_relpath(rel) == rel:
                noted.setdefault(rel, fingerprint)
        except UnsafePathError:
            continue
    return noted


def _changed(root: Path, noted: dict[str, str]) -> list[str]:
    """The noted paths git sees as changed whose state differs from when they were noted, or
    that a commit since their note changed.

    A run killed after its commit but before it emptied the journal leaves notes older than
    that commit: a file it created was noted "absent", and when a later run deletes it again
    its state is "absent" as noted, yet the deletion is a change to commit."""
    dirty = _dirty(root, noted) if noted else set()
    head = _head_commit(root)
    older: dict[str, list[str]] = {}
    for rel in dirty:
        commit = _split_note(noted.get(rel, ""))[1]
        if commit and head and commit != head:
            older.setdefault(commit, []).append(rel)
    moved: set[str] = set()
    for commit, rels in older.items():
        diff = run_git(
            root,
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            commit,
            head,
            "--",
            *rels,
            check=False,
        )
        moved |= set(diff.stdout.split("\0")) if diff.returncode == 0 else set(rels)
    return sorted(
        rel
        for rel in dirty
        if rel in moved or _split_note(noted.get(rel, ""))[0] != _fingerprint(root, rel)
    )


def _unstage_gone(root: Path, noted: Iterable[str]) -> None:
    """Take out of git's index the noted files staged as new but gone from the disk: a
    killed run's git staged them, a later run deleted them, and neither HEAD nor the disk
    has them, so no commit of ours names them, and the user's next commit would bring back
    a memory no file holds."""
    paths = list(noted)
    if not paths:
        return
    out = run_git(root, "status", "--porcelain", "-z", "--no-renames", "--", *paths)
    gone = [entry[3:] for entry in out.stdout.split("\0") if entry.startswith("AD ")]
    if gone:
        run_git(root, "rm", "--cached", "--quiet", "--", *gone)


def _split_note(note: str) -> tuple[str, str]:
    """A journal note's file state and the commit it was noted at ("" in a journal written
    before notes named their commit)."""
    state, at, commit = note.rpartition("@")
    return (state, commit) if at else (note, "")


def _head_commit(root: Path) -> str:
    """The commit HEAD is at, read from git's own files (a note is made per log, and a git
    process per note would cost more than the note); "" when it cannot be read so."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head
        ref = head[len("ref: ") :]
        if (git / ref).is_file():
            return (git / ref).read_text(encoding="utf-8").strip()
        for line in (git / "packed-refs").read_text(encoding="utf-8").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit
    except OSError:
        pass
    return ""


def commit_journal(root: Path, message: str) -> str | None:
    """Commit the noted files that changed since they were noted; the new commit's sha, or
    None when there was nothing to commit.  The journal is emptied either way."""
    noted = _noted(root)
    _unstage_gone(root, noted)
    staged = _stage(root, partial(_changed, root, noted))
    sha = _commit_only(root, staged, message) if staged else None
    (root / JOURNAL_FILE).unlink(missing_ok=True)
    return sha


def file_history(root: Path, rel: str) -> list[Commit]:
    """The commits that touched ``rel`` (following renames), newest first."""
    rel = safe_relpath(rel)
    if not is_repository(root):
        raise ExternalToolError("git", f"{root} is not a git repository (memoryclaw init --git)")
    return _commits(run_git(root, "log", "--follow", f"--format={_LOG_FORMAT}", "--", rel).stdout)


_LOG_FORMAT = _FIELD.join(["%H", "%aI", "%an", "%B"]) + "\x1e"


def _commits(out: str) -> list[Commit]:
    """The commits of ``git log --format=_LOG_FORMAT`` output, in its order."""
    commits = []
    for record in out.split("\x1e"):
        if record.strip():
            sha, date, author, message = record.strip("\n").split(_FIELD, 3)
            commits.append(Commit(sha, date, author, message.strip()))
    return commits


_ERE_SPECIAL_RE = re.compile(r"([.^$*+?()\[\]{}|\\])")


def value_commits(root: Path, paths: Sequence[str], values: Iterable[str]) -> list[Commit]:
    """The commits whose changes to ``paths`` added or removed a line holding one of
    ``values`` (a fact stated, marked superseded or edited), newest first."""
    chosen = [safe_relpath(rel) for rel in paths]
    texts = sorted({value for value in values if value})
    if not chosen or not texts or not is_repository(root):
        return []
    pattern = "|".join(_ERE_SPECIAL_RE.sub(r"\\\1", text) for text in texts)
    args = ["log", "-E", f"-G{pattern}", f"--format={_LOG_FORMAT}", "--", *chosen]
    return _commits(run_git(root, *args).stdout)
