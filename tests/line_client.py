"""A ``memoryclaw`` process driven one JSON line at a time, in bounded memory and time."""

from __future__ import annotations

import json
import queue
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

GIB = 1024**3


def limit_memory() -> None:
    """In the child: at most 2 GiB of address space, so a runaway input fails the test."""
    resource.setrlimit(resource.RLIMIT_AS, (2 * GIB, 2 * GIB))


class LineClient:
    """Writes lines to the process and reads its replies, each within a timeout."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdin: IO[bytes] = proc.stdin
        self.replies: queue.Queue[bytes] = queue.Queue()
        stdout = proc.stdout
        threading.Thread(target=lambda: [self.replies.put(x) for x in stdout], daemon=True).start()

    def write(self, data: bytes) -> None:
        """Send raw bytes (lines end with ``\\n``)."""
        self.stdin.write(data)
        self.stdin.flush()

    def reply(self) -> dict[str, Any]:
        """The next reply line, parsed; fails the test after a minute of silence."""
        parsed: dict[str, Any] = json.loads(self.replies.get(timeout=60))
        return parsed

    def ask(self, line: bytes) -> dict[str, Any]:
        """Send one line and return the one reply it gets."""
        self.write(line + b"\n")
        return self.reply()

    def finish(self) -> str:
        """Close stdin; the process must exit 0 with no reply left over. Returns its stderr."""
        self.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        assert self.proc.stderr is not None
        assert self.replies.empty()
        return self.proc.stderr.read().decode("utf-8", "replace")


@contextmanager
def line_client(vault: Path, *args: str) -> Iterator[LineClient]:
    """``python -m memoryclaw --vault VAULT ARGS`` under :func:`limit_memory`, killed after."""
    with subprocess.Popen(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limit_memory,
    ) as proc:
        try:
            yield LineClient(proc)
        finally:
            proc.kill()  # a no-op once it has exited; bounds a failing test
