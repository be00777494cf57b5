"""Training a linear map of the query vector, W = I + U Vᵀ, against the stored document
vectors of judged queries (issue 27: a better semantic signal with the bundled model).

Only the query side moves: every chunk and sentence vector stays as the model made it,
so an index never changes. The loss is a softmax over every note of the corpus of a
note's best chunk (and, weighted by ``sentence_share``, its best sentence) cosine with
the mapped query, temperature ``tau``, averaged over the query's relevant notes, plus
``lam`` ‖U Vᵀ‖² that holds the map near the identity the model was trained for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from query_map_data import Corpus, Judged


@dataclass(frozen=True)
class MapParams:
    rank: int = 32
    """Columns of U and V; 0 = a full 384×384 ΔW."""
    lam: float = 1.0
    tau: float = 0.05
    epochs: int = 20
    batch: int = 64
    lr: float = 2e-3
    sentence_share: float = 0.35
    """The sentence side's share of the loss: the shipped fusion's share of it in the
    semantic weight (0.21 of 0.6)."""
    seed: int = 11

    def describe(self) -> str:
        rank = "full" if not self.rank else f"r{self.rank}"
        return f"{rank} lam={self.lam:g} tau={self.tau:g} ep={self.epochs}"


@dataclass(frozen=True)
class QueryMap:
    """q -> unit(q + (q V) Uᵀ)."""

    u: np.ndarray
    v: np.ndarray

    def apply(self, queries: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        out = q + (q @ self.v) @ self.u.T
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    @classmethod
    def identity(cls, dim: int) -> QueryMap:
        return cls(np.zeros((dim, 1), np.float32), np.zeros((dim, 1), np.float32))


@dataclass(frozen=True)
class Part:
    """One dataset's share of the training: its corpus, the chosen queries, a weight."""

    corpus: Corpus
    judged: Judged
    rows: np.ndarray
    """Indexes into ``judged`` of the queries trained on (those with a positive)."""
    weight: float = 1.0


def fit(parts: Sequence[Part], p: MapParams) -> QueryMap:
    import torch

    torch.set_num_threads(2)
    torch.manual_seed(p.seed)
    rng = np.random.default_rng(p.seed)
    dim = parts[0].corpus.chunks.shape[1]
    if p.rank:
        u = torch.nn.Parameter(torch.randn(dim, p.rank) * 0.01)
        v = torch.nn.Parameter(torch.zeros(dim, p.rank))
        params = [u, v]
    else:
        u = torch.nn.Parameter(torch.zeros(dim, dim))
        v = torch.eye(dim)
        params = [u]
    tensors = [_tensors(part) for part in parts]
    opt = torch.optim.Adam(params, lr=p.lr)
    for _ in range(p.epochs):
        batches = [
            (i, rows[s : s + p.batch])
            for i, t in enumerate(tensors)
            for rows in [rng.permutation(t["rows"])]
            for s in range(0, len(rows), p.batch)
        ]
        for j in rng.permutation(len(batches)):
            i, rows = batches[j]
            t, part = tensors[i], parts[i]
            q = t["queries"][rows]
            q = q + (q @ v) @ u.T
            q = q / q.norm(dim=1, keepdim=True)
            loss = (1 - p.sentence_share) * _loss(q, t, "chunks", rows, p.tau)
            if p.sentence_share and len(t["sentences"]):
                loss = loss + p.sentence_share * _loss(q, t, "sentences", rows, p.tau)
            delta = u @ v.T
            loss = part.weight * loss + p.lam * (delta * delta).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return QueryMap(u.detach().numpy().astype(np.float32), v.detach().numpy().astype(np.float32))


def _tensors(part: Part) -> dict[str, object]:
    import torch

    c, j = part.corpus, part.judged
    rows = np.array([r for r in part.rows if j.positives[r]], dtype=np.int64)
    return {
        "rows": rows,
        "queries": torch.from_numpy(j.vectors),
        "chunks": torch.from_numpy(c.chunks),
        "chunks_note": torch.from_numpy(c.chunk_note.astype(np.int64)),
        "sentences": torch.from_numpy(c.sentences),
        "sentences_note": torch.from_numpy(c.sentence_note.astype(np.int64)),
        "notes": len(c.notes),
        "positives": j.positives,
    }


def _loss(q, t, side: str, rows: np.ndarray, tau: float):  # type: ignore[no-untyped-def]
    """Mean over (query, relevant note) of -log softmax over all notes of the note's
    best row's cosine / tau."""
    import torch

    scores = q @ t[side].T
    owner = t[side + "_note"].expand(len(rows), -1)
    notes = torch.full((len(rows), t["notes"]), -1.0)
    notes = notes.scatter_reduce(1, owner, scores, "amax", include_self=False)
    logp = torch.log_softmax(notes / tau, dim=1)
    picks = [(a, b) for a, r in enumerate(rows) for b in t["positives"][r]]
    qa = torch.tensor([a for a, _ in picks])
    nb = torch.tensor([b for _, b in picks])
    return -logp[qa, nb].mean()


def semantic_ndcg(corpus: Corpus, judged: Judged, rows: np.ndarray, m: QueryMap,
                  share: float = 0.35) -> float:  # fmt: skip
    """A cheap stand-in for the pipeline, for choosing parameters inside the training
    folds: notes by (1 - share) best chunk + share best sentence, binary nDCG@10."""
    rows = np.array([r for r in rows if judged.positives[r]])
    q = m.apply(judged.vectors[rows])
    out = []
    for s in range(0, len(rows), 128):
        qs = q[s : s + 128]
        chunk = _best(qs @ corpus.chunks.T, corpus.chunk_note, len(corpus.notes))
        score = (1 - share) * chunk
        if share and len(corpus.sentences):
            score += share * _best(qs @ corpus.sentences.T, corpus.sentence_note, len(corpus.notes))
        for a, r in enumerate(rows[s : s + 128]):
            top = np.argsort(-score[a])[:10]
            rel = set(judged.positives[r])
            dcg = sum(1 / math.log2(i + 2) for i, n in enumerate(top) if n in rel)
            ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(rel))))
            out.append(dcg / ideal)
    return float(np.mean(out))


def _best(scores: np.ndarray, owner: np.ndarray, notes: int) -> np.ndarray:
    out = np.full((scores.shape[0], notes), -1.0, dtype=np.float32)
    order = np.argsort(owner, kind="stable")
    owners = owner[order]
    first = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    out[:, owners[first]] = np.maximum.reduceat(scores[:, order], first, axis=1)
    return out
