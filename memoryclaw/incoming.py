"""What a sync takes from a remote: its tree is screened before any of it reaches the disk.

A remote is untrusted input.  Before a sync merges the remote's commit it looks at the
commit's tree and refuses, path by path:

- a symlink or a submodule (git modes 120000 and 160000) that this device's HEAD does not
  already hold outside the memory folders: it is never checked out, so never followed;
- anything under ``.memoryclaw/`` (this device's index, locks, id and counts): a remote never
  changes it;
- a ``.gitignore`` or ``.gitattributes`` that would change how git treats memory files (ignore
  them, or track ``.memoryclaw/``, or merge, filter or re-encode them differently), and one
  nested in a memory folder;
- a ``memoryclaw.yaml`` that is not a valid configuration.

A refused path keeps this device's version (or stays absent).  The sync then merges, in place
of the remote's commit, a child of it whose tree is the screened one
(:func:`screen`), so the working tree never holds what was refused, and the push carries the
repaired tree back to the remote for every other device.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import CONFIG_FILE, Settings, flatten, settings_from_mapping
from .errors import ConfigError, ExternalToolError, ParseError
from .history import AUTHOR, MEMORY_FOLDERS
from .notes import load_yaml
from .vault import STATE_DIR, owner_only_umask

REGULAR_MODES = frozenset({"100644", "100755"})
# what `sync --setup` writes to .gitattributes: fact files merge by union
GITATTRIBUTES = "semantic/*.md merge=union\n"
# the scratch index a screening builds its tree in, inside .git (a killed one's is swept)
SCREEN_INDEX_GLOB = "memoryclaw-screen-*.index"
_GIT_FILES = (".gitignore", ".gitattributes")
_ZERO = "0" * 40
# Paths whose treatment by git a remote's .gitignore/.gitattributes must not change.
_MEMORY_PROBES = (
    "episodes/x.md",
    "episodes/2025/x.md",
    "semantic/x.md",
    "semantic/_pending.md",
    "logs/processed/x.md",
    "skills/x.md",
    "skills/x/SKILL.md",
    CONFIG_FILE,
    ".gitignore",
    ".gitattributes",
)
_STATE_PROBES = (f"{STATE_DIR}/index.db", f"{STATE_DIR}/device")


@dataclass(frozen=True)
class Refusal:
    """A path of a remote's commit that a sync did not take, and why."""

    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        """The refusal as a JSON-ready dict."""
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class _Entry:
    mode: str
    sha: str


def _run(
    root: Path, *args: str, data: bytes | None = None, env: dict[str, str] | None = None
) -> bytes:
    """Run git on the vault's repository; its stdout as bytes (paths need not be UTF-8)."""
    git = shutil.which("git")
    if git is None:
        raise ExternalToolError("git", "not found on PATH")
    done = subprocess.run(
        [git, "--literal-pathspecs", "-C", str(root), *args],
        input=data,
        capture_output=True,
        check=False,
        env=env,
        preexec_fn=owner_only_umask,
    )
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise ExternalToolError(f"git {args[0]}", said[-1] if said else "failed")
    return done.stdout


def _tree(root: Path, commit: str | None) -> dict[str, _Entry]:
    """Every file of ``commit``'s tree: path -> mode and blob (or submodule commit)."""
    if commit is None:
        return {}
    out = _run(root, "ls-tree", "-r", "-z", "--full-tree", commit)
    entries = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw = record.partition(b"\t")
        mode, _kind, sha = meta.decode().split()
        entries[os.fsdecode(raw)] = _Entry(mode, sha)
    return entries


def _blob(root: Path, entry: _Entry | None) -> bytes:
    if entry is None or entry.mode not in REGULAR_MODES:
        return b""
    return _run(root, "cat-file", "blob", entry.sha)


def _top(path: str) -> str:
    # lower case: on a case-insensitive disk ".MemoryClaw/x" is written into .memoryclaw/
    return path.split("/", 1)[0].lower()


def _in_memory(path: str) -> bool:
    return _top(path) in {folder.split("/")[0] for folder in MEMORY_FOLDERS}


def _state(path: str) -> bool:
    return _top(path) == STATE_DIR


def _git_file(path: str) -> bool:
    return path.rpartition("/")[2].lower() in _GIT_FILES


