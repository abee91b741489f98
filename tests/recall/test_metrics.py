"""Recall metrics: what each retrieve counts, over which days, and that counting never fails
a recall (through :class:`memoryclaw.Vault`, and several processes at once)."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import textwrap
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryclaw import ConfigError, InvalidInputError, Vault
from memoryclaw.recall.metrics import METRICS_FILE, DayCounts, load_days, record
from memoryclaw.recall.payload import RetrievePayload
from memoryclaw.recall.usage import load_recalls
from memoryclaw.serve.stdio import BAD_PARAMS, StdioServer
from memoryclaw.vault.logformat import Turn, dump_log

from ..conftest import NOW

QUERIES = ["what did I email John about", "flight to Lisbon", "dentist appointment"]
OLD_STATS_KEYS = {
    "vault",
    "episodes",
    "facts",
    "aliases",
    "tags",
    "files_indexed",
    "files_with_errors",
    "logs_unprocessed",
    "logs_open",
    "logs_held_back",
    "skills",
    "top_tags",
    "vault_bytes",
    "index_bytes",
}


def _withheld(payload: RetrievePayload, min_score: float) -> int:
    assert payload.search is not None
    found = [*payload.search.results, *payload.search.facts]
    return sum(1 for r in found if r.relevance < min_score)


def test_each_retrieve_is_counted_on_its_day(vault: Vault) -> None:
    payloads = [vault.retrieve(q, now=NOW) for q in QUERIES]
    assert vault.retrieve("thanks!", now=NOW).skipped == "trivial"
    metrics = vault.stats(now=NOW)["metrics"]
    tokens = [p.tokens for p in payloads]
    assert all(tokens)
    assert metrics["recalls"] == len(QUERIES) and metrics["trivial_skipped"] == 1
    assert metrics["tokens_injected"] == sum(tokens)
    assert metrics["tokens_injected_max"] == max(tokens)
    assert metrics["tokens_injected_mean"] == round(sum(tokens) / len(tokens), 1)
    min_score = vault.settings.retrieval.min_score
    assert metrics["below_threshold"] == sum(_withheld(p, min_score) for p in payloads)
    assert metrics["tokens_saved"] == metrics["transcript_tokens"] - sum(tokens)
    assert (metrics["since"], metrics["until"]) == ("2025-10-26", "2025-11-01")


def test_stats_keeps_its_fields_and_adds_metrics(vault: Vault) -> None:
    data = vault.stats(now=NOW)
    assert set(data) == OLD_STATS_KEYS | {"metrics"}
    pending = vault.pending()
    assert pending, "the sample vault has facts waiting for review"
    assert data["metrics"]["pending"] == len(pending)
    assert data["metrics"]["conflicts"] == sum(1 for p in pending if p.mark == "CONFLICT")
    assert data["metrics"]["recalls"] == 0 and data["metrics"]["recorded_since"] is None
    assert not (vault.root / METRICS_FILE).exists()  # reading records nothing


def test_the_window_is_days_or_since(vault: Vault) -> None:
    vault.retrieve(QUERIES[0], now=NOW - timedelta(days=10))
    vault.retrieve(QUERIES[1], now=NOW - timedelta(days=1))
    vault.retrieve(QUERIES[2], now=NOW)
    assert vault.metrics(days=1, now=NOW).counts.recalls == 1
    assert vault.metrics(now=NOW).counts.recalls == 2  # 7 days by default
    wide = vault.metrics(since="2025-10-01", now=NOW)
    assert wide.counts.recalls == 3 and wide.recorded_since == date(2025, 10, 22)
    assert vault.metrics(days=1, now=NOW - timedelta(days=1)).counts.recalls == 1


@pytest.mark.parametrize(
    ("days", "since", "field"),
    [(0, None, "days"), (None, "2025-13-01", "since"), (None, "2025-11-02", "since")],
    ids=["no-days", "not-a-date", "after-today"],
)
def test_a_bad_window_is_refused(vault: Vault, days: int | None, since: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        vault.metrics(days=days, since=since, now=NOW)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stats", "--days", "1000000000"], "days: must be a whole number from 1 to 100000"),
        (["stats", "--days", "100001"], "days: must be a whole number from 1 to 100000"),
        (["stats", "--since", "0001-01-01"], "since: 0001-01-01 is more than 100000 days ago"),
        (["audit", "--days", "1000000000"], "days: must be from 0 to 100000"),
    ],
    ids=["billion-days", "one-past-the-limit", "since-year-one", "audit-billion-days"],
)
def test_a_window_too_wide_for_a_date_is_one_line_error_not_an_overflow_traceback(
    vault_dir: Path, args: list[str], message: str
) -> None:
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), *args]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"memoryclaw: error: {message}") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("params", "field"),
    [({"days": 1_000_000_000}, "days"), ({"since": "0001-01-01"}, "since")],
    ids=["billion-days", "since-year-one"],
)
def test_rpc_stats_refuses_a_window_too_wide_as_bad_params(
    vault_dir: Path, params: dict[str, object], field: str
) -> None:
    bridge = StdioServer(vault_dir, env={})
    try:
        reply = bridge.handle(json.dumps({"id": 1, "method": "stats", "params": params}))
    finally:
        bridge.close()
    assert reply["error"]["code"] == BAD_PARAMS
    assert reply["error"]["message"].startswith(f"{field}: ")


def test_the_widest_window_is_accepted(vault: Vault) -> None:
    vault.retrieve(QUERIES[0], now=NOW)
    assert vault.metrics(days=100_000, now=NOW).counts.recalls == 1
    first = (NOW - timedelta(days=99_999)).date().isoformat()
    assert vault.metrics(since=first, now=NOW).counts.recalls == 1


def _write_episode_of_log(root: Path, first: int, last: int) -> list[Turn]:
    """A processed log of five turns, and an episode summarising turns first..last of it."""
    moment = datetime(2025, 10, 30, 9, 0, tzinfo=timezone.utc)
    turns = [
        Turn(
            "user" if n % 2 else "assistant",
            moment + timedelta(minutes=n),
            " ".join([f"turn {n}"] * n),
        )
        for n in range(1, 6)
    ]
    meta = {"id": "log-x", "session": "s1", "processed": True}
    (root / "logs" / "processed").mkdir(parents=True, exist_ok=True)
    (root / "logs" / "processed" / "x.md").write_text(dump_log(meta, turns), encoding="utf-8")
    (root / "episodes" / "kayak.md").write_text(
        textwrap.dedent(f"""\
            ---
            id: ep-kayak
            timestamp: 2025-10-30T09:10:00Z
            summary: "User booked a kayak tour of the fjord."
            source: logs/processed/x.md
            source_turns: [{first}, {last}]
            ---
            **Details:**
            - Kayak tour, Saturday
            """),
        encoding="utf-8",
    )
    return turns


def test_an_episode_stands_for_its_source_turns(empty_vault: Vault) -> None:
    turns = _write_episode_of_log(empty_vault.root, 2, 4)
    payload = empty_vault.retrieve("kayak tour", now=NOW)
    assert [e.id for e in payload.episodes] == ["ep-kayak"] and not payload.facts
    stood_for = math.ceil(sum(len(t.content) for t in turns[1:4]) / 4)
    assert empty_vault.metrics(now=NOW).counts.transcript_tokens == stood_for
    # retention deletes the log; the index still knows what the episode stands for
    (empty_vault.root / "logs" / "processed" / "x.md").unlink()
    empty_vault.retrieve("kayak tour", now=NOW)
    assert empty_vault.metrics(now=NOW).counts.transcript_tokens == 2 * stood_for


def test_an_episode_without_its_log_stands_for_its_own_text(empty_vault: Vault) -> None:
    _write_episode_of_log(empty_vault.root, 2, 4)
    (empty_vault.root / "logs" / "processed" / "x.md").unlink()
    empty_vault.retrieve("kayak tour", now=NOW)
    episode = empty_vault.get("ep-kayak")
    own = len(episode["summary"]) + len(episode["details"])
    assert empty_vault.metrics(now=NOW).counts.transcript_tokens == math.ceil(own / 4)


def test_archive_runs_count_the_episodes_they_move(vault_dir: Path) -> None:
    env = {"MEMORYCLAW_CONSOLIDATION_ARCHIVEAFTERDAYS": "30"}
    with Vault(vault_dir, env=env) as vault:
        start = datetime.now(timezone.utc)  # the files were copied just now: used till then
        vault.archive(now=start)  # starts noting recalls
        later = start + timedelta(days=31)
        moved = vault.archive(now=later).moved
        assert moved
        metrics = vault.metrics(days=1, now=later)
        assert metrics.counts.archived == len(moved)
        assert metrics.episodes_archived == len({m.id for m in moved})
        assert vault.metrics(days=1, now=start).counts.archived == 0


def test_old_days_are_dropped(vault_dir: Path) -> None:
    (vault_dir / "memoryclaw.yaml").write_text("metrics:\n  keepDays: 3\n")
    with Vault(vault_dir, env={}) as vault:
        for back in (5, 2, 0):
            vault.retrieve(QUERIES[0], now=NOW - timedelta(days=back))
        kept = load_days(vault.root)
    assert sorted(kept) == [date(2025, 10, 30), date(2025, 11, 1)]


def test_keep_days_zero_records_nothing_but_still_notes_recalls(vault_dir: Path) -> None:
    (vault_dir / "memoryclaw.yaml").write_text("metrics:\n  keepDays: 0\n")
    with Vault(vault_dir, env={}) as vault:
        vault.retrieve(QUERIES[0], now=NOW)
        assert not (vault.root / METRICS_FILE).exists()
        recalls = load_recalls(vault.root, vault.index)
        assert recalls is not None and recalls.last


def test_a_recall_that_cannot_be_counted_still_answers(
    vault: Vault, caplog: pytest.LogCaptureFixture
) -> None:
    (vault.root / METRICS_FILE).mkdir(parents=True)  # no file can be written there
    with caplog.at_level(logging.WARNING, logger="memoryclaw.metrics"):
        payload = vault.retrieve(QUERIES[0], now=NOW)
    assert payload.tokens > 0 and payload.episodes
    assert any("recall not counted" in r.getMessage() for r in caplog.records)
    assert vault.metrics(now=NOW).counts.recalls == 0


def test_an_unreadable_file_starts_afresh(vault: Vault) -> None:
    path = vault.root / METRICS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    vault.retrieve(QUERIES[0], now=NOW)
    assert vault.metrics(now=NOW).counts.recalls == 1
    assert json.loads(path.read_text())["days"]["2025-11-01"]["recalls"] == 1


_RETRIEVER = """
import sys
from datetime import datetime, timezone
from memoryclaw import Vault
with Vault(sys.argv[1], env={}) as vault:
    for n in range(int(sys.argv[2])):
        vault.retrieve("what did I email John about" if n % 2 else "hello!",
                       now=datetime(2025, 11, 1, 12, tzinfo=timezone.utc))
