"""What the agent toolbox costs: tools/list bytes with writes off and on, a 5-hit search
and the get_search_results of two such searches in bytes, and how long a write tool
takes to answer (it answers once the write is searchable) on vaultofknowledge.

Run: `make bench-toolbox` (or `.venv/bin/python bench/toolbox.py [--writes 10]`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, percentile, prepared_vault, require, write_section
from mcp_latency import server_cmd

NAME = "vaultofknowledge"
QUERIES = ("spaced repetition", "how to take smart notes")


def size(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def measure(vault: Path, index_dir: Path, writes: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    out: dict[str, Any] = {}
    base = server_cmd(vault, index_dir)
    with open(os.devnull, "w") as quiet:
        for allow in (False, True):
            args = base[1:] + (["--allow-writes"] if allow else [])
            params = StdioServerParameters(command=base[0], args=args, env=dict(os.environ))
            async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=600) as c:
                listed = await c.list_tools()
                out["tools_writes" if allow else "tools_default"] = (
                    size(listed),
                    len(listed.tools),
                )
                if not allow:
                    continue
                ids = []
                for q in QUERIES:
                    r = await c.call_tool("search", {"query": q, "top_k": 5})
                    out.setdefault("search", []).append(size(r))
                    ids.append(r.structured_content["session_id"])
                got = await c.call_tool("get_search_results", {"session_ids": ids})
                out["merged"] = (size(got), len(got.structured_content["results"]))
                times = []
                for i in range(writes):
                    word = f"zqxbench{i}"
                    t = time.perf_counter()
                    await c.call_tool(
                        "write_note",
                        {"path": f"bench/{word}.md", "content": f"# {word}\n\n{word} text.\n"},
                    )
                    times.append(time.perf_counter() - t)
                    hit = await c.call_tool("search", {"query": word, "mode": "keyword"})
                    assert [h["path"] for h in hit.structured_content["hits"]] == [
                        f"bench/{word}.md"
                    ]
                out["write"] = times
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=10)
    args = parser.parse_args()
    source = require(SHARED / "vaults" / NAME)
    with tempfile.TemporaryDirectory() as tmp:
        vault = prepared_vault(NAME, source, Path(tmp))
        load = Path("/proc/loadavg").read_text().split()[:3]
        r = anyio.run(measure, vault.root, vault.index_dir, args.writes)
        load_after = Path("/proc/loadavg").read_text().split()[:3]
    w = r["write"]
    body = f"""
On {NAME} ({source.name}, copied and indexed first), through the SDK's stdio client;
load average {" ".join(load)} before, {" ".join(load_after)} after (2 cores shared with
other work: timings are noisy). Sizes are the JSON-RPC results as sent, without nulls.

| Measure | Value |
|---|---|
| `tools/list`, default (writes off) | {r["tools_default"][0]:,} bytes, {r["tools_default"][1]} tools |
| `tools/list`, `--allow-writes` | {r["tools_writes"][0]:,} bytes, {r["tools_writes"][1]} tools |
| 5-hit hybrid `search` answer (with its `session_id`) | {", ".join(f"{b:,}" for b in r["search"])} bytes |
| `get_search_results` over those 2 sessions | {r["merged"][0]:,} bytes, {r["merged"][1]} passages (full text) |
| `write_note` until it answers (indexed, searchable), {len(w)} writes | p50 {percentile(w, 50) * 1000:.0f} ms, p95 {percentile(w, 95) * 1000:.0f} ms, max {max(w) * 1000:.0f} ms |

Each written note was found by the next keyword `search` (checked in the run).
"""
    write_section("toolbox", "Agent toolbox: sizes and writes", body)


if __name__ == "__main__":
    main()
