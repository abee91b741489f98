"""Turn the kept benchmark runs into ``bench/REPORT.md`` and PNG plots (see ``__main__.py``).

Every figure is the median over runs of a per-run statistic (a p50 over queries, a
throughput), shown with the min–max over runs and the number of runs; a figure from a single
run says so.  Nothing here measures anything: it only reads the runs' JSON.
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

Runs = dict[str, list[dict[str, Any]]]
KS = (1, 3, 5, 10)
BUDGET_TOKENS = 800


class Spread:
    """Median, min and max of per-run values."""

    def __init__(self, values: Iterable[float]) -> None:
        self.values = [float(v) for v in values]
        self.n = len(self.values)
        self.median = statistics.median(self.values) if self.values else float("nan")
        self.low = min(self.values) if self.values else float("nan")
        self.high = max(self.values) if self.values else float("nan")

    def text(self, unit: str = "", digits: int = 1) -> str:
        """``12.3 ms (11.9–13.0, 3 runs)``, or ``—`` when nothing was measured."""
        if not self.n:
            return "—"
        value = f"{self.median:,.{digits}f}{unit}"
        if self.n == 1:
            return f"{value} (1 run)"
        return f"{value} ({self.low:,.{digits}f}–{self.high:,.{digits}f}, {self.n} runs)"


def _sizes(runs: Sequence[dict[str, Any]], key: str = "results", size: str = "size") -> list[int]:
    found = {row[size] for run in runs for row in run.get(key, [])}
    return sorted(found)


def _per_size(
    runs: Sequence[dict[str, Any]],
    episodes: int,
    value: Callable[[dict[str, Any]], float],
    key: str = "results",
    size: str = "size",
) -> Spread:
    return Spread(value(row) for run in runs for row in run.get(key, []) if row[size] == episodes)


# ------------------------------------------------------------------------ the figures


def search_rows(runs: Runs, kind: str = "zipf") -> dict[int, dict[str, Spread]]:
    """Per vault size of one kind of synthetic vault: search, floor, grep, fresh process,
    reindex and no-op resync spreads, and the ratios to the floor of what search ranks."""
    search = [
        {**run, "results": [r for r in run.get("results", []) if r.get("kind", "zipf") == kind]}
        for run in runs.get("search", [])
    ]
    vectors = [r for r in runs.get("vectors", []) if r.get("vault")] if kind == "zipf" else []
    out: dict[int, dict[str, Spread]] = {}
    for n in _sizes(search):
        out[n] = {
            "ranked_ratio": _per_size(
                search, n, lambda r: r.get("ratios", {}).get("cpu_floor_ranked", float("nan"))
            ),
            "ranked_total": _per_size(
                search,
                n,
                lambda r: r.get("ratios", {}).get("cpu_floor_ranked_total", float("nan")),
            ),
            "batch_ratio": _per_size(
                search,
                n,
                lambda r: r.get("batch", {}).get("cpu_ratio_to_floor_ranked_p50", float("nan")),
            ),
            "batch_total": _per_size(
                search,
                n,
                lambda r: r.get("batch", {}).get("cpu_ratio_to_floor_ranked_total", float("nan")),
            ),
            "keyword": _per_size(search, n, lambda r: r["search"]["p50"]),
            "floor": _per_size(search, n, lambda r: r["floor"]["p50"]),
            "ratio": _per_size(search, n, lambda r: r["ratio_p50"]),
            "grep": _per_size(search, n, lambda r: r["grep"]["p50"]),
            "cli": _per_size(search, n, lambda r: r["cli"]["p50"]),
            "reindex": _per_size(search, n, lambda r: r["reindex"]["episode_files_per_s"]),
            "reindex_s": _per_size(search, n, lambda r: r["reindex"]["seconds"]),
            "noop": _per_size(search, n, lambda r: r["noop_resync"]["seconds"]),
            "hybrid": _per_size(
                vectors, n, lambda r: r["weighted_ms"]["p50"], key="vault", size="episodes"
            ),
        }
    return out


def bridge_rows(runs: Runs) -> dict[str, tuple[Spread, Spread]]:
    """Per method: the spread of per-run p50 and p99 round trips (ms)."""
    out = {}
    for method in ("retrieve", "log_turn"):
        samples = [run["samples_ms"][method] for run in runs.get("bridge", [])]
        out[method] = (
            Spread(statistics.median(s) for s in samples),
            Spread(_percentile(s, 0.99) for s in samples),
        )
    return out


def _percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def daemon_rows(runs: Runs) -> dict[int, dict[str, Spread]]:
    """Per vault size: hand-edit-to-searchable median (ms) and the daemon's peak RSS (MiB)."""
    daemon = runs.get("daemon", [])
    return {
        n: {
            "edit": _per_size(
                daemon, n, lambda r: r["edit_to_searchable_ms"]["median"], "results", "episodes"
            ),
            "edit_max": _per_size(
                daemon, n, lambda r: r["edit_to_searchable_ms"]["max"], "results", "episodes"
            ),
            "rss": _per_size(daemon, n, lambda r: r["peak_rss_mib"], "results", "episodes"),
        }
        for n in _sizes(daemon, "results", "episodes")
    }


def locomo_recall(runs: Runs) -> dict[str, dict[str, float]]:
    """recall_any/all@k per system (deterministic: the first run's)."""
    out: dict[str, dict[str, float]] = {}
    if runs.get("locomo"):
        first = runs["locomo"][0]
        out["memoryclaw keyword"] = first["memoryclaw"]
        out["BM25 over 8-turn windows"] = first["baseline"]
    if runs.get("locomo_hybrid"):
        hybrid = runs["locomo_hybrid"][0]["hybrid"]["recall"]
        out["memoryclaw hybrid (weighted)"] = hybrid["hybrid_weighted"]
        if "hybrid" in hybrid:
            out["memoryclaw hybrid (primary_first, default)"] = hybrid["hybrid"]
    for run in runs.get("openclaw_memory", [])[:1]:
        if run.get("locomo"):
            out["OpenClaw memory-core (FTS)"] = run["locomo"]["recall"]
    return out


