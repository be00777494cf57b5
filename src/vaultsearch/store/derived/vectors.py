"""FAISS as a derived index: one vector per catalog chunk, from the embedding store.

The sentence index (``sentences.py``) is this class with several rows per chunk: it
overrides the hooks (``_path``, ``_rows``, ``_chunk_of``, ``_remove``, ``_wanted``) and
``reader``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.store.atomic import atomic_write_bytes
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings
from vaultsearch.store.layout import Generation
from vaultsearch.store.manifest import file_crc32
from vaultsearch.store.vectors import VectorIndex


class VectorPart:
    name = "vectors"
    half = False

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = self._path(generation)
        self.settings = settings
        self.index = self._empty()

    @staticmethod
    def _path(generation: Generation) -> Path:
        return generation.vectors

    def _rows(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The (row id, vector) pairs these chunks put in the index."""
        key, dim = self.settings.embedding_key, self.settings.dimension
        return np.asarray(chunk_ids, dtype=np.int64), catalog.vectors_by_ids(key, dim, chunk_ids)

    def _chunk_of(self, row_ids: np.ndarray) -> np.ndarray:
        return row_ids

    def _wanted(self, catalog: Catalog) -> set[int]:
        """The chunks that must have rows."""
        return set(catalog.chunk_ids())

    def _empty(self) -> VectorIndex:
        return VectorIndex(self.settings.dimension, half=self.half)

    def open(self, fresh: bool) -> None:
        if fresh or not self.path.is_file():
            self.index = self._empty()
            return
        index = VectorIndex.load(self.path)
        if index.dim != self.settings.dimension:
            raise ValueError(f"dimension {index.dim} != {self.settings.dimension}")
        self.index = index

    def level_with(self, catalog: Catalog) -> bool:
        want = self._wanted(catalog)
        have = set(self._chunk_of(self.index.ids()).tolist())
        extra, missing = sorted(have - want), sorted(want - have)
        if not extra and not missing:
            return False
        self._remove(extra)
        self.index.add(*self._rows(catalog, missing))
        return True

    def _remove(self, chunk_ids: Sequence[int]) -> None:
        """Here a row id is the chunk id: no need to read the index's ids."""
        self.index.remove(chunk_ids)

    def apply(self, batch: Batch) -> None:
        self._remove(batch.removed_chunks)
        self.index.add(*self._rows(batch.catalog, list(batch.added_chunks)))

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        data = self.index.serialized()
        atomic_write_bytes(self.path, data)
        # FAISS files have no checksum: a reader compares this one at open (one pass
        # over bytes it reads anyway), where ``check`` rebuilds the file to compare
        return {self.name: len(self.index), f"{self.name}_crc32": zlib.crc32(data)}

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        try:
            index = VectorIndex.load(self.path)
            ids = index.ids()
        except Exception as exc:
            return [f"{self.name}: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
        problems = []
        if index.dim != self.settings.dimension:
            problems.append(f"{self.name}: dimension {index.dim} != {self.settings.dimension}")
            return problems
        if len(ids) != len(set(ids.tolist())):
            problems.append(f"{self.name}: duplicate ids")
        want = self._wanted(catalog)
        have = set(self._chunk_of(ids).tolist())
        if extra := have - want:
            problems.append(
                f"{self.name}: {len(extra)} entries for chunks the catalog does not have"
            )
        if missing := want - have:
            problems.append(f"{self.name}: {len(missing)} catalog chunks missing")
        if not problems and self.path.read_bytes() != self._rebuilt(catalog, ids):
            problems.append(f"{self.name}: the file differs from the stored embeddings")
        return problems

    def _rebuilt(self, catalog: Catalog, ids: np.ndarray) -> bytes:
        """The file a writer would have written for these rows in this order: any changed
        byte of the real one (a vector, an id, the header) differs from it."""
        chunks = list(dict.fromkeys(self._chunk_of(ids).tolist()))
        rows, vectors = self._rows(catalog, chunks)
        order = {int(r): i for i, r in enumerate(rows)}
        fresh = self._empty()
        if all(int(i) in order for i in ids):
            picked = [order[int(i)] for i in ids]
            fresh.add(rows[picked], vectors[picked])
        return fresh.serialized()

    def reader(self) -> Any:
        if not self.path.is_file():
            return self._empty()
        return VectorIndex.load(self.path)

    def damage(self, state: dict[str, Any]) -> str | None:
        """Why a search cannot trust this file, found cheaply at open (no rebuild): gone,
        or not the bytes the writer recorded in the state file."""
        recorded = state.get(self.name)
        if not self.path.is_file():
            return f"{self.path.name} is missing" if recorded else None
        crc = state.get(f"{self.name}_crc32")
        if crc is not None and crc != file_crc32(self.path):
            return f"{self.path.name} differs from the checksum the writer recorded"
        return None
