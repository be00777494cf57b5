"""Where the memory of an idle MCP server goes: `vaultsearch mcp` (stdio) on the 2,727-note
vault after one hybrid search, as `bench/embedding_runtime.py` measures its RSS (the same
query, the same `server_rss`), with two breakdowns:

- the server's resident pages by mapping (`/proc/PID/smaps`): anonymous memory (Python
  objects, arrays, arenas), the model runtime's libraries, the model files, the index
  stack's libraries, the MCP SDK's native parts, the interpreter, the index files;
- the same steps in one fresh process, RSS after each: the interpreter, importing the
  MCP SDK, the index stack (numpy, FAISS, Tantivy), the server's own modules, opening
  the index (a keyword search), loading the model, a hybrid search.

Labels name the code state measured (`--label before`), so runs of two versions sit side
by side: rows of other labels already in the section are kept.

Run: `make bench-mcp-memory` (or `.venv/bin/python bench/mcp_memory.py --label after`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, DOC, SHARED, require, write_section
from embedding_runtime import QUERY, server_rss  # light: the stages child imports it too

if TYPE_CHECKING:
    from mcp import Client

T = TypeVar("T")

NAME = "vaultofknowledge"
WORK = CACHE / "mcp-memory"
IDLE_SECONDS = 3
EDITS = 10
EDITED = "rss-bench-edited-note.md"
"""Written, rewritten and finally deleted in the vault copy by the watcher run."""
GROUPS = {
    "model files": (".blob", ".onnx", ".npy", "/model/"),
    "model runtime": ("openvino", "onnxruntime", "tokenizers"),
    "index stack": ("faiss", "numpy", "tantivy", "scipy", "libgomp", "libopenblas"),
    "MCP SDK natives": ("pydantic_core", "cryptography", "libcrypto", "libssl", "_cffi"),
    "index files": ("/generations/", "catalog", ".sqlite"),
    "interpreter": ("libpython", "/bin/python"),
}
"""Mapped files by where they come from (first match wins); the rest is "other files"."""
STAGES = (
    "interpreter",
    "MCP SDK",
    "index stack",
    "server modules",
    "index opened",
    "model loaded",
    "hybrid search",
)


def mapping_groups(pid: int) -> dict[str, float]:
    """Resident MB of a process per kind of mapping."""
    sizes: dict[str, float] = {}
    group = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if head and re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", head[0]):
            name = head[5] if len(head) > 5 else ""
            group = classify(name)
        elif head and head[0] == "Rss:":
            sizes[group] = sizes.get(group, 0.0) + int(head[1]) / 1024
    return sizes


def classify(name: str) -> str:
    if not name or (name.startswith("[") and name not in ("[vdso]", "[vvar]")):
        return "anonymous"  # [heap], [stack] and unnamed maps
    for group, marks in GROUPS.items():
        if any(mark in name for mark in marks):
            return group
    return "other files"


def after_search(
    vault: Path,
    index_dir: Path,
    then: Callable[[Client], Awaitable[T]],
    watch: bool = False,
) -> T:
    """``vaultsearch mcp`` (the watcher off unless ``watch``), one hybrid search through
    the SDK's client, ``IDLE_SECONDS`` idle, then ``then`` with the session still open."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp_latency import server_cmd

    cmd = [a for a in server_cmd(vault, index_dir) if not watch or a != "--no-watch"]

    async def go() -> T:
        # the SDK passes the server only a few variables: PYTHONPATH must reach it too
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=300) as c:
                r = await c.call_tool("search", {"query": QUERY})
                assert not r.is_error, r.content
                await anyio.sleep(IDLE_SECONDS)
                await until_quiet(server_pid(str(vault)))
                return await then(c)

    return anyio.run(go)


async def until_quiet(pid: int, window: float = 2.0, most: float = 600.0) -> None:
    """Until the server's CPU time stands still for ``window`` seconds: its start-up
    work (the first index update, the model load) may outlast the first search by tens
    of seconds at a million chunks, and an idle server is one that has finished it."""
    import anyio

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    waited, last = 0.0, cpu()
    while waited < most:
        await anyio.sleep(window)
        waited += window
        now = cpu()
        if now - last < 0.05 * window:
            return
        last = now


