"""Disk I/O for the vault: layout, safe paths, atomic writes, bounded reads, scans and locks.

Everything that touches the vault's files goes through here, so that every write is atomic
(temp file + fsync + rename, 0600 files in 0700 folders) and every read is bounded and
refuses to follow a link out of the vault.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat as statmod
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from ..errors import (
    FileChangedError,
    LockTimeoutError,
    ParseError,
    UnsafePathError,
    VaultNotFoundError,
)

EPISODES_DIR = "episodes"
# Episodes moved out of automatic recall (memoryclaw.consolidate.archive):
# episodes/archive/YYYY/<rest>, where episodes/<rest> is where the episode lived and goes back to.
ARCHIVE_DIR = "episodes/archive"
SEMANTIC_DIR = "semantic"
LOGS_DIR = "logs"
PROCESSED_DIR = "logs/processed"
INDEXED_DIRS = (EPISODES_DIR, SEMANTIC_DIR, LOGS_DIR)  # what a sync walks
SKILLS_DIR = "skills"
STATE_DIR = ".memoryclaw"
DAEMON_LOCK = "daemon.lock"  # in STATE_DIR: held by the running `memoryclaw daemon`
ALIASES_FILE = "semantic/aliases.yaml"
PENDING_FILE = "semantic/_pending.md"
# held by every writer of semantic/ (after the logs lock, when both are held)
SEMANTIC_LOCK = "semantic"
# held by a consolidation, an archive run or a sync from start to end
CONSOLIDATE_LOCK = "consolidate"
VAULT_FOLDERS = (EPISODES_DIR, SEMANTIC_DIR, LOGS_DIR, PROCESSED_DIR, SKILLS_DIR)

MAX_FILE_BYTES = 4 * 1024 * 1024
# Files synced or deleted at once (_at_once)
_SYNC_THREADS = 8
_T = TypeVar("_T")
# Deeper folders are reported and not read: no vault organises memories 32 levels down, and
# a path of thousands of levels would exhaust recursion and path-length limits downstream.
MAX_FOLDER_DEPTH = 32
FILE_MODE = 0o600
DIR_MODE = 0o700


@dataclass(frozen=True)
class FileStat:
    """A vault file found by a scan, with what decides whether it changed."""

    path: str  # relative to the vault, POSIX separators
    kind: str  # episode | facts | aliases
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class Skipped:
    """A file a scan or read passed over, and why."""

    path: str
    reason: str
    line: int | None = None


def require_vault(root: Path) -> Path:
    """The vault's absolute path, or :class:`VaultNotFoundError` when it is not a folder."""
    if not root.exists():
        raise VaultNotFoundError(root, "no such folder")
    if not root.is_dir():
        raise VaultNotFoundError(root, "not a folder")
    check_state_dir(root)
    return root.resolve()


def check_state_dir(root: Path) -> None:
    """Refuse a ``.memoryclaw`` that is a symlink or not a folder: the index (every memory's
    text) and the locks are written only into a real folder inside the vault."""
    state = root / STATE_DIR
    if os.path.islink(state) or (os.path.lexists(state) and not state.is_dir()):
        raise UnsafePathError(
            state,
            "is a symlink or not a folder; memoryclaw keeps its index and locks only in a real"
            " folder inside the vault (remove it: it is rebuilt)",
        )


def owner_only_umask() -> None:
    """For a child process (git): what it creates is readable by the vault's owner only."""
    os.umask(0o077)


def ensure_dir(path: Path) -> None:
    """Create a folder (and its missing parents) 0700, whatever the umask, if missing."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with suppress(FileExistsError):  # another process made it meanwhile: theirs is 0700 too
            make_dir(folder)


def make_dir(path: Path) -> None:
    """Create one folder 0700 whatever the umask; FileExistsError if the name is taken."""
    os.mkdir(path, DIR_MODE)
    os.chmod(path, DIR_MODE)  # the umask may have taken bits from the mode


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """Open a file with ``flags``, creating it 0600 whatever the umask; the descriptor."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    if os.fstat(fd).st_mode & 0o777 != FILE_MODE:
        with suppress(OSError):  # someone else's file: leave its mode alone
            os.fchmod(fd, FILE_MODE)
    return fd


