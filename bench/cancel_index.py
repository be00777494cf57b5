"""cancel_index during a first build of vaultofknowledge, over a real MCP session.

`vaultsearch mcp` starts on a private copy of the vault with no index and an empty
embedding cache, so the first build needs the model for every chunk. Once it has
committed its first batch of files, this script calls `cancel_index` and polls
`index_status` until the run has stopped: the time from the call to the stop is the
figure. Then `vaultsearch index` (the next run, in this process) resumes, and the
chunks it embeds are counted: if nothing was embedded twice, the two runs together
embedded exactly the chunks of the finished index.

Run: `make bench-cancel` (or `.venv/bin/python bench/cancel_index.py [--after FILES]`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, require, write_section
from vaultsearch import Vault
from vaultsearch.indexing.runner import LOG_NAME, progress_log
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.embedcache import CACHE_ENV

POLL = 0.02


def status(result: Any) -> dict[str, Any]:
    if result.is_error:
        sys.exit(result.content[0].text)
    data: dict[str, Any] = result.structured_content
    return data


async def cancel_during_build(vault: Path, index: Path, after: int) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(vault), "--index-dir", str(index), "--no-watch"],
        env=dict(os.environ),
    )
    async with Client(params, read_timeout_seconds=600) as c:
        t_start = time.perf_counter()
        while True:
            s = status(await c.call_tool("index_status", {}))
            p = s["progress"]
            if p["state"] == "running" and p["files_done"] >= after:
                break
            if p["state"] in ("done", "failed"):
                sys.exit(f"the build ended before the cancel: {p}")
            await anyio.sleep(POLL)
        building = time.perf_counter() - t_start
        t_call = time.perf_counter()
        answer = status(await c.call_tool("cancel_index", {}))
        t_ack = time.perf_counter()
        assert answer["cancelling"], answer
        while True:
            s = status(await c.call_tool("index_status", {}))
            if s["progress"]["state"] == "cancelled":
                break
            await anyio.sleep(POLL)
        t_stop = time.perf_counter()
        return {
            "building_s": building,
            "at_cancel": answer["progress"],
            "ack_s": t_ack - t_call,
            "stop_s": t_stop - t_call,
            "stopped": s,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--after", type=int, default=300, help="cancel once this many files are done"
    )
    args = parser.parse_args()
    source = require(SHARED / "vaults" / "vaultofknowledge")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="vs-cancel-") as tmp:
        work = Path(tmp)
        os.environ[CACHE_ENV] = str(work / "embedding-cache")  # nothing embedded before
        vault_dir, index_dir = work / "vault", work / "index"
        shutil.copytree(source, vault_dir)
        measured = anyio.run(cancel_during_build, vault_dir, index_dir, args.after)
        stopped = measured["stopped"]
        first = stopped["progress"]
        events = {r["event"]: r["time"] for r in progress_log(index_dir / LOG_NAME)}
        server_s = (
            datetime.fromisoformat(events["cancelled"])
            - datetime.fromisoformat(events["cancelling"])
        ).total_seconds()
        print(f"cancelled: {first}", flush=True)

        t0 = time.perf_counter()
        with Vault.open(vault_dir, index_dir=index_dir) as vault:
            resumed = vault.index()
            final = vault.status()
            catalog = Catalog(vault.layout.live.catalog, readonly=True)
            try:  # chunks with the same text share one embedding
                row = catalog.db.execute("SELECT COUNT(DISTINCT embed_hash) FROM chunks")
                distinct = int(row.fetchone()[0])
            finally:
                catalog.close()
        resume_s = time.perf_counter() - t0
    load_after = os.getloadavg()

    total_chunks = final["chunks"]
    twice = first["chunks_done"] + resumed.chunks_embedded - distinct
    at = measured["at_cancel"]
    body = f"""
Vault: `vaultofknowledge` ({stopped["files"]["total"]} files), a private copy with no index and an
empty embedding cache; `vaultsearch mcp --no-watch` over stdio, driven by the SDK's client.
Load average (1, 5, 15 min) {load_before[0]:.2f}, {load_before[1]:.2f}, {load_before[2]:.2f} before,
{load_after[0]:.2f}, {load_after[1]:.2f}, {load_after[2]:.2f} after: the machine was shared, so the
build itself ran slower than on an idle one.

| step | figure |
| --- | ---: |
| first build until the cancel | {measured["building_s"]:.1f} s, {at["files_done"]} of {at["files_total"]} files, {at["chunks_done"]} chunks embedded |
| `cancel_index` answered | {measured["ack_s"] * 1000:.0f} ms |
| in the server: cancel asked to run ended (index published), from `progress.jsonl` | **{server_s:.2f} s** |
| for the client: `cancel_index` called to `index_status` showing `cancelled` | **{measured["stop_s"]:.2f} s** |
| committed by the cancelled build | {stopped.get("notes", 0)} notes searchable, {first["chunks_done"]} chunks embedded, {stopped["pending_changes"]} files pending |
| the next run (`vaultsearch index`) | {resume_s:.1f} s: {resumed.added} added, {resumed.chunks_embedded} chunks embedded |
| finished index | {final["notes"]} notes, {total_chunks} chunks, {distinct} distinct chunk texts |
| chunks embedded twice | {twice} |

The stop waits for the model call under way (at most `embedding.batch_size` = 16 chunks)
and then commits: the chunks embedded so far, and the catalog and derived indexes of the
batches of 256 files already finished, published as the live generation. The next run
embeds only what no run embedded: the cancelled build's {first["chunks_done"]} embeddings plus the
resumed run's {resumed.chunks_embedded} make the {distinct} distinct chunk texts of the index
(chunks with the same text share one embedding), {twice} more.
"""
    write_section("cancel", "Cancelling a first build", body)


if __name__ == "__main__":
    main()
