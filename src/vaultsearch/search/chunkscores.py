"""A branch's completion, (chunk id, score) pairs with each chunk's note, held as arrays.

The completion scores every chunk of the notes only the keyword side found: 1,500 to
4,800 of them a query at a million chunks (notes of many chunks). As a list of pairs,
every step after it (leaving out the notes the semantic branch found, weighing down
boilerplate, keeping the chunks a hit can show) looked each chunk's note up again in a
Python loop: ~20 ms of the slowest queries. Here the notes are looked up once, in one
gather, and each step is array work; it reads as the list of pairs it stands for, in
the same order, with the same floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np


class ChunkScores(Sequence[tuple[int, float]]):
    """``(chunk id, score)`` pairs in order; ``notes``: each chunk's note, -1 for a chunk
    the snapshot does not hold. Scores are float64, so ``tolist`` gives the floats a list
    of pairs holds."""

    __slots__ = ("ids", "notes", "scores")

    def __init__(self, ids: np.ndarray, scores: np.ndarray, notes: np.ndarray) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        self.scores = np.asarray(scores, dtype=np.float64)
        self.notes = np.asarray(notes, dtype=np.int64)

    @classmethod
    def of(
        cls, pairs: Iterable[tuple[int, float]], notes_of: Callable[[np.ndarray], np.ndarray]
    ) -> ChunkScores:
        """From pairs (a list a tuning bench cached); itself when it is one already."""
        if isinstance(pairs, ChunkScores):
            return pairs
        listed = list(pairs)
        ids = np.fromiter((c for c, _ in listed), dtype=np.int64, count=len(listed))
        scores = np.fromiter((s for _, s in listed), dtype=np.float64, count=len(listed))
        return cls(ids, scores, notes_of(ids))

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.ids.tolist(), self.scores.tolist(), strict=True)

    @overload
    def __getitem__(self, i: int) -> tuple[int, float]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, float]]: ...
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(zip(self.ids[i].tolist(), self.scores[i].tolist(), strict=True))
        return (int(self.ids[i]), float(self.scores[i]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChunkScores | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ChunkScores({list(self)!r})"

    def where(self, keep: np.ndarray) -> ChunkScores:
        """The pairs ``keep`` (a mask or positions) selects, in that order."""
        return ChunkScores(self.ids[keep], self.scores[keep], self.notes[keep])

    def without_notes(self, notes: Iterable[int]) -> ChunkScores:
        """The pairs of chunks of other notes (a chunk of no note stays)."""
        gone = np.fromiter(notes, dtype=np.int64)
        return self.where(~np.isin(self.notes, gone)) if len(gone) else self

    def weighed_down(self, chunks: np.ndarray, weight: float) -> ChunkScores:
        """``boilerplate.weigh_down`` of these pairs: the scores of ``chunks`` (sorted)
        times ``weight``, best first (a stable sort, as ``sorted`` is), when any is here."""
        hit = np.isin(self.ids, chunks) if len(chunks) else np.zeros(len(self.ids), dtype=bool)
        if not hit.any():
            return self
        scores = np.where(hit, self.scores * weight, self.scores)
        order = np.argsort(-scores, kind="stable")
        return ChunkScores(self.ids[order], scores[order], self.notes[order])

    def shown(
        self,
        scored: Iterable[int],
        limit: int,
        is_code: Callable[[int], bool],
        rounding: float,
    ) -> ChunkScores:
        """The pairs that can change a ranking (see ``orchestrator._shown_chunks``): those
        of ``scored`` chunks, and of each note the best ``limit`` of the rest, with any
        within ``rounding`` of the ``limit``-th (all of a code note's)."""
        in_scored = np.isin(self.ids, np.fromiter(scored, dtype=np.int64))
        rest = np.flatnonzero(~in_scored)
        if not len(rest):
            return self
        notes, scores = self.notes[rest], self.scores[rest]
        order = np.lexsort((-scores, notes))  # by note, then best first
        notes, scores = notes[order], scores[order]
        starts = np.flatnonzero(np.r_[True, notes[1:] != notes[:-1]])
        counts = np.diff(np.r_[starts, len(notes)])
        floors: dict[int, float] = {}
        for start in starts[counts > limit].tolist():
            nid = int(notes[start])
            if nid >= 0 and is_code(nid):
                continue
            cut = float(scores[start + limit - 1])
            floors[nid] = cut - rounding if cut > rounding else -math.inf
        if not floors:
            return self
        floor_notes = np.fromiter(floors, dtype=np.int64, count=len(floors))
        floor_values = np.fromiter(floors.values(), dtype=np.float64, count=len(floors))
        by_note = np.argsort(floor_notes)
        floor_notes, floor_values = floor_notes[by_note], floor_values[by_note]
        at = np.minimum(np.searchsorted(floor_notes, self.notes), len(floor_notes) - 1)
        floor = np.where(floor_notes[at] == self.notes, floor_values[at], -np.inf)
        keep = in_scored | (self.scores >= floor)
        return self.where(keep)


def notes_of(note_of_chunk: Mapping[int, int]) -> Callable[[np.ndarray], np.ndarray]:
    """Each chunk's note as an array (-1 for none): the chunk map's own gather when it
    has one (``NoteOfChunk.many``), else one lookup a chunk (a test's plain dict)."""
    many = getattr(note_of_chunk, "many", None)
    if many is not None:
        return many

    def each(ids: np.ndarray) -> np.ndarray:
        got = (note_of_chunk.get(int(c)) for c in ids)
        return np.fromiter((-1 if n is None else n for n in got), dtype=np.int64, count=len(ids))

    return each
