"""The daemon's watch on the vault: which file changes call for a reindex or a closed-log
check, and a debouncer that releases each task once the changes stop for a moment.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..vault.files import LOGS_DIR, STATE_DIR

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler

CHECK, REINDEX = "check", "reindex"  # the tasks a change calls for

# Folders whose changes nobody needs to hear about: the index and its locks, and git.
_IGNORED_TOP = {STATE_DIR, ".git"}
# File events that can change what a file holds; opened/closed-without-write are reads (our
# own reindex reads every changed file, so reacting to those would loop).
_CHANGE_EVENTS = {"created", "deleted", "modified", "moved", "closed"}


def event_handler(
    base: type[FileSystemEventHandler], root: Path, changed: Callable[[str, str | None], None]
) -> FileSystemEventHandler:
    """A watchdog handler that reports each vault change: the task it needs and the file
    (None for a folder, whose contents only a full sync can tell)."""

    class _Handler(base):  # type: ignore[valid-type,misc]
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type not in _CHANGE_EVENTS:
                return
            if event.is_directory and event.event_type == "modified":
                return  # a file event inside says more; this one also fires for temp files
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                path = os.fsdecode(raw) if raw else ""
                task = _task_for(root, path) if path else None
                if task is not None:
                    rel = None if event.is_directory else Path(path).relative_to(root).as_posix()
                    changed(task, rel)

    handler: FileSystemEventHandler = _Handler()
    return handler


def _task_for(root: Path, path: str) -> str | None:
    """Which task a change at ``path`` calls for: a closed-log check, a reindex, or none."""
    try:
        rel = Path(path).relative_to(root)
    except ValueError:
        return None
    parts = rel.parts
    if not parts or parts[0] in _IGNORED_TOP:
        return None
    name = parts[-1]
    if name.startswith(".") and name.endswith(".tmp"):
        return None  # an atomic write's temp file; its rename into place is the event
    return CHECK if parts[0] == LOGS_DIR else REINDEX


class Debouncer:
    """Collects pokes and releases each distinct task once things stay quiet for a moment."""

    def __init__(self, quiet: float, longest: float) -> None:
        self.quiet = quiet
        self.longest = longest
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._first = self._last = 0.0
        self._closing = False
        self._thread: threading.Thread | None = None

    def start(self, release: Callable[[str], object]) -> None:
        """Start the thread that hands settled tasks to ``release``."""
        self._thread = threading.Thread(
            target=self._loop, args=(release,), name="memoryclaw-debounce", daemon=True
        )
        self._thread.start()

    def poke(self, task: str) -> None:
        """Note that ``task`` is wanted; it is released after the next quiet period."""
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._first = now
            self._pending.add(task)
            self._last = now
            self._cond.notify()

    def close(self) -> None:
        """Stop the thread; pending tasks are dropped (the daemon is going away)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _loop(self, release: Callable[[str], object]) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                while not self._closing:
                    due = min(self._last + self.quiet, self._first + self.longest)
                    remaining = due - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._closing:
                    return
                tasks, self._pending = sorted(self._pending), set()
            for task in tasks:
                release(task)
