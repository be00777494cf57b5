"""Index control over MCP, through the SDK's client and a real server process: progress
notifications, cancel_index during a first build, reindex of one path, reload_config."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import HANG_GUARD, write_files
from tests.test_mcp_stdio import data, server_args
from tests.test_runner import _HOLD_LOCK, _notes


def _params(root: Path, index_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=server_args(root, index_dir, "--no-watch"),
        env=dict(os.environ),
    )


async def _status_until(c: Client, done: Any, timeout: float = HANG_GUARD) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = data(await c.call_tool("index_status", {}))
        if done(status):
            return status
        await anyio.sleep(0.05)
    raise AssertionError(f"index_status never got there; last: {status}")


def test_cancel_stops_a_first_build_and_reindex_resumes_with_progress(
    tmp_path: Path, embedder: object
) -> None:
    root = write_files(tmp_path / "vault", _notes(40, parts=8))
    index_dir = tmp_path / "index"

    async def session() -> None:
        async with Client(_params(root, index_dir), read_timeout_seconds=300) as c:
            running = await _status_until(
                c, lambda s: s["progress"]["state"] == "running" and s["progress"]["chunks_done"]
            )
            assert running["progress"]["kind"] == "update"
            assert running["progress"]["files_total"] == 40
            cancelled = data(await c.call_tool("cancel_index", {}))
            assert cancelled["cancelling"]
            stopped = await _status_until(c, lambda s: s["progress"]["state"] == "cancelled")
            first_chunks = stopped["progress"]["chunks_done"]
            assert 0 < first_chunks < stopped["progress"]["chunks_total"]
            assert stopped["pending_changes"] > 0 and stopped["files"]["total"] == 40
            assert not data(await c.call_tool("cancel_index", {}))["cancelling"]

            reports: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, msg: str | None) -> None:
                reports.append((progress, total, msg))

            resumed = await c.call_tool("reindex", {}, progress_callback=on_progress)
            summary = data(resumed)["summary"]
            assert summary["added"] == 40 and not summary["cancelled"]
            final = data(await c.call_tool("index_status", {}))
            assert final["pending_changes"] == 0 and final["notes"] == 40
            # what the cancelled run embedded was kept: only the rest met the model (a
            # first build embeds chunks first, so what it had done were chunks), and the
            # sentence vectors were added in the background before reindex reported idle
            assert summary["chunks_embedded"] == final["chunks"] - first_chunks
            assert summary["sentences_embedded"] == 0
            assert final["notes_awaiting_sentences"] == 0 and final["sentences"] > 0

        assert reports, "no progress notification arrived"
        values = [p for p, _, _ in reports]
        assert values == sorted(values) and values[-1] == 100.0
        assert {t for _, t, _ in reports} == {100.0}
        assert any(m and "files" in m for _, _, m in reports)

    anyio.run(session)


def test_reindex_one_path_and_reload_config(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", _notes(3, parts=2))
    index_dir = tmp_path / "index"
    config = root / ".vaultsearch" / "config.toml"

    async def session() -> None:
        async with Client(_params(root, index_dir), read_timeout_seconds=HANG_GUARD) as c:
            await _status_until(c, lambda s: s["progress"]["state"] == "done")
            (root / "folder" / "n0.md").write_text("# Note 0\n\nHerons fish in the reeds.\n")
            (root / "folder" / "n1.md").write_text("# Note 1\n\nHerons nest in trees.\n")
            one = await c.call_tool("reindex", {"path": "folder/n0.md"}, progress_callback=_noop)
            assert data(one)["summary"]["updated"] == 1  # only the path asked for
            status = data(await c.call_tool("index_status", {}))
            assert status["pending_changes"] == 1
            outside = await c.call_tool("reindex", {"path": "../elsewhere"})
            assert outside.is_error and "outside the vault" in outside.content[0].text

            explain = {"query": "herons", "explain": True, "mode": "hybrid"}
            before = data(await c.call_tool("search", explain))["hits"][0]["explain"]
            assert before["method"] == "convex"
            config.parent.mkdir(exist_ok=True)
            config.write_text('[search]\nfusion = "rrf"\n\n[chunking]\nsize = 800\n')
            reloaded = data(await c.call_tool("reload_config", {}))
            assert reloaded["applied"] == ["chunking.size", "search.fusion"]
            assert reloaded["needs_rebuild"] == ["chunking.size"]
            assert "the next update rebuilds it" in reloaded["message"]
            after = data(await c.call_tool("search", explain))["hits"][0]["explain"]
            assert after["method"] == "rrf"  # applied at once

            config.write_text('[search]\nfusion = "rrf"\nfuson = 3\n')
            refused = await c.call_tool("reload_config", {})
            assert refused.is_error
            text = refused.content[0].text
            assert "Kept the running config" in text and "search.fuson" in text
            still = data(await c.call_tool("search", explain))["hits"][0]["explain"]
            assert still["method"] == "rrf"

            config.write_text('[embedding]\nbatch_size = 4\n[search]\nfusion = "rrf"\n')
            restart = data(await c.call_tool("reload_config", {}))
            assert restart["needs_restart"] == ["embedding.batch_size"]
            assert restart["applied"] == ["chunking.size"]  # back to its default

    anyio.run(session)


async def _noop(progress: float, total: float | None, message: str | None) -> None:
    pass


def test_reindex_with_progress_does_not_wait_for_another_processes_writer(
    tmp_path: Path, embedder: object
) -> None:
    root = write_files(tmp_path / "vault", _notes(2, parts=2))
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(index_dir / "writer.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"

        async def session() -> None:
            async with Client(_params(root, index_dir), read_timeout_seconds=HANG_GUARD) as c:
                result = data(await c.call_tool("reindex", {}, progress_callback=_noop))
                assert result == {"full": False, "started": False, "role": "reader"}
                cancel = data(await c.call_tool("cancel_index", {}))
                assert cancel == {"cancelling": False}

        anyio.run(session)
    finally:
        holder.kill()
        holder.wait()
