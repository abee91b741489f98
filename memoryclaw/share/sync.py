"""One memory on several devices: sync a vault's git repository with a remote.

A sync commits what waits (consolidation's journal and hand edits), fetches, merges and
pushes.  Merges cannot conflict in practice by construction: each device puts its id
(:func:`~memoryclaw.vault.device.device_id`) into the raw logs it creates, so two devices
never make the same file, and the append-only fact files merge by ``merge=union``
(``.gitattributes``, see :func:`setup`).  What still conflicts is resolved the same way on
every clone, so all of them converge: the remote's version of the file stays and each local
line it lacks goes to ``semantic/_pending.md`` as ``- CONFLICT (sync) …`` for review.  After
a union merge two new values for one entity's field keep the remote's and send the local one
to review too.  Nothing ever holds conflict markers, and nothing written is lost.

A sync killed at any point is finished by the next: a merge left half done is aborted and
redone, a stale ``.git/index.lock`` (no git running on the vault) is removed.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

from ..errors import ExternalToolError, SyncError
from ..vault.config import CONFIG_FILE, Settings
from ..vault.configfile import file_settings, held_config, hold_changes
from ..vault.device import device_id
from ..vault.files import (
    CONSOLIDATE_LOCK,
    PENDING_FILE,
    SEMANTIC_DIR,
    SEMANTIC_LOCK,
    STATE_DIR,
    atomic_write,
    ensure_dir,
    file_lock,
)
from ..vault.notes import parse_facts, value_key
from ..vault.pending import MANY_VALUED, append_line
from .git import network_git, run_git
from .history import (
    AUTHOR,
    MEMORY_FOLDERS,
    VAULT_FILES,
    _dirty,
    _live_log,
    commit_journal,
)
from .incoming import (
    GITATTRIBUTES,
    REGULAR_MODES,
    SCREEN_INDEX_GLOB,
    Refusal,
    config_changes,
    config_problem,
    repair_local,
    screen,
)

SYNC_MARK = "CONFLICT (sync)"
_PUSH_TRIES = 4
HELD_FILE = f"{STATE_DIR}/sync-held.json"  # see _recover
_ADD_BATCH = 500
SYNC_WAIT_SECONDS = 120.0  # how long a sync waits for a running consolidation to finish


@dataclass
class RemoteSyncReport:
    """What one sync did."""

    remote: str
    pulled: int = 0
    pushed: int = 0
    files_changed: list[str] = field(default_factory=list)
    conflicts_resolved: int = 0
    duration_ms: int = 0
    # the team vaults pulled (memoryclaw.share.teams.TeamPull.as_dict), when any are listed
    shared: list[dict[str, Any]] = field(default_factory=list)
    # what the remote sent that this device did not take (memoryclaw.share.incoming), and why
    refused: list[Refusal] = field(default_factory=list)
    # the memoryclaw.yaml keys whose value the sync changed here (told, as they change
    # how this device behaves)
    config_changed: list[str] = field(default_factory=list)
    # the trust-relevant keys held at this device's values until `sync --accept-config`
    # (memoryclaw.vault.configfile.hold_changes): {key, kept, incoming}
    config_held: list[dict[str, Any]] = field(default_factory=list)
    # lines of this vault's own .gitignore/.gitattributes the sync removed, and why
    repaired: list[Refusal] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "pulled": self.pulled,
            "pushed": self.pushed,
            "files_changed": len(self.files_changed),
            "conflicts_resolved": self.conflicts_resolved,
            "duration_ms": self.duration_ms,
            "remote": self.remote,
            "refused": [r.as_dict() for r in self.refused],
            "config_changed": self.config_changed,
            "config_held": self.config_held,
            "repaired": [r.as_dict() for r in self.repaired],
            **({"shared": self.shared} if self.shared else {}),
        }


def has_remote(root: Path) -> bool:
    """Whether the vault is a git repository with a remote (a clone, or set up to sync)."""
    if not (root / ".git").exists():
        return False
    return bool(run_git(root, "remote", check=False).stdout.strip())


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


def _commit_all(root: Path, paths: list[str], message: str) -> bool:
    """Stage ``paths`` and commit everything staged; whether a commit was made."""
    for start in range(0, len(paths), _ADD_BATCH):  # a command line holds only so many
        batch = paths[start : start + _ADD_BATCH]
        # a removal a killed run's git staged is neither on disk nor in the index: git add
        # would refuse the batch, and the commit below takes it as it is
        known = set(run_git(root, "ls-files", "-z", "--", *batch).stdout.split("\0"))
        batch = [rel for rel in batch if rel in known or os.path.lexists(root / rel)]
        if batch:
            run_git(root, "add", "-A", "--", *batch)
    if run_git(root, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return False
    name, email = AUTHOR
    args = ("-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "--quiet")
    run_git(root, *args, "--no-verify", "-m", message)
    return True


def commit_local(root: Path) -> bool:
    """Commit consolidation's journal and every hand edit of memory files (not live logs,
    which only their device consolidates); whether anything was committed."""
    made = commit_journal(root, "memoryclaw: consolidation (finished by sync)") is not None
    dirty = _dirty(root, (*MEMORY_FOLDERS, *VAULT_FILES))
    paths = sorted(rel for rel in dirty if not _live_log(root, rel) and not _temp(rel))
    return _commit_all(root, paths, "memoryclaw: sync local changes") or made


def _temp(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return name.startswith(".") and name.endswith(".tmp")


def _rev(root: Path, ref: str) -> str | None:
    done = run_git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return done.stdout.strip() or None


def _count(root: Path, spec: str) -> int:
    return int(run_git(root, "rev-list", "--count", spec).stdout.strip() or 0)


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


def _merge(root: Path, upstream: str, report: RemoteSyncReport) -> None:
    """Merge ``upstream`` into HEAD with every conflict resolved, as one commit.

    What is merged is ``upstream`` screened (:func:`memoryclaw.share.incoming.screen`): what the
    remote may not change never reaches the working tree, and the report lists it."""
    head = _rev(root, "HEAD")
    if head is not None and _ancestor(root, upstream, "HEAD"):
        return
    upstream, refused = screen(root, upstream, head)
    report.refused += [r for r in refused if r not in report.refused]
    # trust-relevant keys the merge changes are held before it writes the file (a sync
    # killed after it leaves no incoming value in effect), and again after, as merged
    before = file_settings(root)
    _hold(root, before, _commit_settings(root, upstream))
    _merge_screened(root, upstream, head, report)
    _hold(root, before, file_settings(root))


def _merge_screened(root: Path, upstream: str, head: str | None, report: RemoteSyncReport) -> None:
    """Merge the screened ``upstream`` into ``head`` (see :func:`_merge`)."""
    if head is None:
        run_git(root, "reset", "--quiet", "--hard", upstream)
        return
    if _ancestor(root, upstream, "HEAD"):
        return
    base_sha = run_git(root, "merge-base", "HEAD", upstream, check=False).stdout.strip()
    name, email = AUTHOR
    ident = ("-c", f"user.name={name}", "-c", f"user.email={email}")
    done = run_git(
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
    _keep_valid_config(root, head, report)
    changed = run_git(root, "diff", "--name-only", "-z", head, upstream, "--", SEMANTIC_DIR).stdout
    for rel in sorted(p for p in changed.split("\0") if p.endswith(".md")):
        base = _show(root, f"{base_sha}:{rel}") or "" if base_sha else ""
        ours = _show(root, f"{head}:{rel}") or ""
        theirs = _show(root, f"{upstream}:{rel}") or ""
        if ours and theirs:
            report.conflicts_resolved += _normalise(root, rel, base, ours, theirs)
            run_git(root, "add", "--", rel)
            if (root / PENDING_FILE).exists():
                run_git(root, "add", "--", PENDING_FILE)
    run_git(root, *ident, "commit", "--quiet", "--no-verify", "-m", "memoryclaw: sync merge")


def _ancestor(root: Path, older: str, newer: str) -> bool:
    return run_git(root, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def _keep_valid_config(root: Path, head: str, report: RemoteSyncReport) -> None:
    """A merged ``memoryclaw.yaml`` that is no valid configuration gives way to this
    device's (both sides may be valid and their merge not)."""
    text = _regular_text(root, CONFIG_FILE)
    why = config_problem(text.encode("utf-8"), CONFIG_FILE) if text is not None else None
    if why is None:
        return
    ours = _show(root, f"{head}:{CONFIG_FILE}")
    if ours is not None and config_problem(ours.encode("utf-8"), CONFIG_FILE) is None:
        atomic_write(root / CONFIG_FILE, ours)
        run_git(root, "add", "--", CONFIG_FILE)
        refusal = Refusal(CONFIG_FILE, f"the merge made it invalid, this device's kept: {why}")
        report.refused.append(refusal)


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


