"""What a sync takes from a remote: its tree is screened before any of it reaches the disk.

A remote is untrusted input.  Before a sync merges the remote's commit it looks at the
commit's tree and refuses, path by path:

- a symlink or a submodule (git modes 120000 and 160000) that this device's HEAD does not
  already hold outside the memory folders: it is never checked out, so never followed;
- anything under ``.memoryclaw/`` (this device's index, locks, id and counts): a remote never
  changes it;
- a ``.gitignore`` or ``.gitattributes`` that would change how git treats memory files (ignore
  them, or track ``.memoryclaw/``, or merge, filter or re-encode them differently: see
  :mod:`memoryclaw.share.gitrules`), and one nested in a memory folder;
- a ``memoryclaw.yaml`` that is not a valid configuration;
- a tombstone file (``semantic/_forgotten/``) this device holds, removed or changed so that
  it forgets less (a hash taken out, a ``key`` line moved or spoilt, the file grown past
  what is read): what a forget left keeps what it forgot forgotten, on every device.

A refused path keeps this device's version (or stays absent).  The sync then merges, in place
of the remote's commit, a child of it whose tree is the screened one
(:func:`screen`), so the working tree never holds what was refused, and the push carries the
repaired tree back to the remote for every other device.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ExternalToolError, ParseError
from ..vault.config import CONFIG_FILE, Settings, flatten
from ..vault.configcheck import settings_from_mapping
from ..vault.files import STATE_DIR, atomic_write
from ..vault.safeyaml import load_yaml
from ..vault.tombstones import TOMBSTONE_DIR, keeps_every_stone
from .git import run_git_bytes
from .gitrules import (
    _GIT_FILES,
    OWN_LINES,
    _encoded_paths,
    _git_file_problem,
    _in_memory,
    _reencode,
    _top,
    line_problem,
)
from .history import AUTHOR

REGULAR_MODES = frozenset({"100644", "100755"})
# the scratch index a screening builds its tree in, inside .git (a killed one's is swept)
SCREEN_INDEX_GLOB = "memoryclaw-screen-*.index"
_ZERO = "0" * 40


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


def _tree(root: Path, commit: str | None) -> dict[str, _Entry]:
    """Every file of ``commit``'s tree: path -> mode and blob (or submodule commit)."""
    if commit is None:
        return {}
    out = run_git_bytes(root, "ls-tree", "-r", "-z", "--full-tree", commit)
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
    return run_git_bytes(root, "cat-file", "blob", entry.sha)


def _state(path: str) -> bool:
    return _top(path) == STATE_DIR


def _tombstone(path: str) -> bool:
    return path.startswith(TOMBSTONE_DIR + "/")


def _drops_tombstones(root: Path, ours: _Entry | None, theirs: _Entry | None) -> bool:
    """Whether the remote's version of a tombstone file forgets less than this device's: the
    file removed or emptied, a hash taken out or put under another key (a ``key`` line moved,
    added or spoilt), or the file grown past what is read.  One that only adds, as a repaired
    one does, is taken."""
    if ours is None:
        return False
    if theirs is None or theirs.mode not in REGULAR_MODES:
        return True
    return not keeps_every_stone(_blob(root, ours), _blob(root, theirs))


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
    absent = [
        p for p in ours if p not in theirs and (_state(p) or p in _GIT_FILES or _tombstone(p))
    ]
    if not absent or head is None:
        return theirs
    found = _run_ok(root, "merge-base", head, upstream)
    base = _tree(root, found) if found else {}
    return {**theirs, **{p: ours[p] for p in absent if p not in base}}


