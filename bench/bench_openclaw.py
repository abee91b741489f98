"""Latency memoryclaw adds to a real OpenClaw agent turn.

Two measurements, both against a real ``memoryclaw serve --stdio`` on a copy of
``sample_vault/``:

1. Hooks in-process (``bench/openclaw_hooks.mjs``, Node 24): the plugin's
   ``before_prompt_build`` (recall) and ``agent_end`` (capture of one user + assistant
   exchange), the first call of a process (it starts the Python server) and then many warm
   calls.  This is what the plugin adds to each turn.
2. Whole turns: wall time of ``openclaw agent --local -m Q --session-id S`` (a fresh Node
   process per turn) in three OpenClaw homes, run interleaved (A B C A B C ...):
   A memoryclaw with autoRecall and autoCapture, B memoryclaw loaded with both off,
   C OpenClaw's default memory (``memory-core``).  The model is a loopback OpenAI-compatible
   server (``tests/loopback_model.py``); its recorded requests show whether the
   ``<memoryclaw>`` block reached the model.

OpenClaw (Node 24 + OpenClaw from npm) comes from ``tests/openclaw_env.py``'s cache
(``$MEMORYCLAW_OPENCLAW_CACHE``; installed on first use).  Results: the markdown table on
stdout and in ``bench/out/openclaw.md``, raw numbers in ``bench/out/openclaw.json``.

    .venv/bin/python bench/bench_openclaw.py [--turns 5] [--hook-calls 200] [--cold-runs 5]
        [--configs A,B,C]
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
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_search import machine_info, percentile  # noqa: E402

from memoryclaw.vault.rawlogs import unprocessed_logs  # noqa: E402
from tests.loopback_model import LoopbackModel, prompt_text  # noqa: E402
from tests.openclaw_env import (  # noqa: E402
    OPENCLAW_VERSION,
    ensure_openclaw,
    node_bin,
    openclaw_env,
)

HOOKS_SCRIPT = Path(__file__).resolve().parent / "openclaw_hooks.mjs"
SAMPLE = ROOT / "sample_vault"
QUESTION = "What is my dentist's phone number?"
REPLY = "Your dentist, Brightsmile Dental, is on 020 7946 0321."
BLOCK = "<memoryclaw>"
TIMEOUT = 240
CONFIGS = {
    "A": "memoryclaw, autoRecall + autoCapture on",
    "B": "memoryclaw loaded, autoRecall + autoCapture off",
    "C": "OpenClaw default memory (`memory-core`)",
}


def _ms_stats(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(samples),
        "p99": percentile(samples, 0.99),
        "mean": statistics.fmean(samples),
        "min": min(samples),
        "max": max(samples),
    }


def _copy_vault(target: Path) -> Path:
    shutil.copytree(SAMPLE, target, ignore=shutil.ignore_patterns(".memoryclaw"))
    return target


def _this_checkout(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this checkout's ``memoryclaw`` first on the path of every Python child."""
    paths = [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "MEMORYCLAW_"))}
    return _this_checkout({**env, "HOME": str(home)})


# ------------------------------------------------------------------------------ hooks