def screen(root: Path, upstream: str, head: str | None) -> tuple[str, list[Refusal]]:
    """The commit a sync merges in place of ``upstream``: ``upstream`` itself when nothing in
    it is refused, else a new child of it whose tree has every refused path as ``head`` has
    it (or absent); and the refusals."""
    theirs, ours = _tree(root, upstream), _tree(root, head)
    refused = _refusals(root, _deletions_only_from_base(root, upstream, head, theirs, ours), ours)
    if not refused:
        return upstream, []
    return _repaired(root, upstream, theirs, ours, refused), refused


def _deletions_only_from_base(
    root: Path, upstream: str, head: str | None, theirs: dict[str, _Entry], ours: dict[str, _Entry]
) -> dict[str, _Entry]:
    """``theirs``, where a guarded file only this side ever had counts as kept: a remote that
    never had our .gitignore (an imported archive, a new remote) does not delete it."""
    absent = [p for p in ours if p not in theirs and (_state(p) or p in _GIT_FILES)]
    if not absent or head is None:
        return theirs
    found = _run_ok(root, "merge-base", head, upstream)
    base = _tree(root, found) if found else {}
    return {**theirs, **{p: ours[p] for p in absent if p not in base}}


def _run_ok(root: Path, *args: str) -> str | None:
    """A git command's output, or None when it fails (no merge base)."""
    try:
        return _run(root, *args).decode().strip() or None
    except ExternalToolError:
        return None


def _refusals(root: Path, theirs: dict[str, _Entry], ours: dict[str, _Entry]) -> list[Refusal]:
    refused: dict[str, str] = {}
    for path in sorted(set(theirs) | set(ours)):
        entry, same = theirs.get(path), theirs.get(path) == ours.get(path)
        if same:
            if entry is not None and entry.mode not in REGULAR_MODES and _guarded(path):
                refused[path] = _kind(entry) + "; never followed nor checked out"
        elif _state(path):
            refused[path] = f"a remote never changes {STATE_DIR}/ (this device's state)"
        elif entry is not None and entry.mode not in REGULAR_MODES:
            refused[path] = _kind(entry) + "; never followed nor checked out"
        elif _git_file(path) and _in_memory(path):
            refused[path] = "a .gitignore or .gitattributes inside a memory folder"
        elif _git_file(path) and "/" not in path and path not in _GIT_FILES:
            refused[path] = "a .gitignore or .gitattributes named in another case"
    for name in _GIT_FILES:
        if name in refused or theirs.get(name) == ours.get(name):
            continue
        why = _git_file_problem(name, _blob(root, ours.get(name)), _blob(root, theirs.get(name)))
        if why:
            refused[name] = why
    config = theirs.get(CONFIG_FILE)
    if config is not None and CONFIG_FILE not in refused and config != ours.get(CONFIG_FILE):
        why = config_problem(_blob(root, config), CONFIG_FILE)
        if why:
            refused[CONFIG_FILE] = f"not a valid configuration, this device's kept: {why}"
    return [Refusal(path, reason) for path, reason in sorted(refused.items())]


def _guarded(path: str) -> bool:
    """A path a link must never stand at: memory folders, the state folder, shared files."""
    return _in_memory(path) or _state(path) or path.lower() in (CONFIG_FILE, *_GIT_FILES)


def _kind(entry: _Entry) -> str:
    if entry.mode == "120000":
        return "a symlink"
    if entry.mode == "160000":
        return "a submodule"
    return f"not a regular file (mode {entry.mode})"


def config_problem(data: bytes, where: str) -> str | None:
    """Why this ``memoryclaw.yaml`` content is not a valid configuration, or None."""
    try:
        raw: Any = load_yaml(data.decode("utf-8"), where) if data.strip() else None
        settings_from_mapping(raw, path=where, env={})
    except UnicodeDecodeError:
        return f"{where}: not UTF-8 text"
    except ParseError as exc:
        return f"{where}: {exc.reason}"
    except ConfigError as exc:
        return str(exc)
    return None


def config_changes(old: bytes, new: bytes) -> list[str]:
    """The keys whose value differs between two ``memoryclaw.yaml`` contents (both valid)."""
    try:
        before, after = (flatten(_settings(data)) for data in (old, new))
    except (UnicodeDecodeError, ParseError, ConfigError):
        return []
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def _settings(data: bytes) -> Settings:
    raw: Any = load_yaml(data.decode("utf-8"), CONFIG_FILE) if data.strip() else None
    return settings_from_mapping(raw, path=CONFIG_FILE, env={})


