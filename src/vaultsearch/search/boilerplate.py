"""Passages repeated across most notes (a footer, a template heading) weighed down.

Such a passage says nothing about the note it sits in, yet it matches every query about
its own words in thousands of notes at once and took 42 of 800 top-10 slots on a
held-out vault whose footer was in 6,556 of 6,571 notes. It is found from the catalog
(the same text in more than ``SHARE`` of the notes) when a generation is first
searched, and its branch scores are scaled by ``WEIGHT`` before fusion, so its notes
rank by their own passages.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

SHARE = 0.5
"""A text in more than this share of the notes is boilerplate."""
LEAST = 10
"""... and in at least this many: in a handful of notes, a shared passage may be the point."""
WEIGHT = 0.1
"""What a boilerplate chunk keeps of its score: below the notes' own passages, still
found when nothing else matches."""


def find(db: sqlite3.Connection, notes: int) -> frozenset[int]:
    """The ids of chunks whose exact text is in more than ``SHARE`` of ``notes`` notes.
    Candidate lengths are counted in SQL first, so only texts of a length that many
    notes share are read into Python."""
    least = max(LEAST, int(notes * SHARE) + 1)
    lengths = [
        n
        for (n,) in db.execute(
            "SELECT length(text) AS n FROM chunks GROUP BY n HAVING COUNT(DISTINCT note_id) >= ?",
            (least,),
        )
    ]
    if not lengths:
        return frozenset()
    marks = ",".join("?" * len(lengths))
    by_text: dict[str, tuple[set[int], list[int]]] = {}
    for cid, nid, text in db.execute(
        f"SELECT id, note_id, text FROM chunks WHERE length(text) IN ({marks})", lengths
    ):
        notes_, ids = by_text.setdefault(text, (set(), []))
        notes_.add(nid)
        ids.append(cid)
    return frozenset(c for ns, ids in by_text.values() if len(ns) >= least for c in ids)


def weigh_down(
    branches: Mapping[str, Sequence[tuple[int, float]]], boilerplate: frozenset[int]
) -> dict[str, list[tuple[int, float]]]:
    """Each branch with its boilerplate chunks' scores times ``WEIGHT``, best first."""
    if not boilerplate:
        return {b: list(hits) for b, hits in branches.items()}
    out = {}
    for b, hits in branches.items():
        if any(cid in boilerplate for cid, _ in hits):
            scaled = [(c, s * WEIGHT if c in boilerplate else s) for c, s in hits]
            out[b] = sorted(scaled, key=lambda x: -x[1])
        else:
            out[b] = list(hits)
    return out
