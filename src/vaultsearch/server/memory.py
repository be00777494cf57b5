"""Keeping a long-lived server's resident memory to what it holds, on glibc.

glibc gives each thread that allocates its own 64 MB arena (up to eight per core),
and what a burst touched there (the index opening on a worker thread, the model
loading on another) stays resident in that arena. An MCP server has a dozen threads
and does little at once, so two arenas are plenty: 4 MB less resident on the
2.7k-note vault after a search (docs/benchmarks.md, "Memory of an idle MCP server").
``malloc_trim`` after the model load and each call was measured too and returned
about 1 MB, so it is not done. A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8
"""``mallopt`` parameter number from glibc's malloc.h."""
ARENAS = 2


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Call before the threads start: arenas already made stay. True when applied."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = None
    if not glibc:
        return False
    libc = ctypes.CDLL(None)  # the process's own C library: no search, no subprocess
    return bool(libc.mallopt(M_ARENA_MAX, arenas))
