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

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Mel",
        "speaker_b": "Caro",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Mel", "dia_id": "D1:1", "text": "I ran a charity race"}],
    },
    "qa": [
        {"question": "What did Mel run?", "answer": "a charity race", "evidence": ["D1:1"]},
        {"question": "Who?", "category": 5, "evidence": ["D1:1"]},
    ],
}


@given(st.lists(st.text(max_size=900), max_size=30), st.integers(min_value=10, max_value=900))
def test_a_payload_never_exceeds_the_budget(texts: list[str], budget: int) -> None:
    body, tokens = peers.pack(texts, budget)
    assert tokens == -(-len(body) // 4) <= budget
    kept = body.removeprefix("<memory>\n").removesuffix("\n</memory>").split("\n")
    assert not body or all(line in "\n".join(texts) for line in kept)


def test_packing_as_shipped_keeps_order_and_skips_what_does_not_fit() -> None:
    body, _ = peers.pack(["first", "x" * 5000, "second"], budget=20, trim=False)
    assert body == "<memory>\nfirst\nsecond\n</memory>"
    assert peers.pack([" ", ""], budget=20) == ("", 0)


@pytest.mark.parametrize(
    ("texts", "kept"),
    [
        (["first", "a whole note " * 50, "second"], "first\n" + ("a whole note " * 4) + "a"),
        (["x" * 5000], "x" * 61),
        (["first " * 5, "late"], ("first " * 5).strip() + "\nlate"),
    ],
    ids=["a-note-larger-than-the-budget-is-cut-at-a-word", "one-long-word-is-cut", "all-fit"],
)
def test_packing_cuts_the_first_result_that_does_not_fit_and_stops(
    texts: list[str], kept: str
) -> None:
    body, tokens = peers.pack(texts, budget=20)
    assert body == f"<memory>\n{kept}\n</memory>" and tokens <= 20


def test_the_packers_show_dates_as_people_write_them_unless_asked_for_iso() -> None:
    sample = SAMPLE
    human = peers.packer(sample, 1)("When did Mel run the charity race?")
    assert "8 May 2023 Mel: I ran a charity race" in human
    iso = peers.packer(sample, 1, dates="iso")("When did Mel run the charity race?")
    assert "2023-05-08 Mel: I ran a charity race" in iso
    assert peers.packer(sample, 8)("What is it?") == ""  # no content word, nothing packed


def test_qmd_asked_once_per_keyword_merges_files_by_summed_score() -> None:
    race = [{"file": "qmd://c/s2.md", "title": "Session 2", "score": 0.8, "snippet": "@@ x\nran"}]
    melanie = [
        {"file": "qmd://c/s1.md", "title": "Session 1", "score": 0.9, "snippet": "Mel: hi"},
        {"file": "qmd://c/s2.md", "title": "Session 2", "score": 0.5, "snippet": "Mel: the race"},
        {"file": "qmd://c/s3.md", "title": "Session 3", "score": 0.9, "snippet": "Mel: bye"},
    ]
    assert peers.merged_per_keyword([race, melanie]) == [
        "Session 2\nran\nMel: the race",
        "Session 1\nMel: hi",
        "Session 3\nMel: bye",
    ]
    assert peers.merged_per_keyword([[], []]) == []


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
    assert "Quality: LoCoMo dev," in lines  # a run that did not record its data set
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


def test_the_peers_section_names_its_data_set_and_shows_shipped_figures_beside_fair_ones(
    tmp_path: Path,
) -> None:
    data = tmp_path / "locomo-test.json"
    assert peers.data_set(data, [SAMPLE]) == {
        "file": "locomo-test.json",
        "conversations": ["conv-x"],
        "questions": 1,
    }
    rates = {
        "evidence_in_payload": 0.652,
        "answer_in_payload": 0.5,
        "answer_token_recall": 0.6,
        "tokens_mean": 700.0,
    }
    found = {
        "machine": "x86_64, 2 cores, Python 3.11.7",
        "data": {**peers.data_set(data, [SAMPLE]), "questions": 1540},
        "quality": {"basic-memory `search_notes` (keywords)": rates, "qmd merged": rates},
        "quality_as_shipped": {
            "basic-memory `search_notes` (keywords)": {
                **rates,
                "evidence_in_payload": 0.435,
                "tokens_mean": 453.0,
            }
        },
    }
    lines = "\n".join(report.peers_section(found, [], "bench/peers.py --data x"))
    assert "Quality: `locomo-test.json` (1 conversation: conv-x; 1,540 questions)" in lines
    assert "LoCoMo dev" not in lines
    assert (
        "| basic-memory `search_notes` (keywords) | 0.652 (0.435) | 0.500 (0.500) "
        "| 0.600 (0.600) | 700 (453) |"
    ) in lines
    assert "| qmd merged | 0.652 | 0.500 | 0.600 | 700 |" in lines
    assert "Speed on" not in lines  # a run without speed sizes has no speed table
