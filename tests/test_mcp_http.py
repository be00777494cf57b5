"""The MCP server over streamable HTTP on a free loopback port, driven by the SDK client."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client

from tests.test_mcp_stdio import data, make_vault, server_args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited before listening"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def test_a_session_over_streamable_http(
    tmp_path_factory: pytest.TempPathFactory, embedder: object
) -> None:
    root, index_dir = make_vault(tmp_path_factory.mktemp("mcp-http"), index=True)
    port = free_port()
    args = server_args(root, index_dir, "--no-watch", "--http", "--port", str(port))
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_listening(proc, port)

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as c:
                hits = data(await c.call_tool("search", {"query": "hornworms", "mode": "keyword"}))
                assert hits["hits"][0]["path"] == "garden/Tomatoes.md"
                note = data(
                    await c.call_tool("read_note", {"path": "work/Budget.md", "end_line": 1})
                )
                assert note["text"] == "1| # Budget" and note["next_start_line"] is None
                escaped = await c.call_tool("related", {"path": "../outside/secret.md"})
                assert escaped.is_error and "outside the vault" in escaped.content[0].text

        anyio.run(session)
        taken = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
        assert taken.returncode == 2 and f"Cannot listen on 127.0.0.1:{port}" in taken.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    out, err = proc.communicate()
    assert code == 0 and out == b""
    assert b"Traceback" not in err
    assert f'"url": "http://127.0.0.1:{port}/mcp"}}'.encode() in err  # loopback, no warning
