"""``memoryclaw daemon`` (SPEC 5): real daemon processes, real file events, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any

import pytest
from click.testing import CliRunner

from memoryclaw import ConfigError, Vault
from memoryclaw.cli import cli
from memoryclaw.errors import DaemonRunningError
from memoryclaw.serve.daemon import Daemon
from memoryclaw.serve.watcher import _task_for
from memoryclaw.vault.files import atomic_write
from tests.cli.test_cli import clean_env, run
from tests.share.test_sync import _first_device, _git, _remote

HACKNEY = "episodes/2025-04-15_20-18-29_hackney-10k.md"
STARTED = "memoryclaw daemon: started"
REINDEXED = "memoryclaw daemon: reindexed"
CONSOLIDATED = "memoryclaw daemon: consolidated"
EXTRA_MODULES = (
    "apscheduler",
    "apscheduler.schedulers",
    "apscheduler.schedulers.background",
    "watchdog",
    "watchdog.events",
    "watchdog.observers",
)


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


class DaemonProcess:
    """A ``memoryclaw daemon`` subprocess whose stderr goes to a file the test can poll."""

    def __init__(self, vault: Path, log_path: Path) -> None:
        self.log_path = log_path
        self._stdout: IO[bytes] = open(log_path.with_suffix(".out"), "wb")  # noqa: SIM115
        self._stderr: IO[bytes] = open(log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            env=clean_env(),
        )

    @property
    def log(self) -> str:
        """Everything the daemon logged so far."""
        return self.log_path.read_text(encoding="utf-8")

    def wait_for_log(self, text: str, timeout: float = 10.0, count: int = 1) -> str:
        """Wait until ``text`` appears ``count`` times in the log; the log."""

        def seen() -> str | None:
            if self.proc.poll() is not None:
                pytest.fail(f"daemon exited with {self.proc.returncode}:\n{self.log}")
            log = self.log
            return log if log.count(text) >= count else None

        result: str = wait_until(seen, timeout, repr(text))
        return result

    def signal(self, signum: int, timeout: float = 10.0) -> int:
        """Send ``signum`` and wait for the exit; the exit code."""
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        """Stop the process if it still runs and close its files."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._stdout.close()
        self._stderr.close()


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[Callable[[Path], DaemonProcess]]:
    """Start daemons on a vault; every one is stopped at the end of the test."""
    started: list[DaemonProcess] = []

    def start(vault: Path) -> DaemonProcess:
        daemon = DaemonProcess(vault, tmp_path / f"daemon-{len(started)}.log")
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.close()


def set_after_logs(vault: Path, count: int) -> None:
    """Make the daemon consolidate as soon as ``count`` closed logs wait."""
    config = vault / "memoryclaw.yaml"
    text = config.read_text(encoding="utf-8").replace(
        "consolidation:\n", f"consolidation:\n  afterLogs: {count}\n"
    )
    config.write_text(text, encoding="utf-8")


def indexed_paths(vault: Path, query: str) -> list[str]:
    """Episode paths the index alone finds for ``query`` (no resync by the searcher)."""
    with Vault(vault, env={}) as opened:
        return [r.path for r in opened.search(query, refresh=False).results]


def test_hand_edit_is_searchable_within_a_second(
    vault_dir: Path, start_daemon: Callable[[Path], DaemonProcess]
) -> None:
    daemon = start_daemon(vault_dir)
    daemon.wait_for_log(REINDEXED)  # the start-up sync filled the index

    # An in-place edit, as an editor that rewrites the file does it.
    with open(vault_dir / HACKNEY, "a", encoding="utf-8") as handle:
        handle.write("- Zanzibarquux energy gels at the 5 km mark\n")
    edited = time.monotonic()
    wait_until(lambda: HACKNEY in indexed_paths(vault_dir, "zanzibarquux"), 2.0, "the edit")
    latency = time.monotonic() - edited
    print(f"hand edit -> searchable through the daemon's index: {latency * 1000:.0f} ms")
    assert latency < 1.0

    # A new file written the atomic way: a dot-temp file renamed into place.
    new = "episodes/2025-10-30_08-00-00_quokka-visit.md"
    atomic_write(
        vault_dir / new,
        "---\nid: ep-quokka\ntimestamp: 2025-10-30T08:00:00Z\n"
        'summary: "Planned a quokka visit on Rottnest Island."\ntags: [travel]\n---\nDetails.\n',
    )
    wait_until(lambda: new in indexed_paths(vault_dir, "quokka"), 2.0, "the new episode")

    found = run_json_search(vault_dir, "zanzibarquux")
    assert [r["path"] for r in found["results"]] == [HACKNEY]
    assert daemon.wait_for_log("1 changed")
    assert daemon.wait_for_log("1 added")
    assert CONSOLIDATED not in daemon.log  # 3 closed logs wait, below afterLogs (10)