def _question_counts(runs: Runs) -> dict[str, int]:
    counts = {}
    if runs.get("locomo"):
        counts["memoryclaw keyword"] = runs["locomo"][0]["questions"]
        counts["BM25 over 8-turn windows"] = runs["locomo"][0]["questions"]
    if runs.get("locomo_hybrid"):
        questions = runs["locomo_hybrid"][0]["questions"]
        counts["memoryclaw hybrid (weighted)"] = questions
        counts["memoryclaw hybrid (primary_first, default)"] = questions
    for run in runs.get("openclaw_memory", [])[:1]:
        if run.get("locomo"):
            counts["OpenClaw memory-core (FTS)"] = run["locomo"]["questions"]
    return counts


def turn_rows(runs: Runs) -> dict[int, dict[str, Spread]]:
    """Per vault size of ``bench_turn.py``: retrieve in-process and as a fresh process with no
    and with the most recalls recorded, and a new session's first turn logged."""
    out: dict[int, dict[str, Spread]] = {}
    kept = runs.get("turn", [])

    def most(mapping: dict[str, Any]) -> Any:
        return mapping[max(mapping, key=int)]

    def least(mapping: dict[str, Any]) -> Any:
        return mapping[min(mapping, key=int)]

    for n in _sizes(kept, key="sizes"):
        rows = [row for run in kept for row in run.get("sizes", []) if row["size"] == n]

        def spread(value: Callable[[dict[str, Any]], float], rows: list[Any] = rows) -> Spread:
            return Spread(value(row) for row in rows)

        out[n] = {
            "in_process": spread(lambda r: least(r["retrieve"])["in_process"]["p50"]),
            "in_process_p95": spread(lambda r: least(r["retrieve"])["in_process"]["p95"]),
            "fresh": spread(lambda r: least(r["retrieve"])["fresh_process"]["p50"]),
            "fresh_recalled": spread(lambda r: most(r["retrieve"])["fresh_process"]["p50"]),
            "recalls": spread(lambda r: max(int(k) for k in r["retrieve"])),
            "log_fresh": spread(lambda r: r["log_first_turn"]["p50"]),
            "log": spread(lambda r: least(r["log_with_open_logs"])["in_process"]["p50"]),
            "log_open": spread(lambda r: most(r["log_with_open_logs"])["in_process"]["p50"]),
            "open_logs": spread(lambda r: max(int(k) for k in r["log_with_open_logs"])),
        }
    return out


def retrieve_rows(runs: Runs) -> dict[str, Spread]:
    """``Vault.retrieve`` per turn over the LoCoMo dev questions, CPU p50 and p95 per run."""
    kept = [run["locomo"] for run in runs.get("retrieve", []) if "locomo" in run]
    return {
        "cpu_p50": Spread(r["cpu_p50"] for r in kept),
        "cpu_p95": Spread(r["cpu_p95"] for r in kept),
        "wall_p50": Spread(r["wall_p50"] for r in kept),
    }


def consolidation(runs: Runs) -> Spread:
    """Extractive consolidation throughput over the LoCoMo logs, logs/s per run."""
    return Spread(r["logs"] / r["consolidate_s"] for r in runs.get("locomo", []))


def openclaw_rows(runs: Runs) -> dict[int, dict[str, Spread]]:
    """Per size: OpenClaw's ``memory index`` and ``memory search`` wall times (s)."""
    out = {}
    for run in runs.get("openclaw_memory", [])[:1]:
        for row in run.get("sizes", []):
            out[row["episodes"]] = {
                "index": _from_summary(row["index_s"]),
                "search": _from_summary(row["search_s"]),
            }
    return out


def _from_summary(summary: dict[str, Any]) -> Spread:
    """A Spread rebuilt from a {median, min, max, n} the benchmark already reduced (nothing
    when it measured nothing, e.g. an index run that timed out)."""
    spread = Spread([])
    if not summary.get("n") or summary.get("median") is None:
        return spread
    spread.median, spread.low, spread.high = summary["median"], summary["min"], summary["max"]
    spread.n = int(summary["n"])
    spread.values = [spread.median]
    return spread


# ------------------------------------------------------------------------ the targets


