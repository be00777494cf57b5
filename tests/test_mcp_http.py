"""The MCP server over streamable HTTP on a free loopback port, driven by the SDK client."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest
from mcp import Client

from tests.conftest import HANG_GUARD
from tests.test_mcp_stdio import INIT, data, era_of, make_vault, server_args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = HANG_GUARD) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited before listening"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    code: int | None = None
    out: bytes = b""
    err: bytes = b""


@contextlib.contextmanager
def http_server(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[Served]:
    """The server listening on ``port``, stopped with SIGTERM on leaving, its exit code and
    output kept for the test. A failure inside carries the server's stderr: for an error
    at the HTTP level (the SDK client says only "Server returned an error response") it
    is the only clue."""
    proc = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    served = Served(proc)
    try:
        wait_listening(proc, port)
        yield served
    except Exception as exc:
        _stop(served)
        tail = served.err.decode(errors="replace")[-6000:]
        raise AssertionError(f"server stderr:\n{tail}") from exc
    _stop(served)


def _stop(served: Served) -> None:
    served.proc.send_signal(signal.SIGTERM)
    served.code = served.proc.wait(timeout=HANG_GUARD)
    served.out, served.err = served.proc.communicate()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_session_over_streamable_http(
    tmp_path_factory: pytest.TempPathFactory, embedder: object, mode: str
) -> None:
    """Either era: a new SDK client's ``server/discover`` (``auto``) and the ``initialize``
    handshake of older clients (``legacy``)."""
    root, index_dir = make_vault(tmp_path_factory.mktemp("mcp-http"), index=True)
    port = free_port()
    args = server_args(root, index_dir, "--no-watch", "--http", "--port", str(port))
    with http_server(args, port) as served:

        async def session() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with Client(url, mode=mode, read_timeout_seconds=HANG_GUARD) as c:
                assert c.protocol_version in era_of(mode)
                hits = data(await c.call_tool("search", {"query": "hornworms", "mode": "keyword"}))
                assert hits["hits"][0]["path"] == "garden/Tomatoes.md"
                note = data(
                    await c.call_tool("read_note", {"path": "work/Budget.md", "end_line": 1})
                )
                assert note["text"] == "1| # Budget" and "next_start_line" not in note
                escaped = await c.call_tool("related", {"path": "../outside/secret.md"})
                assert escaped.is_error and "outside the vault" in escaped.content[0].text

        anyio.run(session)
        taken = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, timeout=HANG_GUARD
        )
        assert taken.returncode == 2 and f"Cannot listen on 127.0.0.1:{port}" in taken.stderr
    assert served.code == 0 and served.out == b""
    assert b"Traceback" not in served.err
    assert f'"url": "http://127.0.0.1:{port}/mcp"}}'.encode() in served.err  # loopback, no warning


def test_beyond_loopback_needs_the_token_and_checks_host_and_origin(
    tmp_path_factory: pytest.TempPathFactory, embedder: object
) -> None:
    """Bound to every address (traffic only ever sent to 127.0.0.1): a generated token
    is printed, requests without it get 401, hostile Host/Origin headers are refused."""
    import os
    import re

    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    root, index_dir = make_vault(tmp_path_factory.mktemp("mcp-http-auth"), index=True)
    port = free_port()
    args = server_args(root, index_dir, "--no-watch", "--http", "--host", "0.0.0.0")
    env = {k: v for k, v in os.environ.items() if k != "VAULTSEARCH_MCP_TOKEN"}
    url = f"http://127.0.0.1:{port}/mcp"
    accept = {"accept": "application/json, text/event-stream"}
    with http_server([*args, "--port", str(port)], port, env=env) as served:
        assert served.proc.stderr is not None
        line = served.proc.stderr.readline().decode()
        found = re.search(r"Authorization: Bearer ([\w-]+)", line)
        assert found, line
        token = found[1]

        def post(**headers: str) -> int:
            return httpx2.post(
                url, json=INIT, headers={**accept, **headers}, timeout=HANG_GUARD
            ).status_code

        assert post() == 401
        assert post(authorization="Bearer wrong") == 401
        assert post(authorization=f"Bearer {token}") == 200
        assert post(authorization=f"Bearer {token}", host="evil.example") == 421
        assert post(authorization=f"Bearer {token}", origin="http://evil.example") == 403

        async def session() -> None:
            client = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
            async with Client(streamable_http_client(url, http_client=client)) as c:
                hits = data(await c.call_tool("search", {"query": "hornworms", "mode": "keyword"}))
                assert hits["hits"][0]["path"] == "garden/Tomatoes.md"

        anyio.run(session)
    assert served.code == 0 and b"Traceback" not in served.err


def test_the_token_comes_from_the_environment_on_any_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    from vaultsearch.server.http.guard import TOKEN_ENV, server_token

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert server_token("127.0.0.1") is None
    made = server_token("0.0.0.0")
    assert made is not None and made.generated and len(made.value) >= 32
    monkeypatch.setenv(TOKEN_ENV, "s3cret")
    assert server_token("127.0.0.1") == server_token("192.168.1.5")
    assert server_token("::1") is not None and not server_token("::1").generated  # type: ignore[union-attr]


def test_host_and_origin_must_name_this_server_exactly_and_bodies_are_bounded(
    tmp_path_factory: pytest.TempPathFactory, embedder: object
) -> None:
    """Issue 22: Host was a prefix match and any loopback port passed as Origin. On /mcp
    and the REST routes of one server: only this server's own host and port pass; a
    deep or oversized body gets a JSON-RPC error on /mcp and a 4xx sentence on REST;
    a session works afterwards."""
    import httpx2

    root, index_dir = make_vault(tmp_path_factory.mktemp("mcp-http-exact"), index=True)
    port = free_port()
    other = free_port()
    args = server_args(root, index_dir, "--no-watch", "--http", "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    accept = {"accept": "application/json, text/event-stream"}
    with http_server(args, port) as served:

        def mcp(**headers: str) -> int:
            return httpx2.post(
                f"{base}/mcp", json=INIT, headers={**accept, **headers}, timeout=HANG_GUARD
            ).status_code

        def rest(**headers: str) -> int:
            return httpx2.post(
                f"{base}/cancel-indexing", json={}, headers=headers, timeout=HANG_GUARD
            ).status_code

        for ask in (mcp, rest):
            assert ask() == 200
            assert ask(host=f"127.0.0.1:{port}.evil.com") == 421
            assert ask(host=f"127.0.0.1:{other}") == 421
            assert ask(host="127.0.0.1") == 421
            assert ask(origin=f"http://127.0.0.1:{other}") == 403
            assert ask(origin=f"http://localhost:{other}") == 403
            assert ask(origin=f"http://127.0.0.1:{port}.evil.com") == 403
            assert ask(origin=f"https://127.0.0.1:{port}") == 403
            assert ask(origin=f"http://127.0.0.1:{port}") == 200
            assert ask(origin=f"http://localhost:{port}", host=f"localhost:{port}") == 200
        assert (
            httpx2.get(f"{base}/status", headers={"host": f"localhost:{port}.x"}).status_code == 421
        )

        deep = b'{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "search", '
        deep += b'"arguments": {"query": ' + b"[" * 5000 + b"]" * 5000 + b"}}}"
        headers = {**accept, "content-type": "application/json"}
        r = httpx2.post(f"{base}/mcp", content=deep, headers=headers, timeout=HANG_GUARD)
        assert r.status_code == 400 and r.json()["id"] == 41
        assert (
            r.json()["error"]["code"] == -32700 and "deeper than 64" in r.json()["error"]["message"]
        )
        huge = b'{"jsonrpc": "2.0", "id": 42, "x": "' + b"a" * (5 * 1024 * 1024) + b'"}'
        r = httpx2.post(f"{base}/mcp", content=huge, headers=headers, timeout=HANG_GUARD)
        assert r.status_code == 413 and r.json()["error"]["code"] == -32600
        assert r.json()["id"] is None  # refused from Content-Length alone: nothing was read
        chunks = iter([huge[:100_000], huge[100_000:]])  # no Content-Length: read to the limit
        r = httpx2.post(f"{base}/mcp", content=chunks, headers=headers, timeout=HANG_GUARD)
        assert r.status_code == 413 and r.json()["id"] == 42
        r = httpx2.post(
            f"{base}/query_documents", content=deep, headers=headers, timeout=HANG_GUARD
        )
        assert r.status_code == 400 and "deeper than 64" in r.json()["error"]
        r = httpx2.post(
            f"{base}/query_documents", content=huge, headers=headers, timeout=HANG_GUARD
        )
        assert r.status_code == 413 and "over the limit" in r.json()["error"]

        async def session() -> None:
            async with Client(f"{base}/mcp", read_timeout_seconds=HANG_GUARD) as c:
                hits = data(await c.call_tool("search", {"query": "hornworms", "mode": "keyword"}))
                assert hits["hits"][0]["path"] == "garden/Tomatoes.md"

        anyio.run(session)
    assert served.code == 0 and b"Traceback" not in served.err


def test_allowed_hosts_name_the_port() -> None:
    from vaultsearch.server.http.guard import security_settings

    s = security_settings("127.0.0.1", 8765, ["notes.lan", "proxy.lan:8443", "::1"])
    assert "127.0.0.1:8765" in s.allowed_hosts and "localhost:8765" in s.allowed_hosts
    assert not any(h.endswith(":*") for h in [*s.allowed_hosts, *s.allowed_origins])
    assert "127.0.0.1" not in s.allowed_hosts and "http://127.0.0.1" not in s.allowed_origins
    assert {"notes.lan", "notes.lan:8765", "proxy.lan:8443", "[::1]:8765"} <= set(s.allowed_hosts)
    assert "proxy.lan" not in s.allowed_hosts and "https://proxy.lan:8443" in s.allowed_origins
    assert "https://notes.lan" in s.allowed_origins
