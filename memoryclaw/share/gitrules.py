"""What a ``.gitignore`` or ``.gitattributes`` line may do in a vault: a rule on the pattern's
shape that refuses any line that could reach memory files (or expose ``.memoryclaw/``), with
git itself asked about memory paths as a second net.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from ..vault.config import CONFIG_FILE
from ..vault.files import STATE_DIR, atomic_write
from .git import run_git_bytes
from .history import MEMORY_FOLDERS

# what `sync --setup` writes to .gitattributes: fact files merge by union
GITATTRIBUTES = "semantic/*.md merge=union\n"
_GIT_FILES = (".gitignore", ".gitattributes")
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


def _top(path: str) -> str:
    # lower case: on a case-insensitive disk ".MemoryClaw/x" is written into .memoryclaw/
    return path.split("/", 1)[0].lower()


def _in_memory(path: str) -> bool:
    return _top(path) in {folder.split("/")[0] for folder in MEMORY_FOLDERS}


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
