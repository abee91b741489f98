"""bench/report.py: medians over runs, SPEC 9 verdicts and the plots, from runs' JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import report  # noqa: E402

MACHINE = {"cpu": "Test CPU", "cores": 2, "ram_gib": 8, "os": "Linux", "python": "3.11"}


def _search_run(p50_10k: float, cli_ms: float) -> dict[str, Any]:
    def row(size: int, p50: float) -> dict[str, Any]:
        return {
            "size": size,
            "search": {"p50": p50},
            "floor": {"p50": p50 / 2},
            "ratio_p50": 2.0,
            "grep": {"p50": 50.0},
            "cli": {"p50": cli_ms},
            "reindex": {"episode_files_per_s": 2500.0, "seconds": size / 2500},
            "noop_resync": {"seconds": 0.1},
        }

    return {
        "machine": MACHINE,
        "results": [row(1000, 1.0), row(10_000, p50_10k)],
        "_run": {"command": "python bench/bench_search.py --sizes 1000,10000", "seconds": 12},
    }


def _runs() -> dict[str, list[dict[str, Any]]]:
    rates = {f"{kind}@{k}": 0.5 + k / 100 for kind in ("any", "all") for k in report.KS}
    return {
        "search": [_search_run(1.5, 300.0), _search_run(2.5, 200.0), _search_run(1.9, 240.0)],
        "bridge": [{"samples_ms": {"retrieve": [2.0, 3.0, 4.0], "log_turn": [12.0, 11.0]}}],
        "daemon": [
            {
                "results": [
                    {
                        "episodes": 10_000,
                        "edit_to_searchable_ms": {"median": m, "max": m},
                        "peak_rss_mib": 50.0,
                    }
                ]
            }
            for m in (300.0, 500.0)
        ],
        "locomo": [
            {
                "memoryclaw": rates,
                "baseline": rates,
                "questions": 760,
                "tokens_mean": 400,
                "tokens_max": 801,
                "logs": 100,
                "consolidate_s": 2.0,
                "episodes": 120,
                "payload": {
                    key: {
                        "questions": 754,
                        "evidence_in_payload": ev,
                        "answer_in_payload": ev / 2,
                        "answer_token_recall": ev - 0.1,
                        "tokens_mean": 790,
                        "tokens_max": 800,
                        "by_category": {"temporal": {"n": 156, "evidence_in_payload": ev}},
                    }
                    for key, ev in (("memoryclaw", 0.9), ("bm25_turns", 0.8))
                }
                | {"facts": {"per_conversation": 7.0, "answer_in_a_fact": 0.016}},
            },
        ],
    }


def test_figures_are_medians_over_runs_with_their_spread() -> None:
    rows = report.search_rows(_runs())
    keyword = rows[10_000]["keyword"]
    assert (keyword.median, keyword.low, keyword.high, keyword.n) == (1.9, 1.5, 2.5, 3)
    assert keyword.text(" ms", 2) == "1.90 ms (1.50–2.50, 3 runs)"
    assert report.Spread([4.0]).text(" s") == "4.0 s (1 run)"
    assert report.Spread([]).text() == "—"


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("keyword search p50, 10,000 episodes", "**pass**"),  # median 1.9 ≤ 2
        ("keyword search p50, 100,000 episodes", "—"),  # not measured
        ("`memoryclaw search` as a fresh process, 10,000", "**pass**"),  # median 240 ≤ 250
        ("stdio bridge `retrieve` p50", "**pass**"),
        ("stdio bridge `log_turn` p50", "**miss**"),  # 11.5 > 10
        ("hand edit → searchable (daemon), 10,000 episodes", "**pass**"),
        ("extractive consolidation (LoCoMo logs)", "**pass**"),  # 50 logs/s, the target itself
        ("injected `retrieve` payload, largest over the LoCoMo questions", "**miss**"),  # 801
    ],
    ids=["search-10k", "search-100k", "cli", "retrieve", "log-turn", "edit", "logs", "tokens"],
)
def test_each_spec_target_gets_a_verdict(what: str, expected: str) -> None:
    verdicts = {row[0]: row for row in report.targets(_runs())}
    assert verdicts[what][3] == expected
    if expected == "—":
        assert verdicts[what][2] == "not measured (`--quick`)"


def _turn_size(size: int, fresh: float, recalled: float, logged: float) -> dict[str, Any]:
    def ms(p50: float) -> dict[str, float]:
        return {"p50": p50, "p95": p50 * 2}

    return {
        "size": size,
        "retrieve": {
            "0": {"in_process": ms(4.0), "fresh_process": ms(fresh)},
            "100000": {"in_process": ms(4.5), "fresh_process": ms(recalled)},
        },
        "log_first_turn": ms(95.0),
        "log_with_open_logs": {"0": {"in_process": ms(2.0)}, "1000": {"in_process": ms(logged)}},
    }


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("`memoryclaw retrieve` as a fresh process, 10,000 episodes, p50", "**pass**"),  # 110
        ("the same after 100,000 recorded recalls", "**miss**"),  # 125 > 110 × 1.1
        ("`retrieve` per turn, 100,000 episodes, p50", "**pass**"),
        ("the same with 1,000 logs left unconsolidated, 100,000 episodes", "**miss**"),  # 60
        ("`retrieve` per turn, LoCoMo dev vaults, CPU p50", "**pass**"),
        ("`retrieve` per turn, LoCoMo dev vaults, CPU p95", "**miss**"),  # 16 > 15
    ],
    ids=["fresh", "after-recalls", "100k", "open-logs", "locomo-p50", "locomo-p95"],
)
def test_a_turn_s_targets_get_a_verdict(what: str, expected: str) -> None:
    runs = {
        "turn": [
            {"sizes": [_turn_size(10_000, 110.0, 125.0, 3.0), _turn_size(100_000, 150, 150, 60)]}
        ],
        "retrieve": [{"locomo": {"cpu_p50": 5.0, "cpu_p95": 16.0, "wall_p50": 6.0}}],
    }
    verdicts = {row[0]: row for row in report.targets(runs)}
    assert verdicts[what][3] == expected
    assert "| 100,000 | 4.0 ms (1 run) / 8.0 ms (1 run) |" in "\n".join(report._turn_section(runs))


def test_search_figures_keep_the_kinds_of_vault_apart() -> None:
    run = _search_run(2.0, 200.0)
    common = {**run["results"][1], "kind": "common", "search": {"p50": 9.0}}
    common["ratios"] = {"cpu_floor_ranked": 1.5, "cpu_floor_ranked_total": 1.4}
    common["batch"] = {"cpu_ratio_to_floor_ranked_p50": 1.6, "cpu_ratio_to_floor_ranked_total": 1.5}
    zipf = {**run["results"][1], "kind": "zipf"}
    zipf["ratios"] = {"cpu_floor_ranked": 4.5, "cpu_floor_ranked_total": 2.4}
    zipf["batch"] = {"cpu_ratio_to_floor_ranked_p50": 6.0, "cpu_ratio_to_floor_ranked_total": 3.5}
    runs = {"search": [{**run, "results": [zipf, common]}]}
    assert report.search_rows(runs)[10_000]["keyword"].median == 2.0
    assert report.search_rows(runs, "common")[10_000]["keyword"].median == 9.0
    rows = {row[0]: row for row in report.targets(runs)}
    ranked = "search ÷ bare FTS5 floor of the expression it ranks, p50, 10,000, {} vault"
    total = "search ÷ that floor, the whole query set (sums), 10,000, {} vault"
    batch = "`search --queries FILE --json` CPU ÷ its queries' floors, 10,000, {} vault"
    assert rows[ranked.format("zipf")][3] == "**miss**"
    assert rows[total.format("zipf")][3] == "**pass**"
    # the batch is judged against its own queries' floors, and shows the median-based figure
    assert rows[batch.format("zipf")][3] == "**miss**"
    assert "÷ p50 floor: 6.00×" in rows[batch.format("zipf")][2]
    for what in (ranked, total, batch):
        assert rows[what.format("common-word")][3] == "**pass**"


def test_write_makes_the_report_and_real_pngs(tmp_path: Path) -> None:
    meta = {
        "command": "bench/run --quick",
        "mode": "quick",
        "finished": "today",
        "git": "abc",
        "seconds": 90.0,
    }
    written = report.write(_runs(), meta, tmp_path / "REPORT.md", tmp_path / "plots")
    names = {p.name for p in written}
    assert {"search_latency.png", "locomo_recall.png", "locomo_payload.png", "REPORT.md"} <= names
    for png in (tmp_path / "plots").glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (tmp_path / "REPORT.md").read_text()
    assert "Test CPU, 2 cores, 8 GiB RAM" in text
    assert "![search latency against vault size](plots/search_latency.png)" in text
    assert "python bench/bench_search.py --sizes 1000,10000" in text
    assert "| memoryclaw `retrieve` (keyword) | 0.900 | 0.450 | 0.800 | 790 | 800 |" in text
    assert "| BM25 over single turns, packed | 0.800 | 0.400 | 0.700 | 790 | 800 |" in text
    assert "0.90 (n=156)" in text and "within one fact for 1.6% of questions" in text
    # A second run over the same data draws byte-identical plots (no timestamps inside).
    first = (tmp_path / "plots" / "search_latency.png").read_bytes()
    report.write(_runs(), meta, tmp_path / "REPORT.md", tmp_path / "plots")
    assert (tmp_path / "plots" / "search_latency.png").read_bytes() == first