def targets(runs: Runs) -> list[tuple[str, str, str, str]]:
    """SPEC 9's targets: (what, target, measured, pass/miss)."""
    rows: list[tuple[str, str, str, str]] = []
    search = search_rows(runs)

    def verdict(spread: Spread, ok: Callable[[float], bool]) -> str:
        return "—" if not spread.n else ("**pass**" if ok(spread.median) else "**miss**")

    def at_most(
        what: str,
        spread: Spread,
        limit: float,
        unit: str,
        digits: int,
        *,
        quick: bool = True,
        also: str = "",
    ) -> None:
        """A row whose target is at most ``limit`` ``unit`` (``quick``: ``--quick`` skips it),
        its measure followed by ``also``."""
        shown = spread.text(unit, digits)
        shown = (_or_quick(shown) if quick else shown) + also
        rows.append((what, f"≤ {limit:g}{unit}", shown, verdict(spread, _at_most(limit))))

    for n, limit in ((10_000, 2.0), (100_000, 5.0)):
        s = search.get(n, {}).get("keyword", Spread([]))
        at_most(f"keyword search p50, {n:,} episodes", s, limit, " ms", 2)
        at_most(
            f"search ÷ bare FTS5 MATCH, {n:,}",
            search.get(n, {}).get("ratio", Spread([])),
            3,
            "×",
            2,
        )
    for kind, label in (("zipf", "zipf"), ("common", "common-word")):
        row = search_rows(runs, kind).get(10_000, {})
        for key, what, limit in (
            ("ranked_ratio", "search ÷ bare FTS5 floor of the expression it ranks, p50", 2.5),
            ("ranked_total", "search ÷ that floor, the whole query set (sums)", 2.5),
            # a batch's time per query is a mean: set against the sum of its own queries'
            # floors, not against the median floor of other queries (kept beside it)
            ("batch_total", "`search --queries FILE --json` CPU ÷ its queries' floors", 3.0),
        ):
            also = ""
            if key == "batch_total":
                per_median = row.get("batch_ratio", Spread([])).text("×", 2)
                also = f" (÷ p50 floor: {_or_quick(per_median)})"
            at_most(
                f"{what}, 10,000, {label} vault", row.get(key, Spread([])), limit, "×", 2, also=also
            )
    retrieve = retrieve_rows(runs)
    for key, limit in (("cpu_p50", 8.0), ("cpu_p95", 15.0)):
        at_most(
            f"`retrieve` per turn, LoCoMo dev vaults, CPU {key[4:]}",
            retrieve[key],
            limit,
            " ms",
            2,
            quick=False,
        )
    turn = turn_rows(runs)
    big = turn.get(100_000, {})
    at_most(
        "`retrieve` per turn, 100,000 episodes, p50",
        big.get("in_process", Spread([])),
        60,
        " ms",
        1,
    )
    small = turn.get(10_000, {})
    fresh = small.get("fresh", Spread([]))
    at_most("`memoryclaw retrieve` as a fresh process, 10,000 episodes, p50", fresh, 120, " ms", 0)
    recalled = small.get("fresh_recalled", Spread([]))
    ratio = Spread([recalled.median / fresh.median] if fresh.n and recalled.n else [])
    recalls = small.get("recalls", Spread([]))
    rows.append(
        (
            f"the same after {recalls.median:,.0f} recorded recalls"
            if recalls.n
            else "the same after many recorded recalls",
            "within 10 %",
            _or_quick(recalled.text(" ms", 0)),
            verdict(ratio, lambda v: v <= 1.1),
        )
    )
    logged = big.get("log", Spread([]))
    at_most(
        "first turn of a session logged, 100,000 episodes, in-process p50", logged, 50, " ms", 1
    )
    for n, row in turn.items():
        opened = row["open_logs"]
        if opened.n and opened.median:
            what = f"the same with {opened.median:,.0f} logs left unconsolidated, {n:,} episodes"
            at_most(what, row["log_open"], 50, " ms", 1, quick=False)
    for n in (10_000, 100_000):
        s = search.get(n, {}).get("reindex", Spread([]))
        rows.append(
            (
                f"full reindex, {n:,} episodes",
                "≥ 2,000 files/s",
                _or_quick(s.text(" files/s", 0)),
                verdict(s, lambda v: v >= 2000),
            )
        )
    noop = search.get(100_000, {}).get("noop", Spread([]))
    at_most("no-op resync, 100,000 unchanged files", noop, 2, " s", 2)
    for n, row in daemon_rows(runs).items():
        s = row["edit"]
        rows.append(
            (
                f"hand edit → searchable (daemon), {n:,} episodes",
                "≤ 1 s",
                s.text(" ms", 0),
                verdict(s, lambda v: v <= 1000),
            )
        )
    for n, row in search.items():
        at_most(
            f"`memoryclaw search` as a fresh process, {n:,}", row["cli"], 250, " ms", 0, quick=False
        )
    for method, (p50, _) in bridge_rows(runs).items():
        at_most(f"stdio bridge `{method}` p50", p50, 10, " ms", 2, quick=False)
    s = consolidation(runs)
    rows.append(
        (
            "extractive consolidation (LoCoMo logs)",
            "≥ 50 logs/s",
            s.text(" logs/s", 1),
            verdict(s, lambda v: v >= 50),
        )
    )
    tokens = Spread(r["tokens_max"] for r in runs.get("locomo", [])[:1])
    rows.append(
        (
            "injected `retrieve` payload, largest over the LoCoMo questions",
            f"≤ budgetTokens ({BUDGET_TOKENS})",
            tokens.text(" tokens", 0),
            verdict(tokens, lambda v: v <= BUDGET_TOKENS),
        )
    )
    return rows


def _at_most(limit: float) -> Callable[[float], bool]:
    return lambda value: value <= limit


def _or_quick(text: str) -> str:
    return "not measured (`--quick`)" if text == "—" else text


# ------------------------------------------------------------------------ plots


