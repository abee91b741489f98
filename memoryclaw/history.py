"""Git for a vault: one commit per consolidation run, the history of one memory, and a
rewrite of that history when a memory must be purged from it.

Only what a run changed is committed: the memory folders' dirty files are fingerprinted
before the run (:func:`snapshot`), and afterwards :func:`commit_changes` commits the files
that became dirty or changed again — a hand edit waiting in the working tree stays the
user's to commit, unless the run touched that same file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import ExternalToolError
from .vault import EPISODES_DIR, LOGS_DIR, SEMANTIC_DIR, SKILLS_DIR, safe_relpath

MEMORY_FOLDERS = (EPISODES_DIR, SEMANTIC_DIR, LOGS_DIR, SKILLS_DIR)
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


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git")
    if git is None:
        raise ExternalToolError("git", "not found on PATH")
    done = subprocess.run(
        [git, "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise ExternalToolError(
            f"git {args[0]}", reason[-1] if reason else "failed", returncode=done.returncode
        )
    return done


def is_repository(root: Path) -> bool:
    """Whether the vault folder is the top of a git work tree."""
    if shutil.which("git") is None or not (root / ".git").exists():
        return False
    return _git(root, "rev-parse", "--is-inside-work-tree", check=False).returncode == 0


def _dirty(root: Path) -> list[str]:
    out = _git(root, "status", "--porcelain", "-z", "--untracked-files=all", "--", *MEMORY_FOLDERS)
    paths = []
    entries = out.stdout.split("\0")
    skip = False
    for entry in entries:
        if skip or not entry:
            skip = False
            continue
        status, path = entry[:2], entry[3:]
        skip = status[0] in "RC"  # a rename's second field is the old path
        paths.append(path)
    return paths


def _fingerprint(root: Path, rel: str) -> str:
    path = root / rel
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def _live_log(root: Path, rel: str) -> bool:
    """A raw log still in ``logs/``: a session being written (verbatim, with redaction off).
    Only its processed, redacted copy is committed, and its removal from ``logs/``."""
    folder, _, name = rel.rpartition("/")
    return folder == LOGS_DIR and name.endswith(".md") and (root / rel).exists()


def snapshot(root: Path) -> dict[str, str]:
    """Fingerprints of the memory files that are dirty now."""
    return {rel: _fingerprint(root, rel) for rel in _dirty(root)}


def commit_changes(root: Path, before: dict[str, str], message: str) -> str | None:
    """Commit the memory files changed since ``before``; the new commit's sha, or None."""
    changed = [
        rel
        for rel in _dirty(root)
        if before.get(rel) != _fingerprint(root, rel) and not _live_log(root, rel)
    ]
    if not changed:
        return None
    _git(root, "add", "-A", "--", *changed)
    name, email = AUTHOR
    _git(
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
        *changed,
    )
    return _git(root, "rev-parse", "HEAD").stdout.strip()


def file_history(root: Path, rel: str) -> list[Commit]:
    """The commits that touched ``rel`` (following renames), newest first."""
    rel = safe_relpath(rel)
    if not is_repository(root):
        raise ExternalToolError("git", f"{root} is not a git repository (memoryclaw init --git)")
    fmt = _FIELD.join(["%H", "%aI", "%an", "%B"]) + "\x1e"
    out = _git(root, "log", "--follow", f"--format={fmt}", "--", rel).stdout
    commits = []
    for record in out.split("\x1e"):
        if record.strip():
            sha, date, author, message = record.strip("\n").split(_FIELD, 3)
            commits.append(Commit(sha, date, author, message.strip()))
    return commits


_INDEX_FILTER = """
import json, subprocess, sys
for path, blob in json.load(open(sys.argv[1])).items():
    present = subprocess.run(["git", "ls-files", "--error-unmatch", "--", path],
                             capture_output=True).returncode == 0
    if not present:
        continue
    subprocess.run(["git", "rm", "--cached", "--quiet", "--", path], check=True)
    if blob:
        subprocess.run(["git", "update-index", "--add", "--cacheinfo",
                        "100644", blob, path], check=True)
"""
# A deleted file's name can tell what it held (an episode's slug): messages lose it too.
_MESSAGE_FILTER = """
import json, sys
text = sys.stdin.read()
for path, blob in json.load(open(sys.argv[1])).items():
    if not blob:
        text = text.replace(path, "[a forgotten file]")
sys.stdout.write(text)
"""


def purge_history(root: Path, paths: Iterable[str]) -> int:
    """Rewrite every commit of the vault's repository so that each of ``paths`` holds what
    it holds now (or is absent, and unnamed in messages, if it is gone now); then drop the
    old objects.  The number
    of paths rewritten.  Refused while memory files have uncommitted changes."""
    chosen = sorted(set(paths))
    if not chosen:
        return 0
    dirty = _git(root, "status", "--porcelain", "--", *MEMORY_FOLDERS).stdout.strip()
    if dirty:
        raise ExternalToolError(
            "git filter-branch", "memory files have uncommitted changes; commit them first"
        )
    blobs = {}
    for rel in chosen:
        shown = _git(root, "rev-parse", "--verify", "--quiet", f"HEAD:{rel}", check=False)
        blobs[rel] = shown.stdout.strip() if shown.returncode == 0 else ""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "paths.json"
        table.write_text(json.dumps(blobs), encoding="utf-8")
        commands = []
        for name, code in (("index.py", _INDEX_FILTER), ("message.py", _MESSAGE_FILTER)):
            (Path(tmp) / name).write_text(code, encoding="utf-8")
            parts = (sys.executable, Path(tmp) / name, table)
            commands.append(" ".join(shlex.quote(str(part)) for part in parts))
        # Without this, filter-branch waits ten seconds to advise another tool.
        env = {**os.environ, "FILTER_BRANCH_SQUELCH_WARNING": "1"}
        filter_branch = ["filter-branch", "-f", "--index-filter", commands[0]]
        filter_branch += ["--msg-filter", commands[1], "--", "--all"]
        done = subprocess.run(
            [shutil.which("git") or "git", "-C", str(root), *filter_branch],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise ExternalToolError("git filter-branch", reason[-1] if reason else "failed")
    refs = _git(root, "for-each-ref", "--format=%(refname)", "refs/original/").stdout.split()
    for ref in refs:
        _git(root, "update-ref", "-d", ref)
    _git(root, "reflog", "expire", "--expire=now", "--all")
    _git(root, "gc", "--prune=now", "--quiet")
    return len(chosen)
