"""Joint k-fold cross-validation over several judged datasets, and the paired tests that
say whether a cross-validated gain is more than noise.

One configuration must serve every kind of data, so each fold's choice maximises the
mean over datasets of their mean nDCG@10 on the training folds (a dataset of 800 queries
does not outvote one of 60), and is then scored on the held-out fold of every dataset.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tune_data import FOLDS, Dataset, Scores, Trial


@dataclass(frozen=True)
class FoldResult:
    fold: int
    chosen: str
    ndcg: dict[str, float]
    """Dataset name -> held-out mean nDCG@10."""
    recall: dict[str, float]


@dataclass(frozen=True)
class CVResult:
    folds: list[FoldResult]
    held_out: dict[str, list[float]]
    """Dataset name -> each query's nDCG@10 under the trial its fold's training chose."""
    held_out_mrr: dict[str, list[float]]
    chosen: list[Trial]

    def mean(self, name: str) -> tuple[float, float]:
        return (
            statistics.fmean(f.ndcg[name] for f in self.folds),
            statistics.fmean(f.recall[name] for f in self.folds),
        )


def cross_validate(datasets: Sequence[Dataset], trials: Sequence[Trial]) -> CVResult:
    per = {ds.name: [ds.scores(t) for t in trials] for ds in datasets}
    folds, chosen = [], []
    held = {ds.name: [0.0] * len(ds.ids) for ds in datasets}
    held_mrr = {ds.name: [0.0] * len(ds.ids) for ds in datasets}
    for f in range(FOLDS):
        train = {ds.name: [j for j, q in enumerate(ds.ids) if ds.fold[q] != f] for ds in datasets}
        test = {ds.name: [j for j, q in enumerate(ds.ids) if ds.fold[q] == f] for ds in datasets}

        best = max(range(len(trials)), key=lambda i: _objective(per, train, i))
        chosen.append(trials[best])
        for n in per:
            for j in test[n]:
                held[n][j] = per[n][best].ndcg[j]
                held_mrr[n][j] = per[n][best].mrr[j]
        folds.append(
            FoldResult(
                f + 1,
                trials[best].describe(),
                {n: statistics.fmean(per[n][best].ndcg[j] for j in test[n]) for n in per},
                {n: statistics.fmean(per[n][best].recall[j] for j in test[n]) for n in per},
            )
        )
    return CVResult(folds, held, held_mrr, chosen)


def _objective(
    per: dict[str, list[Scores]], train: dict[str, list[int]], i: int
) -> tuple[float, int]:
    """Mean over datasets of training-fold nDCG@10; ties go to the earlier (simpler) trial."""
    value = statistics.fmean(statistics.fmean(per[n][i].ndcg[j] for j in train[n]) for n in per)
    return (value, -i)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], rounds: int = 10_000, seed: int = 7
) -> tuple[float, float, float]:
    """Mean of a - b and its 95% interval, resampling queries with replacement."""
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(diffs), size=(rounds, len(diffs)))
    low, high = np.quantile(diffs[picks].mean(axis=1), [0.025, 0.975])
    return float(diffs.mean()), float(low), float(high)


def paired_cells(a: Sequence[float], b: Sequence[float], sep: str = " | ") -> str:
    """The two cells of every paired comparison the benches print: the mean of a - b
    with its 95% interval, then wins / losses and the sign test's p."""
    mean, low, high = paired_bootstrap(a, b)
    wins, losses, p = sign_test(a, b)
    return f"{mean:+.4f} [{low:+.4f}, {high:+.4f}]{sep}{wins} / {losses}, p = {p:.3g}"


def sign_test(a: Sequence[float], b: Sequence[float]) -> tuple[int, int, float]:
    """Queries where a wins, where b wins, and the two-sided exact binomial p (ties dropped)."""
    wins = sum(x > y for x, y in zip(a, b, strict=True))
    losses = sum(x < y for x, y in zip(a, b, strict=True))
    n = wins + losses
    if n == 0:
        return 0, 0, 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return wins, losses, min(1.0, 2 * tail)
