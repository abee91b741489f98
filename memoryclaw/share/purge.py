"""Purge forgotten content from a vault's git history, and from its remote.

Which files to rewrite is found in the history itself: every version of every memory file
reachable from any ref is scrubbed against what was forgotten (the query's words and every
tombstone), so a purge after an interrupted or earlier forget still finds what an older
commit holds.  Each such file then holds, in every commit, what it holds now (or is absent,
and unnamed in messages, when it is gone now).  Afterwards the history is searched again:
the report says it is clean only when no version of any memory file holds forgotten text.

The rewritten branch is pushed to the vault's remote with ``--force-with-lease`` (against
the remote branch as it was before the rewrite).  When that push fails, a marker in
``.memoryclaw/`` makes the next sync push it before it fetches anything, so a sync never
merges the old history back; a remote that moved on since is refused, never merged.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ExternalToolError, MemoryclawError
from ..vault.files import (
    STATE_DIR,
    atomic_write,
    ensure_dir,
    resolve_inside,
    safe_relpath,
    sweep_temp_files,
)
from ..vault.naming import plural
from ..vault.scrub import Matcher, kind_of, scrub
from ..vault.tombstones import TOMBSTONE_DIR, load
from .git import network_git, run_git
from .history import MEMORY_FOLDERS, _commit_only, _dirty

PURGE_MARKER = f"{STATE_DIR}/purged.json"
PURGING = f"{STATE_DIR}/purging"  # a rewrite under way; left behind, it was killed
PURGES_DONE = f"{STATE_DIR}/purges-done"
GC_OWED = f"{STATE_DIR}/purge-gc-owed"  # the purge requests this device has followed
_REQUEST_PREFIX = "purge-"
_PUSH_SECONDS = 120
_LEFT = (
    "other clones of this vault keep the old history until each runs forget --purge-history"
    " (their next sync may push old commits back; the files stay forgotten through the"
    " tombstones)",
    "the remote's reflog and unreachable objects keep the old commits until it is"
    " garbage-collected (git gc --prune=now on the server)",
)


@dataclass
class PurgeReport:
    """What a purge rewrote, whether the history is clean now, and what it could not reach."""

    files: int = 0
    paths: list[str] = field(default_factory=list)
    clean: bool = True
    still_held: list[str] = field(default_factory=list)
    pushed: str | None = None  # remote/branch the rewritten history went to
    push_error: str | None = None
    left: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready account."""
        return {
            "files": self.files,
            "paths": self.paths,
            "clean": self.clean,
            "still_held": self.still_held,
            "pushed": self.pushed,
            "push_error": self.push_error,
            "not_purged": self.left,
        }

    def lines(self) -> list[str]:
        """What to tell the user, one line each."""
        out = []
        if self.clean:
            out.append(
                f"rewrote the git history of {plural(self.files, 'file')}: no commit here holds the"
                " removed text"
            )
        else:
            out.append(
                f"rewrote the git history of {plural(self.files, 'file')}, but commits here"
                f" still hold forgotten text in: {', '.join(self.still_held)}"
            )
        if self.pushed:
            out.append(f"pushed the rewritten history to {self.pushed} (--force-with-lease)")
        if self.push_error:
            out.append(
                f"could not push the rewritten history ({self.push_error}); the next sync"
                " pushes it before it pulls anything"
            )
        out += [f"not purged: {item}" for item in self.left]
        return out


def recover(root: Path) -> None:
    """Undo what a killed rewrite left: its backup refs, and an index still at the old
    history while HEAD is at the new one (the work tree holds what HEAD holds); and the temp
    file of a purge request killed while it was written.  Callers hold the consolidation
    lock, which every writer of a request or a tombstone holds."""
    sweep_temp_files(resolve_inside(root, TOMBSTONE_DIR))
    if not (root / PURGING).exists():
        return
    for ref in run_git(
        root, "for-each-ref", "--format=%(refname)", "refs/original/"
    ).stdout.split():
        run_git(root, "update-ref", "-d", ref)
    if run_git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0:
        run_git(root, "read-tree", "HEAD")
    (root / PURGING).unlink(missing_ok=True)


