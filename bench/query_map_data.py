"""What a learned query map is trained on: one built index's stored unit vectors (chunks
and sentences) with the judged note each belongs to, and its judged queries' vectors.

The vectors are read from the index as search reads them (float16 rows decoded), not
embedded again, so the map is trained against exactly the rows a mapped query meets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tune_data import Dataset
from vaultsearch.store.catalog import SENTENCE_BITS
from vaultsearch.store.vectors import decode


@dataclass(frozen=True)
class Corpus:
    """Unit rows and, per row, the index of its note in ``notes`` (judged ids)."""

    notes: list[str]
    chunks: np.ndarray
    chunk_note: np.ndarray
    sentences: np.ndarray
    sentence_note: np.ndarray


@dataclass(frozen=True)
class Judged:
    """Queries as vectors (``Dataset.query_vectors``: embedded as ``retrieve`` embeds
    them, before any typo fix) and their relevant notes as indexes into ``Corpus.notes``."""

    ids: list[str]
    vectors: np.ndarray
    positives: list[list[int]]
    fold: np.ndarray


def corpus_of(ds: Dataset) -> Corpus:
    snap = ds.orchestrator.snapshot()
    key_of = {nid: ds.doc_of.get(n.path, n.path) for nid, n in snap.notes.items()}
    notes = sorted(set(key_of.values()))
    index = {k: i for i, k in enumerate(notes)}
    reader = snap.reader("vectors")
    ids, rows = reader.vectors_of(reader.ids())
    chunk_note = np.array([index[key_of[snap.note_of_chunk[int(c)]]] for c in ids])
    parts, owners = [], []
    for seg in snap.reader("sentences").segments:
        pos = np.arange(len(seg.ids))
        if seg.live_mask is not None:
            pos = pos[seg.live_mask[pos]]
        if len(pos):
            parts.append(decode(seg.take_rows(pos)))
            owners.append(np.asarray(seg.ids)[pos] >> SENTENCE_BITS)
    sent = np.concatenate(parts) if parts else np.zeros((0, rows.shape[1]), np.float32)
    chunk_of = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    sentence_note = np.array([index[key_of[snap.note_of_chunk[int(c)]]] for c in chunk_of])
    return Corpus(notes, _unit(rows), chunk_note, _unit(sent), sentence_note)


def judged_of(ds: Dataset, corpus: Corpus) -> Judged:
    index = {k: i for i, k in enumerate(corpus.notes)}
    vectors = ds.query_vectors()
    positives = [
        sorted(index[d] for d, g in ds.qrels[q].items() if g > 0 and d in index) for q in ds.ids
    ]
    return Judged(
        list(ds.ids),
        _unit(np.stack([vectors[q] for q in ds.ids])),
        positives,
        np.array([ds.fold[q] for q in ds.ids]),
    )


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