def idle_server(vault: Path, index_dir: Path) -> dict[str, object]:
    """The headline as embedding_runtime.py reads it, and the breakdown."""

    async def read(_: Client) -> dict[str, object]:
        rss, private = server_rss(str(vault))
        pid = server_pid(str(vault))
        return {
            "rss": rss,
            "private": private,
            "anonymous": smaps_rollup(pid)["Anonymous"],
            "threads": len(os.listdir(f"/proc/{pid}/task")),
            "groups": mapping_groups(pid),
        }

    return after_search(vault, index_dir, read)


def edited_server(vault: Path, index_dir: Path) -> list[float]:
    """With the watcher on (the default): after the search, a note written and
    rewritten ``EDITS`` times, each time until a search finds its new word; RSS (MB)
    after the search and after each edit. The note is deleted at the end."""
    import anyio

    note = vault / EDITED

    async def until_found(c: Client, word: str, present: bool) -> None:
        for _ in range(600):
            r = await c.call_tool("search", {"query": word, "mode": "keyword"})
            hits = (r.structured_content or {}).get("hits") or []
            if any(h.get("path") == EDITED for h in hits) == present:
                return
            await anyio.sleep(0.2)
        raise RuntimeError(f"the watcher never indexed the edit {word!r}")

    async def edit(c: Client) -> list[float]:
        rss = [server_rss(str(vault))[0]]
        for i in range(EDITS):
            word = f"zqxedit{i}marker"
            note.write_text(f"# Edited note\n\nA paragraph with {word} in it.\n")
            await until_found(c, word, present=True)
            rss.append(server_rss(str(vault))[0])
        note.unlink()
        await until_found(c, f"zqxedit{EDITS - 1}marker", present=False)
        return rss

    note.unlink(missing_ok=True)
    return after_search(vault, index_dir, edit, watch=True)


def server_pid(vault: str) -> int:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"mcp" in cmdline and vault.encode() in cmdline:
                return int(proc.name)
    raise RuntimeError("the MCP server process was not found")


def smaps_rollup(pid: int | str = "self") -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        fields[key] = int(value.split()[0]) / 1024
    return fields


def child_stages(vault: str, index_dir: str) -> None:
    """In a fresh process: RSS after each step of what the server does."""
    rss = {"interpreter": smaps_rollup()["Rss"]}
    import mcp.server.mcpserver  # noqa: F401

    rss["MCP SDK"] = smaps_rollup()["Rss"]
    import faiss  # noqa: F401
    import numpy  # noqa: F401
    import tantivy  # noqa: F401

    rss["index stack"] = smaps_rollup()["Rss"]
    import vaultsearch.cli
    import vaultsearch.server.mcp.run  # noqa: F401
    from vaultsearch.app.vault import Vault

    rss["server modules"] = smaps_rollup()["Rss"]
    v = Vault.open(vault, index_dir=index_dir)
    v.search(QUERY, mode="keyword")
    rss["index opened"] = smaps_rollup()["Rss"]
    v.embedder.embed_query("warm up")
    rss["model loaded"] = smaps_rollup()["Rss"]
    v.search(QUERY)
    rss["hybrid search"] = smaps_rollup()["Rss"]
    print(json.dumps({"rss": rss, "modules": len(sys.modules)}))


