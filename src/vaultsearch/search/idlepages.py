"""An idle reader gives back the vector pages its searches mapped.

A flat scan reads every row of the chunk vectors (70 MB at 45k chunks), and those
pages stay in the process's resident set after the search: the larger part of an
idle MCP server's memory once the sentence vectors were read by position. They are
clean pages of the published files, so dropping them from the mapping
(``MADV_DONTNEED``) loses nothing: the page cache keeps them while the machine has
room, and the next search maps them again. Doing that before every search cost
3.2 ms CPU of a 9 ms scan at 45k chunks; after ``IDLE_SECONDS`` without a search it
costs nothing a conversation's burst of searches notices.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

IDLE_SECONDS = 2.0


class IdleRelease:
    """Calls ``release`` once each time ``IDLE_SECONDS`` pass after the last ``touch``;
    its thread starts at the first touch, so a process that never searches has none."""

    def __init__(self, release: Callable[[], None], seconds: float = IDLE_SECONDS) -> None:
        self._release = release
        self._seconds = seconds
        self._cond = threading.Condition()
        self._last: float | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def touch(self) -> None:
        with self._cond:
            self._last = time.monotonic()
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="vaultsearch-idle-pages", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    if self._last is None:
                        self._cond.wait()
                        continue
                    left = self._last + self._seconds - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._closed:
                    return
                self._last = None
            with contextlib.suppress(Exception):  # a snapshot closed meanwhile
                self._release()
