"""LiveIndex: keeps a vault's index current in the background of a long-lived process.

One process per index is the writer (it holds the OS lock); every other process is a
reader that answers from the last committed generation and keeps trying the lock,
so when the writer dies another takes over. Searches never wait for indexing.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vaultsearch.errors import VaultsearchError

if TYPE_CHECKING:
    from vaultsearch.vault import Vault

log = logging.getLogger("vaultsearch.live")


@dataclass
class LiveState:
    role: str = "starting"
    """``writer`` (holds the lock), ``reader`` (another process writes) or ``starting``."""
    indexing: bool = False
    full_requested: bool = False
    last_summary: dict[str, Any] | None = None
    last_error: str | None = None
    runs: int = 0
    started_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "indexing": self.indexing,
            "last_summary": self.last_summary,
            "last_error": self.last_error,
            "runs": self.runs,
        }


class LiveIndex:
    """Runs ``vault.index()`` on a background thread: at start, on request, and (with
    a watcher attached) after file changes. Requests made while a run is going are
    coalesced into one more run."""

    def __init__(self, vault: Vault, takeover_interval: float = 2.0) -> None:
        self.vault = vault
        self.state = LiveState()
        self.takeover_interval = takeover_interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = True
        self._pending_full = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="vaultsearch-live", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.vault.manager().lock.release()

    def request(self, full: bool = False) -> bool:
        """Ask for a run; False when one is already running (it is queued once more)."""
        with self._lock:
            busy = self.state.indexing
            self._pending = True
            self._pending_full = self._pending_full or full
        self._wake.set()
        return not busy

    def wait_idle(self, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._pending and not self.state.indexing:
                    return True
            time.sleep(0.02)
        return False

    def _run(self) -> None:
        manager = self.vault.manager()
        while not self._stop.is_set():
            if not manager.lock.held and not manager.lock.acquire():
                self.state.role = "reader"
                self._wake.wait(self.takeover_interval)
                self._wake.clear()
                continue
            self.state.role = "writer"
            with self._lock:
                run, full = self._pending, self._pending_full
                self._pending = self._pending_full = False
                self.state.indexing = run
            if run:
                self._index_once(full)
            self._wake.wait()
            self._wake.clear()

    def _index_once(self, full: bool) -> None:
        try:
            summary = self.vault.index(full=full)
            self.state.last_summary = summary.to_dict()
            self.state.last_error = None
        except VaultsearchError as exc:
            self.state.last_error = str(exc)
        except Exception as exc:  # a background failure must be visible, not fatal
            log.exception("indexing failed")
            self.state.last_error = f"{type(exc).__name__}: {exc}"
        finally:
            self.state.runs += 1
            with self._lock:
                self.state.indexing = False
