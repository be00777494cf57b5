"""A chunk map that is the previous snapshot's with a few notes' chunks changed: what a
reader following a writer holds instead of new columns for every chunk.

``ChunksByNote.replaced`` copies both million-entry columns and rebuilds the position
table of every chunk on each followed edit (20-49 ms of a million-chunk reader's 60 ms,
``bench/edit_stages.py``). A layer hides the changed notes of a base map and holds their
new chunks in two small dicts, so an edit costs what it changed (plus a copy of the
layer, which stays small: past a share of the base it is folded into new columns, one
whole rebuild per ``len(base) / FOLD`` changed chunks rather than one per edit). It
answers as the map a full load builds (``tests/test_chunkmap.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from vaultsearch.search.chunkmap import ChunksByNote, NoteOfChunk

FOLD = 64
"""The layer is folded once the chunks it hides and holds pass ``len(base) / FOLD``..."""
FOLD_AT_LEAST = 2048
"""...and never below this many: a small vault folds rarely, and copies little when it does."""


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class LayeredChunks(ChunksByNote):
    """``base`` (never changed) less the notes in ``gone`` (base notes whose chunks
    changed or went), plus ``top`` (note -> its chunk ids now, for the changed notes
    that have chunks). Reads go to the base's columns; the parent's are not built."""

    __slots__ = (
        "_base",
        "_gone",
        "_gone_ids",
        "_hidden",
        "_owner",
        "_top",
        "_top_ids",
        "_top_keys",
    )

    def __init__(
        self,
        base: ChunksByNote,
        gone: frozenset[int],
        top: dict[int, np.ndarray],
        hidden: int,
    ) -> None:
        self._base, self._gone, self._top, self._hidden = base, gone, top, hidden
        self._gone_ids = _frozen(np.fromiter(gone, dtype=np.int64, count=len(gone)))
        self._top_keys = _frozen(np.sort(np.fromiter(top, dtype=np.int64, count=len(top))))
        self._owner = {int(c): n for n, cs in top.items() for c in cs.tolist()}
        ids = np.fromiter(self._owner, dtype=np.int64, count=len(self._owner))
        order = np.argsort(ids, kind="stable")
        owners = np.fromiter(self._owner.values(), dtype=np.int64, count=len(self._owner))
        self._top_ids = (_frozen(ids[order]), _frozen(owners[order]))
        self.note_of_chunk = LayeredNoteOfChunk(self)

    def size(self) -> int:
        """Chunks the layer hides or holds: what folding it would save."""
        return self._hidden + len(self._owner)

    def whole(self) -> ChunksByNote:
        """The same map as plain columns (the fold): the base's ``replaced``."""
        notes = sorted(self._top)
        pairs = np.zeros((0, 2), dtype=np.int64)
        if notes:
            add_chunks = np.concatenate([self._top[n] for n in notes])
            counts = [len(self._top[n]) for n in notes]
            add_notes = np.repeat(np.array(notes, dtype=np.int64), counts)
            pairs = np.column_stack([add_chunks, add_notes])
        return self._base.replaced(self._gone_ids.tolist(), pairs)

    # --- reading ------------------------------------------------------------------
    def __getitem__(self, note: int) -> np.ndarray:
        got = self.get(note)
        if got is None:
            raise KeyError(note)
        return got

    def get(self, note: int, default: Any = None) -> Any:
        try:
            got = self._top.get(note)
        except TypeError:  # unhashable: no such note, as a dict says
            return default
        if got is not None:
            return got
        if note in self._gone:
            return default
        return self._base.get(note, default)

    def __contains__(self, note: object) -> bool:
        return self.get(note) is not None  # type: ignore[arg-type]

    def _keys_now(self) -> np.ndarray:
        keys = self._base._keys
        keys = keys[~np.isin(keys, self._gone_ids)]
        return np.sort(np.concatenate([keys, np.fromiter(self._top, dtype=np.int64)]))

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys_now().tolist())

    def __len__(self) -> int:
        return len(self._base) - len(self._gone) + len(self._top)

    def of_notes(self, notes: Iterable[int]) -> np.ndarray:
        """The base's gather for its notes, the layer's notes' chunks put in between
        by note order (a filter may allow most of the vault's notes: array work)."""
        wanted = np.unique(np.fromiter(notes, dtype=np.int64))
        on_top = np.isin(wanted, self._top_keys)
        kept = wanted[~on_top & ~np.isin(wanted, self._gone_ids)]
        from_base = self._base._of_unique(kept)
        added = wanted[on_top].tolist()
        if not added:
            return from_base
        base = self._base
        found = base._note.find_many(kept)
        lengths = np.zeros(len(kept), dtype=np.int64)
        held = found >= 0
        lengths[held] = base._starts[found[held] + 1] - base._starts[found[held]]
        ends = np.r_[0, np.cumsum(lengths)]  # chunks of ``kept``'s notes before each
        at = ends[np.searchsorted(kept, np.array(added, dtype=np.int64))]
        at = np.repeat(at, [len(self._top[n]) for n in added])
        return np.insert(from_base, at, np.concatenate([self._top[n] for n in added]))


