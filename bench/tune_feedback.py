"""Issue 11's untried ideas, each cross-validated through the real pipeline against the
shipped default: dense pseudo-relevance feedback (Rocchio on the query vector) and
distribution-based score normalisation (DBSF).

Same data, folds and scoring as ``tune.py`` (SciFact train and the judged vault queries,
5-fold, every trial re-fused by ``QueryOrchestrator.rank``). Each family's grid includes
the shipped default, so a fold may keep it; the held-out result is tested per query
against the shipped default (paired bootstrap, sign test). A default moves only when the
held-out gain on SciFact has a 95% interval above zero and no vault loses significantly.

Run: `make bench-feedback` (needs the SciFact index of `make bench-quality`).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section
from tune import SCIFACT, load, trial_of
from tune_cv import CVResult, cross_validate, paired_bootstrap, sign_test
from tune_data import FOLDS, Dataset, Trial
from vaultsearch.config import Config

FEEDBACK_NOTES = (2, 3, 5)
FEEDBACK_WEIGHTS = (0.3, 0.5, 0.7, 1.0)


def feedback_grid(shipped: Trial) -> list[Trial]:
    return [shipped] + [
        replace(shipped, settings=replace(shipped.settings, feedback_notes=n, feedback_weight=w))
        for n in FEEDBACK_NOTES
        for w in FEEDBACK_WEIGHTS
    ]


def normalisation_grid(shipped: Trial) -> list[Trial]:
    return [shipped] + [
        replace(
            shipped,
            settings=replace(
                shipped.settings,
                normalisation="dbsf",
                weights={"keyword": 1.0 - a, "semantic": a},
            ),
        )
        for a in (0.5, 0.6, 0.7)
    ]


def fixed_folds(ds: Dataset, trial: Trial) -> list[float]:
    nd = ds.scores(trial).ndcg
    return [
        statistics.fmean(nd[j] for j, q in enumerate(ds.ids) if ds.fold[q] == f)
        for f in range(FOLDS)
    ]


def family_table(
    label: str, cv: CVResult, datasets: Sequence[Dataset], shipped: Trial, grid: Sequence[Trial]
) -> str:
    names = [d.name for d in datasets]
    lines = [
        "| fold | chosen on the other folds | "
        + " | ".join(f"{n} held-out / shipped" for n in names)
        + " |",
        "| ---: | --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    base = {d.name: fixed_folds(d, shipped) for d in datasets}
    for r in cv.folds:
        cells = " | ".join(f"{r.ndcg[n]:.4f} / {base[n][r.fold - 1]:.4f}" for n in names)
        lines.append(f"| {r.fold} | {r.chosen} | {cells} |")
    cells = " | ".join(f"**{cv.mean(n)[0]:.4f}** / {statistics.fmean(base[n]):.4f}" for n in names)
    lines.append(f"| mean | | {cells} |")
    lines += [
        "",
        "| dataset | held-out - shipped, per query [95% CI] | wins / losses, sign test p |",
        "| --- | --- | --- |",
    ]
    for d in datasets:
        mean, low, high = paired_bootstrap(cv.held_out[d.name], d.scores(shipped).ndcg)
        wins, losses, p = sign_test(cv.held_out[d.name], d.scores(shipped).ndcg)
        lines.append(
            f"| {d.name} | {mean:+.4f} [{low:+.4f}, {high:+.4f}] | {wins} / {losses}, p = {p:.3g} |"
        )
    picks = Counter(t.describe() for t in cv.chosen)
    whole = " | ".join(
        f"{statistics.fmean(d.scores(t).ndcg):.4f}" for d in datasets for t in [grid[0]]
    )
    rows = "\n".join(
        f"| {t.describe()} | "
        + " | ".join(f"{statistics.fmean(d.scores(t).ndcg):.4f}" for d in datasets)
        + " |"
        for t in grid
    )
    return (
        f"**{label}**, {len(grid)} trials, folds chose: "
        + "; ".join(f"{t} ({n})" for t, n in picks.most_common())
        + ".\n\n"
        + "\n".join(lines)
        + "\n\nEvery trial on the whole sets (nDCG@10; tuned-on figures, for reading only):\n\n"
        + "| trial | "
        + " | ".join(names)
        + " |\n| --- | "
        + " | ".join("---:" for _ in names)
        + " |\n"
        + rows
        + f"\n\n(shipped: {whole})"
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
        parts = []
        for label, grid in (
            ("Dense feedback (Rocchio)", feedback_grid(shipped)),
            ("DBSF normalisation", normalisation_grid(shipped)),
        ):
            parts.append(
                f"{label}, joint CV (one configuration for all three sets):\n\n"
                + family_table(label, cross_validate(datasets, grid), datasets, shipped, grid)
            )
            parts.append(
                f"{label}, SciFact-only CV:\n\n"
                + family_table(label, cross_validate(scifact, grid), scifact, shipped, grid)
            )
    load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    body = "\n\n".join(parts) + f"\n\nLoad average at the end: {load_avg}."
    if args.no_write:
        print(body)
    else:
        write_section("feedback", "Dense feedback and DBSF, cross-validated", body)


if __name__ == "__main__":
    main()
