"""A stdio MCP session written line by line: a server's answers to what a client
library would never send, for the suite and bench/ alike."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import HANG_GUARD


class RawSession:
    """``vaultsearch mcp`` over stdio, initialised; ``close`` returns its stderr."""

    def __init__(
        self,
        root: Path,
        index_dir: Path,
        *extra: str,
        timeout: float = 300,
        memory_mb: int | None = None,
    ) -> None:
        """``memory_mb`` caps the server's address space: a regression then fails a
        case instead of taking the machine's memory."""
        cmd = [sys.executable, "-m", "vaultsearch.cli", "mcp", str(root), "--index-dir"]

        def cap() -> None:
            if memory_mb is not None:
                import resource

                limit = memory_mb << 20
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        self.proc = subprocess.Popen(
            [*cmd, str(index_dir), "--no-watch", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=cap,
        )
        self.timeout = timeout
        """A hang guard far above any answer, not a bound on one."""
        self._id = 0
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        assert "result" in self.request("initialize", init)
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._id += 1
        line: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            line["params"] = params
        self._write(line)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        assert ready, f"no answer to {method} within {self.timeout} s"
        return dict(json.loads(self.proc.stdout.readline()))

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(whether the tool answered an error, the text it gave)."""
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = reply["result"]
        return bool(result.get("isError")), str(result["content"][0]["text"])

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(HANG_GUARD)
        return self.proc.stderr.read().decode("utf-8", "replace")
