"""The MCP server as a subprocess, driven over stdio by the SDK's own client.

The index is built in this process first (the model is loaded once per session), so
the server starts on a current index; only its first semantic search loads the model.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from tests.conftest import HANG_GUARD, write_files
from vaultsearch import Vault

FILES: dict[str, str | bytes] = {
    "garden/Tomatoes.md": """
        ---
        tags: [garden/vegetables]
        status: done
        ---
        # Tomatoes

        Tomatoes need full sun and deep watering twice a week.
        See [[Composting]] for soil preparation.

        ## Pests

        Hornworms eat tomato leaves; pick them off by hand.
        """,
    "garden/Composting.md": """
        ---
        tags: [garden]
        status: draft
        ---
        # Composting

        Kitchen scraps and leaves turn into rich humus for the [[Tomatoes]].
        """,
    "work/Meetings.md": """
        ---
        tags: [work]
        ---
        # Meetings

        Weekly planning meeting every Monday; the notes go to ![[Composting]] and [[Nowhere]].
        """,
    "work/Budget.md": "# Budget\n\nHiring and travel numbers for the [[Meetings]].\n",
}
TOOLS = {
    "search", "read_note", "related", "list_notes", "list_tags", "index_status", "reindex",
    "multi_get", "links", "outline", "folders",
}  # fmt: skip
SESSION_TOOLS = {"get_search_results", "list_search_results", "get_template_schema"}
"""Covered by test_mcp_toolbox (with the write tools, which are not listed by default)."""
SOURCE_TOOLS = {"list_sources", "read_source", "reindex_target"}
"""Covered by test_mcp_sources."""
CONTROL_TOOLS = {"cancel_index", "reload_config"}
CONSOLE_TOOLS = {"open_index_console", "list_index_consoles", "stop_index_console"}


def make_vault(base: Path, index: bool) -> tuple[Path, Path]:
    root = write_files(base / "vault", FILES)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nNot for agents.\n")
    (root / "escape.md").symlink_to(outside / "secret.md")
    if index:
        Vault.open(root, index_dir=base / "index").index()
    return root, base / "index"


def server_args(root: Path, index_dir: Path, *extra: str) -> list[str]:
    return ["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir), *extra]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[Path, Path]:
    return make_vault(tmp_path_factory.mktemp("mcp"), index=True)


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def era_of(mode: str) -> tuple[str, ...]:
    """The protocol versions a client in ``mode`` must end up speaking: ``auto`` (what
    a new SDK client does) probes ``server/discover`` and must be served the modern era,
    ``legacy`` (older clients, the MCP Inspector) the ``initialize`` handshake."""
    return MODERN_PROTOCOL_VERSIONS if mode == "auto" else HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_session_over_stdio(
    indexed: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    """Every tool once, the refusals, and a log line per call, in either era. A hybrid
    search loads the model in the server: anything but protocol on its stdout would fail
    the client's line parser, which logs each failure."""
    caplog.set_level(logging.ERROR, logger="mcp.client.stdio")
    root, index_dir = indexed
    errlog = tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable, args=server_args(root, index_dir), env=dict(os.environ)
    )
    calls = 0

    async def session() -> None:
        nonlocal calls
        with errlog.open("w") as err:
            transport = stdio_client(params, errlog=err)
            async with Client(transport, mode=mode, read_timeout_seconds=HANG_GUARD) as c:
                assert c.protocol_version in era_of(mode)
                assert c.server_info is not None and c.server_info.name == "vaultsearch"
                assert c.instructions and "search" in c.instructions
                tools = {t.name: t for t in (await c.list_tools()).tools}
                assert (
                    set(tools)
                    == TOOLS | SESSION_TOOLS | SOURCE_TOOLS | CONTROL_TOOLS | CONSOLE_TOOLS
                )
                for t in tools.values():
                    assert t.description and 40 <= len(t.description) <= 250
                    assert t.input_schema["additionalProperties"] is False
                    assert t.output_schema is None  # structured content, no schema to read

                async def call(name: str, **args: Any) -> Any:
                    nonlocal calls
                    calls += 1
                    return await c.call_tool(name, args)

                found = data(await call("search", query="hornworms", mode="keyword"))
                top = found["hits"][0]
                assert (top["path"], top["start_line"], top["end_line"]) == (
                    "garden/Tomatoes.md", 10, 12,
                )  # fmt: skip
                assert top["heading_path"] == "Tomatoes > Pests"
                assert found["index_building"] in (True, False) and found["mode"] == "keyword"
                filtered = data(
                    await call("search", query="leaves", mode="keyword", where={"status": "draft"})
                )
                assert [h["path"] for h in filtered["hits"]] == ["garden/Composting.md"]
                one_tag = data(await call("search", query="leaves", mode="keyword", tags="work"))
                assert one_tag["hits"] == []
                explained = data(
                    await call("search", query="hornworms", mode="keyword", explain=True)
                )
                assert explained["hits"][0]["explain"]["branches"]["keyword"]["rank"] == 1
                text = (await call("search", query="hornworms", mode="keyword")).content[0].text
                assert "garden/Tomatoes.md:10-12" in text

                meaning = data(await call("search", query="how often do tomato plants need water"))
                assert meaning["hits"][0]["path"] == "garden/Tomatoes.md"

                note = data(
                    await call(
                        "read_note",
                        path="garden/Tomatoes.md",
                        start_line=6,
                        end_line=7,
                        frontmatter=True,
                        links=True,
                    )
                )
                assert note["text"].splitlines() == [
                    "6| ",
                    "7| Tomatoes need full sun and deep watering twice a week.",
                ]
                assert note["frontmatter"]["status"] == "done" and note["total_lines"] == 12
                assert note["backlinks"] == ["garden/Composting.md"]
                assert not note["truncated"]
                section = data(await call("read_note", path="garden/Tomatoes", heading="Pests"))
                assert section["start_line"] == 10 and section["heading"] == "Tomatoes > Pests"

                rel = data(await call("related", path="work/Meetings.md", depth=2))
                assert [x["path"] for x in rel["embeds"]] == ["garden/Composting.md"]
                assert rel["unresolved_links"] == ["Nowhere"]
                assert [x["path"] for x in rel["backlinks"]] == ["work/Budget.md"]
                assert "garden/Tomatoes.md" in [x["path"] for x in rel["nearby"]]
                assert rel["similar"] and "work/Meetings.md" not in [
                    x["path"] for x in rel["similar"]
                ]

                page = data(await call("list_notes", limit=3))
                assert page["total"] == 4 and len(page["notes"]) == 3
                last = data(await call("list_notes", limit=3, cursor=page["next_cursor"]))
                assert [n["path"] for n in last["notes"]] == ["work/Meetings.md"]
                tags = {t["tag"]: t["notes"] for t in data(await call("list_tags"))["tags"]}
                assert tags == {"garden": 2, "garden/vegetables": 1, "work": 1}

                status = data(await call("index_status"))
                assert status["notes"] == 4 and status["index_exists"]
                assert status["role"] in ("writer", "starting")

                listed = {r.uri for r in (await c.list_resources()).resources}
                assert "note://garden/Tomatoes.md" in listed and "note://escape.md" not in listed
                templates = (await c.list_resource_templates()).resource_templates
                assert sorted(t.uri_template for t in templates) == [
                    "chunk://{lines}/{+path}", "code://{source}/{+path}", "note://{+path}",
                    "template://{name}/schema",
                ]  # fmt: skip
                body = (await c.read_resource("note://work/Budget.md")).contents[0]
                assert body.mime_type == "text/markdown"
                assert getattr(body, "text", "").startswith("# Budget")

                for bad in ("../outside/secret.md", "escape.md", str(root.parent / "outside")):
                    refused = await call("read_note", path=bad)
                    assert refused.is_error and "outside the vault" in refused.content[0].text
                with pytest.raises(MCPError, match="outside the vault"):
                    await c.read_resource("note://escape.md")
                for args, expected in (
                    ({"query": "x", "top_k": -1}, "greater than or equal to 1"),
                    ({"query": "x", "folder": "garden"}, "has no argument 'folder'"),
                    ({"query": "x", "where": {"stauts": "done"}}, "fields in this vault: status"),
                    ({"query": "x", "after": "yesterday"}, "not a date"),
                ):
                    bad_call = await call("search", **args)
                    assert bad_call.is_error and expected in bad_call.content[0].text
                missing = await call("read_note", path="garden/Tomatos.md")
                hint = "did you mean 'garden/Tomatoes.md'"
                assert missing.is_error and hint in missing.content[0].text
                assert data(await call("index_status"))["notes"] == 4  # still serving

    anyio.run(session)
    lines = [json.loads(line) for line in errlog.read_text().splitlines() if line.startswith("{")]
    logged = [x for x in lines if "tool" in x]
    assert len(logged) == calls
    assert all(isinstance(x["ms"], float) and "args" in x for x in logged)
    assert logged[0]["tool"] == "search" and logged[0]["results"] >= 1
    assert logged[0]["args"] == {"query": "hornworms", "mode": "keyword"}
    assert sum("error" in x for x in logged) == 8
    assert "Traceback" not in errlog.read_text()
    assert not [r for r in caplog.records if "JSONRPC" in r.getMessage()]
    handshakes = [x for x in lines if x.get("event") == "handshake"]
    assert [x["sdk_agrees"] for x in handshakes] == [True]


