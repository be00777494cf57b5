"""The REST contract over real HTTP: uvicorn on a free port, a real vault and index."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn

from tests.conftest import HANG_GUARD, write_files
from tests.test_runner import _HOLD_LOCK
from vaultsearch.app.vault import Vault
from vaultsearch.config import AnswerConfig, Config, ServerConfig, config_from_dict
from vaultsearch.errors import ConfigError
from vaultsearch.indexing.runner import RunSnapshot
from vaultsearch.server.activity import ActivityLog
from vaultsearch.server.http.rest import ControlContext, rest_app, rest_routes
from vaultsearch.store.manifest import SPEC_VERSION

NOTES = {
    "birds/owls.md": """
        ---
        tags: [birds]
        ---
        # Owls

        Owls hunt small mammals at night. Their hearing finds mice under snow.
        """,
    "birds/herons.md": "# Herons\n\nHerons wait in shallow water and spear fish.\n",
    "rivers.md": "# Rivers\n\nRivers carry water to the sea. Herons live on [[birds/herons]].\n",
    "tea.md": "# Tea\n\nTea grows on hills; the harvest starts in spring.\n",
}


@dataclass
class Served:
    url: str
    ctx: ControlContext
    root: Path

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=HANG_GUARD, **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """The app under uvicorn on a free loopback port, as a browser or curl reaches it."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("rest") / "vault", NOTES)
    vault = Vault.open(root)
    vault.runner().run("update")
    ctx = ControlContext.for_vault(vault)
    with serve(rest_app(ctx)) as url:
        yield Served(url, ctx, root)
    vault.close()


def _wait_idle(client: httpx.Client) -> dict[str, Any]:
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        body = client.get("/progress").json()
        if body["state"] not in ("running", "cancelling"):
            return body
        time.sleep(0.05)
    raise AssertionError("the run did not end")


@contextmanager
def _held_at_start(ctx: ControlContext) -> Iterator[threading.Event]:
    """The next run waits at its start until the event is set: a run that is surely in
    progress when the test's next request arrives, however fast the machine."""
    release = threading.Event()

    def hold(event: str, snap: RunSnapshot) -> None:
        if event == "started":
            release.wait(HANG_GUARD)

    unsubscribe = ctx.runner.subscribe(hold)
    try:
        yield release
    finally:
        release.set()
        unsubscribe()


def test_health_and_openapi_name_every_route(served: Served) -> None:
    with served.client() as c:
        assert c.get("/health").json() == {"status": "ok"}
        spec = c.get("/openapi.json").json()
    assert spec["openapi"] == "3.1.0"
    routes = {r.path: r.methods for r in rest_routes(served.ctx)}  # type: ignore[attr-defined]
    assert set(spec["paths"]) == set(routes)
    for path, operations in spec["paths"].items():
        assert {m.upper() for m in operations} <= routes[path]
    with served.client() as c:
        assert c.get("/rebuild-index").status_code == 405  # the method the description gives
    assert spec["paths"]["/rebuild-index"]["post"]["responses"].keys() >= {"202", "409"}


def test_status_of_an_up_to_date_index(served: Served) -> None:
    with served.client() as c:
        body = c.get("/status").json()
    assert body["vault"] == str(served.root)
    assert body["state"] == "up_to_date"
    assert body["files"] == {
        "total": 4, "indexed": 4, "not_indexed": 0, "deleted": 0, "failed": 0, "to_retry": 0,
    }  # fmt: skip
    assert body["failed"] == [] and body["pending_changes"] == 0
    assert body["notes"] == 4 and body["chunks"] >= 4
    assert body["model"] and body["last_indexed"]
    assert body["config"]["search.fusion"] == "convex"
    assert body["config"]["parsers.**/*.md"] == "markdown"
    assert {"chunking.size", "keyword.stemming", "parsers.**/*.md"} <= set(body["rebuild_keys"])
    assert "search.fusion" not in body["rebuild_keys"]
    assert set(body["rebuild_keys"]) <= set(body["config"])