def _git_file_problem(name: str, ours: bytes, theirs: bytes) -> str | None:
    """Why the remote's ``.gitignore``/``.gitattributes`` must not replace ours, or None."""
    if name == ".gitignore":
        hidden_before, hidden_after = _ignored(name, ours), _ignored(name, theirs)
        hidden = sorted(p for p in hidden_after - hidden_before if p not in _STATE_PROBES)
        if hidden:
            folders = ", ".join(dict.fromkeys(_top(p) for p in hidden))
            return f"would make git ignore memory files ({folders}): memories would stop syncing"
        exposed = sorted(p for p in hidden_before - hidden_after if p in _STATE_PROBES)
        if exposed:
            return f"would stop git ignoring {STATE_DIR}/ (this device's index and state)"
        return None
    after = _attributes(name, theirs)
    # back to memoryclaw's own is always taken: two devices that differ then converge on it
    if after not in (_attributes(name, ours), _attributes(name, GITATTRIBUTES.encode())):
        return "would change how git merges, filters or encodes memory files"
    return None


def _scratch(name: str, data: bytes) -> tempfile.TemporaryDirectory[str]:
    """An empty repository holding only ``name`` with ``data``, to ask git what it means."""
    scratch = tempfile.TemporaryDirectory(prefix="memoryclaw-screen-")
    subprocess.run(["git", "init", "-q", scratch.name], check=True, capture_output=True)
    (Path(scratch.name) / name).write_bytes(data)
    return scratch


def _ignored(name: str, data: bytes) -> set[str]:
    """Which probe paths git ignores under this ``.gitignore``."""
    with _scratch(name, data) as where:
        done = subprocess.run(
            ["git", "-C", where, "check-ignore", "--no-index", "-z", "--stdin"],
            input=_stdin(_MEMORY_PROBES + _STATE_PROBES),
            capture_output=True,
            check=False,
        )
    return {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}


def _attributes(name: str, data: bytes) -> bytes:
    """Every attribute this ``.gitattributes`` gives the memory probe paths."""
    with _scratch(name, data) as where:
        done = subprocess.run(
            ["git", "-C", where, "check-attr", "-z", "--all", "--stdin"],
            input=_stdin(_MEMORY_PROBES),
            capture_output=True,
            check=False,
        )
    return done.stdout


def _stdin(paths: Iterable[str]) -> bytes:
    return b"".join(p.encode() + b"\0" for p in paths)


def _repaired(
    root: Path,
    upstream: str,
    theirs: dict[str, _Entry],
    ours: dict[str, _Entry],
    refused: list[Refusal],
) -> str:
    """A child of ``upstream`` with the refused paths as ``ours`` has them."""
    removals, additions = [], []
    for refusal in refused:
        if refusal.path in theirs:
            removals.append(f"0 {_ZERO}\t{refusal.path}")
        kept = ours.get(refusal.path)
        if kept is not None and kept.mode in REGULAR_MODES:
            additions.append(f"{kept.mode} {kept.sha}\t{refusal.path}")
    git_dir = Path(_run(root, "rev-parse", "--absolute-git-dir").decode().strip())
    prefix, _, suffix = SCREEN_INDEX_GLOB.partition("*")
    fd, index = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=git_dir)
    os.close(fd)
    os.unlink(index)  # read-tree makes it
    name, email = AUTHOR
    env = {
        **os.environ,
        "GIT_INDEX_FILE": index,
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    try:
        _run(root, "read-tree", upstream, env=env)
        for lines in (removals, additions):
            if lines:
                data = b"".join(os.fsencode(line) + b"\0" for line in lines)
                _run(root, "update-index", "-z", "--index-info", data=data, env=env)
        tree = _run(root, "write-tree", env=env).decode().strip()
    finally:
        with suppress(FileNotFoundError):
            os.unlink(index)
    listed = ", ".join(r.path for r in refused[:5]) + (" …" if len(refused) > 5 else "")
    message = f"memoryclaw: sync refused {len(refused)} path(s) from the remote: {listed}"
    return _run(root, "commit-tree", tree, "-p", upstream, "-m", message, env=env).decode().strip()


def ignored_memory_folders(root: Path) -> list[str]:
    """The memory folders whose files this vault's git ignores (never committed nor synced)."""
    probes = [p for p in _MEMORY_PROBES if _in_memory(p)]
    done = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--no-index", "-z", "--stdin"],
        input=_stdin(probes),
        capture_output=True,
        check=False,
    )
    hidden = [os.fsdecode(p) for p in done.stdout.split(b"\0") if p]
    return list(dict.fromkeys(_top(p) for p in hidden))
