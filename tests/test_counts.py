"""One truth about what the index holds: notes, chunks, sentences, links and broken links
are the same numbers on every surface (the index summary and its progress log, `status`,
MCP `index_status`, REST `/status` and the page, `links broken`), each reached the way a
user reaches it: the CLI as a subprocess, a real MCP session, a real `vaultsearch serve`
over HTTP and, where Chromium is installed, the page in a browser."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.browser import chromium, missing, served
from tests.conftest import HANG_GUARD, write_files
from tests.test_mcp_stdio import data, server_args

FILES = {
    "Home.md": "# Home\n\nSee [[Garden]], [[Kitchen]] and [[Nowhere]].\n",
    "Garden.md": (
        "# Garden\n\nThe beds lead [[Nowhere]], and [[Nowhere]] again.\n\n"
        "## Pictures\n\n![[Missing picture]] and back [[Home]].\n"
    ),
    "Kitchen.md": "# Kitchen\n\nBread rises overnight. Soup simmers all day.\n",
    "Self.md": "# Self\n\nThis note names itself: [[Self]].\n",
}
"""8 written links: 4 name a note (one of them its own), 4 name none (Nowhere three
times from two notes, an embed of a missing picture): 3 note -> target pairs."""
KEYS = ("notes", "chunks", "sentences", "links", "resolved_links", "broken_links")
PAGE_KEYS = (*KEYS, "notes_awaiting_sentences")
"""The page also shows a first build's second stage still to come."""
LINE = re.compile(
    r"index: (\d+) notes, (\d+) chunks, (\d+) sentences, (\d+) links "
    r"\((\d+) resolved, (\d+) broken\)"
)


def from_line(text: str) -> dict[str, int]:
    """The counts of the one `index: ...` line in ``text``."""
    found = LINE.findall(text)
    assert len(found) == 1, text
    return dict(zip(KEYS, map(int, found[0]), strict=True))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "vaultsearch.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def mcp_status(root: Path, index_dir: Path) -> tuple[dict[str, Any], str]:
    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(root, index_dir, "--no-watch"),
        env=dict(os.environ),
    )

    async def session() -> tuple[dict[str, Any], str]:
        async with Client(params, read_timeout_seconds=300) as c:
            result = await c.call_tool("index_status", {})
            return data(result), result.content[0].text

    return anyio.run(session)


def test_every_surface_counts_the_same(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", FILES)
    index_dir = tmp_path / "index"
    where = [str(root), "--index-dir", str(index_dir)]
    surfaces: dict[str, dict[str, int]] = {}

    built = cli("index", *where)  # stderr is a pipe: the progress log, not the bar
    surfaces["progress log"] = from_line(built.stderr)
    surfaces["index summary"] = from_line(built.stdout)
    again = json.loads(cli("index", *where, "--json").stdout)
    surfaces["index summary --json"] = {k: again["counts"][k] for k in KEYS}

    surfaces["status"] = from_line(cli("status", *where).stdout)
    status = json.loads(cli("status", *where, "--json").stdout)
    surfaces["status --json"] = {k: status[k] for k in KEYS}

    broken = cli("links", "broken", "--vault", *where)
    assert broken.stdout.splitlines()[0] == "4 broken links in 3 note -> target pairs:"
    listed = json.loads(cli("links", "broken", "--vault", *where, "--json").stdout)
    assert sum(x["count"] for x in listed["items"]) == listed["broken_links"]

    structured, text = mcp_status(root, index_dir)
    surfaces["MCP index_status"] = {k: structured[k] for k in KEYS}
    surfaces["MCP index_status text"] = from_line(text)

    with served(root, index_dir) as url:
        rest = httpx.get(url.rstrip("/") + "/status", timeout=HANG_GUARD).json()
    surfaces["REST /status"] = {k: rest[k] for k in KEYS}

    expected = surfaces["status --json"]
    assert expected["notes"] == len(FILES)
    assert (expected["links"], expected["resolved_links"], expected["broken_links"]) == (8, 4, 4)
    assert listed["broken_links"] == 4
    assert expected["chunks"] >= len(FILES) and expected["sentences"] >= expected["chunks"]
    assert {name: c for name, c in surfaces.items() if c != expected} == {}


@pytest.mark.skipif(missing() is not None, reason=str(missing()))
def test_the_page_shows_the_counts_status_gives(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", FILES)
    index_dir = tmp_path / "index"
    status = json.loads(cli("index", str(root), "--index-dir", str(index_dir), "--json").stdout)
    from selenium.webdriver.support.ui import WebDriverWait

    with served(root, index_dir) as url, chromium() as driver:
        driver.get(url)

        def shown(d: Any) -> dict[str, str]:
            return {k: d.find_element("id", "count-" + k.replace("_", "-")).text for k in PAGE_KEYS}

        WebDriverWait(driver, 300, poll_frequency=0.1).until(
            lambda d: shown(d)["notes"] != "–", message="the page shows the counts"
        )
        assert shown(driver) == {k: str(status["counts"][k]) for k in PAGE_KEYS}
        assert shown(driver)["broken_links"] == "4"
