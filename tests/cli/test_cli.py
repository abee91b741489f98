"""The ``memoryclaw`` command-line contract (SPEC 6), driven through real subprocesses."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from memoryclaw.cli import cli
from memoryclaw.vault.naming import plural

JOHN_ID = "ep-20250408-143210-email-john"
JOHN = "episodes/2025-04-08_14-32-10_email-john.md"
EMAIL_QUERY = "what did I email John about"

SEARCH_KEYS = {"query", "keywords", "results", "facts", "fallback_used", "took_ms"}
RESULT_KEYS = {
    "kind",
    "id",
    "path",
    "summary",
    "tags",
    "timestamp",
    "score",
    "matched",
    "via",
    "source",
    "source_turns",
    "session",
}
FACT_KEYS = {"entity", "field", "value", "path", "line", "updated", "age_days", "confidence"}


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without MEMORYCLAW_* variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORYCLAW_")}
    env.update(extra)
    return env


def run(
    vault: Path | None,
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m memoryclaw [--vault VAULT] ARGS`` in a subprocess."""
    command = [sys.executable, "-m", "memoryclaw"]
    if vault is not None:
        command += ["--vault", str(vault)]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=env if env is not None else clean_env(),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        timeout=120,
    )


def on_a_terminal(command: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``command`` with its stderr on a pseudo-terminal; exit code, stdout, stderr."""
    main, child = pty.openpty()
    done = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=child, stdin=subprocess.DEVNULL, env=env
    )
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal's other end is closed: all of it was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return done.returncode, done.stdout.decode(), shown.decode().replace("\r\n", "\n")


def run_json(vault: Path | None, *args: str, **kwargs: Any) -> Any:
    """Run a ``--json`` command that must succeed; stdout is exactly one JSON document."""
    proc = run(vault, *args, "--json", **kwargs)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def stable(doc: dict[str, Any]) -> dict[str, Any]:
    """A search document without its timing."""
    return {k: v for k, v in doc.items() if k != "took_ms"}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` except derived state, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memoryclaw" not in p.relative_to(root).parts
    }


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command."""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


# ----------------------------------------------------------------------------- search


def test_search_json_document(vault_dir: Path) -> None:
    proc = run(vault_dir, "search", EMAIL_QUERY, "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and proc.stdout.endswith("\n")
    doc = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    assert set(doc) >= SEARCH_KEYS
    assert doc["query"] == EMAIL_QUERY
    assert {"email", "john"} <= set(doc["keywords"])
    assert isinstance(doc["fallback_used"], bool)
    assert isinstance(doc["took_ms"], (int, float))
    assert doc["results"], "no episodes found"
    for result in doc["results"]:
        assert set(result) >= RESULT_KEYS
        assert result["kind"] == "episode"
        assert isinstance(result["tags"], list) and isinstance(result["matched"], list)
        assert isinstance(result["score"], (int, float))
    by_id = {r["id"]: r for r in doc["results"]}
    john = by_id[JOHN_ID]
    assert {"email", "john"} <= set(john["matched"])
    assert john["path"] == JOHN
    assert john["source"] == "logs/processed/2025-04-08_14-30-02_telegram_raw.md"
    assert john["source_turns"] == [1, 12]
    assert john["session"] == "agent:main:telegram:12345"
    assert john["timestamp"] == "2025-04-08T14:32:10Z"
    for fact in doc["facts"]:
        assert set(fact) >= FACT_KEYS
    assert any(
        f["entity"] == "John" and f["field"] == "email" and f["value"] == "john@example.com"
        for f in doc["facts"]
    )
    scores = [r["score"] for r in doc["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_text_output(vault_dir: Path) -> None:
    proc = run(vault_dir, "search", EMAIL_QUERY)
    assert proc.returncode == 0, proc.stderr
    assert JOHN_ID in proc.stdout
    assert "john@example.com" in proc.stdout


def test_search_limit(vault_dir: Path) -> None:
    doc = run_json(vault_dir, "search", EMAIL_QUERY, "--limit", "2")
    assert len(doc["results"]) == 2
    assert run_json(vault_dir, "search", EMAIL_QUERY, "--limit", "0")["results"] == []


def test_search_queries_file_prints_json_lines_in_order(vault_dir: Path, tmp_path: Path) -> None:
    queries = ["email john", "", "dentist appointment", "   ", "flight to lisbon"]
    path = tmp_path / "queries.txt"
    path.write_text("\n".join(queries) + "\n", encoding="utf-8")
    proc = run(vault_dir, "search", "--queries", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    docs = [json.loads(line) for line in lines]
    assert [d["query"] for d in docs] == ["email john", "dentist appointment", "flight to lisbon"]
    for doc in docs:
        assert set(doc) >= SEARCH_KEYS
    single = run_json(vault_dir, "search", "email john")
    assert stable(docs[0]) == stable(single)


@pytest.mark.parametrize("query", ["email john", "dentist appointment", "flight to lisbon"])
def test_the_command_line_answers_as_the_library_does(vault_dir: Path, query: str) -> None:
    """A fresh process imports only what a search needs; the answer is the same."""
    from memoryclaw import Vault

    shown = run_json(vault_dir, "search", query)
    with Vault(vault_dir, env={}) as vault:
        assert stable(shown) == stable(json.loads(json.dumps(vault.search(query).as_dict())))


def test_search_queries_from_stdin(vault_dir: Path) -> None:
    proc = run(vault_dir, "search", "--queries", "-", "--json", stdin="email john\ndentist\n")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["query"] for x in proc.stdout.splitlines()] == ["email john", "dentist"]


@pytest.mark.parametrize(
    "args",
    [
        ["search", "--queries", "QFILE"],  # --queries needs --json
        ["search", "--json"],  # neither QUERY nor --queries
        ["search", "email", "--queries", "QFILE", "--json"],  # both
        ["search", "x", "--limit", "-1"],
    ],
)
def test_search_usage_errors_exit_2(vault_dir: Path, tmp_path: Path, args: list[str]) -> None:
    qfile = tmp_path / "q.txt"
    qfile.write_text("email john\n", encoding="utf-8")
    proc = run(vault_dir, *[str(qfile) if a == "QFILE" else a for a in args])
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""


# --------------------------------------------------------------------------- retrieve


def test_retrieve_json_payload(vault_dir: Path) -> None:
    doc = run_json(vault_dir, "retrieve", "email John")
    assert {"query", "context", "working_memory", "tokens", "budget", "episodes", "facts"} <= set(
        doc
    )
    assert set(doc["working_memory"]) >= {
        "goal",
        "plan",
        "facts",
        "recent_observations",
        "active_skill",
    }
    assert doc["budget"] == 800
    assert 0 < doc["tokens"] <= doc["budget"]
    assert doc["context"].startswith("<memoryclaw>")
    assert doc["context"].endswith("</memoryclaw>")
    assert "john@example.com" in doc["context"]
    assert JOHN_ID in {e["id"] for e in doc["episodes"]}


def test_retrieve_respects_budget_from_env(vault_dir: Path) -> None:
    small = run_json(
        vault_dir, "retrieve", "email John", env=clean_env(MEMORYCLAW_RETRIEVAL_BUDGETTOKENS="60")
    )
    assert small["budget"] == 60
    assert small["tokens"] <= 60
    if small["context"]:
        assert small["context"].startswith("<memoryclaw>")
        assert small["context"].endswith("</memoryclaw>")
    tiny = run_json(
        vault_dir, "retrieve", "email John", env=clean_env(MEMORYCLAW_RETRIEVAL_BUDGETTOKENS="1")
    )
    assert tiny["budget"] == 1
    assert tiny["context"] == ""
    assert tiny["tokens"] == 0


def test_retrieve_text_output(vault_dir: Path) -> None:
    proc = run(vault_dir, "retrieve", "email John")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<memoryclaw>")
    assert "tokens:" in proc.stderr


# ------------------------------------------------------------------------------- init


def test_init_creates_vault(tmp_path: Path) -> None:
    target = tmp_path / "new"
    proc = run(None, "init", str(target))
    assert proc.returncode == 0, proc.stderr
    for folder in ("episodes", "semantic", "logs", "logs/processed", "skills"):
        assert (target / folder).is_dir(), folder
    assert (target / "memoryclaw.yaml").is_file()
    assert ".memoryclaw/" in (target / ".gitignore").read_text(encoding="utf-8").split()
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert stat.S_IMODE((target / "episodes").stat().st_mode) == 0o700
    assert stat.S_IMODE((target / "memoryclaw.yaml").stat().st_mode) == 0o600
    # The written vault works straight away.
    doc = run_json(target, "search", "anything")
    assert doc["results"] == [] and doc["facts"] == []
    assert run_json(target, "doctor")["ok"] is True


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_init_git(tmp_path: Path) -> None:
    target = tmp_path / "gitvault"
    doc = run_json(None, "init", "--git", str(target))
    assert doc["git"] is True
    assert (target / ".git").is_dir()
    run_json(target, "search", "anything")  # creates .memoryclaw/index.db
    assert (target / ".memoryclaw").is_dir()
    ignored = subprocess.run(
        ["git", "-C", str(target), "check-ignore", "-q", ".memoryclaw/index.db"],
        capture_output=True,
        check=False,
    )
    assert ignored.returncode == 0
    again = run_json(None, "init", "--git", str(target))
    assert again["git"] is True


def _git_lines(root: Path, *args: str) -> list[str]:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_init_git_makes_the_first_commit(tmp_path: Path) -> None:
    target = tmp_path / "new"
    doc = run_json(None, "init", "--git", str(target))
    assert doc["commit"]
    assert _git_lines(target, "ls-files") == [".gitattributes", ".gitignore", "memoryclaw.yaml"]
    assert _git_lines(target, "status", "--porcelain") == []
    assert _git_lines(target, "log", "--format=%H") == [doc["commit"]]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_init_git_on_a_folder_commits_its_memories_but_no_live_log(tmp_path: Path) -> None:
    target = tmp_path / "existing"
    assert run(None, "init", str(target)).returncode == 0
    logged = run_json(target, "log", "--session", "s1", "--role", "user", "my pin is 4711")
    (target / "semantic" / "contacts.md").write_text("- Dentist: Dr. Lena Hoffman\n")
    (target / ".env").write_text("OPENAI_API_KEY=sk-not-for-git\n")  # outside memory folders
    proc = run(None, "init", "--git", str(target))
    assert proc.returncode == 0, proc.stderr
    assert "(the first commit)" in proc.stdout
    tracked = _git_lines(target, "ls-files")
    assert tracked == [".gitattributes", ".gitignore", "memoryclaw.yaml", "semantic/contacts.md"]
    untracked = _git_lines(target, "status", "--porcelain", "--untracked-files=all")
    assert sorted(untracked) == ["?? .env", f"?? {logged['path']}"]
    again = run_json(None, "init", "--git", str(target))  # a repository with a commit: left be
    assert again["commit"] is None
    assert len(_git_lines(target, "log", "--format=%H")) == 1


def test_init_twice_keeps_edited_config(tmp_path: Path) -> None:
    target = tmp_path / "twice"
    assert run(None, "init", str(target)).returncode == 0
    config = target / "memoryclaw.yaml"
    config.write_text("retrieval:\n  maxResults: 3\n", encoding="utf-8")
    (target / ".gitignore").write_text("*.tmp\n", encoding="utf-8")
    proc = run(None, "init", str(target))
    assert proc.returncode == 0, proc.stderr
    assert config.read_text(encoding="utf-8") == "retrieval:\n  maxResults: 3\n"
    gitignore = (target / ".gitignore").read_text(encoding="utf-8")
    assert "*.tmp" in gitignore and ".memoryclaw/" in gitignore.split()


def test_init_uses_vault_option_and_env(tmp_path: Path) -> None:
    by_option = tmp_path / "by-option"
    assert run(by_option, "init").returncode == 0
    assert (by_option / "episodes").is_dir()
    by_env = tmp_path / "by-env"
    assert run(None, "init", env=clean_env(MEMORYCLAW_VAULT=str(by_env))).returncode == 0
    assert (by_env / "episodes").is_dir()


def test_init_on_a_file_is_a_user_error(tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("x", encoding="utf-8")
    proc = run(None, "init", str(target))
    assert proc.returncode == 1
    assert "not a folder" in one_error_line(proc)
    assert target.read_text(encoding="utf-8") == "x"


# -------------------------------------------------------------------------------- log


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """A brand-new empty vault made by ``memoryclaw init``."""
    target = tmp_path / "fresh"
    assert run(None, "init", str(target)).returncode == 0
    return target


def test_log_turns_in_spec_format(fresh: Path) -> None:
    session = "agent:main:telegram:12345"
    first = run_json(
        fresh,
        "log",
        "--session",
        session,
        "--role",
        "user",
        "--channel",
        "telegram",
        "--timestamp",
        "2025-04-08T14:30:02Z",
        "Please email John the project update. my api key is sk-abcdefghijklmnopqrstuv",
    )
    assert first["turn"] == 1 and first["session"] == session
    path = first["path"]
    assert path == "logs/2025-04-08_14-30-02_telegram_raw.md"
    calls = [
        ("--role", "tool_call", "--tool", "send_email", "--timestamp", "2025-04-08T14:30:40Z"),
        ("--role", "assistant", "--timestamp", "2025-04-08T14:30:41Z"),
    ]
    texts = ['{"to": "john@example.com", "subject": "Project update"}', "Done: sent to John."]
    for turn, (options, text) in enumerate(zip(calls, texts), start=2):
        logged = run_json(fresh, "log", "--session", session, *options, text)
        assert logged == {"path": path, "turn": turn, "session": session}
    from_stdin = run_json(
        fresh,
        "log",
        "--session",
        session,
        "--role",
        "user",
        "--name",
        "Caroline",
        "--timestamp",
        "2025-04-08T14:31:00Z",
        "-",
        stdin="Thanks!\nAlso remind me tomorrow.\n",
    )
    assert from_stdin["turn"] == 4 and from_stdin["path"] == path

    log_file = fresh / path
    text = log_file.read_text(encoding="utf-8")
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600
    head, sep, body = text.partition("\n---\n")
    assert head.startswith("---\n") and sep
    for line in (
        "channel: telegram",
        f"session: {session}",
        "agent: main",
        "processed: false",
    ):
        assert line in head.splitlines(), line
    assert "id: log-2025-04-08T14-30-02-telegram-" in head
    assert "2025-04-08T14:30:02Z" in head
    assert body == (
        "### user · 2025-04-08T14:30:02Z\n"
        "Please email John the project update. my api key is [REDACTED:api-key]\n"
        "\n"
        "### tool_call · send_email · 2025-04-08T14:30:40Z\n"
        '{"to": "john@example.com", "subject": "Project update"}\n'
        "\n"
        "### assistant · 2025-04-08T14:30:41Z\n"
        "Done: sent to John.\n"
        "\n"
        "### user (Caroline) · 2025-04-08T14:31:00Z\n"
        "Thanks!\n"
        "Also remind me tomorrow.\n"
    )
    everything = b"".join(snapshot(fresh).values())
    assert b"sk-abcdefghijklmnopqrstuv" not in everything


def test_log_default_channel_and_text_output(fresh: Path) -> None:
    proc = run(fresh, "log", "--session", "s1", "--role", "user", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "turn 1" in proc.stdout
    logs = list((fresh / "logs").glob("*_cli_raw.md"))
    assert len(logs) == 1


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--session", "s", "--role", "User"], "role"),
        (["--session", "s", "--role", "user", "--timestamp", "yesterday-ish"], "timestamp"),
        (["--session", " ", "--role", "user"], "session"),
    ],
)
def test_log_rejects_bad_arguments(fresh: Path, args: list[str], field: str) -> None:
    proc = run(fresh, "log", *args, "hi")
    assert proc.returncode == 1
    assert field in one_error_line(proc)
    assert list((fresh / "logs").glob("*.md")) == []


# ----------------------------------------------------------------------------- ingest


def _jsonl(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _turn(session: str, role: str, content: str, second: int, **extra: str) -> dict[str, str]:
    return {
        "session": session,
        "role": role,
        "content": content,
        "timestamp": f"2025-05-01T10:00:{second:02d}Z",
        **extra,
    }


def test_ingest_two_interleaved_sessions(fresh: Path, tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "turns.jsonl",
        [
            _turn("A", "user", "a1", 0, channel="telegram"),
            _turn("B", "user", "b1", 1),
            _turn("A", "assistant", "a2", 2),
            _turn("B", "tool_call", '{"q": 1}', 3, tool="search"),
            _turn("A", "user", "a3", 4, name="Caroline"),
            _turn("B", "assistant", "b2", 5),
        ],
    )
    report = run_json(fresh, "ingest", str(source))
    assert report["turns"] == 6
    assert report["sessions"] == ["A", "B"]
    assert len(report["logs"]) == 2
    log_a, log_b = (fresh / p for p in report["logs"])
    assert log_a.name == "2025-05-01_10-00-00_telegram_raw.md"
    assert sorted(p.name for p in (fresh / "logs").glob("*.md")) == sorted([log_a.name, log_b.name])
    text_a, text_b = log_a.read_text(encoding="utf-8"), log_b.read_text(encoding="utf-8")
    for text, session in ((text_a, "A"), (text_b, "B")):
        head = text.split("\n---\n", 1)[0].splitlines()
        assert "closed: true" in head
        assert f"session: {session}" in head
    headers_a = [line for line in text_a.splitlines() if line.startswith("### ")]
    assert headers_a == [
        "### user · 2025-05-01T10:00:00Z",
        "### assistant · 2025-05-01T10:00:02Z",
        "### user (Caroline) · 2025-05-01T10:00:04Z",
    ]
    assert text_a.index("a1") < text_a.index("a2") < text_a.index("a3")
    assert "b1" not in text_a
    headers_b = [line for line in text_b.splitlines() if line.startswith("### ")]
    assert headers_b == [
        "### user · 2025-05-01T10:00:01Z",
        "### tool_call · search · 2025-05-01T10:00:03Z",
        "### assistant · 2025-05-01T10:00:05Z",
    ]
    assert "a1" not in text_b


@pytest.mark.parametrize(
    "command",
    [["consolidate"], ["daemon", "--once"], ["import-notes", "NOTES", "--dry-run"]],
    ids=["consolidate", "daemon-once", "import-notes"],
)
def test_long_commands_say_what_runs_on_a_terminal(
    vault_dir: Path, tmp_path: Path, command: list[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dentist.md").write_text("- Dentist: Dr. Lena Hoffman\n")
    command = [str(notes) if part == "NOTES" else part for part in command]
    base = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), *command]
    code, out, shown = on_a_terminal(base, clean_env())
    assert code == 0, shown
    [line] = shown.splitlines()
    assert line.startswith(("consolidating ", "reading the notes in ")) and " done (" in line
    code, out, shown = on_a_terminal([*base, "--json"], clean_env())
    assert code == 0 and shown == "" and json.loads(out)


@pytest.mark.parametrize(
    ("count", "shown"),
    [(0, "0 daily notes"), (1, "1 daily note"), (2, "2 daily notes")],
    ids=["none", "one", "two"],
)
def test_plural_says_one_in_the_singular(count: int, shown: str) -> None:
    assert plural(count, "daily note") == shown
    assert plural(count, "entry", "entries").endswith("entry" if count == 1 else "entries")


def test_counts_of_one_read_in_the_singular(fresh: Path, tmp_path: Path) -> None:
    turns = [
        _turn("A", "user", "I moved to Berlin last week", 0),
        _turn("A", "assistant", "Noted: you live in Berlin now", 1),
    ]
    ingested = run(fresh, "ingest", str(_jsonl(tmp_path / "one.jsonl", turns)))
    assert ingested.stdout.strip() == "2 turns into 1 log (1 session)"
    consolidated = run(fresh, "consolidate")
    assert consolidated.returncode == 0, consolidated.stderr
    assert consolidated.stdout.startswith("1 log -> 1 episode, ")
    assert " 0 conflicts, 0 skills suggested, " in consolidated.stdout


def test_ingest_from_stdin(fresh: Path) -> None:
    line = json.dumps(_turn("S", "user", "hello from stdin", 0))
    proc = run(fresh, "ingest", "-", stdin=line + "\n")
    assert proc.returncode == 0, proc.stderr
    assert "1 turn " in proc.stdout


def test_ingest_malformed_line_writes_nothing(fresh: Path, tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "bad.jsonl",
        [_turn("A", "user", "a1", 0), _turn("B", "user", "b1", 1), "this is {not json"],
    )
    before = snapshot(fresh)
    proc = run(fresh, "ingest", str(source))
    assert proc.returncode == 1
    message = one_error_line(proc)
    assert "bad.jsonl" in message
    assert ":3" in message
    assert "JSON" in message
    assert snapshot(fresh) == before
    assert list((fresh / "logs").glob("*.md")) == []


def test_ingest_record_missing_session_names_key_and_line(fresh: Path, tmp_path: Path) -> None:
    bad = _turn("A", "user", "x", 1)
    del bad["session"]
    source = _jsonl(tmp_path / "nosession.jsonl", [_turn("A", "user", "a1", 0), bad])
    proc = run(fresh, "ingest", str(source))
    assert proc.returncode == 1
    message = one_error_line(proc)
    assert "nosession.jsonl:2" in message
    assert "session" in message
    assert list((fresh / "logs").glob("*.md")) == []


def test_ingest_error_line_counts_blank_lines(fresh: Path, tmp_path: Path) -> None:
    bad = _turn("A", "user", "x", 1)
    del bad["session"]
    source = tmp_path / "gaps.jsonl"
    source.write_text(json.dumps(_turn("A", "user", "a1", 0)) + "\n\n" + json.dumps(bad) + "\n")
    proc = run(fresh, "ingest", str(source))
    assert proc.returncode == 1
    assert "gaps.jsonl:3" in one_error_line(proc)


@pytest.mark.parametrize(
    ("record", "key"),
    [
        ({"session": "A", "role": "user"}, "content"),
        ({"session": "A", "role": "user", "content": 5}, "content"),
        ({"session": "A", "role": "user", "content": "x", "colour": "red"}, "colour"),
        ({"session": "A", "role": "user", "content": "x", "timestamp": "soon"}, "timestamp"),
        ([1, 2, 3], "object"),
    ],
)
def test_ingest_bad_records(fresh: Path, tmp_path: Path, record: Any, key: str) -> None:
    source = tmp_path / "r.jsonl"
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    proc = run(fresh, "ingest", str(source))
    assert proc.returncode == 1
    message = one_error_line(proc)
    assert key in message and "r.jsonl:1" in message
    assert list((fresh / "logs").glob("*.md")) == []


def test_ingest_missing_file(fresh: Path, tmp_path: Path) -> None:
    proc = run(fresh, "ingest", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 1
    assert "nope.jsonl" in one_error_line(proc)


# ---------------------------------------------------------------------------- reindex


def test_reindex_reports(vault_dir: Path) -> None:
    first = run_json(vault_dir, "reindex")
    assert set(first) >= {"added", "changed", "deleted", "moved", "unchanged", "skipped", "took_ms"}
    indexed = (
        len(list((vault_dir / "episodes").glob("*.md")))
        + len([p for p in (vault_dir / "semantic").iterdir() if _indexed(p.name)])
        + len(list((vault_dir / "logs").glob("*.md")))  # raw logs: recalled as they come
    )
    assert first["added"] == indexed
    assert first["skipped"] == []
    second = run_json(vault_dir, "reindex")
    assert second["added"] == 0 and second["changed"] == 0 and second["unchanged"] == indexed
    full = run_json(vault_dir, "reindex", "--full")
    assert full["added"] == indexed
    text = run(vault_dir, "reindex")
    assert text.returncode == 0 and "unchanged" in text.stdout


def test_index_is_disposable(vault_dir: Path) -> None:
    queries = [EMAIL_QUERY, "dentist appointment", "flight to lisbon", "Marco phone"]
    before = [stable(run_json(vault_dir, "search", q)) for q in queries]
    assert (vault_dir / ".memoryclaw").is_dir()
    shutil.rmtree(vault_dir / ".memoryclaw")
    report = run_json(vault_dir, "reindex")
    assert report["added"] > 0
    after = [stable(run_json(vault_dir, "search", q)) for q in queries]
    assert after == before
    assert before[0]["results"] and before[0]["facts"]


def test_index_deleted_without_reindex_is_rebuilt_by_search(vault_dir: Path) -> None:
    before = stable(run_json(vault_dir, "search", EMAIL_QUERY))
    shutil.rmtree(vault_dir / ".memoryclaw")
    assert stable(run_json(vault_dir, "search", EMAIL_QUERY)) == before


# ---------------------------------------------------------------- hand edits, no reindex


def _ids(doc: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["path"] for r in doc["results"]}


def test_hand_edit_is_seen_by_next_search(vault_dir: Path) -> None:
    assert run_json(vault_dir, "search", "quokka")["results"] == []
    path = vault_dir / JOHN
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("project update email", "quokka project update email"))
    doc = run_json(vault_dir, "search", "quokka")
    assert _ids(doc) == {JOHN_ID: JOHN}


def test_hand_delete_is_seen_by_next_search(vault_dir: Path) -> None:
    assert JOHN_ID in _ids(run_json(vault_dir, "search", EMAIL_QUERY))
    (vault_dir / JOHN).unlink()
    assert JOHN_ID not in _ids(run_json(vault_dir, "search", EMAIL_QUERY))


def test_hand_move_is_seen_by_next_search(vault_dir: Path) -> None:
    assert _ids(run_json(vault_dir, "search", EMAIL_QUERY))[JOHN_ID] == JOHN
    archive = vault_dir / "episodes" / "2025" / "april"
    archive.mkdir(parents=True)
    (vault_dir / JOHN).rename(archive / Path(JOHN).name)
    moved = "episodes/2025/april/2025-04-08_14-32-10_email-john.md"
    assert _ids(run_json(vault_dir, "search", EMAIL_QUERY))[JOHN_ID] == moved
    stats = run_json(vault_dir, "stats")
    assert stats["episodes"] == len(list((vault_dir / "episodes").rglob("*.md")))


def test_hand_written_minimal_episode_is_found(vault_dir: Path) -> None:
    (vault_dir / "episodes" / "note.md").write_text(
        "Talked to the plumber about the leaking zygomorphic tap.\n", encoding="utf-8"
    )
    doc = run_json(vault_dir, "search", "zygomorphic")
    assert [r["path"] for r in doc["results"]] == ["episodes/note.md"]


# ----------------------------------------------------------------- stats, doctor, audit


def test_stats_json(vault_dir: Path) -> None:
    doc = run_json(vault_dir, "stats")
    expected = {
        "vault",
        "episodes",
        "facts",
        "aliases",
        "tags",
        "files_indexed",
        "files_with_errors",
        "logs_unprocessed",
        "logs_open",
        "skills",
        "top_tags",
        "vault_bytes",
        "index_bytes",
    }
    assert expected <= set(doc)
    assert doc["episodes"] == len(list((vault_dir / "episodes").glob("*.md")))
    assert doc["facts"] > 0 and doc["files_with_errors"] == 0
    assert doc["skills"] == 1
    assert all({"tag", "count"} <= set(t) for t in doc["top_tags"])
    assert run(vault_dir, "stats").returncode == 0


def test_stats_shows_recall_metrics_over_a_window(vault_dir: Path) -> None:
    recalled = run_json(vault_dir, "retrieve", EMAIL_QUERY)
    assert run(vault_dir, "retrieve", "thanks!").returncode == 0
    doc = run_json(vault_dir, "stats", "--days", "1")["metrics"]
    assert doc["since"] == doc["until"] and doc["days"] == 1
    assert (doc["recalls"], doc["trivial_skipped"]) == (1, 1)
    assert doc["tokens_injected"] == recalled["tokens"] > 0
    shown = run(vault_dir, "stats", "--since", doc["since"])
    assert shown.returncode == 0, shown.stderr
    block = shown.stdout[shown.stdout.index("recall metrics") :]
    assert f"1; tokens injected {recalled['tokens']:,} mean" in block
    assert "1 trivial message;" in block


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--since", "2999-01-01"], "since: 2999-01-01 is after today"),
        (["--since", "May"], "since"),
    ],
    ids=["future", "not-a-date"],
)
def test_stats_refuses_a_bad_window(vault_dir: Path, args: list[str], words: str) -> None:
    proc = run(vault_dir, "stats", *args)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("memoryclaw: error: ") and words in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_doctor_json(vault_dir: Path) -> None:
    doc = run_json(vault_dir, "doctor")
    assert doc["ok"] is True
    assert doc["checks"]
    for check in doc["checks"]:
        assert set(check) == {"check", "status", "detail"}
    names = {c["check"] for c in doc["checks"]}
    assert {"config", "folders", "sqlite", "index"} <= names
    assert run(vault_dir, "doctor").returncode == 0


def test_audit_json(vault_dir: Path) -> None:
    doc = run_json(vault_dir, "audit", "--days", "100000")
    assert set(doc) >= {"since", "episodes", "facts", "errors"}
    assert JOHN_ID in {e["id"] for e in doc["episodes"]}
    for episode in doc["episodes"]:
        assert {"id", "path", "timestamp", "summary", "confidence", "source"} <= set(episode)
    assert doc["facts"], "machine-written facts expected"
    for fact in doc["facts"]:
        assert fact["source"] != "hand"
    assert doc["errors"] == []
    assert run(vault_dir, "audit").returncode == 0


# ----------------------------------------------------------------------------- forget


def test_forget_episode(vault_dir: Path) -> None:
    assert JOHN_ID in _ids(run_json(vault_dir, "search", EMAIL_QUERY))
    report = run_json(vault_dir, "forget", "--episode", JOHN_ID)
    assert report["episodes"] == [JOHN_ID]
    assert report["files_deleted"] == [JOHN]
    assert report["dry_run"] is False
    assert not (vault_dir / JOHN).exists()
    assert JOHN_ID not in _ids(run_json(vault_dir, "search", EMAIL_QUERY))


def test_forget_unknown_episode(vault_dir: Path) -> None:
    before = snapshot(vault_dir)
    proc = run(vault_dir, "forget", "--episode", "ep-nope")
    assert proc.returncode == 1
    assert "ep-nope" in one_error_line(proc)
    assert snapshot(vault_dir) == before


def test_forget_fact_removes_only_that_line(vault_dir: Path) -> None:
    doc = run_json(vault_dir, "search", "John email")
    fact = next(
        f
        for f in doc["facts"]
        if f["entity"] == "John" and f["field"] == "email" and f["path"] == "semantic/contacts.md"
    )
    contacts = vault_dir / "semantic" / "contacts.md"
    before = contacts.read_bytes().split(b"\n")
    assert before[fact["line"] - 1] == b"- John: john@example.com"
    report = run_json(vault_dir, "forget", "--fact", fact["id"])
    assert report["facts"] == [fact["id"]]
    assert report["files_edited"] == ["semantic/contacts.md"]
    after = contacts.read_bytes().split(b"\n")
    assert after == before[: fact["line"] - 1] + before[fact["line"] :]
    ids = {f["id"] for f in run_json(vault_dir, "search", "John email")["facts"]}
    assert fact["id"] not in ids


def test_forget_query_needs_yes_without_a_tty(vault_dir: Path) -> None:
    before = snapshot(vault_dir)
    proc = run(vault_dir, "forget", "dentist")
    assert proc.returncode == 1
    assert "--yes" in one_error_line(proc)
    assert snapshot(vault_dir) == before


def test_forget_query_dry_run_deletes_nothing(vault_dir: Path) -> None:
    before = snapshot(vault_dir)
    report = run_json(vault_dir, "forget", "dentist", "--dry-run")
    assert report["dry_run"] is True
    assert report["episodes"] and report["changes"] and report["files_edited"]
    assert snapshot(vault_dir) == before


def test_forget_query_with_yes_deletes(vault_dir: Path) -> None:
    preview = run_json(vault_dir, "forget", "dentist", "--dry-run")
    report = run_json(vault_dir, "forget", "dentist", "--yes")
    assert report["dry_run"] is False
    assert report["episodes"] == preview["episodes"]
    for path in report["files_deleted"]:
        assert not (vault_dir / path).exists()
    found = run_json(vault_dir, "search", "dentist")
    quoted = [p["text"] for r in found["results"] for p in r["passages"]]
    assert not [text for text in quoted if "dentist" in text.lower()]
    assert not [f for f in found["facts"] if "dentist" in json.dumps(f).lower()]


def test_delete_is_an_alias_of_forget(vault_dir: Path) -> None:
    report = run_json(vault_dir, "delete", "--episode", JOHN_ID)
    assert report["episodes"] == [JOHN_ID]
    assert not (vault_dir / JOHN).exists()


@pytest.mark.parametrize(
    "args",
    [
        ["forget"],
        ["forget", "dentist", "--episode", JOHN_ID],
        ["forget", "--episode", JOHN_ID, "--fact", "f-x"],
    ],
)
def test_forget_usage_errors(vault_dir: Path, args: list[str]) -> None:
    before = snapshot(vault_dir)
    assert run(vault_dir, *args).returncode == 2
    assert snapshot(vault_dir) == before


class _TtySys:
    """``sys`` as the CLI sees it, except that stdin claims to be a terminal."""

    class _Stdin:
        def __getattr__(self, name: str) -> Any:
            return getattr(sys.stdin, name)

        def isatty(self) -> bool:
            return True

    stdin = _Stdin()

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


@pytest.mark.parametrize(("answer", "removed"), [("n\n", False), ("y\n", True)])
def test_forget_query_asks_on_a_terminal(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, answer: str, removed: bool
) -> None:
    """On a terminal ``forget QUERY`` lists the matches and asks (CliRunner, faked tty)."""
    import memoryclaw.cli.forgetting as forgetting_module

    monkeypatch.setattr(forgetting_module, "sys", _TtySys())
    for name in [k for k in os.environ if k.upper().startswith("MEMORYCLAW_")]:
        monkeypatch.delenv(name)
    before = snapshot(vault_dir)
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "forget", "dentist"], input=answer)
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "remove these" in output
    if removed:
        assert result.exit_code == 0, output
        assert not (vault_dir / "episodes/2025-01-15_19-40-02_dentist-appointment.md").exists()
    else:
        assert result.exit_code == 1
        assert snapshot(vault_dir) == before


# -------------------------------------------------------------------------- exit codes


def test_unknown_command_exits_2(vault_dir: Path) -> None:
    proc = run(vault_dir, "frobnicate")
    assert proc.returncode == 2
    assert proc.stdout == ""


def test_missing_vault_exits_1_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    for args in (["search", "john", "--json"], ["retrieve", "john"], ["stats"], ["reindex"]):
        proc = run(missing, *args)
        assert proc.returncode == 1, args
        line = one_error_line(proc)
        assert str(missing) in line
        assert proc.stdout == ""
    log = run(missing, "log", "--session", "s", "--role", "user", "hi")
    assert log.returncode == 1
    one_error_line(log)
    assert not missing.exists()


def test_missing_vault_from_env(tmp_path: Path) -> None:
    missing = tmp_path / "env-nowhere"
    proc = run(None, "search", "john", env=clean_env(MEMORYCLAW_VAULT=str(missing)))
    assert proc.returncode == 1
    assert str(missing) in one_error_line(proc)


def test_invalid_config_names_key_and_file(vault_dir: Path) -> None:
    config = vault_dir / "memoryclaw.yaml"
    config.write_text("retrieval: {maxResults: lots}\n", encoding="utf-8")
    proc = run(vault_dir, "search", "john", "--json")
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "retrieval.maxResults" in line
    assert "memoryclaw.yaml" in line
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("retrieval:\n  maxResult: 3\n", "retrieval.maxResult"),
        ("retrieval: [1, 2]\n", "retrieval"),
        ("retrival:\n  maxResults: 3\n", "retrival"),
        ("retrieval:\n  maxResults: 3\n   bad: indent\n", "line"),
        ("retrieval:\n  fallback: telepathy\n", "retrieval.fallback"),
    ],
)
def test_other_invalid_configs(vault_dir: Path, content: str, needle: str) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(content, encoding="utf-8")
    proc = run(vault_dir, "search", "john")
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert needle in line and "memoryclaw.yaml" in line