def run_json_search(vault: Path, query: str) -> Any:
    """``memoryclaw search QUERY --json`` as a separate process."""
    proc = run(vault, "search", query, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_closed_logs_are_consolidated_once_after_logs_wait(
    vault_dir: Path, start_daemon: Callable[[Path], DaemonProcess]
) -> None:
    set_after_logs(vault_dir, 1)
    daemon = start_daemon(vault_dir)
    # The sample vault's logs have been silent for longer than sessionIdleMinutes: closed.
    log = daemon.wait_for_log(CONSOLIDATED)
    assert "3 logs ->" in log
    assert [p.name for p in (vault_dir / "logs").glob("*.md")] == []

    session = "agent:main:cli:daemon-test"
    for role, text in (
        ("user", "Book the Wombleton pottery class for Saturday morning."),
        ("assistant", "Booked the Wombleton pottery class, Saturday 10:00."),
    ):
        proc = run(vault_dir, "log", "--session", session, "--role", role, text)
        assert proc.returncode == 0, proc.stderr
    open_log = [p.name for p in (vault_dir / "logs").glob("*.md")]
    assert len(open_log) == 1
    time.sleep(0.5)  # a quiet moment: an open log must not be consolidated
    assert daemon.log.count(CONSOLIDATED) == 1

    with Vault(vault_dir, env={}) as vault:
        vault.end_session(session)
    log = daemon.wait_for_log(CONSOLIDATED, count=2, timeout=5)
    runs = [line for line in log.splitlines() if CONSOLIDATED in line]
    assert "1 closed log waiting, afterLogs 1" in runs[1] and "1 log ->" in runs[1]
    assert (vault_dir / "logs" / "processed" / open_log[0]).exists()
    assert not (vault_dir / "logs" / open_log[0]).exists()
    assert indexed_paths(vault_dir, "wombleton pottery")

    # Killed outright, the daemon still leaves no lock behind (and no work undone).
    assert daemon.signal(signal.SIGKILL) == -signal.SIGKILL
    doc = json.loads(run(vault_dir, "daemon", "--once", "--json").stdout)
    assert doc["consolidation"]["logs_read"] == 0


@pytest.mark.parametrize("sessions", [1, 3], ids=["one", "three"])
def test_once_says_which_logs_it_left_open_and_why(vault_dir: Path, sessions: int) -> None:
    for number in range(sessions):  # sessions going on now: nothing closes them yet
        logged = run(vault_dir, "log", "--session", f"s{number}", "--role", "user", "hello")
        assert logged.returncode == 0, logged.stderr
    (vault_dir / "memoryclaw.yaml").write_text("consolidation:\n  sessionIdleMinutes: 45\n")
    proc = run(vault_dir, "daemon", "--once")
    assert proc.returncode == 0, proc.stderr
    logs = "1 log" if sessions == 1 else f"{sessions} logs"
    assert f"{logs} left open: sessions active in the last 45 minutes" in proc.stdout
    doc = json.loads(run(vault_dir, "daemon", "--once", "--json").stdout)
    left = doc["consolidation"]["left_open"]
    assert len(left) == sessions and all(path.startswith("logs/") for path in left)
    assert all((vault_dir / path).is_file() for path in left)


def test_one_daemon_per_vault_and_clean_stop(
    vault_dir: Path, start_daemon: Callable[[Path], DaemonProcess]
) -> None:
    first = start_daemon(vault_dir)
    first.wait_for_log(STARTED)
    assert (vault_dir / ".memoryclaw" / "daemon.lock").read_text().strip() == str(first.proc.pid)

    second = run(vault_dir, "daemon")
    assert second.returncode == 1
    assert second.stdout == ""
    lines = second.stderr.splitlines()
    assert len(lines) == 1 and f"pid {first.proc.pid}" in lines[0], second.stderr

    begun = time.monotonic()
    assert first.signal(signal.SIGTERM) == 0
    assert time.monotonic() - begun < 5
    assert "received SIGTERM" in first.log and first.log.rstrip().endswith("stopped")

    # The lock went with it: a new daemon starts, and SIGINT stops it just as cleanly.
    again = start_daemon(vault_dir)
    again.wait_for_log(STARTED)
    assert again.signal(signal.SIGINT) == 0
    assert "Traceback" not in again.log


def test_once_consolidates_reindexes_and_exits(vault_dir: Path) -> None:
    proc = run(vault_dir, "daemon", "--once")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("3 logs -> ") and " episodes, " in lines[0]
    assert any(line.startswith("  + episodes/") for line in lines)
    assert lines[-1].startswith("reindexed: ")
    assert list((vault_dir / "logs").glob("*.md")) == []

    doc = json.loads(run(vault_dir, "daemon", "--once", "--json").stdout)
    assert set(doc) == {"consolidation", "reindex"}
    assert doc["consolidation"]["logs_read"] == 0  # nothing left to do: idempotent
    assert doc["reindex"]["added"] == 0

    usage = CliRunner().invoke(cli, ["--vault", str(vault_dir), "daemon", "--json"])
    assert usage.exit_code == 2 and "--once" in usage.output


def test_missing_extra_gives_the_install_command(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in EXTRA_MODULES:
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now fails
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "daemon"])
    assert result.exit_code == 1
    assert "pip install 'memoryclaw[daemon]'" in result.output
    assert "apscheduler" in result.output
    with pytest.raises(ConfigError, match=r"memoryclaw\[daemon\]"):
        Daemon(vault_dir, env={}).start()
    # Nothing was left locked, and --once needs neither package.
    report, synced = Daemon(vault_dir, env={}).run_once()
    assert report.logs_read == 3 and synced.unchanged > 0