def safe_relpath(rel: str) -> str:
    """Validate a vault-relative path written by a person or a program; POSIX form."""
    text = rel.replace("\\", "/")
    if not text or text.startswith("/") or "\x00" in text or (len(text) > 1 and text[1] == ":"):
        raise UnsafePathError(rel, "must be a path relative to the vault")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts or any(part == ".." for part in parts):
        raise UnsafePathError(rel, "must not contain '..'")
    return "/".join(parts)


def resolve_inside(root: Path, rel: str) -> Path:
    """The absolute path of ``rel`` inside the vault; links that leave the vault are refused."""
    rel = safe_relpath(rel)
    candidate = root / rel
    real = candidate.resolve()
    if real != root and root not in real.parents:
        raise UnsafePathError(rel, "is a link that points outside the vault")
    return candidate


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` so readers see the old file or the new one, never a torn one; in a
    :func:`staged_writes` block, when the block ends."""
    staged = _STAGED.get()
    if staged is None:
        atomic_write_all([(path, text)])
    else:
        staged[path] = text


def atomic_write_all(writes: Sequence[tuple[Path, str]]) -> None:
    """Write each ``(path, text)`` as :func:`atomic_write` does, renamed in order; their temp
    files are synced at once, so that the disk commits them together, not one by one."""
    import tempfile  # here: a process that writes nothing need not load it

    staged: list[tuple[str, Path]] = []
    try:
        fds: list[int] = []
        try:
            for path, text in writes:
                ensure_dir(path.parent)
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
                fds.append(fd)
                staged.append((tmp, path))
                os.fchmod(fd, FILE_MODE)
                with open(fd, "wb", closefd=False) as handle:
                    handle.write(text.encode("utf-8"))
            _fsync_all(fds)
        finally:
            for fd in fds:
                os.close(fd)
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            with suppress(FileNotFoundError):  # renamed into place already
                os.unlink(tmp)
        raise
    folders = {path.parent for path, _ in writes}
    batch = _BATCH.get()
    if batch is None:
        _fsync_dirs(folders)
    else:
        batch.folders |= folders


_STAGED: ContextVar[dict[Path, str] | None] = ContextVar("memoryclaw_staged", default=None)


@contextmanager
def staged_writes() -> Iterator[dict[Path, str]]:
    """Hold back the :func:`atomic_write` calls of this thread in the block, in the dict it
    gives (path to text, the last one written), for the caller to write at once with
    :func:`atomic_write_all`: one sync of their data instead of one per write.  Meanwhile
    :func:`read_text` and :func:`is_staged` see the held texts.  Not nested."""
    staged: dict[Path, str] = {}
    token = _STAGED.set(staged)
    try:
        yield staged
    finally:
        _STAGED.reset(token)


def is_staged(path: Path) -> bool:
    """Whether ``path`` was written in this thread's :func:`staged_writes` block."""
    staged = _STAGED.get()
    return staged is not None and path in staged


@dataclass
class DurableBatch:
    """The folders a :func:`durable_batch` has renamed files into, synced when it ends."""

    folders: set[Path] = field(default_factory=set)


_BATCH: ContextVar[DurableBatch | None] = ContextVar("memoryclaw_durable_batch", default=None)


@contextmanager
def durable_batch() -> Iterator[DurableBatch]:
    """Group the :func:`atomic_write` calls of this thread in the block: each file's data is
    still synced before its rename, so a reader, a kill or a power cut finds the old file or
    the new one, never a torn one; but each folder they renamed into is synced once, when the
    block ends, instead of after every write.

    Once the block has ended, every write in it survives a power cut: what must not become
    durable before them (a consolidated log's removal) goes after the block.  A nested block
    joins the outer one.
    """
    outer = _BATCH.get()
    if outer is not None:
        yield outer
        return
    batch = DurableBatch()
    token = _BATCH.set(batch)
    try:
        yield batch
    finally:
        _BATCH.reset(token)
        _fsync_dirs(batch.folders)


def copy_exact(source: Path, target: Path) -> None:
    """Put a byte-for-byte copy of ``source`` (its mtime too) at ``target``, atomically and
    durably: once this returns, the copy survives a crash or a power cut."""
    ensure_dir(target.parent)
    data = source.read_bytes()
    mtime_ns = os.lstat(source).st_mtime_ns
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            # the mtime stands in for a missing timestamp: a copy must not make it younger
            os.utime(handle.fileno(), ns=(mtime_ns, mtime_ns))
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def remove_durably(path: Path) -> None:
    """Delete a file and make the deletion survive a crash (its folder is synced)."""
    path.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def sweep_temp_files(folder: Path) -> list[Path]:
    """Delete what a killed :func:`atomic_write` left in ``folder`` (not recursive).

    Callers hold the lock every writer of that folder takes, so no write is in flight.
    """
    if not folder.is_dir():
        return []
    stale = sorted(p for p in folder.glob(".*.tmp") if p.is_file())
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dirs(folders: Iterable[Path]) -> None:
    """Sync these folders (one removed meanwhile has nothing left to keep), together."""
    fds: list[int] = []
    try:
        for folder in sorted(set(folders)):
            with suppress(FileNotFoundError):
                fds.append(os.open(folder, os.O_RDONLY))
        _fsync_all(fds)
    finally:
        for fd in fds:
            os.close(fd)


def remove_files(paths: Sequence[Path]) -> None:
    """Delete these files (one already gone is no error), at once: see :func:`_at_once`."""
    _at_once(partial(Path.unlink, missing_ok=True), paths)


def _fsync_all(fds: Sequence[int]) -> None:
    _at_once(os.fsync, fds)


def _at_once(call: Callable[[_T], object], items: Sequence[_T]) -> None:
    """``call`` on each item, from threads when there are several: a sync or a deletion waits
    for the disk's journal, and several at once share its commits instead of each waiting
    for its own.  The first failure is raised."""
    if len(items) <= 1:
        for item in items:
            call(item)
        return
    from concurrent.futures import ThreadPoolExecutor  # rarely needed, slow to import

    with ThreadPoolExecutor(min(len(items), _SYNC_THREADS)) as pool:
        for _ in pool.map(call, items):
            pass


def read_text(
    root: Path, rel: str, max_bytes: int = MAX_FILE_BYTES, *, scanned: bool = False
) -> str:
    """Read a vault file as UTF-8, refusing huge, binary or undecodable files with a reason.

    ``scanned`` marks a path that :func:`scan` produced, whose links it already checked.
    """
    if printable_name(rel) != rel:  # it could be neither stored nor printed
        raise ParseError(printable_name(rel), "file name is not valid UTF-8")
    path = root / rel if scanned else resolve_inside(root, rel)
    staged = _STAGED.get()
    if staged is not None and path in staged:
        return staged[path]
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ParseError(rel, "file disappeared before it could be read") from None
    _check_size(rel, size, max_bytes)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ParseError(rel, "is a folder, not a file") from None
    except PermissionError:
        raise ParseError(rel, "permission denied") from None
    return _decode(rel, data)


def read_scanned(root: Path, found: FileStat, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a file :func:`scan` found, as :func:`read_text` does, provided it is still what
    the scan saw: one that vanished, became a folder or changed since raises
    :class:`FileChangedError`, to be read on the next pass."""
    try:
        fd = os.open(root / found.path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        raise FileChangedError(found.path, "vanished while the vault was scanned") from None
    except PermissionError:
        raise ParseError(found.path, "permission denied") from None
    try:
        st = os.fstat(fd)
        seen = (found.mtime_ns, found.size)
        if not statmod.S_ISREG(st.st_mode) or (st.st_mtime_ns, st.st_size) != seen:
            raise FileChangedError(found.path, "changed while the vault was scanned")
        _check_size(found.path, st.st_size, max_bytes)
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(st.st_size + 1)  # one byte more shows it grew meanwhile
    finally:
        os.close(fd)
    if len(data) != found.size:
        raise FileChangedError(found.path, "changed while it was read")
    return _decode(found.path, data)


def _check_size(rel: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        limit = max_bytes // (1024 * 1024)
        raise ParseError(rel, f"file is {size / 1048576:.1f} MiB, over the {limit} MiB limit")


def _decode(rel: str, data: bytes) -> str:
    if b"\x00" in data:
        raise ParseError(rel, "binary content (NUL byte), not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ParseError(rel, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", line) from None


def classify(rel: str) -> str | None:
    """Which kind of indexed file ``rel`` is: episode, facts, aliases, log, pending, or None
    (not indexed)."""
    if rel == ALIASES_FILE:
        return "aliases"
    if rel == PENDING_FILE:
        return "pending"  # the review queue: a conflict's newer value is shown beside the fact
    name = rel.rsplit("/", 1)[-1]
    if not name.endswith(".md") or name.startswith((".", "_")):
        return None
    if rel.startswith(EPISODES_DIR + "/"):
        return "episode"
    if rel.startswith(SEMANTIC_DIR + "/"):
        return "facts"
    if rel.startswith(LOGS_DIR + "/") and rel.count("/") == 1:
        return "log"  # a raw log not yet consolidated: its turns are recalled as they come
    return None


def is_archived(rel: str) -> bool:
    """Whether the vault file ``rel`` lies in the episode archive (out of automatic recall)."""
    return rel.startswith(ARCHIVE_DIR + "/")


def active_path(rel: str) -> str:
    """Where an archived episode lives when it is not archived: ``episodes/archive/2025/x.md``
    -> ``episodes/x.md`` (a year folder is dropped when there is one); other paths as they are."""
    if not is_archived(rel):
        return rel
    rest = rel[len(ARCHIVE_DIR) + 1 :]
    year, slash, tail = rest.partition("/")
    if slash and len(year) == 4 and year.isdigit():
        rest = tail
    return f"{EPISODES_DIR}/{rest}"


def archive_path(rel: str, year: int) -> str:
    """Where the episode at ``rel`` (under ``episodes/``) goes when archived in ``year``."""
    return f"{ARCHIVE_DIR}/{year:04d}/{rel[len(EPISODES_DIR) + 1 :]}"


def printable_name(name: str) -> str:
    """A file name as text that can be printed and stored: bytes that are not UTF-8 (held by
    Python as lone surrogates) are shown as ``\\xff`` escapes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


@contextmanager
def file_lock(root: Path, name: str, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive advisory lock ``.memoryclaw/locks/<name>.lock`` for the block."""
    if not root.is_dir():
        raise VaultNotFoundError(root, "no such folder")
    check_state_dir(root)
    with lock_at(root / STATE_DIR / "locks" / f"{name}.lock", timeout):
        yield


@contextmanager
def lock_at(path: Path, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive advisory lock on the file ``path`` (made if missing) for the block."""
    ensure_dir(path.parent)
    fd = open_private(path)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(path, timeout) from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)


def daemon_running(root: Path) -> bool:
    """Whether a ``memoryclaw daemon`` holds ``root``'s daemon lock now."""
    path = root / STATE_DIR / DAEMON_LOCK
    if not path.is_file():
        return False
    try:
        with lock_at(path, timeout=0):
            return False
    except LockTimeoutError:
        return True


def unique_path(folder: Path, filename: str, *also: Path) -> Path:
    """``folder/filename``, or ``name-2.md``, ``name-3.md`` ... when that name is taken in
    ``folder`` or in any folder of ``also``."""
    name = filename
    stem, dot, ext = filename.rpartition(".")
    counter = 2
    while any(os.path.lexists(place / name) for place in (folder, *also)):
        name = f"{stem}-{counter}{dot}{ext}"
        counter += 1
    return folder / name
