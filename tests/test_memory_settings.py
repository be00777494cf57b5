"""The long-lived commands' allocator settings (_memory.py), in fresh processes:
a large block freed and allocated again must not stay resident, which is what grew an
MCP server with the watcher by megabytes per edited note."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import HANG_GUARD

PROBE = """
import json, sys
from vaultsearch._memory import tune_allocator

applied = tune_allocator() if sys.argv[1] == "tuned" else False


def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


base = rss_mb()
for _ in range(3):  # as an index update loads, rewrites and frees its FAISS index
    block = b"x" * (16 << 20)
    del block
print(json.dumps({"applied": applied, "kept_mb": rss_mb() - base}))
"""


def run(mode: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, float] = json.loads(done.stdout)
    return out


def on_glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


def test_freed_large_blocks_leave_the_process() -> None:
    tuned = run("tuned")
    assert tuned["applied"] is on_glibc()
    if not on_glibc():
        pytest.skip("the settings are glibc's; elsewhere tune_allocator does nothing")
    assert tuned["kept_mb"] < 4, tuned
    plain = run("plain")  # glibc's adaptive threshold: the same loop keeps the block
    assert plain["kept_mb"] > tuned["kept_mb"] + 8, (plain, tuned)