def measure_hooks(work: Path, calls: int, cold_runs: int) -> dict[str, Any]:
    """Time the plugin's recall and capture hooks in Node: first calls, then warm calls."""
    vault = _copy_vault(work / "vault-hooks")
    env = _clean_env(work)
    subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "reindex"],
        env=env,
        capture_output=True,
        check=True,
    )
    node = str(node_bin() / "node")
    runs = []
    for run in range(max(1, cold_runs)):
        command = [node, str(HOOKS_SCRIPT), "--python", sys.executable, "--vault", str(vault)]
        command += ["--calls", str(calls if run == 0 else 0)]
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"{HOOKS_SCRIPT.name} failed:\n{done.stdout}{done.stderr}")
        result = json.loads(done.stdout)
        if result["warnings"]:
            raise SystemExit(f"the plugin warned: {result['warnings']}")
        runs.append(result)
    warm = runs[0]
    first_recall = [r["firstRecallMs"] for r in runs]
    first_capture = [r["firstCaptureMs"] for r in runs]
    return {
        "command": shlex.join([node, str(HOOKS_SCRIPT.relative_to(ROOT)), "..."]),
        "node": warm["node"],
        "calls": calls,
        "cold_runs": len(runs),
        "first_recall_ms": _ms_stats(first_recall) | {"raw": first_recall},
        "first_capture_ms": _ms_stats(first_capture) | {"raw": first_capture},
        "first_recall_blocks": sum(bool(r["firstRecallBlock"]) for r in runs),
        "recall_ms": _ms_stats(warm["recallMs"]) | {"raw": warm["recallMs"]},
        "capture_ms": _ms_stats(warm["captureMs"]) | {"raw": warm["captureMs"]},
        "turn_ms": _ms_stats(warm["turnMs"]) | {"raw": warm["turnMs"]},
        "warm_blocks": warm["blocks"],
    }


# ------------------------------------------------------------------------------ turns


