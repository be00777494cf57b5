"""The branch rewrites bench/tune_ideas.py measures ranking ideas with: a wrong vector or
pooled score would credit or blame an idea for an arithmetic slip."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from tune_variants import apply, pool_notes, rocchio


def test_rocchio_is_a_unit_vector_pulled_toward_the_feedback() -> None:
    q = np.array([3.0, 0.0, 0.0])
    docs = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 5.0]])
    moved = rocchio(q, docs, 1.0)
    assert np.linalg.norm(moved) == pytest.approx(1.0, abs=1e-6)
    # q/|q| + mean of the unit feedback rows = (1, 0.5, 0.5), then normalised
    assert moved == pytest.approx(np.array([1.0, 0.5, 0.5]) / np.sqrt(1.5), abs=1e-6)
    assert rocchio(q, docs, 0.3)[0] > moved[0]  # a smaller weight stays nearer the query
    assert rocchio(q, docs, 0.0) == pytest.approx([1.0, 0.0, 0.0])
    assert rocchio(q, np.zeros((0, 3)), 1.0) == pytest.approx([1.0, 0.0, 0.0])


def test_pooling_scores_each_note_once_by_its_chunks() -> None:
    hits = [(10, 0.9), (20, 0.8), (11, 0.7), (12, 0.1), (30, 0.75)]
    note_of = {10: 1, 11: 1, 12: 1, 20: 2, 30: 3}
    top2 = dict(pool_notes(hits, note_of, "top2", 0.0))
    assert top2 == {10: pytest.approx(0.8), 20: 0.8, 30: 0.75}
    lse = dict(pool_notes(hits, note_of, "lse", 0.05))
    expected = 0.9 + 0.05 * np.log(1 + np.exp(-0.2 / 0.05) + np.exp(-0.8 / 0.05))
    assert lse[10] == pytest.approx(expected)
    assert lse[20] == pytest.approx(0.8)  # one chunk: its own score
    with pytest.raises(ValueError, match="top2 or lse"):
        pool_notes(hits, note_of, "mean", 0.0)


def test_floor_and_feedback_rewrite_only_the_semantic_branch() -> None:
    from vaultsearch.search.orchestrator import Retrieved

    seen: list[Retrieved] = []

    def rank(r: Retrieved) -> list:  # type: ignore[type-arg]
        seen.append(r)
        return []

    r = Retrieved(
        {"semantic": [(1, 0.5), (2, 0.25)], "keyword": [(1, 7.0)]},
        completion={"semantic": [(3, 0.75)], "keyword": [(2, 1.0)]},
    )
    apply(("floor", 0.25), r, rank, {}, np.zeros(0), lambda ids: np.zeros((0, 2)), None)  # type: ignore[arg-type]
    assert seen[-1].branches == {"semantic": [(1, 0.25), (2, 0.0)], "keyword": [(1, 7.0)]}
    assert seen[-1].completion == {"semantic": [(3, 0.5)], "keyword": [(2, 1.0)]}
    apply(("uncompleted",), r, rank, {}, np.zeros(0), lambda ids: np.zeros((0, 2)), None)  # type: ignore[arg-type]
    assert seen[-1].completion == {} and seen[-1].branches == r.branches
    searched: list[tuple[np.ndarray, int]] = []

    def search(v: np.ndarray, k: int) -> list[tuple[int, float]]:
        searched.append((v, k))
        return [(9, 0.9)]

    apply(("prf", 1, 1.0), r, rank, {}, np.array([1.0, 0.0]), lambda ids: np.zeros((0, 2)), search)
    assert searched[0][1] == 2 and seen[-1].branches["semantic"] == [(9, 0.9)]
    assert seen[-1].branches["keyword"] == [(1, 7.0)]
    assert seen[-1].completion == {"keyword": [(2, 1.0)]}  # the old query's cosines are gone
