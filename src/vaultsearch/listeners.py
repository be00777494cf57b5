"""Subscribers to a stream of events, added and removed from any thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable[..., None])


class Listeners(Generic[F]):
    def __init__(self) -> None:
        self._items: list[F] = []
        self._lock = threading.Lock()

    def add(self, listener: F) -> Callable[[], None]:
        """Add a listener; returns the function that removes it."""
        with self._lock:
            self._items.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._items:
                    self._items.remove(listener)

        return remove

    def current(self) -> list[F]:
        """The listeners now, to call outside any lock (one may remove itself)."""
        with self._lock:
            return list(self._items)
