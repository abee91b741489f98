"""The Ollama summarizer and its fallback to the extractive one.

A loopback HTTP server on 127.0.0.1 stands in for a remote Ollama server: it speaks the real
``POST /api/chat`` API as the official ``ollama`` client uses it (a JSON request with
``model``, ``messages``, ``format``, ``options`` and ``stream: false``; a JSON reply whose
``message.content`` is the model's text) and ``GET /api/tags``, and records every request.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import Vault
from memoryclaw.consolidate.llm import ollama_summarizer, summarizer_for
from memoryclaw.consolidate.summarize import EpisodeDraft, summarize_log
from memoryclaw.vault.config import LlmSettings, Settings
from memoryclaw.vault.episodes import parse_episode
from memoryclaw.vault.logformat import RawLog, Turn

from ..conftest import NOW

MODEL = "test-model"


class FakeOllama:
    """A threaded HTTP server answering ``/api/chat`` with ``content`` (or ``status``)."""

    def __init__(self) -> None:
        self.content = ""
        self.status = 200
        self.delay = 0.0  # seconds to hold each chat reply back
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()  # ends a held reply early when the test stops
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, as ``llm.baseUrl`` is written."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeOllama:
        """Serve on a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wait for every handler, so no socket outlives the test."""
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The decoded bodies of the ``/api/chat`` requests, in order."""
        return [r["body"] for r in self.requests if r["path"] == "/api/chat"]


