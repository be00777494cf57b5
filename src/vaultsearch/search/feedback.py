"""Dense pseudo-relevance feedback: the query vector moved toward its first results.

A short query embeds far from the long passages that answer it; the notes the first
fused pass ranks highest (keyword evidence included) are usually on topic, so their
centroid carries the vocabulary the query lacks (Rocchio on vectors: Li et al., "Pseudo
relevance feedback with deep language models and dense retrievers", ECIR 2022). Pure,
so a test can check the geometry and the tuning bench runs exactly this.
"""

from __future__ import annotations

import numpy as np


def rocchio(query: np.ndarray, feedback: np.ndarray, weight: float) -> np.ndarray:
    """``normalise(q + weight * mean(feedback rows))`` as a unit float32 vector; the
    query alone (normalised) when there is no feedback or the weight is 0."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    q = q / (np.linalg.norm(q) or 1.0)
    rows = np.asarray(feedback, dtype=np.float32).reshape(-1, q.shape[0])
    if weight > 0 and len(rows):
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        q = q + weight * rows.mean(axis=0)
    norm = float(np.linalg.norm(q))
    return (q / norm if norm > 0 else q).astype(np.float32)
