"""An approximate index beside a large vector segment: candidates, never scores.

Past ``[index] ann_threshold`` rows a flat scan costs more than a query may
(bench/ann.py), so the writer builds a FAISS graph over the segment's rows, once, into a
file as immutable as the segment (hard-linked by the generations that keep it, its
digest in the list). A search asks it for a few more candidates than it needs and
scores them exactly from the segment's own rows by the flat kernel: a hit's score is
the one a flat scan gives, the index holds compact codes (a quarter of a byte a
dimension, not a second copy of the rows), and tombstones and ``allowed`` are a bitmap
selector inside the graph walk. Below the threshold, or with few rows selected, the
scan stays flat, so small vaults rank exactly as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultsearch._runtime import prepare_openmp

prepare_openmp()

import faiss  # noqa: E402
import numpy as np  # noqa: E402

KINDS = ("hnsw16pq",)
"""What an ``ann`` entry of a segment list may name. The kind names the structure, so a
writer that meets a segment indexed by another kind (an older ``hnsw``, HNSW32 over
8-bit codes) writes the file again (``_approximate`` in ``store/derived/vectors.py``)."""
DEFAULT_KIND = "hnsw16pq"
NEIGHBOURS = 16
CODE_BYTES = 96
"""Product-quantizer codes of a row: one byte per 4 dimensions (at 384). With 2 x 16
neighbour ids the file holds about 247 bytes a row where HNSW32 over 8-bit codes held
656, which took a 200k-chunk index past 4 KB a chunk. bench/ann_candidates.py on 56,798
rows: 64-byte codes (215 bytes a row) stayed under recall@10 0.95 even re-scoring 16
candidates a result (0.944); 96-byte codes reach 0.9566 re-scoring 8 (0.9545 with 4,
but semantic nDCG@10 then fell 0.0063 below flat's; with 8, 0.0028)."""
PQ_MIN_ROWS = 9_984
"""FAISS trains each of PQ's 256 centroids from 39 rows or more; a smaller segment (a
low ``ann_threshold``) gets 8-bit scalar codes under the same graph instead."""
BUILD_DEPTH = 40
SEARCH_DEPTH = 128
"""efSearch, or the candidates asked for when they are more."""
OVERSAMPLE = 8
"""Candidates asked for per result wanted, re-scored exactly: coarse codes misorder
near neighbours, the float16 rows put them back in order."""
MIN_SELECTED = 0.5
"""Below this share of a segment's rows selected (a narrow ``allowed``) the graph walk
passes mostly filtered nodes and loses recall; the selected rows are scanned instead."""


def resolve(setting: str) -> str | None:
    """The kind of index a ``vector_index`` setting builds; None for flat (``auto`` and
    ``hnsw`` both name the current kind)."""
    return None if setting == "flat" else DEFAULT_KIND


def build(kind: str, rows: np.ndarray) -> bytes:
    """The serialized index over ``rows`` (unit vectors), positions as labels. PQ
    compares by L2, which ranks unit vectors as inner product does; the candidates are
    re-scored by inner product anyway."""
    if kind not in KINDS:
        raise ValueError(f"unknown approximate index {kind!r}")
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    dim = rows.shape[1]
    index: Any
    if len(rows) >= PQ_MIN_ROWS and dim % CODE_BYTES == 0:
        index = faiss.IndexHNSWPQ(dim, CODE_BYTES, NEIGHBOURS)  # type: ignore[arg-type]  # the stub is wrong
    else:
        index = faiss.IndexHNSWSQ(
            dim,
            faiss.ScalarQuantizer.QT_8bit,  # type: ignore[arg-type]  # the stub is wrong
            NEIGHBOURS,
            faiss.METRIC_INNER_PRODUCT,
        )
    index.hnsw.efConstruction = BUILD_DEPTH
    index.train(rows)
    index.add(rows)
    return bytes(faiss.serialize_index(index))


def load(path: Path) -> Any:
    """The index in a file (whose digest the caller has checked), its codes and
    neighbour lists mapped rather than copied: their pages are the page cache's (clean,
    shared with other readers, reclaimable) rather than the heap's, and dropping the
    index gives them all back, which an idle reader does (``Segment.release_pages``).
    Read whole, the index of a 498,875-row segment (a 120 MB file) took 138 MB of
    anonymous memory; mapped, 30 MB, and the same candidates come back (the file is
    immutable, like the segment it belongs to)."""
    return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)


def load_bytes(body: bytes) -> Any:
    return faiss.deserialize_index(np.frombuffer(body, dtype=np.uint8))


def candidates(index: Any, query: np.ndarray, k: int, mask: np.ndarray | None) -> np.ndarray:
    """Positions of up to ``OVERSAMPLE * k`` rows near ``query`` among those ``mask``
    selects (all when None)."""
    want = OVERSAMPLE * k
    params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]
    params.efSearch = max(SEARCH_DEPTH, want)
    _kept = restrict(params, mask)
    _, labels = index.search(query.reshape(1, -1), want, params=params)
    found = labels[0]
    return np.sort(found[found >= 0])


def restrict(params: Any, mask: np.ndarray | None) -> np.ndarray | None:
    """``params`` limited to the positions ``mask`` selects (all when None), as a bitmap
    selector. Returns the bitmap, which the caller keeps until the search returns: FAISS
    reads it through a raw pointer and would read freed memory once it is collected."""
    if mask is None:
        return None
    bitmap = np.packbits(mask, bitorder="little")
    params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
    return bitmap
