"""An approximate index beside a large vector segment: candidates, never scores.

Past ``[index] ann_threshold`` rows a flat scan costs more than a query may
(bench/ann.py), so the writer builds a FAISS graph over the segment's rows, once, into a
file as immutable as the segment (hard-linked by the generations that keep it, its
digest in the list). A search asks it for a few more candidates than it needs and
scores them exactly from the segment's own rows by the flat kernel: a hit's score is
the one a flat scan gives, the index holds compact codes (8 bits a dimension, not a
second float32 copy), and tombstones and ``allowed`` are a bitmap selector inside the
graph walk. Below the threshold, or with few rows selected, the scan stays flat, so
small vaults rank exactly as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultsearch._runtime import prepare_openmp

prepare_openmp()

import faiss  # noqa: E402
import numpy as np  # noqa: E402

KINDS = ("hnsw",)
"""What ``[index] vector_index`` may name besides ``auto`` and ``flat``."""
DEFAULT_KIND = "hnsw"
NEIGHBOURS = 32
BUILD_DEPTH = 40
SEARCH_DEPTH = 128
"""efSearch: recall@10 0.95 or more on every set of bench/ann.py before re-scoring."""
OVERSAMPLE = 2
"""Candidates asked for per result wanted, re-scored exactly."""
MIN_SELECTED = 0.5
"""Below this share of a segment's rows selected (a narrow ``allowed``) the graph walk
passes mostly filtered nodes and loses recall; the selected rows are scanned instead."""


def resolve(setting: str) -> str | None:
    """The kind of index a ``vector_index`` setting builds; None for flat."""
    if setting == "flat":
        return None
    return DEFAULT_KIND if setting == "auto" else setting


def build(kind: str, rows: np.ndarray) -> bytes:
    """The serialized index over ``rows`` (unit vectors), positions as labels."""
    if kind not in KINDS:
        raise ValueError(f"unknown approximate index {kind!r}")
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    index = faiss.IndexHNSWSQ(
        rows.shape[1],
        faiss.ScalarQuantizer.QT_8bit,  # type: ignore[arg-type]  # the stub is wrong
        NEIGHBOURS,
        faiss.METRIC_INNER_PRODUCT,
    )
    index.hnsw.efConstruction = BUILD_DEPTH
    index.train(rows)
    index.add(rows)
    return bytes(faiss.serialize_index(index))


def load(path: Path) -> Any:
    """The index in a file (whose digest the caller has checked)."""
    return faiss.read_index(str(path))


def load_bytes(body: bytes) -> Any:
    return faiss.deserialize_index(np.frombuffer(body, dtype=np.uint8))


def candidates(index: Any, query: np.ndarray, k: int, mask: np.ndarray | None) -> np.ndarray:
    """Positions of up to ``OVERSAMPLE * k`` rows near ``query`` among those ``mask``
    selects (all when None)."""
    want = OVERSAMPLE * k
    params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]
    params.efSearch = max(SEARCH_DEPTH, want)
    if mask is not None:
        bitmap = np.packbits(mask, bitorder="little")
        params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
    _, labels = index.search(query.reshape(1, -1), want, params=params)
    found = labels[0]
    return np.sort(found[found >= 0])
