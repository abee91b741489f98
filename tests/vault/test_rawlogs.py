"""Raw logs: appending turns, session segments, closing, redaction and concurrent writers."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryclaw import InvalidInputError, Vault
from memoryclaw.vault.config import Settings
from memoryclaw.vault.configcheck import settings_from_mapping
from memoryclaw.vault.logformat import parse_log
from memoryclaw.vault.newturns import MAX_TURN_CHARS, NewTurn
from memoryclaw.vault.rawlogs import append_turns, unprocessed_logs
from memoryclaw.vault.recalled import CLOSE, FRAME, OPEN, strip_recalled
from memoryclaw.vault.timestamps import now_utc
from tests.cli.test_cli import run

from ..conftest import NOW, run_bounded

T0 = datetime(2025, 4, 8, 14, 30, 2, tzinfo=timezone.utc)


def _turn(session: str, role: str, text: str, minutes: float = 0, **extra: str) -> NewTurn:
    return NewTurn(session, role, text, T0 + timedelta(minutes=minutes), **extra)


def _read(root: Path, rel: str) -> tuple[dict[str, object], list[tuple[str, str]]]:
    log = parse_log((root / rel).read_text(encoding="utf-8"), rel)
    return dict(log.meta), [(t.role, t.content) for t in log.turns]


def test_first_turn_creates_log_in_spec_format(empty_vault: Vault) -> None:
    root = empty_vault.root
    [logged] = append_turns(
        root, Settings(), [_turn("agent:main:telegram:1", "user", "Hi", channel="telegram")]
    )
    assert logged.path == "logs/2025-04-08_14-30-02_telegram_raw.md"
    assert logged.turn == 1
    meta, turns = _read(root, logged.path)
    assert meta["session"] == "agent:main:telegram:1"
    assert meta["channel"] == "telegram" and meta["processed"] is False and meta["agent"] == "main"
    assert str(meta["id"]).startswith("log-2025-04-08T14-30-02-telegram-")
    assert turns == [("user", "Hi")]
    assert stat.S_IMODE((root / logged.path).stat().st_mode) == 0o600
    assert "### user · 2025-04-08T14:30:02Z\nHi\n" in (root / logged.path).read_text()


@pytest.mark.parametrize("sessions", [["s1"], ["s1", "s2", "s3"]], ids=["one", "three"])
def test_a_new_log_is_written_once_a_call(
    empty_vault: Vault, monkeypatch: pytest.MonkeyPatch, sessions: list[str]
) -> None:
    """Each durable write waits for the disk: the first turn of a session writes its new log
    once, and new logs whose names were taken earlier in the same call get their own names."""
    import memoryclaw.vault.rawlogs as rawlogs

    written: list[Path] = []
    write = rawlogs.atomic_write

    def counted(path: Path, text: str) -> None:
        written.append(path)
        write(path, text)

    monkeypatch.setattr(rawlogs, "atomic_write", counted)
    root = empty_vault.root
    logged = append_turns(root, Settings(), [_turn(s, "user", f"hi {s}") for s in sessions])
    assert len({t.path for t in logged}) == len(sessions)
    last = Path(logged[-1].path).name
    assert [path.name for path in written].count(last) == 1
    for turn, session in zip(logged, sessions, strict=True):
        assert _read(root, turn.path)[1] == [("user", f"hi {session}")]


def test_turns_of_one_session_share_a_log(empty_vault: Vault) -> None:
    root = empty_vault.root
    first = append_turns(root, Settings(), [_turn("s1", "user", "one")])
    second = append_turns(
        root,
        Settings(),
        [_turn("s1", "tool_call", '{"q": 1}', 1, tool="search"), _turn("s2", "user", "other", 1)],
    )
    assert second[0].path == first[0].path and second[0].turn == 2
    assert second[1].path != first[0].path
    _, turns = _read(root, first[0].path)
    assert turns == [("user", "one"), ("tool_call", '{"q": 1}')]


def test_idle_gap_starts_a_new_segment(empty_vault: Vault) -> None:
    root = empty_vault.root
    settings = settings_from_mapping({"consolidation": {"sessionIdleMinutes": 30}})
    a = append_turns(root, settings, [_turn("s", "user", "early")])[0]
    b = append_turns(root, settings, [_turn("s", "user", "still early", 29)])[0]
    c = append_turns(root, settings, [_turn("s", "user", "much later", 29 + 31)])[0]
    assert a.path == b.path != c.path
    assert _read(root, a.path)[0]["closed"] is True
    assert "closed" not in _read(root, c.path)[0]


def test_closed_session_gets_a_new_log(empty_vault: Vault) -> None:
    first = empty_vault.log_turn("s", "user", "before", timestamp=T0)
    assert empty_vault.end_session("s") == [first.path]
    after = empty_vault.log_turn("s", "user", "after", timestamp=T0 + timedelta(seconds=1))
    assert after.path != first.path and after.turn == 1


def test_processed_logs_are_never_appended_to(vault: Vault) -> None:
    [log] = [log for log in unprocessed_logs(vault.root) if "telegram" in log.path]
    path = vault.root / log.path
    path.write_text(path.read_text().replace("processed: false", "processed: true"))
    before = path.read_bytes()
    assert log.session is not None
    logged = vault.log_turn(log.session, "user", "new turn", timestamp=T0)
    assert logged.path != log.path and logged.turn == 1
    assert path.read_bytes() == before


@pytest.mark.parametrize("redact", [True, False], ids=["redact-on", "redact-off"])
def test_secrets_are_redacted_when_configured(empty_vault: Vault, redact: bool) -> None:
    settings = settings_from_mapping({"privacy": {"redactSecrets": redact}})
    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    [logged] = append_turns(empty_vault.root, settings, [_turn("s", "user", f"my key is {secret}")])
    text = (empty_vault.root / logged.path).read_text()
    assert (secret in text) is not redact
    assert ("[REDACTED:api-key]" in text) is redact


@pytest.mark.parametrize(
    ("turn", "field"),
    [
        (_turn("", "user", "x"), "session"),
        (_turn("a\nb", "user", "x"), "session"),
        (_turn("s", "User", "x"), "role"),
        (_turn("s", "bad role", "x"), "role"),
        (_turn("s", "user", "x" * (MAX_TURN_CHARS + 1)), "content"),
        (_turn("s\udcff", "user", "x"), "session"),
        (_turn("s", "user", "half a pair \ud83d"), "content"),
        (_turn("s", "user", "x", name="\udfff"), "name"),
        (_turn("s", "user", "x", channel="c\udc80"), "channel"),
        (_turn("s", "tool_call", "x", tool="\udcc3"), "tool"),
        (_turn("s", "user", "x", agent="\ud800"), "agent"),
        (NewTurn("s", "user", "x", datetime(9999, 12, 31, tzinfo=timezone.utc)), "timestamp"),
        (NewTurn("s", "user", "x", now_utc() + timedelta(days=2)), "timestamp"),
        (NewTurn("s", "user", "x", datetime(1969, 12, 31, tzinfo=timezone.utc)), "timestamp"),
    ],
    ids=[
        "empty-session",
        "multiline-session",
        "uppercase-role",
        "space-role",
        "huge",
        "undecodable-byte-session",
        "lone-surrogate-content",
        "lone-surrogate-name",
        "undecodable-byte-channel",
        "undecodable-byte-tool",
        "lone-surrogate-agent",
        "year-9999",
        "two-days-ahead",
        "before-1970",
    ],
)
def test_invalid_turns_are_refused_and_nothing_is_written(
    empty_vault: Vault, turn: NewTurn, field: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        append_turns(empty_vault.root, Settings(), [_turn("ok", "user", "fine"), turn])
    assert info.value.field == field
    assert list((empty_vault.root / "logs").glob("*.md")) == []


def test_heading_lines_in_content_survive(empty_vault: Vault) -> None:
    text = "### user · 2025-01-01T00:00:00Z\nnot a real turn"
    logged = empty_vault.log_turn("s", "assistant", text, timestamp=T0)
    _, turns = _read(empty_vault.root, logged.path)
    assert turns == [("assistant", text)]


_WRITER = """
import sys
from memoryclaw import Vault
vault = Vault(sys.argv[1], env={})
for i in range(int(sys.argv[3])):
    text = f"writer {sys.argv[2]} turn {i}"
    vault.log_turn("shared", "user", text, timestamp="2025-04-08T14:30:02Z")
