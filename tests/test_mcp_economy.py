"""Lean answers through real MCP sessions: the listing's size, search's new arguments, no
nulls, plain argument errors, read_note's flags, capped lists, and the navigation tools
(multi_get, links, outline, folders) over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import HANG_GUARD, write_files
from tests.test_mcp_http import free_port, http_server
from tests.test_mcp_stdio import INIT, finish, send, server_args
from vaultsearch import Vault

FILES: dict[str, str | bytes] = {
    "garden/Tomatoes.md": """
        ---
        tags: [garden/vegetables]
        status: done
        ---
        # Tomatoes

        Tomatoes need full sun and deep watering twice a week.
        See [[Composting]] for the soil tomatoes like.

        ## Pests

        Hornworms eat tomato leaves; pick the hornworms off by hand.

        ### Hornworm eggs

        Tomato hornworm eggs sit under the leaves; wipe them off.
        """,
    "garden/Composting.md": """
        # Composting

        Kitchen scraps turn into humus for the [[Tomatoes]]; see [[Missing Note]].
        """,
    "garden/herbs/Basil.md": "# Basil\n\nBasil grows beside [[Tomatoes]].\n",
    "work/Meetings.md": """
        # Meetings

        Weekly planning; numbers in [[Budget]], ideas from ![[Composting]] and [[Nowhere]].
        """,
    "work/Budget.md": "# Budget\n\nHiring and travel numbers.\n",
    "Lonely.md": "# Lonely\n\nNo links in or out.\n",
    "Inbox.md": "# Inbox\n\nOnly a broken link: [[Someday]].\n",
}
LIST_BOUND = 12 * 1024
"""Bytes of the default tools/list answer, with room for the tools still to come."""


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("economy")
    root = write_files(base / "vault", FILES)
    Vault.open(root, index_dir=base / "index").index()
    return root, base / "index"


def nulls(value: Any, where: str = "") -> list[str]:
    """Paths of every null in a JSON value."""
    if value is None:
        return [where or "."]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in nulls(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in nulls(v, f"{where}[{i}]")]
    return []


def test_tools_list_is_small_on_the_wire(indexed: tuple[Path, Path]) -> None:
    proc = subprocess.Popen(
        [sys.executable, *server_args(*indexed, "--no-watch")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    send(proc, INIT)
    proc.stdout.readline()
    send(proc, {"method": "notifications/initialized"})
    send(proc, {"id": 2, "method": "tools/list"})
    line = proc.stdout.readline()
    proc.stdin.close()
    code, _, err = finish(proc)
    assert code == 0 and "Traceback" not in err
    tools = json.loads(line)["result"]["tools"]
    assert len(line) <= LIST_BOUND, f"tools/list is {len(line)} bytes"
    for t in tools:
        assert "outputSchema" not in t, t["name"]
        assert 40 <= len(t["description"]) <= 250, t["name"]
        assert '"title"' not in json.dumps(t["inputSchema"]), t["name"]  # no argument is named so
        assert nulls(t) == [], t["name"]
    read_only = {t["name"] for t in tools if t.get("annotations", {}).get("readOnlyHint")}
    assert {"multi_get", "links", "outline", "folders", "search", "read_note"} <= read_only


def test_lean_answers_over_stdio(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(root, index_dir, "--no-watch"),
        env=dict(os.environ),
    )
    seen: list[dict[str, Any]] = []

    async def session() -> None:
        with open(os.devnull, "w") as quiet:
            async with Client(
                stdio_client(params, errlog=quiet), read_timeout_seconds=HANG_GUARD
            ) as c:

                async def ok(name: str, **args: Any) -> dict[str, Any]:
                    r = await c.call_tool(name, args)
                    assert not r.is_error, r.content[0].text
                    assert isinstance(r.structured_content, dict)
                    seen.append(r.structured_content)
                    return r.structured_content

                async def refused(name: str, **args: Any) -> str:
                    r = await c.call_tool(name, args)
                    assert r.is_error
                    text: str = r.content[0].text
                    for noise in (
                        "validation error",
                        "pydantic",
                        "http",
                        "type=",
                        "Error executing",
                    ):
                        assert noise not in text, text
                    assert text.count("\n") == 0 and text.endswith(".")
                    return text

                q = {"query": "tomato hornworms", "mode": "keyword"}
                top = (await ok("search", **q))["hits"][0]
                assert top["path"] == "garden/Tomatoes.md"
                assert (
                    isinstance(top["chunk_id"], int) and top["uri"] == "note://garden/Tomatoes.md"
                )
                assert "explain" not in top and "text" not in top

                short = (await ok("search", **q, snippet_chars=20))["hits"][0]
                assert len(short["snippet"]) <= 21
                assert all(e <= len(short["snippet"]) for _, e in short.get("highlights", []))
                bare = (await ok("search", **q, snippet_chars=0))["hits"][0]
                assert "snippet" not in bare and "highlights" not in bare

                full = (await ok("search", **q, full_text=True))["hits"][0]
                lines = Path(root / full["path"]).read_text().splitlines()
                want = "\n".join(lines[full["start_line"] - 1 : full["end_line"]]).strip("\n")
                assert full["text"] == want and "snippet" not in full

                more = (await ok("search", **q, chunks=3))["hits"][0]
                spans = [(more["start_line"], more["end_line"])] + [
                    (p["start_line"], p["end_line"]) for p in more["passages"]
                ]
                assert 2 <= len(spans) <= 3 and len(set(spans)) == len(spans)
                assert all(p["snippet"] for p in more["passages"])
                assert "explain" not in more  # asked for passages, not for the score's parts

                assert (await ok("search", **q, min_score=1e9))["hits"] == []
                assert (await ok("search", **q, min_score=-1.0))["hits"]

                assert await refused("search", query="x", top_k=-1) == (
                    "top_k should be greater than or equal to 1 (got -1)."
                )
                assert "mode should be 'hybrid', 'keyword' or 'semantic'" in await refused(
                    "search", query="x", mode="fuzzy"
                )
                assert "has no argument 'folder'" in await refused("search", query="x", folder="a")
                assert "read_note needs the argument path" in await refused("read_note")
                assert "chunks should be less than or equal to 5" in await refused(
                    "search", query="x", chunks=9
                )

                ranged = await ok("read_note", path="garden/Tomatoes.md", start_line=7, end_line=8)
                assert set(ranged) == {
                    "path", "title", "start_line", "end_line", "total_lines", "text", "truncated",
                }  # fmt: skip
                full_note = await ok(
                    "read_note", path="garden/Tomatoes", frontmatter=True, links=True
                )
                assert full_note["frontmatter"]["status"] == "done"
                assert full_note["tags"] == ["garden/vegetables"]
                assert full_note["outlinks"] == ["garden/Composting.md"]
                assert full_note["backlinks"] == ["garden/Composting.md", "garden/herbs/Basil.md"]

                rel = await ok("related", path="garden/Composting.md", depth=3, limit=1)
                assert all(len(rel[k]) <= 1 for k in ("backlinks", "nearby", "similar"))
                assert "Cut at limit=1" in rel["message"] and "backlinks 1 of 2" in rel["message"]

                got = await ok(
                    "multi_get",
                    items=["garden/Tomatoes.md:10:3", "nope.md", "work/Budget.md", "Lonely.md"],
                    max_chars=100,
                )
                first, missing, *rest = got["items"]
                assert (first["start_line"], first["end_line"]) == (10, 12)
                assert first["text"].splitlines()[0] == "10| ## Pests"
                assert "There is no note 'nope.md'" in missing["error"]
                assert got["skipped"] and "max_chars=100" in got["message"]
                assert [x["path"] for x in rest] + got["skipped"] == ["work/Budget.md", "Lonely.md"]

                broken = await ok("links", kind="broken")
                assert [(b["path"], b["target"]) for b in broken["items"]] == [
                    ("Inbox.md", "Someday"),
                    ("garden/Composting.md", "Missing Note"),
                    ("work/Meetings.md", "Nowhere"),
                ]
                orphans = await ok("links", kind="orphans")
                assert [x["path"] for x in orphans["items"]] == ["Inbox.md", "Lonely.md"]
                hubs = await ok("links", kind="most_linked", limit=2)
                assert [(x["path"], x["backlinks"]) for x in hubs["items"]] == [
                    ("garden/Composting.md", 2),
                    ("garden/Tomatoes.md", 2),
                ]
                assert hubs["total"] == 3
                back = await ok("links", kind="backlinks", path="garden/Tomatoes.md")
                assert [x["path"] for x in back["items"]] == [
                    "garden/Composting.md",
                    "garden/herbs/Basil.md",
                ]
                route = await ok("links", kind="path", path="Basil", target="work/Budget.md")
                assert route["hops"] == 4
                assert [x["path"] for x in route["items"]][::4] == [
                    "garden/herbs/Basil.md",
                    "work/Budget.md",
                ]
                apart = await ok("links", kind="path", path="Lonely.md", target="Inbox.md")
                assert apart["hops"] == -1 and apart["items"] == []
                assert "needs path" in await refused("links", kind="outlinks")

                outline = await ok("outline", path="garden/Tomatoes.md")
                assert [
                    (h["level"], h["text"], h["line"], h["end_line"]) for h in outline["items"]
                ] == [
                    (1, "Tomatoes", 5, 16),
                    (2, "Pests", 10, 16),
                    (3, "Hornworm eggs", 14, 16),
                ]
                folders = await ok("folders")
                assert [(f["folder"], f["notes"], f["all"]) for f in folders["items"]] == [
                    ("garden", 2, 3),
                    ("garden/herbs", 1, 1),
                    ("work", 2, 2),
                ]
                assert folders["top_level_notes"] == 2
                assert (await ok("folders", under="garden", limit=1))["total"] == 2

                tags = await ok("list_tags", limit=1)
                assert len(tags["tags"]) == 1 and tags["total"] == 2
                recent = await ok("list_notes", sort="date", limit=2)
                assert len(recent["notes"]) == 2 and recent["next_cursor"]

    anyio.run(session)
    assert seen and [n for s in seen for n in nulls(s)] == []


def test_navigation_over_streamable_http(indexed: tuple[Path, Path]) -> None:
    port = free_port()
    args = server_args(*indexed, "--no-watch", "--http", "--port", str(port))
    with http_server(args, port) as served:

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=HANG_GUARD) as c:
                got = await c.call_tool("multi_get", {"items": ["work/Budget.md:1:1"]})
                assert got.structured_content == {
                    "items": [
                        {
                            "path": "work/Budget.md",
                            "start_line": 1,
                            "end_line": 1,
                            "total_lines": 3,
                            "text": "1| # Budget",
                        }
                    ]
                }
                assert "== work/Budget.md lines 1-1 of 3" in got.content[0].text
                hubs = await c.call_tool("links", {"kind": "orphans"})
                assert "2 orphan notes" in hubs.content[0].text
                bad = await c.call_tool("outline", {"path": "garden/Tomatoes.md", "limit": 3})
                assert bad.is_error and bad.content[0].text == (
                    "outline has no argument 'limit'; it takes: path."
                )

        anyio.run(session)
    assert served.code == 0