def _handler_for(fake: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up waiting (the timeout test)
                pass

        def do_GET(self) -> None:
            if self.path != "/api/tags":
                self._reply(404, {"error": "not found"})
                return
            fake.requests.append({"path": self.path, "body": None})
            self._reply(200, {"models": [{"name": MODEL, "model": MODEL, "size": 1}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append({"path": self.path, "body": body})
            if fake.delay:
                fake.release.wait(fake.delay)
            if self.path != "/api/chat":
                self._reply(404, {"error": "not found"})
            elif fake.status != 200:
                self._reply(fake.status, {"error": "model runner has unexpectedly stopped"})
            else:
                self._reply(
                    200,
                    {
                        "model": body["model"],
                        "created_at": "2025-11-01T12:00:00.000000Z",
                        "message": {"role": "assistant", "content": fake.content},
                        "done": True,
                        "done_reason": "stop",
                        "total_duration": 1_000_000,
                        "prompt_eval_count": 10,
                        "eval_count": 20,
                    },
                )

    return Handler


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    """A running loopback Ollama server, stopped after the test."""
    fake = FakeOllama().start()
    try:
        yield fake
    finally:
        fake.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _settings(base_url: str, timeout: float = 5.0) -> LlmSettings:
    return LlmSettings(provider="ollama", base_url=base_url, model=MODEL, timeout_seconds=timeout)


def _turn(role: str, text: str, minute: int) -> Turn:
    return Turn(role=role, timestamp=NOW + timedelta(minutes=minute), content=text)


LOG = RawLog(
    path="logs/2025-11-01_12-00-00_cli_raw.md",
    meta={"id": "log-llm-1", "session": "s-llm"},
    turns=(
        _turn("user", "Please email John the offsite agenda. His email is john@example.com.", 0),
        _turn("assistant", "Done: I sent the offsite agenda to John.", 1),
        _turn("user", "Also the offsite venue is Lakeside Lodge in Tahoe.", 2),
    ),
)
SUMMARY = "User had the assistant email John the offsite agenda and named the Tahoe venue."
TAGS = ["offsite", "agenda", "email", "tahoe"]


def _fact(**changes: str) -> dict[str, str]:
    fact = {"entity": "John", "field": "email", "value": "john@example.com", "confidence": "high"}
    return {**fact, **changes}


def _reply(**changes: Any) -> str:
    reply: dict[str, Any] = {
        "summary": SUMMARY,
        "tags": TAGS,
        "entities": ["John", "Lakeside Lodge", "Tahoe"],
        "facts": [_fact(), _fact(entity="Offsite", field="venue", value="Lakeside Lodge")],
    }
    reply.update(changes)
    return json.dumps(reply)


def _llm_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "memoryclaw.llm" and r.levelno == logging.WARNING
    ]


def _ranges(drafts: list[EpisodeDraft]) -> list[tuple[int, int]]:
    return [(d.first_turn, d.last_turn) for d in drafts]


def test_model_reply_replaces_summary_tags_and_entities(
    server: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    server.content = _reply()
    extractive = summarize_log(LOG)
    [draft] = ollama_summarizer(_settings(server.base_url))(LOG)
    assert _ranges([draft]) == _ranges(extractive)
    assert draft.summary == SUMMARY
    assert draft.tags == tuple(TAGS)
    assert draft.entities == ("John", "Lakeside Lodge", "Tahoe")
    assert draft.details == extractive[0].details  # the searchable words stay
    assert draft.timestamp == extractive[0].timestamp
    assert draft.participants == extractive[0].participants
    assert draft.slug == "offsite-agenda-email"
    facts = {(f.entity, f.field, f.value): f for f in draft.facts}
    assert ("John", "email", "john@example.com") in facts  # once, though both found it
    assert len([f for f in draft.facts if f.value == "john@example.com"]) == 1
    venue = facts["Offsite", "venue", "Lakeside Lodge"]
    assert venue.confidence == "high" and venue.turn == 3  # stated in turn 3
    assert _llm_warnings(caplog) == []


def test_request_carries_model_schema_and_temperature(server: FakeOllama) -> None:
    server.content = _reply()
    ollama_summarizer(_settings(server.base_url))(LOG)
    [request] = server.chat_requests()
    assert request["model"] == MODEL
    assert request["stream"] is False
    assert request["options"] == {"temperature": 0}
    schema = request["format"]
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"summary", "tags", "entities", "facts"}
    assert schema["properties"]["facts"]["items"]["properties"]["confidence"]["enum"] == [
        "low",
        "medium",
        "high",
    ]
    system, user = request["messages"]
    assert system["role"] == "system" and "JSON" in system["content"]
    assert user["role"] == "user"
    assert "[3] user" in user["content"] and "Lakeside Lodge" in user["content"]


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["offsite", "agenda", "email"], ("offsite", "agenda", "email")),
        (
            ["Offsite", "Project X", "e-mail", "Tahoe!", "café"],
            ("offsite", "project-x", "e-mail", "tahoe", "cafe"),
        ),
        (["a", "b", "c", "d", "e", "f", "g"], ("a", "b", "c", "d", "e", "f", "g")),
    ],
    ids=["three", "five-slugified", "seven"],
)
def test_tags_are_slugified_and_three_to_seven_pass(
    server: FakeOllama, tags: list[str], expected: tuple[str, ...]
) -> None:
    server.content = _reply(tags=tags)
    [draft] = ollama_summarizer(_settings(server.base_url))(LOG)
    assert draft.tags == expected


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("Sure! The offsite agenda went to John.", "not JSON"),
        (_reply(facts=[_fact(value="john at example dot com")]), "not a valid email"),
        (_reply(tags=[f"tag{n}" for n in range(9)]), "9 tags"),
        (_reply(tags=["offsite", "!!!"]), "1 tags"),
        (_reply(summary=""), "summary is empty"),
        (_reply(summary="x" * 301), "longer than 300"),
        (json.dumps({"summary": SUMMARY, "tags": TAGS}), "exactly summary"),
        (_reply(entities="John"), "entities is not a list"),
        (_reply(facts=[_fact(field="birthday", value="2025-02-30")]), "not a date"),
        (_reply(facts=[_fact(confidence="certain")]), "not low, medium or high"),
        (_reply(facts=[_fact(entity="")]), "fact entity is empty"),
        ("[1, 2, 3]", "exactly summary"),
    ],
    ids=[
        "not-json",
        "bad-email",
        "nine-tags",
        "one-tag",
        "empty-summary",
        "long-summary",
        "missing-keys",
        "entities-not-list",
        "bad-date",
        "bad-confidence",
        "empty-entity",
        "not-an-object",
    ],
)
def test_invalid_reply_falls_back_with_a_warning(
    server: FakeOllama, caplog: pytest.LogCaptureFixture, content: str, reason: str
) -> None:
    server.content = content
    drafts = ollama_summarizer(_settings(server.base_url))(LOG)
    assert drafts == summarize_log(LOG)
    [warning] = _llm_warnings(caplog)
    assert "invalid reply" in warning and reason in warning
    assert "turns 1-3" in warning and LOG.path in warning


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ("http-500", "HTTP 500"),
        ("timeout", "no answer from"),
        ("refused", "cannot reach Ollama"),
    ],
    ids=["http-500", "timeout", "connection-refused"],
)
def test_server_failures_fall_back_with_a_warning(
    server: FakeOllama, caplog: pytest.LogCaptureFixture, setup: str, reason: str
) -> None:
    server.content = _reply()
    base_url, timeout = server.base_url, 5.0
    if setup == "http-500":
        server.status = 500
    elif setup == "timeout":
        server.delay, timeout = 5.0, 0.5
    else:
        base_url = f"http://127.0.0.1:{_closed_port()}"
    drafts = ollama_summarizer(_settings(base_url, timeout))(LOG)
    assert drafts == summarize_log(LOG)
    [warning] = _llm_warnings(caplog)
    assert reason in warning and "kept the extractive summary" in warning


