"""A real OpenAI-compatible model server on 127.0.0.1, for tests and bench/model_routes.py.

It stands in for the external service only (Ollama, llama.cpp's server, TEI):
``/v1/embeddings`` answers with the bundled ONNX model's vectors, ``/v1/rerank`` with the
cosine between the query's and each document's vector mapped to [0, 1], and
``/v1/chat/completions`` with a fixed, honest expansion (the query's content words as a
rewrite, the query itself as the passage, unless a test gives one). Switches make it
fail the ways real servers do, after ``fail_after`` good answers: a hang far beyond
the client's timeout, 401, 429 (with ``Retry-After: 0``) once or always, 503, vectors
of another dimension, or an answer that is not JSON.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from tests.conftest import HANG_GUARD
from vaultsearch.config import EmbeddingConfig
from vaultsearch.embedding import Embedder

FAILURES = ("hang", "401", "429-once", "429", "503", "wrong-dimension", "malformed")
_QUESTION_WORDS = frozenset(
    [
        "how",
        "do",
        "does",
        "i",
        "what",
        "is",
        "are",
        "the",
        "a",
        "an",
        "why",
        "when",
        "which",
        "who",
        "to",
        "of",
    ]
)


@dataclass
class ModelServer:
    embedder: Embedder = field(default_factory=lambda: Embedder.shared(EmbeddingConfig()))
    failure: str | None = None
    fail_after: int = 0
    """Good answers (to any path) before ``failure`` starts."""
    api_key: str = ""
    """When set, requests without ``Authorization: Bearer <api_key>`` get 401."""
    expansions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per query, the JSON the chat endpoint answers with (else the generic rewrite)."""
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answered: int = 0
    texts_embedded: int = 0
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ModelServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="model-server", daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()  # a hanging answer returns at once
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _failing(self) -> str | None:
        with self._lock:
            if self.failure is None or self.answered < self.fail_after:
                return None
            if self.failure == "429-once":
                self.failure = None
                return "429"
            return self.failure

    # --- the three endpoints ----------------------------------------------------------
    def embeddings(self, body: dict[str, Any], failure: str | None) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self.embedder.embed_texts([str(t) for t in texts])
        if failure == "wrong-dimension":
            vectors = vectors[:, : vectors.shape[1] // 2]
        with self._lock:
            self.texts_embedded += len(texts)
        return {
            "object": "list",
            "model": body.get("model"),
            "data": [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)
            ],
        }

    def rerank(self, body: dict[str, Any]) -> dict[str, Any]:
        docs = [str(d) for d in body["documents"]]
        query = self.embedder.embed_query(str(body["query"]))
        scores = (self.embedder.embed_texts(docs) @ query + 1.0) / 2.0
        order = np.argsort(-scores, kind="stable")[: int(body.get("top_n") or len(docs))]
        return {"results": [{"index": int(i), "relevance_score": float(scores[i])} for i in order]}

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = str(body["messages"][-1]["content"])
        query = prompt.split("Query:", 1)[-1].strip()
        answer = self.expansions.get(query) or {
            "rewrites": [
                " ".join(w for w in re.findall(r"\w+", query.lower()) if w not in _QUESTION_WORDS)
            ],
            "passage": query,
        }
        message = {"role": "assistant", "content": json.dumps(answer)}
        return {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}


def _handler(model: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with model._lock:
                model.requests.append((self.path, body))
            if model.api_key and self.headers.get("Authorization") != f"Bearer {model.api_key}":
                return self._send(401, b'{"error": {"message": "invalid api key"}}')
            failure = model._failing()
            if failure == "hang":
                model._release.wait(HANG_GUARD)
                return None
            if failure in ("401", "429", "503"):
                retry = {"Retry-After": "0"} if failure == "429" else None
                return self._send(int(failure), b'{"error": {"message": "no"}}', retry)
            if failure == "malformed":
                return self._send(200, b'{"data": [{"embedding": [0.1, ')
            routes = {
                "/v1/embeddings": lambda: model.embeddings(body, failure),
                "/v1/rerank": lambda: model.rerank(body),
                "/v1/chat/completions": lambda: model.chat(body),
            }
            if self.path not in routes:
                return self._send(404, b'{"error": {"message": "not found"}}')
            payload = json.dumps(routes[self.path]()).encode()
            with model._lock:
                model.answered += 1
            return self._send(200, payload)

    return Handler


@contextmanager
def model_server(**options: Any) -> Iterator[ModelServer]:
    server = ModelServer(**options).start()
    try:
        yield server
    finally:
        server.stop()
