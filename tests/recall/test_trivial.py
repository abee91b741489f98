"""Trivial messages (greetings, thanks, fillers, emoji) recall nothing, by every route."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.recall.trivial import TRIVIAL_WORDS, is_trivial, is_trivial_word
from memoryclaw.serve.hooks import MemoryHooks
from memoryclaw.serve.stdio import StdioServer

from ..conftest import NOW

TRIVIAL = [
    "ok thanks, sounds great 👍",
    "hi!",
    "lol",
    "sure",
    "Thank you so much!!",
    "hahahaha",
    "LOOOL 😂😂",
    "good night 😴",
    "👍🏽",
    "❤️\u200d🔥🙏",
    "okkk cool, got it.",
    "  ",
]
NOT_TRIVIAL = [
    "John's email?",
    "ok, send it",
    "thanks, and the dentist?",
    "what is up",
    "hi, when is my flight to Berlin?",
    "sounds great, book it for 5pm",
    "2025-04-10",
    "yes to Lisbon",
]


@pytest.mark.parametrize("text", TRIVIAL, ids=range(len(TRIVIAL)))
def test_greetings_thanks_fillers_and_emoji_are_trivial(text: str) -> None:
    assert is_trivial(text)


@pytest.mark.parametrize("text", NOT_TRIVIAL, ids=range(len(NOT_TRIVIAL)))
def test_a_message_with_a_topic_is_not_trivial_however_short(text: str) -> None:
    assert not is_trivial(text)


_LISTED = st.sampled_from(sorted(TRIVIAL_WORDS))
_FILLER = st.sampled_from([" ", ", ", "! ", "... ", " 👍 ", " 😂", "?", " 🙏🏽 "])
_WORD = st.text(st.characters(whitelist_categories=("Ll",)), min_size=2, max_size=12)


@given(st.lists(st.tuples(_LISTED, _FILLER), max_size=8), _WORD, st.integers(0, 8))
def test_any_unlisted_word_makes_a_message_not_trivial(
    around: list[tuple[str, str]], word: str, at: int
) -> None:
    if is_trivial_word(word):
        return  # a listed word or laughter ("hahaha") is not a topic
    parts = [w + f for w, f in around]
    parts.insert(min(at, len(parts)), word + " ")
    assert not is_trivial("".join(parts))
    assert is_trivial("".join(w + f for w, f in around))


@given(st.text(st.characters(whitelist_categories=("So", "Sk", "Po", "Zs")), max_size=20))
def test_emoji_symbols_and_punctuation_only_are_trivial(text: str) -> None:
    assert is_trivial(text)


def _vault(tmp_path: Path) -> Vault:
    """A vault whose one episode matches "sounds great" and "pelican"."""
    vault = Vault.init(tmp_path / "v", env={})
    (vault.root / "episodes" / "2025-01-01_10-00-00_pelican.md").write_text(
        "---\nid: ep-pelican\ntimestamp: 2025-01-01T10:00:00Z\nsummary: Pelican lunch plan\n"
        "---\n- #1 Ann: the pelican lunch sounds great, thanks\n",
        encoding="utf-8",
    )
    return vault


def test_retrieve_skips_a_trivial_message_without_searching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _vault(tmp_path) as vault:
        # without the filter "sounds great" would match the episode's line
        assert "pelican lunch" in vault.retrieve("sounds great pelican", now=NOW).context
        monkeypatch.setattr(vault, "search", _no_search)
        doc = vault.retrieve("ok thanks, sounds great 👍", now=NOW).as_dict()
        assert (doc["context"], doc["skipped"], doc["tokens"]) == ("", "trivial", 0)
        assert doc["episodes"] == doc["facts"] == doc["passages"] == []


def _no_search(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("a trivial message must not be searched")


def test_a_real_question_is_not_skipped(vault: Vault) -> None:
    doc = vault.retrieve("John's email?", now=NOW).as_dict()
    assert "skipped" not in doc and "john@example.com" in doc["context"]


def test_the_server_skips_a_trivial_message(tmp_path: Path) -> None:
    _vault(tmp_path).close()
    bridge = StdioServer(tmp_path / "v", env={})
    reply = bridge.handle(json.dumps({"id": 1, "method": "retrieve", "params": {"query": "lol"}}))
    assert reply["result"]["skipped"] == "trivial" and reply["result"]["context"] == ""


def test_the_real_server_process_skips_thanks_and_recalls_a_question(tmp_path: Path) -> None:
    _vault(tmp_path).close()
    requests = [
        {"id": 1, "method": "retrieve", "params": {"query": "thanks, sounds great!"}},
        {"id": 2, "method": "retrieve", "params": {"query": "pelican?"}},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(tmp_path / "v"), "serve", "--stdio"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    replies = {r["id"]: r["result"] for r in map(json.loads, proc.stdout.splitlines())}
    assert replies[1]["skipped"] == "trivial" and replies[1]["context"] == ""
    assert "skipped" not in replies[2] and "pelican lunch" in replies[2]["context"]


def test_the_hook_injects_nothing_for_a_trivial_message(tmp_path: Path) -> None:
    _vault(tmp_path).close()
    with MemoryHooks(tmp_path / "v", env={}) as hooks:
        assert hooks.before_model("sounds great, thanks 🙏") is None
        payload = hooks.retrieve("great!")
        assert payload is not None and payload.skipped == "trivial"
        assert hooks.before_model("the pelican?") is not None


def test_a_trivial_message_leaves_the_sessions_working_memory_as_it_was(vault_dir: Path) -> None:
    with MemoryHooks(vault_dir, env={}) as hooks:
        asked = hooks.retrieve("What is John's email?", session="s")
        assert asked is not None and asked.working_memory["goal"] == "What is John's email?"
        thanked = hooks.retrieve("thanks!", session="s")
        assert thanked is not None and thanked.skipped == "trivial"
        assert thanked.working_memory == asked.working_memory  # "thanks!" is not the new goal
