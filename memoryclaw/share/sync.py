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
from .conflicts import _normalise, _regular_text, _resolve_conflicts, _show
from .git import network_git, run_git
from .gitrules import GITATTRIBUTES
from .history import AUTHOR, MEMORY_FOLDERS, VAULT_FILES, _dirty, _live_log, commit_journal
from .incoming import Refusal, config_changes, config_problem, repair_local, screen
from .recovery import _recover

# a merge committed and not yet scrubbed of what was forgotten (see merge_and_forget_again)
SCRUB_JOURNAL = f"{STATE_DIR}/sync-scrub.json"
_PUSH_TRIES = 4
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


def merge_and_forget_again(
    root: Path, upstream: str, head: str | None, report: RemoteSyncReport
) -> None:
    """Merge ``upstream`` into ``head`` (:func:`_merge`), then take out and commit what the
    merge brought back that was forgotten (:func:`_forget_again`).

    Between the two the merge is committed but not yet scrubbed, so the vault notes it
    (:data:`SCRUB_JOURNAL`) first: a sync killed or failed in between (a writer holding the
    logs lock too long) is scrubbed by the next sync or import before it pushes, instead of
    pushing what was forgotten back to every device."""
    ensure_dir(root / STATE_DIR)
    atomic_write(root / SCRUB_JOURNAL, json.dumps({"before": head}))
    with file_lock(root, SEMANTIC_LOCK):
        _merge(root, upstream, report)
    _forget_again(root, head)
    (root / SCRUB_JOURNAL).unlink(missing_ok=True)


def finish_forgetting_again(root: Path) -> list[str]:
    """Scrub what an interrupted :func:`merge_and_forget_again` merged (from the commit it
    noted, or every file when that commit is gone or unreadable); the files its merge and
    this scrub changed since (for the caller to re-index)."""
    try:
        doc = json.loads((root / SCRUB_JOURNAL).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        doc = None
    noted = doc.get("before") if isinstance(doc, dict) else None
    before = _rev(root, noted) if isinstance(noted, str) and noted else None
    _forget_again(root, before)  # without a commit to start from: every tracked file
    (root / SCRUB_JOURNAL).unlink(missing_ok=True)
    spec = ["diff", "--name-only", "-z", before, "HEAD"] if before else ["ls-files", "-z"]
    return [p for p in run_git(root, *spec, check=False).stdout.split("\0") if p]


def _forget_again(root: Path, before: str | None) -> None:
    """Take out of what a merge brought whatever was forgotten (the tombstones of every
    device's forgets), and commit that before anything is pushed (with no ``before``: out of
    every tracked file)."""
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
        unfinished = finish_forgetting_again(root)
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
                merge_and_forget_again(root, upstream, head, report)
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
        report.files_changed = sorted({*report.files_changed, *unfinished})
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
