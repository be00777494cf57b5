"""The MCP server's start order: the reader's snapshot is opened before the start-up
update runs (``Background._open_then_index``). Built while the update scans the vault,
the snapshot's many small objects interleave with the update's short-lived ones and the
allocator keeps what the update frees (an idle server at a million chunks held ~140 MB
more that way), so the order is a promise about memory that no answer would show."""

from __future__ import annotations

import fcntl
import io
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD, write_files
from vaultsearch import Vault
from vaultsearch.server.mcp.calllog import CallLog
from vaultsearch.server.mcp.run import Background
from vaultsearch.store.layout import IndexLayout

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/locks").is_file(),
    reason="needs /proc/locks to see a thread wait for a lock",
)


def _waits_for(path: Path) -> bool:
    """Whether a thread of this process waits for a lock on ``path`` (``/proc/locks``
    lists a blocked request with ``->``)."""
    inode = os.stat(path).st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        mine = "->" in fields and fields[-4] == str(os.getpid())
        if mine and int(fields[-3].rsplit(":", 1)[1]) == inode:
            return True
    return False


def _writer_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "vaultsearch-live" and t.is_alive()]


def test_the_snapshot_is_opened_before_the_start_up_update(
    tmp_path: Path, embedder: object
) -> None:
    """The published generation's reader lock is held exclusively here, so opening the
    snapshot waits: while it waits, no writer thread may exist (swapped, the writer
    starts first). Let go, the snapshot holds that generation and the update publishes
    the edit beside it; the generation stays on disk because the snapshot, opened
    first, holds it, and a search then follows to the edit."""
    root = write_files(
        tmp_path / "vault",
        {f"Note {i}.md": f"# Note {i}\n\nAbout the river and stone {i}.\n" for i in range(12)},
    )
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    first = IndexLayout(index_dir).current()
    assert first is not None
    write_files(root, {"Note 3.md": "# Note 3\n\nAbout the saffron lantern.\n"})

    vault = Vault.open(root, index_dir=index_dir)
    background = Background(vault, False, CallLog(io.StringIO()))
    fd = os.open(first.reader_lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        background.start()
        deadline = time.monotonic() + HANG_GUARD
        while not _waits_for(first.reader_lock):
            assert time.monotonic() < deadline, "the snapshot never asked for its lock"
            time.sleep(0.01)  # polling for the wait, not a bound on anything
        assert _writer_threads() == [], "the writer started before the snapshot was open"
        os.close(fd)
        fd = -1
        assert background.live.wait_idle(HANG_GUARD)
        assert background.live.state.last_error is None
        now = IndexLayout(index_dir).current()
        assert now is not None and now.name != first.name
        assert first.root.is_dir(), "the snapshot did not hold the generation before the update"
        hits = vault.search("saffron lantern", mode="keyword")
        assert hits and hits[0].path == "Note 3.md"
    finally:
        if fd >= 0:
            os.close(fd)
        background.stop()
        vault.close()
