"""``memoryclaw daemon``: consolidation on a schedule and a watched, always-fresh index.

Wiring only; the work itself is :class:`memoryclaw.Vault`'s.  Threads and who does what:

- one *vault worker* thread (a single-thread executor) owns the :class:`Vault` and runs every
  consolidation, reindex and closed-log check, one at a time: SQLite connections belong to
  the thread that opened them, and serial work means jobs never overlap;
- APScheduler (``BackgroundScheduler``) fires the interval consolidation, the periodic
  closed-log check and the daily one-line summary of the recall metrics (at ``SUMMARY_AT``
  UTC, of the UTC day before); each job hands its work to the worker and waits for it, so
  with ``max_instances=1`` and ``coalesce`` late runs collapse into one instead of piling up;
- a watchdog observer sees vault files change; a debouncer waits for a quiet moment and then
  queues a reindex (episodes, semantic files) or a closed-log check (raw logs);
- the caller's thread waits for SIGTERM/SIGINT (or :meth:`Daemon.stop`) and shuts down.

One daemon per vault: ``.memoryclaw/daemon.lock`` is held with ``flock`` for the daemon's
life and names its pid.  The kernel drops the lock when the process ends, even on SIGKILL.
APScheduler and watchdog come with the ``daemon`` extra and are imported only when needed.
"""

from __future__ import annotations

import errno
import fcntl
import importlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from contextlib import suppress
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from ..api import Vault
from ..consolidate.pipeline import is_closed
from ..consolidate.report import ConsolidationReport
from ..errors import ConfigError, DaemonRunningError, MemoryclawError
from ..index.update import SyncReport
from ..recall.usage import keep_recalls
from ..vault.config import Settings
from ..vault.files import DAEMON_LOCK, STATE_DIR, ensure_dir, open_private
from ..vault.naming import plural
from ..vault.rawlogs import unprocessed_logs
from ..vault.timestamps import now_utc
from .watcher import CHECK, REINDEX, Debouncer, event_handler

if TYPE_CHECKING:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers.api import BaseObserver

LOCK_FILE = DAEMON_LOCK
CHECK_SECONDS = 30.0  # how often closed logs are counted against consolidation.afterLogs
DEBOUNCE_SECONDS = 0.2  # quiet period after the last file event before the index is synced
MAX_DEBOUNCE_SECONDS = 1.0  # a vault that never goes quiet is still synced this often
INSTALL_HINT = "pip install 'memoryclaw[daemon]'"

log = logging.getLogger("memoryclaw.daemon")

SUMMARY_AT = (0, 5)  # (hour, minute) UTC of the daily summary: the day before is complete

_CONSOLIDATE, _SUMMARY, _SYNC = "consolidate", "summary", "sync"


