"""The sentence vectors as a derived index: every sentence unit of every chunk
(``parsers/sentences.py``), keyed ``chunk id << SENTENCE_BITS | unit``.

Searches never scan it: a query scores the sentences of the notes its branches found
(``search/sentences.py``), so it is kept in float16, half the memory of float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vaultsearch.store.catalog import SENTENCE_BITS, Catalog
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.layout import Generation


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

    def _wanted(self, catalog: Catalog) -> set[int]:
        """Every chunk, unless ``embedding.sentences`` is off: then none."""
        return super()._wanted(catalog) if self.settings.sentences else set()

    def _chunk_of(self, row_ids: np.ndarray) -> np.ndarray:
        return row_ids >> SENTENCE_BITS
