"""Running git on a vault's repository when the command talks to a remote.

A remote that never answers must not hold a lock for ever: :func:`network_git` runs one
command for at most a given time, with no prompt for a user name or password, then kills it
and every helper it started (ssh, upload-pack).  Sync, a history purge's push and a team
vault's pull all use it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from contextlib import suppress
from pathlib import Path
from subprocess import CompletedProcess

from ..errors import ExternalToolError
from ..vault.files import owner_only_umask


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
        errors="surrogateescape",  # file names that are not UTF-8, as history._git reads them
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
