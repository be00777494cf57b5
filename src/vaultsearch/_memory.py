"""Keeping a long-lived server's resident memory to what it holds, on glibc.

Two glibc defaults suit short programs and hurt a server that lives for days:

- The mmap threshold adapts: once a large block (the FAISS index of an update, 14 MB
  on the 2.7k-note vault) is freed, blocks up to that size come from the heap instead,
  and a freed heap block stays resident. An MCP server with the watcher on grew by
  5 to 10 MB per edited note (250 MB to 412 MB after 16 edits); with the threshold
  fixed at glibc's own default, large blocks always go back to the OS and it stays
  flat (docs/benchmarks.md, "Memory of an idle MCP server").
- Each thread that allocates gets its own arena (up to eight per core), which keeps
  what a burst touched there. A server's dozen threads do little at once: two arenas
  are plenty, 4 MB less resident after a search.

``malloc_trim`` after the model load and after each call was measured as well and
returned about 1 MB, so it is not done. Everything here is a no-op elsewhere than glibc.
"""

from __future__ import annotations

import ctypes
import os

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
"""``mallopt`` parameter numbers from glibc's malloc.h."""
MMAP_THRESHOLD = 128 * 1024
"""glibc's starting value; setting it at all turns the adaptation off."""
ARENAS = 2


def tune_allocator() -> bool:
    """Call before the threads start (arenas already made stay). True when applied."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = None
    if not glibc:
        return False
    libc = ctypes.CDLL(None)  # the process's own C library: no search, no subprocess
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(M_ARENA_MAX, ARENAS)
    )
