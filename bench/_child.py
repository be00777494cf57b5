"""A benchmark's child process, spoken to one JSON line at a time.

The parent writes a request line and reads one JSON answer line, so each role (a
writer, a reader, a build) runs in a process of its own — its own memory and imports,
as a user's `watch` and search processes are — while the parent keeps the clock.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any


class LineChild:
    def __init__(
        self, cmd: list[str], env: dict[str, str] | None = None, wait: float = 600
    ) -> None:
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env
        )
        self.wait = wait

    def ask(self, request: str | dict[str, Any] | None = None) -> dict[str, Any]:
        """Send ``request`` (a dict goes as JSON) unless None, and read the child's answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if request is not None:
            line = request if isinstance(request, str) else json.dumps(request)
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the child stopped (exit code {self.proc.wait()})")
        data: dict[str, Any] = json.loads(reply)
        return data

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(self.wait)
