"""OpenClaw's own builtin memory (``memory-core``) in keyword mode, on memoryclaw's benchmark data.

OpenClaw indexes the Markdown files of the agent workspace (``MEMORY.md`` and ``memory/*.md``)
into SQLite with FTS5 and, when an embedding provider is configured, vectors.  Here it runs
in keyword (FTS-only) mode: ``memory.search.provider: "none"`` in ``openclaw.json`` (no
embedding provider, no network), checked with ``openclaw memory status --deep --json``
(``provider: none``, ``custom.searchMode: fts-only``).  Every OpenClaw process gets its own
temporary ``HOME`` (``tests/openclaw_env.py``); the real ``~/.openclaw`` is never read.

1. Synthetic vaults (``bench/bench_search.py``'s generator, seed and queries; vaults cached
   in ``bench/out/vaults``): for each size, the episode files are copied into the workspace's
   ``memory/`` folder; then the wall time of ``openclaw memory index --force`` (a fresh
   process each run; up to ``--runs`` runs, fewer once a size's runs together exceed
   ``--index-budget`` seconds) and of ``openclaw memory search Q --max-results 10 --json`` as
   a fresh process, for the first ``--runs`` queries of ``bench_search.py``.  Process start
   dominates, so ``openclaw --version`` (a fast path that loads no commands) and
   ``openclaw memory search --help`` (loads the same command tree as a search, then stops)
   are timed too.
2. LoCoMo recall (``../shared/data/locomo-dev.json``, category 5 skipped, as
   ``bench/locomo.py``): per conversation a fresh workspace with one file per session,
   ``memory/session-NN.md`` (a date heading, a blank line, then one line ``Speaker: text``
   per turn; undated names, so OpenClaw's recency decay of dated notes does not apply), one
   timed ``openclaw memory index --force``, then every question through the memory search
   manager the CLI uses (``getMemorySearchManager`` of the installed ``memory-core``, called
   as ``runMemorySearch`` calls it) in one Node process, with 10 results: once with the
   configured minimum score (as ``openclaw memory search --max-results 10``) and once with
   ``minScore: 0``.  A result's file and line range map back to the turns it covers;
   recall_any@k / recall_all@k for k = 1, 3, 5, 10 as ``bench/locomo.py`` computes them.  A
   few questions also run through the CLI as fresh processes (timed, and their results
   compared with the in-process ones).

Output: a markdown summary on stdout and in ``OUT/openclaw_memory.md``, raw numbers in
``OUT/openclaw_memory.json``.  Needs the OpenClaw of ``tests/openclaw_env.py``
(``$MEMORYCLAW_OPENCLAW_CACHE``; installed on first use).

    .venv/bin/python bench/bench_openclaw_memory.py [--out DIR] [--sizes 1000,10000]
        [--runs 3] [--conversations N] [--questions N] [--quick]

``--quick``: 1,000 episodes, 2 runs but no second index run once the first took 40 s, one
conversation, 40 questions (about 2 minutes on a 2-core VM).  ``--index-budget`` (default
600 s) and ``--index-timeout`` bound the index runs of large vaults; ``--sizes ''`` or
``--conversations 0`` skip a part.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import resource
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
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from locomo import DATA, KS, _rates, _recall, questions, sessions, turn_text  # noqa: E402

from tests.openclaw_env import (  # noqa: E402
    OPENCLAW_VERSION,
    ensure_openclaw,
    node_bin,
    openclaw_env,
)

# Imported by name: the generator's own module is checked on its own, not through this one.
_bench_search = importlib.import_module("bench_search")

DEFAULT_OUT = ROOT / "bench" / "out"
DEFAULT_SIZES = (1_000, 10_000)
K = max(KS)
CONFIG: dict[str, Any] = {"memory": {"search": {"provider": "none"}}}
# OpenClaw's own defaults that shape these results (left unchanged).
DEFAULTS = {
    "chunking": "400 tokens, 80 overlap",
    "memory.search.query.maxResults": 6,
    "memory.search.query.minScore": 0.35,
    "memory.search.store.fts.tokenizer": "unicode61 (no stemming)",
    "temporal decay": "30-day half-life on memory/YYYY-MM-DD[-slug].md; no file here matches",
    "sources": "memory + sessions indexed (rememberAcrossConversations), memory searched",
}
MODE = 'keyword (FTS-only): memory.search.provider = "none"'
TIMEOUT = 600
QUICK = {"sizes": "1000", "runs": 2, "conversations": 1, "questions": 40, "index_budget": 40.0}
_TURN_RE = re.compile(r"^D(\d+):(\d+)$")

SEARCH_HELPER = """\
// Run questions through OpenClaw's builtin memory search in one Node process, the way
// `openclaw memory search` does (extensions/memory-core cli.runtime: runMemorySearch).
//   node helper.mjs OPENCLAW_PACKAGE_DIR JOB.json OUT.json
import { readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const [pkg, jobPath, outPath] = process.argv.slice(2);
const job = JSON.parse(readFileSync(jobPath, "utf8"));
const load = (rel) => import(pathToFileURL(`${pkg}/dist/${rel}`).href);
const started = performance.now();
const { getRuntimeConfig } = await load("plugin-sdk/config-runtime.js");
const { buildAgentSessionKey } = await load("plugin-sdk/routing.js");
const { getMemorySearchManager } = await load("extensions/memory-core/runtime-api.js");
const importMs = performance.now() - started;
const cfg = getRuntimeConfig({ skipPluginValidation: true });
const agentId = "main";
const acquired = performance.now();
const { manager, error } = await getMemorySearchManager({
  cfg, agentId, purpose: "cli", inspectSources: true,
});
if (!manager) {
  console.error(`OpenClaw memory search manager unavailable: ${error}`);
  process.exit(3);
}
const managerMs = performance.now() - acquired;
const sessionKey = buildAgentSessionKey({
  agentId, channel: "cli", peer: { kind: "direct", id: "memory-search" },
});
const hits = (results) => results.map((r) => [r.path, r.startLine, r.endLine, r.score]);
const first = performance.now();
await manager.search(job.queries[0], { maxResults: job.passes[0].maxResults, sessionKey });
const firstSearchMs = performance.now() - first;
const passes = {};
for (const pass of job.passes) {
  const minScore = pass.minScore ?? undefined;
  passes[pass.name] = [];
  for (const query of job.queries) {
    const t0 = performance.now();
    const options = { maxResults: pass.maxResults, minScore, sessionKey };
    const results = await manager.search(query, options);
    passes[pass.name].push({ ms: performance.now() - t0, hits: hits(results) });
  }
}
const s = manager.status();
await manager.close?.();
const status = {
  provider: s.provider, requestedProvider: s.requestedProvider, files: s.files,
  chunks: s.chunks, sources: s.sources, fts: s.fts, vector: s.vector, custom: s.custom,
};
writeFileSync(outPath, JSON.stringify({
  node: process.version, importMs, managerMs, firstSearchMs, status, passes,
}));
process.exit(0);
"""


# ------------------------------------------------------------------------------ helpers


class Timeout(Exception):
    """A command ran longer than it was given."""


def stats(samples: Sequence[float]) -> dict[str, Any]:
    """Median, min, max and count of ``samples``, with the samples themselves."""
    if not samples:
        return {"median": None, "min": None, "max": None, "n": 0, "raw": []}
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
        "raw": list(samples),
    }


def _tail(text: str, lines: int = 20) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.strip().splitlines()[-lines:])


class Ran(NamedTuple):
    """A finished command: its output, wall seconds and CPU seconds (user + system)."""

    done: subprocess.CompletedProcess[str]
    wall: float
    cpu: float


def _children_cpu() -> float:
    """CPU seconds (user + system) of all waited-for child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = TIMEOUT) -> Ran:
    """Run ``argv`` and time it; stop with its stderr when it fails.

    The CPU time is that of the process and of the children it waited for, all threads
    included: unlike the wall time, it hardly grows when other work competes for the cores.
    """
    cpu = _children_cpu()
    started = time.perf_counter()
    try:
        done = subprocess.run(
            list(argv),
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as error:
        raise SystemExit(f"cannot run {argv[0]!r}: {error}") from error
    except subprocess.TimeoutExpired as error:
        raise Timeout(f"`{shlex.join(argv)}` timed out after {timeout:.0f} s") from error
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(
            f"`{shlex.join(argv)}` failed with exit status {done.returncode} "
            f"(HOME={env.get('HOME')}):\n{_tail(done.stderr + done.stdout)}"
        )
    return Ran(done, wall, cpu)


def parse_json(stdout: str, what: str) -> Any:
    """The JSON document in a command's stdout (log lines before it are skipped)."""
    lines = stdout.splitlines()
    for start, line in enumerate(lines):
        if line.lstrip().startswith(("{", "[")):
            try:
                return json.loads("\n".join(lines[start:]))
            except ValueError:
                continue
    raise SystemExit(f"{what} printed no JSON:\n{_tail(stdout)}")


def make_home(path: Path) -> Path:
    """A fresh OpenClaw home with keyword-only memory search; returns its memory folder."""
    state = path / ".openclaw"
    memory = state / "workspace" / "memory"
    memory.mkdir(parents=True)
    (state / "openclaw.json").write_text(json.dumps(CONFIG, indent=2) + "\n", encoding="utf-8")
    return memory


class OpenClaw:
    """The cached OpenClaw install: runs its CLI and the in-process search helper."""

    def __init__(self, work: Path) -> None:
        """Find (or install) OpenClaw and write the search helper into ``work``."""
        try:
            self.bin = ensure_openclaw()
        except (OSError, RuntimeError, subprocess.SubprocessError) as error:
            raise SystemExit(f"OpenClaw {OPENCLAW_VERSION} is not available: {error}") from error
        self.package = self.bin.parent / "openclaw"
        if not (self.bin / "openclaw").exists() or not self.package.is_dir():
            raise SystemExit(f"no openclaw executable in {self.bin} (broken OpenClaw cache?)")
        self.node = str(node_bin() / "node")
        self.helper = work / "openclaw_memory_search.mjs"
        self.helper.write_text(SEARCH_HELPER, encoding="utf-8")

    def env(self, home: Path) -> dict[str, str]:
        """The environment of an OpenClaw process isolated under ``home``."""
        return openclaw_env(home, self.bin)

    def cli(self, home: Path, *args: str, timeout: float = TIMEOUT) -> Ran:
        """``openclaw ARGS`` as a fresh process in ``home``."""
        return run([str(self.bin / "openclaw"), *args], self.env(home), home, timeout)

    def version(self, home: Path) -> str:
        """What ``openclaw --version`` prints."""
        return self.cli(home, "--version").done.stdout.strip()

    def search_in_process(self, home: Path, queries: list[str], work: Path) -> dict[str, Any]:
        """All ``queries`` through the memory search manager, in one Node process."""
        job = work / f"job-{home.name}.json"
        out = work / f"out-{home.name}.json"
        passes = [
            {"name": "default", "maxResults": K, "minScore": None},
            {"name": "min_score_0", "maxResults": K, "minScore": 0},
        ]
        job.write_text(json.dumps({"queries": queries, "passes": passes}), encoding="utf-8")
        command = [self.node, str(self.helper), str(self.package), str(job), str(out)]
        timeout = TIMEOUT + 5 * len(queries)
        ran = run(command, self.env(home), home, timeout)
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        result["wall_s"] = ran.wall
        result["cpu_s"] = ran.cpu
        return result


def check_mode(status: dict[str, Any], where: str) -> None:
    """Stop unless OpenClaw reports keyword-only search with no embedding provider."""
    custom = status.get("custom") or {}
    vector = status.get("vector") or {}
    fts = status.get("fts") or {}
    ok = (
        status.get("provider") == "none"
        and custom.get("searchMode") == "fts-only"
        and not vector.get("enabled")
        and fts.get("available")
    )
    if not ok:
        summary = {k: status.get(k) for k in ("provider", "custom", "vector", "fts")}
        raise SystemExit(f"OpenClaw memory is not in keyword-only mode ({where}): {summary}")


def deep_status(claw: OpenClaw, home: Path) -> dict[str, Any]:
    """``openclaw memory status --deep --json`` of the main agent, checked for FTS-only."""
    done = claw.cli(home, "memory", "status", "--deep", "--json").done
    agents = parse_json(done.stdout, "openclaw memory status --deep --json")
    if not agents:
        raise SystemExit(f"openclaw memory status --deep --json listed no agent in {home}")
    status: dict[str, Any] = agents[0]["status"]
    check_mode(status, "openclaw memory status --deep --json")
    return {
        "provider": status.get("provider"),
        "requestedProvider": status.get("requestedProvider"),
        "searchMode": status["custom"].get("searchMode"),
        "providerState": status["custom"].get("providerState"),
        "fts": status.get("fts"),
        "vector": status.get("vector"),
        "sources": status.get("sources"),
        "files": status.get("files"),
        "chunks": status.get("chunks"),
        "dirty": status.get("dirty"),
    }


# ------------------------------------------------------------------------------ startup


def measure_startup(claw: OpenClaw, home: Path, runs: int) -> dict[str, dict[str, Any]]:
    """Wall time of fresh ``openclaw --version`` and ``openclaw memory search --help``."""
    out = {}
    for args in (("--version",), ("memory", "search", "--help")):
        samples = [claw.cli(home, *args) for _ in range(runs)]
        out[shlex.join(["openclaw", *args])] = stats([r.wall for r in samples]) | {
            "cpu_s": stats([r.cpu for r in samples])
        }
    return out


# ------------------------------------------------------------------------------ vaults


def measure_size(
    claw: OpenClaw,
    work: Path,
    size: int,
    queries: list[str],
    args: argparse.Namespace,
    vocab: Any,
) -> dict[str, Any]:
    """Index and search timings of one synthetic vault of ``size`` episodes."""
    print(f"[{size:,}] preparing vault ...", file=sys.stderr, flush=True)
    root, _generated = _bench_search.ensure_vault(args.vault_cache, size, args.seed, vocab)
    home = work / f"home-{size}"
    memory = make_home(home)
    episodes = sorted((Path(root) / "episodes").rglob("*.md"))
    for episode in episodes:
        shutil.copyfile(episode, memory / episode.name)
    if len(list(memory.iterdir())) != len(episodes):
        raise SystemExit(f"episode file names of {root} are not unique")
    index: list[Ran] = []
    note = ""
    record: dict[str, Any] = {
        "episodes": size,
        "vault": str(root),
        "files": len(episodes),
        "load_at_start": os.getloadavg()[0],
    }
    for number in range(args.runs):
        print(f"[{size:,}] openclaw memory index --force, run {number + 1} ...", file=sys.stderr)
        try:
            index.append(claw.cli(home, "memory", "index", "--force", timeout=args.index_timeout))
        except Timeout as error:
            note = f"index run {number + 1}: {error}; searches not measured"
            print(f"[{size:,}] {note}", file=sys.stderr, flush=True)
            return record | _timings("index", index) | {"index_note": note, "search_s": stats([])}
        print(f"[{size:,}]   {index[-1].wall:.1f} s", file=sys.stderr, flush=True)
        took = sum(r.wall for r in index)
        if took > args.index_budget and number + 1 < args.runs:
            note = (
                f"{len(index)} of {args.runs} index runs: together they took "
                f"{took:.0f} s, over the {args.index_budget:.0f} s budget"
            )
            break
    status = deep_status(claw, home)
    if status["files"] != len(episodes):
        raise SystemExit(f"OpenClaw indexed {status['files']} files of {len(episodes)} in {home}")
    searches: list[Ran] = []
    counts: list[int] = []
    stale = 0
    for query in queries:
        ran = claw.cli(home, "memory", "search", query, "--max-results", str(K), "--json")
        found = parse_json(ran.done.stdout, "openclaw memory search --json")
        searches.append(ran)
        counts.append(len(found.get("results", [])))
        stale += bool(found.get("stale"))
        print(f"[{size:,}] search {ran.wall:.1f} s, {counts[-1]} results", file=sys.stderr)
    return (
        record
        | _timings("index", index)
        | _timings("search", searches)
        | {
            "index_note": note,
            "search_command": f"openclaw memory search Q --max-results {K} --json",
            "search_queries": queries,
            "search_result_counts": counts,
            "search_stale": stale,
            "status": status,
        }
    )


def _timings(name: str, runs: list[Ran]) -> dict[str, Any]:
    """``NAME_s`` and ``NAME_cpu_s``: wall and CPU statistics of ``runs``."""
    return {
        f"{name}_s": stats([r.wall for r in runs]),
        f"{name}_cpu_s": stats([r.cpu for r in runs]),
    }


# ------------------------------------------------------------------------------ LoCoMo


def write_sessions(sample: dict[str, Any], memory: Path) -> dict[str, dict[int, tuple[int, int]]]:
    """One Markdown file per session; maps each file's lines to their (session, turn)."""
    conversation = sample["conversation"]
    line_turns: dict[str, dict[int, tuple[int, int]]] = {}
    for number, _date, turns in sessions(conversation):
        name = f"session-{number:02d}.md"
        lines = [f"# Session {number}: {conversation[f'session_{number}_date_time']}", ""]
        mapping: dict[int, tuple[int, int]] = {}
        for position, turn in enumerate(turns, start=1):
            match = _TURN_RE.match(str(turn.get("dia_id", "")))
            lines.append(f"{turn['speaker']}: {' '.join(turn_text(turn).split())}")
            mapping[len(lines)] = (number, int(match.group(2)) if match else position)
        (memory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        line_turns[f"memory/{name}"] = mapping
    return line_turns


def covered(
    hits: list[list[Any]], line_turns: dict[str, dict[int, tuple[int, int]]]
) -> list[set[tuple[int, int]]]:
    """The (session, turn) pairs each result covers, in rank order."""
    out = []
    for path, start, end, _score in hits:
        lines = line_turns.get(str(path), {})
        out.append({lines[n] for n in range(int(start), int(end) + 1) if n in lines})
    return out


def measure_conversation(
    claw: OpenClaw, work: Path, sample: dict[str, Any], limit: int | None, cli_runs: int
) -> dict[str, Any]:
    """Index one conversation and run its questions in-process (and a few through the CLI)."""
    name = str(sample["sample_id"])
    home = work / f"locomo-{name}"
    line_turns = write_sessions(sample, make_home(home))
    asked = questions(sample)[:limit]
    if not asked:
        raise SystemExit(f"LoCoMo conversation {name} has no questions to ask")
    print(f"[{name}] openclaw memory index --force ...", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    index = claw.cli(home, "memory", "index", "--force")
    print(f"[{name}] {len(asked)} questions in-process ...", file=sys.stderr, flush=True)
    found = claw.search_in_process(home, [q for q, _ in asked], work)
    check_mode(found["status"], f"in-process search manager of {name}")
    passes: dict[str, Any] = {}
    for pass_name, records in found["passes"].items():
        hits = [covered(r["hits"], line_turns) for r in records]
        results = [_recall(h, wanted) for h, (_q, wanted) in zip(hits, asked, strict=True)]
        passes[pass_name] = {
            "results": results,
            "search_ms": [r["ms"] for r in records],
            "hit_counts": [len(r["hits"]) for r in records],
            "turns_per_hit": [len(h) for per_question in hits for h in per_question],
            "scores": [float(hit[3]) for r in records for hit in r["hits"]],
        }
    cli: list[Ran] = []
    agree = 0
    for number, (question, _wanted) in enumerate(asked[:cli_runs]):
        ran = claw.cli(home, "memory", "search", question, "--max-results", str(K), "--json")
        cli.append(ran)
        cli_hits = [
            [r["path"], r["startLine"], r["endLine"]]
            for r in parse_json(ran.done.stdout, "openclaw memory search --json").get("results", [])
        ]
        in_process = [h[:3] for h in found["passes"]["default"][number]["hits"]]
        agree += cli_hits == in_process
    return {
        "sample_id": name,
        "sessions": len(line_turns),
        "turns": sum(len(m) for m in line_turns.values()),
        "questions": len(asked),
        "load_at_start": load,
        "index_s": index.wall,
        "index_cpu_s": index.cpu,
        "chunks": found["status"].get("chunks"),
        "files": found["status"].get("files"),
        "status": found["status"],
        "node": found["node"],
        "helper": {
            k: found[k] for k in ("importMs", "managerMs", "firstSearchMs", "wall_s", "cpu_s")
        },
        "search_ms_median": statistics.median(passes["default"]["search_ms"]),
        "passes": passes,
        "cli_s": [r.wall for r in cli],
        "cli_cpu_s": [r.cpu for r in cli],
        "cli_same_results": agree,
    }


def measure_locomo(
    claw: OpenClaw, work: Path, data: Path, conversations: int | None, limit: int | None, runs: int
) -> dict[str, Any]:
    """LoCoMo recall of OpenClaw's keyword search, pooled over the conversations."""
    try:
        samples = json.loads(data.read_text(encoding="utf-8"))[:conversations]
    except (OSError, ValueError) as error:
        raise SystemExit(f"cannot read the LoCoMo data {data}: {error}") from error
    parts = [
        measure_conversation(claw, work, sample, limit, runs if i == 0 else 0)
        for i, sample in enumerate(samples)
    ]
    out: dict[str, Any] = {
        "data": str(data),
        "conversations": len(parts),
        "questions": sum(p["questions"] for p in parts),
        "k": K,
        "layout": "memory/session-NN.md: '# Session N: <date>', blank line, 'Speaker: text' "
        "per turn (undated file names: no recency decay)",
    }
    for pass_name in ("default", "min_score_0"):
        results = [r for p in parts for r in p["passes"][pass_name]["results"]]
        counts = [c for p in parts for c in p["passes"][pass_name]["hit_counts"]]
        turns = [t for p in parts for t in p["passes"][pass_name]["turns_per_hit"]]
        key = "" if pass_name == "default" else "_min_score_0"
        out[f"recall{key}"] = _rates(results) if results else {}
        out[f"search_ms_in_process{key}"] = stats(
            [ms for p in parts for ms in p["passes"][pass_name]["search_ms"]]
        )
        out[f"results_per_question{key}"] = statistics.fmean(counts) if counts else 0.0
        out[f"questions_without_results{key}"] = sum(c == 0 for c in counts)
        out[f"turns_per_result{key}"] = statistics.fmean(turns) if turns else 0.0
        scores = [x for p in parts for x in p["passes"][pass_name]["scores"]]
        out[f"result_scores{key}"] = {k: v for k, v in stats(scores).items() if k != "raw"}
    out["minimum_score"] = {
        "recall": "the configured memory.search.query.minScore (default 0.35), as "
        f"`openclaw memory search --max-results {K}` applies it",
        "recall_min_score_0": "minScore 0: every keyword match is kept up to k",
    }
    out["index_s"] = stats([p["index_s"] for p in parts])
    out["index_cpu_s"] = stats([p["index_cpu_s"] for p in parts])
    out["first_search_ms_in_process"] = stats([p["helper"]["firstSearchMs"] for p in parts])
    out["cli_search_s"] = stats([s for p in parts for s in p["cli_s"]])
    out["cli_search_cpu_s"] = stats([s for p in parts for s in p["cli_cpu_s"]])
    out["cli_compared"] = sum(len(p["cli_s"]) for p in parts)
    out["cli_same_results"] = sum(p["cli_same_results"] for p in parts)
    out["per_conversation"] = [
        {k: v for k, v in p.items() if k != "passes"}
        | {
            "recall": _rates(p["passes"]["default"]["results"]),
            "recall_min_score_0": _rates(p["passes"]["min_score_0"]["results"]),
        }
        for p in parts
        if p["questions"]
    ]
    return out


# ------------------------------------------------------------------------------ report


def _span(s: dict[str, Any], unit: str = "s", scale: float = 1.0) -> str:
    """``median unit (min–max, n=N)`` of a :func:`stats` summary."""
    if not s["n"]:
        return "—"
    return (
        f"{s['median'] * scale:.2f} {unit} ({s['min'] * scale:.2f}–{s['max'] * scale:.2f}, "
        f"n={s['n']})"
    )


def render(report: dict[str, Any]) -> str:
    """A short markdown summary of the report."""
    m = report["machine"]
    lines = [
        f"OpenClaw builtin memory ({report['openclaw_version']}), {report['mode']}",
        "",
        f"Command: `{report['command']}`; took {report['took_s']:.0f} s",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM; Node "
        f"{report['node'].lstrip('v')}; 1-minute load {report['load']['start']:.1f} at start, "
        f"{report['load']['end']:.1f} at end",
        "",
        "| measurement | wall time, median (min–max, n) | CPU time (user + sys), median |",
        "|---|---|---|",
    ]

    def row(what: str, wall: dict[str, Any], cpu: dict[str, Any] | None = None) -> None:
        """One table row: wall-time span and median CPU time."""
        used = f"{cpu['median']:.2f} s" if cpu and cpu["n"] else "—"
        lines.append(f"| {what} | {_span(wall)} | {used} |")

    for command, s in report["startup_commands"].items():
        row(f"fresh `{command}`", s, s["cpu_s"])
    for size in report["sizes"]:
        n = f"{size['episodes']:,} episodes"
        row(f"{n}: `openclaw memory index --force`", size["index_s"], size["index_cpu_s"])
        row(f"{n}: fresh `openclaw memory search`", size["search_s"], size.get("search_cpu_s"))
    loc = report.get("locomo")
    if loc:
        row("LoCoMo: `openclaw memory index --force`", loc["index_s"], loc["index_cpu_s"])
        row("LoCoMo: fresh `openclaw memory search`", loc["cli_search_s"], loc["cli_search_cpu_s"])
        in_process = loc["search_ms_in_process"]
        lines.append(
            f"| LoCoMo: search in one Node process (k={loc['k']}) | {_span(in_process, 'ms')} | — |"
        )
        lines += [
            "",
            f"LoCoMo recall, {loc['conversations']} conversations, {loc['questions']} questions "
            f"(mean {loc['turns_per_result']:.1f} turns per result, "
            f"{loc['results_per_question']:.1f} results per question):",
            "",
            "| metric | configured minScore | minScore 0 |",
            "|---|---|---|",
        ]
        for key, value in loc["recall"].items():
            lines.append(f"| recall_{key} | {value:.3f} | {loc['recall_min_score_0'][key]:.3f} |")
    for size in report["sizes"]:
        if size["index_note"]:
            lines.append(f"\nNote ({size['episodes']:,} episodes): {size['index_note']}.")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; ``--quick`` overrides sizes, runs, conversations, questions."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated vault sizes in episodes; empty for none (default: %(default)s)",
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="index runs, fresh searches and starts per size"
    )
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations")
    parser.add_argument("--questions", type=int, default=None, help="questions per conversation")
    parser.add_argument("--quick", action="store_true", help="1000 episodes, 1 conversation, 40 q")
    parser.add_argument(
        "--index-budget",
        type=float,
        default=600.0,
        help="no further index runs of a size once its runs took this many seconds",
    )
    parser.add_argument(
        "--index-timeout", type=float, default=3600.0, help="seconds before one index run fails"
    )
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo JSON")
    parser.add_argument("--seed", type=int, default=_bench_search.DEFAULT_SEED)
    parser.add_argument(
        "--vault-cache",
        type=Path,
        default=DEFAULT_OUT,
        help="where bench_search.py caches its vaults (OUT/vaults; default: %(default)s)",
    )
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.quick:
        args.sizes = QUICK["sizes"]
        args.runs = QUICK["runs"]
        args.conversations = QUICK["conversations"]
        args.questions = QUICK["questions"]
        args.index_budget = min(args.index_budget, QUICK["index_budget"])
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.questions is not None and args.questions < 1:
        parser.error("--questions must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the summary and write the raw numbers."""
    args = parse_args(argv)
    try:
        return measure(args)
    except Timeout as error:
        raise SystemExit(str(error)) from error


def measure(args: argparse.Namespace) -> int:
    """Everything :func:`main` runs."""
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": shlex.join(
            [
                os.path.relpath(sys.executable, ROOT),
                os.path.relpath(__file__, ROOT),
                *args.argv,
            ]
        ),
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": _bench_search.machine_info(),
        "load": {"start": os.getloadavg()[0]},
    }
    vocab = _bench_search.Vocabulary.build(args.seed)
    queries = _bench_search.build_queries(vocab, args.seed, args.runs)
    with tempfile.TemporaryDirectory(prefix="bench-openclaw-memory-") as tmp:
        work = Path(tmp)
        claw = OpenClaw(work)
        startup_home = work / "home-startup"
        make_home(startup_home)
        report["openclaw_version"] = claw.version(startup_home)
        report["node"] = run([claw.node, "--version"], dict(os.environ), work).done.stdout.strip()
        report["mode"] = MODE
        report["config"] = {
            "openclaw.json": CONFIG,
            "key": "memory.search.provider",
            "value": "none",
            "agent": "main",
            "workspace": "~/.openclaw/workspace (memory files in memory/*.md)",
            "home": "a fresh temporary HOME per vault size and per LoCoMo conversation",
            "search_max_results": K,
            "seed": args.seed,
            "runs": args.runs,
            "index_budget_s": args.index_budget,
            "index_timeout_s": args.index_timeout,
            "quick": args.quick,
            "openclaw_defaults": DEFAULTS,
            "in_process_search": "extensions/memory-core/runtime-api.js getMemorySearchManager("
            "{cfg, agentId: 'main', purpose: 'cli', inspectSources: true}).manager.search(q, "
            "{maxResults, minScore, sessionKey}) with the config of "
            "plugin-sdk/config-runtime.js getRuntimeConfig, as runMemorySearch calls it "
            "(without its recording of short-term recalls for dreaming)",
        }
        report["sizes"] = [measure_size(claw, work, size, queries, args, vocab) for size in sizes]
        report["locomo"] = (
            measure_locomo(claw, work, args.data, args.conversations, args.questions, args.runs)
            if args.conversations != 0
            else None
        )
        print("OpenClaw start-up ...", file=sys.stderr, flush=True)
        report["startup_commands"] = measure_startup(claw, startup_home, args.runs)
        report["startup_s"] = report["startup_commands"]["openclaw --version"]
    report["took_s"] = time.perf_counter() - started
    report["load"]["end"] = os.getloadavg()[0]
    summary = render(report)
    print(summary)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "openclaw_memory.md").write_text(summary, encoding="utf-8")
    (args.out / "openclaw_memory.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
