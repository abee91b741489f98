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
import re
import subprocess
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ExternalToolError, ParseError
from ..vault.config import CONFIG_FILE, Settings, flatten
from ..vault.configcheck import settings_from_mapping
from ..vault.files import STATE_DIR, atomic_write
from ..vault.notes import load_yaml
from .git import run_git_bytes
from .history import AUTHOR, MEMORY_FOLDERS

REGULAR_MODES = frozenset({"100644", "100755"})
# what `sync --setup` writes to .gitattributes: fact files merge by union
GITATTRIBUTES = "semantic/*.md merge=union\n"
# the scratch index a screening builds its tree in, inside .git (a killed one's is swept)
SCREEN_INDEX_GLOB = "memoryclaw-screen-*.index"
_GIT_FILES = (".gitignore", ".gitattributes")
_ZERO = "0" * 40
# The names at the top of the vault whose files a .gitignore/.gitattributes line may not
# reach: the memory folders, the configuration and these two files themselves.
_MEMORY_TOPS = (*dict.fromkeys(f.split("/")[0] for f in MEMORY_FOLDERS), CONFIG_FILE, *_GIT_FILES)
# What memory files are named with: a pattern that matches at any depth is taken only when it
# can match nothing but names ending in another extension (``*.swp``).
_MEMORY_EXTENSIONS = frozenset({"md", "markdown", "txt", "yaml", "yml", "json", "jsonl"})
# the folders memoryclaw makes inside memory folders (besides years and skill names)
_MEMORY_DIR_NAMES = frozenset({"archive", "processed", "_forgotten", "drafts"})
_HARMLESS_NAME = re.compile(r"[^/\\]*\.([A-Za-z0-9_~-]+)")
# memoryclaw's own lines, always taken and restored when missing
OWN_LINES = {".gitignore": (f"{STATE_DIR}/",), ".gitattributes": (GITATTRIBUTES.strip(),)}
# Paths whose treatment by git is asked of git itself besides every memory path of both trees
# (a second net under the rule on lines).
_MEMORY_PROBES = (
    "episodes/x.md",
    "episodes/2025/x.md",
    "semantic/x.md",
    "semantic/_pending.md",
    "semantic/_forgotten/x.txt",
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


def _git_file_problem(
    name: str, ours: bytes, theirs: bytes, paths: Iterable[str] = ()
) -> str | None:
    """Why the remote's ``.gitignore``/``.gitattributes`` must not replace ours, or None.

    Each line this device does not already have is judged by :func:`line_problem` (a rule on
    the pattern's shape, which no narrow pattern dodges); then git itself is asked about every
    memory path of both trees (``paths``) as a second net."""
    have = set(_lines(ours)) | set(OWN_LINES[name])
    for line in _lines(theirs):
        why = None if line in have else line_problem(name, line)
        if why:
            return f"line {line!r} {why}"
    dropped = [own for own in OWN_LINES[name] if own in _lines(ours) and own not in _lines(theirs)]
    if dropped:
        return f"would drop memoryclaw's own line {dropped[0]!r}"
    memory = [p for p in (*_MEMORY_PROBES, *paths) if _in_memory(p) or "/" not in p]
    if name == ".gitignore":
        hidden_before = _ignored(name, ours, memory)
        hidden = sorted(_ignored(name, theirs, memory) - hidden_before)
        if hidden:
            folders = ", ".join(dict.fromkeys(_top(p) for p in hidden))
            return f"would make git ignore memory files ({folders}): memories would stop syncing"
        exposed = _ignored(name, ours, _STATE_PROBES) - _ignored(name, theirs, _STATE_PROBES)
        if exposed:
            return f"would stop git ignoring {STATE_DIR}/ (this device's index and state)"
        return None
    allowed = _attributes(name, ours, memory) | _attributes(name, GITATTRIBUTES.encode(), memory)
    if not _attributes(name, theirs, memory) <= allowed:
        return "would change how git merges, filters or encodes memory files"
    return None


def _lines(data: bytes) -> list[str]:
    """The lines of a ``.gitignore``/``.gitattributes`` that mean something (no blanks, no
    comments), each stripped."""
    # git reads past a byte order mark at the start of the file: a line behind one counts
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    return [s for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#")]


def line_problem(name: str, line: str) -> str | None:
    """Why a line of a ``.gitignore`` or ``.gitattributes`` at the top of the vault could
    change how git treats a memory file (or expose ``.memoryclaw/``), or None.

    The rule looks at the pattern's shape, never at sample names: a pattern with no slash
    matches at every depth and is taken only when it can match nothing but names with an
    extension no memory file has (``*.swp``); a pattern with a slash is taken only when its
    first part can match no memory folder, ``memoryclaw.yaml`` nor these files, and is not
    ``**``.  memoryclaw's own lines are always taken."""
    line = line.strip().removeprefix("\ufeff")
    if not line or line.startswith("#") or line in OWN_LINES[name]:
        return None
    if name == ".gitignore":
        if line.startswith("!"):
            if _reaches(line[1:], (STATE_DIR,), any_depth_ok=False):
                return f"would stop git ignoring {STATE_DIR}/ (this device's index and state)"
            return None
        if _reaches(line, _MEMORY_TOPS):
            return "could make git ignore memory files: memories would stop syncing"
        return None
    if line.startswith("[attr]"):
        return "defines an attribute macro"
    pattern, _, attributes = line.replace("\t", " ").partition(" ")
    if not attributes.strip():
        return None  # a pattern with no attributes sets nothing
    if pattern.startswith('"') or _reaches(pattern.removeprefix("!"), _MEMORY_TOPS):
        return "could change how git merges, filters or encodes memory files"
    return None


def _reaches(pattern: str, names: Iterable[str], *, any_depth_ok: bool = True) -> bool:
    """Whether a gitignore-style ``pattern`` could match one of the top-level ``names`` or
    something inside them."""
    if "\\" in pattern:  # an escape makes the shape harder to read: refused
        return True
    body = pattern.rstrip("/")
    if not body.strip("/"):
        return False
    if "/" not in body and any_depth_ok:  # matches at any depth, in memory folders too
        if any(_component(body).fullmatch(n) for n in names):
            return True  # ``.gitattributes``, ``*.gitignore``: these very files
        return not _foreign_name(body)
    first = body.lstrip("/").split("/", 1)[0]
    if "**" in first:
        return True
    wanted = _component(first)
    return any(wanted.fullmatch(n) for n in names)


def _foreign_name(glob: str) -> bool:
    """Whether a one-part glob can match no name memoryclaw gives inside a memory folder:
    files end in a memory extension, folders are the fixed ones, years and skill names
    (letters, digits and hyphens, a hyphen in each).  ``*.swp``, ``*~``, ``node_modules``."""
    extension = _HARMLESS_NAME.fullmatch(glob)
    if extension is not None:
        return extension.group(1).lower() not in _MEMORY_EXTENSIONS
    if glob[-1] not in "*?]" and not glob[-1].isalnum():
        return True  # every memory file and folder name ends in a letter or digit
    if any(c in glob for c in "*?["):
        return False
    return not (glob.lower() in _MEMORY_DIR_NAMES or glob.isdigit() or "-" in glob)


def _component(glob: str) -> re.Pattern[str]:
    """A regular expression for one path part of a git wildmatch glob, case-insensitive (a
    case-insensitive disk or ``core.ignoreCase`` matches ``Semantic`` to ``semantic``)."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            inner = glob[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            inner = inner[1:] if negate else inner
            body = "".join(c if c == "-" else re.escape(c) for c in inner)
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    try:
        return re.compile("".join(out), re.IGNORECASE)
    except re.error:  # a class git reads otherwise: match everything, so it is refused
        return re.compile(".*")


def repair_local(root: Path) -> list[Refusal]:
    """Judge this vault's own ``.gitignore`` and ``.gitattributes`` by the rule a remote's are
    judged by (:func:`line_problem`): drop each line that could reach memory files, put back
    memoryclaw's own lines, and re-encode files a dropped ``working-tree-encoding`` had
    checked out in another encoding; what was repaired, and why.

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


def _encoded_paths(root: Path, data: bytes) -> dict[str, str]:
    """The tracked memory files this ``.gitattributes`` gives a ``working-tree-encoding``."""
    tracked = [os.fsdecode(p) for p in run_git_bytes(root, "ls-files", "-z").split(b"\0") if p]
    memory = [p for p in tracked if _in_memory(p) or p == CONFIG_FILE]
    out = {}
    for path, _, raw in _check_attr(".gitattributes", data, memory, "working-tree-encoding"):
        value = raw.decode(errors="replace")
        if value not in ("unspecified", "unset", "set", ""):
            out[os.fsdecode(path)] = value
    return out


def _reencode(root: Path, rel: str, encoding: str) -> None:
    """Write back as UTF-8 a file git checked out in ``encoding`` (local edits kept)."""
    path = root / rel
    if path.is_symlink() or not path.is_file():
        return
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        if not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            return  # already UTF-8: written after, or never converted
    except UnicodeDecodeError:
        pass
    with suppress(LookupError, UnicodeDecodeError):
        atomic_write(path, data.decode(encoding))


def local_problems(root: Path) -> list[tuple[str, str, str]]:
    """Each line of this vault's ``.gitignore``/``.gitattributes`` that could reach memory
    files: (file, line, why)."""
    found = []
    for name in _GIT_FILES:
        path = root / name
        if path.is_symlink() or not path.is_file():
            continue
        for line in _lines(path.read_bytes()):
            why = line_problem(name, line)
            if why:
                found.append((name, line, why))
    return found


def _scratch(name: str, data: bytes) -> tempfile.TemporaryDirectory[str]:
    """An empty repository holding only ``name`` with ``data``, to ask git what it means."""
    scratch = tempfile.TemporaryDirectory(prefix="memoryclaw-screen-")
    subprocess.run(["git", "init", "-q", scratch.name], check=True, capture_output=True)
    (Path(scratch.name) / name).write_bytes(data)
    return scratch


def _ignored(name: str, data: bytes, paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` git ignores under this ``.gitignore``."""
    with _scratch(name, data) as where:
        done = subprocess.run(
            ["git", "-C", where, "check-ignore", "--no-index", "-z", "--stdin"],
            input=_stdin(paths),
            capture_output=True,
            check=False,
        )
    return {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}


def _attributes(name: str, data: bytes, paths: Iterable[str]) -> set[tuple[bytes, ...]]:
    """Every (path, attribute, value) this ``.gitattributes`` gives ``paths``."""
    return set(_check_attr(name, data, paths, "--all"))


def _check_attr(
    name: str, data: bytes, paths: Iterable[str], which: str
) -> list[tuple[bytes, ...]]:
    """git check-attr's (path, attribute, value) triples for ``paths`` under this file."""
    with _scratch(name, data) as where:
        done = subprocess.run(
            ["git", "-C", where, "check-attr", "-z", which, "--stdin"],
            input=_stdin(paths),
            capture_output=True,
            check=False,
        )
    fields = done.stdout.split(b"\0")
    return [tuple(fields[n : n + 3]) for n in range(0, len(fields) - 2, 3)]


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
