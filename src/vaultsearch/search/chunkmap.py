"""Each note's chunks and each chunk's note, for a whole vault, in a few flat arrays.

A reader holds both for its life. As a dict of Python ints (chunk -> note) and a small
array per note they cost 190 bytes a chunk (8.6 MB at 45,630 chunks, ~190 MB at a
million); here they are two int64 columns ordered by note, then chunk, and a table of
positions: about 24 bytes a chunk. Chunk and note ids are SQLite AUTOINCREMENT keys, so
they are nearly dense and a lookup is one index into a table spanning them, as cheap as
a dict's; ids spread out by churn are bisected instead of growing the table with the span.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

SPAN = 4
"""The table spans the ids while their range is at most this many times their count
(and a little): a position then costs 4 bytes per id in the range."""

D = TypeVar("D")


def _frozen(a: np.ndarray) -> np.ndarray:
    """A snapshot's arrays are shared with the snapshot that follows it: never written."""
    a.flags.writeable = False
    return a


class _Positions:
    """The position of each of ``ids`` (unique, any order); -1 for an id not among them.
    The maps read ``dense``, ``base``, ``at`` and ``size`` inline, so a lookup costs no
    Python call beyond the mapping's own ``get``, as a dict's does."""

    __slots__ = ("_order", "_sorted", "_table", "at", "base", "dense", "size")

    def __init__(self, ids: np.ndarray) -> None:
        self.base = int(ids.min()) if len(ids) else 0
        span = int(ids.max()) - self.base + 1 if len(ids) else 0
        self._sorted: np.ndarray | None = None
        self._order = np.zeros(0, dtype=np.int64)
        self.dense = span <= SPAN * len(ids) + 1024
        if self.dense:
            table = np.full(span, -1, dtype=np.int32 if len(ids) < 2**31 else np.int64)
            table[ids - self.base] = np.arange(len(ids))
        else:
            table = np.zeros(0, dtype=np.int32)
            self._order = _frozen(np.argsort(ids, kind="stable"))
            self._sorted = _frozen(ids[self._order])
        self._table = _frozen(table)
        self.at = (self._sorted if self._sorted is not None else table).data
        self.size = len(self.at)

    def find(self, key: Any) -> int:
        """-1 also for a key that is no integer, as a dict finds no such key."""
        try:
            if self.dense:
                i = key - self.base
                return self.at[i] if 0 <= i < self.size else -1
            i = bisect_left(self.at, key)
            return self._order.data[i] if i < self.size and self.at[i] == key else -1
        except TypeError:
            return -1

    def find_many(self, keys: np.ndarray) -> np.ndarray:
        out = np.full(len(keys), -1, dtype=np.int64)
        if self._sorted is None:
            i = keys - self.base
            inside = (i >= 0) & (i < len(self._table))
            out[inside] = self._table[i[inside]]
        elif len(self._sorted):
            i = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
            hit = self._sorted[i] == keys
            out[hit] = self._order[i[hit]]
        return out