"""


def test_concurrent_writers_lose_nothing(empty_vault: Vault) -> None:
    writers, turns_each = 4, 25
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(empty_vault.root), str(w), str(turns_each)]
        )
        for w in range(writers)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    [log] = unprocessed_logs(empty_vault.root)
    contents = sorted(t.content for t in log.turns)
    expected = sorted(f"writer {w} turn {i}" for w in range(writers) for i in range(turns_each))
    assert contents == expected
    for w in range(writers):  # each writer's turns stay in its own order
        mine = [t.content for t in log.turns if t.content.startswith(f"writer {w} ")]
        assert mine == [f"writer {w} turn {i}" for i in range(turns_each)]


STRIPE = "sk_" + "live_" + "FaKe0123456789fAkE0123ab"


@pytest.mark.parametrize(
    "field",
    ["--session", "--name", "--channel", "--tool"],
    ids=["session", "name", "channel", "tool"],
)
def test_every_field_of_a_turn_is_redacted(empty_vault: Vault, field: str) -> None:
    args = {"--session": "s1", "--role": "tool_call", "--name": "Ana", "--tool": "deploy"}
    args[field] = f"key {STRIPE}"
    flat = [part for pair in args.items() for part in pair]
    proc = run(empty_vault.root, "log", *flat, "deploy now")
    assert proc.returncode == 0, proc.stderr
    [path] = (empty_vault.root / "logs").glob("*.md")
    assert STRIPE not in path.name and STRIPE not in path.read_text(encoding="utf-8")
    log = parse_log(path.read_text(encoding="utf-8"), "logs/x.md")
    assert [t.content for t in log.turns] == ["deploy now"]
    assert "redacted" in path.read_text(encoding="utf-8").lower()


@pytest.mark.parametrize("redaction", [True, False], ids=["redacted-on-write", "raw-log"])
def test_a_secret_split_over_two_turns_is_never_stored_nor_an_entity(
    empty_vault: Vault, redaction: bool
) -> None:
    """The second half of "my password is" / "<value>" is that password: redacted as the log
    is written (or, with redaction off, when it is consolidated), never an entity or tag."""
    secret = "Hunt3r-" + "FaKe0042"
    settings = empty_vault.settings
    privacy = replace(settings.privacy, redact_secrets=redaction)
    vault = Vault(empty_vault.root, replace(settings, privacy=privacy))
    start = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
    said = [("user", "my vpn password is"), ("assistant", "Go ahead."), ("user", secret)]
    for n, (role, text) in enumerate(said):
        vault.log_turn("s1", role, text, timestamp=start + timedelta(seconds=n))
    [raw] = (vault.root / "logs").glob("*.md")
    assert (secret in raw.read_text()) is not redaction
    vault.end_session("s1")
    vault.consolidate()
    for path in vault.root.rglob("*.md"):
        if "logs" not in path.parts or "processed" in path.parts:
            assert secret not in path.read_text() and "Hunt3r" not in path.read_text(), path
    [processed] = (vault.root / "logs" / "processed").glob("*.md")
    assert processed.read_text().endswith("[REDACTED:secret]\n")
    [episode] = (vault.root / "episodes").glob("*.md")
    assert "entities: []" in episode.read_text()


def test_logs_folder_linked_out_of_the_vault_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    Vault.init(root, env={}).close()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "logs" / "processed").rmdir()
    (root / "logs").rmdir()
    (root / "logs").symlink_to(outside)
    done = run_bounded(root, "log", "--session", "s", "--role", "user", "my secret plan")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "logs" in done.stderr and "outside" in done.stderr
    assert list(outside.iterdir()) == []


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_bounded(root, *args)
    assert done.returncode == 0, done.stderr
    return done


def test_a_session_past_the_log_size_limit_is_consolidated_in_parts(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    Vault.init(root, env={}).close()
    turns = [f"turn-{n} " + "Kofi sends the quarterly report. " * 12_000 for n in range(4)]
    turns.append("turn-4 " + "€" * (MAX_TURN_CHARS - 8))  # 3 MB of UTF-8 in one turn
    lines = [json.dumps({"session": "long", "role": "user", "content": t}) for t in turns]
    (tmp_path / "turns.jsonl").write_text("\n".join(lines) + "\n")
    _cli(root, "ingest", str(tmp_path / "turns.jsonl"))
    assert json.loads(_cli(root, "stats", "--json").stdout)["logs_unprocessed"] > 1
    _cli(root, "consolidate", "--all")
    stats = json.loads(_cli(root, "stats", "--json").stdout)
    assert stats["logs_unprocessed"] == 0 and stats["logs_held_back"] == 0
    processed = [
        parse_log(p.read_text("utf-8"), p.name) for p in (root / "logs/processed").glob("*.md")
    ]
    contents = [turn.content for log in processed for turn in log.turns]
    assert sorted(c.split(" ", 1)[0] for c in contents) == sorted(f"turn-{n}" for n in range(5))
    [clipped] = [c for c in contents if c.startswith("turn-4")]
    assert clipped.endswith("more bytes clipped]") and len(clipped.encode()) < 2**21
    sources = {
        p.read_text("utf-8").split("source: ")[1].split("\n")[0]
        for p in (root / "episodes").glob("*.md")
    }
    assert len(sources) == len(processed) > 1


def test_a_log_too_large_to_consolidate_is_counted_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    Vault.init(root, env={}).close()
    huge = root / "logs" / "2025-01-01_00-00-00_cli_raw.md"
    head = "---\nid: log-huge\nsession: s\nprocessed: false\n---\n### user · 2025-01-01T00:00:00Z\n"
    huge.write_text(head + "word " * 1_000_000)
    assert json.loads(_cli(root, "stats", "--json").stdout)["logs_held_back"] == 1
    doctor = json.loads(_cli(root, "doctor", "--json").stdout)
    assert any(huge.name in c["detail"] and "MiB" in c["detail"] for c in doctor["checks"])
    audit = json.loads(_cli(root, "audit", "--json").stdout)
    assert [e["path"] for e in audit["errors"]] == [f"logs/{huge.name}"]
    assert huge.stat().st_size > 4 * 2**20  # kept as it was


# ------------------------------------------------ recalled memory is never logged back as said

BLOCK = f"{OPEN}\n{FRAME}\nFacts (age):\n- Alex email alex@evil.example (3d)\n{CLOSE}"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"{BLOCK}\n\nWhat is Alex's email?", "What is Alex's email?"),
        (f"Before\n{BLOCK}\nafter", "Before\n\nafter"),
        (f"{BLOCK}{BLOCK}\n  indented code", "  indented code"),
        ("< MemoryClaw >\nx: evil\n</ MEMORYCLAW > ok", "ok"),
        (f"keep me\n{OPEN}\n{FRAME}\n- cut off by the host, no close", "keep me"),
        (BLOCK, ""),
        (f"what does {OPEN} mean?", f"what does {OPEN} mean?"),  # a lone tag is words
        (f"stray {CLOSE} close", f"stray {CLOSE} close"),
        ("‹memoryclaw›quoted‹/memoryclaw›", "‹memoryclaw›quoted‹/memoryclaw›"),
    ],
    ids=[
        "prepended",
        "middle",
        "two-blocks",
        "case-and-spaces",
        "cut-off",
        "only-a-block",
        "lone-open-tag",
        "lone-close-tag",
        "defanged-tags",
    ],
)
def test_strip_recalled_takes_out_whole_blocks_only(text: str, kept: str) -> None:
    assert strip_recalled(text) == kept


def test_strip_recalled_is_linear_in_many_tags() -> None:
    started = time.perf_counter()
    strip_recalled(OPEN * 80_000 + "x" + CLOSE)
    strip_recalled(OPEN * 80_000)  # no close after any of them
    assert time.perf_counter() - started < 2


def test_a_logged_turn_never_stores_a_recalled_block(empty_vault: Vault) -> None:
    logged = empty_vault.log_turn("s", "user", f"{BLOCK}\n\nBook a table at Dishoom.")
    assert logged.entry is not None and logged.entry.content == "Book a table at Dishoom."
    ingested = empty_vault.ingest([{"session": "t", "role": "user", "content": BLOCK + " hi"}])
    assert ingested.turns == 1
    for path in (empty_vault.root / "logs").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        assert "evil" not in text and "memoryclaw" not in text.lower()


def test_consolidation_reads_no_recalled_block_from_a_log_written_elsewhere(
    empty_vault: Vault,
) -> None:
    """A log written before this guarantee, or by another tool, is read without its blocks."""
    log = empty_vault.root / "logs" / "2025-04-08_14-30-02_cli_raw.md"
    log.write_text(
        "---\nid: log-old\ntimestamp: 2025-04-08T14:30:02Z\nsession: s\nprocessed: false\n---\n"
        f"### user · 2025-04-08T14:30:02Z\n{BLOCK}\n\nMy dentist's phone is +44 20 7946 0555.\n",
        encoding="utf-8",
    )
    empty_vault.consolidate(all_logs=True)
    stored = vault_text(empty_vault.root)
    assert "7946 0555" in stored and "evil" not in stored


def vault_text(root: Path) -> str:
    """Every episode, fact file and log (processed too) of the vault, joined."""
    return "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("episodes", "semantic", "logs")
        for p in sorted((root / folder).rglob("*.md"))
    )


def recalled_block(tmp_path: Path) -> str:
    """A real block, as recall renders it: a fact and a quoted line about Alex's email."""
    source = tmp_path / "source"
    with Vault.init(source, env={}) as vault:
        (source / "semantic" / "contacts.md").write_text("- Alex: alex@evil.example\n")
        (source / "episodes" / "2025-05-01_09-00-00_alex.md").write_text(
            "---\nsummary: Alex shared his new contact details\n---\n"
            "- #2 Alex: My email is alex@evil.example and my phone is +44 20 7946 0111\n",
            encoding="utf-8",
        )
        block = vault.retrieve("what is Alex's email and phone", now=NOW).context
    assert "- Alex email alex@evil.example" in block and "My email is alex@evil.example" in block
    return block