def test_unreachable_server_is_not_asked_again_in_the_same_run(
    server: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    server.delay = 5.0
    turns = tuple(
        _turn("user" if n % 2 == 0 else "assistant", f"Step {n} of the Tahoe offsite plan.", n)
        for n in range(60)
    )
    long_log = RawLog("logs/long.md", {"id": "log-long"}, turns)
    summarizer = ollama_summarizer(_settings(server.base_url, timeout=0.5))
    drafts = summarizer(long_log)
    assert len(drafts) > 1 and drafts == summarize_log(long_log)
    assert summarizer(LOG) == summarize_log(LOG)  # the next log of the run: not asked either
    assert len(server.chat_requests()) == 1
    [warning] = _llm_warnings(caplog)
    assert "the rest of this run is summarized without it" in warning


def test_an_echoed_secret_is_redacted(server: FakeOllama) -> None:
    key = "sk-live-ABCDEFGH12345678abcdefgh"
    server.content = _reply(
        summary=f"User shared the API key {key} for the offsite booking tool.",
        tags=["offsite", "booking", "api", key],
        entities=["John", key],
        facts=[
            _fact(),
            _fact(entity="User", field="password", value="hunter2hunter2"),
            _fact(entity="Booking", field="api key", value=key),
        ],
    )
    [draft] = ollama_summarizer(_settings(server.base_url))(LOG)
    assert key not in repr(draft) and "hunter2" not in repr(draft)
    assert "[REDACTED:api-key]" in draft.summary
    assert draft.tags == ("offsite", "booking", "api") and draft.entities == ("John",)
    assert {f.field for f in draft.facts} == {"email"}


def test_a_secret_in_the_log_is_not_sent_to_the_model(server: FakeOllama) -> None:
    server.content = _reply()
    secret_log = RawLog(
        LOG.path, LOG.meta, (*LOG.turns, _turn("user", "password: swordfish-42", 3))
    )
    ollama_summarizer(_settings(server.base_url))(secret_log)
    assert "swordfish" not in json.dumps(server.chat_requests())


def test_a_fact_no_turn_states_is_kept_for_review(server: FakeOllama) -> None:
    server.content = _reply(facts=[_fact(entity="Mary", value="mary@example.org")])
    [draft] = ollama_summarizer(_settings(server.base_url))(LOG)
    [mary] = [f for f in draft.facts if f.entity == "Mary"]
    assert mary.confidence == "low" and mary.turn == 1


def test_missing_package_warns_and_uses_the_extractive_summarizer(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "ollama", None)  # makes `import ollama` fail
    assert ollama_summarizer(_settings("http://127.0.0.1:1")) is summarize_log
    [warning] = _llm_warnings(caplog)
    assert "pip install 'memoryclaw[ollama]'" in warning


@pytest.mark.parametrize("provider", ["none", "ollama"], ids=["none", "ollama"])
def test_summarizer_for_follows_the_provider(provider: str) -> None:
    settings = Settings(llm=LlmSettings(provider=provider))  # type: ignore[arg-type]
    assert (summarizer_for(settings) is summarize_log) == (provider == "none")


def _ollama_vault(vault_dir: Path, base_url: str) -> Vault:
    config = vault_dir / "memoryclaw.yaml"
    config.write_text(
        config.read_text()
        + f"llm:\n  provider: ollama\n  baseUrl: {base_url}\n  model: {MODEL}\n"
        + "  timeoutSeconds: 5\n"
    )
    return Vault(vault_dir, env={})


def test_vault_consolidate_uses_the_configured_model(server: FakeOllama, vault_dir: Path) -> None:
    server.content = _reply()
    later = datetime(2025, 11, 2, 12, 0, tzinfo=timezone.utc)
    with _ollama_vault(vault_dir, server.base_url) as vault:
        for n, text in enumerate(["Please email John the offsite agenda.", "Sent it to John."]):
            vault.log_turn("s-llm", ("user", "assistant")[n], text, timestamp=NOW)
        vault.end_session("s-llm")
        report = vault.consolidate(now=later)
        found = vault.search("offsite agenda John", now=later)
    assert server.chat_requests() and all(r["model"] == MODEL for r in server.chat_requests())
    episodes = [parse_episode((vault_dir / rel).read_text(), rel, 0.0) for rel in report.episodes]
    mine = [e for e in episodes if e.session == "s-llm"]
    assert [e.summary for e in mine] == [SUMMARY]
    assert mine[0].tags == tuple(TAGS) and mine[0].source_turns == (1, 2)
    assert "offsite agenda" in mine[0].details  # extractive details kept
    assert any(r.path == mine[0].path for r in found.results)


def test_doctor_says_whether_the_ollama_server_answers(server: FakeOllama, vault_dir: Path) -> None:
    with _ollama_vault(vault_dir, server.base_url) as vault:
        [up] = [c for c in vault.doctor() if c["check"] == "llm"]
    assert up["status"] == "ok" and server.base_url in up["detail"]
    assert any(r["path"] == "/api/tags" for r in server.requests)
    config = vault_dir / "memoryclaw.yaml"
    closed = f"http://127.0.0.1:{_closed_port()}"
    config.write_text(config.read_text().replace(server.base_url, closed))
    with Vault(vault_dir, env={}) as vault:
        [down] = [c for c in vault.doctor() if c["check"] == "llm"]
    assert down["status"] == "warn" and "does not answer" in down["detail"]
