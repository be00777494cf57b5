"""Dense vectors: FAISS inner product over L2-normalised vectors, keyed by chunk id.

``IndexIDMap2`` lets a changed or deleted note's vectors really leave the index;
the design this project follows left orphans behind and the index grew without bound.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultsearch._runtime import prepare_openmp

prepare_openmp()

import faiss  # noqa: E402
import numpy as np  # noqa: E402

from vaultsearch.store.atomic import atomic_write_bytes  # noqa: E402

_threads = threading.local()


def _one_openmp_thread() -> None:
    """One query scans on one thread: a second OpenMP thread more than doubled the time of
    a 55k-vector search here (8.4 ms against 3.5 ms) while the other core runs the keyword
    branch. OpenMP keeps this setting per calling thread, so it is made in each thread
    that reads the index: set once at import, it held for the main thread only, and the
    query pool's searches ran on two."""
    if not getattr(_threads, "single", False):
        faiss.omp_set_num_threads(1)
        _threads.single = True


def dot_rows(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row's inner product with ``query``, the same for the same row wherever it sits.
    BLAS's matrix-vector product rounds rows apart by their position (35 of 59 stack
    heights gave one repeated row two values): identical notes then fused 1e-7 apart and
    ranked by that noise instead of by path."""
    return np.einsum("ij,j->i", rows, query)


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class VectorIndex:
    def __init__(self, dim: int, index: Any = None, half: bool = False) -> None:
        """``half`` stores each component as float16: half the memory, and cosines within
        ~1e-3 of float32, for the sentence vectors (several per chunk) that are only
        ever scored, never searched."""
        self.dim = dim
        if index is None:
            flat = (
                faiss.IndexScalarQuantizer(
                    dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
                )
                if half
                else faiss.IndexFlatIP(dim)
            )
            index = faiss.IndexIDMap2(flat)
        # Any: faiss's SWIG stubs describe the C++ signatures, not the numpy wrappers
        self.index: Any = index

    @classmethod
    def load(cls, path: Path) -> VectorIndex:
        index = faiss.read_index(str(path))
        return cls(index.d, index)

    def serialized(self) -> bytes:
        return bytes(faiss.serialize_index(self.index).tobytes())

    def save(self, path: Path) -> None:
        atomic_write_bytes(path, self.serialized())

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        return faiss.vector_to_array(self.index.id_map).astype(np.int64)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Every id and its stored code (one row of bytes per vector), sorted by id: one
        matrix that numpy slices without a lookup per id; ``decode`` turns rows back
        into vectors."""
        inner: Any = faiss.downcast_index(self.index.index)
        ids = self.ids()
        codes = faiss.vector_to_array(inner.codes).reshape(len(ids), inner.code_size)
        if len(ids) < 2 or bool(np.all(ids[1:] > ids[:-1])):  # as built: no second copy
            return ids, codes
        order = np.argsort(ids, kind="stable")
        return ids[order], codes[order]

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Code rows of an index of this kind as float32 vectors, by FAISS's SIMD decoder
        (numpy's float16 conversion took 2.4 times as long)."""
        _one_openmp_thread()
        return np.asarray(self.index.index.sa_decode(np.ascontiguousarray(codes)))

    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        if len(ids) == 0:
            return
        vectors = normalize(vectors)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vector dimension {vectors.shape[1]} != index dimension {self.dim}")
        self.index.add_with_ids(vectors, np.asarray(ids, dtype=np.int64))

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        if len(ids) == 0:
            return 0
        return int(self.index.remove_ids(np.asarray(ids, dtype=np.int64)))

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top-k (chunk id, cosine) pairs; ``allowed`` restricts the search inside FAISS
        so that a filtered query still gets k results when k exist."""
        if self.index.ntotal == 0 or k <= 0:
            return []
        params = None
        if allowed is not None:
            if len(allowed) == 0:
                return []
            selector = faiss.IDSelectorBatch(allowed.astype(np.int64))
            params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
        k = min(k, int(self.index.ntotal))
        _one_openmp_thread()
        scores, ids = self.index.search(normalize(query), k, params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i != -1]

    def score(self, query: np.ndarray, ids: Sequence[int] | np.ndarray) -> list[tuple[int, float]]:
        """The cosine of each given chunk id: the exact score of a chunk that a top-k
        search did not reach. An id the index does not hold is left out."""
        wanted = np.fromiter(dict.fromkeys(int(i) for i in ids), dtype=np.int64)
        if len(wanted) == 0 or self.index.ntotal == 0:
            return []
        _one_openmp_thread()
        try:
            rows = self.index.reconstruct_batch(wanted)
        except RuntimeError:  # an unknown id; rare enough to go one by one
            found = []
            for i in wanted:
                try:
                    found.append((int(i), self.index.reconstruct(int(i))))
                except RuntimeError:
                    continue
            if not found:
                return []
            wanted = np.array([i for i, _ in found], dtype=np.int64)
            rows = np.vstack([r for _, r in found])
        cosines = dot_rows(rows, normalize(query)[0])
        return [(int(i), float(c)) for i, c in zip(wanted, cosines, strict=True)]