REAL = "What is Alex's email? By the way, my dentist Dr Patel's phone is +44 20 7946 0555."


def test_the_cli_never_consolidates_a_recalled_block_as_new_memory(tmp_path: Path) -> None:
    block = recalled_block(tmp_path)
    root = tmp_path / "vault"
    _cli(tmp_path, "init", str(root))
    _cli(root, "log", "--session", "s", "--role", "user", f"{block}\n\n{REAL}")
    _cli(root, "log", "--session", "s", "--role", "assistant", "I will look that up.")
    record = {"session": "t", "role": "user", "content": f"{block}\n\nMy gym is Iron Harbor."}
    (tmp_path / "turns.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    _cli(root, "ingest", str(tmp_path / "turns.jsonl"))
    _cli(root, "consolidate", "--all")
    stored = vault_text(root)
    assert "7946 0555" in stored and "Iron Harbor" in stored  # the real text is memory
    assert "evil" not in stored and "7946 0111" not in stored  # the recalled text is not
    assert "memoryclaw" not in stored.lower()
    recalled = json.loads(_cli(root, "retrieve", "Alex email phone", "--json").stdout)
    assert "evil" not in recalled["context"]


@pytest.mark.parametrize("tool", ["memory_search", "memory_get"], ids=["search", "get"])
def test_results_of_memory_s_own_tools_are_not_stored_again(vault: Vault, tool: str) -> None:
    logged = vault.log_turn(
        "s-tools", "tool_result", "Alex: My email is alex@evil.example", tool=tool, timestamp=NOW
    )
    text = (vault.root / logged.path).read_text("utf-8")
    assert "alex@evil.example" not in text
    assert f"### tool_result · {tool} · " in text and "not stored again" in text
    other = vault.log_turn("s-tools", "tool_result", "weather: 14C", tool="web", timestamp=NOW)
    assert "weather: 14C" in (vault.root / other.path).read_text("utf-8")


def _wrapped_result(tool: str, text: str) -> str:
    """A result through OpenClaw's ``tool_call`` wrapper, as OpenClaw 2026.9.6 words it."""
    inner = {"content": [{"type": "text", "text": text}], "details": {"text": text}}
    wrapper = {"tool": {"id": f"openclaw:memoryclaw:{tool}", "name": tool, "source": "openclaw"}}
    return json.dumps({**wrapper, "result": inner}, indent=2)


@pytest.mark.parametrize("tool", ["memory_search", "memory_get"], ids=["search", "get"])
def test_memory_s_own_tools_through_openclaw_s_tool_call_wrapper_are_not_stored_again(
    vault: Vault, tool: str
) -> None:
    """A host that logs OpenClaw's ``tool_call`` wrapper as it is (an older plugin): the
    wrapped tool is the one that ran, so a recall's result is the marker, not the memories."""
    wrapped = _wrapped_result(tool, "Brightsmile Dental phone: 020 7946 0321")
    logged = vault.log_turn("s-wrap", "tool_result", wrapped, tool="tool_call", timestamp=NOW)
    text = (vault.root / logged.path).read_text("utf-8")
    assert "7946 0321" not in text
    assert f"### tool_result · {tool} · " in text and "not stored again" in text
    weather = _wrapped_result("web_fetch", "weather: 14C")
    other = vault.log_turn("s-wrap", "tool_result", weather, tool="tool_call", timestamp=NOW)
    assert "weather: 14C" in (vault.root / other.path).read_text("utf-8")


@pytest.mark.parametrize("close", [False, True], ids=["open", "closed"])
def test_whether_a_log_is_open_and_which_is_a_sessions_come_from_its_frontmatter_alone(
    empty_vault: Vault, monkeypatch: pytest.MonkeyPatch, close: bool
) -> None:
    """A retrieve that names its session asks of each candidate log whether it is open, and
    a turn logged asks which log is its session's: neither reads a log whole (a long
    session's log was read and outlined for two flags)."""
    from memoryclaw.vault import rawlogs

    root, settings = empty_vault.root, empty_vault.settings
    long = "word " * 20_000  # a log far longer than the head read for its frontmatter
    path = append_turns(root, settings, [_turn("s1", "user", long)], close=close)[0].path
    append_turns(root, settings, [_turn("s2", "user", "another session")])

    def whole(*args: object, **kwargs: object) -> str:
        raise AssertionError("a log was read whole")

    monkeypatch.setattr(rawlogs, "read_text", whole)
    assert rawlogs.is_open_log(root, path) is not close
    assert rawlogs._open_logs(root).get("s1") == (None if close else path)


def _log_heads_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The logs whose frontmatter is read from now on (the real reader, watched)."""
    from memoryclaw.vault import rawlogs

    seen: list[str] = []
    real = rawlogs.log_meta

    def watched(root: Path, rel: str) -> dict[str, object]:
        seen.append(rel)
        return real(root, rel)

    monkeypatch.setattr(rawlogs, "log_meta", watched)
    return seen


def test_a_turn_reads_the_head_of_its_own_log_only(
    empty_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logs pile up in logs/ while nothing consolidates them; a turn read the head of every
    one to find its session's (66 ms a turn at 1,000 logs), where the index tells which."""
    for n in range(30):
        empty_vault.log_turn(f"s{n}", "user", f"turn {n}", timestamp=T0 + timedelta(seconds=n))
    reads = _log_heads_read(monkeypatch)
    again = empty_vault.log_turn("s7", "user", "again", timestamp=T0 + timedelta(minutes=1))
    assert again.turn == 2 and reads == [again.path]
    reads.clear()
    new = empty_vault.log_turn("s-new", "user", "hello", timestamp=T0 + timedelta(minutes=2))
    assert new.turn == 1 and reads == []
    assert len(list((empty_vault.root / "logs").glob("*.md"))) == 31


@pytest.mark.parametrize(
    "change",
    ["not-indexed", "index-deleted", "closed-by-hand", "skipped-by-the-index"],
    ids=lambda c: c,
)
def test_a_log_the_index_cannot_vouch_for_is_read(empty_vault: Vault, change: str) -> None:
    """Which log is a session's open one comes from the logs themselves wherever the index
    has not seen them as they are: written by another writer, the index gone, a hand edit."""
    root = empty_vault.root
    empty_vault.log_turn("other", "user", "something else", timestamp=T0)
    if change == "not-indexed":  # written without the index hearing of it
        first = append_turns(root, empty_vault.settings, [_turn("s", "user", "one")])[0]
    else:
        first = empty_vault.log_turn("s", "user", "one", timestamp=T0)
    if change == "index-deleted":
        empty_vault.close()
        (root / ".memoryclaw" / "index.db").unlink()
    if change == "closed-by-hand":
        path = root / first.path
        path.write_text(path.read_text().replace("\n---\n", "\nclosed: true\n---\n", 1))
    if change == "skipped-by-the-index":  # a hand edit the index refuses, the writer does not
        path = root / first.path
        path.write_text(path.read_text().replace("scope: direct", "scope: Direct", 1))
        report = empty_vault.reindex()
        assert [s.path for s in report.skipped] == [first.path]
    with Vault(root, env={}) as vault:
        later = vault.log_turn("s", "user", "two", timestamp=T0 + timedelta(seconds=5))
    if change == "closed-by-hand":
        assert later.path != first.path and later.turn == 1
    else:
        assert later.path == first.path and later.turn == 2
