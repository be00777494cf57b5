"""Ranking ideas measured without a product setting: each rewrites one query's branch
results before ``QueryOrchestrator.rank`` fuses them, so the fusion measured is the one
that ships, and an idea that wins moves into the product unchanged.

- ``("prf", n, w)``: dense pseudo-relevance feedback (Rocchio on vectors; Li et al.,
  "Pseudo relevance feedback with deep language models and dense retrievers", ECIR
  2022). The query vector moves toward the best chunks of the first fused pass's top
  ``n`` notes, the semantic branch is searched again from there, then fused again.
- ``("pool", method, p)``: a note's semantic score pooled from its retrieved chunks
  (``top2``: mean of the best two; ``lse``: p x log-sum-exp of score / p, a soft max)
  instead of its best chunk alone.
- ``("uncompleted",)``: the branches fused as retrieved, without the scores the
  completion step adds (``ranking.complete``): what search did before it shipped.
- ``("floor", c)``: ``c`` taken off every cosine before fusion, so tm2c2 divides by the
  best cosine above a theoretical minimum of ``c`` instead of 0 (MiniLM gives unrelated
  passages cosines well above 0, which squeezes the semantic scores into the top half).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from vaultsearch.search.orchestrator import Retrieved
from vaultsearch.search.ranking import Candidate

Variant = tuple[str | int | float, ...]
Hits = list[tuple[int, float]]


def rocchio(query: np.ndarray, feedback: np.ndarray, weight: float) -> np.ndarray:
    """``normalise(q/|q| + weight * mean of the unit feedback rows)``, float32; the
    normalised query alone without feedback or at weight 0."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    q = q / (np.linalg.norm(q) or 1.0)
    rows = np.asarray(feedback, dtype=np.float32).reshape(-1, q.shape[0])
    if weight > 0 and len(rows):
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        q = q + weight * rows.mean(axis=0)
    norm = float(np.linalg.norm(q))
    return (q / norm if norm > 0 else q).astype(np.float32)


def pool_notes(hits: Hits, note_of: Mapping[int, int], method: str, param: float) -> Hits:
    """One (best chunk, pooled score) pair per note, best first: fusion then scores the
    note by that pair exactly as it scores a note by its best chunk."""
    chunks: dict[int, list[tuple[int, float]]] = {}
    for cid, score in hits:
        nid = note_of.get(cid)
        if nid is not None:
            chunks.setdefault(nid, []).append((cid, score))
    out = []
    for found in chunks.values():
        scores = sorted((s for _, s in found), reverse=True)
        if method == "top2":
            pooled = sum(scores[:2]) / len(scores[:2])
        elif method == "lse":
            top = scores[0]
            pooled = top + param * math.log(sum(math.exp((s - top) / param) for s in scores))
        else:
            raise ValueError(f"unknown pooling {method!r}; use top2 or lse")
        out.append((found[0][0], pooled))
    return sorted(out, key=lambda x: (-x[1], x[0]))


def apply(
    variant: Variant,
    retrieved: Retrieved,
    rank: Callable[[Retrieved], list[Candidate]],
    note_of: Mapping[int, int],
    vector: np.ndarray,
    chunk_vectors: Callable[[Sequence[int]], np.ndarray],
    search: Callable[[np.ndarray, int], Hits],
) -> list[Candidate]:
    """The ranking of ``retrieved`` under ``variant``; ``rank`` is the orchestrator's."""
    sem = retrieved.branches.get("semantic")
    if not variant or not sem:
        return rank(retrieved)
    name = variant[0]
    if name == "uncompleted":
        return rank(replace(retrieved, completion={}))
    if name == "prf":
        notes, weight = int(variant[1]), float(variant[2])
        first = rank(retrieved)
        query = rocchio(vector, chunk_vectors([c.chunks[0] for c in first[:notes]]), weight)
        again = search(query, len(sem))
        completion = {b: h for b, h in retrieved.completion.items() if b != "semantic"}
        return rank(
            replace(
                retrieved,
                branches={**retrieved.branches, "semantic": again},
                completion=completion,
            )
        )
    if name == "pool":
        pooled = pool_notes(sem, note_of, str(variant[1]), float(variant[2]))
        return rank(replace(retrieved, branches={**retrieved.branches, "semantic": pooled}))
    if name == "floor":
        floor = float(variant[1])
        shifted = [(cid, score - floor) for cid, score in sem]
        extra = [(cid, score - floor) for cid, score in retrieved.completion.get("semantic", [])]
        return rank(
            replace(
                retrieved,
                branches={**retrieved.branches, "semantic": shifted},
                completion={**retrieved.completion, "semantic": extra},
            )
        )
    raise ValueError(f"unknown variant {variant!r}")
