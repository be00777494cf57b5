"""What a process learnt by reading a file of a published generation, kept while the
file is the same file.

A generation's files are written once and hard-linked, never rewritten, into every
later generation, so a long-lived writer (``watch``, ``mcp``) and a reader following it
would otherwise read the same bytes again at every edit: a segment's ids to learn
their order, the graph's base to check its CRC, each segment's header. What was read
is keyed by the file's identity (device, inode) and kept with its size and time: damage
put in its place is a new inode, a write into it a new time, so either is read again.
``check`` reads every file whatever a memo holds.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")
Identity = tuple[int, int, int, int]
"""(device, inode, size, mtime in ns)."""


def identity(path: Path) -> Identity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class FileMemo(Generic[T]):
    """One fact per file (a digest, an order, a header), bounded: past ``limit`` files
    it starts again, as the files of a few generations are all a process reads."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._known: dict[tuple[int, int], tuple[int, int, T]] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> tuple[Identity | None, T | None]:
        """The file's identity now, and the fact kept for it (None when not kept or the
        file changed): pass the identity to ``put`` after reading the file."""
        now = identity(path)
        if now is None:
            return None, None
        with self._lock:
            kept = self._known.get(now[:2])
        return now, (kept[2] if kept is not None and kept[:2] == now[2:] else None)

    def put(self, path: Path, fact: T, before: Identity | None = None) -> None:
        """Keep ``fact`` for ``path`` when it is still the file ``before`` named (the
        identity ``get`` gave before the read; the file's identity now when None): a
        file replaced while it was read is not remembered."""
        now = identity(path)
        if now is None or (before is not None and now != before):
            return
        with self._lock:
            if len(self._known) >= self.limit:
                self._known.clear()
            self._known[now[:2]] = (now[2], now[3], fact)

    def forget(self) -> None:
        with self._lock:
            self._known.clear()
