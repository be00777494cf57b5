"""FAISS as a derived index: one vector per catalog chunk, from the embedding store."""

from __future__ import annotations

from typing import Any

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings
from vaultsearch.store.layout import Generation
from vaultsearch.store.vectors import VectorIndex


class VectorPart:
    name = "vectors"

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = generation.vectors
        self.settings = settings
        self.index = VectorIndex(settings.dimension)

    def open(self, fresh: bool) -> None:
        if fresh or not self.path.is_file():
            self.index = VectorIndex(self.settings.dimension)
            return
        index = VectorIndex.load(self.path)
        if index.dim != self.settings.dimension:
            raise ValueError(f"dimension {index.dim} != {self.settings.dimension}")
        self.index = index

    def level_with(self, catalog: Catalog) -> bool:
        want = set(catalog.chunk_ids())
        have = set(self.index.ids().tolist())
        extra, missing = sorted(have - want), sorted(want - have)
        if not extra and not missing:
            return False
        self.index.remove(extra)
        self.index.add(
            missing, catalog.vectors_by_ids(self.settings.embedding_key, self.index.dim, missing)
        )
        return True

    def apply(self, batch: Batch) -> None:
        self.index.remove(batch.removed_chunks)
        ids = list(batch.added_chunks)
        self.index.add(
            ids, batch.catalog.vectors_by_ids(self.settings.embedding_key, self.index.dim, ids)
        )

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        self.index.save(self.path)
        return {"vectors": len(self.index)}

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        try:
            index = VectorIndex.load(self.path)
            ids = index.ids()
        except Exception as exc:
            return [f"vectors: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
        problems = []
        if index.dim != self.settings.dimension:
            problems.append(f"vectors: dimension {index.dim} != {self.settings.dimension}")
            return problems
        if len(ids) != len(set(ids.tolist())):
            problems.append("vectors: duplicate ids")
        want = set(catalog.chunk_ids())
        have = set(ids.tolist())
        if extra := have - want:
            problems.append(f"vectors: {len(extra)} entries for chunks the catalog does not have")
        if missing := want - have:
            problems.append(f"vectors: {len(missing)} catalog chunks missing")
        if not problems and self.path.read_bytes() != self._rebuilt(catalog, ids.tolist()):
            problems.append("vectors: the file differs from the stored embeddings")
        return problems

    def _rebuilt(self, catalog: Catalog, ids: list[int]) -> bytes:
        """The file a writer would have written for these ids in this order: any changed
        byte of the real one (a vector, an id, the header) differs from it."""
        fresh = VectorIndex(self.settings.dimension)
        fresh.add(ids, catalog.vectors_by_ids(self.settings.embedding_key, fresh.dim, ids))
        return fresh.serialized()

    def reader(self) -> Any:
        if not self.path.is_file():
            return VectorIndex(self.settings.dimension)
        return VectorIndex.load(self.path)
