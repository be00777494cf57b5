"""The sentence vectors as a derived index: every sentence unit of every chunk
(``parsers/sentences.py``), keyed ``chunk id << SENTENCE_BITS | unit``.

Searches never scan it: it is a re-scorer, whose ``search`` scores the sentences of the
chunks the branches found (``allowed``; ``SentenceVectors.best``), so it is kept in
int8 codes (a quarter of float32; ``store/vectors.encode``: the scale of a row is its
codes' norm, so it costs no bytes), and each segment keeps its rows in id order, so
that the sentences of a chunk are one slice of it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.store.catalog import SENTENCE_BITS, Catalog
from vaultsearch.store.derived.base import DerivedSettings, Query, Role
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.layout import Generation
from vaultsearch.store.segments import Entry, Segment
from vaultsearch.store.vectors import decode, dot_rows, encode, normalize


class SentencePart(VectorPart):
    name = "sentences"
    role: Role = "rescore"
    branch = "sentences"
    label = "the sentence vectors"
    count_key: str | None = "sentences"
    completes = False
    dtype = "int8"
    sorted_rows = True
    approximate = False

    @staticmethod
    def location(generation: Generation) -> Path:
        return generation.root / "sentences.json"

    def _units(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, list[str]]:
        if not self.settings.sentences:
            return np.zeros(0, dtype=np.int64), []
        return catalog.sentence_units(chunk_ids)

    def _chunk_of(self, row_ids: np.ndarray) -> np.ndarray:
        return row_ids >> SENTENCE_BITS

    def _remove(self, chunk_ids: Sequence[int]) -> None:
        """A chunk's sentences are one id range: found by binary search in each
        segment's ids, not by reading every sentence id of the index."""
        if len(chunk_ids) == 0:
            return
        chunks = np.unique(np.asarray(chunk_ids, dtype=np.int64))
        lo, hi = chunks << SENTENCE_BITS, (chunks + 1) << SENTENCE_BITS
        found = []
        held = [(np.asarray(s.ids), s.order) for s in self.segments]
        for ids, order in [*held, *((i, np.argsort(i)) for i, _ in self.pending)]:
            ordered = ids if order is None else ids[order]
            starts, ends = np.searchsorted(ordered, lo), np.searchsorted(ordered, hi)
            found += [ordered[a:b] for a, b in zip(starts, ends, strict=True) if b > a]
        if found:
            self._remove_rows(np.concatenate(found))

    def _wanted(self, catalog: Catalog) -> set[int]:
        """Every chunk, unless ``embedding.sentences`` is off: then none."""
        return super()._wanted(catalog) if self.settings.sentences else set()

    def reader(self, previous: Any = None) -> Any:
        if not self.path.is_file():
            return self.empty(self.settings)
        return SentenceVectors(*self._segments(previous))

    @classmethod
    def empty(cls, settings: DerivedSettings) -> Any:
        return SentenceVectors(settings.dimension)


class SentenceVectors:
    """What a search reads: the segments' rows, found by chunk with a binary search of
    each segment's (mapped) ids, in id order, and read by position from the rows file
    (``Segment.take_rows``). Scoring a few thousand of them by FAISS id lookups cost
    ~2 ms a query at 279,135 sentences; slices cost a fraction of that."""

    def __init__(self, dim: int, segments: Sequence[Segment] = ()) -> None:
        self.dim = dim
        self.segments = list(segments)

    @classmethod
    def from_arrays(cls, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> SentenceVectors:
        """One segment held in memory, stored as the writer stores it (tests, tools)."""
        ids = np.asarray(ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        rows = encode(vectors, SentencePart.dtype)[order]
        entry = Entry("memory", len(ids), (), ("", ""))
        return cls(rows.shape[1], [Segment(entry, ids=ids[order], rows=rows)])

    def __len__(self) -> int:
        return sum(s.entry.live for s in self.segments)

    @functools.cached_property
    def _chunks(self) -> list[np.ndarray]:
        return [np.asarray(s.ids) >> SENTENCE_BITS for s in self.segments]

    def _decoded(self, seg: Segment, rows: np.ndarray) -> np.ndarray:
        """These rows of a segment as float32 (bench/sentence_storage.py compares other
        storage by overriding this)."""
        return decode(seg.take_rows(rows))

    def search(self, query: Query, k: int, allowed: Any = None) -> list[tuple[int, float]]:
        """The ``allowed`` chunks by their best sentence (every chunk when None: a full
        scan, which a search never asks for)."""
        if query.vector is None:
            return []
        chunks = np.concatenate(self._chunks) if allowed is None and self._chunks else allowed
        return self.best(query.vector, [] if chunks is None else chunks)[:k]

    def best(
        self, query: np.ndarray, chunk_ids: Sequence[int] | np.ndarray
    ) -> list[tuple[int, float]]:
        """Each given chunk that has sentences, with its best sentence's cosine, best first
        (ties by chunk id)."""
        chunks = np.unique(np.asarray(chunk_ids, dtype=np.int64))
        if not len(chunks) or not len(self):
            return []
        q = normalize(query)[0]
        found: list[np.ndarray] = []
        best: list[np.ndarray] = []
        for seg, owners in zip(self.segments, self._chunks, strict=True):
            lo = np.searchsorted(owners, chunks, "left")
            counts = np.searchsorted(owners, chunks, "right") - lo
            if not counts.any():
                continue
            starts = np.cumsum(counts) - counts
            rows = np.repeat(lo - starts, counts) + np.arange(counts.sum())
            if seg.live_mask is not None:
                rows = rows[seg.live_mask[rows]]
                if not len(rows):
                    continue
            owner = owners[rows]
            first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            scores = dot_rows(self._decoded(seg, rows), q)
            found.append(owner[first])
            best.append(np.maximum.reduceat(scores, first))
        if not found:
            return []
        got, top = np.concatenate(found), np.concatenate(best)
        order = np.lexsort((got, -top))
        seen: set[int] = set()
        out = []
        for i in order:  # a chunk in two segments (an id used again) counts its best once
            if (c := int(got[i])) not in seen:
                seen.add(c)
                out.append((c, float(top[i])))
        return out
