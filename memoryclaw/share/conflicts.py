"""How a sync settles what conflicts: the remote's version stays, and each local line it
lacks (or a second value for a single-valued fact's field) goes to review as ``CONFLICT (sync)``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..vault.facts import parse_facts
from ..vault.files import PENDING_FILE, atomic_write
from ..vault.pending import MANY_VALUED, append_line
from ..vault.values import value_key
from .git import run_git
from .incoming import REGULAR_MODES

SYNC_MARK = "CONFLICT (sync)"


def _regular_text(root: Path, rel: str) -> str | None:
    """A regular file's text; None for a symlink or a file reached through one (never
    followed), a folder, a device or a missing file."""
    if not _real_folder(root, rel):
        return None
    try:
        fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with open(fd, "rb", closefd=False) as handle:
            return handle.read().decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def _real_folder(root: Path, rel: str) -> bool:
    """Whether ``rel``'s folder is the one inside the vault, no symlink on the way."""
    parent = os.path.dirname(rel)
    wanted = os.path.join(os.path.realpath(root), parent) if parent else os.path.realpath(root)
    return os.path.realpath(root / parent) == wanted


def _show(root: Path, spec: str) -> str | None:
    done = run_git(root, "show", spec, check=False)
    return done.stdout if done.returncode == 0 else None


def _pend(root: Path, lines: list[str], source: str) -> int:
    """Send local lines that lost to the remote's to review, redacted (they may come from a
    raw log written with redaction off); how many were sent."""
    from ..vault.redact import redact  # as a whole text: a key block spans lines

    lines = redact("\n".join(lines), keep_lines=True).split("\n")
    sent = 0
    have = set((_regular_text(root, PENDING_FILE) or "").splitlines())
    for line in lines:
        body = line.strip()
        if not body or body.startswith("#") or "<<<<<<<" in body:
            continue
        body = body.removeprefix("- ").removeprefix(f"{SYNC_MARK} ")
        entry = f"- {SYNC_MARK} {body}"
        if body.startswith(("LOW ", "CONFLICT ", "INVALID ", "UNTRUSTED ")):
            entry = f"- {body}"  # a pending line itself stays as it was
        if source != PENDING_FILE and "<!--" not in entry:
            entry += f" <!-- source: {source} -->"
        if entry not in have:
            append_line(root, PENDING_FILE, "Pending", entry)
            have.add(entry)
            sent += 1
    return sent


def _resolve_conflicts(root: Path) -> int:
    """Resolve each conflicted path: the remote's version stays, local lines it lacks go to
    review; the number of paths resolved."""
    out = run_git(root, "diff", "--name-only", "-z", "--diff-filter=U").stdout
    paths = sorted(p for p in out.split("\0") if p)
    modes = _stage_modes(root)
    for rel in paths:
        # a stage that is not a regular file (a symlink) is never written out as one
        ours = _show(root, f":2:{rel}") or "" if modes.get((rel, 2)) in REGULAR_MODES else ""
        theirs = _show(root, f":3:{rel}") if modes.get((rel, 3)) in REGULAR_MODES else None
        if theirs is None:
            (root / rel).unlink(missing_ok=True)
            run_git(root, "rm", "--quiet", "--cached", "--ignore-unmatch", "--", rel)
        else:
            atomic_write(root / rel, theirs)
            run_git(root, "add", "--", rel)
        kept = set((theirs or "").splitlines())
        lost = [line for line in ours.splitlines() if line not in kept]
        if lost:
            _pend(root, lost, rel)
            run_git(root, "add", "--", PENDING_FILE)
    return len(paths)


def _stage_modes(root: Path) -> dict[tuple[str, int], str]:
    """The mode of each conflicted path's stages: (path, stage) -> mode."""
    modes = {}
    for record in run_git(root, "ls-files", "-u", "-z").stdout.split("\0"):
        meta, _, rel = record.partition("\t")
        if rel:
            mode, _sha, stage = meta.split()
            modes[(rel, int(stage))] = mode
    return modes


# A one-fact line's entity's field, its value (as value_key compares values) and whether it
# is superseded.
_Stated = tuple[tuple[str, str], str, bool]


def _stated(line: str, rel: str) -> _Stated | None:
    """What a fact line states (None: no line of one single-valued fact)."""
    facts = parse_facts(line, rel, "") if line.startswith("- ") else []
    if len(facts) != 1 or facts[0].field in MANY_VALUED:
        return None
    fact = facts[0]
    return (fact.entity.lower(), fact.field.lower()), value_key(fact.value), fact.superseded


def _values(stated: list[_Stated], superseded: bool) -> set[tuple[tuple[str, str], str]]:
    """The (field, value) pairs ``stated`` holds as current, or as superseded."""
    return {(key, value) for key, value, gone in stated if gone == superseded}


def _normalise(root: Path, rel: str, base: str, ours: str, theirs: str) -> int:
    """After a union merge of a fact file: drop repeated lines and, where both sides added a
    value for the same entity's field, keep the remote's and send the local one to review.

    A value one side's history records as superseded is no conflict: the other side's line
    stating it (restated, or its old line the union merge brought back) goes, and so does a
    second record of it superseded; so does a local line stating the remote's new value."""
    path = root / rel
    now = _regular_text(root, rel)
    if now is None:
        return 0
    base_lines = set(base.splitlines())
    sides = {"ours": set(ours.splitlines()), "theirs": set(theirs.splitlines())}
    stated = {line: _stated(line, rel) for line in sides["ours"] | sides["theirs"]}
    facts = {
        side: [s for line in lines if (s := stated[line]) is not None]
        for side, lines in sides.items()
    }
    replaced = {side: _values(found, superseded=True) for side, found in facts.items()}
    current = {side: _values(found, superseded=False) for side, found in facts.items()}
    drop: set[str] = set()
    for line in sides["ours"] ^ sides["theirs"]:  # on one side only
        fact = stated[line]
        if fact is None:
            continue
        other = "theirs" if line in sides["ours"] else "ours"
        key, value, gone = fact
        if (key, value) not in replaced[other]:
            continue
        # a second record of it superseded goes (the remote's stays); a line stating it as
        # current goes unless the other side states it again too
        if (other == "theirs") if gone else (key, value) not in current[other]:
            drop.add(line)
    ours_new = [line for line in ours.splitlines() if line not in base_lines and line not in drop]
    theirs_new = [s for line in sides["theirs"] - base_lines if (s := stated[line]) is not None]
    theirs_values = _values(theirs_new, superseded=False)
    theirs_keys = {key for key, _ in theirs_values}
    losing = set()
    for line in ours_new:
        fact = stated.get(line)
        if line in sides["theirs"] or fact is None or fact[2] or fact[0] not in theirs_keys:
            continue
        if (fact[0], fact[1]) in theirs_values:
            drop.add(line)  # the remote's new value, stated here too
        else:
            losing.add(line)
    seen: set[str] = set()
    kept = []
    for line in now.split("\n"):
        if line.startswith("- ") and (line in seen or line in losing or line in drop):
            continue
        seen.add(line)
        kept.append(line)
    text = "\n".join(kept)
    if text != now:
        atomic_write(path, text)
    return _pend(root, sorted(losing), rel) if losing else 0