def test_library_daemon_start_stop(vault_dir: Path) -> None:
    with Daemon(vault_dir, env={}, debounce_seconds=0.05) as daemon:
        with pytest.raises(DaemonRunningError) as refused:
            Daemon(vault_dir, env={}).start()
        assert refused.value.pid == os.getpid()
        with pytest.raises(DaemonRunningError):
            Daemon(vault_dir, env={}).run_once()  # --once takes the same lock
        atomic_write(vault_dir / HACKNEY, (vault_dir / HACKNEY).read_text() + "- Xylofoo\n")
        wait_until(lambda: HACKNEY in indexed_paths(vault_dir, "xylofoo"), 2.0, "the edit")
        daemon.stop()
        daemon.stop()  # idempotent
    # The lock was released; the 3 closed logs were left alone (below afterLogs, 10) till now.
    report, _ = Daemon(vault_dir, env={}).run_once()
    assert report.logs_read == 3


@pytest.mark.parametrize(
    ("rel", "task"),
    [
        ("episodes/a.md", "reindex"),
        ("semantic/contacts.md", "reindex"),
        ("logs/2025-01-01_cli_raw.md", "check"),
        ("episodes/.a.md.x1y2.tmp", None),
        (".memoryclaw/index.db-wal", None),
        (".memoryclaw/daemon.lock", None),
        (".git/index", None),
    ],
)
def test_which_changes_the_watcher_acts_on(tmp_path: Path, rel: str, task: str | None) -> None:
    assert _task_for(tmp_path, str(tmp_path / rel)) == task
    assert _task_for(tmp_path, "/elsewhere/episodes/a.md") is None


