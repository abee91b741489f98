"""Carry a vault's memory in one archive: ``export FILE.tar.gz`` and ``import FILE.tar.gz``.

An import merges by the rules of a sync (:mod:`memoryclaw.share.sync`): the archive's files become
a commit of their own, merged into the vault's history as if fetched from another device, so
its facts join by union and what conflicts goes to review, and what the vault forgot since the
archive was made is taken out again at once, in a commit of its own.  An archive is checked before
anything is written: a member with an absolute path, a ``..`` part, a link or a device is
refused with an error naming it.  Every other member goes into the merged commit and is
screened as a remote's commit is (:mod:`memoryclaw.share.incoming`): what the vault does not take
(a narrow ``.gitignore`` line, a nested one, ``.memoryclaw/``) is listed in the report's
``refused``, and the CLI prints it, with the keys held, on stderr as a sync does.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from ..errors import InvalidInputError
from ..vault.config import CONFIG_FILE
from ..vault.files import CONSOLIDATE_LOCK, LOGS_DIR, SEMANTIC_LOCK, file_lock
from .git import run_git
from .history import AUTHOR, MEMORY_FOLDERS, _live_log
from .incoming import config_changes, repair_local
from .sync import (
    RemoteSyncReport,
    commit_local,
    config_held,
    finish_forgetting_again,
    merge_and_forget_again,
)

_SHARED = ("memoryclaw.yaml", ".gitattributes")


def export_archive(root: Path, target: Path) -> int:
    """Write the vault's memory files (not the index, not open logs) to ``target``; how many."""
    count = 0
    with tarfile.open(target, "w:gz") as archive:
        for rel in _memory_files(root):
            archive.add(root / rel, arcname=rel, recursive=False)
            count += 1
    return count


def _memory_files(root: Path) -> list[str]:
    found = [rel for rel in _SHARED if (root / rel).is_file()]
    for folder in MEMORY_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not path.is_symlink() and not _live_log(root, rel):
                found.append(rel)
    return found


def check_archive(source: Path) -> list[tarfile.TarInfo]:
    """The archive's members, every one checked safe to extract."""
    try:
        with tarfile.open(source, "r:gz") as archive:
            members = archive.getmembers()
    except (OSError, tarfile.TarError) as exc:
        unreadable = f"not a readable .tar.gz ({exc})"
        raise InvalidInputError("archive", unreadable, source=str(source)) from exc
    for member in members:
        parts = PurePosixPath(member.name).parts
        problem: str | None = None
        if member.name.startswith("/") or PurePosixPath(member.name).is_absolute():
            problem = "an absolute path"
        elif ".." in parts:
            problem = "a path with '..'"
        elif member.issym() or member.islnk():
            problem = "a link"
        elif not (member.isfile() or member.isdir()):
            problem = "a device or special file"
        if problem is not None:
            raise InvalidInputError(
                "archive",
                f"member {member.name!r} is {problem}; nothing imported",
                source=str(source),
            )
    return members


def _redact_logs(tree: Path) -> None:
    """Redact the logs an archive holds before they become a commit: ``export`` writes only
    redacted (processed) logs, so a raw log in an archive was put there by hand, possibly
    verbatim (``privacy.redactSecrets: false``), and git must only ever see the redacted
    copy.  A file that is not a log is redacted as plain text."""
    from ..errors import MemoryclawError
    from ..vault.logformat import dump_log, parse_log
    from ..vault.rawlogs import redacted_log
    from ..vault.redact import redact

    for path in sorted((tree / LOGS_DIR).rglob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        try:
            log = parse_log(text, path.relative_to(tree).as_posix())
            clean = redacted_log(log)
            changed = clean != log
            new = dump_log(clean.meta, clean.turns) if changed else text
        except MemoryclawError:
            new = redact(text)
        if new != text:
            path.write_bytes(new.encode("utf-8", "surrogateescape"))


def import_archive(root: Path, source: Path) -> RemoteSyncReport:
    """Merge an exported archive into the vault's git history as a sync would merge another
    device's; the report names the files that changed here."""
    members = check_archive(source)
    with file_lock(root, CONSOLIDATE_LOCK):  # as a sync: alone, facts wait only for the merge
        return _import(root, source, members)


def _import(root: Path, source: Path, members: list[tarfile.TarInfo]) -> RemoteSyncReport:
    report = RemoteSyncReport(str(source))
    # a sync or import stopped before it scrubbed its merge
    unfinished = finish_forgetting_again(root)
    with file_lock(root, SEMANTIC_LOCK):
        report.repaired = repair_local(root)  # as a sync does before it merges
        commit_local(root)
    before = run_git(root, "rev-parse", "HEAD").stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        tree_dir = Path(tmp) / "tree"
        tree_dir.mkdir()
        with tarfile.open(source, "r:gz") as archive:
            archive.extractall(tree_dir, members=members, filter="data")
        _redact_logs(tree_dir)
        index = Path(tmp) / "index"
        env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_WORK_TREE": str(tree_dir)}
        git_dir = str(root / ".git")

        def run(*args: str) -> str:
            done = subprocess.run(
                ["git", "--git-dir", git_dir, *args], env=env, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise InvalidInputError("archive", done.stderr.strip(), source=str(source))
            return done.stdout.strip()

        # every member goes into the commit, past the archive's own .gitignore files (a
        # nested one would hide files from the screening): the screening then refuses, and
        # the report lists, each path the vault does not take
        run("add", "-A", "--force", ".")
        tree = run("write-tree")
        name, email = AUTHOR
        env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email)
        env.update(GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email)
        commit = run("commit-tree", tree, "-m", f"memoryclaw: import {source.name}")
    # an archive made before a forget still holds what it took
    merge_and_forget_again(root, commit, before, report)
    after = run_git(root, "rev-parse", "HEAD").stdout.strip()
    if after != before:
        out = run_git(root, "diff", "--name-only", "-z", before, after).stdout
        report.files_changed = sorted(p for p in out.split("\0") if p)
        if CONFIG_FILE in report.files_changed:
            old, new = (
                run_git(root, "show", f"{sha}:{CONFIG_FILE}", check=False).stdout
                for sha in (before, after)
            )
            report.config_changed = config_changes(old.encode(), new.encode())
    report.files_changed = sorted({*report.files_changed, *unfinished})
    report.config_held = config_held(root)
    return report
