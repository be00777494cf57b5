"""Query-adaptive semantic share from branch agreement (overlap of the two branches' top-10
notes), SciFact train, 5-fold CV: per fold, a step rule (threshold t on agreement, share a1
below, a2 at or above) is chosen on four folds and scored on the fifth. The grid's 0.49
share is the shipped one rounded (its weights are not exactly 0.51 / 0.49).

Run: ``nice -n 15 .venv/bin/python bench/agreement_cv.py`` (sentence vectors off);
prints plain lines, writes nothing. Measured, not shipped (issue 27)."""

import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune import trial_of
from tune_data import FOLDS, Trial, scifact_train, score_run
from vaultsearch.config import Config

vault, ds, config = scifact_train(Config(), sentences=False)
snap = ds.orchestrator.snapshot()
shipped = trial_of(config.search)


def top_notes(hits, n=10):
    out = []
    for c, _ in hits:
        nid = snap.note_of_chunk.get(c)
        if nid is not None and nid not in out:
            out.append(nid)
        if len(out) == n:
            break
    return set(out)


agree = {
    q: len(top_notes(r.branches.get("keyword", [])) & top_notes(r.branches.get("semantic", [])))
    / 10
    for q, r in ds.retrieved.items()
}
shares = (0.3, 0.4, 0.49, 0.6, 0.7, 0.8)
per = {}
for a in shares:
    w = dict(shipped.settings.weights)
    w["keyword"] = 1 - a
    w["semantic"] = a
    t = Trial(replace(shipped.settings, weights=w), shipped.candidates)
    per[a] = score_run(ds.run(t), ds.qrels, ds.ids).ndcg
    print("share", a, f"{statistics.fmean(per[a]):.4f}", flush=True)
idx = {q: j for j, q in enumerate(ds.ids)}
print("agreement quantiles", statistics.quantiles(agree.values(), n=4))
oracle = statistics.fmean(max(per[a][j] for a in shares) for j in range(len(ds.ids)))
print("per-query best share (ceiling)", f"{oracle:.4f}")
rules = [(t, a1, a2) for t in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6) for a1 in shares for a2 in shares]


def value(rule, qs):
    t, a1, a2 = rule
    return statistics.fmean(per[a1 if agree[q] < t else a2][idx[q]] for q in qs)


held = []
for f in range(FOLDS):
    train = [q for q in ds.ids if ds.fold[q] != f]
    test = [q for q in ds.ids if ds.fold[q] == f]
    best = max(rules, key=lambda r: value(r, train))
    h, b = value(best, test), statistics.fmean(per[0.49][idx[q]] for q in test)
    held.append((h, b))
    print(
        f"fold {f + 1}: agreement < {best[0]} ? {best[1]} : {best[2]}  held-out {h:.4f} (shipped {b:.4f})",
        flush=True,
    )
print(
    "CV mean",
    f"{statistics.fmean(h for h, _ in held):.4f}",
    "shipped",
    f"{statistics.fmean(b for _, b in held):.4f}",
)
vault.close()
