"""The JSON-lines bridge: every method, and every way a request can be wrong."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import server as server_module
from memoryclaw.server import (
    BAD_PARAMS,
    INVALID_REQUEST,
    MEMORY_ERROR,
    NO_METHOD,
    PARSE_ERROR,
    StdioServer,
)
from memoryclaw.transcripts import MAX_TURN_CHARS, unprocessed_logs


@pytest.fixture
def bridge(vault_dir: Path) -> StdioServer:
    return StdioServer(vault_dir, env={})


def call(bridge: StdioServer, method: str, ident: int = 1, **params: Any) -> dict[str, Any]:
    return bridge.handle(json.dumps({"id": ident, "method": method, "params": params}))


def test_retrieve_returns_the_hook_payload(bridge: StdioServer) -> None:
    result = call(bridge, "retrieve", query="what did I email John about")["result"]
    assert result["context"].startswith("<memoryclaw>") and result["tokens"] <= result["budget"]
    assert "John email john@example.com" in result["context"]


def test_search_get_and_status(bridge: StdioServer) -> None:
    found = call(bridge, "search", query="email John", limit=2)["result"]
    assert len(found["results"]) == 2
    episode = call(bridge, "get", id=found["results"][0]["id"])["result"]
    assert episode["kind"] == "episode" and episode["details"]
    status = call(bridge, "status")["result"]
    assert status["episodes"] > 30 and status["version"]


def test_get_by_path_pages_through_a_vault_file(bridge: StdioServer, vault_dir: Path) -> None:
    path = "semantic/contacts.md"
    lines = (vault_dir / path).read_text().splitlines()
    first = call(bridge, "get", path=path, lines=3)["result"]
    assert first["text"].splitlines() == lines[:3] and first["truncated"]
    rest = call(bridge, "get", path=path, **{"from": first["next_from"]})["result"]
    assert rest["text"].splitlines() == lines[3:] and not rest["truncated"]
    assert "next_from" not in rest and rest["total_lines"] == len(lines)


@pytest.mark.parametrize(
    ("params", "code", "words"),
    [
        ({"path": "../outside.md"}, MEMORY_ERROR, "outside"),
        ({"path": "semantic/nope.md"}, MEMORY_ERROR, "no vault file"),
        ({"path": "semantic/contacts.md", "from": 0}, BAD_PARAMS, "from"),
        ({"path": "semantic/contacts.md", "lines": "3"}, BAD_PARAMS, "lines"),
        ({"id": "ep-nope"}, MEMORY_ERROR, "no memory"),
    ],
    ids=["escape", "missing", "from-zero", "lines-text", "unknown-id"],
)
def test_get_refuses_bad_paths_and_ranges(
    bridge: StdioServer, params: dict[str, Any], code: int, words: str
) -> None:
    error = call(bridge, "get", **params)["error"]
    assert error["code"] == code and words in error["message"]


def test_log_turn_and_end_session(bridge: StdioServer, vault_dir: Path) -> None:
    first = call(bridge, "log_turn", session="agent:main:x", role="user", content="hello there")
    second = call(bridge, "log_turn", session="agent:main:x", role="assistant", text="hi!")
    assert first["result"]["turn"] == 1 and second["result"]["turn"] == 2
    closed = call(bridge, "end_session", session="agent:main:x")["result"]["closed"]
    assert closed == [first["result"]["path"]]
    [log] = [g for g in unprocessed_logs(vault_dir) if g.session == "agent:main:x"]
    assert [t.content for t in log.turns] == ["hello there", "hi!"] and log.meta["closed"]


def test_forget_by_query_needs_confirmation(bridge: StdioServer, vault_dir: Path) -> None:
    before = sorted(p.name for p in (vault_dir / "episodes").iterdir())
    refused = call(bridge, "forget", query="dentist")
    assert refused["error"]["code"] == BAD_PARAMS and "confirm" in refused["error"]["message"]
    assert sorted(p.name for p in (vault_dir / "episodes").iterdir()) == before
    done = call(bridge, "forget", query="dentist", confirm=True)["result"]
    assert done["episodes"] and not (vault_dir / done["files_deleted"][0]).exists()


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("not json", PARSE_ERROR),
        ("[1, 2]", INVALID_REQUEST),
        ('{"id": 1}', INVALID_REQUEST),
        ('{"id": 1, "method": "nope"}', NO_METHOD),
        ('{"id": 1, "method": "search", "params": [1]}', BAD_PARAMS),
        ('{"id": 1, "method": "search", "params": {"query": 3}}', BAD_PARAMS),
        ('{"id": 1, "method": "search", "params": {"query": "x", "limit": -1}}', BAD_PARAMS),
        ('{"id": 1, "method": "log_turn", "params": {"role": "user", "content": "x"}}', BAD_PARAMS),
        (
            '{"id": 1, "method": "log_turn", "params": {"session": "s", "role": "user",'
            ' "content": [{"type": "image"}]}}',
            BAD_PARAMS,
        ),
        ('{"id": 1, "method": "get", "params": {"id": "ep-nope"}}', MEMORY_ERROR),
        (b'{"id": 1, "method": "status", "x": "\xff"}', PARSE_ERROR),
    ],
    ids=[
        "not-json",
        "not-object",
        "no-method",
        "unknown-method",
        "params-list",
        "query-type",
        "negative-limit",
        "missing-session",
        "non-text-content",
        "unknown-id",
        "bad-utf8",
    ],
)
def test_bad_requests_get_errors(bridge: StdioServer, line: str | bytes, code: int) -> None:
    response = bridge.handle(line)
    assert response["error"]["code"] == code and response["error"]["message"]
    assert "result" not in response
    assert call(bridge, "status")["result"]["episodes"] > 0  # still serving


def test_huge_message_is_refused_and_nothing_written(bridge: StdioServer, vault_dir: Path) -> None:
    before = sorted(p.name for p in (vault_dir / "logs").iterdir())
    huge = "x" * (10 * 1024 * 1024)
    response = call(bridge, "log_turn", session="s", role="user", content=huge)
    assert (
        response["error"]["code"] == BAD_PARAMS
        and str(MAX_TURN_CHARS) in response["error"]["message"]
    )
    assert sorted(p.name for p in (vault_dir / "logs").iterdir()) == before


def test_overlong_line_is_skipped_whole(
    bridge: StdioServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "MAX_LINE_BYTES", 64)
    long_line = b'{"id": 1, "method": "status", "pad": "' + b"y" * 500 + b'"}\n'
    stdin = io.BytesIO(long_line + b'{"id": 2, "method": "status"}\n')
    stdout = io.BytesIO()
    bridge.serve(stdin, stdout)
    first, second = (json.loads(x) for x in stdout.getvalue().splitlines())
    assert first["error"]["code"] == INVALID_REQUEST and second["id"] == 2 and "result" in second


def test_vault_that_disappears_and_comes_back(
    bridge: StdioServer, vault_dir: Path, tmp_path: Path
) -> None:
    assert "result" in call(bridge, "search", query="John")
    shutil.move(vault_dir, tmp_path / "elsewhere")
    gone = call(bridge, "search", query="John")
    assert gone["error"]["code"] == MEMORY_ERROR and "no such folder" in gone["error"]["message"]
    logged = call(bridge, "log_turn", session="s", role="user", content="lost?")
    assert logged["error"]["code"] == MEMORY_ERROR
    assert not vault_dir.exists()  # nothing recreated a half-empty vault in its place
    shutil.move(tmp_path / "elsewhere", vault_dir)
    assert call(bridge, "search", query="John")["result"]["results"]


def test_real_process_round_trips(vault_dir: Path) -> None:
    requests = [
        {"id": 1, "method": "status"},
        {"id": 2, "method": "retrieve", "params": {"query": "email John"}},
        "garbage",
        {
            "id": 4,
            "method": "log_turn",
            "params": {"session": "p", "role": "user", "content": "hi"},
        },
    ]
    payload = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    proc = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "serve", "--stdio"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    responses = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r.get("id") for r in responses] == [1, 2, None, 4]
    assert "error" in responses[2] and responses[3]["result"]["turn"] == 1
    assert proc.stderr == ""
