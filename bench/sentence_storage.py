"""SciFact-train nDCG@10 of semantic and hybrid search with the sentence vectors stored
as float32, float16 (what the index stores) and int8 with a per-row scale, on one
index: each variant is made from the catalog's float32 sentence embeddings and read by
the same scoring code, so only the storage differs.

Run: `.venv/bin/python bench/sentence_storage.py WORK [--queries N] [--docs N]` (WORK a
scratch folder outside the repository). A subset (the judged documents of the first N
judged queries plus random others, up to --docs) keeps it affordable on a loaded
machine; quote it as a subset.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, require
from vaultsearch.app.beir import prepare_vault, run_eval
from vaultsearch.config import load_config
from vaultsearch.store.catalog import open_catalog_for_reading
from vaultsearch.store.derived.sentences import SentenceVectors
from vaultsearch.store.segments import Entry, Segment
from vaultsearch.store.vectors import normalize
from vaultsearch.store.verify import settings_of


class Float32Sentences(SentenceVectors):
    def _decoded(self, seg: Segment, rows: np.ndarray) -> np.ndarray:
        return np.asarray(seg.rows[rows], dtype=np.float32)


class Int8Sentences(SentenceVectors):
    """int8 codes with one float32 scale a row (max |component| / 127)."""

    scales: np.ndarray

    def _decoded(self, seg: Segment, rows: np.ndarray) -> np.ndarray:
        return seg.rows[rows].astype(np.float32) * self.scales[rows, None]


def _variants(ids: np.ndarray, vectors: np.ndarray) -> dict[str, SentenceVectors]:
    order = np.argsort(ids, kind="stable")
    ids, rows = ids[order], normalize(vectors)[order]
    entry = Entry("bench", len(ids), (), ("", ""))
    scales = np.maximum(np.abs(rows).max(axis=1), 1e-12) / 127.0
    codes = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    int8 = Int8Sentences(rows.shape[1], [Segment(entry, ids=ids, rows=codes)])
    int8.scales = scales.astype(np.float32)
    return {
        "float32": Float32Sentences(rows.shape[1], [Segment(entry, ids=ids, rows=rows)]),
        "float16": SentenceVectors.from_arrays(ids, vectors),
        "int8": int8,
    }


def _subset(
    data: Path, work: Path, queries: int, docs: int, shuffle: bool = True
) -> tuple[Path, Path, Path]:
    """``shuffle=False`` fills up with the corpus's first documents, the ones an earlier
    subset embedded (the embedding cache then has them)."""
    lines = (data / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()
    judged: dict[str, set[str]] = {}
    for line in lines[1:]:
        qid, doc, _ = line.split("\t")
        judged.setdefault(qid, set()).add(doc)
    picked = list(judged)[:queries]
    wanted = set().union(*(judged[q] for q in picked))
    corpus = (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    others = [c for c in corpus if json.loads(c)["_id"] not in wanted]
    if shuffle:
        random.Random(23).shuffle(others)
    kept = [c for c in corpus if json.loads(c)["_id"] in wanted]
    kept += others[: max(0, docs - len(kept))]
    work.mkdir(parents=True, exist_ok=True)
    (work / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    rows = [lines[0]] + [ln for ln in lines[1:] if ln.split("\t")[0] in set(picked)]
    (work / "qrels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return work / "corpus.jsonl", data / "queries.jsonl", work / "qrels.tsv"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=10_000)
    args = parser.parse_args()
    data = require(SHARED / "scifact")
    corpus, queries, qrels = _subset(data, args.work / "data", args.queries, args.docs)
    config = load_config(None)
    vault, doc_of = prepare_vault(corpus, args.work / "eval", config)
    vault.index()
    generation = vault.layout.live
    settings = settings_of(generation, config)
    catalog = open_catalog_for_reading(generation.catalog)
    try:
        ids, vectors = catalog.sentence_vectors(
            settings.embedding_key, settings.dimension, catalog.chunk_ids()
        )
    finally:
        catalog.close()
    out: dict[str, dict[str, float]] = {}
    for name, reader in _variants(ids, vectors).items():
        vault.orchestrator.snapshot().readers["sentences"] = reader
        scores = run_eval(
            corpus, queries, qrels, modes=("semantic", "hybrid"), vault=vault, doc_of=doc_of
        )
        out[name] = {mode: round(r["ndcg@10"], 4) for mode, r in scores.items()}
    status = vault.status()
    print(json.dumps({"notes": status["notes"], "sentences": len(ids), "ndcg@10": out}, indent=2))


if __name__ == "__main__":
    main()