def _push_purged_history(root: Path, remote: str, seconds: float) -> None:
    """A purge's rewritten history goes to the remote before anything is pulled: a fetch and
    merge of the old history would bring the purged memory back."""
    from .purge import PURGE_MARKER, owed, push_purged

    if owed(root, remote) and (error := push_purged(root, remote, seconds)) is not None:
        raise SyncError(
            remote,
            f"this vault's history was purged and the rewritten history could not be pushed"
            f" ({error}); nothing was pulled, so nothing forgotten came back. If the remote"
            f" moved on since, remove {PURGE_MARKER}, sync (the tombstones keep the files"
            " forgotten) and run forget --purge-history again",
        )


def _purge_as_asked(root: Path, upstream: str) -> None:
    """When the merge brought another device's history purge, purge this device's history
    too before pushing: else the old commits would go back to the remote."""
    from .purge import follow

    follow(root, upstream)


def _forget_again(root: Path, before: str | None) -> None:
    """Take out of what a merge brought whatever was forgotten (the tombstones of every
    device's forgets), and commit that before anything is pushed."""
    from .forget import reapply

    after = _rev(root, "HEAD")
    if before == after or after is None:
        return
    spec = ["diff", "--name-only", "-z", before, after] if before else ["ls-files", "-z"]
    paths = [p for p in run_git(root, *spec).stdout.split("\0") if p]
    if reapply(root, paths):
        with file_lock(root, SEMANTIC_LOCK):
            commit_local(root)