def _run_ok(root: Path, *args: str) -> str | None:
    """A git command's output, or None when it fails (no merge base)."""
    try:
        return run_git_bytes(root, *args).decode().strip() or None
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
        elif _tombstone(path) and _drops_tombstones(root, ours.get(path), entry):
            refused[path] = "a remote never takes out what a forget left"
        elif _git_file(path) and _in_memory(path):
            refused[path] = "a .gitignore or .gitattributes inside a memory folder"
        elif _git_file(path) and "/" not in path and path not in _GIT_FILES:
            refused[path] = "a .gitignore or .gitattributes named in another case"
        elif path.lower() == CONFIG_FILE and path != CONFIG_FILE:
            # a case-insensitive disk writes it over memoryclaw.yaml, unscreened
            refused[path] = f"a {CONFIG_FILE} named in another case"
    for name in _GIT_FILES:
        if name in refused or theirs.get(name) == ours.get(name):
            continue
        paths = [p for p in set(theirs) | set(ours) if _in_memory(p)]
        why = _git_file_problem(
            name, _blob(root, ours.get(name)), _blob(root, theirs.get(name)), paths
        )
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


def commit_settings(root: Path, commit: str) -> Settings | None:
    """What ``memoryclaw.yaml`` in ``commit`` says (defaults when it has none), or None when
    it is not a valid configuration."""
    try:
        data = run_git_bytes(root, "cat-file", "blob", f"{commit}:{CONFIG_FILE}")
    except ExternalToolError:
        data = b""  # none there
    try:
        return _settings(data)
    except (UnicodeDecodeError, ParseError, ConfigError):
        return None


def _settings(data: bytes) -> Settings:
    raw: Any = load_yaml(data.decode("utf-8"), CONFIG_FILE) if data.strip() else None
    return settings_from_mapping(raw, path=CONFIG_FILE, env={})


def repair_local(root: Path) -> list[Refusal]:
    """Judge this vault's own ``.gitignore`` and ``.gitattributes`` by the rule a remote's are
    judged by (:func:`~memoryclaw.share.gitrules.line_problem`): drop each line that could
    reach memory files, put back memoryclaw's own lines, and re-encode files a dropped
    ``working-tree-encoding`` had checked out in another encoding; what was repaired, and why.

    A vault that took such a line before it was refused (or by a hand edit) would otherwise
    fail every commit ("BOM is required") or stop syncing memories, for good."""
    repaired = []
    for name in _GIT_FILES:
        path = root / name
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        lines = text.splitlines()
        bad = [line for line in lines if line_problem(name, line)]
        missing = [own for own in OWN_LINES[name] if own not in {x.strip() for x in lines}]
        if not bad and not missing:
            continue
        encoded = _encoded_paths(root, data) if name == ".gitattributes" else {}
        kept = [line for line in lines if line not in bad] + missing
        atomic_write(path, "\n".join(kept) + "\n")
        for rel, encoding in encoded.items():
            _reencode(root, rel, encoding)
        said = "; ".join(f"{line!r} {line_problem(name, line)}" for line in bad[:3])
        reason = f"this vault's own {name}: removed {said}" if bad else f"{name}:"
        repaired.append(Refusal(name, f"{reason}; memoryclaw's own lines are in place"))
    return repaired


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
    git_dir = Path(run_git_bytes(root, "rev-parse", "--absolute-git-dir").decode().strip())
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
        run_git_bytes(root, "read-tree", upstream, env=env)
        for lines in (removals, additions):
            if lines:
                data = b"".join(os.fsencode(line) + b"\0" for line in lines)
                run_git_bytes(root, "update-index", "-z", "--index-info", data=data, env=env)
        tree = run_git_bytes(root, "write-tree", env=env).decode().strip()
    finally:
        with suppress(FileNotFoundError):
            os.unlink(index)
    listed = ", ".join(r.path for r in refused[:5]) + (" …" if len(refused) > 5 else "")
    message = f"memoryclaw: sync refused {len(refused)} path(s) from the remote: {listed}"
    return (
        run_git_bytes(root, "commit-tree", tree, "-p", upstream, "-m", message, env=env)
        .decode()
        .strip()
    )