def test_watched_edits_sync_only_the_files_named(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file edit re-reads that file alone; a new folder makes the daemon walk the vault."""
    calls: list[Any] = []
    full, targeted = Vault.reindex, Vault.reindex_paths

    def spy_full(self: Vault, **kwargs: Any) -> Any:
        report = full(self, **kwargs)
        calls.append("full")  # once done, so an edit made after it is not in it
        return report

    def spy_paths(self: Vault, paths: Any) -> Any:
        report = targeted(self, paths)
        calls.append(sorted(paths))
        return report

    monkeypatch.setattr(Vault, "reindex", spy_full)
    monkeypatch.setattr(Vault, "reindex_paths", spy_paths)
    with Daemon(vault_dir, env={}, debounce_seconds=0.05):
        wait_until(lambda: calls == ["full"], 5.0, "the start-up sync")
        with open(vault_dir / HACKNEY, "a", encoding="utf-8") as handle:
            handle.write("- Xylofoo\n")
        wait_until(lambda: len(calls) == 2, 5.0, "the edit's sync")
        assert calls == ["full", [HACKNEY]]
        assert HACKNEY in indexed_paths(vault_dir, "xylofoo")
        nested = vault_dir / "episodes" / "2026"
        nested.mkdir()
        atomic_write(nested / "deep.md", "---\nsummary: a wombat parade\ntags: [demo]\n---\n")
        wait_until(lambda: indexed_paths(vault_dir, "wombat"), 5.0, "the new folder's file")
        assert "full" in calls[2:]


def test_the_daily_summary_is_one_line_of_the_day_before(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now = datetime(2025, 11, 2, 0, 5, tzinfo=timezone.utc)
    with Vault(vault_dir, env={}) as vault:
        recalled = [vault.retrieve(q, now=now - timedelta(hours=h)) for q, h in RECALLS]
        vault.retrieve("thanks!", now=now - timedelta(hours=3))
    daemon = Daemon(vault_dir, env={})
    try:
        with caplog.at_level("INFO", logger="memoryclaw.daemon"):
            line = daemon.daily_summary(now=now)
    finally:
        daemon.vault.close()
    assert [r.getMessage() for r in caplog.records] == [line] and "\n" not in line
    yesterday = [p for p, (_, h) in zip(recalled, RECALLS) if h > 5 / 60]
    mean = sum(p.tokens for p in yesterday) / len(yesterday)
    assert line.startswith("recall metrics 2025-11-01: ")
    assert f"{len(yesterday)} recalls, {mean:,.0f} tokens mean" in line
    assert f"(max {max(p.tokens for p in yesterday):,})" in line
    assert "1 trivial skipped" in line


RECALLS = [("what did I email John about", 2), ("dentist", 20), ("flight to Lisbon", 0.01)]


def test_the_running_daemon_schedules_the_daily_summary(vault_dir: Path) -> None:
    with Daemon(vault_dir, env={}, debounce_seconds=0.05) as daemon:
        job = daemon._scheduler.get_job("summary")
        assert job is not None
        when = job.next_run_time.astimezone(timezone.utc)
        assert (when.hour, when.minute) == (0, 5)


def test_daemon_syncs_on_its_timer_and_after_consolidation(tmp_path: Path) -> None:
    bare = _remote(tmp_path)
    root = _first_device(tmp_path, bare)
    (root / "memoryclaw.yaml").write_text("sync:\n  interval: 15\n  auto: true\n")
    with Vault(root, env={}) as vault:
        vault.log_turn("s", "user", "Kofi moved to Accra and loves the harbour market.")
        vault.end_session("s")
    with Daemon(root, env={}) as daemon:
        job = daemon._scheduler.get_job("sync")
        assert job is not None and job.trigger.interval.total_seconds() == 15 * 60
        daemon._scheduled("consolidate")
    pushed = _git(bare, "ls-tree", "-r", "--name-only", "main")
    assert "episodes/" in pushed and "logs/processed/" in pushed


def _consolidation_check(vault_dir: Path) -> dict[str, str]:
    with Vault(vault_dir, env={}) as vault:
        (check,) = [c for c in vault.doctor() if c["check"] == "consolidation"]
    return check


def test_doctor_says_when_closed_logs_wait_and_no_daemon_runs(vault_dir: Path) -> None:
    """Without a daemon nothing consolidates what an agent logs: doctor says so, and names
    the command, while logs wait; not while a daemon holds the vault's lock."""
    waiting = _consolidation_check(vault_dir)
    assert waiting["status"] == "warn", waiting
    assert waiting["detail"].startswith("3 closed logs waiting and no daemon running")
    assert "`memoryclaw daemon`" in waiting["detail"]
    with Daemon(vault_dir, env={}, debounce_seconds=0.05):
        running = _consolidation_check(vault_dir)
    assert running["status"] == "ok" and running["detail"].startswith("daemon running"), running
    Daemon(vault_dir, env={}).run_once()
    done = _consolidation_check(vault_dir)
    assert done["status"] == "info" and "no daemon running" in done["detail"], done
