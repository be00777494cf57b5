"""The completion as arrays gives what the list of pairs gave: each step against the
Python loop it replaced, on random scores with ties, notes of many chunks, a code note,
chunks of no note and boilerplate."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from vaultsearch.search.boilerplate import WEIGHT, weigh_down
from vaultsearch.search.chunkmap import ChunksByNote
from vaultsearch.search.chunkscores import ChunkScores, notes_of

ROUNDING = 1e-6


def _shown_by_loops(
    hits: list[tuple[int, float]],
    scored: set[int],
    note_of: dict[int, int],
    limit: int,
    code: set[int],
) -> list[tuple[int, float]]:
    """``orchestrator._shown_chunks`` for one branch as it was written before arrays."""
    by_note: dict[int | None, list[float]] = {}
    for cid, score in hits:
        if cid not in scored:
            by_note.setdefault(note_of.get(cid), []).append(score)
    floor = {}
    for nid, scores in by_note.items():
        if len(scores) > limit and (nid is None or nid not in code):
            cut = sorted(scores, reverse=True)[limit - 1]
            floor[nid] = cut - ROUNDING if cut > ROUNDING else -math.inf
    return [
        (cid, score)
        for cid, score in hits
        if cid in scored or score >= floor.get(note_of.get(cid), -math.inf)
    ]


def _case(seed: int) -> tuple[list[tuple[int, float]], dict[int, int]]:
    rng = random.Random(seed)
    note_of = {}
    cid = 100
    for nid in range(1, 13):
        for _ in range(rng.choice([1, 2, 5, 9, 30])):
            note_of[cid] = nid
            cid += rng.choice([1, 1, 3])
    ids = [*note_of, 5, 7]  # two chunks of no note
    rng.shuffle(ids)
    levels = [0.0, 0.5e-6, 0.2, 0.2 + 0.4e-6, 0.31, 0.5, 0.5, 0.77, 0.9]
    hits = [(c, float(np.float32(rng.choice(levels) + rng.random() * 1e-3 * (c % 3)))) for c in ids]
    return hits, note_of


@pytest.mark.parametrize("seed", range(12))
def test_the_arrays_keep_what_the_loops_kept(seed: int) -> None:
    hits, note_of = _case(seed)
    rng = random.Random(seed)
    scored = set(rng.sample([c for c, _ in hits], 15))
    code = {3, 7}
    pairs = sorted(note_of.items(), key=lambda x: (x[1], x[0]))
    by_note = ChunksByNote.of_pairs(np.array(pairs, dtype=np.int64))
    scores = ChunkScores.of(hits, notes_of(by_note.note_of_chunk))
    assert list(scores) == hits and scores == hits
    for limit in (1, 3):
        shown = scores.shown(scored, limit, lambda n: n in code, ROUNDING)
        assert list(shown) == _shown_by_loops(hits, scored, note_of, limit, code), limit
    boilerplate = frozenset(rng.sample([c for c, _ in hits], 6))
    weighed = scores.weighed_down(np.array(sorted(boilerplate)), WEIGHT)
    assert list(weighed) == weigh_down({"b": hits}, boilerplate)["b"]
    assert scores.weighed_down(np.zeros(0, dtype=np.int64), WEIGHT) is scores
    gone = {2, 5, 11}
    assert list(scores.without_notes(gone)) == [
        (c, s) for c, s in hits if note_of.get(c) not in gone
    ]


def test_the_chunk_map_gathers_each_chunks_note_as_its_lookups_do() -> None:
    pairs = np.array([[10, 1], [11, 1], [40, 2], [12, 3], [900, 3]], dtype=np.int64)
    pairs = pairs[np.lexsort((pairs[:, 0], pairs[:, 1]))]
    note_of = ChunksByNote.of_pairs(pairs).note_of_chunk
    asked = np.array([40, 12, 5, 10, 901, 900, 11], dtype=np.int64)
    assert note_of.many(asked).tolist() == [note_of.get(int(c), -1) for c in asked]
    assert notes_of({40: 2})(np.array([40, 41])).tolist() == [2, -1]
