"""bench/beam.py's own parts: reading a BEAM chat as the reference scorer does, its packers,
one small chat scored end to end through a real vault, and the report section."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import beam  # noqa: E402
import report  # noqa: E402

CHAT = [
    {
        "batch_number": 1,
        "time_anchor": "ignored-by-the-reference",
        "turns": [
            [
                {
                    "role": "user",
                    "id": 0,
                    "time_anchor": "March-15-2024",
                    "content": "My sourdough starter is named Bubbles ->-> 1,2",
                },
                {"role": "assistant", "id": 1, "content": "A fine name for a starter."},
            ],
            [{"role": "user", "id": 2, "content": " ->-> 1,3"}],
        ],
    },
    {
        "batch_number": 2,
        "turns": [
            [
                {"role": "user", "id": 3, "time_anchor": "not a date", "content": "Hello again"},
                {"role": "assistant", "id": 4, "content": "Welcome back."},
            ]
        ],
    },
]
PROBES = {
    "information_extraction": [
        {"question": "What is my sourdough starter named?", "source_chat_ids": {"b1": [0]}}
    ],
    "abstention": [{"question": "What is my cat named?"}],
    "summarization": [{"question": "Summarize our chats.", "source_chat_ids": "99"}],
}


@pytest.mark.parametrize(
    ("value", "ids"),
    [
        (7, [7]),
        ("[3, 12]", [3, 12]),
        ({"first": [1, 2], "second": {"x": "4"}}, [1, 2, 4]),
        (None, []),
    ],
    ids=["int", "string", "nested", "none"],
)
def test_source_ids_are_read_however_they_nest(value: Any, ids: list[int]) -> None:
    assert beam.flat_ids(value) == ids


def test_a_chat_reads_as_one_session_per_batch_with_anchored_timestamps() -> None:
    chat = beam.read_chat(CHAT, "beam-500K-21")
    assert chat.where == {
        0: ("beam-500K-21:b1", 1),
        1: ("beam-500K-21:b1", 2),
        2: ("beam-500K-21:b1", 3),
        3: ("beam-500K-21:b2", 1),
        4: ("beam-500K-21:b2", 2),
    }
    assert chat.text[0] == "My sourdough starter is named Bubbles"  # the turn marker is gone
    assert chat.text[2] == "(empty)"
    stamps = [r["timestamp"] for r in chat.records]
    # the anchor holds until the next one that reads as a date; one minute per turn
    assert stamps == [
        "2024-03-15T00:01:00Z",
        "2024-03-15T00:02:00Z",
        "2024-03-15T00:03:00Z",
        "2024-03-15T00:01:00Z",
        "2024-03-15T00:02:00Z",
    ]
    assert beam.anchor("Jan-05-2024", datetime(2000, 1, 1)) == datetime(2024, 1, 5)
    assert beam.chat_range("21-23") == range(21, 24) and beam.chat_range("30") == range(30, 31)


def test_only_questions_that_cite_evidence_are_asked() -> None:
    asked = beam.probing_questions(PROBES)
    assert [ability for ability, _ in asked] == ["information_extraction", "summarization"]


def test_the_packer_drops_a_chunk_that_does_not_fit() -> None:
    messages = [("user", "sourdough " * 400), ("assistant", "sourdough starter Bubbles")]
    pack = beam.message_packer(messages, 1, budget=100)
    assert pack("What is my sourdough starter named?") == "assistant: sourdough starter Bubbles"
    assert beam.message_packer(messages, 8, budget=100)("sourdough starter?") == ""


def test_a_small_chat_is_scored_end_to_end_and_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "500K" / "21").mkdir(parents=True)
    (data / "500K" / "21" / "chat.json").write_text(json.dumps(CHAT))
    (data / "500K" / "21" / "probing_questions.json").write_text(json.dumps(PROBES))
    out = tmp_path / "out"
    assert beam.main(["--chats", "21", "--data", str(data), "--out", str(out)]) == 0
    saved = json.loads((out / "beam.json").read_text())
    found = saved["sizes"][0]
    # the summarization question cites no message of the chat: asked, not counted
    assert found["questions"] == 1 and found["episodes"] >= 1
    assert found["evidence_in_payload"]["bm25_msgs"] == 1.0
    assert found["by_ability"]["information_extraction"]["n"] == 1
    lines = "\n".join(report.beam_section(saved))
    assert "## BEAM dev" in lines and "| information extraction | 1 |" in lines
    assert "| BM25 over single messages | 1.000 |" in lines
    assert report.beam_section({}) == []
