"""Search sessions: each MCP search is kept under an id so an agent can fetch its full
passages later, or several searches' passages as one list, without searching again.

The store is a plain LRU in memory: sessions are cheap (paths and line ranges, no text),
die with the server, and the oldest unused ones go first when ``sessions.max_sessions``
is reached. Text is read from the files when asked for, so it is what the lines say now.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionHit:
    path: str
    title: str
    heading_path: str
    start_line: int
    end_line: int
    score: float
    rank: int
    """1-based place in the search that found it."""
    chunk_id: int = 0


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    query: str
    mode: str
    created: float
    hits: tuple[SessionHit, ...]


@dataclass(frozen=True, slots=True)
class MergedHit:
    hit: SessionHit
    sessions: tuple[str, ...]
    """Every session that found this passage, the one with the best rank first."""


def _key(h: SessionHit) -> tuple[str, int, int, int]:
    return (h.path, h.chunk_id, h.start_line, h.end_line)


def merge_sessions(sessions: Sequence[Session]) -> list[MergedHit]:
    """One entry per passage across ``sessions``: the same chunk found twice keeps its
    best rank (then best score); the result is ordered by that rank, ties in the order
    the sessions were given, so the first session's hits lead among equals."""
    best: dict[tuple[str, int, int, int], tuple[tuple[int, float, int], SessionHit]] = {}
    found_by: dict[tuple[str, int, int, int], list[tuple[tuple[int, float, int], str]]] = {}
    for order, session in enumerate(sessions):
        for h in session.hits:
            key = _key(h)
            sort_key = (h.rank, -h.score, order)
            found_by.setdefault(key, []).append((sort_key, session.id))
            if key not in best or sort_key < best[key][0]:
                best[key] = (sort_key, h)
    ranked = sorted(best.items(), key=lambda item: item[1][0])
    out = []
    for key, (_, hit) in ranked:
        ids = [sid for _, sid in sorted(found_by[key])]
        out.append(MergedHit(hit, tuple(dict.fromkeys(ids))))
    return out


class SearchSessions:
    """Thread-safe LRU of sessions; reading a session makes it the most recent."""

    def __init__(self, max_sessions: int, clock: Callable[[], float] = time.time) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        self._clock = clock
        self._items: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, query: str, mode: str, hits: Iterable[SessionHit]) -> Session:
        session = Session(
            id="s" + secrets.token_hex(4),
            query=query,
            mode=mode,
            created=self._clock(),
            hits=tuple(hits),
        )
        with self._lock:
            while session.id in self._items:  # 32 random bits: a clash is rare, never reused
                session = Session("s" + secrets.token_hex(4), *_fields_after_id(session))
            self._items[session.id] = session
            while len(self._items) > self.max_sessions:
                self._items.popitem(last=False)
        return session

    def get(self, session_id: str) -> Session | None:
        with self._lock:
            session = self._items.get(session_id)
            if session is not None:
                self._items.move_to_end(session_id)
            return session

    def live(self) -> list[Session]:
        """Most recently used first."""
        with self._lock:
            return list(reversed(self._items.values()))

    def age(self, session: Session) -> float:
        return max(0.0, self._clock() - session.created)


def _fields_after_id(s: Session) -> tuple[str, str, float, tuple[SessionHit, ...]]:
    return s.query, s.mode, s.created, s.hits
