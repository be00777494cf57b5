"""Waiting for a pipe to have bytes, whatever the descriptor's number.

``select.select`` refuses descriptors of 1024 and above ("filedescriptor out of range
in select()"). A long-lived process that holds many files open (an MCP server, a
watcher, the store battery's thousands of in-process checks) reaches that, and every
parse then failed: the store battery's repairs recorded all 300 notes of its vault as
parser errors and left an empty index that ``check`` found consistent. ``poll`` has
no such limit.
"""

from __future__ import annotations

import select


def readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has bytes (or its end) within ``timeout`` seconds."""
    if not hasattr(select, "poll"):  # pragma: no cover - Windows has no poll for pipes
        return bool(select.select([fd], [], [], timeout)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(0, int(timeout * 1000))))
