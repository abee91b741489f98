"""Walking the vault's indexed folders: what files they hold, what was skipped and why, and
whether a folder changed since it was walked; disk usage for ``stats``.

Whatever the folders hold (names that are not UTF-8, links, nesting thousands deep, files that
vanish while they are walked) is skipped with a reason, never fatal.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from .files import (
    INDEXED_DIRS,
    LOGS_DIR,
    MAX_FOLDER_DEPTH,
    FileStat,
    Skipped,
    classify,
    printable_name,
)


@dataclass
class Scan:
    """What a walk of the indexed folders found."""

    files: list[FileStat]
    skipped: list[Skipped]
    folders: dict[str, int]  # vault-relative folder -> its mtime_ns


def scan(root: Path) -> Scan:
    """Every indexed file under episodes/ and semantic/ (sorted by path), what was skipped,
    and the mtime of every folder walked.

    Whatever the folders hold — names that are not UTF-8, nesting thousands deep, files that
    vanish or turn into folders while they are walked — is skipped with a reason, never fatal.
    """
    result = Scan([], [], {})
    for top in INDEXED_DIRS:
        folder = root / top
        if folder.is_symlink():
            _check_link(root, folder, top, result)
        elif folder.is_dir():
            _walk(root, top, result)
    result.files.sort(key=lambda f: f.path)
    return result


def _walk(root: Path, top: str, result: Scan) -> None:
    """Walk ``top`` without recursion, down to ``MAX_FOLDER_DEPTH`` folders."""
    pending = [top]
    while pending:
        rel = pending.pop()
        try:
            mtime_ns = os.stat(root / rel).st_mtime_ns
            with os.scandir(root / rel) as listing:
                entries = list(listing)
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone since its parent was listed: its parent's mtime says so
        except OSError as exc:
            result.skipped.append(Skipped(rel, f"cannot list folder: {exc.strerror}"))
            continue
        result.folders[rel] = mtime_ns
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child = f"{rel}/{entry.name}"
            shown = printable_name(child)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
                if shown != child and (is_folder or classify(shown) is not None):
                    result.skipped.append(Skipped(shown, "file name is not valid UTF-8"))
                elif entry.is_symlink():
                    _check_link(root, Path(entry.path), child, result)
                elif is_folder and child.count("/") >= MAX_FOLDER_DEPTH:
                    reason = f"folders nested more than {MAX_FOLDER_DEPTH} deep are not read"
                    result.skipped.append(Skipped(child, reason))
                elif is_folder and rel == LOGS_DIR:
                    continue  # logs/processed/ is consolidated: its episodes are indexed
                elif is_folder:
                    pending.append(child)
                elif entry.is_file(follow_symlinks=False) and (kind := classify(child)):
                    st = entry.stat(follow_symlinks=False)
                    result.files.append(FileStat(child, kind, st.st_mtime_ns, st.st_size))
            except FileNotFoundError:
                continue  # removed while the folder was walked: not there for this pass


def _check_link(root: Path, link: Path, rel: str, result: Scan) -> None:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        result.skipped.append(Skipped(rel, "broken symbolic link"))
        return
    if root not in target.parents:
        result.skipped.append(Skipped(rel, "symbolic link points outside the vault"))
        return
    if target.is_dir():
        result.skipped.append(Skipped(rel, "symbolic link to a folder is not followed"))
        return
    kind = classify(rel)
    if kind is not None:
        try:
            st = target.stat()
        except FileNotFoundError:
            return  # removed since it was resolved: not there for this pass
        result.files.append(FileStat(rel, kind, st.st_mtime_ns, st.st_size))


def disk_usage(root: Path, skip: frozenset[str]) -> int:
    """Bytes in the files under ``root`` (links not followed), leaving out folders named in
    ``skip``; iterative, so no nesting depth can exhaust the stack."""
    total, pending = 0, [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue  # vanished or unreadable: nothing to count
        for entry in entries:
            with suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in skip:
                        pending.append(Path(entry.path))
                else:
                    total += entry.stat(follow_symlinks=False).st_size
    return total


def folders_changed(root: Path, folders: dict[str, int]) -> bool:
    """Whether any of these folders changed (a file or folder added, removed or renamed in it)
    since their mtimes were taken, or the indexed top folders appeared or vanished.

    Only the folders are stat-ed, not listed: a new subfolder changes its parent's mtime.
    """
    for top in INDEXED_DIRS:
        if (top in folders) != (root / top).is_dir():
            return True
    for rel, mtime_ns in folders.items():
        try:
            if os.stat(root / rel).st_mtime_ns != mtime_ns:
                return True
        except OSError:
            return True
    return False
