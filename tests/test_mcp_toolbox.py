"""Search sessions, reports and the opt-in write tools through real MCP client sessions
(a server subprocess over stdio, and over streamable HTTP), checking the vault's files."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.conftest import HANG_GUARD
from tests.test_mcp_http import free_port, http_server
from tests.test_mcp_stdio import data, make_vault, server_args

READ_TOOLS = {"get_search_results", "list_search_results", "get_template_schema"}
WRITE_TOOLS = {
    "create_rag_report", "write_note", "edit_note", "move_note", "delete_note",
    "upsert_documents", "delete_documents", "list_documents",
}  # fmt: skip


@pytest.fixture(scope="module")
def readonly_vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[Path, Path]:
    return make_vault(tmp_path_factory.mktemp("toolbox-ro"), index=True)


@pytest.fixture
def fresh_vault(tmp_path: Path, embedder: object) -> tuple[Path, Path]:
    return make_vault(tmp_path, index=True)


def stdio(root: Path, index_dir: Path, *extra: str) -> StdioServerParameters:
    args = server_args(root, index_dir, "--no-watch", *extra)
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


def paths(found: dict[str, Any]) -> list[str]:
    return [h["path"] for h in found["hits"]]


def test_by_default_sessions_and_templates_but_no_write_tools(
    readonly_vault: tuple[Path, Path],
) -> None:
    root, index_dir = readonly_vault

    async def session() -> None:
        async with Client(stdio(root, index_dir), read_timeout_seconds=HANG_GUARD) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) >= READ_TOOLS and not WRITE_TOOLS & set(tools)
            for name in READ_TOOLS:
                assert len(tools[name].description or "") <= 250
                assert tools[name].output_schema is None
            refused = await c.call_tool("write_note", {"path": "x.md", "content": "x"})
            assert refused.is_error and "--allow-writes" in refused.content[0].text
            assert not (root / "x.md").exists()

            first = data(await c.call_tool("search", {"query": "tomatoes", "mode": "keyword"}))
            second = data(await c.call_tool("search", {"query": "meeting", "mode": "keyword"}))
            assert first["session_id"] != second["session_id"]
            third = await c.call_tool("search", {"query": "tomatoes", "mode": "keyword"})
            assert f"session {data(third)['session_id']}" in third.content[0].text
            listed = data(await c.call_tool("list_search_results", {}))["sessions"]
            assert [s["query"] for s in listed][:3] == ["tomatoes", "meeting", "tomatoes"]
            merged = data(
                await c.call_tool(
                    "get_search_results",
                    {"session_ids": [first["session_id"], second["session_id"]], "limit": 50},
                )
            )
            got = [(r["path"], r["start_line"]) for r in merged["results"]]
            assert len(got) == len(set(got)) == merged["total"]
            assert set(paths(first)) | set(paths(second)) == {p for p, _ in got}
            for r in merged["results"]:
                lines = (root / r["path"]).read_text().splitlines()
                assert r["text"] == "\n".join(lines[r["start_line"] - 1 : r["end_line"]])
                assert r["file_uri"] == (root / r["path"]).resolve().as_uri()
            gone = await c.call_tool("get_search_results", {"session_id": "s00000000"})
            assert gone.is_error and "No search session 's00000000'" in gone.content[0].text
            neither = await c.call_tool("get_search_results", {})
            assert neither.is_error and "Pass session_id or session_ids" in neither.content[0].text

            schema = data(await c.call_tool("get_template_schema", {"name": "paper"}))
            assert {"title", "body", "sources"} <= set(schema["variables"])
            assert schema["variables"]["sources"]["required"]
            assert {"basic", "paper", "bullet_points"} <= set(schema["templates"])
            current = (await c.read_resource("template://current/schema")).contents[0]
            assert json.loads(getattr(current, "text", ""))["name"] == "basic"
            named = (await c.read_resource("template://bullet_points/schema")).contents[0]
            assert "points" in json.loads(getattr(named, "text", ""))["variables"]
            with pytest.raises(MCPError, match="no template 'nope'"):
                await c.read_resource("template://nope/schema")

    anyio.run(session)


CITATION = re.compile(r"^\[(\d+)\] (\S+), lines (\d+)-(\d+)", re.M)


def test_an_agent_searches_twice_and_writes_a_cited_report(
    fresh_vault: tuple[Path, Path],
) -> None:
    """The scripted agent session: two searches, their passages merged, a paper written
    from them; every citation in the file names a real note and real lines of it."""
    root, index_dir = fresh_vault

    async def session() -> None:
        async with Client(
            stdio(root, index_dir, "--allow-writes"), read_timeout_seconds=HANG_GUARD
        ) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) >= WRITE_TOOLS
            assert all(len(tools[n].description or "") <= 250 for n in WRITE_TOOLS)
            a = data(await c.call_tool("search", {"query": "how do I water tomatoes"}))
            b = data(await c.call_tool("search", {"query": "compost kitchen scraps"}))
            merged = data(
                await c.call_tool(
                    "get_search_results", {"session_ids": [a["session_id"], b["session_id"]]}
                )
            )
            sources = [
                {"path": r["path"], "start_line": r["start_line"], "end_line": r["end_line"]}
                for r in merged["results"][:3]
            ]
            report = data(
                await c.call_tool(
                    "create_rag_report",
                    {
                        "template": "paper",
                        "variables": {
                            "title": "Growing Tomatoes: Water & Soil",
                            "abstract": "Sun, water and compost.",
                            "body": "Water deeply [1]; feed the soil with compost [2].",
                            "sources": sources,
                        },
                    },
                )
            )
            rel = report["path"]
            assert re.fullmatch(r"rag-reports/\d{8}_\d{6}_growing-tomatoes-water-soil\.md", rel)
            assert report["sources"] == len(sources)
            text = (root / rel).read_text()
            cited = CITATION.findall(text)
            assert [int(n) for n, *_ in cited] == list(range(1, len(sources) + 1))
            for (_, path, start, end), src in zip(cited, sources, strict=True):
                assert (path, int(start), int(end)) == (
                    src["path"], src["start_line"], src["end_line"],
                )  # fmt: skip
                assert int(end) <= len((root / path).read_text().splitlines())
            assert "Water deeply [1]" in text and text.startswith("# Growing Tomatoes")
            read_back = data(await c.call_tool("read_note", {"path": rel}))
            assert read_back["text"].splitlines()[0].endswith("1| # Growing Tomatoes: Water & Soil")
            resource = (await c.read_resource(report["uri"])).contents[0]
            assert getattr(resource, "text", "") == text

            from_sessions = data(
                await c.call_tool(
                    "create_rag_report",
                    {
                        "variables": {
                            "title": "Same",
                            "answer": "Yes.",
                            "session_ids": [a["session_id"]],
                        },
                        "file_name": "same-answer",
                    },
                )
            )
            assert from_sessions["path"] == "rag-reports/same-answer.md"
            assert f"[[{a['hits'][0]['path']}]]" in (root / from_sessions["path"]).read_text()
            again = await c.call_tool(
                "create_rag_report",
                {"variables": {"title": "x", "answer": "y"}, "file_name": "same-answer"},
            )
            assert again.is_error and "exists already" in again.content[0].text
            for bad, expected in (
                ({"output_dir": "../outside"}, "outside the vault"),
                ({"output_dir": str(root.parent / "outside")}, "outside the vault"),
                ({"template": "paper"}, "needs the variable(s) body, sources"),
                (
                    {
                        "variables": {
                            "title": "t",
                            "answer": "a",
                            "sources": [
                                {"path": "work/Budget.md", "start_line": 2, "end_line": 99}
                            ],
                        }
                    },
                    "the note has 3 lines",
                ),
            ):
                args = {"variables": {"title": "t", "answer": "a"}, **bad}
                refused = await c.call_tool("create_rag_report", args)
                assert refused.is_error and expected in refused.content[0].text, refused.content[
                    0
                ].text
            assert [p.name for p in (root.parent / "outside").iterdir()] == ["secret.md"]
            assert sorted(p.name for p in (root / "rag-reports").iterdir()) == sorted(
                [Path(rel).name, "same-answer.md"]
            )

            # the report folder is not indexed: its words never come back as hits
            hits = data(
                await c.call_tool(
                    "search", {"query": "Growing Tomatoes Water Soil", "mode": "keyword"}
                )
            )
            assert not [p for p in paths(hits) if p.startswith("rag-reports/")]

    anyio.run(session)


def test_every_write_is_in_the_files_and_in_search_when_it_returns(
    fresh_vault: tuple[Path, Path], tmp_path: Path
) -> None:
    root, index_dir = fresh_vault
    log = tmp_path / "calls.log"
    (root / "garden/Links.md").write_text(
        "# Links\n\n[[Composting|the heap]] and [[garden/Composting#Heading]] and ![[Composting]]\n"
        "[md](Composting.md) and `[[Composting]]`\n\n```\n[[Composting]]\n```\n"
    )

    async def session() -> None:
        env = {**os.environ, "VAULTSEARCH_MCP_LOG": str(log)}
        params = stdio(root, index_dir, "--allow-writes")
        params = StdioServerParameters(command=params.command, args=params.args, env=env)
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:

            async def call(name: str, **args: Any) -> dict[str, Any]:
                return data(await c.call_tool(name, args))

            async def found(query: str) -> list[str]:
                return paths(await call("search", query=query, mode="keyword"))

            made = await call(
                "write_note",
                path="ideas/Zucchini",
                content="# Zucchini\n\nZucchini glut recipes.\n",
            )
            assert made["path"] == "ideas/Zucchini.md" and made["created"] and made["searchable"]
            assert (
                root / "ideas/Zucchini.md"
            ).read_text() == "# Zucchini\n\nZucchini glut recipes.\n"
            assert await found("zucchini") == ["ideas/Zucchini.md"]
            exists = await c.call_tool("write_note", {"path": "ideas/Zucchini.md", "content": "x"})
            assert exists.is_error and "overwrite=true" in exists.content[0].text

            await call(
                "edit_note",
                path="ideas/Zucchini.md",
                operation="append",
                content="## Bread\n\nQuickbread with walnuts.",
            )
            assert await found("walnuts") == ["ideas/Zucchini.md"]
            await call(
                "edit_note",
                path="ideas/Zucchini.md",
                operation="replace_section",
                heading="Bread",
                content="Muffins with pecans.",
            )
            assert (
                (root / "ideas/Zucchini.md")
                .read_text()
                .endswith("## Bread\nMuffins with pecans.\n")
            )
            assert await found("walnuts") == [] and await found("pecans") == ["ideas/Zucchini.md"]
            wrong = await c.call_tool(
                "edit_note",
                {
                    "path": "ideas/Zucchini.md",
                    "operation": "find_replace",
                    "find": "Zucchini",
                    "content": "Squash",
                    "expected_count": 1,
                },
            )
            assert wrong.is_error and "occurs 2 times, not 1" in wrong.content[0].text

            moved = await call(
                "move_note", path="garden/Composting.md", new_path="soil/Compost Heap.md"
            )
            assert moved["rewritten"] == {
                "garden/Links.md": 4,
                "garden/Tomatoes.md": 1,
                "work/Meetings.md": 1,
            }
            assert not (root / "garden/Composting.md").exists()
            assert (root / "garden/Links.md").read_text() == (
                "# Links\n\n[[Compost Heap|the heap]] and [[soil/Compost Heap#Heading]] and ![[Compost Heap]]\n"
                "[md](../soil/Compost%20Heap.md) and `[[Composting]]`\n\n```\n[[Composting]]\n```\n"
            )
            assert "![[Compost Heap]]" in (root / "work/Meetings.md").read_text()
            assert await found("humus") == ["soil/Compost Heap.md"]
            related = await call("related", path="soil/Compost Heap.md")
            assert "garden/Tomatoes.md" in [x["path"] for x in related["backlinks"]]

            async with anyio.create_task_group() as tg:  # two edits at once: both land
                for word in ("alpha", "beta"):
                    tg.start_soon(
                        lambda w: call(
                            "edit_note", path="ideas/Zucchini.md", operation="append", content=w
                        ),
                        word,
                    )
            tail = (root / "ideas/Zucchini.md").read_text().splitlines()[-3:]
            assert tail in (["alpha", "", "beta"], ["beta", "", "alpha"])
            dropped = await call("delete_note", path="work/Budget.md")
            assert dropped == {"path": "work/Budget.md", "deleted": True, "searchable": True}
            dropped = await call("delete_note", path="work/Meetings.md")
            assert "still_linked_from" not in dropped  # its one backlink went with Budget
            assert not (root / "work/Meetings.md").exists()
            await call("write_note", path="Keeper.md", content="See [[Zucchini]].\n")
            dropped = await call("delete_note", path="ideas/Zucchini.md")
            assert dropped["still_linked_from"] == ["Keeper.md"]
            assert not (root / "ideas/Zucchini.md").exists() and await found("pecans") == []

            up = await call("upsert_documents", documents=[
                {"id": "doc:1", "text": "Quarterly okra harvest figures.", "metadata": {"source": "crm"}},
                {"id": "doc/2", "text": "Okra seed suppliers."},
            ])  # fmt: skip
            assert [d["path"] for d in up["documents"]] == [
                "documents/doc%3A1.md",
                "documents/doc%2F2.md",
            ]
            assert (
                root / "documents/doc%3A1.md"
            ).read_text() == "---\nid: doc:1\nsource: crm\n---\nQuarterly okra harvest figures.\n"
            assert sorted(await found("okra")) == ["documents/doc%2F2.md", "documents/doc%3A1.md"]
            await call("upsert_documents", documents=[{"id": "doc:1", "text": "Beet figures."}])
            assert await found("okra") == ["documents/doc%2F2.md"]
            page = await call("list_documents", limit=1)
            assert page["total"] == 2 and [d["id"] for d in page["documents"]] == [
                "doc%2F2"[:0] + "doc/2"
            ]
            rest = await call("list_documents", limit=1, cursor=page["next_cursor"])
            assert [d["id"] for d in rest["documents"]] == ["doc:1"] and "next_cursor" not in rest
            gone = await call("delete_documents", ids=["doc:1", "doc:9"])
            assert gone == {"deleted": 1, "missing": ["doc:9"], "searchable": True}
            assert await found("beet") == []

            for bad in (
                "../outside/new.md",
                str(root.parent / "outside/new.md"),
                ".obsidian/x.md",
                "escape.md",
            ):
                refused = await c.call_tool(
                    "write_note", {"path": bad, "content": "x", "overwrite": True}
                )
                assert refused.is_error and (
                    "outside the vault" in refused.content[0].text
                    or "hidden" in refused.content[0].text
                ), bad
            assert (
                root.parent / "outside/secret.md"
            ).read_text() == "# Secret\n\nNot for agents.\n"
            assert not (root.parent / "outside/new.md").exists()

    anyio.run(session)
    events = [json.loads(x) for x in log.read_text().splitlines() if '"event": "write"' in x]
    assert [e["tool"] for e in events] == [
        "write_note", "edit_note", "edit_note", "move_note", "edit_note", "edit_note",
        "delete_note", "delete_note", "write_note", "delete_note",
        "upsert_documents", "upsert_documents", "delete_documents",
    ]  # fmt: skip


def test_writes_enabled_in_the_config_over_http(fresh_vault: tuple[Path, Path]) -> None:
    root, index_dir = fresh_vault
    config = root.parent / "config.toml"
    config.write_text('[writes]\nenabled = true\ndocuments_folder = "inbox/docs"\n')
    port = free_port()
    args = server_args(
        root, index_dir, "--no-watch", "--http", "--port", str(port), "--config", str(config)
    )
    with http_server(args, port) as served:

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=HANG_GUARD) as c:
                assert {t.name for t in (await c.list_tools()).tools} >= WRITE_TOOLS
                up = data(
                    await c.call_tool(
                        "upsert_documents", {"documents": [{"id": "a", "text": "Rhubarb crumble."}]}
                    )
                )
                assert up["documents"][0]["path"] == "inbox/docs/a.md" and up["searchable"]
                hit = data(await c.call_tool("search", {"query": "rhubarb", "mode": "keyword"}))
                assert paths(hit) == ["inbox/docs/a.md"]
                full = data(
                    await c.call_tool("get_search_results", {"session_id": hit["session_id"]})
                )
                assert full["results"][0]["text"] == "Rhubarb crumble."

        anyio.run(session)
    assert served.code == 0 and b"Traceback" not in served.err
