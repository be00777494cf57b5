"""Make a write searchable before its tool answers: index just the written paths
through the server's own ``LiveIndex`` (the one writer of this index) and wait."""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaultsearch.app.live import LiveIndex

WAIT_SECONDS = 120.0


def index_paths(
    live: LiveIndex, paths: Collection[str], timeout: float = WAIT_SECONDS
) -> str | None:
    """None once the paths are in the committed index; otherwise why they may not be
    searchable yet (another process writes the index, the run failed, or it is slow)."""
    rules = live.vault.ignore_rules
    wanted = [p for p in paths if not rules.excludes(p)]
    if not wanted:
        return None
    live.start()  # idempotent; the server has normally started it already
    live.request(paths=wanted)
    deadline = time.monotonic() + timeout
    while not live.wait_idle(0.1):
        if live.state.role == "reader":
            return (
                "Written; another vaultsearch process writes this index, so it is searchable "
                "once that process has indexed it."
            )
        if time.monotonic() > deadline:
            return "Written; indexing it takes longer than usual, so search may not show it yet."
    if live.state.last_error:
        return f"Written, but indexing failed ({live.state.last_error}); search may not show it."
    return None
