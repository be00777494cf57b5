"""The search-session store: LRU order, its bound, and merging several sessions."""

from __future__ import annotations

import pytest

from vaultsearch.server.tools.sessions import SearchSessions, SessionHit, merge_sessions


def hit(path: str, rank: int, chunk: int = 1, score: float = 1.0) -> SessionHit:
    return SessionHit(path, path, "", 1, 5, score, rank, chunk)


def test_the_least_recently_used_session_goes_first() -> None:
    now = [100.0]
    store = SearchSessions(2, clock=lambda: now[0])
    a = store.add("a", "hybrid", [hit("A.md", 1)])
    b = store.add("b", "keyword", [])
    assert store.get(a.id) is a  # a is now the most recent
    c = store.add("c", "hybrid", [])
    assert store.get(b.id) is None
    assert [s.id for s in store.live()] == [c.id, a.id]
    now[0] = 130.0
    assert store.age(a) == 30.0
    assert len({a.id, b.id, c.id}) == 3 and all(s.startswith("s") for s in (a.id, c.id))


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError):
        SearchSessions(0)


def test_merging_keeps_each_chunk_once_at_its_best_rank() -> None:
    store = SearchSessions(5)
    first = store.add("q1", "hybrid", [hit("A.md", 1), hit("B.md", 2), hit("C.md", 3)])
    second = store.add("q2", "hybrid", [hit("C.md", 1), hit("D.md", 2), hit("A.md", 3, chunk=2)])
    merged = merge_sessions([first, second])
    rows = [(m.hit.path, m.hit.chunk_id, m.hit.rank, m.sessions) for m in merged]
    assert rows == [
        ("A.md", 1, 1, (first.id,)),
        ("C.md", 1, 1, (second.id, first.id)),  # rank 1 in the second beats rank 3
        ("B.md", 1, 2, (first.id,)),
        ("D.md", 1, 2, (second.id,)),
        ("A.md", 2, 3, (second.id,)),  # another chunk of A is another passage
    ]
    assert merge_sessions([]) == []


def test_equal_ranks_prefer_the_better_score() -> None:
    store = SearchSessions(5)
    low = store.add("q1", "hybrid", [hit("A.md", 2, score=0.1)])
    high = store.add("q2", "hybrid", [hit("A.md", 2, score=0.9)])
    (only,) = merge_sessions([low, high])
    assert only.hit.score == 0.9 and only.sessions == (high.id, low.id)
