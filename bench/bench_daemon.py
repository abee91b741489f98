"""The daemon's hand-edit-to-searchable latency and its peak memory (SPEC 9: edit -> hit <= 1 s).

For each size, a hard-linked copy of a ``bench_search`` vault with its index gets a real
``memoryclaw daemon`` process.  Once the daemon's start-up sync is done, each round appends a
line with a new, unique word to a different episode (in place, as ``echo >>`` or an editor
that saves in place does; the file gets a new inode first, so the cached vault is untouched)
and polls ``Vault.search(word, refresh=False)`` on a separate connection every 5 ms: the time
from the write to the first hit is the latency.  The daemon's peak resident memory
(``VmHWM`` in ``/proc/<pid>/status``) is read at the end, and its current RSS after start-up.

    .venv/bin/python bench/bench_daemon.py [--sizes 10000,100000] [--edits 20] [--out bench/out]

The table is printed; raw numbers go to ``OUT/daemon.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
sys.path.insert(0, str(PROJECT_DIR))
sys.path.insert(0, str(BENCH_DIR))

from bench_search import (  # noqa: E402
    DEFAULT_OUT,
    DEFAULT_SEED,
    Vocabulary,
    ensure_vault,
    machine_info,
    subprocess_env,
)

from memoryclaw import Vault  # noqa: E402

TARGET_EDIT_MS = 1000.0
POLL_SECONDS = 0.005
EDIT_TIMEOUT = 30.0
START_TIMEOUT = 600.0


def spread(samples: Sequence[float]) -> dict[str, float]:
    """Median, min, max and count of ``samples``."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
    }


def linked_copy_with_index(source: Path, target: Path) -> Path:
    """A copy of a vault whose markdown files are hard links and whose index is a real copy."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, copy_function=os.link, ignore=shutil.ignore_patterns(".*"))
    shutil.copytree(source / ".memoryclaw", target / ".memoryclaw")
    return target


def proc_status(pid: int) -> dict[str, int]:
    """The memory lines of ``/proc/<pid>/status`` in KiB (VmRSS, VmHWM)."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def wait_for(text: str, log: Path, proc: subprocess.Popen[bytes], timeout: float) -> float:
    """Wait until ``text`` is in the daemon's log; the seconds it took."""
    started = time.perf_counter()
    while text not in log.read_text(encoding="utf-8", errors="replace"):
        if proc.poll() is not None:
            raise SystemExit(f"daemon exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"no {text!r} in the daemon log after {timeout:.0f} s")
        time.sleep(0.05)
    return time.perf_counter() - started


def edit_in_place(path: Path, word: str) -> None:
    """Append a line the way ``echo >>`` does, on a private inode (the source is hard-linked)."""
    text = path.read_bytes()
    path.unlink()
    with open(path, "wb") as handle:
        handle.write(text)
    with open(path, "ab") as handle:
        handle.write(f"- handwritten note {word}\n".encode())


def measure_size(
    source: Path, size: int, edits: int, work: Path, env: dict[str, str]
) -> dict[str, Any]:
    """Start a daemon on a copy of ``source``, time ``edits`` hand edits, read its memory."""
    root = linked_copy_with_index(source, work / f"daemon-vault-{size}")
    episodes = sorted((root / "episodes").rglob("*.md"))
    log = work / f"daemon-{size}.log"
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(root), "daemon"]
    with open(log, "wb") as stderr:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            wait_for("watching for edits", log, proc, START_TIMEOUT)
            # The start-up sync runs on the worker; a probe edit waits behind it.
            latencies: list[float] = []
            rss_after_start = proc_status(proc.pid)["VmRSS"]
            with Vault(root, env={}) as reader:
                for n in range(edits + 1):
                    word = f"zqxmarker{size}n{n}"
                    edit_in_place(episodes[(n * 7919) % len(episodes)], word)
                    wrote = time.perf_counter()
                    while not reader.search(word, refresh=False).results:
                        if time.perf_counter() - wrote > EDIT_TIMEOUT:
                            raise SystemExit(f"edit {n} not searchable after {EDIT_TIMEOUT} s")
                        time.sleep(POLL_SECONDS)
                    if n == 0:
                        ready_s = time.perf_counter() - started
                    else:
                        latencies.append((time.perf_counter() - wrote) * 1000)
            memory = proc_status(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    shutil.rmtree(root)
    return {
        "episodes": size,
        "edit_to_searchable_ms": spread(latencies),
        "samples_ms": latencies,
        "start_to_first_edit_searchable_s": ready_s,
        "rss_after_start_mib": rss_after_start / 1024,
        "rss_mib": memory["VmRSS"] / 1024,
        "peak_rss_mib": memory["VmHWM"] / 1024,
    }


def render(report: dict[str, Any]) -> str:
    """The markdown table of a report."""
    lines = [
        f"Command: `{report['command']}`",
        "",
        "| episodes | hand edit → searchable, median (min–max), n | target | peak RSS "
        "| RSS after start |",
        "|---:|---|---|---:|---:|",
    ]
    for row in report["results"]:
        e = row["edit_to_searchable_ms"]
        verdict = "pass" if e["median"] <= TARGET_EDIT_MS else "miss"
        lines.append(
            f"| {row['episodes']:,} | {e['median']:.0f} ms ({e['min']:.0f}–{e['max']:.0f}), "
            f"{e['n']} | ≤ 1 s: {verdict} | {row['peak_rss_mib']:.0f} MiB "
            f"| {row['rss_after_start_mib']:.0f} MiB |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every size, print the table and save the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="vault sizes in episodes")
    parser.add_argument("--edits", type=int, default=20, help="timed hand edits per size")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bench_search's seed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output and cache folder")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    script = os.path.relpath(__file__, PROJECT_DIR)
    python = os.path.relpath(sys.executable, PROJECT_DIR)
    command = shlex.join([python, script, *(sys.argv[1:] if argv is None else argv)])
    vocab = Vocabulary.build(args.seed)
    env = subprocess_env(out)
    report: dict[str, Any] = {"command": command, "machine": machine_info(), "results": []}
    for size in (int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()):
        print(f"[{size:,}] preparing vault ...", file=sys.stderr, flush=True)
        source, _ = ensure_vault(out, size, args.seed, vocab)
        with Vault(source, env={}) as vault:
            vault.reindex()  # the copy's index must be current, or the daemon starts by rebuilding
        print(f"[{size:,}] daemon ...", file=sys.stderr, flush=True)
        report["results"].append(measure_size(source, size, args.edits, out, env))
    table = render(report)
    print(table)
    (out / "daemon.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
