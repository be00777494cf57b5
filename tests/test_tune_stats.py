"""The paired tests bench/tune.py uses to say whether a cross-validated gain is real:
a wrong p-value or interval would let noise change a default."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from tune_cv import paired_bootstrap, paired_cells, sign_test
from tune_data import _completion, seeded_folds


def test_sign_test_is_the_exact_two_sided_binomial_without_ties() -> None:
    a = [1.0] * 9 + [0.0] + [0.5] * 5
    b = [0.0] * 9 + [1.0] + [0.5] * 5
    wins, losses, p = sign_test(a, b)
    assert (wins, losses) == (9, 1)
    assert p == pytest.approx(2 * (1 + 10) / 2**10)
    assert sign_test([0.3, 0.3], [0.3, 0.3]) == (0, 0, 1.0)
    assert sign_test([1.0, 0.0], [0.0, 1.0])[2] == 1.0


def test_bootstrap_interval_brackets_the_mean_and_excludes_zero_only_for_a_clear_gain() -> None:
    clear = paired_bootstrap([0.6 + 0.01 * (i % 3) for i in range(200)], [0.5] * 200)
    assert clear[1] <= clear[0] <= clear[2]
    assert clear[1] > 0
    noise = paired_bootstrap([0.5 + (0.1 if i % 2 else -0.1) for i in range(200)], [0.5] * 200)
    assert noise[0] == pytest.approx(0.0)
    assert noise[1] < 0 < noise[2]


def test_seeded_folds_cover_every_query_once_whatever_the_input_order() -> None:
    ids = [str(i) for i in range(23)]
    folds = seeded_folds(ids, 5)
    assert sorted(folds) == sorted(ids)
    sizes = [sum(1 for f in folds.values() if f == k) for k in range(5)]
    assert sorted(sizes) == [4, 4, 5, 5, 5]
    assert seeded_folds(list(reversed(ids)), 5) == folds


def test_a_shallower_trial_completes_from_the_deeper_hits_it_cut() -> None:
    """Retrieval is cached once at the deepest depth: a trial at depth 1 must complete
    the branch search completes (semantic) with what depth 1 cut off, as a real search
    at depth 1 would, and leave the other branch as cut."""
    from vaultsearch.search.orchestrator import Retrieved

    lists = {"semantic": [(1, 0.9), (2, 0.8)], "keyword": [(3, 5.0), (1, 4.0)]}
    r = Retrieved(lists, completion={"semantic": [(3, 0.1)]})
    assert _completion(r, lists, 1) == {"semantic": [(2, 0.8), (3, 0.1)]}
    assert _completion(Retrieved(lists), lists, 1) == {}
    assert _completion(r, {"semantic": lists["semantic"]}, 1) == {}


def test_paired_cells_print_the_interval_and_the_sign_test() -> None:
    a, b = [1.0, 1.0, 0.5, 0.0], [0.0, 0.0, 0.5, 0.0]
    assert paired_cells(a, b) == "+0.5000 [+0.0000, +1.0000] | 2 / 0, p = 0.5"
    assert paired_cells(a, b, sep=", ").endswith("], 2 / 0, p = 0.5")
