"""Running git on a vault's repository.

:func:`run_git` gives git's output as text and waits out another git's index lock;
:func:`run_git_bytes` gives it as bytes (paths need not be UTF-8) and feeds git ``data``.
A command that talks to a remote must not hold a lock for ever when the remote never
answers: :func:`network_git` runs it for at most a given time, with no prompt for a user name
or password, then kills it and every helper it started (ssh, upload-pack).  Sync, a history
purge's push and a team vault's pull all use it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from contextlib import suppress
from pathlib import Path
from subprocess import CompletedProcess

from ..errors import ExternalToolError
from ..vault.files import owner_only_umask


def run_git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git on the vault's repository (paths taken literally); its output as text, file
    names that are not UTF-8 as surrogate escapes.  With ``check``, a failure is an
    :class:`ExternalToolError` naming git's last word; while another git holds the index
    lock, it is tried again."""
    git = shutil.which("git")
    if git is None:
        raise ExternalToolError("git", "not found on PATH")
    for _ in range(_LOCK_TRIES):
        done = subprocess.run(
            [git, "--literal-pathspecs", "-C", str(root), *args],
            capture_output=True,
            # a file name that is not UTF-8 comes back as surrogate escapes, as os.listdir
            # gives it, and goes back to git as the same bytes
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
            preexec_fn=owner_only_umask,
        )
        # another git (one a killed memoryclaw started) is finishing: it ends in a moment
        if done.returncode == 0 or "index.lock" not in done.stderr:
            break
        time.sleep(_LOCK_PAUSE)
    if check and done.returncode != 0:
        reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise ExternalToolError(
            f"git {args[0]}", reason[-1] if reason else "failed", returncode=done.returncode
        )
    return done


_LOCK_TRIES = 50
_LOCK_PAUSE = 0.2


def run_git_bytes(
    root: Path, *args: str, data: bytes | None = None, env: dict[str, str] | None = None
) -> bytes:
    """Run git on the vault's repository; its stdout as bytes (paths need not be UTF-8)."""
    git = shutil.which("git")
    if git is None:
        raise ExternalToolError("git", "not found on PATH")
    done = subprocess.run(
        [git, "--literal-pathspecs", "-C", str(root), *args],
        input=data,
        capture_output=True,
        check=False,
        env=env,
        preexec_fn=owner_only_umask,
    )
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise ExternalToolError(f"git {args[0]}", said[-1] if said else "failed")
    return done.stdout


def network_git(root: Path, seconds: float, *args: str) -> CompletedProcess[str] | None:
    """Run a git command that uses the network for at most ``seconds``; None when it ran out
    of time, after it and every process it started were killed."""
    git = shutil.which("git")
    if git is None:
        raise ExternalToolError("git", "not found on PATH")
    # a prompt for a user name or password would wait for an answer no one gives
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    process = subprocess.Popen(
        [git, "-C", str(root), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="surrogateescape",  # file names that are not UTF-8, as run_git reads them
        env=env,
        preexec_fn=owner_only_umask,
    )
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        _kill_tree(process.pid)
        try:
            process.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a helper it started that /proc did not show
            process.kill()
            process.wait()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        return None
    return CompletedProcess(process.args, process.returncode, out, err)


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants (git runs helpers: ssh, upload-pack)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    doomed, todo = [], [pid]
    while todo:
        current = todo.pop()
        doomed.append(current)
        todo.extend(children.get(current, []))
    for victim in reversed(doomed):
        with suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
