"""How the ranking defaults were chosen: 5-fold cross-validation through the real pipeline.

Each query's branch results are retrieved once by the orchestrator (``retrieve``);
every setting is then scored by re-fusing them with ``QueryOrchestrator.rank``, the
function every search runs (graph boost and recency included), so what is tuned is
what ships. Settings are picked on four folds and reported on the fifth: a gain that
shows only on the data it was picked on is not a gain.

In the same run each branch is set against its plain counterpart: keyword against a
default Tantivy English-stemmed BM25 over title + text (one document per note), and
semantic (notes scored by their best chunk) against one vector per whole note.

More judged data (e.g. the hand-judged vault queries) joins with one call:
``datasets.append(Dataset.from_vault(name, vault, queries, qrels))``.

Run: `make bench-tune` (needs the index that `make bench-quality` builds and caches).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, require, write_section
from vaultsearch.beir import prepare_vault
from vaultsearch.config import Config
from vaultsearch.evaluation import (
    load_corpus,
    load_qrels,
    load_queries,
    ndcg_at_k,
    recall_at_k,
)
from vaultsearch.search.orchestrator import QueryOrchestrator, Retrieved
from vaultsearch.search.query import parse_query
from vaultsearch.search.ranking import FusionSettings
from vaultsearch.vault import Vault

K = 400  # candidates per branch, as the orchestrator takes for top_k = 100
FOLDS = 5
SEED = 11

Run = dict[str, list[str]]
Qrels = Mapping[str, Mapping[str, int]]


@dataclass
class Dataset:
    """Judged queries over one indexed vault, with each query's branch results cached."""

    name: str
    orchestrator: QueryOrchestrator
    doc_of: Mapping[str, str]
    """Note path -> judged document id."""
    queries: dict[str, str]
    qrels: Qrels
    retrieved: dict[str, Retrieved]

    @classmethod
    def from_vault(
        cls, name: str, vault: Vault, queries: Mapping[str, str], qrels: Qrels,
        doc_of: Mapping[str, str] | None = None,
    ) -> Dataset:  # fmt: skip
        orch = vault.orchestrator
        snap = orch.snapshot()
        ids = [q for q in queries if qrels.get(q)]
        retrieved = {q: orch.retrieve(snap, parse_query(queries[q]), "hybrid", K) for q in ids}
        mapping = doc_of if doc_of is not None else {p: p for p in snap.note_by_path}
        return cls(name, orch, mapping, {q: queries[q] for q in ids}, qrels, retrieved)

    def run(self, settings: FusionSettings, branches: Sequence[str] | None = None) -> Run:
        orch, snap = self.orchestrator, self.orchestrator.snapshot()
        out: Run = {}
        for qid, r in self.retrieved.items():
            if branches is not None:
                r = replace(r, branches={b: r.branches.get(b, []) for b in branches})
            mode = "hybrid" if branches is None or len(branches) == 2 else branches[0]
            ranked = orch.rank(snap, r, mode, settings=settings)[:100]
            out[qid] = [self.doc_of.get(snap.notes[c.note_id].path, "") for c in ranked]
        return out


def per_query(run: Run, qrels: Qrels, ids: Iterable[str]) -> tuple[list[float], list[float]]:
    ids = list(ids)
    return (
        [ndcg_at_k(run.get(q, []), qrels[q], 10) for q in ids],
        [recall_at_k(run.get(q, []), qrels[q], 100) for q in ids],
    )


def folds(ids: Sequence[str], k: int = FOLDS) -> list[list[str]]:
    shuffled = sorted(ids)
    random.Random(SEED).shuffle(shuffled)
    return [shuffled[i::k] for i in range(k)]


