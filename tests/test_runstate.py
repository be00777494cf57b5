"""A run by any process shows on the page of another: the Index Console page (a real
``vaultsearch serve``) reports a ``vaultsearch index`` run and an MCP server's start-up
build, who ran them and why, and a cancelled run says what the index kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.browser import served
from tests.conftest import write_files
from tests.test_mcp_stdio import data, server_args
from tests.test_runner import _notes
from vaultsearch.app.vault import Vault

CLI = (sys.executable, "-m", "vaultsearch.cli")
HANG_GUARD = 300.0
"""Seconds before a wait counts as hung; far above what any step needs."""


def progress(url: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(url.rstrip("/") + "/progress", timeout=HANG_GUARD).json()
    return body


def status(url: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(url.rstrip("/") + "/status", timeout=HANG_GUARD).json()
    return body


def test_the_page_shows_a_command_line_run_of_another_process(
    tmp_path: Path, embedder: object
) -> None:
    root = write_files(tmp_path / "vault", _notes(3, parts=2))
    index_dir = tmp_path / "index"
    with served(root, index_dir) as url:
        assert progress(url)["state"] == "idle"  # nothing has ever run
        cli = subprocess.Popen(
            [*CLI, "index", str(root), "--index-dir", str(index_dir), "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = cli.communicate(timeout=HANG_GUARD)
        assert cli.returncode == 0, err
        shown = progress(url)
    assert shown["state"] == "done" and shown["percent"] == 100.0
    assert (shown["by"], shown["pid"]) == ("vaultsearch index", cli.pid)
    assert shown["reason"] == "asked on the command line"
    assert shown["files_done"] == shown["files_total"] == 3
    assert shown["counts"]["notes"] == 3 and f"{shown['counts']['chunks']} chunks" in out


def test_the_page_follows_an_mcp_servers_build_and_its_cancel(
    tmp_path: Path, embedder: object
) -> None:
    root = write_files(tmp_path / "vault", _notes(40, parts=8))
    index_dir = tmp_path / "index"
    params = StdioServerParameters(
        command=sys.executable, args=server_args(root, index_dir), env=dict(os.environ)
    )

    async def session(url: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with Client(params, read_timeout_seconds=HANG_GUARD) as c:
            deadline = time.monotonic() + HANG_GUARD
            while not ((seen := progress(url))["state"] == "running" and seen["chunks_done"]):
                assert time.monotonic() < deadline, seen
                await anyio.sleep(0.05)
            assert data(await c.call_tool("cancel_index", {}))["cancelling"]
            while (ended := progress(url))["state"] in ("running", "cancelling"):
                assert time.monotonic() < deadline, ended
                await anyio.sleep(0.05)
            status = data(await c.call_tool("index_status", {}))
            return seen, ended, status

    with served(root, index_dir) as url:
        seen, ended, status = anyio.run(session, url)
    assert (seen["by"], seen["reason"], seen["kind"]) == (
        "vaultsearch mcp",
        "start-up update",
        "update",
    )
    assert seen["files_total"] == 40
    assert ended["state"] == "cancelled" and ended["by"] == "vaultsearch mcp"
    assert "the index keeps what it held before and what this run finished" in ended["note"]
    assert ended["files_done"] < 40
    assert status["progress"]["state"] == "cancelled"
    assert status["progress"]["note"] == ended["note"]


def test_the_page_sees_a_config_edit_as_index_check_does(tmp_path: Path, embedder: object) -> None:
    """No restart: the page's /status reads the edited file and gives the reasons a fresh
    ``index --check`` gives."""
    root = write_files(tmp_path / "vault", _notes(2, parts=2))
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    with served(root, index_dir) as url:
        before = status(url)
        (root / ".vaultsearch").mkdir()
        (root / ".vaultsearch" / "config.toml").write_text("[chunking]\nsize = 400\n")
        after = status(url)
    check = subprocess.run(
        [*CLI, "index", str(root), "--index-dir", str(index_dir), "--check", "--json"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )
    assert (before["state"], before["reasons"]) == ("up_to_date", [])
    assert after["state"] == "needs_update" and after["config"]["chunking.size"] == 400
    assert check.returncode != 0 and json.loads(check.stdout)["status"] == "rebuild"
    assert after["reasons"] == json.loads(check.stdout)["reasons"]
    assert any("chunking" in r for r in after["reasons"])
