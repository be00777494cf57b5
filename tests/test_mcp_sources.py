"""The source tools over a real stdio MCP session: list_sources, scoped search,
read_source, code:// resources and reindex_target on a real git repository."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import HANG_GUARD, write_files
from tests.pdfs import make_pdf
from tests.test_sources import make_repo, push_change
from vaultsearch import Vault

LIB: dict[str, str | bytes] = {
    "README.md": "# Lib\n\n## Install\n\nRun make to build the cherry sorter.\n\n## Use\n\nSort.\n",
    "sorter.py": "def sort_cherries(crate):\n    '''Order cherries by ripeness.'''\n"
    "    return sorted(crate)\n",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mcp-sources")
    work, bare = make_repo(base / "repo", LIB)
    vault = write_files(base / "vault", {"Home.md": "# Home\n\nApples and cherries.\n"})
    cfg = vault / ".vaultsearch" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(
        f'[[sources]]\nname = "lib"\ntype = "git"\nurl = "{bare.as_uri()}"\n'
        '[sources.parsers]\n"**/*.py" = "text"\n',
        encoding="utf-8",
    )
    with Vault.open(vault) as v:
        v.index()
    return {"vault": vault, "work": work, "bare": bare}


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def until_found(c: Client, word: str) -> bool:
    """Whether a keyword search scoped to sorter.py finds ``word`` (a hang guard bounds it)."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        args = {"query": word, "mode": "keyword", "files": ["sorter.py"]}
        hits = data(await c.call_tool("search", args))["hits"]
        if hits:
            return bool(hits[0]["path"] == "lib:sorter.py")
        await anyio.sleep(0.2)
    return False


async def _noop(progress: float, total: float | None, message: str | None) -> None:
    pass