def grid(base: FusionSettings) -> dict[str, list[FusionSettings]]:
    convex = [
        replace(
            base, method="convex", normalisation=norm, chunk_share=share,
            weights={"keyword": 1.0 - a, "semantic": a},
        )
        for norm in ("tm2c2", "minmax")
        for a in (0.3, 0.4, 0.5, 0.6, 0.7)
        for share in (0.0, 0.1)
    ]  # fmt: skip
    rrf = [
        replace(base, method="rrf", rrf_k=k, weights={"keyword": wk, "semantic": 1.0})
        for k in (10, 30, 60)
        for wk in (0.75, 1.0, 1.25)
    ]
    return {"convex": convex, "rrf": rrf}


def describe(s: FusionSettings) -> str:
    if s.method == "rrf":
        return f"rrf k={s.rrf_k:g} w_kw={s.weights['keyword']:g}"
    a = s.weights["semantic"] / (s.weights["semantic"] + s.weights["keyword"])
    return f"convex {s.normalisation} a_sem={a:.2g} share={s.chunk_share:g}"


@dataclass
class FoldResult:
    fold: int
    chosen: str
    ndcg: float
    recall: float


def cross_validate(
    data: Dataset, settings: Sequence[FusionSettings]
) -> tuple[list[FoldResult], dict[int, tuple[list[float], list[float]]]]:
    """Per fold: pick the setting with the best mean nDCG@10 on the other folds, report it
    on this one. Returns the held-out results and every setting's per-query scores."""
    ids = list(data.retrieved)
    scores = {i: per_query(data.run(s), data.qrels, ids) for i, s in enumerate(settings)}
    index = {q: n for n, q in enumerate(ids)}
    results = []
    for f, held in enumerate(folds(ids)):
        held_set = set(held)
        train = [index[q] for q in ids if q not in held_set]
        test = [index[q] for q in held]
        best = max(scores, key=lambda i: (statistics.fmean(scores[i][0][j] for j in train), -i))
        nd, rc = scores[best]
        results.append(
            FoldResult(
                f + 1,
                describe(settings[best]),
                statistics.fmean(nd[j] for j in test),
                statistics.fmean(rc[j] for j in test),
            )
        )
    return results, scores


