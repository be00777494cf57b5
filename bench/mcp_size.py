"""How many bytes an agent pays for the MCP server: the `tools/list` answer, and a 5-hit
`search` answer (structured content plus its text), as they travel on the wire.

A raw JSON-RPC session over stdio (initialize, initialized, then the calls), so the
figures are the exact bytes of each answer line the server writes, with nothing a client
library adds or drops. Labels name the state measured (`--label before`), so runs on
two versions of the code sit side by side in one table.

Run: `make bench-mcp-size` (or `.venv/bin/python bench/mcp_size.py --label after`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import DOC, SHARED, prepared_vault, require, write_section

NAME = "vaultofknowledge"
QUERIES = ("how to take smart notes", "spaced repetition", "zettelkasten", "mental models")


class Session:
    """One stdio server, spoken to line by line."""

    def __init__(self, vault: Path, index_dir: Path) -> None:
        cmd = [sys.executable, "-m", "vaultsearch.cli", "mcp", str(vault)]
        self.proc = subprocess.Popen(
            [*cmd, "--index-dir", str(index_dir), "--no-watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        self.next_id = 0
        self.request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        })  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(bytes of the answer line, its result)."""
        assert self.proc.stdout is not None
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                assert "result" in answer, answer
                return len(line.rstrip(b"\n")), answer["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def measure(vault: Path, index_dir: Path) -> dict[str, Any]:
    session = Session(vault, index_dir)
    try:
        listed, tools = session.request("tools/list", {})
        schemas = sum(
            len(json.dumps(t["outputSchema"])) for t in tools["tools"] if "outputSchema" in t
        )
        searches = []
        for q in QUERIES:
            size, result = session.request(
                "tools/call", {"name": "search", "arguments": {"query": q, "top_k": 5}}
            )
            assert not result.get("isError"), result
            structured = len(json.dumps(result.get("structuredContent", {})))
            text = sum(len(c.get("text", "")) for c in result["content"])
            searches.append((size, structured, text))
    finally:
        session.close()
    n = len(searches)
    return {
        "tools": len(tools["tools"]),
        "tools_list": listed,
        "output_schemas": schemas,
        "search": round(sum(s[0] for s in searches) / n),
        "structured": round(sum(s[1] for s in searches) / n),
        "text": round(sum(s[2] for s in searches) / n),
    }


ROW = re.compile(r"^\| (\S+) \| .*\|$")


def earlier_rows(label: str) -> list[str]:
    """Rows of other labels already in the section, so before and after sit together."""
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    section = re.search(r"<!-- bench:mcp-size -->(.*?)<!-- /bench:mcp-size -->", text, re.S)
    if section is None:
        return []
    rows = [line for line in section.group(1).splitlines() if ROW.match(line)]
    return [r for r in rows if ROW.match(r).group(1) not in (label, "label", "---")]  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--label", default="now", help="the code state measured, e.g. before")
    args = parser.parse_args()
    source = require(SHARED / "vaults" / NAME)
    load = Path("/proc/loadavg").read_text().split()[0]
    work = Path(tempfile.mkdtemp(prefix="vs-bench-mcp-size-"))
    try:
        vault = prepared_vault(NAME, source, work)
        vault.close()
        m = measure(work / "vault", work / "index")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(m))
    row = (
        f"| {args.label} | {m['tools']} | {m['tools_list']:,} | {m['output_schemas']:,} "
        f"| {m['search']:,} | {m['structured']:,} | {m['text']:,} | {load} |"
    )
    body = f"""
Vault: `{NAME}`. Bytes of the JSON-RPC answer lines a raw stdio session reads: the
default `tools/list` (write tools off), and `search` with `top_k` 5 and default
arguments (mean over {len(QUERIES)} queries: {", ".join(repr(q) for q in QUERIES)}),
split into its structured content and its text content. Sizes do not depend on the
machine's load; the load average is there for the record.

`before` is the server as it was with seven tools; `after` has eleven, no output schemas,
compact argument schemas and descriptions of at most 250 characters. Each search hit now
also carries its `chunk_id` and its note's `note://` uri (about 70 bytes a hit), while
`null` fields are gone; `snippet_chars` (0 drops the snippet) and `full_text` let an
agent trade size for text per call.

| label | tools | tools/list B | of it output schemas B | 5-hit search B | structured B | text B | load |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{chr(10).join([*earlier_rows(args.label), row])}
"""
    write_section("mcp-size", "MCP answer sizes", body, "make bench-mcp-size")


if __name__ == "__main__":
    main()
