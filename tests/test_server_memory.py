"""The MCP server's allocator setting (server/memory.py), in a fresh process as the
server applies it: accepted by glibc, a no-op reported as such elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys


def test_arena_limit_is_applied_on_glibc() -> None:
    code = "from vaultsearch.server.memory import limit_arenas; print(limit_arenas())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        glibc = False
    assert done.stdout.strip() == str(glibc)
