"""Keyword extraction, ranking, explanations, facts and the budgeted payload."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryclaw import Vault
from memoryclaw.errors import InvalidInputError
from memoryclaw.recall.passages import PASSAGE_SOURCES
from memoryclaw.recall.payload import estimate_tokens, render_payload
from memoryclaw.recall.plan import (
    MAX_QUERY_BYTES,
    MAX_QUERY_TERMS,
    check_query,
    compound_parts,
    fts_phrase,
    plan_query,
    query_head,
)
from memoryclaw.recall.retrieval import passage_neighbours
from memoryclaw.vault.words import _NOT_WORD_RE, _WHOLE_TOKEN_RE, _WORD_RE, extract_keywords

from ..conftest import NOW


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did I email John about?", ["email", "john"]),
        ("Send it to john@example.com by 2025-04-10", ["send", "john@example.com", "2025-04-10"]),
        ("open ~/notes/todo.md and docs/plan.txt", ["~/notes/todo.md", "docs/plan.txt", "open"]),
        ("John's budget: 1,200.50 dollars", ["john", "budget", "1,200.50", "dollars"]),
        ("the Q3 campaign-team review", ["q3", "campaign-team", "review"]),
        ("a I x", []),
        ("", []),
        ("Email EMAIL email", ["email"]),
        ("Mel’s pottery-class—it’s fun, isn't it?!", ["mel", "pottery-class", "fun"]),
        ("Mel’s 2 pottery-classes at 10:30", ["mel", "pottery-classes", "10:30"]),
    ],
    ids=[
        "stopwords",
        "email-date",
        "paths",
        "possessive-number",
        "hyphen",
        "short",
        "empty",
        "dedup",
        "words-only",
        "words-and-a-number",
    ],
)
def test_extract_keywords(query: str, expected: list[str]) -> None:
    assert sorted(extract_keywords(query)) == sorted(expected)


def test_keywords_keep_order_of_appearance() -> None:
    assert extract_keywords("zebra apple mango") == ["zebra", "apple", "mango"]


@given(st.text(alphabet=st.sampled_from("ab Zé’'-.,:!?_@/~+3٣\n"), max_size=40) | st.text())
@settings(max_examples=500, deadline=None)
def test_a_text_without_a_digit_at_or_slash_reads_as_words_alone(query: str) -> None:
    text = query.lower()
    if not _NOT_WORD_RE.search(text):
        assert _WORD_RE.findall(text) == _WHOLE_TOKEN_RE.findall(text)


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_keywords_are_lowercase_long_and_no_stopwords(query: str) -> None:
    keywords = extract_keywords(query)
    assert len(keywords) == len(set(keywords))
    for keyword in keywords:
        assert keyword == keyword.lower()
        assert len(keyword) >= 2
        assert keyword not in {"the", "what", "did", "about"}


@given(st.text(max_size=100))
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_text_is_a_safe_query(vault: Vault, query: str) -> None:
    vault.search(query, now=NOW)  # FTS5 syntax in user text must never raise


def test_fts_phrase_quotes_tokens() -> None:
    assert fts_phrase("john@example.com") == '"john example com"'
    assert fts_phrase('say "hi" OR NOT') == '"say hi OR NOT"'
    assert fts_phrase("!!!") is None


def test_email_john_query(vault: Vault) -> None:
    result = vault.search("what did I email John about", now=NOW)
    ids = [r.id for r in result.results]
    assert "ep-20250408-143210-email-john" in ids
    for episode in result.results[:4]:
        assert set(episode.matched) >= {"email", "john"}
        assert episode.via == "keyword"
        assert "email" in episode.exact_tags
    john = [(f.field, f.value) for f in result.facts if f.entity == "John"]
    assert ("email", "john@example.com") in john


def test_results_are_sorted_by_score_then_newer(vault: Vault) -> None:
    results = vault.search("email john", now=NOW, limit=10).results
    keys = [(-round(r.score, 9), r.timestamp) for r in results]
    for first, second in pairwise(keys):
        assert first[0] < second[0] or (first[0] == second[0] and first[1] >= second[1])


def test_exact_tag_outranks_body_mention(vault: Vault) -> None:
    results = vault.search("invoice", now=NOW).results
    assert results[0].id == "ep-20250402-124018-freelance-invoice"
    assert results[0].exact_tags == ("invoice",)
    body_only = [r for r in results if r.id == "ep-20250115-194002-dentist-appointment"]
    assert body_only and body_only[0].exact_tags == ()
    assert body_only[0].score < results[0].score


def test_alias_expansion_finds_paraphrase(vault: Vault) -> None:
    result = vault.search("that budget conversation with marketing", now=NOW)
    assert "campaign-team" in result.plan.expansions["marketing"]
    assert result.results[0].id == "ep-20250708-160552-q3-budget-review"
    assert "campaign-team" in result.results[0].matched


def test_alias_expansion_works_backwards(vault: Vault) -> None:
    plan = vault.search("campaign-team", now=NOW).plan
    assert "marketing" in plan.expansions["campaign-team"]


def test_fact_age_in_days(vault: Vault) -> None:
    facts = vault.search("Dentist Sarah John", now=NOW).facts
    assert facts
    for fact in facts:
        assert fact.age_days == max(0, (NOW.date() - date.fromisoformat(fact.updated)).days)
    assert any(f.source != "hand" and f.age_days and f.age_days > 30 for f in facts)


def test_no_keywords_no_results(vault: Vault) -> None:
    result = vault.search("what is the", now=NOW)
    assert result.plan.keywords == () and result.results == () and result.facts == ()


def test_limit_is_respected(vault: Vault) -> None:
    assert len(vault.search("falcon", limit=3, now=NOW).results) == 3
    assert vault.search("falcon", limit=0, now=NOW).results == ()


def test_search_is_deterministic(vault: Vault) -> None:
    first = vault.search("flight lisbon conference", now=NOW).as_dict()
    second = vault.search("flight lisbon conference", now=NOW).as_dict()
    first.pop("took_ms"), second.pop("took_ms")
    assert first == second


@pytest.mark.parametrize("budget", [1, 10, 30, 60, 120, 200, 800, 5000], ids=str)
def test_payload_never_exceeds_budget(vault: Vault, budget: int) -> None:
    result = vault.search("email John projectX deadline", now=NOW)
    payload = render_payload(result, budget)
    assert payload.tokens <= budget
    assert payload.tokens == estimate_tokens(payload.context)
    if payload.context:
        assert payload.context.startswith("<memoryclaw>\n")
        assert payload.context.endswith("\n</memoryclaw>")


def test_payload_holds_facts_and_episodes(vault: Vault) -> None:
    payload = vault.retrieve("what did I email John about", now=NOW)
    assert "John email john@example.com" in payload.context
    header = "- ep-20250408-143210-email-john (8 April 2025): User asked to send a project update"
    assert header in payload.context
    assert "  Recipient: John <john@example.com>, cc Sarah <sarah@example.com>" in payload.context
    memory = payload.working_memory
    assert memory["goal"] == "what did I email John about"
    assert memory["facts"]["John email"] == "john@example.com"
    assert len(memory["recent_observations"]) == len(payload.episodes)
    assert payload.budget == 800


def test_tiny_budget_drops_everything_rather_than_overflowing(vault: Vault) -> None:
    payload = vault.retrieve("email John", now=NOW)
    tiny = render_payload(payload.search, 5) if payload.search else None
    assert tiny is not None and tiny.context == "" and tiny.tokens == 0


@given(budget=st.integers(min_value=0, max_value=1200), query=st.text(max_size=60))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_payload_budget_property(vault: Vault, budget: int, query: str) -> None:
    result = vault.search(query + " john email falcon", now=NOW)
    assert render_payload(result, budget).tokens <= budget


def test_common_terms_are_left_out_of_ranking_in_large_vaults(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memoryclaw.recall.plan.PRUNE_FROM_EPISODES", 10)
    monkeypatch.setattr("memoryclaw.recall.plan.COMMON_SHARE", 0.2)
    result = vault.search("falcon lisbon", now=NOW, limit=10)
    assert result.plan.common == ("falcon",)
    assert result.as_dict()["common"] == ["falcon"]
    assert result.results and all(set(r.matched) - {"falcon"} for r in result.results)
    assert any("falcon" in r.matched for r in result.results)  # still explained in full


def test_a_query_of_only_common_terms_keeps_them(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memoryclaw.recall.plan.PRUNE_FROM_EPISODES", 10)
    monkeypatch.setattr("memoryclaw.recall.plan.COMMON_SHARE", 0.2)
    result = vault.search("falcon", now=NOW)
    assert result.plan.common == () and len(result.results) == 5


def test_small_vaults_rank_with_every_term(vault: Vault) -> None:
    assert vault.search("falcon lisbon", now=NOW).plan.common == ()


def _words(count: int) -> str:
    """``count`` distinct made-up words (none a stopword), then a topic the vault knows."""
    letters = "bcdfghjklmnpqrstvwxz"
    made_up = ("".join(letters[(n // 20**k) % 20] for k in range(4)) + "o" for n in range(count))
    return " ".join(made_up)


@pytest.mark.parametrize("count", [200, 80_000], ids=["200-words", "80k-words"])
def test_a_long_query_is_planned_from_a_bounded_head_and_says_so(vault: Vault, count: int) -> None:
    """An 80,000-word query once took tens of seconds to plan (every keyword, every adjacent
    pair looked up, all of them in one FTS5 expression) and blocked the stdio server: only
    its first MAX_QUERY_BYTES bytes and MAX_QUERY_TERMS keywords are used, and it says so."""
    query = "what did I email John about " + _words(count)
    plan = plan_query(query, vault.index)
    assert plan.truncated and len(plan.keywords) == MAX_QUERY_TERMS
    assert plan.keywords[:2] == ("email", "john")  # the head is what is kept
    assert plan.match is not None and plan.match.count(" OR ") < 2 * MAX_QUERY_TERMS
    payload = vault.retrieve(query, now=NOW).as_dict()
    assert payload["query_truncated"] is True and "john@example.com" in payload["context"]
    assert "query_truncated" not in vault.retrieve("email John", now=NOW).as_dict()


def test_search_refuses_a_query_over_the_byte_limit_and_retrieve_reads_its_head() -> None:
    fits = "é" * (MAX_QUERY_BYTES // 2)
    check_query(fits)
    assert query_head(fits) == fits
    with pytest.raises(InvalidInputError, match=rf"^query: {MAX_QUERY_BYTES + 2} bytes, over"):
        check_query(fits + "é")
    head = query_head("word " * MAX_QUERY_BYTES)
    assert len(head.encode()) <= MAX_QUERY_BYTES and head.endswith("word")
    assert query_head("é" * MAX_QUERY_BYTES) == "é" * (MAX_QUERY_BYTES // 2)  # no half character


def test_the_command_line_refuses_a_long_search_and_retrieves_from_a_long_message(
    vault: Vault,
) -> None:
    query = "what did I email John about " + "lorem ipsum dolor " * 2_000
    base = [sys.executable, "-m", "memoryclaw", "--vault", str(vault.root)]
    refused = subprocess.run([*base, "search", query], capture_output=True, text=True)
    assert refused.returncode == 1
    assert (
        refused.stderr.startswith("memoryclaw: error: query: ") and refused.stderr.count("\n") == 1
    )
    done = subprocess.run([*base, "retrieve", query, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["query_truncated"] is True


def test_a_new_log_named_like_a_consolidated_one_is_still_recent(empty_vault: Vault) -> None:
    """A group's log consolidated, then a cron run's log started in the same second on the
    same channel: the new log takes a name of its own (not its predecessor's in
    ``logs/processed/``), so none of its turns is taken for consolidated already."""
    vault, group, cron = empty_vault, "agent:main:telegram:group:-100", "agent:main:cron:tides"
    for n, text in enumerate(["The heron count at the marsh is twelve.", "Noted, twelve herons."]):
        role = "user" if n == 0 else "assistant"
        vault.log_turn(group, role, text, channel="telegram", timestamp=NOW)
    vault.end_session(group)
    assert vault.consolidate(all_logs=True).episodes
    logged = vault.log_turn(
        cron, "user", "The kestrel survey starts Monday.", channel="telegram", timestamp=NOW
    )
    vault.log_turn(cron, "assistant", "Kestrel survey noted.", channel="telegram", timestamp=NOW)
    assert not (vault.root / "logs" / "processed" / logged.path.split("/")[-1]).exists()
    recent = vault.search("kestrel survey").as_dict()["recent"]
    assert {p["text"] for p in recent if p["path"] == logged.path} == {
        "The kestrel survey starts Monday.",
        "Kestrel survey noted.",
    }
    assert "The kestrel survey starts Monday." in vault.retrieve("kestrel survey").context


def test_the_lines_around_each_passage_are_read_in_one_statement(vault: Vault) -> None:
    """Recall quotes the lines next to a query's best lines every turn: all of them are one
    statement, and each passage gets the line before and after it in its own file."""
    passages = vault.search("John email", now=NOW).passages[:20]
    statements: list[str] = []
    vault.index.conn.set_trace_callback(statements.append)
    near = passage_neighbours(vault.index, passages)
    vault.index.conn.set_trace_callback(None)
    assert len(passages) == 20 and len(statements) == 1
    assert set(near) == {(p.path, p.line) for p in passages}
    for passage in passages:
        expected = vault.index.execute(
            "SELECT turn, line, speaker, text, timestamp FROM passages"
            " WHERE path = ? AND line IN (?, ?) ORDER BY line",
            [passage.path, passage.line - 1, passage.line + 1],
        ).fetchall()
        found = near[(passage.path, passage.line)]
        assert [(n.turn, n.line, n.speaker, n.text, n.timestamp) for n in found] == expected
        for neighbour in found:
            assert (neighbour.path, neighbour.episode_id, neighbour.via) == (
                passage.path,
                passage.episode_id,
                passage.via,
            )
            assert (neighbour.score, neighbour.matched) == (0.0, ())
    # lines next to each other are both passages and each other's neighbours
    assert any(len(found) == 2 for found in near.values())


def test_a_compound_word_finds_the_lines_that_say_its_words(empty_vault: Vault) -> None:
    (empty_vault.root / "episodes" / "2025-01-02_10-00-00_x.md").write_text(
        "---\nid: ep-20250102-100000-00000001\ntimestamp: 2025-01-02T10:00:00Z\n"
        "summary: weekend\n---\n- #1 User: I coached the basketball team on Saturday\n",
        encoding="utf-8",
    )
    plan = plan_query("my basketball-related weekends", empty_vault.index)
    assert {"basketball-related", "basketball", "related"} <= set(plan.terms)
    assert plan_query("my covid-19 test", empty_vault.index).terms == ("covid-19", "test")
    found = empty_vault.search("What were my basketball-related plans?", now=NOW)
    assert [p.text for p in found.passages] == ["I coached the basketball team on Saturday"]


@pytest.mark.parametrize(
    ("compound", "parts"),
    [
        ("phase-two", ["phase"]),
        ("first-time", ["time"]),
        ("three-day", ["day"]),
        ("basketball-related", ["basketball", "related"]),
    ],
    ids=["number", "ordinal", "count", "words"],
)
def test_a_compound_is_searched_by_its_words_that_name_something(
    compound: str, parts: list[str]
) -> None:
    assert compound_parts([compound]) == {compound: parts}


def test_a_number_of_a_compound_alone_finds_no_episode(vault: Vault) -> None:
    """ "two" of "phase-two" is no reason to recall the hotel booked for two people."""
    found = vault.search("what's the status of phase-two?", now=NOW)
    assert found.results, "the retrospective that names phase-two is found"
    assert all(set(e.matched) - {"two"} for e in found.results), found.results
    assert "booked two rooms" not in " ".join(e.summary for e in found.results)


def _crowd(episodes: Path, summary: str, line: str) -> None:
    """More episodes than passages are read from, one a day in February 2025, each saying
    ``line`` and its number."""
    for n in range(1, PASSAGE_SOURCES + 6):
        (episodes / f"2025-02-{n:02d}_10-00-00_x.md").write_text(
            f"---\nid: ep-202502{n:02d}-100000-0000{n:04d}\ntimestamp: 2025-02-{n:02d}T10:00:00Z\n"
            f"summary: {summary}\n---\n- #1 {line} {n}\n",
            encoding="utf-8",
        )


def test_a_line_holding_the_kind_of_value_asked_for_is_read_from_any_episode(
    empty_vault: Vault,
) -> None:
    # more episodes than passages are read from share the question's words; the answer
    # shares none of them, only the kind of value asked for
    episodes = empty_vault.root / "episodes"
    _crowd(episodes, "address", "User: the keynote address at the live show")
    (episodes / "2025-01-01_10-00-00_y.md").write_text(
        "---\nid: ep-20250101-100000-00009999\ntimestamp: 2025-01-01T10:00:00Z\nsummary: party\n"
        "---\n- #1 User: The party is at my place on 12 Elm Street next Friday\n",
        encoding="utf-8",
    )
    found = empty_vault.search("What address do I live at?", now=NOW)
    assert "12 Elm Street" in found.passages[0].text


def test_a_question_naming_a_day_reads_the_lines_said_that_day(empty_vault: Vault) -> None:
    # more episodes than passages are read from, all newer, share two of the question's
    # words; what was said on the day it names shares only who said it
    episodes = empty_vault.root / "episodes"
    _crowd(episodes, "plans", "Nate: I want to cook something new, round")
    (episodes / "2025-01-05_18-00-00_y.md").write_text(
        "---\nid: ep-20250105-180000-00009999\ntimestamp: 2025-01-05T18:00:00Z\nsummary: treats\n"
        "---\n- #1 Nate: Homemade coconut ice cream, with sprinkles on top!\n",
        encoding="utf-8",
    )
    query = "What did Nate cook on 5 January, 2025?"
    assert plan_query(query, empty_vault.index).period == (date(2025, 1, 5), date(2025, 1, 6))
    found = empty_vault.search(query, now=NOW)
    assert "coconut ice cream" in found.passages[0].text
    assert "coconut ice cream" in empty_vault.retrieve(query, now=NOW).context
    # a month or a year the question names counts the same way; a day it does not name, not
    month = empty_vault.search("What did Nate cook in January 2025?", now=NOW)
    assert "coconut ice cream" in month.passages[0].text
    other = empty_vault.search("What did Nate cook on 6 January, 2025?", now=NOW)
    assert all("coconut" not in p.text for p in other.passages)
    # an archived episode of that day is read only when archived ones are asked for
    archive = episodes / "archive"
    archive.mkdir()
    (episodes / "2025-01-05_18-00-00_y.md").rename(archive / "2025-01-05_18-00-00_y.md")
    kept = empty_vault.search(query, now=NOW)
    assert all("coconut" not in p.text for p in kept.passages)
    assert "coconut" in empty_vault.search(query, now=NOW, include_archived=True).passages[0].text