def test_schema_status_of_a_current_index(served: Served) -> None:
    with served.client() as c:
        body = c.get("/schema-status").json()
    assert body == {
        "spec_version": SPEC_VERSION,
        "index_spec_version": SPEC_VERSION,
        "needs_rebuild": False,
        "reasons": [],
    }


def test_query_documents_answers_with_citations(served: Served) -> None:
    with served.client() as c:
        r = c.post("/query_documents", json={"query": "what do owls hunt at night", "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["hits"][0]["path"] == "birds/owls.md"
    assert all("explain" in h for h in body["hits"])
    assert "Owls hunt small mammals at night. [1]" in body["answer"]
    first = body["citations"][0]
    assert first["n"] == 1 and first["path"] == "birds/owls.md"
    assert first["start_line"] == body["hits"][0]["start_line"]


def test_query_documents_filters(served: Served) -> None:
    with served.client() as c:
        body = c.post(
            "/query_documents",
            json={"query": "water", "filters": {"folders": "birds", "mode": "keyword"}},
        ).json()
    assert [h["path"] for h in body["hits"]] == ["birds/herons.md"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "'query' must be a non-empty string"),
        ({"query": "owls", "top_k": 0}, "'top_k' must be an integer from 1 to 100"),
        ({"query": "owls", "filters": {"tag": "x"}}, "filters has no field 'tag'"),
        ({"query": "owls", "filters": {"mode": "fuzzy"}}, "'mode' must be one of hybrid, keyword"),
        ({"query": "owls", "tags": ["brids"]}, "the tag 'brids' (did you mean 'birds'?)"),
        ({"query": "owls", "min_similarity": 2}, "'min_similarity' must be a number from 0 to 1"),
        ({"query": "owls", "filters": {"after": "yesterday"}}, "after"),
        ({"query": "owls", "limit": 3}, "query_documents has no field 'limit'"),
    ],
)
def test_query_documents_refuses_bad_input_in_one_sentence(
    served: Served, body: dict[str, Any], words: str
) -> None:
    with served.client() as c:
        r = c.post("/query_documents", json=body)
    assert r.status_code == 400
    assert words in r.json()["error"] and "Traceback" not in r.text


def test_bad_json_and_bad_limit_are_400(served: Served) -> None:
    with served.client() as c:
        r = c.post("/rebuild-index", content=b"{not json")
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
        r = c.post("/rebuild-index", json={"reindex_all": "yes"})
        assert r.status_code == 400 and "reindex_all" in r.json()["error"]
        r = c.get("/activity", params={"limit": "lots"})
        assert r.status_code == 400 and "limit" in r.json()["error"]


