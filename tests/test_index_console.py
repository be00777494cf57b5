"""One Index Console per vault: ``vaultsearch serve`` in real processes, the registry
they share, the page's guards, and the MCP tools that open, list and stop consoles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from starlette.testclient import TestClient

from tests.conftest import HANG_GUARD, write_files
from vaultsearch.server.http import consoles
from vaultsearch.server.http.webapp import assemble

FILES: dict[str, str | bytes] = {
    "Alpha.md": "# Alpha\n\nThe first note links to [[Beta]].\n",
    "Beta.md": "# Beta\n\nThe second note.\n",
}


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never the real user's list of consoles; subprocesses inherit it."""
    monkeypatch.setenv(consoles.DIR_ENV, str(tmp_path / "consoles"))


def serve(root: Path, index_dir: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "vaultsearch.cli", "serve", str(root)]
    argv += ["--index-dir", str(index_dir), "--no-open", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=HANG_GUARD) as r:
        return dict(json.loads(r.read()))


def terminate(proc: subprocess.Popen[str]) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=HANG_GUARD)
    _, err = proc.communicate()
    return code, err


def test_two_servers_for_one_vault_leave_one_manager(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    index_dir = tmp_path / "index"
    procs = [serve(root, index_dir), serve(root, index_dir)]  # started together: they race
    try:
        lines = [first_line(p) for p in procs]
        reused = [i for i, line in enumerate(lines) if line.startswith("An Index Console already")]
        assert len(reused) == 1, lines
        loser, winner = procs[reused[0]], procs[1 - reused[0]]
        assert loser.wait(timeout=HANG_GUARD) == 0
        url = lines[1 - reused[0]].rsplit(" ", 1)[1]
        assert lines[reused[0]].endswith(url) and url.startswith("http://127.0.0.1:")
        assert winner.poll() is None and get_json(url + "health") == {"status": "ok"}
        listed = consoles.list_running()
        assert [(r.url, r.pid, r.vault) for r in listed] == [(url, winner.pid, str(root))]
        third = subprocess.run(  # a later one finds it as well
            [sys.executable, "-m", "vaultsearch.cli", "serve", str(root), "--index-dir",
             str(index_dir), "--no-open"],
            capture_output=True, text=True, timeout=HANG_GUARD,
        )  # fmt: skip
        assert third.returncode == 0 and third.stdout.strip().endswith(url)
    finally:
        codes = [terminate(p) for p in procs]
    assert [c for c, _ in codes] == [0, 0], codes
    assert all("Traceback" not in err for _, err in codes)
    assert not (index_dir / consoles.RECORD).exists() and consoles.list_running() == []


def test_a_dead_managers_record_does_not_block_the_next(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    index_dir = tmp_path / "index"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    index_dir.mkdir()
    stale = consoles.ConsoleRecord(
        str(root), str(index_dir), gone.pid, "127.0.0.1", 1, "http://127.0.0.1:1/", "2020-01-01"
    )
    (index_dir / consoles.RECORD).write_text(json.dumps(stale.to_dict()))
    assert consoles.find(index_dir, wait=0) is None
    proc = serve(root, index_dir)
    try:
        line = first_line(proc)
        assert line.startswith(f"Index Console for {root}: http://127.0.0.1:")
        record = consoles.read_record(index_dir / consoles.RECORD)
        assert record is not None and record.pid == proc.pid and line.endswith(record.url)
    finally:
        code, err = terminate(proc)
    assert code == 0, err


def test_the_port_is_chosen_upward_when_taken() -> None:
    first = consoles.bind("127.0.0.1", None)
    try:
        taken = first.getsockname()[1]
        assert taken >= consoles.FIRST_PORT
        second = consoles.bind("127.0.0.1", None)
        # another process may free a port below ``taken`` meanwhile: upward from the first
        assert consoles.FIRST_PORT <= second.getsockname()[1] != taken
        second.close()
        with pytest.raises(Exception, match=f"Cannot listen on 127.0.0.1:{taken}"):
            consoles.bind("127.0.0.1", taken)
    finally:
        first.close()


def test_the_page_loads_and_foreign_requests_are_refused() -> None:
    client = TestClient(assemble([], bind="127.0.0.1", port=3456), base_url="http://127.0.0.1:3456")
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'src="assets/app.js"' in page.text and "https://" not in page.text
    script = client.get("/assets/app.js")
    assert script.status_code == 200 and "textContent" in script.text
    assert "innerHTML" not in script.text.replace("never innerHTML", "")
    assert client.get("/assets/../cli.py").status_code == 404
    foreign = client.post(
        "/rebuild-index", json={"reindex_all": False}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403 and "Origin" in foreign.json()["error"]
    rebinding = client.get("/", headers={"Host": "evil.example"})
    assert rebinding.status_code == 421 and "Host" in rebinding.json()["error"]
    form = client.post("/cancel-indexing", content=b"x=1", headers={"Content-Type": "text/plain"})
    assert form.status_code == 400 and "application/json" in form.json()["error"]


def test_beyond_loopback_data_needs_the_token_but_the_page_does_not() -> None:
    app = assemble([], bind="0.0.0.0", port=3456, token="s3cret")
    client = TestClient(app, base_url="http://127.0.0.1:3456")
    assert client.get("/").status_code == 200
    assert client.get("/assets/app.css").status_code == 200
    assert client.get("/status").status_code == 401
    authed = client.get("/status", headers={"Authorization": "Bearer s3cret"})
    assert authed.status_code == 404  # past the gate; no REST routes in this assembly


def test_mcp_tools_open_list_and_stop_a_manager(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    index_dir = tmp_path / "index"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir),
              "--no-watch"],
        env=dict(os.environ),
    )  # fmt: skip

    def text(result: object) -> dict[str, object]:
        assert not getattr(result, "is_error", False), result
        return dict(json.loads(result.content[0].text))  # type: ignore[attr-defined]

    pids: list[int] = []

    async def session() -> None:
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:
            opened = text(await c.call_tool("open_index_console", {}))
            assert opened["started"] is True
            url = str(opened["url"])
            pids.append(int(str(opened["pid"])))
            assert get_json(url + "health") == {"status": "ok"}
            again = text(await c.call_tool("open_index_console", {}))
            assert again == {**opened, "started": False}
            listed = text(await c.call_tool("list_index_consoles", {}))
            entries = listed["consoles"]
            assert isinstance(entries, list) and len(entries) == 1
            assert {k: entries[0][k] for k in ("vault", "url", "pid")} == {
                "vault": str(root), "url": url, "pid": opened["pid"],
            }  # fmt: skip
            stopped = text(await c.call_tool("stop_index_console", {"url": url.rstrip("/")}))
            assert stopped == {"stopped": True, "url": url}
            nothing = text(await c.call_tool("stop_index_console", {}))
            assert nothing["stopped"] is False and "no Index Console" in str(nothing["reason"])
            assert text(await c.call_tool("list_index_consoles", {})) == {"consoles": []}

    try:
        anyio.run(session)
    finally:
        for pid in pids:
            if consoles.pid_alive(pid):
                os.kill(pid, signal.SIGTERM)


def test_mcp_over_http_serves_the_same_page_and_is_the_vaults_manager(tmp_path: Path) -> None:
    from tests.test_mcp_http import free_port, wait_listening

    root = write_files(tmp_path / "vault", FILES)
    port = free_port()
    argv = [sys.executable, "-m", "vaultsearch.cli", "mcp", str(root), "--index-dir",
            str(tmp_path / "index"), "--no-watch", "--http", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(proc, port)  # type: ignore[arg-type]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=HANG_GUARD) as r:
            assert r.headers["content-type"].startswith("text/html")
            assert b"Index Console" in r.read()
        assert get_json(f"http://127.0.0.1:{port}/health") == {"status": "ok"}

        async def reload() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=HANG_GUARD) as c:
                assert not (await c.call_tool("reload_config", {})).is_error

        anyio.run(reload)  # the page shows what the agent's tools did on the same server
        log = get_json(f"http://127.0.0.1:{port}/activity")["entries"]
        assert isinstance(log, list) and any(e["event"] == "config_reload" for e in log), log
        found = subprocess.run(  # it is the vault's manager: serve finds it
            [sys.executable, "-m", "vaultsearch.cli", "serve", str(root), "--index-dir",
             str(tmp_path / "index"), "--no-open"],
            capture_output=True, text=True, timeout=HANG_GUARD,
        )  # fmt: skip
        assert found.returncode == 0, found.stderr
        assert found.stdout.strip().endswith(f"http://127.0.0.1:{port}/")
    finally:
        code, err = terminate(proc)
    assert code == 0 and "Traceback" not in err
    assert consoles.list_running() == []


def test_an_open_event_stream_does_not_hold_the_server_at_exit(tmp_path: Path) -> None:
    """uvicorn waits for every response before it exits; an open page's /events never
    ends by itself, so the server ends it, cleanly, when it is told to stop."""
    import http.client

    root = write_files(tmp_path / "vault", FILES)
    proc = serve(root, tmp_path / "index")
    try:
        url = first_line(proc).rsplit(" ", 1)[1]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_GUARD)
        conn.request("GET", "/events")
        stream = conn.getresponse()
        assert stream.status == 200
        assert stream.readline() == b"event: progress\n"
        proc.send_signal(signal.SIGTERM)
        rest = stream.read()  # returns once the server has ended the stream properly
        assert rest.startswith(b"data: {") and rest.endswith(b"\n\n")
        conn.close()
    finally:
        code, err = terminate(proc)
    assert code == 0 and "Traceback" not in err and "ERROR" not in err
