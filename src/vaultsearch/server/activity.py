"""The activity log the Index Console page shows: index runs, failed files, config
reloads and searches, newest first, kept in memory for the life of the server."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vaultsearch.indexing.runner import IndexRunner, RunSnapshot
from vaultsearch.listeners import Listeners

KEEP = 500
FAILED_FILES_SHOWN = 20
"""A run with thousands of failed files gets this many entries and one that counts the rest."""


@dataclass(frozen=True, slots=True)
class Activity:
    time: str
    event: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "event": self.event, "detail": self.detail}


class ActivityLog:
    def __init__(self, keep: int = KEEP) -> None:
        self._entries: deque[Activity] = deque(maxlen=keep)
        self._listeners: Listeners[Callable[[Activity], None]] = Listeners()
        self._lock = threading.Lock()

    def add(self, event: str, detail: str = "") -> Activity:
        entry = Activity(datetime.now(UTC).isoformat(timespec="seconds"), event, detail)
        with self._lock:
            self._entries.append(entry)
        for listener in self._listeners.current():
            listener(entry)
        return entry

    def recent(self, limit: int = 50) -> list[Activity]:
        """Newest first."""
        with self._lock:
            return list(reversed(self._entries))[:limit]

    def subscribe(self, listener: Callable[[Activity], None]) -> Callable[[], None]:
        return self._listeners.add(listener)


def follow_runs(log: ActivityLog, runner: IndexRunner) -> Callable[[], None]:
    """Record each run's start and end, and the files it could not index."""

    def on_event(event: str, snap: RunSnapshot) -> None:
        kind = snap.kind or "update"
        if event == "started":
            log.add("index_started", f"{kind} started")
        elif event == "cancelling":
            log.add("index_cancelling", f"{kind}: cancel asked for")
        elif event == "failed":
            log.add("index_failed", f"{kind} failed: {snap.error}")
        elif event in ("done", "cancelled"):
            log.add(f"index_{'finished' if event == 'done' else 'cancelled'}", _ended(kind, snap))
            failed = dict((snap.summary or {}).get("failed") or {})
            for path, reason in list(failed.items())[:FAILED_FILES_SHOWN]:
                log.add("file_failed", f"{path}: {reason}")
            if len(failed) > FAILED_FILES_SHOWN:
                log.add("file_failed", f"and {len(failed) - FAILED_FILES_SHOWN} more files")

    return runner.subscribe(on_event)


def _ended(kind: str, snap: RunSnapshot) -> str:
    s = snap.summary or {}
    counts = ", ".join(f"{s[k]} {k}" for k in ("added", "updated", "moved", "removed") if s.get(k))
    verb = "finished" if snap.state == "done" else f"cancelled after {int(snap.files_done)} files"
    return (
        f"{kind} {verb}"
        + (f": {counts}" if counts else "")
        + (f" in {s['seconds']} s" if "seconds" in s else "")
    )