def test_invalid_env_override_names_variable(vault_dir: Path) -> None:
    proc = run(vault_dir, "search", "john", env=clean_env(MEMORYCLAW_RETRIEVAL_MAXRESULTS="many"))
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "MEMORYCLAW_RETRIEVAL_MAXRESULTS" in line and "retrieval.maxResults" in line


def test_out_of_range_env_override_names_variable(vault_dir: Path) -> None:
    proc = run(vault_dir, "search", "john", env=clean_env(MEMORYCLAW_RETRIEVAL_BUDGETTOKENS="0"))
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "MEMORYCLAW_RETRIEVAL_BUDGETTOKENS" in line and "retrieval.budgetTokens" in line


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every command the CLI has, as typed: ``search``, ``openclaw install``."""
    paths = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            paths += _command_paths(command, (*prefix, name))
        else:
            paths.append(" ".join((*prefix, name)))
    return paths


def test_every_command_is_in_the_command_reference_table() -> None:
    reference = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    section = reference.read_text(encoding="utf-8").split("\n## ", 1)[0]
    first_cells = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    listed = [usage for cell in first_cells for usage in re.findall(r"`([^`]+)`", cell)]
    commands = _command_paths(cli)
    assert {"sync", "export", "import", "facts set", "facts history"} <= set(commands)
    missing = [c for c in commands if not any(u == c or u.startswith(f"{c} ") for u in listed)]
    assert missing == []


def test_the_readmes_install_from_the_checkout_and_the_openclaw_flow_needs_no_vault() -> None:
    root = Path(__file__).resolve().parents[2]
    for readme in (root / "README.md", root / "plugins" / "openclaw" / "README.md"):
        text = readme.read_text(encoding="utf-8")
        assert "pip install -e ." in text, readme  # memoryclaw is not on PyPI
        assert not re.search(r"pip install (-U )?'?memoryclaw", text), readme
    text = (root / "README.md").read_text(encoding="utf-8")
    section = text.split("\n### Use with OpenClaw\n", 1)[1].split("\n#", 1)[0]
    flow = section.split("```bash\n", 1)[1].split("```", 1)[0]
    # the reference page shows the same flow
    assert flow in (root / "docs" / "openclaw.md").read_text(encoding="utf-8")
    # every later command finds the vault init made: the default one, no --vault needed
    assert "memoryclaw init --git" in flow and "--vault" not in flow
    assert "~/.openclaw/workspace/memoryclaw/" in flow


def test_version_and_help() -> None:
    version = run(None, "--version")
    assert version.returncode == 0 and "memoryclaw" in version.stdout
    helped = run(None, "--help")
    assert helped.returncode == 0
    for command in ("init", "log", "ingest", "search", "retrieve", "reindex", "forget"):
        assert command in helped.stdout


def test_console_script_matches_module(vault_dir: Path) -> None:
    script = Path(sys.executable).with_name("memoryclaw")
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    proc = subprocess.run(
        [str(script), "--vault", str(vault_dir), "search", EMAIL_QUERY, "--json"],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert stable(json.loads(proc.stdout)) == stable(run_json(vault_dir, "search", EMAIL_QUERY))


def test_closed_pipe_is_quiet(vault_dir: Path, tmp_path: Path) -> None:
    queries = tmp_path / "many.txt"
    queries.write_text("email John falcon lisbon\n" * 400)  # far more than a pipe buffer
    command = ["search", "--queries", str(queries), "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 1  # stopped early, quietly
    assert b"Traceback" not in err and b"error" not in err


def test_search_explains_what_a_group_may_not_see(vault_dir: Path) -> None:
    logged = run(
        vault_dir, "log", "--session", "team-chat", "--kind", "group", "--role", "user",
        "--sender", "tg:5", "--name", "Mallory", "Ship the blood bank tickets on Friday",
    )  # fmt: skip
    assert logged.returncode == 0, logged.stderr
    asking = ("--session", "team-chat", "--kind", "group")
    proc = run(vault_dir, "search", "dentist blood bank", *asking, "--explain-scope")
    assert proc.returncode == 0, proc.stderr
    assert "admitted: made in this conversation" in proc.stdout
    assert "withheld:" in proc.stdout
    assert "owner-level memory; not recalled where other people read" in proc.stdout
    doc = run_json(vault_dir, "search", "dentist blood bank", *asking, "--explain-scope")
    assert doc["context"] == {"agent": None, "session": "team-chat", "kind": "group"}
    assert {w["kind"] for w in doc["withheld"]} >= {"episode", "fact"}
    assert all(r["scope"] == "group:team-chat" for r in doc["results"] + doc["recent"])
    log_text = (vault_dir / logged.stdout.split(" turn ")[0]).read_text("utf-8")
    assert "kind: group\n" in log_text and "scope: group:team-chat\n" in log_text
    assert "### participant (Mallory) [tg:5] · " in log_text
    owner = run_json(vault_dir, "search", "dentist blood bank")
    assert "withheld" not in owner and owner["results"]


def test_an_unknown_kind_is_a_usage_error(vault_dir: Path) -> None:
    proc = run(vault_dir, "retrieve", "dentist", "--kind", "broadcast")
    assert proc.returncode == 2 and "broadcast" in proc.stderr


@pytest.mark.parametrize(
    ("name", "shown"),
    [("no\nsuch", "no\\nsuch"), ("no\u202esuch", "no\\u202esuch")],
    ids=["newline", "right-to-left-override"],
)
def test_an_error_quoting_an_outside_value_is_one_escaped_line(
    tmp_path: Path, name: str, shown: str
) -> None:
    vault = tmp_path / name
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "search", "x"]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"memoryclaw: error: {tmp_path}/{shown}: no such folder")


@pytest.mark.parametrize(
    ("name", "shown"),
    [("ev\nil.md", "ev\\nil.md"), ("red\x1b[31m.md", "red\\x1b[31m.md")],
    ids=["newline", "escape-sequence"],
)
def test_forget_shows_a_file_name_from_elsewhere_on_one_escaped_line(
    tmp_path: Path, name: str, shown: str
) -> None:
    """A synced or hand-made episode's file name is an outside value: the forget report names
    it escaped, so it can neither add a line of its own nor drive the terminal."""
    vault = tmp_path / "v"
    run = [sys.executable, "-m", "memoryclaw", "--vault", str(vault)]
    subprocess.run([*run, "init"], capture_output=True, check=True)
    (vault / "episodes" / name).write_text(
        "---\nsummary: Okapi sighting at the zoo\n---\n- We saw an okapi\n- It rained\n"
    )
    proc = subprocess.run(
        [*run, "forget", "okapi", "--yes"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and f"episodes/{shown}" in proc.stdout
    assert all(line.startswith(("removed ", "  ", "kept ")) for line in proc.stdout.splitlines())


# Modules no recall or logged turn runs: an agent's host starts `memoryclaw retrieve` and
# `memoryclaw log` afresh every turn, and each module imported is start-up paid every turn.
_NEVER_PER_TURN = {
    "concurrent.futures",  # a thread pool, for syncing many files at once
    "subprocess",  # git: history, sync, team pulls
    "memoryclaw.api.consolidating",
    "memoryclaw.api.forgetting",
    "memoryclaw.api.health",
    "memoryclaw.api.syncing",
    "memoryclaw.consolidate.pipeline",
    "memoryclaw.importers.workspace",
    "memoryclaw.share.git",
    "memoryclaw.share.history",
    "memoryclaw.share.sync",
}
# A command run once (unlike the server) loads logging with its first warning only.
_UNTIL_A_WARNING = {"logging"}
# A recall without a session reads no raw log and writes none, hashes nothing and parses no
# fact file (the index is current); it reads a plain memoryclaw.yaml and frontmatter without
# PyYAML.
_NOT_FOR_A_RECALL = _UNTIL_A_WARNING | {
    "hashlib",
    "secrets",
    "yaml",
    "memoryclaw.api.importing",
    "memoryclaw.consolidate.skills",  # the active skill is chosen by vault.skillfiles
    "memoryclaw.vault.facts",
    "memoryclaw.vault.logformat",
    "memoryclaw.vault.rawlogs",
}
# Logging a turn searches nothing.
_NOT_FOR_A_LOG = _UNTIL_A_WARNING | {
    "memoryclaw.api.recalling",
    "memoryclaw.recall.retrieval",
    "memoryclaw.recall.results",
    "memoryclaw.share.teams",
}
_RUN_AND_LIST_MODULES = """
import sys
from memoryclaw.cli import cli
try:
    cli.main(sys.argv[2:], prog_name="memoryclaw")
