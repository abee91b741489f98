"""Recency and use (Clawpy's time-decayed recall, EvoClaw's decay and reinforcement): the
factor, the latest-state cue, and ranking through the API and the stdio server."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.errors import ConfigError
from memoryclaw.recall.recency import (
    LATEST_WEIGHT,
    USE_SHARE,
    Recency,
    asks_for_latest,
    decay,
    effective_weight,
)
from memoryclaw.vault.configcheck import settings_from_mapping

from ..line_client import line_client

T0 = datetime(2024, 6, 2, 10, tzinfo=timezone.utc)


@given(
    st.floats(min_value=0, max_value=10_000, allow_nan=False),
    st.floats(min_value=0, max_value=10_000, allow_nan=False),
    st.floats(min_value=0.5, max_value=3650, allow_nan=False),
)
def test_decay_is_in_0_1_and_falls_with_age(younger: float, older: float, half: float) -> None:
    younger, older = sorted((younger, older))
    assert 0 <= decay(older, half) <= decay(younger, half) <= 1
    assert decay(0, half) == 1 and decay(-5, half) == 1  # newer than the anchor: as new


def test_the_half_life_halves_and_tau_is_half_life_over_ln2() -> None:
    assert decay(30, 30) == pytest.approx(0.5)
    assert decay(60, 30) == pytest.approx(0.25)
    assert decay(10, 30) == pytest.approx(math.exp(-10 / (30 / math.log(2))))


@pytest.mark.parametrize(
    ("query", "latest"),
    [
        ("Where do I live now?", True),
        ("what is my current plan", True),
        ("the latest version of the deck", True),
        ("Does Ann still paint?", True),
        ("Is Bo not vegan anymore?", True),
        ("What did Ann paint?", False),
        ("When did John call about the knowledge base?", False),
        ("nowhere currentless", False),
        ("What is the rent I mentioned I'm currently paying?", False),
        ("Did I say that I still run?", False),
        ("What did I say about my job, and where do I work now?", True),
    ],
    ids=[
        "now",
        "current",
        "latest",
        "still",
        "anymore",
        "plain",
        "when",
        "word-parts",
        "as-mentioned",
        "as-said",
        "said-then-now",
    ],
)
def test_latest_state_questions(query: str, latest: bool) -> None:
    assert asks_for_latest(query) is latest
    assert effective_weight(0.0, query) == (LATEST_WEIGHT if latest else 0.0)
    assert effective_weight(0.8, query) == 0.8


def test_use_reinforces_a_little_and_never_past_new() -> None:
    ranker = Recency(1.0, 30, anchor=T0, now=T0, recalled={"old": T0})
    old = T0 - timedelta(days=90)
    assert ranker.factor(old, "old") == pytest.approx(decay(90, 30) + USE_SHARE)
    assert ranker.factor(old, "other") == pytest.approx(decay(90, 30))
    assert ranker.factor(T0, "old") == 1.0
    assert ranker.blend(2.0, 0.5) == pytest.approx(1.0)
    assert Recency(0.0, 30, T0, T0, {}).blend(2.0, 0.1) == 2.0


def test_the_recency_group_is_checked_like_every_setting() -> None:
    settings = settings_from_mapping(
        {"retrieval": {"recency": {"weight": 0.2, "halfLifeDays": 10}}},
        env={"MEMORYCLAW_RETRIEVAL_RECENCY_HALFLIFEDAYS": "7"},
    )
    assert (settings.retrieval.recency.weight, settings.retrieval.recency.half_life_days) == (
        0.2,
        7.0,
    )
    for bad, words in [
        ({"weight": 1.5}, "from 0 to 1"),
        ({"halfLife": 3}, "unknown key"),
        ({"halfLifeDays": 0}, ">= 1"),
    ]:
        with pytest.raises(ConfigError, match=words) as raised:
            settings_from_mapping({"retrieval": {"recency": bad}}, path="m.yaml")
        assert "retrieval.recency." in str(raised.value) and "m.yaml" in str(raised.value)
    with pytest.raises(ConfigError, match="mapping"):
        settings_from_mapping({"retrieval": {"recency": 0.3}}, path="m.yaml")


# ------------------------------------------------------------------ ranking

_BOSTON = "I live in Boston. I live by the harbour, and Boston is where I live and work."
_DENVER = "I moved to Denver last week; I live there now."


def _vault(root: Path, config: str = "") -> Vault:
    vault = Vault.init(root / "v", env={})
    if config:
        (vault.root / "memoryclaw.yaml").write_text(config, encoding="utf-8")
        vault.close()
        vault = Vault(root / "v", env={})
    for name, when, text in [
        ("ep-boston", "2023-01-10T10:00:00Z", _BOSTON),
        ("ep-denver", "2024-06-02T10:00:00Z", _DENVER),
    ]:
        (vault.root / "episodes" / f"{name}.md").write_text(
            f"---\nid: {name}\ntimestamp: {when}\nsummary: {text}\ntags: [home]\n---\n"
            f"- #1 User: {text}\n",
            encoding="utf-8",
        )
    return vault


def test_a_question_about_now_gets_the_newest_first(tmp_path: Path) -> None:
    with _vault(tmp_path) as vault:
        plain = vault.search("Where do I live?", now=T0)
        assert [e.id for e in plain.results] == ["ep-boston", "ep-denver"]  # relevance alone
        assert all(e.recency is None for e in plain.results)
        assert "recency" not in json.dumps(plain.as_dict())
        latest = vault.search("Where do I live now?", now=T0)
        assert [e.id for e in latest.results] == ["ep-denver", "ep-boston"]
        denver, boston = latest.results
        assert denver.recency == 1.0 and boston.recency == pytest.approx(decay(509, 30))
        assert latest.passages[0].episode_id == "ep-denver"
        for found in (plain, latest):  # a line's relevance is of its score after recency
            best = found.passages[0].score
            assert [p.relevance for p in found.passages] == [
                min(1.0, p.score / best) for p in found.passages
            ]
        shown = latest.as_dict()["results"][1]
        assert shown["recency"] == round(boston.recency, 2)
        payload = vault.retrieve("Where do I live now?", now=T0)
        quoted = [line for line in payload.context.splitlines() if line.startswith("  #")]
        assert "Denver" in quoted[0]  # the old address, if shown at all, comes after


def test_a_weight_ranks_by_recency_and_use(tmp_path: Path) -> None:
    config = "retrieval:\n  recency: {weight: 0.9, halfLifeDays: 30}\n"
    with _vault(tmp_path, config) as vault:
        found = vault.search("Where do I live?", now=T0).results
        assert [e.id for e in found] == ["ep-denver", "ep-boston"]
        assert found[1].recency == pytest.approx(decay(509, 30))
        # recalled this morning, the older memory is reinforced by USE_SHARE
        (vault.root / ".memoryclaw" / "recall.json").write_text(
            json.dumps(
                {"since": "2024-01-01T00:00:00Z", "episodes": {"ep-boston": "2024-06-02T10:00:00Z"}}
            ),
            encoding="utf-8",
        )
        used = {e.id: e for e in vault.search("Where do I live?", now=T0).results}
        assert used["ep-boston"].recency == pytest.approx(decay(509, 30) + USE_SHARE)
        assert used["ep-boston"].score > found[1].score


def test_recency_through_the_stdio_server(tmp_path: Path) -> None:
    _vault(tmp_path).close()
    with line_client(tmp_path / "v", "serve", "--stdio") as client:
        ask = json.dumps({"id": 1, "method": "search", "params": {"query": "Where do I live now?"}})
        reply = client.ask(ask.encode())
        results = reply["result"]["results"]
        assert [r["id"] for r in results] == ["ep-denver", "ep-boston"]
        assert results[0]["recency"] == 1.0 and results[1]["recency"] < 0.01
        ask = json.dumps({"id": 2, "method": "search", "params": {"query": "Where do I live?"}})
        plain = client.ask(ask.encode())["result"]["results"]
        assert [r["id"] for r in plain] == ["ep-boston", "ep-denver"]
        assert client.finish() == ""


def test_the_terminal_explains_recency(tmp_path: Path) -> None:
    _vault(tmp_path).close()
    done = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(tmp_path / "v"), "search", "live now"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "; recency 1.00" in done.stdout and "; recency 0.00" in done.stdout
