"""Process-wide settings that must be in place before OpenMP libraries load.

With OpenMP's default active waiting, two threads on a two-core machine spin
against each other: each small op of the embedding model took ~8 ms instead of
~0.1 ms here, a query embedding 500 ms instead of 11 ms. Passive waiting removes
that, and FAISS and torch both read it when they first load.
"""

from __future__ import annotations

import os


def prepare_openmp() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("KMP_BLOCKTIME", "0")


def cpu_supports_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


_serving = False


def reserve_core_for_queries() -> None:
    """Called by processes that answer queries while they index (mcp, watch): the
    embedder then leaves one core free so a search never waits behind a batch."""
    global _serving
    _serving = True


def embedding_threads(configured: int) -> int:
    """``embedding.threads``, or 0 = every core, one fewer in a serving process."""
    if configured:
        return configured
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores - 1) if _serving else cores