def test_post_from_another_site_is_refused(served: Served) -> None:
    with served.client() as c:
        r = c.post("/cancel-indexing", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and "another site" in r.json()["error"]
        own = served.url  # the page this server served
        r = c.post("/cancel-indexing", headers={"Origin": own})
        assert r.status_code == 200


def test_cancel_when_idle(served: Served) -> None:
    with served.client() as c:
        r = c.post("/cancel-indexing")
    assert r.json() == {"cancelling": False, "reason": "nothing is running"}


def test_update_picks_up_changes_and_the_activity_log_shows_it(served: Served) -> None:
    (served.root / "tea.md").unlink()
    (served.root / "coffee.md").write_text("# Coffee\n\nCoffee cherries are picked by hand.\n")
    with served.client() as c:
        before = c.get("/status").json()
        assert before["state"] == "needs_update"
        assert before["files"]["not_indexed"] == 1 and before["files"]["deleted"] == 1
        assert before["pending_changes"] == 2
        r = c.post("/rebuild-index", json={"reindex_all": False})
        assert r.status_code == 202 and r.json() == {"started": True, "kind": "update"}
        done = _wait_idle(c)
        assert done["state"] == "done" and done["percent"] == 100.0 and done["kind"] == "update"
        assert done["files_done"] == done["files_total"] == 1
        after = c.get("/status").json()
        assert after["state"] == "up_to_date" and after["pending_changes"] == 0
        entries = c.get("/activity", params={"limit": 5}).json()["entries"]
    events = [e["event"] for e in entries]
    assert events[:2] == ["index_finished", "index_started"]  # newest first
    assert "1 added, 1 removed" in entries[0]["detail"]


def test_a_second_rebuild_is_409_and_cancel_stops_the_first(served: Served) -> None:
    ctx = served.ctx
    live = ctx.vault.layout.current()
    with served.client() as c, _held_at_start(ctx) as release:
        assert c.post("/rebuild-index", json={"reindex_all": True}).status_code == 202
        r = c.post("/rebuild-index", json={"reindex_all": False})
        assert r.status_code == 409
        assert "already going" in r.json()["error"]
        assert c.get("/progress").json()["state"] == "running"
        assert c.get("/status").json()["state"] == "updating"
        assert c.post("/cancel-indexing").json() == {"cancelling": True}
        assert c.get("/status").json()["state"] == "cancelling"
        release.set()
        end = _wait_idle(c)
    assert end["state"] == "cancelled" and end["kind"] == "rebuild" and "finished_at" in end
    assert ctx.vault.layout.current() == live  # a cancelled rebuild keeps what is served


def test_a_writer_in_another_process_makes_409(served: Served) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(served.ctx.vault.layout.lock)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with served.client() as c:
            r = c.post("/rebuild-index", json={"reindex_all": False})
        assert r.status_code == 409 and "Another vaultsearch process" in r.json()["error"]
    finally:
        holder.kill()
        holder.wait()


def test_events_stream_progress_and_activity(served: Served) -> None:
    (served.root / "kites.md").write_text("# Kites\n\nKites fly on the spring wind.\n")
    seen: list[tuple[str, dict[str, Any]]] = []
    with served.client() as c, c.stream("GET", "/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event:
                seen.append((event, json.loads(line[6:])))
                if len(seen) == 1:  # the current progress first, then start a run
                    with served.client() as other:
                        assert other.post("/rebuild-index").status_code == 202
                finished = ("activity", "index_finished") in [(k, d.get("event")) for k, d in seen]
                if finished and any(d.get("state") == "done" for k, d in seen if k == "progress"):
                    break
    kinds = [k for k, _ in seen]
    assert kinds[0] == "progress"
    states = [d["state"] for k, d in seen if k == "progress"]
    assert "running" in states and states[-1] == "done"  # either order with the activity
    assert [d["event"] for k, d in seen if k == "activity"] == ["index_started", "index_finished"]


def test_a_token_is_required_when_one_is_set(served: Served) -> None:
    with serve(rest_app(served.ctx, token="s3cret")) as url, httpx.Client(base_url=url) as c:
        assert c.get("/health").status_code == 401
        ok = c.get("/health", headers={"Authorization": "Bearer s3cret"})
        assert ok.json() == {"status": "ok"}


class _ChatEndpoint(BaseHTTPRequestHandler):
    """A stand-in for a local OpenAI-compatible server (llama.cpp, Ollama): an external
    service, not our code. It answers from what it was sent and keeps the request."""

    requests: ClassVar[list[dict[str, Any]]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        user = body["messages"][-1]["content"]
        first = user.split("[1] ", 1)[1].split(",", 1)[0]  # the first passage's path
        reply = {"choices": [{"message": {"content": f"It is in {first} [1]."}}]}
        data = json.dumps(reply).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def chat_endpoint() -> Iterator[str]:
    _ChatEndpoint.requests, _ChatEndpoint.status = [], 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _with_endpoint(served: Served, endpoint: str) -> ControlContext:
    config = replace(Config(), answer=AnswerConfig(endpoint=endpoint, model="local-model"))
    vault = Vault.open(served.root, config=config)
    return ControlContext(vault, served.ctx.runner, ActivityLog())


def test_a_configured_endpoint_writes_the_answer(served: Served, chat_endpoint: str) -> None:
    ctx = _with_endpoint(served, chat_endpoint)
    with serve(rest_app(ctx)) as url, httpx.Client(base_url=url, timeout=HANG_GUARD) as c:
        body = c.post("/query_documents", json={"query": "owls hunting", "top_k": 2}).json()
    ctx.vault.close()
    assert body["answer"] == f"It is in {body['hits'][0]['path']} [1]."
    assert body["citations"] == [
        {"n": 1, "path": body["hits"][0]["path"], "start_line": body["hits"][0]["start_line"],
         "end_line": body["hits"][0]["end_line"]},
    ]  # fmt: skip
    (request,) = _ChatEndpoint.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "local-model"
    assert "owls hunting" in request["body"]["messages"][-1]["content"]


def test_a_failing_endpoint_falls_back_to_the_extractive_answer(
    served: Served, chat_endpoint: str
) -> None:
    _ChatEndpoint.status = 500
    ctx = _with_endpoint(served, chat_endpoint)
    with serve(rest_app(ctx)) as url, httpx.Client(base_url=url, timeout=HANG_GUARD) as c:
        body = c.post("/query_documents", json={"query": "what do owls hunt at night"}).json()
        log = c.get("/activity").json()["entries"]
    ctx.vault.close()
    assert "Owls hunt small mammals at night. [1]" in body["answer"]
    assert log[1]["event"] == "answer_failed" and "HTTP 500" in log[1]["detail"]


def raw_exchange(url: str, head: bytes, body_parts: list[bytes]) -> tuple[int, dict[str, Any]]:
    """Send a request's head and only ``body_parts`` of its body on a bare socket, then
    read the answer: the server must answer without waiting for the rest."""
    parts = urlsplit(url)
    with socket.create_connection(
        (parts.hostname, parts.port), timeout=HANG_GUARD
    ) as s:  # hang guard
        s.sendall(head + b"\r\n\r\n")
        for part in body_parts:
            s.sendall(part)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.partition(b"\r\n\r\n")[2])


def test_bodies_over_the_limit_are_refused_before_they_are_read(served: Served) -> None:
    """Issue 22: a 100 MB body was read whole. A declared length over the limit gets 413
    with nothing read; a chunked body gets it once the limit is passed, its end unsent."""
    host = urlsplit(served.url).netloc.encode()
    head = b"POST /query_documents HTTP/1.1\r\nHost: " + host + b"\r\n"
    head += b"Content-Type: application/json\r\n"
    status, body = raw_exchange(served.url, head + b"Content-Length: 104857600", [b'{"q'])
    assert status == 413 and "104,857,600 bytes, over the limit of 4,194,304" in body["error"]
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    status, body = raw_exchange(served.url, head + b"Transfer-Encoding: chunked", [chunk] * 5)
    assert status == 413 and "over the limit of 4,194,304 bytes" in body["error"]
    with served.client() as c:
        just_under = b'{"query": "owls"' + b" " * (4 * 1024 * 1024 - 100) + b"}"
        r = c.post("/query_documents", content=just_under)
        assert r.status_code == 200 and r.json()["hits"][0]["path"] == "birds/owls.md"


def test_the_body_limit_is_a_setting(served: Served) -> None:
    vault = served.ctx.vault
    before = vault.config
    vault.use_config(replace(before, server=ServerConfig(max_body_bytes=2048)))
    try:
        with served.client() as c:
            r = c.post("/query_documents", json={"query": "owls " * 500})
            assert r.status_code == 413 and "over the limit of 2,048 bytes" in r.json()["error"]
            assert c.post("/query_documents", json={"query": "owls"}).status_code == 200
    finally:
        vault.use_config(before)
    with pytest.raises(ConfigError, match=r"server.max_body_bytes' = 10 is invalid"):
        config_from_dict({"server": {"max_body_bytes": 10}})


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_deeply_nested_bodies_are_400_not_500(served: Served, depth: int) -> None:
    body = b'{"query": ' + b"[" * depth + b"]" * depth + b"}"
    with served.client() as c:
        r = c.post("/query_documents", content=body)
        assert r.status_code == 400 and "nested deeper than 64 levels" in r.json()["error"]
        assert c.post("/query_documents", json={"query": "owls"}).status_code == 200