class ChunksByNote(Mapping[int, np.ndarray]):
    """Note id -> its chunk ids, ascending (a read-only view into one shared column);
    ``note_of_chunk`` is the other direction. Never changed: ``replaced`` makes a new one."""

    __slots__ = (
        "_bounds",
        "_chunk",
        "_keys",
        "_note",
        "_starts",
        "chunks",
        "note_of_chunk",
        "notes",
    )

    def __init__(self, chunks: np.ndarray, notes: np.ndarray) -> None:
        """``chunks`` and their ``notes``, ordered by note, then chunk."""
        self.chunks = _frozen(np.ascontiguousarray(chunks, dtype=np.int64))
        self.notes = _frozen(np.ascontiguousarray(notes, dtype=np.int64))
        # runs of one note in a column ordered by note: np.unique sorted it again (43 of
        # the 85 ms a reader's follow of one edit spent here at a million chunks)
        starts = np.flatnonzero(np.r_[True, self.notes[1:] != self.notes[:-1]])
        starts = starts[: len(self.notes)]
        self._keys = _frozen(self.notes[starts])
        self._starts = _frozen(np.append(starts, len(self.notes)).astype(np.int64))
        self._bounds = self._starts.data
        self._note = _Positions(self._keys)
        self._chunk = _Positions(self.chunks)
        self.note_of_chunk = NoteOfChunk(self)

    @classmethod
    def of_pairs(cls, pairs: np.ndarray) -> ChunksByNote:
        """From (chunk id, note id) rows ordered by note, then chunk."""
        return cls(pairs[:, 0], pairs[:, 1])

    def replaced(self, notes: Iterable[int], pairs: np.ndarray) -> ChunksByNote:
        """This map without the chunks of ``notes``, with ``pairs`` ((chunk id, note id)
        rows ordered by note, then chunk, of notes among ``notes``) in their place."""
        gone = np.fromiter(notes, dtype=np.int64)
        keep = ~np.isin(self.notes, gone)
        chunks, owners = self.chunks[keep], self.notes[keep]
        at = np.searchsorted(owners, pairs[:, 1])
        return ChunksByNote(np.insert(chunks, at, pairs[:, 0]), np.insert(owners, at, pairs[:, 1]))

    def _span(self, note: Any) -> tuple[int, int]:
        pos = self._note
        if pos.dense and type(note) is int:
            i = note - pos.base
            p = pos.at[i] if 0 <= i < pos.size else -1
        else:
            p = pos.find(note)
        return (self._bounds[p], self._bounds[p + 1]) if p >= 0 else (0, 0)

    def __getitem__(self, note: int) -> np.ndarray:
        start, end = self._span(note)
        if start == end:
            raise KeyError(note)
        return self.chunks[start:end]

    def get(self, note: int, default: Any = None) -> Any:
        start, end = self._span(note)
        return self.chunks[start:end] if start != end else default

    def __contains__(self, note: object) -> bool:
        start, end = self._span(note)
        return start != end

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys.tolist())

    def __len__(self) -> int:
        return len(self._keys)

    def of_notes(self, notes: Iterable[int]) -> np.ndarray:
        """The chunk ids of ``notes`` in note id order, each note's ascending: one gather,
        not an array per note (a filter may allow most of a vault's notes)."""
        return self._of_unique(np.unique(np.fromiter(notes, dtype=np.int64)))

    def _of_unique(self, wanted: np.ndarray) -> np.ndarray:
        """``of_notes`` for note ids sorted and unique already (a layer's: ``np.unique``
        of 150k ids took 28 ms, as much as the gather)."""
        found = self._note.find_many(wanted)
        found = found[found >= 0]
        begins, ends = self._starts[found], self._starts[found + 1]
        lengths = ends - begins
        if not len(lengths) or not lengths.sum():
            return np.zeros(0, dtype=np.int64)
        offsets = np.repeat(begins - np.cumsum(lengths) + lengths, lengths)
        return self.chunks[offsets + np.arange(int(lengths.sum()))]


class NoteOfChunk(Mapping[int, int]):
    """Chunk id -> note id, from the columns of a ``ChunksByNote``."""

    __slots__ = ("_map", "_owner")

    def __init__(self, by_note: ChunksByNote) -> None:
        self._map = by_note
        self._owner = by_note.notes.data

    def _at(self, chunk: Any) -> int:
        pos = self._map._chunk
        if pos.dense and type(chunk) is int:
            i = chunk - pos.base
            return pos.at[i] if 0 <= i < pos.size else -1
        return pos.find(chunk)

    def __getitem__(self, chunk: int) -> int:
        pos = self._map._chunk
        if pos.dense and type(chunk) is int:
            i = chunk - pos.base
            p = pos.at[i] if 0 <= i < pos.size else -1
        else:
            p = pos.find(chunk)
        if p < 0:
            raise KeyError(chunk)
        return self._owner[p]

    def get(self, chunk: int, default: D | None = None) -> int | D | None:  # type: ignore[override]
        """``_at`` written out here and in ``__getitem__``: ranking calls them per hit."""
        pos = self._map._chunk
        if pos.dense and type(chunk) is int:
            i = chunk - pos.base
            p = pos.at[i] if 0 <= i < pos.size else -1
        else:
            p = pos.find(chunk)
        return self._owner[p] if p >= 0 else default

    def __contains__(self, chunk: object) -> bool:
        return self._at(chunk) >= 0

    def many(self, chunks: np.ndarray) -> np.ndarray:
        """Each chunk's note, -1 for a chunk not held: one gather for the thousands of
        chunks a completion scores, where ``get`` is a Python call each."""
        found = self._map._chunk.find_many(np.asarray(chunks, dtype=np.int64))
        out = np.full(len(found), -1, dtype=np.int64)
        held = found >= 0
        out[held] = self._map.notes[found[held]]
        return out

    def __iter__(self) -> Iterator[int]:
        return iter(np.sort(self._map.chunks).tolist())

    def __len__(self) -> int:
        return len(self._owner)