except SystemExit as exit:
    assert not exit.code, exit.code
with open(sys.argv[1], "w", encoding="utf-8") as out:
    out.write("\\n".join(sorted(sys.modules)))
"""


# What the OpenClaw plugin's server is sent in a turn: a recall, then the turn logged.
_A_TURN_THROUGH_THE_SERVER = "".join(
    json.dumps({"id": n, "method": method, "params": params}) + "\n"
    for n, (method, params) in enumerate(
        [
            ("retrieve", {"query": EMAIL_QUERY, "session": "agent:main:s-new"}),
            ("log_turn", {"session": "agent:main:s-new", "role": "user", "text": EMAIL_QUERY}),
        ]
    )
)


@pytest.mark.parametrize(
    ("args", "stdin", "unused"),
    [
        (["retrieve", EMAIL_QUERY], "", _NEVER_PER_TURN | _NOT_FOR_A_RECALL),
        (["search", EMAIL_QUERY], "", _NEVER_PER_TURN | _NOT_FOR_A_RECALL),
        (
            ["log", "--session", "s-new", "--role", "user", "hi"],
            "",
            _NEVER_PER_TURN | _NOT_FOR_A_LOG,
        ),
        (["serve", "--stdio"], _A_TURN_THROUGH_THE_SERVER, _NEVER_PER_TURN),
    ],
    ids=["retrieve", "search", "log-first-turn", "server-turn"],
)
def test_a_turn_s_command_imports_only_what_it_runs(
    vault_dir: Path, tmp_path: Path, args: list[str], stdin: str, unused: set[str]
) -> None:
    assert run(vault_dir, "reindex").returncode == 0
    listed = tmp_path / "modules.txt"
    command = [sys.executable, "-c", _RUN_AND_LIST_MODULES, str(listed), "--vault", str(vault_dir)]
    proc = subprocess.run(
        [*command, *args], capture_output=True, text=True, env=clean_env(), input=stdin
    )
    assert proc.returncode == 0, proc.stderr
    assert '"error"' not in proc.stdout  # each request of a server's turn was answered
    loaded = set(listed.read_text(encoding="utf-8").split())
    assert "memoryclaw.index.store" in loaded  # the command did run
    assert not loaded & unused, sorted(loaded & unused)


def _indexed(name: str) -> bool:
    """A semantic file the index reads: a fact file, or the review queue (its conflicts are
    recalled beside the facts they would replace)."""
    return not name.startswith("_") or name == "_pending.md"
