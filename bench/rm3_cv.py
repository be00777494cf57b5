"""RM3-style keyword expansion from the shipped ranking's top notes, SciFact train, per fold.

For each query: the shipped ranking (cached branch results) gives the top `fb` notes; their
best chunks' texts are stemmed as the index stems; each stem's weight is the sum over those
notes of (its share of the note's words) x (the note's fused score); the `m` heaviest stems
not in the query and not stopwords are added to the keyword query as expansions at boost
`b`; the keyword branch is re-run and fused again exactly as shipped. A note only the new
keyword hits bring in has no semantic completion (counted as not found there).

Run: ``nice -n 15 .venv/bin/python bench/rm3_cv.py`` (sentence vectors off, as
``scifact_folds.py --no-sentences``); prints plain lines, writes nothing. Measured, not
shipped (issue 27)."""

import statistics
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune import trial_of
from tune_data import FOLDS, K, scifact_train, score_run
from vaultsearch.config import Config
from vaultsearch.search.query import parse_query, words
from vaultsearch.search.stopwords import STOPWORDS
from vaultsearch.store import keywords as kwmod
from vaultsearch.store.derived import Query
from vaultsearch.store.fuzzy import Expansion

vault, ds, config = scifact_train(Config(), sentences=False)
orch, snap = ds.orchestrator, ds.orchestrator.snapshot()
shipped = trial_of(config.search)
base = score_run(ds.run(shipped), ds.qrels, ds.ids)
reader = snap.reader("keywords")


def per_fold(s):
    return [
        statistics.fmean(s.ndcg[j] for j, q in enumerate(ds.ids) if ds.fold[q] == f)
        for f in range(FOLDS)
    ]


print(
    "shipped",
    f"{statistics.fmean(base.ndcg):.4f}",
    " ".join(f"{x:.4f}" for x in per_fold(base)),
    flush=True,
)
# feedback stems per query, once (fb up to 5)
fb_terms = {}
for qid, r in ds.retrieved.items():
    ranked = orch.rank(snap, r, "hybrid", settings=shipped.settings)[:5]
    rows = snap.chunk_rows(c.chunks[0] for c in ranked)
    p = parse_query(ds.queries[qid])
    qstems = {snap.stem(w.lower()) for w in p.keyword_terms}
    per = []
    for c in ranked:
        row = rows.get(c.chunks[0])
        if row is None:
            continue
        toks = [
            snap.stem(w.lower())
            for w in words(row.text)
            if w.lower() not in STOPWORDS and len(w) > 2 and not w.isdigit()
        ]
        cnt = Counter(t for t in toks if t not in qstems)
        n = sum(cnt.values()) or 1
        per.append(({t: v / n for t, v in cnt.items()}, c.score))
    fb_terms[qid] = (per, p)
results = {}
for fb in (3, 5):
    for m in (5, 10):
        for boost in (0.1, 0.3):
            kwmod.EXPANSION_BOOST = boost
            new = {}
            for qid, r in ds.retrieved.items():
                per, p = fb_terms[qid]
                w = Counter()
                for dist, score in per[:fb]:
                    for t, v in dist.items():
                        w[t] += v * score
                extra = tuple(Expansion(t, t, "rm3") for t, _ in w.most_common(m))
                q = Query(
                    terms=tuple(p.keyword_terms),
                    phrases=tuple(tuple(x) for x in p.phrases),
                    excluded=tuple(p.excluded),
                    expansions=tuple(r.expansions) + extra,
                    tie_order=snap.tie_order,
                )
                br = dict(r.branches)
                br["keyword"] = reader.search(q, K, None)
                new[qid] = replace(r, branches=br)
            s = score_run(replace(ds, retrieved=new, _memo={}).run(shipped), ds.qrels, ds.ids)
            results[(fb, m, boost)] = s
            print(
                f"fb={fb} m={m} boost={boost}",
                f"{statistics.fmean(s.ndcg):.4f}",
                " ".join(f"{x:.4f}" for x in per_fold(s)),
                flush=True,
            )
kwmod.EXPANSION_BOOST = 0.7
# CV: choose on 4 folds, score held-out
held = []
for f in range(FOLDS):

    def train(s, f=f):
        return statistics.fmean(s.ndcg[j] for j, q in enumerate(ds.ids) if ds.fold[q] != f)

    best = max(results, key=lambda k: train(results[k]))
    choice = best if train(results[best]) > train(base) else None
    s = results[choice] if choice else base
    h = statistics.fmean(s.ndcg[j] for j, q in enumerate(ds.ids) if ds.fold[q] == f)
    held.append(h)
    print(
        f"fold {f + 1}: chose {choice or 'shipped'} held-out {h:.4f} (shipped {per_fold(base)[f]:.4f})"
    )
print("CV mean", f"{statistics.fmean(held):.4f}")
vault.close()
