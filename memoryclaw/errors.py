"""Every error memoryclaw raises on purpose, rooted at one class.

The tree::

    MemoryclawError
    ├── ConfigError          bad memoryclaw.yaml or environment value (path, key, expected)
    ├── ParseError           a vault file that cannot be read as memory (path, line, reason)
    │   └── FileChangedError     it vanished or changed while being read: retry next pass
    ├── UnsafePathError      an id, slug or path that would leave the vault (path)
    ├── VaultNotFoundError   no vault at the given path (path)
    ├── NotFoundError        no memory with that id (kind, ident)
    ├── ArchiveConflictError an episode cannot move: another file is where it goes (path, target)
    ├── LockTimeoutError     another process holds the vault lock (path)
    ├── DaemonRunningError   another daemon already serves this vault (path, pid)
    ├── InvalidInputError    an argument or input record is unusable (field, problem, line)
    ├── ExternalToolError    a program memoryclaw drives (openclaw, git) failed (command, code)
    ├── EmbeddingError       the vector fallback's embedder is missing or failed (provider, fix)
    ├── SyncError            a git remote could not be reached or refused a sync (remote, reason)
    └── ReadOnlyVaultError   a write aimed at a team vault, which is only read (name, path, ident)

Each carries the data a caller needs to act on it; ``str(err)`` is a one-line message.
What went wrong and was got round is logged as a warning by :func:`warn`.
"""

from __future__ import annotations

from pathlib import Path


class MemoryclawError(Exception):
    """Root of all memoryclaw errors."""


class ConfigError(MemoryclawError):
    """A configuration value is unknown or of the wrong type."""

    def __init__(self, path: str | Path | None, key: str, problem: str) -> None:
        self.path = str(path) if path is not None else None
        self.key = key
        self.problem = problem
        where = f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{key}: {problem}")


class ParseError(MemoryclawError):
    """A vault file cannot be parsed; indexing skips it and reports this."""

    def __init__(self, path: str | Path, reason: str, line: int | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.line = line
        at = f":{line}" if line is not None else ""
        super().__init__(f"{self.path}{at}: {reason}")


class FileChangedError(ParseError):
    """A file vanished, became a folder or changed while it was read; the next pass reads it."""


class UnsafePathError(MemoryclawError):
    """A path, id or slug would point outside the vault."""

    def __init__(self, path: str | Path, reason: str = "points outside the vault") -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class VaultNotFoundError(MemoryclawError):
    """The vault folder does not exist or is not a folder."""

    def __init__(self, path: str | Path, reason: str = "no vault here") -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason} (create one with `memoryclaw init {self.path}`)")


class NotFoundError(MemoryclawError):
    """No memory with the given id."""

    def __init__(self, kind: str, ident: str) -> None:
        self.kind = kind
        self.ident = ident
        super().__init__(f"no {kind} with id {ident!r}")


class ArchiveConflictError(MemoryclawError):
    """An episode cannot be moved into or out of the archive: a different file is in its way."""

    def __init__(self, path: str, target: str) -> None:
        self.path = path
        self.target = target
        super().__init__(
            f"{path}: cannot move it to {target}, which holds another file (merge them by hand)"
        )


class LockTimeoutError(MemoryclawError):
    """The vault lock could not be taken in time."""

    def __init__(self, path: str | Path, seconds: float) -> None:
        self.path = str(path)
        self.seconds = seconds
        super().__init__(f"{self.path}: still locked by another process after {seconds:g}s")


class DaemonRunningError(MemoryclawError):
    """A ``memoryclaw daemon`` already holds this vault's daemon lock."""

    def __init__(self, path: str | Path, pid: int | None) -> None:
        self.path = str(path)
        self.pid = pid
        who = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(f"a memoryclaw daemon ({who}) is already running on this vault ({path})")


class InvalidInputError(MemoryclawError):
    """An argument or input record cannot be used (empty session, unknown role ...)."""

    def __init__(
        self, field: str, problem: str, *, source: str | None = None, line: int | None = None
    ) -> None:
        self.field = field
        self.problem = problem
        self.source = source
        self.line = line
        where = source or ""
        if line is not None:
            where += f":{line}"
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{field}: {problem}")


class ExternalToolError(MemoryclawError):
    """A program memoryclaw runs on the user's behalf is missing or failed."""

    def __init__(self, command: str, problem: str, *, returncode: int | None = None) -> None:
        self.command = command
        self.problem = problem
        self.returncode = returncode
        super().__init__(f"{command}: {problem}")


class EmbeddingError(MemoryclawError):
    """The embedder behind the vector fallback is not installed, not reachable or failed.

    Keyword search never depends on it: callers report this and carry on without vectors.
    """

    def __init__(self, provider: str, problem: str, fix: str | None = None) -> None:
        self.provider = provider
        self.problem = problem
        self.fix = fix
        tail = f"; {fix}" if fix else ""
        super().__init__(f"embeddings ({provider}): {problem}{tail}")


class SyncError(MemoryclawError):
    """Syncing with a git remote failed (offline, refused); the next sync catches up."""

    def __init__(self, remote: str, reason: str) -> None:
        self.remote = remote
        self.reason = reason
        super().__init__(f"sync with remote {remote!r} failed: {reason}")


class ReadOnlyVaultError(MemoryclawError):
    """A command would change a team vault (``sharedVaults``), which this vault only reads."""

    def __init__(self, name: str, path: str | Path, ident: str, action: str) -> None:
        self.name = name
        self.path = str(path)
        self.ident = ident
        self.action = action
        super().__init__(
            f"{ident} is in the team vault {name!r} ({self.path}), which is read-only here:"
            f" {action} changes only this vault; change it in the team vault itself"
        )


def warn(logger: str, message: str, *args: object) -> None:
    """Log a warning on the logger named ``logger`` (``memoryclaw.config``...).

    :mod:`logging` is imported with the first warning: a command with none to give, as a
    recall or a logged turn mostly has, does not pay the ~3 ms it takes to load.
    """
    import logging

    logging.getLogger(logger).warning(message, *args, stacklevel=2)
