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
from dataclasses import dataclass

SHARE = 0.5
"""A text in more than this share of the notes is boilerplate."""
LEAST = 10
"""... and in at least this many: in a handful of notes, a shared passage may be the point."""
WEIGHT = 0.1
"""What a boilerplate chunk keeps of its score: below the notes' own passages, still
found when nothing else matches."""


@dataclass(frozen=True, slots=True)
class Boilerplate:
    chunks: frozenset[int]
    lengths: frozenset[int]
    """The text lengths of its chunks: where a later generation looks again."""
    least: int
    """The number of notes a text had to be in."""


def _least(notes: int) -> int:
    return max(LEAST, int(notes * SHARE) + 1)


def find(db: sqlite3.Connection, notes: int) -> Boilerplate:
    """The chunks whose exact text is in more than ``SHARE`` of ``notes`` notes.
    Candidate lengths are counted in SQL first (from the catalog's index on chunk
    length), so only texts of a length that many notes share are read into Python."""
    least = _least(notes)
    lengths = [
        n
        for (n,) in db.execute(
            "SELECT length(text) AS n FROM chunks GROUP BY n HAVING COUNT(DISTINCT note_id) >= ?",
            (least,),
        )
    ]
    return _of_lengths(db, lengths, least)


def find_again(
    db: sqlite3.Connection, notes: int, previous: Boilerplate, added: Sequence[int]
) -> Boilerplate:
    """``find`` for a generation whose only new chunks are ``added``, from the previous
    generation's answer: a text's count of notes changed only if a changed note holds
    or held it, a removed chunk only lowers it, and an added chunk has one of the
    lengths looked at again; so, unless fewer notes are needed than before, no text of
    another length can have become boilerplate. Of those lengths only the ones that many
    notes share are read, as ``find`` filters them (counted on the length index alone):
    at a million chunks an edited chunk's length has ~1,100 chunks and ~149k notes are
    needed, and reading all of them was 12-16 ms of a followed edit."""
    least = _least(notes)
    if least < previous.least:
        return find(db, notes)
    lengths = set(previous.lengths)
    for start in range(0, len(added), 500):
        part = [int(c) for c in added[start : start + 500]]
        marks = ",".join("?" * len(part))
        lengths.update(
            n for (n,) in db.execute(f"SELECT length(text) FROM chunks WHERE id IN ({marks})", part)
        )
    return _of_lengths(db, _shared(db, sorted(lengths), least), least)


def _shared(db: sqlite3.Connection, lengths: Sequence[int], least: int) -> list[int]:
    """Those of ``lengths`` whose chunks are in at least ``least`` notes."""
    out = []
    for start in range(0, len(lengths), 500):
        part = list(lengths[start : start + 500])
        marks = ",".join("?" * len(part))
        out += [
            n
            for (n,) in db.execute(
                f"SELECT length(text) AS n FROM chunks WHERE length(text) IN ({marks})"
                " GROUP BY n HAVING COUNT(DISTINCT note_id) >= ?",
                (*part, least),
            )
        ]
    return out


def _of_lengths(db: sqlite3.Connection, lengths: Sequence[int], least: int) -> Boilerplate:
    by_text: dict[str, tuple[set[int], list[int]]] = {}
    for start in range(0, len(lengths), 500):
        part = list(lengths[start : start + 500])
        marks = ",".join("?" * len(part))
        for cid, nid, text in db.execute(
            f"SELECT id, note_id, text FROM chunks WHERE length(text) IN ({marks})", part
        ):
            notes_, ids = by_text.setdefault(text, (set(), []))
            notes_.add(nid)
            ids.append(cid)
    found = {t: ids for t, (ns, ids) in by_text.items() if len(ns) >= least}
    return Boilerplate(
        frozenset(c for ids in found.values() for c in ids),
        frozenset(len(t) for t in found),
        least,
    )


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
