"""The sentence vectors as a derived index: every sentence unit of every chunk
(``parsers/sentences.py``), keyed ``chunk id << SENTENCE_BITS | unit``.

Searches never scan it: a query scores the sentences of the chunks its branches found
(``SentenceVectors.best``), so it is kept in float16, half the memory of float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vaultsearch.store.catalog import SENTENCE_BITS, Catalog
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.layout import Generation
from vaultsearch.store.vectors import VectorIndex, dot_rows, normalize


class SentencePart(VectorPart):
    name = "sentences"
    half = True

    @staticmethod
    def _path(generation: Generation) -> Path:
        return generation.sentences

    def _rows(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        key, dim = self.settings.embedding_key, self.settings.dimension
        if not self.settings.sentences:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        return catalog.sentence_vectors(key, dim, chunk_ids)

    def _chunk_of(self, row_ids: np.ndarray) -> np.ndarray:
        return row_ids >> SENTENCE_BITS

    def _remove(self, chunk_ids: Sequence[int]) -> None:
        if len(chunk_ids) == 0:
            return
        rows = self.index.ids()
        self.index.remove(rows[np.isin(self._chunk_of(rows), np.asarray(chunk_ids))])

    def _wanted(self, catalog: Catalog) -> set[int]:
        """Every chunk, unless ``embedding.sentences`` is off: then none."""
        return super()._wanted(catalog) if self.settings.sentences else set()

    def reader(self) -> SentenceVectors:
        return SentenceVectors(super().reader())


class SentenceVectors:
    """What a search reads: every sentence vector in id order, so that the sentences of a
    chunk are one slice. Scoring a few thousand of them by FAISS id lookups cost ~2 ms a
    query at 279,135 sentences; slices of one matrix cost a fraction of that."""

    def __init__(self, index: VectorIndex) -> None:
        ids, self._codes = index.rows()
        self._chunks = ids >> SENTENCE_BITS
        self._decoder = VectorIndex(index.dim, half=True)  # empty: only its decoder is used

    def __len__(self) -> int:
        return len(self._chunks)

    def best(self, query: np.ndarray, chunk_ids: Sequence[int]) -> list[tuple[int, float]]:
        """Each given chunk that has sentences, with its best sentence's cosine, best first
        (ties by chunk id)."""
        chunks = np.unique(np.asarray(chunk_ids, dtype=np.int64))
        lo = np.searchsorted(self._chunks, chunks, "left")
        hi = np.searchsorted(self._chunks, chunks, "right")
        held = hi > lo
        chunks, lo, counts = chunks[held], lo[held], (hi - lo)[held]
        if not len(chunks):
            return []
        starts = np.cumsum(counts) - counts
        rows = np.repeat(lo - starts, counts) + np.arange(counts.sum())
        q = normalize(query)[0]
        best = np.maximum.reduceat(dot_rows(self._decoder.decode(self._codes[rows]), q), starts)
        order = np.lexsort((chunks, -best))
        return [(int(chunks[i]), float(best[i])) for i in order]