def _sync(root: Path, remote: str, settings: Settings, report: RemoteSyncReport) -> None:
    try:
        with file_lock(root, SEMANTIC_LOCK):
            _recover(root)
        if run_git(root, "remote", "get-url", remote, check=False).returncode != 0:
            raise SyncError(remote, "no such remote (git remote add origin URL)")
        device_id(root, settings)  # from now on this device's logs carry its id
        with file_lock(root, SEMANTIC_LOCK):
            # a line that reaches memory files, taken before it was refused, would fail
            # every commit or stop memories syncing for good
            report.repaired = repair_local(root)
            commit_local(root)
        _push_purged_history(root, remote, settings.sync.timeout_seconds)
        branch = run_git(root, "symbolic-ref", "--short", "HEAD").stdout.strip()
        before = _rev(root, "HEAD")
        seconds = settings.sync.timeout_seconds
        for attempt in range(_PUSH_TRIES):
            fetched = _network(root, remote, seconds, "fetch", "--quiet", remote)
            if fetched.returncode != 0:
                raise SyncError(remote, _reason(fetched.stderr))
            upstream = _rev(root, f"refs/remotes/{remote}/{branch}")
            if upstream is not None:
                head = _rev(root, "HEAD")
                report.pulled += _count(root, f"{head}..{upstream}") if head else 0
                with file_lock(root, SEMANTIC_LOCK):
                    _merge(root, upstream, report)
                _forget_again(root, head)
                _purge_as_asked(root, upstream)
            if _rev(root, "HEAD") is None:
                break  # nothing here nor there yet
            ahead = _count(root, f"{upstream}..HEAD") if upstream else _count(root, "HEAD")
            if not ahead:
                break
            target = f"HEAD:refs/heads/{branch}"
            pushed = _network(root, remote, seconds, "push", "--quiet", remote, target)
            if pushed.returncode == 0:
                report.pushed += ahead
                network_git(root, seconds, "fetch", "--quiet", remote)  # refreshes refs only
                break
            if attempt == _PUSH_TRIES - 1 or "rejected" not in pushed.stderr + pushed.stdout:
                raise SyncError(remote, _reason(pushed.stderr))
        after = _rev(root, "HEAD")
        if before and after and before != after:
            out = run_git(root, "diff", "--name-only", "-z", before, after).stdout
            report.files_changed = sorted(p for p in out.split("\0") if p)
            if CONFIG_FILE in report.files_changed:
                old, new = (_show(root, f"{sha}:{CONFIG_FILE}") or "" for sha in (before, after))
                report.config_changed = config_changes(old.encode(), new.encode())
        elif after and not before:
            out = run_git(root, "ls-files", "-z").stdout
            report.files_changed = sorted(p for p in out.split("\0") if p)
        report.config_held = config_held(root)
    except ExternalToolError as exc:
        raise SyncError(remote, exc.problem) from exc


def config_held(root: Path) -> list[dict[str, Any]]:
    """The keys held at this device's values, as a report lists them: {key, kept, incoming}."""
    return [
        {"key": key, "kept": pair["trusted"], "incoming": pair["incoming"]}
        for key, pair in sorted(held_config(root).items())
    ]


def _hold(root: Path, before: Settings | None, after: Settings | None) -> None:
    """Hold the trust-relevant keys that differ between ``before`` and ``after``
    (:func:`memoryclaw.vault.configfile.hold_changes`)."""
    if before is not None and after is not None:
        hold_changes(root, before, after)


def _commit_settings(root: Path, commit: str) -> Settings | None:
    """What ``memoryclaw.yaml`` says in ``commit`` (None when it is not valid: then the
    screening refuses it)."""
    from .incoming import commit_settings

    return commit_settings(root, commit)


def _network(root: Path, remote: str, seconds: float, *args: str) -> CompletedProcess[str]:
    """A git command that talks to ``remote``; :class:`SyncError` when it does not finish
    within ``seconds`` (``sync.timeoutSeconds``)."""
    done = network_git(root, seconds, *args)
    if done is None:
        raise SyncError(remote, f"no answer within {seconds:g} s (sync.timeoutSeconds); gave up")
    return done


def _reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    wanted = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (wanted or lines or ["failed"])[0].removeprefix("fatal: ").removeprefix("error: ")
