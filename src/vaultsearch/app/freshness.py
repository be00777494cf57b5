"""How current an answer read from the committed index is, told the same way to every
client of a long-lived process (MCP, and any surface that keeps a ``LiveIndex``).

Two claims must be true when made. "The index is being updated" only when a run has
work: a start-up update that finds every file as indexed is not news to a client whose
first search races it. "Stale" whenever files changed since the index was published,
also with the watcher off, when no run will ever notice them by itself: then each answer
compares the vault's file sizes and times with the catalog (``indexing.overview``: a
directory walk and a stat per file, never a read). On a vault of 2,722 notes that walk
costs tens to hundreds of milliseconds, more than a search, so ``ChangeProbe`` spends
at most a tenth of the wall time on it however often clients search: between two walks
a search reuses the last count, unless the published index changed since.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultsearch.indexing.overview import file_counts

if TYPE_CHECKING:
    from vaultsearch.app.live import LiveState
    from vaultsearch.app.vault import Vault


@dataclass(frozen=True, slots=True)
class Freshness:
    building: bool
    """A run is going that has files to index or an index to rebuild."""
    stale: bool
    """The answer may miss changes: files changed since the index, or the last run failed."""
    pending: int | None
    """Files new, changed or deleted since the index was published; None when not looked."""
    message: str | None


class ChangeProbe:
    """Counts the files changed since the published index, bounded in cost."""

    DUTY = 0.1
    """The largest share of wall time the walks may take."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._lock = threading.Lock()
        self._pending = 0
        self._generation: str | None = None
        self._next = 0.0

    def pending(self) -> int:
        with self._lock:
            current = self.vault.layout.current()
            generation = current.name if current is not None else None
            now = time.monotonic()
            if generation != self._generation or now >= self._next:
                self._pending = file_counts(self.vault.manager()).pending
                took = time.monotonic() - now
                self._generation, self._next = generation, time.monotonic() + took / self.DUTY
            return self._pending


def _plural(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def freshness(vault: Vault, state: LiveState, watching: bool, probe: ChangeProbe) -> Freshness:
    first_run_due = state.role != "reader" and state.runs == 0
    busy = state.indexing or vault.indexing_now or first_run_due
    run = vault.runner().snapshot()
    pending: int | None = None
    if busy and run.busy and run.files_total:
        work = True  # the run has planned its files: no need to look
    elif busy or not watching:
        pending = probe.pending()
        work = bool(pending) or vault.layout.current() is None
    else:
        work = False  # the watcher reports changes as they happen
    building = busy and work
    if state.last_error:
        msg = f"The last index update failed ({state.last_error}); answers use the last good index."
        return Freshness(building, True, pending, msg)
    if building:
        what = f" ({_plural(pending)} changed)" if pending else ""
        msg = f"The index is being updated{what}; answers come from what is indexed."
        return Freshness(True, True, pending, msg)
    if pending:
        msg = (
            f"{_plural(pending)} changed since the index was last updated and the watcher is "
            "off: answers do not include those changes until the index is updated (reindex)."
        )
        return Freshness(False, True, pending, msg)
    return Freshness(False, False, pending, None)
