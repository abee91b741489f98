"""One memory on several devices: sync a vault's git repository with a remote.

A sync commits what waits (consolidation's journal and hand edits), fetches, merges and
pushes.  Merges cannot conflict in practice by construction: each device puts its id
(:func:`device_id`) into the raw logs it creates, so two devices never make the same file,
and the append-only fact files merge by ``merge=union`` (``.gitattributes``, see
:func:`setup`).  What still conflicts is resolved the same way on every clone, so all of
them converge: the remote's version of the file stays and each local line it lacks goes to
``semantic/_pending.md`` as ``- CONFLICT (sync) …`` for review.  After a union merge two
new values for one entity's field keep the remote's and send the local one to review too.
Nothing ever holds conflict markers, and nothing written is lost.

A sync killed at any point is finished by the next: a merge left half done is aborted and
redone, a stale ``.git/index.lock`` (no git running on the vault) is removed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Settings
from .errors import ExternalToolError, SyncError
from .history import AUTHOR, MEMORY_FOLDERS, _dirty, _git, _live_log, commit_journal
from .notes import parse_facts
from .review import MANY_VALUED, append_line
from .vault import (
    CONSOLIDATE_LOCK,
    PENDING_FILE,
    SEMANTIC_DIR,
    SEMANTIC_LOCK,
    STATE_DIR,
    atomic_write,
    ensure_dir,
    file_lock,
)

DEVICE_FILE = f"{STATE_DIR}/device"
GITATTRIBUTES = f"{SEMANTIC_DIR}/*.md merge=union\n"
SYNC_MARK = "CONFLICT (sync)"
_SHARED_FILES = ("memoryclaw.yaml", ".gitignore", ".gitattributes")
_PUSH_TRIES = 4
HELD_FILE = f"{STATE_DIR}/sync-held.json"  # see _recover
_ADD_BATCH = 500
SYNC_WAIT_SECONDS = 120.0  # how long a sync waits for a running consolidation to finish
_DEVICE_RE = re.compile(r"[a-z0-9]{1,16}")


@dataclass
class RemoteSyncReport:
    """What one sync did."""

    remote: str
    pulled: int = 0
    pushed: int = 0
    files_changed: list[str] = field(default_factory=list)
    conflicts_resolved: int = 0
    duration_ms: int = 0
    # the team vaults pulled (memoryclaw.teams.TeamPull.as_dict), when any are listed
    shared: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "pulled": self.pulled,
            "pushed": self.pushed,
            "files_changed": len(self.files_changed),
            "conflicts_resolved": self.conflicts_resolved,
            "duration_ms": self.duration_ms,
            "remote": self.remote,
            **({"shared": self.shared} if self.shared else {}),
        }


def device_id(root: Path, settings: Settings) -> str:
    """This device's short id: ``sync.deviceId``, else one made once and kept locally."""
    known = log_device(root, settings)
    if known:
        return known
    made = secrets.token_hex(3)
    ensure_dir(root / STATE_DIR)
    atomic_write(root / DEVICE_FILE, made + "\n")
    return made


def log_device(root: Path, settings: Settings) -> str:
    """The device id new raw log names carry: empty in a vault that has never synced, whose
    log names stay ``YYYY-MM-DD_HH-MM-SS_<channel>_raw.md``."""
    if settings.sync.device_id:
        return settings.sync.device_id
    try:
        known = (root / DEVICE_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""
    return known if _DEVICE_RE.fullmatch(known) else ""


def has_remote(root: Path) -> bool:
    """Whether the vault is a git repository with a remote (a clone, or set up to sync)."""
    if not (root / ".git").exists():
        return False
    return bool(_git(root, "remote", check=False).stdout.strip())


def setup(root: Path) -> list[str]:
    """Write ``.gitattributes`` (union merges for fact files) and git-ignore ``.memoryclaw/``;
    the files changed."""
    changed = []
    for rel, line in ((".gitattributes", GITATTRIBUTES), (".gitignore", f"{STATE_DIR}/\n")):
        path = root / rel
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if line.strip() not in text.splitlines():
            atomic_write(path, (text.rstrip("\n") + "\n" if text.strip() else "") + line)
            changed.append(rel)
    return changed


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
    held_path = root / HELD_FILE
    if (git_dir / "MERGE_HEAD").exists():
        held = _held(held_path)
        changed = _git(root, "diff", "--name-only", "HEAD", check=False).stdout.splitlines()
        for rel in changed:
            path = root / rel
            if path.is_file():
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
                held[rel] = list(dict.fromkeys([*held.get(rel, []), *lines]))
        ensure_dir(held_path.parent)
        atomic_write(held_path, json.dumps(held, ensure_ascii=False))
        _git(root, "merge", "--abort", check=False)
        if (git_dir / "MERGE_HEAD").exists():
            _git(root, "reset", "--merge", check=False)
        if (git_dir / "MERGE_HEAD").exists():
            _git(root, "reset", "--hard", "HEAD", check=False)  # the lines are held
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
        if isinstance(lines, list)
    }


