"""The ranking maths, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from vaultsearch.search.fusion import (
    graph_boost,
    rank_items,
    recency_multiplier,
    tied_ranks,
    weighted_rrf,
)


def test_rrf_hand_computed() -> None:
    # k = 60: a = 1/61 + 1/63, b = 1/62 + 1/61, c = 1/63, d = 1/62
    scores = weighted_rrf({"kw": ["a", "b", "c"], "sem": ["b", "d", "a"]}, {}, 60)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    assert rank_items(scores) == ["b", "a", "d", "c"]


def test_rrf_weights_and_zero_weight() -> None:
    scores = weighted_rrf({"kw": ["x", "y"], "sem": ["y", "x"]}, {"kw": 2.0, "sem": 0.5}, 10)
    assert scores["x"] == pytest.approx(2 / 11 + 0.5 / 12)
    assert scores["y"] == pytest.approx(2 / 12 + 0.5 / 11)
    only_kw = weighted_rrf({"kw": ["x"], "sem": ["z"]}, {"sem": 0.0}, 60)
    assert only_kw == {"x": pytest.approx(1 / 61)}


def test_rrf_duplicate_in_one_list_counts_once() -> None:
    assert weighted_rrf({"kw": ["a", "a", "b"]}, {}, 1) == {"a": 0.5, "b": pytest.approx(1 / 3)}


def test_ties_break_by_key_not_hash() -> None:
    scores = {"zeta": 1.0, "alpha": 1.0, "mid": 2.0}
    assert rank_items(scores) == ["mid", "alpha", "zeta"]
    assert rank_items({3: 1.0, 1: 1.0, 2: 1.0}) == [1, 2, 3]


def test_graph_boost_hand_computed() -> None:
    scores = {"a": 0.04, "b": 0.03, "c": 0.01}
    links = {"a": ["c", "n"], "b": ["n"], "c": ["a"], "n": ["a", "b"]}
    boosted, why = graph_boost(scores, lambda x: links.get(x, []), top=2, share=0.5)
    # top 2 are a and b; c gains 0.5*0.04; n (not in the pool) enters with max(0.02, 0.015)
    assert boosted["c"] == pytest.approx(0.01 + 0.02)
    assert boosted["n"] == pytest.approx(0.02)
    assert why["n"].source == "a"
    # a is linked from b? no: b links only to n. a is c's neighbour but c is not in the top 2
    assert boosted["a"] == pytest.approx(0.04)
    assert boosted["b"] == pytest.approx(0.03)


def test_graph_boost_share_zero_changes_nothing() -> None:
    scores = {"a": 1.0, "b": 0.5}
    boosted, _ = graph_boost(scores, lambda x: ["b"] if x == "a" else [], top=5, share=0.0)
    assert boosted == scores


@pytest.mark.parametrize(
    ("age", "expected"),
    [(0, 1.2), (6.9, 1.2), (7, 1.2), (7.1, 1.1), (30, 1.1), (31, 1.0), (-3, 1.2)],
)
def test_recency_tiers(age: float, expected: float) -> None:
    assert recency_multiplier(age, [[30, 1.1], [7, 1.2]]) == expected


def test_recency_no_tiers() -> None:
    assert recency_multiplier(1, []) == 1.0


def test_tied_ranks_share_a_rank() -> None:
    assert tied_ranks([("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)]) == {
        "a": 1,
        "b": 2,
        "c": 2,
        "d": 4,
    }
    scores = weighted_rrf({"kw": {"x": 1, "y": 1}}, {}, 60)
    assert scores["x"] == scores["y"] == pytest.approx(1 / 61)
