"""How fast the MCP server answers: process start to the `initialize` answer on a vault
with no index yet, and warm `search` round trips through the protocol on an indexed one
(with the same queries through `Vault.search` in-process, for the protocol's share).

Run: `make bench-mcp` (or `.venv/bin/python bench/mcp_latency.py [--starts 5] [--queries 120]`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, percentile, prepared_vault, require, write_section
from vaultsearch import Vault

NAME = "vaultofknowledge"
MODES = ("hybrid", "keyword")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def server_cmd(vault: Path, index_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "vaultsearch.cli",
        "mcp",
        str(vault),
        "--index-dir",
        str(index_dir),
        "--no-watch",
    ]


def time_handshake(vault: Path, index_dir: Path) -> tuple[float, float]:
    """Seconds from spawning the server to its `initialize` answer, and to its first
    `tools/list` answer (the SDK loaded: when a client can really start working)."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        server_cmd(vault, index_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INIT).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    initialized = time.perf_counter() - t
    assert answer.get("id") == 1 and "result" in answer, answer
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    listed = time.perf_counter() - t
    assert answer.get("id") == 2 and answer["result"]["tools"], answer
    proc.stdin.close()  # the indexing it began stops with it
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return initialized, listed


def time_imports() -> float:
    """Seconds from spawning Python to the server's modules imported (exit not counted)."""
    code = "import time, vaultsearch.cli, vaultsearch.server.mcp.run; print(time.time())"
    t = time.time()
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(done.stdout) - t


def startup(source: Path, starts: int) -> tuple[list[float], list[float], list[float]]:
    """Start to `initialize`, start to `tools/list`, and (interleaved, so under the same
    load) Python plus imports alone."""
    work = Path(tempfile.mkdtemp(prefix="vs-bench-mcp-start-"))
    try:
        vault = work / "vault"
        shutil.copytree(source, vault)
        times, listed, imports = [], [], []
        for i in range(starts):
            index_dir = work / f"index{i}"  # a fresh, empty index for every start
            initialized, tools = time_handshake(vault, index_dir)
            times.append(initialized)
            listed.append(tools)
            shutil.rmtree(index_dir, ignore_errors=True)
            imports.append(time_imports())
            print(
                f"start {i + 1}: initialize answered after {times[-1]:.3f} s,"
                f" tools/list after {listed[-1]:.3f} s",
                flush=True,
            )
        return times, listed, imports
    finally:
        shutil.rmtree(work, ignore_errors=True)


def wait_for_cache(minutes: float = 15) -> None:
    """Another run may be building the cached catalog: use it rather than build twice."""
    cached = CACHE / NAME / "catalog.sqlite"
    deadline = time.monotonic() + minutes * 60
    while not cached.is_file() and time.monotonic() < deadline:
        print(f"waiting for {cached} (another run may be building it)", flush=True)
        time.sleep(30)
    size = -1
    while cached.is_file() and cached.stat().st_size != size:  # still being copied in
        size = cached.stat().st_size
        time.sleep(2)


def pick_queries(vault: Vault, n: int) -> list[str]:
    """Note titles, spread evenly over the sorted paths: real words of this vault."""
    notes = sorted(vault.orchestrator.snapshot().notes.values(), key=lambda m: m.path)
    step = max(1, len(notes) // n)
    return [m.title for m in notes[::step] if m.title.strip()][:n]


async def latencies(vault: Vault, queries: list[str]) -> dict[str, tuple[list[float], list[float]]]:
    """(through MCP, in-process) milliseconds per query and mode. The two calls of one
    query run back to back, so both see the same machine state."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = server_cmd(vault.root, vault.index_dir)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    out: dict[str, tuple[list[float], list[float]]] = {}
    with open(os.devnull, "w") as quiet:
        async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=300) as client:
            for q in queries[:5]:  # loads the model in the server and here
                await client.call_tool("search", {"query": q})
                vault.search(q)
            while ((await client.call_tool("index_status", {})).structured_content or {}).get(
                "indexing"
            ):
                await anyio.sleep(0.5)
            for mode in MODES:
                remote, local = [], []
                for q in queries:
                    t = time.perf_counter()
                    r = await client.call_tool("search", {"query": q, "mode": mode, "top_k": 10})
                    remote.append((time.perf_counter() - t) * 1000)
                    assert not r.is_error, r.content
                    t = time.perf_counter()
                    vault.search(q, top_k=10, mode=mode)
                    local.append((time.perf_counter() - t) * 1000)
                out[mode] = (remote, local)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--queries", type=int, default=120)
    args = parser.parse_args()
    source = require(SHARED / "vaults" / NAME)
    files = sum(1 for p in source.rglob("*.md"))

    starts, listed, imports = startup(source, args.starts)

    wait_for_cache()
    work = Path(tempfile.mkdtemp(prefix="vs-bench-mcp-"))
    try:
        vault = prepared_vault(NAME, source, work)
        queries = pick_queries(vault, args.queries)
        timed = anyio.run(latencies, vault, queries)
        chunks = vault.status()["chunks"]
        vault.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = "\n".join(
        f"| {mode} | {len(remote)} | {percentile(remote, 50):.1f} | {percentile(remote, 95):.1f} "
        f"| {percentile(local, 50):.1f} | {percentile(local, 95):.1f} |"
        for mode, (remote, local) in timed.items()
    )
    body = f"""
Vault: `{NAME}` ({files} Markdown files, {chunks} chunks once indexed).

**Start to `initialize` answer** over stdio, on a copy with no index yet (the index build,
the watcher and the model load start only after the first answer): median
**{statistics.median(starts):.2f} s** of {len(starts)} starts (min {min(starts):.2f} s,
max {max(starts):.2f} s; each start on a fresh, empty index folder): the answer is written
before the MCP SDK and the server's modules are imported (`server/handshake.py`). The first
`tools/list` answer, when a client can start working, came after a median
**{statistics.median(listed):.2f} s** (min {min(listed):.2f} s, max {max(listed):.2f} s). For comparison, starting Python
and importing the server's modules alone took {statistics.median(imports):.2f} s (median, measured
between the starts).

**Warm `search` round trips** through the protocol (the SDK's stdio client, one call at a
time, top_k 10, note titles as queries, after the model is loaded), beside the same queries
through `Vault.search` in the benchmark's own process, each pair back to back:

| mode | queries | MCP p50 ms | MCP p95 ms | in-process p50 ms | in-process p95 ms |
| --- | ---: | ---: | ---: | ---: | ---: |
{rows}
"""
    write_section("mcp", "MCP server", body)


if __name__ == "__main__":
    main()
