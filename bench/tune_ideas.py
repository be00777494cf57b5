"""Issue 11's ranking ideas, each measured through the real pipeline against the
shipped default: completion of the branches (shipped; measured against its absence),
then, cross-validated, dense pseudo-relevance feedback, semantic chunk pooling, a
cosine floor for the semantic normalisation, and a query-dependent fusion weight.

Same data, folds and scoring as ``tune.py`` (SciFact train and the judged vault queries,
5-fold). Feedback and pooling rewrite the branch results before ``QueryOrchestrator.rank``
fuses them (``tune_variants``). The query-dependent weight picks, per query, the convex
semantic share from a step rule on one feature known before fusion; a query ranked with
share ``a`` is ranked exactly as the fixed-share trial ``a`` ranks it, so its figures are
those of real orchestrator runs. Each family includes the shipped default, so a fold may
keep it; the held-out result is tested per query against the shipped default (paired
bootstrap, sign test). A default moves only when the held-out gain on SciFact has a 95%
interval above zero and no vault loses significantly.

Run: `make bench-ideas` (needs the SciFact index of `make bench-quality`).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section
from tune import SCIFACT, SENTENCE_SHARE, load, shares, trial_of
from tune_cv import CVResult, cross_validate, paired_cells
from tune_data import FOLDS, Dataset, Trial
from vaultsearch.config import Config

SHARES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
"""Semantic shares the query-dependent rule may give a query (shipped: 0.6)."""


def feedback_grid(shipped: Trial) -> list[Trial]:
    return [shipped] + [
        replace(shipped, variant=("prf", n, w)) for n in (2, 3, 5) for w in (0.3, 0.5, 0.7, 1.0)
    ]


def pooling_grid(shipped: Trial) -> list[Trial]:
    pools = [("pool", "top2", 0.0)] + [("pool", "lse", t) for t in (0.02, 0.05, 0.1)]
    return [shipped] + [replace(shipped, variant=v) for v in pools]


def floor_grid(shipped: Trial) -> list[Trial]:
    return [shipped] + [
        replace(
            shipped,
            settings=replace(shipped.settings, weights=shares(a, SENTENCE_SHARE)),
            variant=("floor", c),
        )
        for c in (0.1, 0.2, 0.3, 0.4)
        for a in (0.3, 0.4, 0.5, 0.6)
    ]


def completion_table(datasets: Sequence[Dataset], shipped: Trial) -> str:
    """Completion has no parameter to fit, so each whole set is already held out: the
    shipped ranking against the same ranking with the completed scores left out."""
    before = replace(shipped, variant=("uncompleted",))
    rows = [
        "| dataset | per fold, with / without | mean with / without (R@100) | delta [95% CI] | wins / losses, p |",
        "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for d in datasets:
        new, old = d.scores(shipped), d.scores(before)
        folds = " · ".join(
            f"{a:.4f} / {b:.4f}"
            for a, b in zip(fixed_folds(d, new.ndcg), fixed_folds(d, old.ndcg), strict=True)
        )
        rows.append(
            f"| {d.name} | {folds} | {statistics.fmean(new.ndcg):.4f} / "
            f"{statistics.fmean(old.ndcg):.4f} ({statistics.fmean(new.recall):.4f} / "
            f"{statistics.fmean(old.recall):.4f}) | {paired_cells(new.ndcg, old.ndcg)} |"
        )
    return "\n".join(rows)


def fixed_folds(ds: Dataset, nd: Sequence[float]) -> list[float]:
    return [
        statistics.fmean(nd[j] for j, q in enumerate(ds.ids) if ds.fold[q] == f)
        for f in range(FOLDS)
    ]


def held_out_rows(
    datasets: Sequence[Dataset], held: dict[str, Sequence[float]], shipped: Trial
) -> list[str]:
    rows = [
        "| dataset | held-out - shipped, per query [95% CI] | wins / losses, sign test p |",
        "| --- | --- | --- |",
    ]
    for d in datasets:
        rows.append(f"| {d.name} | {paired_cells(held[d.name], d.scores(shipped).ndcg)} |")
    return rows


def fold_rows(
    datasets: Sequence[Dataset],
    chosen: Sequence[str],
    held: dict[str, Sequence[float]],
    shipped: Trial,
) -> list[str]:
    names = [d.name for d in datasets]
    lines = [
        "| fold | chosen on the other folds | "
        + " | ".join(f"{n} held-out / shipped" for n in names)
        + " |",
        "| ---: | --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    new = {d.name: fixed_folds(d, held[d.name]) for d in datasets}
    old = {d.name: fixed_folds(d, d.scores(shipped).ndcg) for d in datasets}
    for f in range(FOLDS):
        cells = " | ".join(f"{new[n][f]:.4f} / {old[n][f]:.4f}" for n in names)
        lines.append(f"| {f + 1} | {chosen[f]} | {cells} |")
    cells = " | ".join(
        f"**{statistics.fmean(new[n]):.4f}** / {statistics.fmean(old[n]):.4f}" for n in names
    )
    return [*lines, f"| mean | | {cells} |"]


def family_table(
    label: str, cv: CVResult, datasets: Sequence[Dataset], shipped: Trial, grid: Sequence[Trial]
) -> str:
    names = [d.name for d in datasets]
    chosen = [t.describe() for t in cv.chosen]
    whole = "\n".join(
        f"| {t.describe()} | "
        + " | ".join(f"{statistics.fmean(d.scores(t).ndcg):.4f}" for d in datasets)
        + " |"
        for t in grid
    )
    picks = Counter(chosen).most_common()
    return (
        f"**{label}**, {len(grid)} trials; folds chose "
        + "; ".join(f"{t} ({n})" for t, n in picks)
        + ".\n\n"
        + "\n".join(fold_rows(datasets, chosen, cv.held_out, shipped))
        + "\n\n"
        + "\n".join(held_out_rows(datasets, cv.held_out, shipped))
        + "\n\nEach trial on the whole sets (nDCG@10; the data it is chosen on, for reading):\n\n"
        + "| trial | "
        + " | ".join(names)
        + " |\n| --- | "
        + " | ".join("---:" for _ in names)
        + " |\n"
        + whole
    )


@dataclass(frozen=True)
class StepRule:
    """Semantic share ``low`` for a query whose feature is below ``threshold``, else ``high``."""

    feature: str
    threshold: float
    low: float
    high: float

    def describe(self) -> str:
        if self.low == self.high:
            return f"fixed share {self.low:g}"
        return f"{self.feature} < {self.threshold:.3g} ? {self.low:g} : {self.high:g}"


def _note_scores(hits: Sequence[tuple[int, float]], note_of: dict[int, int]) -> list[float]:
    seen: dict[int, float] = {}
    for cid, score in hits:
        nid = note_of.get(cid)
        if nid is not None and nid not in seen:
            seen[nid] = score
    return list(seen.values())


FEATURES: dict[str, Callable[[list[float], list[float], int], float]] = {
    "top cosine": lambda sem, kw, n: sem[0] if sem else 0.0,
    "cosine gap 1-2": lambda sem, kw, n: sem[0] - sem[1] if len(sem) > 1 else 0.0,
    "BM25 relative gap 1-2": lambda sem, kw, n: (
        (kw[0] - kw[1]) / kw[0] if len(kw) > 1 and kw[0] > 0 else 0.0
    ),
    "query words": lambda sem, kw, n: float(n),
    "top BM25 per query word": lambda sem, kw, n: kw[0] / max(n, 1) if kw else 0.0,
}
"""What is known of a query before fusion: its branch results' note scores, its length."""


