"""Round-trip latency of the ``memoryclaw serve --stdio`` bridge (SPEC 9: p50 <= 10 ms).

Starts one real server process on a copy of ``sample_vault/`` and times request -> response
for ``retrieve`` and ``log_turn``, as a plugin would see it.

    .venv/bin/python bench/bench_bridge.py [--requests 500] [--out bench/out]

The table is printed; the raw samples (milliseconds) go to ``OUT/bridge.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERIES = [
    "what did I email John about",
    "when is the projectX deadline",
    "flight to Lisbon",
    "dentist appointment",
    "that budget conversation with marketing",
]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    """Run the bridge benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500, help="requests per method")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="output folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(ROOT / "sample_vault", vault, ignore=shutil.ignore_patterns(".memoryclaw"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYCLAW_")}
        command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "serve", "--stdio"]
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None

        def call(ident: int, method: str, params: dict[str, object]) -> float:
            line = json.dumps({"id": ident, "method": method, "params": params}).encode() + b"\n"
            started = time.perf_counter()
            proc.stdin.write(line)  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            response = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            elapsed = (time.perf_counter() - started) * 1000
            if "error" in response:
                raise SystemExit(f"{method} failed: {response['error']}")
            return elapsed

        call(0, "status", {})  # opens and indexes the vault
        results = {}
        for method in ("retrieve", "log_turn"):
            samples = []
            for i in range(args.requests):
                if method == "retrieve":
                    params: dict[str, object] = {"query": QUERIES[i % len(QUERIES)]}
                else:
                    params = {"session": "bench", "role": "user", "content": f"turn {i}"}
                samples.append(call(i + 1, method, params))
            results[method] = samples
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    print(
        f"Command: `python bench/bench_bridge.py --requests {args.requests}`; "
        f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; sample_vault copy\n"
    )
    print("| method | p50 | p99 | mean | n | target (p50) |")
    print("|---|---:|---:|---:|---:|---|")
    for method, samples in results.items():
        p50, p99 = statistics.median(samples), _percentile(samples, 0.99)
        mean = statistics.fmean(samples)
        print(
            f"| {method} | {p50:.2f} ms | {p99:.2f} ms | {mean:.2f} ms | {len(samples)} | ≤ 10 ms |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    raw = {"requests": args.requests, "cores": os.cpu_count(), "samples_ms": results}
    (args.out / "bridge.json").write_text(json.dumps(raw), encoding="utf-8")


if __name__ == "__main__":
    main()
