"""How the ranking defaults were chosen: joint 5-fold cross-validation through the real
pipeline, on SciFact train and the project's judged vault queries together.

Each query's branch results are retrieved once by the orchestrator; every trial is then
scored by re-fusing them with ``QueryOrchestrator.rank`` (``tune_data``), graph boost and
recency included, so what is tuned is what ships. Each fold's trial is the one with the
best mean over the datasets of their training-fold nDCG@10, reported on the held-out fold
of every dataset (``tune_cv``): one configuration for both kinds of data, and a gain
that shows only on the data it was picked on is not a gain. The held-out gain over the
shipped default is tested per query (paired bootstrap, sign test).

In the same run each branch is set against its plain counterpart: keyword against a
default Tantivy English-stemmed BM25 over title + text (one document per note), and
semantic (notes scored by their best chunk) against one vector per whole note.

Run: `make bench-tune` (needs the SciFact index that `make bench-quality` builds and
caches; the judged vaults are indexed on first use and cached in bench/.cache/).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, require, write_section
from judged_set import VAULTS, fold_of, load_judged
from plain_baselines import PlainNote, read_notes
from tune_baselines import baseline_rows
from tune_cv import CVResult, cross_validate, paired_cells
from tune_data import FOLDS, SEED, Dataset, Trial
from vault_quality import judged_vault
from vaultsearch.app.beir import prepare_vault
from vaultsearch.app.evaluation import load_corpus, load_qrels, load_queries
from vaultsearch.config import Config, SearchConfig
from vaultsearch.search.ranking import FusionSettings

BEFORE = SearchConfig(
    fusion="convex", normalisation="tm2c2", chunk_share=0.0, keyword_weight=1.0,
    semantic_weight=1.5, sentence_weight=0.0, candidates=100, graph_share=0.1,
)  # fmt: skip
"""The defaults before sentence vectors (commit bceccfd): no sentence branch."""
SCIFACT = "SciFact train"


def trial_of(s: SearchConfig) -> Trial:
    return Trial(FusionSettings.from_config(s, "hybrid"), s.candidates)


SENTENCE_SHARE = 0.35
"""The shipped sentence share of the semantic side (``search.sentence_weight`` / 0.6)."""


def shares(a: float, w: float) -> dict[str, float]:
    """Convex weights from the semantic side's share ``a`` and the sentence share ``w``
    of it: keyword 1 - a, best chunk a(1 - w), best sentence a w."""
    return {"keyword": 1.0 - a, "semantic": a * (1.0 - w), "sentences": a * w}


def convex_grid(base: Trial) -> list[Trial]:
    """tm2c2 over the shares in full; min-max (below tm2c2 on every SciFact fold before),
    a deeper candidate list and the keyword field boosts around the shipped shares only:
    each SciFact trial costs ~20 s."""
    a0, w0 = 0.6, SENTENCE_SHARE
    grid = [
        ("tm2c2", a, w, share, graph, 100)
        for a in (0.5, 0.6, 0.7)
        for w in (0.0, 0.35, 0.5)
        for share in (0.0, 0.1)
        for graph in (0.05, 0.1, 0.2)
    ]
    grid += [("minmax", a0, w, 0.0, 0.1, 100) for w in (0.0, w0)]
    grid += [("tm2c2", a0, w0, 0.0, 0.1, 200)]
    out = [
        Trial(
            replace(
                base.settings, method="convex", normalisation=norm, chunk_share=share,
                graph_share=graph, weights=shares(a, w),
            ),
            cand,
        )
        for norm, a, w, share, graph, cand in grid
    ]  # fmt: skip
    boosts = [
        ("meta", 0.25), ("meta", 1.0), ("headings", 0.0), ("headings", 0.5),
        ("title", 0.0), ("title", 0.5), ("aliases", 0.5), ("aliases", 2.0),
        ("tags", 0.25), ("tags", 1.0),
    ]  # fmt: skip
    for boost in boosts:
        s = replace(
            base.settings, method="convex", normalisation="tm2c2", chunk_share=0.0,
            graph_share=0.1, weights=shares(a0, w0),
        )  # fmt: skip
        out.append(Trial(s, 100, (boost,)))
    return out


def rrf_grid(base: Trial) -> list[Trial]:
    return [
        Trial(
            replace(
                base.settings,
                method="rrf",
                rrf_k=k,
                graph_share=0.1,
                weights={"keyword": wk, "semantic": 1.0, "sentences": ws},
            ),
            100,
        )
        for k in (10, 30, 60)
        for wk in (1.0, 1.25)
        for ws in (0.0, 0.5)
    ]


def load(
    config: Config, stack: contextlib.ExitStack
) -> tuple[list[Dataset], dict[str, list[PlainNote]]]:
    data = require(SHARED / "scifact")
    work = CACHE / "scifact-eval"
    require(work / "index" / "CURRENT")
    vault, doc_of = prepare_vault(data / "corpus.jsonl", work, config)
    vault.index()
    stack.callback(vault.close)
    qrels = load_qrels(data / "qrels" / "train.tsv")
    notes = {
        SCIFACT: [PlainNote(d, t, x) for d, (t, x) in load_corpus(data / "corpus.jsonl").items()]
    }
    sets = [
        Dataset.from_vault(
            SCIFACT, vault, load_queries(data / "queries.jsonl"), qrels, 100, doc_of=doc_of
        )
    ]
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vs-tune-")))
    for name in VAULTS:
        judged = [q for q in load_judged(name) if q.answered]
        v = stack.enter_context(judged_vault(name, tmp, config))
        notes[name] = read_notes(SHARED / "vaults" / name)
        sets.append(
            Dataset.from_vault(
                name,
                v,
                {q.id: q.query for q in judged},
                {q.id: q.judgments for q in judged},
                10,
                fold={q.id: fold_of(q.id, FOLDS) for q in judged},
                kind={q.id: q.kind for q in judged},
            )
        )
    return sets, notes


def fold_table(cvs: dict[str, CVResult], names: Sequence[str]) -> str:
    head = "| fold | family | chosen on the other folds | " + " | ".join(names) + " |"
    lines = [head, "| ---: | --- | --- | " + " | ".join("---:" for _ in names) + " |"]
    for family, cv in cvs.items():
        for r in cv.folds:
            cells = " | ".join(f"{r.ndcg[n]:.4f} / {r.recall[n]:.4f}" for n in names)
            lines.append(f"| {r.fold} | {family} | {r.chosen} | {cells} |")
        cells = " | ".join("**{:.4f}** / {:.4f}".format(*cv.mean(n)) for n in names)
        lines.append(f"| mean | {family} | | {cells} |")
    return "\n".join(lines)


def gain_table(cv: CVResult, datasets: Sequence[Dataset], before: Trial) -> str:
    lines = [
        "| dataset | per-fold delta nDCG@10 (held-out chosen - before) | mean delta [95% CI] | wins / losses, sign test p |",
        "| --- | --- | --- | --- |",
    ]
    for ds in datasets:
        old = ds.scores(before).ndcg
        new = cv.held_out[ds.name]
        deltas = []
        for f in range(FOLDS):
            idx = [j for j, q in enumerate(ds.ids) if ds.fold[q] == f]
            deltas.append(statistics.fmean(new[j] - old[j] for j in idx))
        lines.append(
            f"| {ds.name} | " + " / ".join(f"{d:+.4f}" for d in deltas)
            + f" | {paired_cells(new, old)} |"
        )  # fmt: skip
    return "\n".join(lines)


def kind_table(ds: Dataset, systems: dict[str, tuple[list[float], list[float]]]) -> str:
    kinds = list(dict.fromkeys(ds.kind[q] for q in ds.ids))
    lines = [
        "| system | all | " + " | ".join(kinds) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in kinds) + " |",
    ]
    for name, (nd, mrr) in systems.items():
        groups = [list(range(len(ds.ids)))]
        groups += [[j for j, q in enumerate(ds.ids) if ds.kind[q] == k] for k in kinds]
        cells = [
            f"{statistics.fmean(nd[j] for j in g):.3f}/{statistics.fmean(mrr[j] for j in g):.3f}"
            for g in groups
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


GRAPH_SHARES = (0.0, 0.05, 0.1, 0.2, 0.3)


def graph_cv(vaults: Sequence[Dataset], shipped: Trial) -> str:
    """The graph share alone, everything else as shipped, 5-fold CV on the judged vault
    queries (SciFact has no links): does any share beat the shipped one held-out?"""
    trials = [
        replace(shipped, settings=replace(shipped.settings, graph_share=g)) for g in GRAPH_SHARES
    ]
    cv = cross_validate(vaults, trials)
    chosen = ", ".join(f"{t.settings.graph_share:g}" for t in cv.chosen)
    rows = [
        f"Shares chosen by the folds: {chosen}.\n",
        "| dataset | held-out CV nDCG@10 (mean of fold means) | shipped | per-query delta [95% CI] | wins / losses, p |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    for d in vaults:
        old = d.scores(shipped).ndcg
        rows.append(
            f"| {d.name} | {cv.mean(d.name)[0]:.4f} | {statistics.fmean(old):.4f} "
            f"| {paired_cells(cv.held_out[d.name], old)} |"
        )
    return "\n".join(rows)


def graph_table(datasets: Sequence[Dataset], chosen: Trial) -> str:
    shares = GRAPH_SHARES
    lines = [
        "| graph share | " + " | ".join(f"{d.name} all / multi_hop" for d in datasets) + " |",
        "| ---: | " + " | ".join("---" for _ in datasets) + " |",
    ]
    for g in shares:
        t = replace(chosen, settings=replace(chosen.settings, graph_share=g))
        cells = []
        for d in datasets:
            nd = d.scores(t).ndcg
            hop = [nd[j] for j, q in enumerate(d.ids) if d.kind[q] == "multi_hop"]
            cells.append(f"{statistics.fmean(nd):.4f} / {statistics.fmean(hop):.4f}")
        lines.append(f"| {g:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-write", action="store_true", help="print, do not update docs")
    parser.add_argument(
        "--warm",
        metavar="I/N",
        help="only score every N-th trial from the I-th into bench/.cache/tune (run N "
        "workers side by side, then once without --warm)",
    )
    args = parser.parse_args()
    config = Config()
    with contextlib.ExitStack() as stack:
        datasets, notes = load(config, stack)
        if args.warm:
            i, n = (int(x) for x in args.warm.split("/"))
            trials = convex_grid(trial_of(config.search)) + rrf_grid(trial_of(config.search))
            for t in trials:
                s = t.settings  # one worker per SciFact ranking (graph and depth aside)
                if zlib.crc32(repr((s.method, s.weights, s.rrf_k, s.normalisation, s.chunk_share, t.boosts)).encode()) % n == i:  # fmt: skip
                    for d in datasets:
                        d.scores(t)
            return
        names = [d.name for d in datasets]
        shipped, before = trial_of(config.search), trial_of(BEFORE)
        cvs = {
            "convex": cross_validate(datasets, convex_grid(shipped)),
            "rrf": cross_validate(datasets, rrf_grid(shipped)),
        }
        scifact = [d for d in datasets if d.name == SCIFACT]
        alone = {
            "convex": cross_validate(scifact, convex_grid(shipped)),
            "rrf": cross_validate(scifact, rrf_grid(shipped)),
        }
        picks = Counter(t.describe() for t in cvs["convex"].chosen)
        vaults = [d for d in datasets if d.kind]
        kinds = "\n\n".join(
            f"**{d.name}** ({len(d.ids)} answered queries), nDCG@10/MRR@10:\n\n"
            + kind_table(
                d,
                {
                    "before (bceccfd defaults, no sentence branch)": (
                        d.scores(before).ndcg,
                        d.scores(before).mrr,
                    ),
                    f"shipped ({shipped.describe()})": (
                        d.scores(shipped).ndcg,
                        d.scores(shipped).mrr,
                    ),
                    "held-out 5-fold CV (convex family)": (
                        cvs["convex"].held_out[d.name],
                        cvs["convex"].held_out_mrr[d.name],
                    ),
                },
            )
            for d in vaults
        )
        body = (
            "Every figure comes from `QueryOrchestrator.rank` re-fusing cached branch results "
            "(graph boost and recency on, as shipped). Datasets: SciFact train (809 queries, "
            f"folds by seed {SEED}) and the answered judged queries of both vaults (folds by "
            "`judged_set.fold_of`). Each fold's trial maximises the mean over the three "
            "datasets of training-fold nDCG@10; cells are held-out nDCG@10 / Recall@100.\n\n"
            f"{fold_table(cvs, names)}\n\nTrials chosen by the convex folds: "
            + "; ".join(f"{t} ({n} folds)" for t, n in picks.most_common())
            + f".\n\nHeld-out convex CV against the defaults before this run ({before.describe()}), "
            "per query, paired:\n\n"
            + gain_table(cvs["convex"], datasets, before)
            + "\n\nThe same grids cross-validated on SciFact train alone (each fold's trial "
            "maximises SciFact's training-fold nDCG@10; the vaults play no part):\n\n"
            + fold_table(alone, [SCIFACT])
            + "\n\n" + gain_table(alone["convex"], scifact, before)
            + "\n\nPer query kind on the judged vaults:\n\n" + kinds
            + f"\n\nGraph share around the shipped default ({shipped.describe()}), whole "
            "judged sets, nDCG@10:\n\n" + graph_table(vaults, shipped)
            + "\n\nGraph share chosen by 5-fold CV on the judged vault queries alone:\n\n"
            + graph_cv(vaults, shipped)
            + "\n\nEach branch against its plain baseline, same run, whole sets, nDCG@10 / "
            "Recall@100:\n\n" + baseline_rows(datasets, shipped, notes)
        )  # fmt: skip
    if args.no_write:
        print(body)
    else:
        write_section("tune", "Ranking", body)


if __name__ == "__main__":
    main()