def features(ds: Dataset) -> dict[str, np.ndarray]:
    note_of = dict(ds.orchestrator.snapshot().note_of_chunk)
    out: dict[str, list[float]] = {f: [] for f in FEATURES}
    for q in ds.ids:
        r = ds.retrieved[q]
        sem = _note_scores(r.branches.get("semantic", []), note_of)
        kw = _note_scores(r.branches.get("keyword", []), note_of)
        for name, fn in FEATURES.items():
            out[name].append(fn(sem, kw, len(r.text.split())))
    return {k: np.array(v) for k, v in out.items()}


def adaptive_cv(datasets: Sequence[Dataset], fit_on: Sequence[str], shipped: Trial) -> str:
    """Each fold picks the step rule (feature, threshold at a decile of the training
    folds' pooled feature values, two shares) with the best mean training nDCG@10 over
    the ``fit_on`` sets, ties to a fixed share; it is then scored on every set's
    held-out fold."""
    by_share = {
        a: replace(shipped, settings=replace(shipped.settings, weights=shares(a, SENTENCE_SHARE)))
        for a in SHARES
    }  # fmt: skip
    nd = {d.name: np.array([d.scores(by_share[a]).ndcg for a in SHARES]) for d in datasets}
    feats = {d.name: features(d) for d in datasets}
    fold = {d.name: np.array([d.fold[q] for q in d.ids]) for d in datasets}

    def ranked(name: str, rule: StepRule) -> np.ndarray:
        low = feats[name][rule.feature] < rule.threshold
        return np.where(low, nd[name][SHARES.index(rule.low)], nd[name][SHARES.index(rule.high)])

    held = {d.name: np.zeros(len(d.ids)) for d in datasets}
    chosen = []
    for f in range(FOLDS):
        best: tuple[tuple[float, int], StepRule] | None = None
        for feature in FEATURES:
            pooled = np.concatenate([feats[n][feature][fold[n] != f] for n in fit_on])
            for decile in range(1, 10):
                t = float(np.quantile(pooled, decile / 10))
                for low, high in itertools.product(SHARES, SHARES):
                    rule = StepRule(feature, t, low, high)
                    value = statistics.fmean(
                        float(ranked(n, rule)[fold[n] != f].mean()) for n in fit_on
                    )
                    key = (round(value, 9), int(low == high))
                    if best is None or key > best[0]:
                        best = (key, rule)
        assert best is not None
        chosen.append(best[1].describe())
        for d in datasets:
            mask = fold[d.name] == f
            held[d.name][mask] = ranked(d.name, best[1])[mask]
    out = {n: [float(x) for x in v] for n, v in held.items()}
    oracle = ", ".join(f"{n} {float(nd[n].max(axis=0).mean()):.4f}" for n in nd)
    return (
        f"Best share per query chosen after the fact (a ceiling, not a method): {oracle}.\n\n"
        + "\n".join(
            [*fold_rows(datasets, chosen, out, shipped), "", *held_out_rows(datasets, out, shipped)]
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-write", action="store_true", help="print, do not update docs")
    args = parser.parse_args()
    config = Config()
    with contextlib.ExitStack() as stack:
        datasets, _ = load(config, stack)
        shipped = trial_of(config.search)
        scifact = [d for d in datasets if d.name == SCIFACT]
        names = [d.name for d in datasets]
        parts = [
            "**Completion** (a note only the keyword branch found gets its exact cosine "
            "instead of zero; shipped), whole sets, nDCG@10:\n\n"
            + completion_table(datasets, shipped)
        ]
        for label, grid in (
            ("Dense feedback (Rocchio on the query vector)", feedback_grid(shipped)),
            ("Semantic note score pooled from its chunks", pooling_grid(shipped)),
            (
                "Semantic scores above a floor (tm2c2 with a theoretical minimum above 0)",
                floor_grid(shipped),
            ),
        ):
            for scope, sets in (("joint CV, one configuration for all three sets", datasets), ("SciFact-only CV", scifact)):  # fmt: skip
                parts.append(
                    f"{label}, {scope}:\n\n"
                    + family_table(label, cross_validate(sets, grid), sets, shipped, grid)
                )
        for scope, fit_on in (("fitted on all three sets", names), ("fitted on SciFact alone, applied to all", [SCIFACT])):  # fmt: skip
            parts.append(
                f"**Query-dependent semantic share** (step rule on one pre-fusion feature, "
                f"shares {', '.join(f'{a:g}' for a in SHARES)}), {scope}:\n\n"
                + adaptive_cv(datasets, fit_on, shipped)
            )
    body = (
        f"Shipped default: {shipped.describe()}. Cells are held-out nDCG@10 of the trial its "
        "fold's training part chose / the shipped default on the same fold.\n\n"
        + "\n\n".join(parts)
    )
    if args.no_write:
        print(body)
    else:
        write_section("ideas", "Ranking ideas, cross-validated", body)


if __name__ == "__main__":
    main()