def blockers(root: Path) -> list[str]:
    """Tracked files with changes not committed: git cannot rewrite history past them."""
    recover(root)
    _commit_requests(root)
    out = run_git(root, "status", "--porcelain", "-z", "--untracked-files=no").stdout
    found, skip = [], False
    for entry in out.split("\0"):
        if skip or not entry:
            skip = False
            continue
        skip = entry[0] in "RC"
        found.append(entry[3:])
    return sorted(found)


def held_in_history(root: Path, match: Matcher, terms: Iterable[str] = ()) -> list[str]:
    """The memory files some version of which, in any commit, holds forgotten content."""
    listing = run_git(root, "rev-list", "--all", "--objects", "--", *MEMORY_FOLDERS, check=False)
    blobs: dict[str, str] = {}
    named: set[str] = set()
    words = [t.casefold() for t in terms]
    for row in listing.stdout.splitlines():
        sha, _, rel = row.partition(" ")
        if not rel or not kind_of(rel):
            continue
        blobs.setdefault(sha, rel)
        if words and all(w in rel.casefold() for w in words):
            named.add(rel)  # a file whose name holds the words
    if not blobs:
        return sorted(named)
    git = shutil.which("git") or "git"
    proc = subprocess.run(
        [git, "-C", str(root), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha in blobs).encode(),
        capture_output=True,
        check=False,
    )
    data, at, held = proc.stdout, 0, set(named)
    stones = bool(getattr(match, "stones", None))  # earlier forgets: every version is read
    for rel in blobs.values():
        header_end = data.find(b"\n", at)
        if header_end < 0:
            break
        header = data[at:header_end].split()
        if len(header) < 3 or header[1] != b"blob":
            at = header_end + 1
            continue
        size = int(header[2])
        body = data[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        text = body.decode("utf-8", errors="replace")
        if words and not stones and not all(w in text.casefold() for w in words):
            continue
        try:
            if scrub(rel, text, match) is not None:
                held.add(rel)
        except MemoryclawError:
            continue
    return sorted(held)


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
# A deleted file's name can tell what it held (an episode's slug): messages lose it too, and
# a message line holding every forgotten word goes.
_MESSAGE_FILTER = """
import json, sys
text = sys.stdin.read()
table = json.load(open(sys.argv[1]))
for path, blob in table["paths"].items():
    if not blob:
        text = text.replace(path, "[a forgotten file]")
words = table["words"]
if words:
    text = "\\n".join(line for line in text.split("\\n")
                     if not all(w in line.casefold() for w in words))
sys.stdout.write(text)
"""


def purge(
    root: Path,
    paths: Iterable[str],
    match: Matcher,
    *,
    terms: Iterable[str] = (),
    remote: str | None = None,
    keep: str | None = None,
    seconds: float = _PUSH_SECONDS,
) -> PurgeReport:
    """Rewrite every commit so that no memory file holds what ``match`` forgets, push the
    result to ``remote`` when the branch tracks one there (each network step bounded by
    ``seconds``, ``sync.timeoutSeconds``), and check the history after.

    Every other device purges its own history when a sync brings it the purge request this
    commits (:func:`follow`); there ``keep`` is the remote's commit, which stays as it is."""
    blocked = blockers(root)
    if blocked:
        raise ExternalToolError(
            "git filter-branch",
            f"tracked files have changes not committed: {', '.join(blocked)}; commit them first",
        )
    words = sorted(t.casefold() for t in terms)
    chosen = sorted({safe_relpath(p) for p in paths} | set(held_in_history(root, match, words)))
    report = PurgeReport(paths=chosen, left=[_LEFT[0]])
    branch = run_git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    upstream = _upstream(root, remote, branch)
    if chosen:
        if keep is None:
            _request(root)
        ensure_dir(root / STATE_DIR)
        (root / PURGING).write_text("", encoding="utf-8")
        _filter_branch(root, chosen, words, keep)
        (root / PURGING).unlink(missing_ok=True)
        report.files = len(chosen)
    report.still_held = held_in_history(root, match, words)
    report.clean = not report.still_held
    if remote and upstream:
        _push(root, remote, branch, upstream, report, seconds)
        report.left.append(_LEFT[1])
    return report


def _upstream(root: Path, remote: str | None, branch: str) -> str | None:
    """The remote branch's commit before the rewrite (what the force push leases against)."""
    if not remote or not branch:
        return None
    marker = _marker(root)
    if marker and marker.get("remote") == remote and marker.get("branch") == branch:
        return str(marker["old"])  # an earlier purge's push is still owed
    if run_git(root, "remote", "get-url", remote, check=False).returncode != 0:
        return None
    done = run_git(
        root, "rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{branch}", check=False
    )
    return done.stdout.strip() or None


def _request(root: Path) -> None:
    """Commit a purge request (no text) that a sync carries to every other device."""
    stamp = run_git(root, "log", "-1", "--format=%ct", check=False).stdout.strip() or "0"
    rel = f"{TOMBSTONE_DIR}/{_REQUEST_PREFIX}{stamp}-{os.urandom(4).hex()}.txt"
    atomic_write(
        resolve_inside(root, rel),
        "# memoryclaw: a device purged its history; each purges its own\n",
    )
    run_git(root, "add", "--", rel)
    _commit_only(root, [rel], "memoryclaw: purge request")
    _mark_done(root, [rel.rsplit("/", 1)[1]])


def _commit_requests(root: Path) -> None:
    """Commit a purge request that a killed purge wrote (or staged) but did not commit."""
    found = _dirty(root, [TOMBSTONE_DIR])
    mine = sorted(p for p in found if p.rsplit("/", 1)[-1].startswith(_REQUEST_PREFIX))
    if mine:
        run_git(root, "add", "--", *mine)
        _commit_only(root, mine, "memoryclaw: purge request")


def _requests(root: Path) -> set[str]:
    folder = root / TOMBSTONE_DIR
    if not folder.is_dir() or folder.is_symlink():
        return set()
    return {p.name for p in folder.glob(f"{_REQUEST_PREFIX}*.txt")}


def _done(root: Path) -> set[str]:
    try:
        return set((root / PURGES_DONE).read_text(encoding="utf-8").split())
    except OSError:
        return set()


def _mark_done(root: Path, names: Iterable[str]) -> None:
    ensure_dir(root / STATE_DIR)
    atomic_write(root / PURGES_DONE, "".join(f"{n}\n" for n in sorted(_done(root) | set(names))))


def follow(root: Path, keep: str | None) -> PurgeReport | None:
    """After a sync's merge: when it brought a purge request this device has not followed,
    purge this device's history (the remote's commits, ``keep``, stay) so that what it
    pushes next holds nothing forgotten.  None when there was nothing to follow, or when
    tracked files are dirty (the next sync tries again)."""
    new = _requests(root) - _done(root)
    if not new or blockers(root):
        return None
    done = purge(root, [], load(root), keep=keep)
    _mark_done(root, new)
    return done


def _filter_branch(root: Path, chosen: list[str], words: list[str], keep: str | None) -> None:
    blobs = {}
    for rel in chosen:
        shown = run_git(root, "rev-parse", "--verify", "--quiet", f"HEAD:{rel}", check=False)
        blobs[rel] = shown.stdout.strip() if shown.returncode == 0 else ""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "paths.json"
        table.write_text(json.dumps(blobs), encoding="utf-8")
        messages = Path(tmp) / "messages.json"
        messages.write_text(json.dumps({"paths": blobs, "words": words}), encoding="utf-8")
        commands = []
        for name, code, arg in (
            ("index.py", _INDEX_FILTER, table),
            ("message.py", _MESSAGE_FILTER, messages),
        ):
            (Path(tmp) / name).write_text(code, encoding="utf-8")
            parts = (sys.executable, Path(tmp) / name, arg)
            commands.append(" ".join(shlex.quote(str(part)) for part in parts))
        # Without this, filter-branch waits ten seconds to advise another tool.
        env = {**os.environ, "FILTER_BRANCH_SQUELCH_WARNING": "1"}
        filter_branch = ["filter-branch", "-f", "--index-filter", commands[0]]
        filter_branch += ["--msg-filter", commands[1], "--", "--all"]
        if keep:
            filter_branch.append(f"^{keep}")  # the remote's commits are clean: kept as they are
        done = subprocess.run(
            [shutil.which("git") or "git", "-C", str(root), *filter_branch],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            preexec_fn=_die_with_parent,
        )
        if done.returncode != 0:
            reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise ExternalToolError("git filter-branch", reason[-1] if reason else "failed")
    refs = run_git(root, "for-each-ref", "--format=%(refname)", "refs/original/").stdout.split()
    for ref in refs:
        run_git(root, "update-ref", "-d", ref)
    if keep:  # within a sync, which still names the old commits: dropped when it ends
        (root / GC_OWED).write_text("", encoding="utf-8")
    else:
        collect(root)


def collect(root: Path) -> None:
    """Drop the old commits' objects (and the reflog entries that keep them)."""
    run_git(root, "reflog", "expire", "--expire=now", "--all")
    run_git(root, "gc", "--prune=now", "--quiet")
    (root / GC_OWED).unlink(missing_ok=True)


def collect_owed(root: Path) -> None:
    """After a sync that purged this device's history: drop the old objects now."""
    if (root / GC_OWED).exists():
        collect(root)


def _die_with_parent() -> None:
    """In the rewrite's child: end when memoryclaw ends (killed, it must not go on alone
    beside the run that finishes its work)."""
    os.umask(0o077)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _marker(root: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((root / PURGE_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("old") else None


def _push(
    root: Path, remote: str, branch: str, old: str, report: PurgeReport, seconds: float
) -> None:
    """Force the rewritten branch onto the remote, leased against what it held before."""
    ensure_dir(root / STATE_DIR)
    (root / PURGE_MARKER).write_text(
        json.dumps({"remote": remote, "branch": branch, "old": old}), encoding="utf-8"
    )
    error = push_purged(root, remote, seconds)
    if error is None:
        report.pushed = f"{remote}/{branch}"
    else:
        report.push_error = error


def push_purged(root: Path, remote: str, seconds: float = _PUSH_SECONDS) -> str | None:
    """Push a purge's rewritten history that could not be pushed yet (before a sync pulls
    the old one back); None when done or nothing was owed, else why it could not be.  Each
    network step runs for at most ``seconds``, then it and every helper it started are
    killed (a remote that never answers holds no lock for ever)."""
    marker = _marker(root)
    if marker is None or marker.get("remote") != remote:
        return None
    branch, old = str(marker["branch"]), str(marker["old"])
    lease = f"--force-with-lease=refs/heads/{branch}:{old}"
    done = network_git(root, seconds, "push", "--quiet", lease, remote, f"HEAD:refs/heads/{branch}")
    if done is None:
        return f"{remote} did not answer within {seconds:g} s"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return lines[-1].strip() if lines else "push failed"
    (root / PURGE_MARKER).unlink(missing_ok=True)
    network_git(root, seconds, "fetch", "--quiet", remote)  # the remote refs, as pushed
    return None


def owed(root: Path, remote: str) -> bool:
    """Whether a purge's rewritten history still has to be pushed to ``remote``."""
    marker = _marker(root)
    return marker is not None and marker.get("remote") == remote
