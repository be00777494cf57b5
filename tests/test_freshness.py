"""What an MCP search says about the index it answered from, through real server
processes: a start-up update that finds nothing to do is not reported as "being
updated", and with the watcher off a search notices files changed since the index and
says so (``stale`` with the count), until an update takes them in."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import bump_mtime, write_files
from tests.test_mcp_stdio import data, server_args
from vaultsearch.app.vault import Vault

FILES = {
    "garden/Tomatoes.md": "# Tomatoes\n\nTomatoes need full sun and deep watering.\n",
    "garden/Basil.md": "# Basil\n\nBasil grows beside [[Tomatoes]] and keeps pests away.\n",
    "work/Budget.md": "# Budget\n\nThe quarterly budget review is in March.\n",
}
HANG_GUARD = 300.0
"""Seconds before a wait counts as hung; far above what any step needs."""


def indexed_vault(tmp_path: Path) -> tuple[Path, Path]:
    root = write_files(tmp_path / "vault", FILES)
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
    return root, tmp_path / "index"


def params(root: Path, index_dir: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=server_args(root, index_dir, *extra), env=dict(os.environ)
    )


async def search(c: Client, query: str) -> dict[str, Any]:
    return data(await c.call_tool("search", {"query": query, "mode": "keyword"}))


def test_a_one_shot_client_on_a_current_index_is_not_told_it_is_updating(
    tmp_path: Path, embedder: object
) -> None:
    """The client's first call races the server's start-up update, whichever of the two
    comes first: every order must answer without the warning (watcher on, as served)."""
    root, index_dir = indexed_vault(tmp_path)

    async def session() -> dict[str, Any]:
        async with Client(params(root, index_dir), read_timeout_seconds=300) as c:
            return await search(c, "tomatoes")

    first = anyio.run(session)
    assert first["hits"][0]["path"] == "garden/Tomatoes.md"
    assert not first["index_building"] and not first["stale"]
    assert "being updated" not in (first.get("message") or "")


async def runs_done(c: Client, runs: int) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while True:
        status = data(await c.call_tool("index_status", {}))
        if status["runs"] >= runs and not status["indexing"]:
            return
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.1)


def test_with_the_watcher_off_a_search_says_which_changes_it_misses(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = indexed_vault(tmp_path)

    async def session() -> None:
        async with Client(params(root, index_dir, "--no-watch"), read_timeout_seconds=300) as c:
            current = await search(c, "tomatoes")
            assert not current["stale"] and not current["index_building"]
            assert "being updated" not in (current.get("message") or "")
            # the start-up update runs with the watcher off too: an edit made before it
            # ends is its work ("being updated"), so this test edits after it
            await runs_done(c, 1)

            (root / "garden/Tomatoes.md").write_text("# Tomatoes\n\nTomatoes ripen late.\n")
            bump_mtime(root / "garden/Tomatoes.md")
            (root / "garden/Peppers.md").write_text("# Peppers\n\nPeppers like heat.\n")
            deadline = time.monotonic() + HANG_GUARD
            while not (behind := await search(c, "tomatoes"))["stale"]:
                # a walk of the vault is rationed (freshness.ChangeProbe): a search just
                # after the last one may still answer from its count
                assert time.monotonic() < deadline, behind
                await anyio.sleep(0.05)
            assert not behind["index_building"]
            assert "2 files changed since the index was last updated" in behind["message"]

            assert data(await c.call_tool("reindex", {}))["started"]
            await runs_done(c, 2)
            caught_up = await search(c, "peppers")
            assert caught_up["hits"][0]["path"] == "garden/Peppers.md"
            assert not caught_up["stale"] and caught_up.get("message") is None

    anyio.run(session)
