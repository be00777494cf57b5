"""SciFact train hybrid with the hop gift off and on: the corpus has no links, so every
query's top 100 must be the same (``search/hops.py`` needs a graph).

Run: ``nice -n 5 .venv/bin/python bench/hop_scifact.py``; prints plain lines.
"""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, require
from hop_cv import with_hop
from tune import trial_of
from tune_data import FOLDS, Dataset, score_run
from vaultsearch.app.beir import prepare_vault
from vaultsearch.app.evaluation import load_qrels, load_queries
from vaultsearch.config import Config

data = require(SHARED / "scifact")
config = Config()
vault, doc_of = prepare_vault(data / "corpus.jsonl", CACHE / "scifact-eval", config)
vault.index()
print("links in graph:", len(vault.orchestrator.snapshot().reader("graph")), flush=True)
ds = Dataset.from_vault(
    "SciFact train",
    vault,
    load_queries(data / "queries.jsonl"),
    load_qrels(data / "qrels" / "train.tsv"),
    100,
    doc_of=doc_of,
)
base = trial_of(config.search)
for t in [
    base,
    with_hop(base, 0.3, 3, 0.7),
    with_hop(base, 0.5, 3, 0.7),
    with_hop(base, 2.0, 1, 0.0),
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