def plot(runs: Runs, folder: Path) -> list[Path]:
    """Write the PNG plots; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    search = search_rows(runs)
    sizes = sorted(search)
    if sizes:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for key, label, style in (
            ("keyword", "memoryclaw keyword (in-process)", "o-"),
            ("hybrid", "memoryclaw hybrid, weighted (query vector given)", "s-"),
            ("floor", "bare FTS5 MATCH (floor)", "^--"),
            ("grep", "grep -ril over the files", "x:"),
        ):
            points = [(n, search[n][key]) for n in sizes if search[n][key].n]
            if not points:
                continue
            xs = [n for n, _ in points]
            ys = [s.median for _, s in points]
            errors = [[s.median - s.low for _, s in points], [s.high - s.median for _, s in points]]
            ax.errorbar(xs, ys, yerr=errors, fmt=style, capsize=3, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("episodes in the vault")
        ax.set_ylabel("search latency, p50 (ms)")
        ax.set_title("Search latency against vault size (median of runs, min–max bars)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        written.append(_save(fig, folder / "search_latency.png"))
    openclaw = openclaw_rows(runs)
    if sizes and openclaw:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        both = sorted(set(sizes) & set(openclaw))
        ticks = [f"{n:,}" for n in both]
        _paired_bars(
            left,
            ticks,
            ("memoryclaw full reindex (Vault.reindex(full=True))", "openclaw memory index --force"),
            (
                [search[n]["reindex_s"].median for n in both],
                [openclaw[n]["index"].median for n in both],
            ),
            "Indexing the same files",
        )
        _paired_bars(
            right,
            ticks,
            ("memoryclaw search (fresh process)", "openclaw memory search (fresh process)"),
            (
                [search[n]["cli"].median / 1000 for n in both],
                [openclaw[n]["search"].median for n in both],
            ),
            "One search from the command line",
        )
        written.append(_save(fig, folder / "openclaw_side_by_side.png"))
    written += payload_plot(runs, folder)
    written += peers_plot(runs, folder)
    recall = locomo_recall(runs)
    if recall:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, rates in recall.items():
            ax.plot(KS, [rates[f"any@{k}"] for k in KS], "o-", label=label)
        ax.set_xticks(KS)
        ax.set_xlabel("k (results)")
        ax.set_ylabel("recall_any@k")
        ax.set_title("LoCoMo dev: a top-k result holds the evidence")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        written.append(_save(fig, folder / "locomo_recall.png"))
    return written


def payload_plot(runs: Runs, folder: Path) -> list[Path]:
    """The LoCoMo payload metrics as grouped bars, one group per metric (none without data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    payload = payload_rates(runs)
    if not payload:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(10, 5))
    metrics = ("evidence_in_payload", "answer_in_payload", "answer_token_recall")
    width = 0.8 / len(payload)
    for i, (label, rates) in enumerate(payload.items()):
        xs = [m + i * width for m in range(len(metrics))]
        ax.bar(xs, [rates[m] for m in metrics], width, label=label)
    ax.set_xticks([m + 0.4 - width / 2 for m in range(len(metrics))])
    ax.set_xticklabels(metrics)
    ax.set_ylim(0, 1.2)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_title(f"LoCoMo dev: what reaches the model ({BUDGET_TOKENS} tokens each)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    return [_save(fig, folder / "locomo_payload.png")]


def _paired_bars(
    ax: Any,
    ticks: Sequence[str],
    labels: tuple[str, str],
    values: tuple[Sequence[float], Sequence[float]],
    title: str,
) -> None:
    """memoryclaw's bar and OpenClaw's side by side at each tick, in seconds."""
    width = 0.38
    xs = list(range(len(ticks)))
    for offset, label, heights in (
        (-width / 2, labels[0], values[0]),
        (width / 2, labels[1], values[1]),
    ):
        ax.bar([x + offset for x in xs], list(heights), width, label=label)
    ax.set_xticks(xs, list(ticks))
    ax.set_ylabel("seconds (wall)")
    ax.set_title(title)
    ax.legend(fontsize=8)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    # No timestamps in the file, so an unchanged plot leaves git status clean.
    fig.savefig(path, dpi=110, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


# ------------------------------------------------------------------------ the report


def render(runs: Runs, meta: dict[str, Any], plots: Sequence[str]) -> str:
    """The whole markdown report."""
    machine = _machine(runs)
    lines = [
        "# memoryclaw benchmark report",
        "",
        f"Generated by `{meta['command']}` ({meta['mode']} mode) on {meta['finished']}, "
        f"memoryclaw {_commits(runs, meta)}, in {meta['seconds'] / 60:.1f} min.",
        "",
        f"**Machine:** {machine}.",
        "",
        "Each figure is the median over runs of one run's statistic, with the min–max over runs "
        "and the number of runs; latencies within a run are p50 over its queries. The raw runs "
        "(JSON and output of every command) are in `bench/out/report/` after a run.",
        "",
    ]
    if "search_latency.png" in plots:
        lines += ["![search latency against vault size](plots/search_latency.png)", ""]
    lines += ["## SPEC 9 targets", "", "| what | target | measured | |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in targets(runs)]
    lines += ["", *_search_section(runs), *_turn_section(runs), *_ops_section(runs)]
    lines += _payload_section(runs, plots)
    lines += [*_peers_section(runs, plots), *_locomo_section(runs, plots)]
    lines += beam_section((runs.get("beam") or [{}])[0])
    lines += [*_openclaw_section(runs, plots), *_commands(runs)]
    return "\n".join(lines).rstrip() + "\n"


def _commits(runs: Runs, meta: dict[str, Any]) -> str:
    """The commit measured, or each step's when steps were re-run at different commits."""
    by_step = {
        name: {run.get("_run", {}).get("git") or meta["git"] for run in kept}
        for name, kept in runs.items()
        if kept
    }
    commits = {c for found in by_step.values() for c in found}
    if len(commits) <= 1:
        return next(iter(commits), meta["git"])
    return "; ".join(f"{name} at {', '.join(sorted(found))}" for name, found in by_step.items())


def _machine(runs: Runs) -> str:
    for name in ("search", "daemon", "vectors"):
        for run in runs.get(name, [])[:1]:
            m = run.get("machine")
            if m:
                return (
                    f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, "
                    f"{m.get('ram_gib', '?')} GiB RAM, {m.get('os', '?')}, "
                    f"Python {m.get('python', '?')}, SQLite {m.get('sqlite', '?')}"
                )
    return "unknown"


def _search_section(runs: Runs) -> list[str]:
    search = search_rows(runs)
    if not search:
        return []
    lines = [
        "## Search and indexing",
        "",
        "Synthetic vaults (`bench/bench_search.py`: about 90 words an episode, Zipf vocabulary, "
        "the same 200 generated queries at every size; fewer in `--quick`). Hybrid is "
        "`blendStrategy: weighted` over cached random 384-dimension vectors, the query's vector "
        "computed before timing (`bench/bench_vectors.py`, one run, p50 over its queries); "
        "embedding a query with all-MiniLM-L6-v2 adds its own time (see below).",
        "",
        "| episodes | keyword p50 | ÷ floor | hybrid (weighted) p50 | bare FTS5 floor p50 "
        "| `grep -ril` p50 | full reindex | no-op resync |",
        "|---:|---|---|---|---|---|---|---|",
    ]
    for n, row in search.items():
        lines.append(
            f"| {n:,} | {row['keyword'].text(' ms', 2)} | {row['ratio'].text('×', 2)} | "
            f"{row['hybrid'].text(' ms', 2)} | {row['floor'].text(' ms', 2)} | "
            f"{row['grep'].text(' ms', 1)} | {row['reindex'].text(' files/s', 0)} | "
            f"{row['noop'].text(' s', 3)} |"
        )
    for kind, label in (("zipf", "these vaults"), ("common", "the common-word vaults")):
        ranked = search_rows(runs, kind)
        if any(row["ranked_ratio"].n for row in ranked.values()):
            lines += [
                "",
                f"Against the floor of the expression search ranks (its words after leaving "
                f"out common ones), thread CPU, {label}: "
                + "; ".join(
                    f"{n:,} episodes search {row['ranked_ratio'].text('×', 2)}, "
                    f"`search --queries --json` per query {row['batch_ratio'].text('×', 2)}"
                    for n, row in ranked.items()
                )
                + ".",
            ]
    for run in runs.get("vectors", [])[:1]:
        embedding = run.get("embedding")
        if embedding:
            best = max(embedding["throughput"], key=lambda t: t.get("texts_per_s", 0), default=None)
            queries = embedding.get("query_ms", {})
            if best is not None:
                one_query = ", ".join(
                    f"{path} p50 {q['p50']:.1f} ms" for path, q in queries.items() if "p50" in q
                )
                lines += [
                    "",
                    f"Embedding with {embedding['model']} on this CPU (1 run): "
                    f"{best.get('texts_per_s', float('nan')):.0f} texts/s at best "
                    f"({best.get('path', '')}, batch {best.get('batch', '?')}); one query: "
                    f"{one_query or '—'} (`direct`: sentence-transformers in-process; `ollama`: "
                    "through the ollama client and a loopback `/api/embed` server).",
                ]
    return [*lines, ""]


def _turn_section(runs: Runs) -> list[str]:
    """One agent turn: ``retrieve`` in-process and as a fresh process, and a turn logged."""
    turn, retrieve = turn_rows(runs), retrieve_rows(runs)
    if not turn and not retrieve["cpu_p50"].n:
        return []
    lines = ["## One agent turn", ""]
    if retrieve["cpu_p50"].n:
        lines += [
            "`Vault.retrieve` over every LoCoMo dev question, as a hook's turn calls it "
            f"(`bench/bench_retrieve.py`): CPU p50 {retrieve['cpu_p50'].text(' ms', 2)}, "
            f"p95 {retrieve['cpu_p95'].text(' ms', 2)}; "
            f"wall p50 {retrieve['wall_p50'].text(' ms', 2)}.",
            "",
        ]
    if turn:
        lines += [
            "Synthetic vaults (`bench/bench_turn.py`): `retrieve` in one process and as a fresh "
            "`memoryclaw retrieve`, with no and with many recorded recalls; the first turn of a "
            "new session logged in one process (with logs left unconsolidated in `logs/`, as "
            "while nothing consolidates) and as a fresh `memoryclaw log`.",
            "",
            "| episodes | retrieve p50 / p95 | fresh `retrieve` p50 | the same after recalls "
            "| first turn logged | with logs left open | fresh `log` p50 |",
            "|---:|---|---|---|---|---|---|",
        ]
        for n, row in turn.items():
            lines.append(
                f"| {n:,} | {row['in_process'].text(' ms', 1)} / "
                f"{row['in_process_p95'].text(' ms', 1)} | {row['fresh'].text(' ms', 0)} | "
                f"{row['fresh_recalled'].text(' ms', 0)} ({row['recalls'].median:,.0f}) | "
                f"{row['log'].text(' ms', 1)} | {row['log_open'].text(' ms', 1)} "
                f"({row['open_logs'].median:,.0f}) | {row['log_fresh'].text(' ms', 0)} |"
            )
        lines.append("")
    return lines


def _ops_section(runs: Runs) -> list[str]:
    lines = ["## Processes, bridge, daemon, consolidation", ""]
    search = search_rows(runs)
    if search:
        lines.append(
            "`memoryclaw search` as a fresh process (wall, p50 of each run): "
            + "; ".join(f"{n:,} episodes {row['cli'].text(' ms', 0)}" for n, row in search.items())
            + "."
        )
        lines.append("")
    bridge = bridge_rows(runs)
    if any(p50.n for p50, _ in bridge.values()):
        lines += ["| stdio bridge (`serve --stdio`, sample vault) | p50 | p99 |", "|---|---|---|"]
        lines += [
            f"| `{m}` | {a.text(' ms', 2)} | {b.text(' ms', 2)} |" for m, (a, b) in bridge.items()
        ]
        lines.append("")
    daemon = daemon_rows(runs)
    if daemon:
        lines += [
            "| daemon, episodes | hand edit → searchable (median of a run's edits) | slowest edit "
            "| peak RSS |",
            "|---:|---|---|---|",
        ]
        lines += [
            f"| {n:,} | {row['edit'].text(' ms', 0)} | {row['edit_max'].text(' ms', 0)} | "
            f"{row['rss'].text(' MiB', 0)} |"
            for n, row in daemon.items()
        ]
        lines.append("")
    logs = consolidation(runs)
    if logs.n:
        first = runs["locomo"][0]
        lines.append(
            f"Extractive consolidation: {logs.text(' logs/s', 1)} ({first['logs']} LoCoMo "
            f"sessions into {first['episodes']} episodes per run)."
        )
        lines.append("")
    return lines


PAYLOAD_LABELS = {
    "memoryclaw": "memoryclaw `retrieve` (keyword)",
    "memoryclaw_hybrid": "memoryclaw `retrieve` (hybrid, weighted)",
    "bm25_turns": "BM25 over single turns, packed",
    "bm25_win8": "BM25 over 8-turn windows, packed",
}


def payload_rates(runs: Runs) -> dict[str, dict[str, Any]]:
    """Per system, the payload metrics of ``bench/locomo.py`` (the hybrid run adds its row)."""
    out: dict[str, dict[str, Any]] = {}
    for step in ("locomo", "locomo_hybrid"):
        for key, rates in (runs.get(step) or [{}])[0].get("payload", {}).items():
            if key in PAYLOAD_LABELS and PAYLOAD_LABELS[key] not in out:
                out[PAYLOAD_LABELS[key]] = rates
    return out


def _payload_section(runs: Runs, plots: Sequence[str]) -> list[str]:
    payload = payload_rates(runs)
    if not payload:
        return []
    questions = next(iter(payload.values()))["questions"]
    lines = [
        "## LoCoMo dev: what reaches the model",
        "",
        f"Every system gets the same {BUDGET_TOKENS} tokens (characters ÷ 4) for {questions} "
        "questions; `bench/locomo.py` computes these as the reference scorer "
        "`../shared/tools/locomo_payload.py` does. evidence_in_payload: some evidence turn has "
        "≥ 60 % of its content words in the payload; answer_in_payload: every content word of "
        "the gold answer is; answer_token_recall: the mean share of them.",
        "",
        "| system | evidence_in_payload | answer_in_payload | answer_token_recall | "
        "tokens (mean) | max |",
        "|---|---|---|---|---|---|",
    ]
    for label, r in payload.items():
        lines.append(
            f"| {label} | {r['evidence_in_payload']:.3f} | {r['answer_in_payload']:.3f} | "
            f"{r['answer_token_recall']:.3f} | {r['tokens_mean']:.0f} | {r['tokens_max']} |"
        )
    categories = list(next(iter(payload.values()))["by_category"])
    lines += [
        "",
        "evidence_in_payload per LoCoMo category:",
        "",
        "| system | " + " | ".join(categories) + " |",
        "|---|" + "---|" * len(categories),
    ]
    for label, r in payload.items():
        cells = [
            f"{r['by_category'][c]['evidence_in_payload']:.2f} (n={r['by_category'][c]['n']})"
            for c in categories
            if c in r["by_category"]
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    facts = (runs.get("locomo") or [{}])[0].get("payload", {}).get("facts")
    if facts:
        lines += [
            "",
            f"Facts the extractor files: {facts['per_conversation']:.1f} per conversation; the "
            f"gold answer is within one fact for {facts['answer_in_a_fact']:.1%} of questions.",
        ]
    if "locomo_payload.png" in plots:
        lines += ["", "![LoCoMo payload metrics](plots/locomo_payload.png)"]
    return [*lines, ""]


def _locomo_section(runs: Runs, plots: Sequence[str]) -> list[str]:
    recall = locomo_recall(runs)
    if not recall:
        return []
    counts = _question_counts(runs)
    header = " | ".join(f"{kind}@{k}" for kind in ("any", "all") for k in KS)
    lines = [
        "## LoCoMo dev recall",
        "",
        "A question counts at k when a top-k result covers one of its evidence turns "
        "(recall_any) or all of them (recall_all); see `bench/locomo.py`. Recall is "
        "deterministic, so it comes from one run.",
        "",
        f"| system | questions | {header} |",
        "|---|---:|" + "---|" * (2 * len(KS)),
    ]
    for label, rates in recall.items():
        cells = " | ".join(f"{rates[f'{kind}@{k}']:.3f}" for kind in ("any", "all") for k in KS)
        lines.append(f"| {label} | {counts.get(label, '?')} | {cells} |")
    tokens = [r["tokens_mean"] for r in runs.get("locomo", [])[:1]]
    if tokens:
        lines += [
            "",
            f"Mean injected `retrieve` payload: {tokens[0]:.0f} tokens (budget {BUDGET_TOKENS}).",
        ]
    lines += ["", *_unit_sizes(runs)]
    if "locomo_recall.png" in plots:
        lines += ["", "![LoCoMo recall_any@k](plots/locomo_recall.png)"]
    return [*lines, ""]


def _unit_sizes(runs: Runs) -> list[str]:
    """How many turns one result covers in each system: larger units find evidence more
    easily at the same k, so the comparison says so."""
    parts = []
    for run in runs.get("locomo", [])[:1]:
        if run.get("turns") and run.get("episodes"):
            parts.append(
                f"a memoryclaw episode covers {run['turns'] / run['episodes']:.1f} turns on "
                f"average ({run['turns']:,} turns in {run['episodes']} episodes)"
            )
        parts.append("a baseline window 8")
    for run in runs.get("openclaw_memory", [])[:1]:
        per_result = run.get("locomo", {}).get("turns_per_result")
        if isinstance(per_result, (int, float)):
            parts.append(f"an OpenClaw result (a 400-token chunk) {per_result:.1f}")
    if not parts:
        return []
    return [
        "Results differ in size: " + ", ".join(parts) + ". A larger unit holds the evidence "
        "more easily at the same k; what reaches the model is bounded by the `retrieve` "
        "budget above (summaries, and the details of the top two episodes), not by the "
        "episode's size."
    ]


def _openclaw_section(runs: Runs, plots: Sequence[str]) -> list[str]:
    rows = openclaw_rows(runs)
    if not rows:
        return []
    run = runs["openclaw_memory"][0]
    search = search_rows(runs)
    starts = run.get("startup_commands", {})
    floor = _from_summary(starts.get("openclaw memory search --help", {}))
    lines = [
        "## Side by side with OpenClaw's builtin memory",
        "",
        f"{run.get('openclaw_version', 'OpenClaw ?')}, its builtin `memory-core` in "
        f"{run.get('mode', '?')}, on the same episode files (copied into the workspace's "
        "`memory/` folder). Both "
        "commands are fresh processes, as a user runs them. Most of an OpenClaw search is its "
        "start-up: `openclaw memory search --help`, which loads the same commands and stops, "
        f"takes {floor.text(' s', 2)}; inside one long-lived Node process a search of a "
        f"LoCoMo conversation took {_locomo_in_process(run)}.",
        "",
        "| episodes | `openclaw memory index --force` | memoryclaw full reindex (in-process) | "
        "`openclaw memory search` | `memoryclaw search` | ratio (search) |",
        "|---:|---|---|---|---|---|",
    ]
    for n, row in rows.items():
        ours = search.get(n, {})
        cli = ours.get("cli", Spread([]))
        ratio = f"{row['search'].median * 1000 / cli.median:.0f}×" if cli.n else "—"
        lines.append(
            f"| {n:,} | {row['index'].text(' s', 2)} | "
            f"{ours.get('reindex_s', Spread([])).text(' s', 2)} | {row['search'].text(' s', 2)} | "
            f"{cli.text(' ms', 0)} | {ratio} |"
        )
    if "openclaw_side_by_side.png" in plots:
        lines += ["", "![OpenClaw side by side](plots/openclaw_side_by_side.png)"]
    return [*lines, ""]


def _locomo_in_process(run: dict[str, Any]) -> str:
    summary = run.get("locomo", {}).get("search_ms_in_process") or {}
    if summary.get("median") is None:
        return "—"
    return f"a median of {summary['median']:.0f} ms ({summary['n']} questions)"


def _commands(runs: Runs) -> list[str]:
    lines = ["## Commands", "", "Every run of every step, as the runner called it:", ""]
    for name, kept in runs.items():
        for n, run in enumerate(kept, start=1):
            info = run.get("_run", {})
            at = f", memoryclaw {info['git']}" if info.get("git") else ""
            lines.append(
                f"- {name} {n}: `{info.get('command', '?')}` ({info.get('seconds', 0):.0f} s{at})"
            )
    return lines


def write(runs: Runs, meta: dict[str, Any], target: Path, plots_dir: Path) -> list[Path]:
    """Write the plots and the report; every path written."""
    if plots_dir.exists():
        for old in plots_dir.glob("*.png"):
            old.unlink()
    plots = plot(runs, plots_dir)
    target.write_text(render(runs, meta, [p.name for p in plots]), encoding="utf-8")
    return [*plots, target]


def peers_plot(runs: Runs, folder: Path) -> list[Path]:
    """evidence_in_payload of every system ``bench/peers.py`` measured, as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kept = (runs.get("peers") or [{}])[0]
    found = kept.get("quality", {})
    if not found:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    names = list(found)
    fig, ax = plt.subplots(figsize=(10, 5))
    metrics = ("evidence_in_payload", "answer_in_payload")
    width = 0.8 / len(metrics)
    for i, metric in enumerate(metrics):
        xs = [n + i * width for n in range(len(names))]
        ax.bar(xs, [found[name][metric] for name in names], width, label=metric)
    ax.set_xticks([n + width / 2 for n in range(len(names))])
    labels = [textwrap.fill(name.replace("`", ""), 13) for name in names]
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylim(0, 1)
    data = kept.get("data", {}).get("file", "LoCoMo dev")
    ax.set_title(f"{data}, {BUDGET_TOKENS} tokens each: memoryclaw and the tools beside it")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return [_save(fig, folder / "peers.png")]


def data_name(report: dict[str, Any]) -> str:
    """The conversations a peers run measured, as the report names them (runs that did not
    record them measured all of LoCoMo dev)."""
    data = report.get("data")
    if not data:
        return "LoCoMo dev"
    ids = data["conversations"]
    return (
        f"`{data['file']}` ({len(ids)} conversation{'s' * (len(ids) != 1)}: "
        f"{', '.join(ids)}; {data['questions']:,} questions)"
    )


def peers_section(report: dict[str, Any], plots: Sequence[str], command: str) -> list[str]:
    """The peers' tables (``bench/peers.py``'s JSON) as report lines."""
    quality = report.get("quality", {})
    if not quality:
        return []
    shipped = report.get("quality_as_shipped", {})
    lines = [
        "## The tools beside memoryclaw",
        "",
        f"Measured by `{command}` in one run on one machine ({report['machine']}). Quality: "
        f"{data_name(report)}, {BUDGET_TOKENS} tokens for every system, scored as the "
        "reference scorer scores; each peer gets each conversation as one markdown note per "
        "session (a date heading, then `Speaker: text` per turn), answers each question with "
        "its own search, and what it returns, best first, is packed into the budget (qmd "
        "returns a snippet of a few lines, memory-core a chunk of its file, basic-memory the "
        "whole note); the first result that does not fit is cut to the room left, as a system "
        "filling its budget would. `qmd search` and basic-memory's `search_notes` match only "
        "documents that hold every query word, so each is asked the question as typed and "
        "its keywords; qmd is also asked once per keyword, the searches merged (files ranked "
        "by their summed scores, each shown with every snippet it was found with): an upper "
        "bound for an agent that retries. The BM25 packers show each turn after its "
        "session's date as people write it (`8 May 2023`), as memoryclaw's episodes do.",
    ]
    if shipped:
        lines += [
            "",
            "In brackets, the same search as measured before (the figures first shipped): a "
            "result that does not fit dropped whole, a later shorter one packed instead (so "
            "basic-memory, whose whole-session notes are often larger than the budget, "
            "injected nothing for many questions), and the packers' dates as `2023-05-08`.",
        ]
    lines += [
        "",
        "| system | evidence_in_payload | answer_in_payload | answer_token_recall "
        "| tokens (mean) |",
        "|---|---|---|---|---|",
    ]
    for system, rates in quality.items():
        before = shipped.get(system)
        cells = [
            f"{rates[key]:.{places}f}" + (f" ({before[key]:.{places}f})" if before else "")
            for key, places in PEER_COLUMNS
        ]
        lines.append(f"| {system} | {' | '.join(cells)} |")
    lines += ["", *PEER_HANDICAPS]
    if report.get("speed"):
        lines += _peers_speed(report["speed"])
    if report.get("skipped"):
        lines += ["", "Not measured, and why:", ""]
        lines += [f"- {name}: {why}" for name, why in report["skipped"].items()]
    if report.get("versions"):
        shown = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
        lines += ["", f"Versions: {shown}."]
    if "peers.png" in plots:
        lines += ["", "![memoryclaw and the tools beside it](plots/peers.png)"]
    return [*lines, ""]


PEER_COLUMNS = (
    ("evidence_in_payload", 3),
    ("answer_in_payload", 3),
    ("answer_token_recall", 3),
    ("tokens_mean", 0),
)
PEER_HANDICAPS = (
    "What still stands between a peer and its best figure here, and why it stays: qmd's "
    "keyword search is AND-only however it is asked, and its `query`, which fuses several "
    "searches, first expands and reranks them with local models it would download, which "
    "this machine cannot (the merged row stands in for it, as an upper bound: an agent "
    "seldom retries every keyword); qmd, memory-core and basic-memory are measured by "
    "keyword, as memoryclaw's keyword row is, their embeddings off for the same reason "
    "(basic-memory's sqlite-vec does not load here either), and memsearch, which embeds "
    "every chunk, not at all; every peer gets the conversation as the session notes a user "
    "would keep, not as memoryclaw's logged turns, since that is how each is fed in use; "
    "basic-memory returns whole notes, so one session fills most of its budget; and no "
    "result is reshaped beyond cutting the last to fit, since choosing and shaping what to "
    "inject is the work a memory system does.",
)


def _peers_speed(speed: dict[str, Any]) -> list[str]:
    """The speed table of a peers run."""
    lines = [
        "",
        "Speed on `bench_search.py`'s synthetic vaults (the same files for every system; "
        "search p50 of fresh processes over the same queries, the peers given their keywords; "
        "long-lived: memoryclaw's library in-process, basic-memory through its MCP server, "
        "qmd not measured (its MCP server's `query` expands and reranks with local models it "
        "would download); peak memory of the indexing or searching process, whichever is "
        "larger):",
        "",
        "| episodes | system | index | search p50, fresh process | search p50, long-lived "
        "| peak memory |",
        "|---|---|---|---|---|---|",
    ]
    for size, row in speed.items():
        for system, figures in row.items():
            if "skipped" in figures:
                lines.append(f"| {int(size):,} | {system} | {figures['skipped']} | | | |")
                continue
            peak = max(figures["index_peak_mib"], figures["search_peak_mib"])
            served = figures.get("server_p50_ms")
            lines.append(
                f"| {int(size):,} | {system} | {figures['index_s']:.2f} s "
                f"| {figures['search_p50_ms']:.0f} ms "
                f"| {'—' if served is None else f'{served:.1f} ms'} | {peak:.0f} MiB |"
            )
    return lines


def beam_section(found: dict[str, Any]) -> list[str]:
    """``bench/beam.py``'s figures (its JSON) as report lines: per memory size, recall and
    evidence_in_payload of every system, then memoryclaw's per ability."""
    sizes = found.get("sizes", [])
    if not sizes:
        return []
    lines = [
        "## BEAM dev: what reaches the model, per memory ability",
        "",
        f"Measured by `{found.get('_run', {}).get('command', 'bench/beam.py')}`, scored as the "
        "reference scorer `../shared/tools/beam_payload.py` scores (it prints the same figures "
        "for the same commit): each chat one vault, every batch a logged session; every "
        "probing question that cites evidence messages (all abilities but abstention) asked "
        f"at {found.get('budget', BUDGET_TOKENS)} tokens. recall_any@k: a top-k episode covers "
        "an evidence message; evidence_in_payload: the payload holds ≥ 60 % of the content "
        "words of an evidence message's first 400 characters. The BM25 packers drop a chunk "
        "that does not fit, as the reference does, so 8-message windows of long assistant "
        "answers seldom fit at all.",
    ]
    for size in sizes:
        ev = size["evidence_in_payload"]
        lines += [
            "",
            f"{size['size']}, chats {size['chats']}: {size['questions']} questions, "
            f"{size['episodes']:,} episodes, retrieve payload {size['tokens_mean']:.0f} tokens "
            f"mean (max {size['tokens_max']}).",
            "",
            "| system | evidence_in_payload | recall_any@1 | @3 | @5 | @10 | recall_all@5 |",
            "|---|---|---|---|---|---|---|",
            f"| memoryclaw | {ev['memoryclaw']:.3f} | "
            + " | ".join(f"{size['recall_any'][str(k)]:.3f}" for k in (1, 3, 5, 10))
            + f" | {size['recall_all']['5']:.3f} |",
            f"| BM25 over single messages | {ev['bm25_msgs']:.3f} | | | | | |",
            f"| BM25 over 8-message windows | {ev['bm25_win8']:.3f} | | | | | |",
            "",
            "| ability | questions | memoryclaw evidence_in_payload | recall_any@5 |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {name.replace('_', ' ')} | {v['n']} | {v['evidence_in_payload']:.2f} "
            f"| {v['recall_any@5']:.2f} |"
            for name, v in size["by_ability"].items()
        ]
    return [*lines, ""]


def _peers_section(runs: Runs, plots: Sequence[str]) -> list[str]:
    kept = runs.get("peers") or []
    if not kept:
        return []
    command = kept[0].get("_run", {}).get("command", ".venv/bin/python bench/peers.py")
    return peers_section(kept[0], plots, command)