# --- plain baselines -----------------------------------------------------------------
def plain_bm25(corpus: Mapping[str, tuple[str, str]], queries: Mapping[str, str]) -> Run:
    """Tantivy as it comes: its default English-stemming tokenizer, one field of title +
    text per document, the query parsed leniently as typed (terms OR-ed)."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("body", tokenizer_name="en_stem")
    schema = sb.build()
    with tempfile.TemporaryDirectory() as tmp:
        index = tantivy.Index(schema, path=tmp)
        w = index.writer(heap_size=64_000_000, num_threads=1)
        for doc_id, (title, text) in corpus.items():
            w.add_document(tantivy.Document(id=doc_id, body=f"{title}\n{text}"))
        w.commit()
        index.reload()
        searcher = index.searcher()
        run: Run = {}
        for qid, text in queries.items():
            query, _ = index.parse_query_lenient(text, ["body"])
            hits = searcher.search(query, 100).hits
            run[qid] = [searcher.doc(a)["id"][0] for _, a in hits]
    return run


def whole_note_vectors(
    corpus: Mapping[str, tuple[str, str]], queries: Mapping[str, str], vault: Vault
) -> Run:
    """One vector per document (title + text, cut at the model's window), cosine top 100."""
    ids = sorted(corpus)
    cache = CACHE / "scifact-whole-note-vectors.npy"
    if cache.is_file():
        vectors = np.load(cache)
    else:
        texts = [f"{corpus[i][0]}\n{corpus[i][1]}" for i in ids]
        vectors = np.concatenate(
            [vault.embedder.embed_texts(texts[s : s + 64]) for s in range(0, len(texts), 64)]
        )
        np.save(cache, vectors)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    run: Run = {}
    for qid, text in queries.items():
        q = vault.embedder.embed_query(text)
        q = q / np.linalg.norm(q)
        top = np.argsort(-(vectors @ q))[:100]
        run[qid] = [ids[i] for i in top]
    return run


def mean_row(name: str, run: Run, qrels: Qrels, ids: Sequence[str]) -> str:
    nd, rc = per_query(run, qrels, ids)
    return f"| {name} | {statistics.fmean(nd):.4f} | {statistics.fmean(rc):.4f} |"


def fold_table(results: Mapping[str, list[FoldResult]]) -> str:
    lines = [
        "| fold | method | chosen on the other folds | nDCG@10 | Recall@100 |",
        "| ---: | --- | --- | ---: | ---: |",
    ]
    for method, rs in results.items():
        lines += [
            f"| {r.fold} | {method} | {r.chosen} | {r.ndcg:.4f} | {r.recall:.4f} |" for r in rs
        ]
        lines.append(
            f"| mean | {method} | | **{statistics.fmean(r.ndcg for r in rs):.4f}** "
            f"| **{statistics.fmean(r.recall for r in rs):.4f}** |"
        )
    return "\n".join(lines)


def scifact(config: Config) -> tuple[Dataset, dict[str, tuple[str, str]], Vault]:
    data = require(SHARED / "scifact")
    work = CACHE / "scifact-eval"
    require(work / "index" / "CURRENT")
    vault, doc_of = prepare_vault(data / "corpus.jsonl", work, config)
    vault.index()
    qrels = load_qrels(data / "qrels" / "train.tsv")
    queries = load_queries(data / "queries.jsonl")
    ds = Dataset.from_vault("SciFact train", vault, queries, qrels, doc_of)
    return ds, load_corpus(data / "corpus.jsonl"), vault


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-write", action="store_true", help="print, do not update docs")
    args = parser.parse_args()
    config = Config()
    data, corpus, vault = scifact(config)
    datasets = [data]  # the judged vault queries join here (Dataset.from_vault)
    base = FusionSettings.from_config(config.search, "hybrid")
    sections = []
    for ds in datasets:
        ids = list(ds.retrieved)
        cv = {m: cross_validate(ds, ss)[0] for m, ss in grid(base).items()}
        shipped = ds.run(base)
        rows = [mean_row(f"shipped default ({describe(base)})", shipped, ds.qrels, ids)]
        rows.append(mean_row("keyword branch (ours)", ds.run(base, ["keyword"]), ds.qrels, ids))
        rows.append(mean_row("semantic branch (ours, best chunk)", ds.run(base, ["semantic"]), ds.qrels, ids))  # fmt: skip
        share = replace(base, chunk_share=0.1)
        rows.append(mean_row("semantic branch, best chunk + 0.1 x rest", ds.run(share, ["semantic"]), ds.qrels, ids))  # fmt: skip
        if ds is data:
            qs = {q: ds.queries[q] for q in ids}
            rows.append(mean_row("plain Tantivy BM25 (en_stem, title + text)", plain_bm25(corpus, qs), ds.qrels, ids))  # fmt: skip
            rows.append(mean_row("whole-note MiniLM vectors", whole_note_vectors(corpus, qs, vault), ds.qrels, ids))  # fmt: skip
        sections.append(
            f"### {ds.name} ({len(ids)} queries)\n\n"
            f"Held-out results of {FOLDS}-fold cross-validation (folds fixed by seed {SEED}; "
            f"each fold's setting chosen by mean nDCG@10 on the other four):\n\n"
            f"{fold_table(cv)}\n\nWhole set, same run:\n\n"
            "| system | nDCG@10 | Recall@100 |\n| --- | ---: | ---: |\n" + "\n".join(rows)
        )
    body = (
        "Every figure comes from `QueryOrchestrator.rank` re-fusing cached branch results "
        "(graph boost and recency on, as shipped).\n\n" + "\n\n".join(sections)
    )
    if args.no_write:
        print(body)
    else:
        write_section("tune", "Ranking", body)


if __name__ == "__main__":
    main()