class Home:
    """One isolated OpenClaw home (its own ``HOME``) wired to the loopback model."""

    def __init__(self, name: str, root: Path, openclaw_bin: Path, model: LoopbackModel) -> None:
        self.name = name
        self.home = root / f"home-{name}"
        self.home.mkdir()
        self.vault = root / f"vault-{name}"
        self.env = _this_checkout(openclaw_env(self.home, openclaw_bin))
        self.model = model

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``openclaw ARGS`` in this home; a failure stops the benchmark."""
        done = subprocess.run(
            ["openclaw", *args],
            input=stdin,
            env=self.env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            output = done.stdout + done.stderr
            raise SystemExit(f"[{self.name}] openclaw {args[0]} failed:\n{output}")
        return done

    def patch(self, patch: dict[str, Any]) -> None:
        """Apply an OpenClaw config patch."""
        self.run("config", "patch", "--stdin", stdin=json.dumps(patch))

    def setup(self) -> None:
        """Point OpenClaw at the loopback model and set up this configuration's memory."""
        provider = {
            "baseUrl": self.model.base_url,
            "apiKey": "loopback",
            "api": "openai-completions",
            "models": [{"id": "loopback-model", "name": "Loopback"}],
        }
        self.patch(
            {
                "models": {"providers": {"loop": provider}},
                "agents": {"defaults": {"model": "loop/loopback-model"}},
            }
        )
        if self.name == "C":
            self.patch({"plugins": {"slots": {"memory": "memory-core"}}})
            return
        _copy_vault(self.vault)
        installed = subprocess.run(
            [sys.executable, "-m", "memoryclaw", "--vault", str(self.vault), "openclaw", "install"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        if installed.returncode != 0:
            raise SystemExit(f"memoryclaw openclaw install failed:\n{installed.stderr}")
        if self.name == "B":
            config = {"autoRecall": False, "autoCapture": False}
            self.patch({"plugins": {"entries": {"memoryclaw": {"config": config}}}})

    def memory_slot(self) -> str:
        """The plugin that holds OpenClaw's memory slot in this home."""
        plugins = json.loads(self.run("config", "get", "plugins", "--json").stdout)
        return str(plugins.get("slots", {}).get("memory") or "memory-core")

    def turn(self, session: str) -> dict[str, Any]:
        """One timed agent turn: wall time and what the model was sent."""
        seen = len(self.model.chat_requests())
        started = time.perf_counter()
        done = self.run("agent", "--local", "-m", QUESTION, "--session-id", session)
        wall = time.perf_counter() - started
        fresh = self.model.chat_requests()[seen:]
        if not fresh:
            raise SystemExit(f"[{self.name}] OpenClaw never called the model")
        output = done.stdout + done.stderr
        logged = self.vault.is_dir() and any(  # OpenClaw keys sessions in lower case
            log.session.lower().endswith(f":{session}") for log in unprocessed_logs(self.vault)
        )
        return {
            "session": session,
            "wall_s": wall,
            "block": BLOCK in prompt_text(fresh[0]),
            "replied": REPLY in done.stdout,
            "logged": logged,
            "plugin_warning": any(
                "memoryclaw:" in line and "failed" in line for line in output.splitlines()
            ),
            "model_requests": len(fresh),
            "output_tail": output[-1500:],
        }


def measure_turns(
    work: Path, turns: int, warmup: int, configs: Sequence[str] = tuple(CONFIGS)
) -> dict[str, Any]:
    """Interleaved whole-turn wall times of ``configs`` (A, B and C by default)."""
    openclaw_bin = ensure_openclaw()
    model = LoopbackModel(reply=REPLY).start()
    try:
        homes = {name: Home(name, work, openclaw_bin, model) for name in configs}
        for home in homes.values():
            home.setup()
        slots = {name: home.memory_slot() for name, home in homes.items()}
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
        warm: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
        for i in range(warmup + turns):
            for name, home in homes.items():
                record = home.turn(f"bench-{name.lower()}-{i}")
                (warm if i < warmup else results)[name].append(record)
                print(
                    f"  turn {i + 1 - warmup:>2} {name}: {record['wall_s']:.2f} s"
                    f"{' (warm-up)' if i < warmup else ''}, block={record['block']}",
                    file=sys.stderr,
                )
    finally:
        model.stop()
    return {
        "openclaw": OPENCLAW_VERSION,
        "command": "openclaw agent --local -m Q --session-id S",
        "turns": turns,
        "warmup": warmup,
        "slots": slots,
        "configs": {name: CONFIGS[name] for name in configs},
        "results": results,
        "warmup_results": warm,
    }


def _turn_summary(records: list[dict[str, Any]]) -> dict[str, float]:
    walls = [r["wall_s"] for r in records]
    return {"median": statistics.median(walls), "min": min(walls), "max": max(walls)}


def _paired(report: dict[str, Any], left: str, right: str) -> dict[str, float]:
    results = report["results"]
    diffs = [a["wall_s"] - b["wall_s"] for a, b in zip(results[left], results[right], strict=True)]
    medians = _turn_summary(results[left])["median"] - _turn_summary(results[right])["median"]
    return {"of_medians": medians, "paired_median": statistics.median(diffs)}


def check_path(turns: dict[str, Any]) -> list[str]:
    """Problems with the measured path: the block must reach the model in A only."""
    problems = []
    for name, records in turns["results"].items():
        for record in records:
            if name == "A" and not (record["block"] and record["logged"]):
                problems.append(f"A {record['session']}: block {record['block']}, logged no")
            if name != "A" and record["block"]:
                problems.append(f"{name} {record['session']}: the memoryclaw block was sent")
            if not record["replied"] or record["plugin_warning"]:
                problems.append(f"{name} {record['session']}: reply missing or plugin warning")
    return problems


# ------------------------------------------------------------------------------ report


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def render(report: dict[str, Any]) -> str:
    """The markdown report: command, machine, one table."""
    m = report["machine"]
    hooks = report["hooks"]
    load = report["load"]
    lines = [
        f"Command: `{report['command']}`, run {report['started']}, "
        f"took {_duration(report['took_s'])}",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, {m['os']}; "
        f"Python {m['python']}, Node {hooks['node'].lstrip('v')}, OpenClaw "
        f"{report['turns']['openclaw'] if report['turns'] else OPENCLAW_VERSION}; "
        f"memoryclaw {m['memoryclaw']} (git {m['git']})",
        "",
        f"1-minute load average: {load['start']:.1f} at start, {load['after_hooks']:.1f} after "
        f"the hook timings, {load['end']:.1f} at end ({m['cores']} cores).",
        "",
        "| measurement (what was timed) | result | n | target |",
        "|---|---|---:|---|",
    ]

    def row(what: str, result: str, n: object, target: str = "") -> None:
        lines.append(f"| {what} | {result} | {n} | {target} |")

    def span(s: dict[str, float]) -> str:
        return f"median {s['p50']:.1f} ms ({s['min']:.1f}–{s['max']:.1f})"

    def pcts(s: dict[str, float]) -> str:
        return f"p50 {s['p50']:.2f} · p99 {s['p99']:.2f} ms"

    cold = hooks["cold_runs"]
    row(
        "recall hook `before_prompt_build`, first call of a process (starts `serve --stdio`)",
        span(hooks["first_recall_ms"]),
        cold,
    )
    row(
        "capture hook `agent_end` (user + assistant), first call of a process",
        span(hooks["first_capture_ms"]),
        cold,
    )
    row("recall hook, warm server", pcts(hooks["recall_ms"]), hooks["calls"], "bridge p50 ≤ 10 ms")
    row("capture hook, warm server", pcts(hooks["capture_ms"]), hooks["calls"])
    row("recall + capture per turn, warm server", pcts(hooks["turn_ms"]), hooks["calls"])
    turns = report["turns"]
    if turns:
        results = turns["results"]
        for name, label in turns["configs"].items():
            s = _turn_summary(results[name])
            blocks = sum(r["block"] for r in results[name])
            row(
                f"whole turn `openclaw agent --local`, {name}: {label} "
                f"(memory slot `{turns['slots'][name]}`)",
                f"median {s['median']:.2f} s ({s['min']:.2f}–{s['max']:.2f}); "
                f"`<memoryclaw>` sent to the model {blocks}/{len(results[name])}",
                len(results[name]),
            )
        for left, right in (("A", "C"), ("A", "B"), ("B", "C")):
            if left not in results or right not in results:
                continue
            d = _paired(turns, left, right)
            row(
                f"whole turn {left} − {right}",
                f"{d['of_medians'] * 1000:+.0f} ms (difference of medians); "
                f"{d['paired_median'] * 1000:+.0f} ms (median of per-round differences)",
                turns["turns"],
            )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5, help="timed turns per configuration")
    parser.add_argument("--warmup", type=int, default=1, help="untimed turns per configuration")
    parser.add_argument("--hook-calls", type=int, default=200, help="warm hook calls")
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh Node processes")
    parser.add_argument(
        "--configs",
        default="A,B,C",
        help="configurations to time, e.g. A alone for many cold recalls through the plugin",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table and write the raw numbers."""
    args = parse_args(argv)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": shlex.join(
            [
                os.path.relpath(sys.executable, ROOT),
                os.path.relpath(__file__, ROOT),
                *(sys.argv[1:] if argv is None else argv),
            ]
        ),
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "load": {"start": os.getloadavg()[0]},
    }
    with tempfile.TemporaryDirectory(prefix="bench-openclaw-") as tmp:
        work = Path(tmp)
        print("hooks in-process ...", file=sys.stderr)
        report["hooks"] = measure_hooks(work, args.hook_calls, args.cold_runs)
        report["load"]["after_hooks"] = os.getloadavg()[0]
        report["turns"] = None
        if args.turns > 0:
            print("whole OpenClaw turns (A B C interleaved) ...", file=sys.stderr)
            configs = [c for c in args.configs.split(",") if c]
            unknown = sorted(set(configs) - set(CONFIGS))
            if unknown:
                raise SystemExit(f"--configs: unknown {unknown}; known: {', '.join(CONFIGS)}")
            report["turns"] = measure_turns(work, args.turns, args.warmup, configs)
    report["took_s"] = time.perf_counter() - started
    report["load"]["end"] = os.getloadavg()[0]
    problems = check_path(report["turns"]) if report["turns"] else []
    report["problems"] = problems
    table = render(report)
    print(table)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "openclaw.md").write_text(table, encoding="utf-8")
    (args.out / "openclaw.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