class LayeredNoteOfChunk(NoteOfChunk):
    """Chunk id -> note id of a ``LayeredChunks``: its layer first, then the base's
    columns for a chunk whose note is not hidden."""

    __slots__ = ("_base_get", "_layer")

    def __init__(self, layered: LayeredChunks) -> None:
        self._layer = layered
        self._map = layered._base
        self._base_get = layered._base.note_of_chunk.get

    def get(self, chunk: int, default: Any = None) -> Any:
        """The layer's note of the chunk, else the base's unless the layer hides it."""
        layer = self._layer
        try:
            note = layer._owner.get(chunk)
        except TypeError:
            return default
        if note is not None:
            return note
        note = self._base_get(chunk)
        return default if note is None or note in layer._gone else note

    def __getitem__(self, chunk: int) -> int:
        note = self.get(chunk)
        if note is None:
            raise KeyError(chunk)
        return int(note)

    def __contains__(self, chunk: object) -> bool:
        return self.get(chunk) is not None  # type: ignore[arg-type]

    def many(self, chunks: np.ndarray) -> np.ndarray:
        chunks = np.asarray(chunks, dtype=np.int64)
        out = self._map.note_of_chunk.many(chunks)
        out[np.isin(out, self._layer._gone_ids)] = -1
        ids, owners = self._layer._top_ids
        if len(ids):
            i = np.minimum(np.searchsorted(ids, chunks), len(ids) - 1)
            hit = ids[i] == chunks
            out[hit] = owners[i[hit]]
        return out

    def __iter__(self) -> Iterator[int]:
        base = self._map
        kept = base.chunks[~np.isin(base.notes, self._layer._gone_ids)]
        return iter(np.sort(np.concatenate([kept, self._layer._top_ids[0]])).tolist())

    def __len__(self) -> int:
        return len(self._map.chunks) - self._layer._hidden + len(self._layer._owner)


def replaced(previous: ChunksByNote, notes: Iterable[int], pairs: np.ndarray) -> ChunksByNote:
    """``previous`` without the chunks of ``notes``, with ``pairs`` ((chunk id, note id)
    rows ordered by note, then chunk, of notes among ``notes``) in their place, as
    ``ChunksByNote.replaced`` gives; ``previous`` is not changed (a search may read it)."""
    if isinstance(previous, LayeredChunks):
        base, gone, top, hidden = (
            previous._base,
            set(previous._gone),
            dict(previous._top),
            previous._hidden,
        )
    else:
        base, gone, top, hidden = previous, set(), {}, 0
    for note in notes:
        top.pop(note, None)
        if note not in gone and (held := base.get(note)) is not None:
            gone.add(note)
            hidden += len(held)
    if len(pairs):
        starts = np.flatnonzero(np.r_[True, pairs[1:, 1] != pairs[:-1, 1]])
        for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(pairs)], strict=True):
            top[int(pairs[start, 1])] = _frozen(pairs[start:end, 0].copy())
    layer = LayeredChunks(base, frozenset(gone), top, hidden)
    if layer.size() > max(FOLD_AT_LEAST, len(base.chunks) // FOLD):
        return layer.whole()
    return layer
