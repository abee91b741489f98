"""A loopback stand-in for a remote OpenAI-compatible model server, used by the OpenClaw tests.

It speaks the real ``POST /v1/chat/completions`` API (server-sent events when the request
asks for ``stream``) and ``GET /v1/models``, records every request body, and answers each chat
request with a fixed reply so a test can find that reply again in the vault's raw log.

    server = LoopbackModel(reply="The answer is 42.")
    server.start()          # server.base_url -> "http://127.0.0.1:PORT/v1"
    ...
    server.requests         # list of decoded JSON request bodies
    server.stop()

Run as a script (``python tests/loopback_model.py PORT [REPLY [RECORD.jsonl]]``) it serves
until killed, appending each request body to RECORD.jsonl; the OpenClaw benchmark uses that.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "loopback-model"


class LoopbackModel:
    """A threaded HTTP server on 127.0.0.1 that records chat requests and replies with text."""

    def __init__(self, reply: str = "Noted.", port: int = 0, record_to: str | None = None) -> None:
        self.reply = reply
        self.record_to = record_to
        # (function name, arguments): the next chat request is answered with this tool call
        self.next_tool_call: tuple[str, dict[str, Any]] | None = None
        # this many next chat requests are answered 503, as by a provider briefly down
        self.fail_next = 0
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> LoopbackModel:
        """Serve on a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def record(self, body: dict[str, Any]) -> None:
        """Keep one request body."""
        with self._lock:
            self.requests.append(body)
            if self.record_to:
                with open(self.record_to, "a", encoding="utf-8") as out:
                    out.write(json.dumps(body) + "\n")

    def take_failure(self) -> bool:
        """Whether this chat request fails (one of :attr:`fail_next`)."""
        with self._lock:
            if self.fail_next <= 0:
                return False
            self.fail_next -= 1
            return True

    def take_tool_call(self) -> tuple[str, dict[str, Any]] | None:
        """The queued tool call, once."""
        with self._lock:
            call, self.next_tool_call = self.next_tool_call, None
            return call

    def chat_requests(self) -> list[dict[str, Any]]:
        """The recorded chat-completion request bodies, oldest first."""
        with self._lock:
            return [r for r in self.requests if "messages" in r]


def prompt_text(request: dict[str, Any]) -> str:
    """Every message's text in one chat request, joined, as the model would read it."""
    parts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "\n".join(parts)


def _handler_for(model: LoopbackModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _send_json(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [_model_card()]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw)
            except ValueError:
                self._send_json(400, {"error": {"message": "request body is not JSON"}})
                return
            model.record(body)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            if model.take_failure():
                self._send_json(503, {"error": {"message": "overloaded", "type": "server_error"}})
                return
            call = model.take_tool_call()
            if body.get("stream"):
                self._stream(body, call)
            else:
                self._send_json(200, _completion(body, model.reply, call))

        def _stream(self, body: dict[str, Any], call: tuple[str, dict[str, Any]] | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in _chunks(body, model.reply, call):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def _model_card() -> dict[str, Any]:
    return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "loopback"}


def _usage(body: dict[str, Any], reply: str) -> dict[str, int]:
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = max(1, len(reply) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _tool_calls(call: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    name, arguments = call
    function = {"name": name, "arguments": json.dumps(arguments)}
    return [{"index": 0, "id": "call_loopback_1", "type": "function", "function": function}]


def _completion(
    body: dict[str, Any], reply: str, call: tuple[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply}
    if call is not None:
        message = {"role": "assistant", "content": None, "tool_calls": _tool_calls(call)}
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", MODEL_ID),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if call is None else "tool_calls",
            }
        ],
        "usage": _usage(body, reply),
    }


def _chunks(
    body: dict[str, Any], reply: str, call: tuple[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    base = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", MODEL_ID),
    }
    delta: dict[str, Any] = {"role": "assistant", "content": reply}
    if call is not None:
        delta = {"role": "assistant", "tool_calls": _tool_calls(call)}
    first = {"index": 0, "delta": delta, "finish_reason": None}
    last = {"index": 0, "delta": {}, "finish_reason": "stop" if call is None else "tool_calls"}
    return [
        {**base, "choices": [first]},
        {**base, "choices": [last], "usage": _usage(body, reply)},
    ]


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    reply = sys.argv[2] if len(sys.argv) > 2 else "Noted."
    server = LoopbackModel(reply, port, sys.argv[3] if len(sys.argv) > 3 else None)
    print(server.base_url, flush=True)
    server._server.serve_forever()