def stages(vault: Path, index_dir: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "--child-stages", str(vault), str(index_dir)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the stages child failed:\n{done.stderr[-3000:]}")
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def prepared() -> tuple[Path, Path]:
    """A copy of the vault with a current index (the embedding cache makes it quick)."""
    import shutil

    source = require(SHARED / "vaults" / NAME)
    vault, index_dir = WORK / "vault", WORK / "index"
    if not vault.is_dir():
        shutil.copytree(source, vault)
    argv = [sys.executable, "-m", "vaultsearch.cli", "index", str(vault)]
    subprocess.run([*argv, "--index-dir", str(index_dir)], check=True, capture_output=True)
    return vault, index_dir


def earlier_rows(label: str, table: int) -> list[str]:
    """Rows of other labels in the section's n-th table, so before and after sit together."""
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    section = re.search(r"<!-- bench:mcp-memory -->(.*?)<!-- /bench:mcp-memory -->", text, re.S)
    if section is None:
        return []
    tables = re.findall(r"((?:^\|.*\|\n)+)", section.group(1), re.M)
    if len(tables) <= table:
        return []
    rows = tables[table].splitlines()[2:]
    return [r for r in rows if r.split("|")[1].strip() != label]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--label", default="now", help="the code state measured, e.g. before")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    vault, index_dir = prepared()
    before = load()
    server = idle_server(vault, index_dir)
    steps = stages(vault, index_dir)
    after = load()
    edits_before = load()
    edited = edited_server(vault, index_dir)
    edits_after = load()
    print(json.dumps({"server": server, "stages": steps, "edited": edited}, indent=1))

    label = args.label
    groups: dict[str, float] = server["groups"]  # type: ignore[assignment]
    names = ["anonymous", *GROUPS, "other files"]
    rss: dict[str, float] = steps["rss"]  # type: ignore[assignment]
    deltas = [rss[s] - rss[p] for p, s in itertools.pairwise(STAGES)]
    head_row = (
        f"| {label} | **{server['rss']:.0f}** | {server['private']:.0f} "
        f"| {server['anonymous']:.0f} | {server['threads']} | {before} → {after} |"
    )
    group_row = f"| {label} | " + " | ".join(f"{groups.get(n, 0):.0f}" for n in names) + " |"
    edit_row = (
        f"| {label} | {edited[0]:.0f} | "
        + " | ".join(f"{x:.0f}" for x in edited[1:EDITS:3])
        + f" | **{edited[-1]:.0f}** | {edits_before} → {edits_after} |"
    )
    stage_row = (
        f"| {label} | {rss['interpreter']:.0f} | "
        + " | ".join(f"+{d:.0f}" for d in deltas)
        + f" | {rss['hybrid search']:.0f} | {steps['modules']} |"
    )
    body = f"""
`vaultsearch mcp` over stdio on `{NAME}` (2,727 notes, an index already current, no
watcher), one hybrid search through the SDK's client, then {IDLE_SECONDS} s idle; RSS as
`bench/embedding_runtime.py` reads it (goal of issue 10: ≤ 250 MB). Private is RSS less
the pages other processes map too (shared libraries), so it depends on what else runs.

| label | RSS MB | private MB | anonymous MB | threads | load average before → after |
| --- | ---: | ---: | ---: | ---: | --- |
{chr(10).join([*earlier_rows(label, 0), head_row])}

**The server's resident MB by mapping** (`/proc/PID/smaps`; anonymous: Python objects,
arrays and malloc arenas; model runtime: OpenVINO or ONNX Runtime and the tokenizer
libraries; model files: the compiled model and the token table; index stack: numpy,
FAISS, Tantivy; MCP SDK natives: pydantic-core and cryptography, which the SDK imports):

| label | {" | ".join(names)} |
| --- |{" ---: |" * len(names)}
{chr(10).join([*earlier_rows(label, 1), group_row])}

**The same steps in one fresh process** (RSS MB after the interpreter starts, then what
each step adds; the server also runs its stdio pipe and the index writer's first pass,
so its total differs by a few MB):

| label | interpreter | {" | ".join(f"+ {s}" for s in STAGES[1:])} | total | modules |
| --- |{" ---: |" * (len(STAGES) + 2)}
{chr(10).join([*earlier_rows(label, 2), stage_row])}

**With the watcher on, while notes change** (the default `vaultsearch mcp`): after one
hybrid search, one note written and then rewritten {EDITS} times, each time until a
keyword search finds its new word (an index update embedding one chunk); RSS MB:

| label | after the search | {" | ".join(f"after edit {i}" for i in range(1, EDITS, 3))} | after edit {EDITS} | load average before → after |
| --- |{" ---: |" * (len(range(1, EDITS, 3)) + 2)} --- |
{chr(10).join([*earlier_rows(label, 3), edit_row])}
"""
    write_section("mcp-memory", "Memory of an idle MCP server", body)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-stages":
        child_stages(*sys.argv[2:4])
    else:
        main()
