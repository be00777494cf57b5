"""SciFact train hybrid with the hop gift off and on: the corpus has no links, so every
query's top 100 must be the same (``search/hops.py`` needs a graph).

Run: ``nice -n 5 .venv/bin/python bench/hop_scifact.py``; prints plain lines.
"""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hop_cv import with_hop
from tune import trial_of
from tune_data import FOLDS, scifact_train, score_run
from vaultsearch.config import Config

vault, ds, config = scifact_train(Config())
print("links in graph:", len(vault.orchestrator.snapshot().reader("graph")), flush=True)
base = with_hop(trial_of(config.search), 0.0, 3, 0.0)  # off, whatever ships
for t in [
    base,
    with_hop(base, 0.3, 3, 0.7),
    with_hop(base, 0.5, 3, 0.7),
    with_hop(base, 2.0, 1, 0.0),
    with_hop(base, 3.0, 3, 0.0, anchor=True, below=True, local=True),
]:
    run = ds.run(t)
    s = score_run(run, ds.qrels, ds.ids)
    per = [
        statistics.fmean(s.ndcg[j] for j, q in enumerate(ds.ids) if ds.fold[q] == f)
        for f in range(FOLDS)
    ]
    print(
        t.describe(),
        f"nDCG@10 {statistics.fmean(s.ndcg):.4f}",
        "per fold",
        " ".join(f"{x:.4f}" for x in per),
        flush=True,
    )
    if t is base:
        base_run = run
    else:
        print("  identical top-100 rankings on every query:", run == base_run, flush=True)
vault.close()