async def until_done(c: Client) -> None:
    """Wait (a hang guard bounds it) until no index run is going or asked for."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        progress = data(await c.call_tool("index_status", {}))["progress"]
        if progress["state"] == "done":
            return
        await anyio.sleep(0.2)


def test_source_tools_in_one_session(served: dict[str, Path], tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(served["vault"])],
        env=dict(os.environ),
    )

    async def session() -> None:
        with (tmp_path / "stderr.log").open("w") as err:
            async with Client(
                stdio_client(params, errlog=err), read_timeout_seconds=HANG_GUARD
            ) as c:
                listed = await c.list_tools()
                tools = {t.name: t for t in listed.tools}
                for name in ("list_sources", "read_source", "reindex_target"):
                    assert len(tools[name].description or "") < 300
                    assert tools[name].output_schema is None
                size = len(json.dumps(listed.model_dump(mode="json", exclude_none=True)))
                print(f"tools/list: {size} bytes, {len(tools)} tools")

                rows = data(await c.call_tool("list_sources", {}))["sources"]
                lib = next(r for r in rows if r["name"] == "lib")
                assert (lib["type"], lib["files"], lib["url"]) == (
                    "git",
                    2,
                    served["bare"].as_uri(),
                )
                assert lib["last_indexed"] and len(lib["commit"]) == 40

                args = {"query": "cherries", "mode": "keyword", "sources": ["lib"]}
                hits = data(await c.call_tool("search", args))["hits"]
                assert {h["path"] for h in hits} == {"lib:README.md", "lib:sorter.py"}
                text_only = data(await c.call_tool("search", {**args, "kinds": ["text"]}))
                [hit] = text_only["hits"]
                assert (hit["source"], hit["kind"], hit["path"]) == ("lib", "text", "lib:sorter.py")

                by_chunk = data(await c.call_tool("read_source", {"chunk_id": hit["chunk_id"]}))
                assert by_chunk["text"].splitlines()[0] == "1| def sort_cherries(crate):"
                section = data(
                    await c.call_tool("read_source", {"path": "lib:README.md", "heading": "Use"})
                )
                assert (section["start_line"], section["heading"]) == (7, "Lib > Use")
                lines = data(
                    await c.call_tool(
                        "read_source",
                        {"path": "lib:README.md", "start_line": 5, "end_line": 5, "context": 1},
                    )
                )
                assert (lines["start_line"], lines["end_line"]) == (4, 6)
                missing = await c.call_tool(
                    "read_source", {"path": "lib:sorter.py", "qualified_name": "Crate.sort"}
                )
                assert missing.is_error and "has no 'Crate.sort'" in missing.content[0].text
                no_page = await c.call_tool("read_source", {"path": "lib:sorter.py", "page": 2})
                assert no_page.is_error and "no indexed text on page 2" in no_page.content[0].text
                wrong = await c.call_tool("read_source", {"path": "lib:sorted.py"})
                assert wrong.is_error and "did you mean 'lib:sorter.py'" in wrong.content[0].text

                templates = (await c.list_resource_templates()).resource_templates
                assert "code://{source}/{+path}" in {t.uri_template for t in templates}
                read = await c.read_resource("code://lib/sorter.py")
                assert read.contents[0].mime_type == "text/plain"
                assert "def sort_cherries" in read.contents[0].text  # type: ignore[union-attr]
                readme = await c.read_resource("code://lib/README.md")
                assert readme.contents[0].mime_type == "text/markdown"
                listed_resources = (await c.list_resources()).resources
                mimes = {str(r.uri): r.mime_type for r in listed_resources}
                assert mimes["code://lib/sorter.py"] == "text/plain"
                assert mimes["note://Home.md"] == "text/markdown"
                as_note = await c.call_tool("read_note", {"path": "lib:README.md"})
                assert as_note.is_error and "read_source(path=" in as_note.content[0].text

                push_change(served["work"], served["bare"], {"sorter.py": "def weigh_plums():\n"})
                started = data(await c.call_tool("reindex_target", {"source": "lib"}))
                assert started["target"] == "source lib"
                assert await until_found(c, "weigh_plums")
                push_change(served["work"], served["bare"], {"sorter.py": "def peel_figs():\n"})
                one_file = data(await c.call_tool("reindex_target", {"path": "lib:sorter.py"}))
                assert one_file["target"] == "lib:sorter.py"
                assert await until_found(c, "peel_figs")
                bad = await c.call_tool("reindex_target", {"source": "nope"})
                assert bad.is_error and "sources: lib, vault" in bad.content[0].text

    anyio.run(session)


def test_passages_of_a_pdf_and_of_a_source_file_can_be_cited(
    tmp_path: Path, embedder: object
) -> None:
    """get_search_results and full_text quote what read_source shows: a PDF's page text
    as extracted, a source's file by its own path, never the vault's note reader."""
    lib = write_files(tmp_path / "lib", {"sorter.py": LIB["sorter.py"]})
    vault = write_files(tmp_path / "vault", {"Home.md": "# Home\n\nApples.\n"})
    pages = [["Orchard notes"], ["The cherry sorter runs at dawn for forty minutes."]]
    (vault / "Orchard.pdf").write_bytes(make_pdf(pages, title="Orchard"))
    (vault / ".vaultsearch").mkdir()
    (vault / ".vaultsearch" / "config.toml").write_text(
        f'[[sources]]\nname = "lib"\npath = "{lib}"\n', encoding="utf-8"
    )
    with Vault.open(vault) as v:
        v.index()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(vault), "--no-watch"],
        env=dict(os.environ),
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:
            found = data(
                await c.call_tool(
                    "search", {"query": "cherry sorter", "mode": "keyword", "full_text": True}
                )
            )
            by_path = {h["path"]: h for h in found["hits"]}
            assert by_path["Orchard.pdf"]["page"] == 2
            assert "forty minutes" in by_path["Orchard.pdf"]["text"]
            assert "def sort_cherries" in by_path["lib:sorter.py"]["text"]
            cited = data(
                await c.call_tool("get_search_results", {"session_id": found["session_id"]})
            )
            rows = {r["path"]: r for r in cited["results"]}
            assert "forty minutes" in rows["Orchard.pdf"]["text"]
            assert rows["lib:sorter.py"]["text"].startswith("def sort_cherries(crate):")
            assert rows["lib:sorter.py"]["file_uri"] == (lib / "sorter.py").as_uri()
            note = await c.call_tool("read_note", {"path": "Orchard.pdf"})
            assert note.is_error and "read_source(path='Orchard.pdf', page=N)" in (
                note.content[0].text
            )

    anyio.run(session)


def test_a_hostile_branch_is_refused_over_mcp_and_never_runs(
    tmp_path: Path, embedder: object
) -> None:
    """A running server whose sources.toml is edited by hand: reload_config refuses the
    new branch with one sentence, the source is re-indexed from the branch it had, and
    no command the value carried has run."""
    _, bare = make_repo(tmp_path / "repo", LIB)
    vault = write_files(tmp_path / "vault", {"Home.md": "# Home\n\nApples and cherries.\n"})
    managed = vault / ".vaultsearch" / "sources.toml"
    managed.parent.mkdir()
    managed.write_text(
        f'[[sources]]\nname = "lib"\ntype = "git"\nurl = "{bare}"\nbranch = "main"\n'
    )
    with Vault.open(vault) as v:
        v.index()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(vault), "--no-watch"],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
        cwd=str(tmp_path),  # where a command run by the branch would leave its file
    )

    async def session() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=HANG_GUARD) as c:
            listed = data(await c.call_tool("list_sources", {}))["sources"]  # config is read
            assert {r["name"]: r.get("branch") for r in listed}["lib"] == "main"
            managed.write_text(
                managed.read_text().replace(
                    '"main"', '"--upload-pack=touch pwned; git-upload-pack"'
                )
            )
            refused = await c.call_tool("reload_config", {})
            assert refused.is_error
            text = refused.content[0].text
            assert "'branch' = '--upload-pack=" in text and "read it as an option" in text
            await until_done(c)
            summary = data(await c.call_tool("reindex", {}, progress_callback=_noop))["summary"]
            assert "lib" not in summary.get("stale", {}), summary
            rows = {r["name"]: r for r in data(await c.call_tool("list_sources", {}))["sources"]}
            assert rows["lib"]["branch"] == "main" and rows["lib"]["files"] == 2

    anyio.run(session)
    assert [p for p in tmp_path.rglob("pwned*")] == []
