"""A second thread for one vector search's segment scans.

A search's vector scan is the longest step of the thread that runs it (13–15 ms of CPU
at a million chunks: two approximate segments and three flat tails), while the query
pool's thread, which ran the keyword search beside the query's embedding, has scored
what it found after a few milliseconds and then waits. The segments are independent
and FAISS, ``pread`` and numpy's large operations release the GIL, so the segments are
split in two halves of like cost and one half runs here: the search then takes about
the longer half on a machine with a free core, and the same CPU on a busy one. The
results are merged as before (by score, segment and position), so they do not depend
on which thread scanned what.

One thread per process, shared by every search: a half never waits on another job, so
searches running at once only queue for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vaultsearch-scan")
        return _pool


def halves(costs: Sequence[float]) -> tuple[list[int], list[int]]:
    """The indexes of ``costs`` in two groups of like total, each in the given order
    (largest first, each to the lighter group)."""
    groups: tuple[list[int], list[int]] = ([], [])
    loads = [0.0, 0.0]
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        lighter = 0 if loads[0] <= loads[1] else 1
        groups[lighter].append(i)
        loads[lighter] += costs[i]
    return sorted(groups[0]), sorted(groups[1])


def both(here: Callable[[], T], there: Callable[[], T]) -> tuple[T, T]:
    """``here()`` on this thread while ``there()`` runs on the scan thread; both results
    (the scan thread's is waited for even when ``here`` raises, so no scan outlives the
    search that asked for it)."""
    future = _executor().submit(there)
    try:
        mine = here()
    finally:
        theirs = future.result()
    return mine, theirs
