"""How ``memoryclaw ingest`` scales with the file: turns per second and the peak memory of
the process (and its CPU time, which a busy machine bends less), for JSON-lines files of tiny
turns.

    .venv/bin/python bench/bench_ingest.py [--sizes 10000,100000] [--sessions 20]

Each size is a new vault and a new ``python -m memoryclaw ingest FILE --json`` process, whose
peak resident memory is read from the kernel's accounting of that child alone (``wait4``).
``--sizes 10000,100000,1000000`` adds the million-turn file (about a minute per 100k turns
on a small machine).  Prints one JSON line per size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
WORDS = "harbour valve lisbon falcon piano boiler invoice climbing passport quinn rota".split()


def write_turns(path: Path, turns: int, sessions: int) -> int:
    """A JSON-lines file of ``turns`` tiny turns over ``sessions`` sessions; its size."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(turns):
            moment = START + timedelta(seconds=6 * n)  # no session ever idles out
            record = {
                "session": f"agent:main:bench:direct:s{n % sessions}",
                "role": "user" if n % 2 == 0 else "assistant",
                "content": f"{WORDS[n % len(WORDS)]} {n}",
                "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            out.write(json.dumps(record) + "\n")
    return path.stat().st_size


def run(turns: int, sessions: int) -> dict[str, Any]:
    """Ingest a file of ``turns`` tiny turns into a new vault; the measurements."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        source = root / "turns.jsonl"
        size = write_turns(source, turns, sessions)
        command = [sys.executable, "-m", "memoryclaw", "--vault", str(root / "vault")]
        subprocess.run([*command, "init"], check=True, capture_output=True)
        started = time.perf_counter()
        with (root / "out").open("w+b") as out, (root / "err").open("w+b") as err:
            child = subprocess.Popen(
                [*command, "ingest", str(source), "--json"], stdout=out, stderr=err
            )
            _, status, usage = os.wait4(child.pid, 0)  # this child's own peak memory
            child.returncode = os.waitstatus_to_exitcode(status)
            took = time.perf_counter() - started
            if child.returncode:
                raise SystemExit(Path(err.name).read_text(errors="replace"))
            report = json.loads(Path(out.name).read_text())
    peak = usage.ru_maxrss / 1024
    return {
        "turns": report["turns"],
        "file_mb": round(size / 2**20, 1),
        "seconds": round(took, 1),
        "turns_per_s": round(report["turns"] / took),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),  # less bent by a busy machine
        "peak_rss_mb": round(peak),
    }


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark for each size and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args(argv)
    for size in (int(s) for s in args.sizes.split(",")):
        print(json.dumps(run(size, args.sessions)), flush=True)


if __name__ == "__main__":
    main()
