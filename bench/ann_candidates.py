"""Smaller approximate indexes against flat where they are used: bytes, recall, nDCG.

The HNSW32 SQ8 file adds 656 bytes a row (384 bytes of codes and 2 x 32 neighbour ids),
which puts a 200k-chunk index at 4.40 KB per chunk against a target of 4. Each
candidate here is built over the chunk rows of the ``ann_scale.py`` vault (SciFact
train as notes plus vaultofknowledge copies, past ``ann_threshold``), indexed once
with ``index.vector_index = "flat"`` and sentence vectors off; the snapshot's vector
reader is then swapped for one segment of the same rows carrying the candidate's
index, so only the vector search differs (as ``ann.py``'s nDCG does). The search
path is the shipped one (``store/vectors.py``: the index's candidates re-scored from
the float16 rows), with the candidate's efSearch and oversampling.

Reported per candidate: bytes per row of the serialized index, recall@10 of the
search path against flat (chunk ids) and nDCG@10 semantic and hybrid on the 809
judged SciFact train claims, with the difference from flat. Quality only: no timings.

Run: ``PYTHONPATH=src nice -n 5 .venv/bin/python bench/ann_candidates.py WORK``
(WORK as for ``ann_scale.py``; its ``index-flat`` is reused).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED
from ann_scale import build_vault, open_and_index
from vaultsearch._runtime import prepare_openmp

prepare_openmp()

import faiss  # noqa: E402

from vaultsearch.app.evaluation import evaluate, load_qrels, load_queries  # noqa: E402
from vaultsearch.store import ann  # noqa: E402
from vaultsearch.store.segments import Entry, Segment  # noqa: E402
from vaultsearch.store.vectors import SegmentedVectors, decode  # noqa: E402

IP = faiss.METRIC_INNER_PRODUCT
SQ = faiss.ScalarQuantizer


def _hnsw_sq(qtype: int, m: int) -> Callable[[int], Any]:
    return lambda d: faiss.IndexHNSWSQ(d, qtype, m, IP)


def _hnsw_pq(codes: int, m: int) -> Callable[[int], Any]:
    """PQ codes under an HNSW graph; L2 ranks unit vectors as inner product does."""
    return lambda d: faiss.IndexHNSWPQ(d, codes, m)


CANDIDATES: dict[str, Callable[[int], Any]] = {
    "HNSW32 SQ8 (shipped)": _hnsw_sq(SQ.QT_8bit, 32),
    "HNSW16 SQ8": _hnsw_sq(SQ.QT_8bit, 16),
    "HNSW16 SQ6": _hnsw_sq(SQ.QT_6bit, 16),
    "HNSW16 SQ4": _hnsw_sq(SQ.QT_4bit, 16),
    "HNSW16 PQ96": _hnsw_pq(96, 16),
    "HNSW16 PQ64": _hnsw_pq(64, 16),
    "HNSW16 PQ48": _hnsw_pq(48, 16),
    "HNSW16 PQ32": _hnsw_pq(32, 16),
    "HNSW12 PQ48": _hnsw_pq(48, 12),
}
SEARCHES = ((128, 4), (128, 8), (160, 16))
"""(efSearch, oversample) each candidate is searched with."""


def build(make: Callable[[int], Any], rows: np.ndarray) -> tuple[Any, int]:
    index = make(rows.shape[1])
    index.hnsw.efConstruction = ann.BUILD_DEPTH
    index.train(rows)
    index.add(rows)
    body = faiss.serialize_index(index)
    return faiss.deserialize_index(body), len(body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path, help="a scratch folder outside the repository")
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--only", help="comma-separated candidate names")
    parser.add_argument("--limit", type=int, default=0, help="only the first N judged claims")
    parser.add_argument(
        "--ndcg", type=int, default=2, help="nDCG for this many, smallest first, of recall >= 0.95"
    )
    args = parser.parse_args()
    work = args.work.resolve()
    vault_dir, doc_of = build_vault(work, args.copies)
    vault, _info = open_and_index(vault_dir, work, "flat")
    vectors = vault.orchestrator.snapshot().reader("vectors")
    flat = vectors.vectors
    ids = flat.ids()
    stored = np.concatenate(
        [
            np.asarray(s.rows)[s.live_mask if s.live_mask is not None else slice(None)]
            for s in flat.segments
        ]
    )
    rows = decode(stored)
    judged = load_qrels(SHARED / "scifact" / "qrels" / "train.tsv")
    texts = load_queries(SHARED / "scifact" / "queries.jsonl")
    qids = [q for q in texts if q in judged]
    qids = qids[: args.limit] if args.limit else qids
    truth = {q: judged[q] for q in qids}
    queries = {q: np.asarray(vault.embedder.embed_query(texts[q]), dtype=np.float32) for q in qids}
    exact = {q: [i for i, _ in flat.search(v, 10)] for q, v in queries.items()}

    def quality(reader: SegmentedVectors) -> dict[str, float]:
        vectors.vectors = reader
        out = {}
        for mode in ("semantic", "hybrid"):
            run = {
                q: [
                    doc_of.get(h.path, h.path) for h in vault.search(texts[q], top_k=100, mode=mode)
                ]
                for q in qids
            }
            out[mode] = evaluate(run, truth)["ndcg@10"]
        vectors.vectors = flat
        return out

    print(f"rows {len(ids):,}; {len(qids)} claims", flush=True)
    print(
        "| index | efSearch | oversample | bytes/row | recall@10 | nDCG semantic (Δ) | nDCG hybrid (Δ) |"
    )
    print("|---|---:|---:|---:|---:|---|---|")
    wanted = set(args.only.split(",")) if args.only else set(CANDIDATES)
    measured = []
    for name, make in CANDIDATES.items():
        if name not in wanted:
            continue
        faiss.omp_set_num_threads(1)
        index, size = build(make, rows)
        entry = Entry("bench", len(ids), (), ("", ""), (ann.DEFAULT_KIND, ""))
        reader = SegmentedVectors(flat.dim, [Segment(entry, ids=ids, rows=stored, ann_index=index)])
        for depth, oversample in SEARCHES:
            ann.SEARCH_DEPTH, ann.OVERSAMPLE = depth, oversample
            found = {q: {i for i, _ in reader.search(v, 10)} for q, v in queries.items()}
            recall = float(np.mean([len(found[q] & set(exact[q])) / 10 for q in qids]))
            measured.append((name, depth, oversample, size / len(ids), recall, reader))
            print(
                f"{name} ef{depth} x{oversample}: {size / len(ids):,.0f} B/row, recall@10 {recall:.4f}",
                flush=True,
            )
    print(
        "| index | efSearch | oversample | bytes/row | recall@10 | nDCG semantic (Δ) | nDCG hybrid (Δ) |"
    )
    print("|---|---:|---:|---:|---:|---|---|")
    results = []
    base = quality(flat)
    print(f"flat nDCG@10 {base}", flush=True)
    scored = 0
    for name, depth, oversample, size, recall, reader in sorted(measured, key=lambda m: m[3]):
        row = {"index": name, "ef": depth, "oversample": oversample, "bytes_per_row": size,
               "recall": recall}  # fmt: skip
        cells = "not measured | |"
        if recall >= 0.95 and scored < args.ndcg:
            scored += 1
            ann.SEARCH_DEPTH, ann.OVERSAMPLE = depth, oversample
            ndcg = quality(reader)
            row.update(ndcg)
            cells = (
                f"{ndcg['semantic']:.4f} ({ndcg['semantic'] - base['semantic']:+.4f}) | "
                f"{ndcg['hybrid']:.4f} ({ndcg['hybrid'] - base['hybrid']:+.4f}) |"
            )
        results.append(row)
        print(
            f"| {name} | {depth} | {oversample} | {size:,.0f} | {recall:.4f} | {cells}", flush=True
        )
    (work / "ann_candidates.json").write_text(json.dumps({"flat": base, "rows": results}, indent=1))
    vault.close()


if __name__ == "__main__":
    main()