class Daemon:
    """Consolidate a vault on a schedule and keep its index in step with hand edits.

    ``with Daemon(path) as daemon: ...`` runs it in the background; :meth:`run_forever` runs it
    until SIGTERM/SIGINT; :meth:`run_once` does one consolidation and one reindex and returns.
    """

    def __init__(
        self,
        vault_path: str | Path,
        settings: Settings | None = None,
        *,
        env: Mapping[str, str] | None = None,
        check_seconds: float = CHECK_SECONDS,
        debounce_seconds: float = DEBOUNCE_SECONDS,
    ) -> None:
        # The Vault opens its index lazily, so the connection is made by whichever thread
        # first uses it: the worker when running, the caller's thread for run_once.
        self.vault = Vault(vault_path, settings, env=env)
        self.root = self.vault.root
        self.settings = self.vault.settings
        self.check_seconds = check_seconds
        self.debounce_seconds = debounce_seconds
        self._lock_fd: int | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._queued: dict[str, Future[None]] = {}
        self._queue_lock = threading.Lock()
        self._scheduler: Any = None  # apscheduler's BackgroundScheduler (untyped package)
        self._observer: BaseObserver | None = None
        self._debouncer: Debouncer | None = None
        self._state_lock = threading.Lock()
        self._running = False
        self._accepting = False  # whether new work may be queued on the worker
        self._wake_w = -1  # write end of run_forever's self-pipe, while it runs
        self._wake_lock = threading.Lock()
        self._skipped: set[str] = set()  # unusable files already reported
        # Vault-relative files the watcher saw change since the last reindex began; None when
        # only a full sync will do (at start-up, or after a folder changed).
        self._dirty: set[str] | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Take the vault's daemon lock and start the worker, the scheduler and the watcher."""
        background_scheduler, observer_class, handler_base = _daemon_extra()
        with self._state_lock:
            if self._running:
                return
            self._take_lock()
            try:
                self._dirty = None  # the start-up sync walks the whole vault
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="memoryclaw-vault")
                self._accepting = True
                self._debouncer = Debouncer(
                    self.debounce_seconds, max(MAX_DEBOUNCE_SECONDS, self.debounce_seconds)
                )
                self._debouncer.start(self._enqueue)
                # First sync the index and look for logs that waited while no daemon ran.
                self._enqueue(REINDEX)
                self._enqueue(CHECK)
                self._scheduler = background_scheduler(daemon=True)
                interval = self.settings.consolidation.interval
                every: list[tuple[str, dict[str, float]]] = [
                    (_CONSOLIDATE, {"minutes": interval}),
                    (CHECK, {"seconds": self.check_seconds}),
                ]
                if self.settings.sync.interval > 0:
                    every.append((_SYNC, {"minutes": self.settings.sync.interval}))
                for task, trigger in every:
                    self._scheduler.add_job(
                        self._scheduled,
                        "interval",
                        args=[task],
                        id=task,
                        max_instances=1,
                        coalesce=True,
                        **trigger,
                    )
                hour, minute = SUMMARY_AT
                self._scheduler.add_job(
                    self._scheduled,
                    "cron",
                    args=[_SUMMARY],
                    id=_SUMMARY,
                    hour=hour,
                    minute=minute,
                    timezone=timezone.utc,
                    max_instances=1,
                    coalesce=True,
                )
                self._scheduler.start()
                self._observer = observer_class()
                handler = event_handler(handler_base, self.root, self._changed)
                self._observer.schedule(handler, str(self.root), recursive=True)
                self._observer.start()
            except BaseException:
                self._teardown()
                raise
            self._running = True
        log.info(
            "started on %s (pid %d): consolidation every %d min or at %s waiting; "
            "watching for edits",
            self.root,
            os.getpid(),
            interval,
            plural(self.settings.consolidation.after_logs, "closed log"),
        )

    def stop(self) -> None:
        """Stop watching and scheduling, let running work finish, close the vault, unlock."""
        with self._state_lock:
            if not self._running:
                return
            self._running = False
            self._teardown()
        log.info("stopped")

    def run_forever(self) -> None:
        """Start (if needed) and run until SIGTERM or SIGINT (or :meth:`stop`), then stop."""
        # A self-pipe to sleep on: writing one byte is all a signal handler can do safely
        # (setting an Event could deadlock on the lock the interrupted main thread holds).
        read_end, write_end = os.pipe()
        with self._wake_lock:
            self._wake_w = write_end
        previous: dict[signal.Signals, Any] = {}
        try:
            if threading.current_thread() is threading.main_thread():
                for signum in (signal.SIGTERM, signal.SIGINT):
                    previous[signum] = signal.signal(signum, self._on_signal)
            self.start()
            if self._running:
                os.read(read_end, 1)  # a signal's byte, or stop()'s from another thread
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            with self._wake_lock:
                self._wake_w = -1
            os.close(write_end)
            os.close(read_end)
            self.stop()

    def run_once(self) -> tuple[ConsolidationReport, SyncReport]:
        """Under the daemon lock: consolidate the closed logs, then reindex; both reports."""
        with self._state_lock:
            self._take_lock()  # a running daemon, even this one, holds it: refused
            try:
                report = self.vault.consolidate()
                self._archive()
                synced = self.vault.reindex()
            finally:
                self.vault.close()
                self._release_lock()
        return report, synced

    def __enter__(self) -> Daemon:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # No lock here: the pipe stays open for as long as this handler is installed.
        log.info("received %s", signal.Signals(signum).name)
        os.write(self._wake_w, b"x")

    def _wake(self) -> None:
        """Let a run_forever that waits in another thread return."""
        with self._wake_lock:
            if self._wake_w >= 0:
                os.write(self._wake_w, b"x")

    def _teardown(self) -> None:
        """Undo whatever :meth:`start` got done, in reverse order; safe on a partial start."""
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():
                self._observer.join()
            self._observer = None
        if self._debouncer is not None:
            self._debouncer.close()
            self._debouncer = None
        with self._queue_lock:
            self._accepting = False
            for future in self._queued.values():
                future.cancel()  # queued, not started: dropping it loses nothing
            self._queued.clear()
        if self._scheduler is not None:
            if self._scheduler.running:
                self._scheduler.shutdown(wait=True)  # a job waits for its work to finish
            self._scheduler = None
        if self._worker is not None:
            # A running consolidation finishes; then the vault closes on its own thread.
            self._worker.submit(self.vault.close).result()
            self._worker.shutdown(wait=True)
            self._worker = None
        self._wake()
        self._release_lock()

    # ----------------------------------------------------------------- the lock

    def _take_lock(self) -> None:
        """Hold ``.memoryclaw/daemon.lock`` (with our pid in it) or raise DaemonRunningError."""
        ensure_dir(self.root / STATE_DIR)
        path = self.root / STATE_DIR / LOCK_FILE
        fd = open_private(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise DaemonRunningError(path, int(holder) if holder.isdigit() else None) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._lock_fd = fd

    def _release_lock(self) -> None:
        # The file stays: removing it would let a daemon starting now lock a different inode
        # than one that opened the old file a moment earlier.
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # ----------------------------------------------------------------- the work

    def _enqueue(self, task: str) -> Future[None] | None:
        """Queue ``task`` on the vault worker unless it is already waiting there."""
        with self._queue_lock:
            waiting = self._queued.get(task)
            if waiting is not None:
                return waiting
            if not self._accepting or self._worker is None:
                return None  # stopping
            future = self._worker.submit(self._run, task)
            self._queued[task] = future
            return future

    def _changed(self, task: str, rel: str | None) -> None:
        """A watched change: remember the file (None: a folder, so sync everything), then
        let the debouncer release ``task`` once things are quiet."""
        if task == REINDEX:
            with self._queue_lock:
                if rel is None:
                    self._dirty = None
                elif self._dirty is not None:
                    self._dirty.add(rel)
        if self._debouncer is not None:
            self._debouncer.poke(task)

    def _scheduled(self, task: str) -> None:
        """An APScheduler job: hand the work to the vault worker and wait for it."""
        future = self._enqueue(task)
        if future is not None:
            with suppress(CancelledError):  # dropped at shutdown
                future.result()

    def _run(self, task: str) -> None:
        """Run one task on the vault worker; failures are logged, the daemon lives on."""
        with self._queue_lock:
            self._queued.pop(task, None)  # from now on a new request queues a new run
        try:
            if task == REINDEX:
                self._reindex()
            elif task == CHECK:
                self._check()
            elif task == _SUMMARY:
                self.daily_summary()
                self._optimize()
            elif task == _SYNC:
                self._sync_remote("scheduled")
            else:
                self._consolidate("scheduled")
        except MemoryclawError as exc:
            log.error("%s failed: %s", task, exc)
        except Exception:
            log.exception("%s failed", task)

    def _consolidate(self, why: str) -> None:
        report = self.vault.consolidate()
        log.info(
            "consolidated (%s): %s -> %s, %s added (%d refreshed), "
            "%d pending, %s, %s suggested, %s deleted%s in %.2fs",
            why,
            plural(report.logs_read, "log"),
            plural(len(report.episodes), "episode"),
            plural(report.facts_added, "fact"),
            report.facts_refreshed,
            report.pending,
            plural(report.conflicts, "conflict"),
            plural(len(report.skills_suggested), "skill"),
            plural(len(report.logs_deleted), "old log"),
            f", committed {report.commit[:10]}" if report.commit else "",
            report.took_ms / 1000,
        )
        self._archive()
        if self.settings.sync.auto:
            self._sync_remote("after consolidation")

    def _sync_remote(self, why: str) -> None:
        """Sync with the git remote; offline, it fails in the log and the next one catches up."""
        report = self.vault.sync_remote()
        for team in report.shared:
            if team["error"]:
                log.warning("team vault %s not pulled: %s", team["vault"], team["error"])
            else:
                pulled = plural(team["pulled"], "commit")
                log.info("team vault %s: pulled %s", team["vault"], pulled)
        if not report.remote:
            return  # not a git repository: only the team vaults were pulled
        log.info(
            "synced with %s (%s): pulled %d, pushed %s, %s changed, %s resolved in %.2fs",
            report.remote,
            why,
            report.pulled,
            plural(report.pushed, "commit"),
            plural(len(report.files_changed), "file"),
            plural(report.conflicts_resolved, "conflict"),
            report.duration_ms / 1000,
        )
        for refusal in report.refused:
            log.warning("refused from %s: %s: %s", report.remote, refusal.path, refusal.reason)
        if report.config_changed:
            log.warning("memoryclaw.yaml changed by the sync: %s", ", ".join(report.config_changed))
        for repair in report.repaired:
            log.warning("repaired %s: %s", repair.path, repair.reason)
        if report.config_held:
            keys = ", ".join(held["key"] for held in report.config_held)
            log.warning("memoryclaw.yaml keys held (memoryclaw sync --accept-config): %s", keys)

    def _archive(self) -> None:
        """After consolidation, archive unused episodes when ``archiveAfterDays`` is on (the
        run keeps a copy of the recall times), or else just keep that copy."""
        days = self.settings.consolidation.archive_after_days
        if days <= 0:
            keep_recalls(self.vault.root, self.vault.index)
            return
        report = self.vault.archive()
        if report.moved or report.settled or report.conflicts:
            log.info(
                "archived %s unused for %s%s%s in %.2fs",
                plural(len(report.moved), "episode"),
                plural(days, "day"),
                f", {len(report.conflicts)} left in place" if report.conflicts else "",
                f", committed {report.commit[:10]}" if report.commit else "",
                report.took_ms / 1000,
            )

    def daily_summary(self, now: datetime | None = None) -> str:
        """Log one line of the recall metrics of the UTC day before ``now`` (the daily job;
        on the vault worker when the daemon runs), and return it."""
        yesterday = (now or now_utc()) - timedelta(days=1)
        line = "recall metrics " + self.vault.metrics(days=1, now=yesterday).summary()
        log.info("%s", line)
        return line

    def _optimize(self) -> None:
        """Once a day: merge the full-text index's segments, which every sync adds to."""
        started = time.perf_counter()
        with self.vault.index.transaction():
            self.vault.index.optimize()
        log.info("full-text index merged in %.2fs", time.perf_counter() - started)

    def _check(self) -> None:
        waiting = _closed_logs(self.vault)
        wanted = self.settings.consolidation.after_logs
        if waiting >= wanted:
            self._consolidate(f"{plural(waiting, 'closed log')} waiting, afterLogs {wanted}")

    def _reindex(self) -> None:
        # The files the watcher named, or a full stat sync; not refresh(): its cheap staleness
        # test can miss in-place edits in a large vault, and a watched edit is exactly that.
        with self._queue_lock:
            paths, self._dirty = self._dirty, set()
        if paths is not None and not paths:
            return  # an earlier run already took these changes
        # A full sync lists every unusable file; a targeted one only those it looked at.
        report = self.vault.reindex() if paths is None else self.vault.reindex_paths(paths)
        skipped = {s.path: s for s in report.skipped}
        for path in sorted(skipped.keys() - self._skipped):
            where = f":{skipped[path].line}" if skipped[path].line else ""
            log.warning("skipped %s%s: %s", path, where, skipped[path].reason)
        still = set() if paths is None else self._skipped - paths
        self._skipped = still | skipped.keys()
        if report.changed_anything:
            log.info(
                "reindexed: %d added, %d changed, %d deleted, %d moved, %d skipped in %.0f ms",
                len(report.added),
                len(report.changed),
                len(report.deleted),
                len(report.moved),
                len(report.skipped),
                report.took_ms,
            )


def _closed_logs(vault: Vault) -> int:
    """How many unprocessed raw logs are closed (session ended, or idle long enough)."""
    idle = timedelta(minutes=vault.settings.consolidation.session_idle_minutes)
    now = now_utc()
    return sum(is_closed(raw, idle, now) for raw in unprocessed_logs(vault.root))


def _daemon_extra() -> tuple[Any, Callable[[], BaseObserver], type[FileSystemEventHandler]]:
    """APScheduler's BackgroundScheduler, watchdog's Observer and handler base, or ConfigError."""
    try:
        # The top-level packages first, so a missing one is named before any submodule.
        importlib.import_module("apscheduler")
        importlib.import_module("watchdog")
        from apscheduler.schedulers.background import BackgroundScheduler
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError as exc:
        missing = exc.name or "apscheduler or watchdog"
        raise ConfigError(
            None, "daemon", f"needs {missing}, which is not installed ({INSTALL_HINT})"
        ) from None
    return BackgroundScheduler, Observer, FileSystemEventHandler