def _put_back(root: Path, rel: str, lines: list[str]) -> None:
    """Put back the held lines ``rel`` lacks now (again and again gives the same file)."""
    path = root / rel
    now = set(path.read_text(encoding="utf-8").splitlines()) if path.exists() else set()
    lost = [
        line
        for line in lines
        if line.strip()
        and line not in now
        and not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))
    ]
    if not lost:
        return
    if rel.startswith(f"{SEMANTIC_DIR}/") and rel.endswith(".md"):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        atomic_write(path, text.rstrip("\n") + "\n" + "\n".join(lost) + "\n")
    else:
        _pend(root, lost, rel)


def _commit_all(root: Path, paths: list[str], message: str) -> bool:
    """Stage ``paths`` and commit everything staged; whether a commit was made."""
    for start in range(0, len(paths), _ADD_BATCH):  # a command line holds only so many
        _git(root, "add", "-A", "--", *paths[start : start + _ADD_BATCH])
    if _git(root, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return False
    name, email = AUTHOR
    args = ("-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "--quiet")
    _git(root, *args, "--no-verify", "-m", message)
    return True


def commit_local(root: Path) -> bool:
    """Commit consolidation's journal and every hand edit of memory files (not live logs,
    which only their device consolidates); whether anything was committed."""
    made = commit_journal(root, "memoryclaw: consolidation (finished by sync)") is not None
    dirty = _dirty(root, (*MEMORY_FOLDERS, *_SHARED_FILES))
    paths = sorted(rel for rel in dirty if not _live_log(root, rel) and not _temp(rel))
    return _commit_all(root, paths, "memoryclaw: sync local changes") or made


def _temp(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return name.startswith(".") and name.endswith(".tmp")


def _rev(root: Path, ref: str) -> str | None:
    done = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return done.stdout.strip() or None


def _count(root: Path, spec: str) -> int:
    return int(_git(root, "rev-list", "--count", spec).stdout.strip() or 0)


def _show(root: Path, spec: str) -> str | None:
    done = _git(root, "show", spec, check=False)
    return done.stdout if done.returncode == 0 else None


def _pend(root: Path, lines: list[str], source: str) -> int:
    """Send local lines that lost to the remote's to review; how many were sent."""
    sent = 0
    pending = root / PENDING_FILE
    have = set(pending.read_text(encoding="utf-8").splitlines()) if pending.exists() else set()
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
    out = _git(root, "diff", "--name-only", "-z", "--diff-filter=U").stdout
    paths = sorted(p for p in out.split("\0") if p)
    for rel in paths:
        ours = _show(root, f":2:{rel}") or ""
        theirs = _show(root, f":3:{rel}")
        if theirs is None:
            (root / rel).unlink(missing_ok=True)
            _git(root, "rm", "--quiet", "--cached", "--ignore-unmatch", "--", rel)
        else:
            atomic_write(root / rel, theirs)
            _git(root, "add", "--", rel)
        kept = set((theirs or "").splitlines())
        lost = [line for line in ours.splitlines() if line not in kept]
        if lost:
            _pend(root, lost, rel)
            _git(root, "add", "--", PENDING_FILE)
    return len(paths)


def _fact_key(line: str, rel: str) -> tuple[str, str] | None:
    facts = parse_facts(line, rel, "") if line.startswith("- ") else []
    if len(facts) != 1 or facts[0].field in MANY_VALUED:
        return None
    return facts[0].entity.lower(), facts[0].field.lower()


def _normalise(root: Path, rel: str, base: str, ours: str, theirs: str) -> int:
    """After a union merge of a fact file: drop repeated lines and, where both sides added a
    value for the same entity's field, keep the remote's and send the local one to review."""
    path = root / rel
    if not path.exists():
        return 0
    base_lines = set(base.splitlines())
    ours_new = [line for line in ours.splitlines() if line not in base_lines]
    theirs_new = {line for line in theirs.splitlines() if line not in base_lines}
    theirs_keys = {_fact_key(line, rel) for line in theirs_new} - {None}
    losing = {
        line for line in ours_new if line not in theirs_new and _fact_key(line, rel) in theirs_keys
    }
    seen: set[str] = set()
    kept = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("- ") and (line in seen or line in losing):
            continue
        seen.add(line)
        kept.append(line)
    text = "\n".join(kept)
    if text != path.read_text(encoding="utf-8"):
        atomic_write(path, text)
    return _pend(root, sorted(losing), rel) if losing else 0


def _merge(root: Path, upstream: str, report: RemoteSyncReport) -> None:
    """Merge ``upstream`` into HEAD with every conflict resolved, as one commit."""
    head = _rev(root, "HEAD")
    if head is None:
        _git(root, "reset", "--quiet", "--hard", upstream)
        return
    if _git(root, "merge-base", "--is-ancestor", upstream, "HEAD", check=False).returncode == 0:
        return
    base_sha = _git(root, "merge-base", "HEAD", upstream, check=False).stdout.strip()
    name, email = AUTHOR
    ident = ("-c", f"user.name={name}", "-c", f"user.email={email}")
    done = _git(
        root,
        *ident,
        "merge",
        "--quiet",
        "--no-edit",
        "--no-verify",
        "--allow-unrelated-histories",
        "--no-commit",
        upstream,
        check=False,
    )
    if not (root / ".git" / "MERGE_HEAD").exists():
        if done.returncode != 0:  # a fast-forward refused, an untracked file in the way
            raise ExternalToolError("git merge", done.stderr.strip() or "failed")
        return  # a fast-forward
    report.conflicts_resolved += _resolve_conflicts(root)
    changed = _git(root, "diff", "--name-only", "-z", head, upstream, "--", SEMANTIC_DIR).stdout
    for rel in sorted(p for p in changed.split("\0") if p.endswith(".md")):
        base = _show(root, f"{base_sha}:{rel}") or "" if base_sha else ""
        ours = _show(root, f"{head}:{rel}") or ""
        theirs = _show(root, f"{upstream}:{rel}") or ""
        if ours and theirs:
            report.conflicts_resolved += _normalise(root, rel, base, ours, theirs)
            _git(root, "add", "--", rel)
            if (root / PENDING_FILE).exists():
                _git(root, "add", "--", PENDING_FILE)
    _git(root, *ident, "commit", "--quiet", "--no-verify", "-m", "memoryclaw: sync merge")


def sync_remote(root: Path, settings: Settings) -> RemoteSyncReport:
    """Commit, fetch, merge and push; the report names the files the merge changed here
    (for the caller to re-index).  Raises :class:`SyncError` when the remote fails."""
    started = time.monotonic()
    remote = settings.sync.remote
    report = RemoteSyncReport(remote)
    # One consolidation or sync at a time: a sync commits and merges what a consolidation
    # writes.  Fact writers (an agent stating a fact meanwhile) wait only while a commit or
    # a merge runs, never while the network is used.
    with file_lock(root, CONSOLIDATE_LOCK, timeout=SYNC_WAIT_SECONDS):
        _sync(root, remote, settings, report)
    report.duration_ms = int((time.monotonic() - started) * 1000)
    return report


def _sync(root: Path, remote: str, settings: Settings, report: RemoteSyncReport) -> None:
    try:
        with file_lock(root, SEMANTIC_LOCK):
            _recover(root)
        if _git(root, "remote", "get-url", remote, check=False).returncode != 0:
            raise SyncError(remote, "no such remote (git remote add origin URL)")
        device_id(root, settings)  # from now on this device's logs carry its id
        with file_lock(root, SEMANTIC_LOCK):
            commit_local(root)
        branch = _git(root, "symbolic-ref", "--short", "HEAD").stdout.strip()
        before = _rev(root, "HEAD")
        for attempt in range(_PUSH_TRIES):
            fetched = _git(root, "fetch", "--quiet", remote, check=False)
            if fetched.returncode != 0:
                raise SyncError(remote, _reason(fetched.stderr))
            upstream = _rev(root, f"refs/remotes/{remote}/{branch}")
            if upstream is not None:
                head = _rev(root, "HEAD")
                report.pulled += _count(root, f"{head}..{upstream}") if head else 0
                with file_lock(root, SEMANTIC_LOCK):
                    _merge(root, upstream, report)
            if _rev(root, "HEAD") is None:
                break  # nothing here nor there yet
            ahead = _count(root, f"{upstream}..HEAD") if upstream else _count(root, "HEAD")
            if not ahead:
                break
            pushed = _git(root, "push", "--quiet", remote, f"HEAD:refs/heads/{branch}", check=False)
            if pushed.returncode == 0:
                report.pushed += ahead
                _git(root, "fetch", "--quiet", remote, check=False)
                break
            if attempt == _PUSH_TRIES - 1 or "rejected" not in pushed.stderr + pushed.stdout:
                raise SyncError(remote, _reason(pushed.stderr))
        after = _rev(root, "HEAD")
        if before and after and before != after:
            out = _git(root, "diff", "--name-only", "-z", before, after).stdout
            report.files_changed = sorted(p for p in out.split("\0") if p)
        elif after and not before:
            out = _git(root, "ls-files", "-z").stdout
            report.files_changed = sorted(p for p in out.split("\0") if p)
    except ExternalToolError as exc:
        raise SyncError(remote, exc.problem) from exc


def _reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    wanted = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (wanted or lines or ["failed"])[0].removeprefix("fatal: ").removeprefix("error: ")
