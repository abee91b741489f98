"""Finishing what a killed sync left: stale git locks, a half-done merge, and the lines a
recovery held so that nothing written is lost to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..vault.files import SEMANTIC_DIR, STATE_DIR, atomic_write, ensure_dir
from .conflicts import _pend, _real_folder, _regular_text
from .git import run_git
from .incoming import SCREEN_INDEX_GLOB

HELD_FILE = f"{STATE_DIR}/sync-held.json"  # see _recover


def _git_running(root: Path) -> bool:
    """Whether a git process works on this vault now (its lock files are then live)."""
    wanted = str(root.resolve())
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        program = os.path.basename(argv[0].decode(errors="replace")) if argv else ""
        on_vault = cwd == wanted or any(wanted in a.decode(errors="replace") for a in argv)
        if program.startswith("git") and on_vault:
            return True
    return False


def _recover(root: Path) -> None:
    """Finish what a killed sync left: stale git locks, a half-done merge.

    Aborting the merge restores files to the last commit, so every line the working tree
    held then (a hand edit made while the merge waited, or the merge's own result) is first
    saved to :data:`HELD_FILE`, and put back after: into its fact file when it is one (they
    merge by union), else into review as ``CONFLICT (sync)``.  A recovery killed half way is
    finished by the next, from that file: nothing written is lost to a recovery."""
    git_dir = root / ".git"
    # a killed git leaves its lock files (index, HEAD, refs, packed-refs, maintenance)
    locks = [
        *git_dir.glob("*.lock"),
        *git_dir.glob("refs/**/*.lock"),
        *git_dir.glob("objects/*.lock"),
    ]
    if locks and not _git_running(root):
        for lock in locks:
            lock.unlink(missing_ok=True)
    for scratch in git_dir.glob(SCREEN_INDEX_GLOB):  # a screening killed half way
        scratch.unlink(missing_ok=True)
    held_path = root / HELD_FILE
    if (git_dir / "MERGE_HEAD").exists():
        held = _held(held_path)
        changed = run_git(root, "diff", "--name-only", "-z", "HEAD", check=False).stdout
        for rel in (p for p in changed.split("\0") if p):
            # what the half-done merge brought is untrusted: a symlink is never read, the
            # state folder is not memory
            text = None if _state_path(rel) else _regular_text(root, rel)
            if text is not None:
                lines = text.splitlines()
                held[rel] = list(dict.fromkeys([*held.get(rel, []), *lines]))
        ensure_dir(held_path.parent)
        atomic_write(held_path, json.dumps(held, ensure_ascii=False))
        run_git(root, "merge", "--abort", check=False)
        if (git_dir / "MERGE_HEAD").exists():
            run_git(root, "reset", "--merge", check=False)
        if (git_dir / "MERGE_HEAD").exists():
            run_git(root, "reset", "--hard", "HEAD", check=False)  # the lines are held
            (git_dir / "MERGE_HEAD").unlink(missing_ok=True)
    if held_path.exists():
        for rel, lines in _held(held_path).items():
            _put_back(root, rel, lines)
        held_path.unlink(missing_ok=True)


def _held(path: Path) -> dict[str, list[str]]:
    """The lines a recovery saved, by file (none when there is no readable file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(rel): [str(line) for line in lines]
        for rel, lines in data.items()
        if isinstance(lines, list) and not _state_path(str(rel))
    }


def _state_path(rel: str) -> bool:
    return rel == STATE_DIR or rel.startswith(f"{STATE_DIR}/")


def _put_back(root: Path, rel: str, lines: list[str]) -> None:
    """Put back the held lines ``rel`` lacks now (again and again gives the same file)."""
    path = root / rel
    now = set((_regular_text(root, rel) or "").splitlines())
    lost = [
        line
        for line in lines
        if line.strip()
        and line not in now
        and not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))
    ]
    if not lost:
        return
    if rel.startswith(f"{SEMANTIC_DIR}/") and rel.endswith(".md") and _real_folder(root, rel):
        text = _regular_text(root, rel) or ""
        atomic_write(path, text.rstrip("\n") + "\n" + "\n".join(lost) + "\n")
    else:
        _pend(root, lost, rel)