def test_a_client_whose_probe_timed_out_still_gets_the_modern_era(
    indexed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that starts slower than the client's probe timeout (10 s: a loaded
    machine): the client abandons ``server/discover`` and sends ``initialize``, which the
    server, already modern by the probe, refuses with -32022; the client probes again
    and works. Here the first probe is given no time at all, so it is always abandoned."""
    from mcp.client import session as client_session

    probes: list[str] = []
    probe = client_session.ClientSession.send_discover

    async def abandoned_first(self: Any, version: str) -> dict[str, Any]:
        probes.append(version)
        patience = 0 if len(probes) == 1 else client_session.DISCOVER_TIMEOUT_SECONDS
        with monkeypatch.context() as m:
            m.setattr(client_session, "DISCOVER_TIMEOUT_SECONDS", patience)
            return await probe(self, version)

    monkeypatch.setattr(client_session.ClientSession, "send_discover", abandoned_first)
    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(*indexed, "--no-watch"),
        env=dict(os.environ),
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:
            assert c.protocol_version in MODERN_PROTOCOL_VERSIONS
            found = data(await c.call_tool("search", {"query": "hornworms", "mode": "keyword"}))
            assert found["hits"][0]["path"] == "garden/Tomatoes.md"

    anyio.run(session)
    assert len(probes) == 2  # the second came from the server's -32022 to `initialize`


def test_before_any_index_search_says_it_is_building(tmp_path: Path) -> None:
    root, index_dir = make_vault(tmp_path, index=False)
    (root / "Big.md").write_text("".join(f"line {i}\n" for i in range(1, 501)))
    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(root, index_dir, "--no-watch"),
        env=dict(os.environ),
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:
            first = data(await c.call_tool("search", {"query": "tomatoes", "mode": "keyword"}))
            assert first["hits"] == [] and first["index_building"] and first["message"]
            listing = data(await c.call_tool("list_notes", {}))
            assert listing["total"] == 5 and listing["index_building"]
            big = await c.call_tool("read_note", {"path": "Big"})  # no range: a bounded slice
            assert data(big)["truncated"] and data(big)["next_start_line"] == 201
            assert data(big)["text"].splitlines()[-1] == "200| line 200"
            assert "start_line=201" in big.content[0].text
            deadline = time.monotonic() + HANG_GUARD
            while (status := data(await c.call_tool("index_status", {})))["runs"] == 0:
                if status["indexing"]:  # a reindex now is queued behind the start-up build
                    again = data(await c.call_tool("reindex", {}))
                    assert again["already_running"] != again["started"], again  # or it ended
                    break
                assert time.monotonic() < deadline, status
                await anyio.sleep(0.02)
            else:  # the start-up build ended before it was seen going: ask for the second run
                assert data(await c.call_tool("reindex", {}))["started"]
            deadline = time.monotonic() + HANG_GUARD
            while time.monotonic() < deadline:
                status = data(await c.call_tool("index_status", {}))
                if status["index_exists"] and not status["indexing"] and status["runs"] >= 2:
                    break
                await anyio.sleep(0.2)
            assert status["notes"] == 5 and status.get("last_error") is None
            done = data(await c.call_tool("search", {"query": "tomatoes", "mode": "keyword"}))
            assert done["hits"] and not done["index_building"] and not done["stale"]

    anyio.run(session)


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def raw_server(root: Path, index_dir: Path) -> subprocess.Popen[bytes]:
    """A server on plain pipes, after it answered ``initialize``."""
    proc = subprocess.Popen(
        [sys.executable, *server_args(root, index_dir, "--no-watch")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    send(proc, INIT)
    assert proc.stdout is not None
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "vaultsearch"
    return proc


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    """Exit code, the rest of stdout and all of stderr; every pipe closed."""
    code = proc.wait(timeout=HANG_GUARD)  # a hang guard: a starved server may take long to start
    out = proc.stdout.read() if proc.stdout and not proc.stdout.closed else b""
    err = proc.stderr.read() if proc.stderr else b""
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    return code, out.decode(), err.decode()


def test_resources_are_listed_a_page_at_a_time(tmp_path: Path) -> None:
    """Past one page the client follows next_cursor and sees every note exactly once;
    a cursor the server never gave is refused with a sentence."""
    root = write_files(tmp_path / "vault", {f"n/{i:03d}.md": f"# N{i}\n" for i in range(205)})
    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(root, tmp_path / "index", "--no-watch"),
        env=dict(os.environ),
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:
            first = await c.list_resources()
            assert len(first.resources) == 200 and first.next_cursor
            rest = await c.list_resources(cursor=first.next_cursor)
            assert rest.next_cursor is None
            uris = [str(r.uri) for r in (*first.resources, *rest.resources)]
            notes = sorted(f"note://n/{i:03d}.md" for i in range(205))
            assert uris == sorted([*notes, "template://current/schema"])
            with pytest.raises(MCPError, match="not a cursor this server gave"):
                await c.list_resources(cursor="7")

    anyio.run(session)


def test_sigterm_ends_cleanly_while_the_model_loads(indexed: tuple[Path, Path]) -> None:
    proc = raw_server(*indexed)
    assert proc.stdout is not None
    send(proc, {"method": "notifications/initialized"})
    search = {"name": "search", "arguments": {"query": "compost", "mode": "keyword"}}
    send(proc, {"id": 2, "method": "tools/call", "params": search})
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 2 and answer["result"]["structuredContent"]["hits"]
    proc.send_signal(signal.SIGTERM)  # the model is loading in the background by now
    code, rest, err = finish(proc)
    assert code == 0 and "Traceback" not in err
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines())


def test_closing_stdin_or_the_pipe_ends_cleanly(indexed: tuple[Path, Path]) -> None:
    proc = raw_server(*indexed)
    assert proc.stdin is not None
    proc.stdin.close()
    code, _, err = finish(proc)
    assert code == 0 and "Traceback" not in err

    proc = raw_server(*indexed)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.close()  # the client is gone: answers now hit a broken pipe
    with contextlib.suppress(BrokenPipeError):  # the server may be gone already
        for i in range(3):
            send(proc, {"id": 10 + i, "method": "tools/list"})
            time.sleep(0.1)
        proc.stdin.close()
    code, _, err = finish(proc)
    assert code == 0 and "Traceback" not in err


def test_the_handshake_path_loads_no_model_code(indexed: tuple[Path, Path]) -> None:
    """Everything up to serving (imports, opening the vault, building the server) runs
    before the `initialize` answer; torch and the model stack must not be in it."""
    root, index_dir = indexed
    code = f"""
import sys
from vaultsearch.app.vault import Vault
from vaultsearch.server.mcp.run import Background, build_server
from vaultsearch.server.mcp.calllog import CallLog
vault = Vault.open({str(root)!r}, index_dir={str(index_dir)!r})
log = CallLog(sys.stderr)
build_server(vault, Background(vault, True, log), log)
heavy = sorted(m for m in ("torch", "transformers", "llama_index", "sentence_transformers")
               if m in sys.modules)
print(heavy)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
