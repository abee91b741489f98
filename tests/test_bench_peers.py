"""bench/peers.py's own parts: packing to the budget, a peer skipped with its reason, and the
report section (the peers themselves are measured by the benchmark, not here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import peers  # noqa: E402
import report  # noqa: E402


@given(st.lists(st.text(max_size=900), max_size=30), st.integers(min_value=10, max_value=900))
def test_a_payload_never_exceeds_the_budget(texts: list[str], budget: int) -> None:
    body, tokens = peers.pack(texts, budget)
    assert tokens == -(-len(body) // 4) <= budget
    kept = body.removeprefix("<memory>\n").removesuffix("\n</memory>").split("\n")
    assert not body or all(line in "\n".join(texts) for line in kept)


def test_packing_keeps_order_and_skips_what_does_not_fit() -> None:
    body, _ = peers.pack(["first", "x" * 5000, "second"], budget=20)
    assert body == "<memory>\nfirst\nsecond\n</memory>"
    assert peers.pack([" ", ""], budget=20) == ("", 0)


def test_qmd_hits_read_as_title_and_snippet() -> None:
    hit = {"title": "Session 2, 25 May 2023", "snippet": "@@ -2,4 @@ (1 before)\n\nMel: ran\n"}
    assert peers.qmd_text(hit) == "Session 2, 25 May 2023\nMel: ran"
    assert peers.keywords("When did Melanie run a charity race?") == "charity melanie race run"


def test_a_python_peer_that_cannot_be_had_is_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYCLAW_PEERS_CACHE", str(tmp_path))
    with pytest.raises(peers.Skipped, match=r"needs Python >= 3\.99"):
        peers.python_peer("future", "future-memory", (3, 99), ("future", "--help"))
    assert not list(tmp_path.iterdir())  # nothing installed, nothing left behind


def test_the_peers_section_shows_every_system_speed_and_skips() -> None:
    rates = {
        "evidence_in_payload": 0.9,
        "answer_in_payload": 0.6,
        "answer_token_recall": 0.78,
        "tokens_mean": 728.0,
    }
    figures = {"index_s": 1.5, "index_peak_mib": 60.0, "search_p50_ms": 175.0}
    found = {
        "machine": "x86_64, 2 cores, Python 3.11.7",
        "quality": {"memoryclaw `retrieve` (keyword)": rates, "qmd `search` (keywords)": rates},
        "speed": {
            "1000": {"qmd": {**figures, "search_peak_mib": 136.0}},
            "100000": {"basic-memory": {"skipped": "not measured: indexing did not finish"}},
        },
        "skipped": {"basic-memory": "needs Python >= 3.12"},
        "versions": {"qmd": "2.8.3"},
    }
    lines = "\n".join(report.peers_section(found, ["peers.png"], "bench/peers.py"))
    assert "| qmd `search` (keywords) | 0.900 | 0.600 | 0.780 | 728 |" in lines
    assert "| 1,000 | qmd | 1.50 s | 175 ms | — | 136 MiB |" in lines
    assert "| 100,000 | basic-memory | not measured: indexing did not finish |" in lines
    assert "- basic-memory: needs Python >= 3.12" in lines and "qmd 2.8.3" in lines
    assert "plots/peers.png" in lines
    assert report.peers_section({"quality": {}}, [], "x") == []


def test_a_command_over_its_time_limit_is_stopped() -> None:
    with pytest.raises(peers.TooSlow, match="stopped after"):
        peers.peak_rss_run([sys.executable, "-c", "import time; time.sleep(30)"], limit_s=0.5)
    wall, kib, out = peers.peak_rss_run([sys.executable, "-c", "print('done')"], limit_s=30)
    assert out == "done\n" and 0 < wall < 30 and kib > 0


def test_a_peer_too_slow_or_failing_at_one_size_is_left_out_of_the_larger_ones() -> None:
    left_out: dict[str, str] = {}
    assert peers._measured("qmd", 1_000, left_out, lambda: {"index_s": 1.0}) == {"index_s": 1.0}

    def too_slow() -> dict[str, float]:
        raise peers.TooSlow("stopped after 600 s")

    def failing() -> dict[str, float]:
        raise RuntimeError("basic-memory reindex failed: boom")

    limit = "did not finish within 10 minutes"
    assert peers._measured("qmd", 10_000, left_out, too_slow) == {
        "skipped": f"not measured: indexing {limit}"
    }
    assert peers._measured("qmd", 100_000, left_out, lambda: {"index_s": 1.0}) == {
        "skipped": f"not measured: indexing 10,000 episodes {limit}"
    }
    found = peers._measured("basic-memory", 1_000, left_out, failing)
    assert found == {"skipped": "not measured: it failed: basic-memory reindex failed: boom"}
    assert (
        "failed at 1,000 episodes"
        in peers._measured("basic-memory", 10_000, left_out, failing)["skipped"]
    )
    peers._measured("slow", 10_000, left_out, lambda: {"index_s": 700.0})
    assert peers._measured("slow", 100_000, left_out, lambda: {"index_s": 1.0}) == {
        "skipped": "not measured: indexing 10,000 episodes took 700 s"
    }