"""


def test_processes_recalling_at_once_lose_no_count(vault: Vault) -> None:
    vault.reindex()  # the children share one index instead of each building it
    procs = [
        subprocess.Popen([sys.executable, "-c", _RETRIEVER, str(vault.root), "6"]) for _ in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    counts = vault.metrics(now=NOW).counts
    assert (counts.recalls, counts.trivial_skipped) == (9, 9)


_COUNT = st.integers(min_value=0, max_value=10**9)
_DAY_COUNTS = st.builds(DayCounts, *([_COUNT] * 7))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(
        st.tuples(st.integers(min_value=0, max_value=20), _DAY_COUNTS), min_size=1, max_size=8
    )
)
def test_the_file_sums_what_it_is_given(
    tmp_path_factory: pytest.TempPathFactory, events: list[tuple[int, DayCounts]]
) -> None:
    root = tmp_path_factory.mktemp("vault")
    expected: dict[date, DayCounts] = {}
    for back, counts in events:
        moment = NOW - timedelta(days=back)
        assert record(root, moment, 30, counts)
        expected.setdefault(moment.date(), DayCounts()).add(counts)
    assert load_days(root) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [("-1", "expected a number >= 0"), ("soon", "expected an integer")],
    ids=["negative", "not-a-number"],
)
def test_keep_days_is_checked(vault_dir: Path, text: str, problem: str) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(f"metrics:\n  keepDays: {text}\n")
    with pytest.raises(ConfigError) as caught:
        Vault(vault_dir, env={})
    assert caught.value.key == "metrics.keepDays" and problem in caught.value.problem
    assert caught.value.path == str(vault_dir / "memoryclaw.yaml")


_PAD = 12 << 20  # past the reading limit, well inside a child's memory
HOSTILE_STATE = {
    "nested-list": b"[" * 200_000 + b"]" * 200_000,
    "nested-in-days": b'{"format": 1, "days": {"2025-11-01": ' + b'{"a": ' * 100_000 + b"1",
    "over-the-limit": b'{"format": 1, "since": "2025-01-01T00:00:00Z", "days": {}, "pad": "'
    + b"x" * _PAD
    + b'"}',
    "a-list": b"[1, 2, 3]",
    "days-a-list": b'{"format": 1, "days": [1], "since": "2025-01-01", "episodes": [1]}',
    "counts-a-string": b'{"format": 1, "days": {"2025-11-01": "lots"}, "episodes": {"x": {}}}',
    "since-an-object": b'{"since": {"a": 1}, "episodes": {"ep-1": "2025-01-01T00:00:00Z"}}',
    "huge-number": b'{"format": 1, "days": {"2025-11-01": {"recalls": ' + b"9" * 5000 + b"}}}",
    "not-utf8": b'{"since": "\xff"}',
}


@pytest.mark.parametrize("name", ["metrics.json", "recall.json", "recall.log"])
@pytest.mark.parametrize("content", list(HOSTILE_STATE.values()), ids=list(HOSTILE_STATE))
def test_a_hostile_counts_file_starts_over_instead_of_crashing_retrieve_or_stats(
    vault_dir: Path, name: str, content: bytes
) -> None:
    """A deeply nested, huge or wrongly shaped .memoryclaw/recall.json or metrics.json once
    crashed retrieve and stats with a RecursionError traceback, and a huge one was read whole
    by every retrieve: it is read to a bound, and an unreadable one starts over."""
    from ..conftest import run_bounded

    state = vault_dir / ".memoryclaw"
    state.mkdir(exist_ok=True)
    (state / name).write_bytes(content)
    errors = ""
    for args in (["stats", "--json"], ["retrieve", "what is my current dentist", "--json"]):
        proc = run_bounded(vault_dir, *args)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr
        json.loads(proc.stdout)
        errors += proc.stderr
    if len(content) > _PAD and name != "recall.log":  # the log: its first 8 MiB folded, cut
        assert "starting it over" in errors
    rewritten = state / name
    if name == "recall.json":  # read no more: the index notes recalls, its next copy replaces it
        with Vault(vault_dir, env={}) as vault:
            assert vault.index.recalls_since() is not None
    else:
        assert not rewritten.exists() or rewritten.stat().st_size < 1 << 20
