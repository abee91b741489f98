"""Run every benchmark and write ``bench/REPORT.md`` with its plots: ``python -m bench``.

Each benchmark script runs as its own process, several times; every run's raw JSON is kept
under ``bench/out/report/<step>/run-<n>.json`` and its output in ``run-<n>.log``, and
``bench/report.py`` turns them into the report (medians over runs with their min–max) and
the PNG plots in ``bench/plots/``.  ``--quick`` measures smaller vaults with fewer runs and
finishes in a few minutes; the full run measures 1k, 10k and 100k episodes and takes an hour
or more on a 2-core machine (most of it generating and indexing the 100k vault).

    bench/run [--quick] [--only STEP,...] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
OUT = BENCH_DIR / "out"
RUNS_DIR = OUT / "report"
sys.path.insert(0, str(BENCH_DIR))

import report  # noqa: E402


@dataclass(frozen=True)
class Step:
    """One benchmark script, its arguments per mode, the JSON it writes and how often it runs."""

    name: str
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    output: str
    runs_full: int = 3
    runs_quick: int = 2


STEPS = (
    Step(
        "turn",
        "bench_turn.py",
        ("--sizes", "10000,100000"),
        (
            "--sizes",
            "1000",
            "--recalls",
            "0,1000",
            "--rounds",
            "40",
            "--fresh-runs",
            "5",
            "--log-runs",
            "3",
            "--open-logs",
            "0,100",
        ),
        "turn.json",
        runs_full=1,
        runs_quick=1,
    ),
    Step("retrieve", "bench_retrieve.py", (), (), "retrieve.json", runs_full=3, runs_quick=1),
    Step(
        "search",
        "bench_search.py",
        ("--sizes", "1000,10000,100000", "--queries", "200", "--repeats", "1"),
        ("--sizes", "1000,10000", "--queries", "40", "--repeats", "1", "--cli-runs", "5"),
        "search.json",
    ),
    Step(
        "vectors",
        "bench_vectors.py",
        (
            "--skip",
            "b,k",
            "--vault-sizes",
            "1000,10000,100000",
            "--vault-dims",
            "384",
            "--real-model-size",
            "0",
            "--repeats",
            "1",
        ),
        (
            "--skip",
            "a,b,k",
            "--vault-sizes",
            "1000,10000",
            "--vault-dims",
            "384",
            "--real-model-size",
            "0",
            "--vault-queries",
            "60",
            "--repeats",
            "1",
        ),
        "vectors.json",
        runs_full=1,
        runs_quick=1,
    ),
    Step("bridge", "bench_bridge.py", ("--requests", "500"), ("--requests", "200"), "bridge.json"),
    Step(
        "daemon",
        "bench_daemon.py",
        ("--sizes", "10000,100000", "--edits", "20"),
        ("--sizes", "10000", "--edits", "8"),
        "daemon.json",
    ),
    Step("locomo", "locomo.py", (), (), "locomo.json"),
    Step(
        "locomo_hybrid",
        "locomo.py",
        ("--hybrid",),
        (
            "--hybrid",
            "--variants",
            "keyword,hybrid_weighted",
            "--no-study",
            "--limit-conversations",
            "2",
        ),
        "locomo.json",
        runs_full=1,
        runs_quick=1,
    ),
    Step(
        "beam",
        "beam.py",
        (),
        ("--chats", "21"),
        "beam.json",
        runs_full=1,
        runs_quick=1,
    ),
    Step(
        "openclaw_memory",
        "bench_openclaw_memory.py",
        ("--sizes", "1000,10000", "--runs", "3"),
        ("--quick",),
        "openclaw_memory.json",
        runs_full=1,
        runs_quick=1,
    ),
    Step(
        "peers",
        "peers.py",
        ("--sizes", "1000,10000,100000"),
        ("--conversations", "1", "--sizes", "1000", "--queries", "5"),
        "peers.json",
        runs_full=1,
        runs_quick=1,
    ),
)


def run_step(step: Step, quick: bool, env: dict[str, str]) -> list[dict[str, Any]]:
    """Run one step as often as its mode asks; each run's JSON (also kept on disk)."""
    folder = RUNS_DIR / step.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    arguments = step.quick if quick else step.full
    runs = step.runs_quick if quick else step.runs_full
    python = os.path.relpath(sys.executable, PROJECT_DIR)
    results = []
    for n in range(1, runs + 1):
        command = [python, f"bench/{step.script}", *arguments, "--out", "bench/out"]
        print(f"[{step.name} {n}/{runs}] {shlex.join(command)}", file=sys.stderr, flush=True)
        produced = OUT / step.output
        produced.unlink(missing_ok=True)
        started = time.perf_counter()
        with open(folder / f"run-{n}.log", "wb") as log:
            done = subprocess.run(
                command, cwd=PROJECT_DIR, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        took = time.perf_counter() - started
        if done.returncode != 0 or not produced.exists():
            tail = (folder / f"run-{n}.log").read_text(errors="replace")[-3000:]
            raise SystemExit(
                f"{step.name}: {shlex.join(command)} failed (exit {done.returncode}); "
                f"its output ends:\n{tail}"
            )
        data = json.loads(produced.read_text(encoding="utf-8"))
        data["_run"] = {"command": shlex.join(command), "seconds": took, "git": _git_describe()}
        (folder / f"run-{n}.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
        results.append(data)
    return results


def load_runs(name: str) -> list[dict[str, Any]]:
    """The kept runs of a step, in order (for ``--report-only``)."""
    files = sorted((RUNS_DIR / name).glob("run-*.json"), key=lambda p: int(p.stem[4:]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def child_env() -> dict[str, str]:
    """The environment of the benchmark processes: no MEMORYCLAW_* overrides of the vaults."""
    keep = {"MEMORYCLAW_OPENCLAW_CACHE", "MEMORYCLAW_PEERS_CACHE"}
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMORYCLAW_") or k in keep}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the steps asked for (all by default), then write the report and plots."""
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small vaults, few runs (minutes)")
    parser.add_argument("--only", default="", help="comma-separated steps to (re)run")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the report from the kept runs"
    )
    args = parser.parse_args(argv)
    names = [s.name for s in STEPS]
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(only) - set(names))
    if unknown:
        parser.error(f"unknown step {', '.join(unknown)} (steps: {', '.join(names)})")
    started = time.perf_counter()
    meta_path = RUNS_DIR / "meta.json"
    if args.report_only:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    else:
        if not only:
            shutil.rmtree(RUNS_DIR, ignore_errors=True)
        RUNS_DIR.mkdir(parents=True, exist_ok=True)
        env = child_env()
        for step in STEPS:
            if not only or step.name in only:
                run_step(step, args.quick, env)
        meta = {
            "command": shlex.join(["bench/run", *(sys.argv[1:] if argv is None else argv)]),
            "mode": "quick" if args.quick else "full",
            "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": time.perf_counter() - started,
            "git": _git_describe(),
            "python": platform.python_version(),
        }
        if only and meta_path.exists():
            meta = {**json.loads(meta_path.read_text(encoding="utf-8")), **meta}
        meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    runs = {step.name: load_runs(step.name) for step in STEPS}
    written = report.write(runs, meta, BENCH_DIR / "REPORT.md", BENCH_DIR / "plots")
    print(f"wrote {', '.join(os.path.relpath(p, PROJECT_DIR) for p in written)}")
    return 0


def _git_describe() -> str:
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
