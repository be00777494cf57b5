"""Approximate vector indexes against the exact flat scan, on real vectors only.

Sets: the chunk vectors of SciFact train (or the subset ``--queries/--docs`` names) and
of both shared vaults, and one large set of real vectors: every vector of the bundled
model in the per-user embedding cache (chunks and sentences of whatever was indexed on
this machine) plus those chunk vectors, each distinct vector once (duplicates would make
recall meaningless). Each set's queries are real vectors held out of it (SciFact: its
judged claims, embedded as a search embeds a query; the others: 400 of their own rows,
removed from the base). For each index: recall@10 against exact flat, bytes per vector
(of the serialized index), build time (2 threads), and single-query p50/p95 latency on
one thread, then the same for the search path itself (``SegmentedVectors`` with the
index ``store/ann.py`` writes). The machine is shared: the load average is printed and
times are to be read as ratios inside one run. Then SciFact nDCG@10 (semantic and
hybrid) through the real ``Vault``: flat, the approximate path, and flat over vectors
rounded to float16, with the share of claims whose top-10 is flat's.

The indexes are built without sentence vectors (``embedding.sentences`` off): on a
loaded machine embedding them for three corpora takes hours.

Run: `PYTHONPATH=src .venv/bin/python bench/ann.py WORK [--queries N --docs N]`
(WORK a scratch folder outside the repository; the indexes built there are kept, and
with the embedding cache warm no text is embedded again).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, percentile, require
from sentence_storage import _subset
from vaultsearch._runtime import prepare_openmp

prepare_openmp()

import faiss  # noqa: E402

from vaultsearch.app.beir import prepare_vault  # noqa: E402
from vaultsearch.app.evaluation import evaluate, load_qrels, load_queries  # noqa: E402
from vaultsearch.app.vault import Vault  # noqa: E402
from vaultsearch.config import Config, load_config  # noqa: E402
from vaultsearch.embedding import Embedder  # noqa: E402
from vaultsearch.store import ann  # noqa: E402
from vaultsearch.store.catalog import open_catalog_for_reading  # noqa: E402
from vaultsearch.store.embedcache import CACHE_FILE, default_cache_dir  # noqa: E402
from vaultsearch.store.segments import Entry, Segment  # noqa: E402
from vaultsearch.store.vectors import SegmentedVectors, normalize  # noqa: E402
from vaultsearch.store.verify import settings_of  # noqa: E402

K = 10
HELD_OUT = 400


def _config() -> Config:
    """Without sentence vectors: embedding them for all three corpora on a loaded machine
    would take hours here (~30 texts/s), and they are not what this compares."""
    config = load_config(None)
    return dataclasses.replace(
        config, embedding=dataclasses.replace(config.embedding, sentences=False)
    )


def _chunk_vectors(vault: Vault) -> np.ndarray:
    generation = vault.layout.live
    settings = settings_of(generation, vault.config)
    catalog = open_catalog_for_reading(generation.catalog)
    try:
        return catalog.vectors_for_chunks(settings.embedding_key, settings.dimension)[1]
    finally:
        catalog.close()


def _scifact(work: Path, queries: int, docs: int) -> tuple[Path, Path, Path]:
    """The corpus, claims and judgments, or a subset (the judged documents of the first
    ``queries`` judged claims, filled up with the corpus's first documents to ``docs``)."""
    data = require(SHARED / "scifact")
    if not queries and not docs:
        return data / "corpus.jsonl", data / "queries.jsonl", data / "qrels" / "train.tsv"
    return _subset(data, work / "scifact-data", queries or 10_000, docs or 10_000, shuffle=False)


CORPORA = ("scifact", "dendron-site", "vaultofknowledge")


def _corpora(work: Path, scifact: Path, names: list[str]) -> dict[str, np.ndarray]:
    """Chunk vectors per corpus, kept in WORK between runs."""
    out = {}
    for name in names:
        cached = work / f"{name}.npy"
        if not cached.is_file():
            if name == "scifact":
                vault, _ = prepare_vault(scifact, work / "scifact", _config())
            else:
                root = require(SHARED / "vaults" / name)
                vault = Vault(root, (work / name / "index").resolve(), _config())
            vault.index()
            np.save(cached, _chunk_vectors(vault))
        out[name] = np.load(cached)
    return out


def _cached_vectors(model: str) -> np.ndarray:
    """Every vector of the bundled model in the per-user embedding cache: real texts
    (chunks and sentences of the shared corpora and of whatever else was indexed here)."""
    folder = default_cache_dir()
    if folder is None or not (folder / CACHE_FILE).is_file():
        return np.zeros((0, 384), np.float32)
    db = sqlite3.connect(f"file:{folder / CACHE_FILE}?mode=ro", uri=True)
    try:
        blobs = [b for (b,) in db.execute("SELECT vector FROM vectors WHERE model=?", (model,))]
    finally:
        db.close()
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def _distinct(rows: np.ndarray) -> np.ndarray:
    rows = normalize(rows)
    _, first = np.unique(rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))),
                         return_index=True)  # fmt: skip
    return rows[np.sort(first)]


def _split(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rows = _distinct(rows)
    picked = np.random.default_rng(seed).permutation(len(rows))
    return rows[picked[HELD_OUT:]], rows[picked[:HELD_OUT]]


def _claims(work: Path, qrels: Path) -> np.ndarray:
    """The judged claims, embedded as a search embeds a query."""
    cached = work / "claims.npy"
    if not cached.is_file():
        judged = {line.split("\t")[0] for line in qrels.read_text(encoding="utf-8").splitlines()}
        lines = (SHARED / "scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        texts = [
            q["text"] for line in lines if line.strip() and (q := json.loads(line))["_id"] in judged
        ]
        embedder = Embedder.shared(load_config(None).embedding)
        np.save(cached, np.stack([embedder.embed_query(t) for t in texts]).astype(np.float32))
    return normalize(np.load(cached))


def _exact(base: np.ndarray, queries: np.ndarray) -> np.ndarray:
    index = faiss.IndexFlatIP(base.shape[1])
    index.add(base)
    return index.search(queries, K)[1]


def _variants(n: int, dim: int) -> list[tuple[str, object, dict[str, int]]]:
    nlist = round(4 * np.sqrt(n))
    ip = faiss.METRIC_INNER_PRODUCT
    sq8 = faiss.ScalarQuantizer.QT_8bit
    out: list[tuple[str, object, dict[str, int]]] = [("flat float32", faiss.IndexFlatIP(dim), {})]
    out.append(
        ("flat float16", faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, ip), {})
    )
    for name, make in (
        ("HNSW32 flat", lambda: faiss.IndexHNSWFlat(dim, 32, ip)),
        ("HNSW32 SQ8", lambda: faiss.IndexHNSWSQ(dim, sq8, 32, ip)),
    ):
        index = make()
        for ef in (64, 128):
            out.append((f"{name} ef{ef}", index, {"efSearch": ef}))
    for name, make in (
        ("IVF flat", lambda: faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, ip)),
        (
            "IVF SQ8",
            lambda: faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist, sq8, ip),
        ),
    ):
        index = make()
        for probe in (8, 16, 32):
            out.append((f"{name} nlist{nlist} nprobe{probe}", index, {"nprobe": probe}))
    return out


def _measure(name: str, base: np.ndarray, queries: np.ndarray) -> list[str]:
    truth = _exact(base, queries)
    rows = []
    built: dict[int, tuple[float, int]] = {}
    for label, index, params in _variants(len(base), base.shape[1]):
        if id(index) not in built:
            faiss.omp_set_num_threads(2)
            start = time.perf_counter()
            if not index.is_trained:
                sample = base[np.random.default_rng(0).permutation(len(base))[:100_000]]
                index.train(sample)
            if isinstance(index, faiss.IndexHNSW):
                index.hnsw.efConstruction = 40
            index.add(base)
            seconds = time.perf_counter() - start
            built[id(index)] = (seconds, len(faiss.serialize_index(index)))
        seconds, size = built[id(index)]
        faiss.omp_set_num_threads(1)
        if "efSearch" in params:
            faiss.downcast_index(index).hnsw.efSearch = params["efSearch"]
        if "nprobe" in params:
            faiss.extract_index_ivf(index).nprobe = params["nprobe"]
        found = index.search(queries, K)[1]
        recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)])
        times = []
        for q in queries:
            start = time.perf_counter()
            index.search(q.reshape(1, -1), K)
            times.append((time.perf_counter() - start) * 1000)
        rows.append(
            f"| {name} | {len(base):,} | {label} | {recall:.4f} | {size / len(base):,.0f} | "
            f"{seconds:.1f} | {percentile(times, 50):.2f} | {percentile(times, 95):.2f} |"
        )
        print(rows[-1], flush=True)
    rows.append(_product_path(name, base, queries, truth))
    print(rows[-1], flush=True)
    return rows


def _product_path(name: str, base: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> str:
    """What a search reads: ``SegmentedVectors`` over one segment with the index
    ``store/ann.py`` builds (its oversampling and exact re-scoring included)."""
    faiss.omp_set_num_threads(2)
    start = time.perf_counter()
    body = ann.build(ann.DEFAULT_KIND, base)
    seconds = time.perf_counter() - start
    ids = np.arange(len(base), dtype=np.int64)
    entry = Entry("bench", len(ids), (), ("", ""), (ann.DEFAULT_KIND, ""))
    reader = SegmentedVectors(
        base.shape[1], [Segment(entry, ids=ids, rows=base, ann_index=ann.load_bytes(body))]
    )
    hits, times = 0, []
    for q, t in zip(queries, truth, strict=True):
        start = time.perf_counter()
        found = reader.search(q, K)
        times.append((time.perf_counter() - start) * 1000)
        hits += len({i for i, _ in found} & set(t.tolist()))
    return (
        f"| {name} | {len(base):,} | store/ann.py search (re-scored) | {hits / truth.size:.4f} | "
        f"{len(body) / len(base):,.0f} | {seconds:.1f} | {percentile(times, 50):.2f} | "
        f"{percentile(times, 95):.2f} |"
    )


def _ndcg(work: Path, corpus: Path, claims: Path, qrels: Path) -> list[str]:
    """Flat against every segment searched through its approximate index (as a
    threshold of 0 writes it), and against flat over the vectors rounded to float16 (what
    storing the catalog's embeddings as float16 would give), on the one SciFact index:
    the snapshot's reader is swapped, so only the vector search differs. Also the share
    of claims whose top-10 notes are the same as flat's."""
    vault, doc_of = prepare_vault(corpus, work / "scifact", _config())
    vault.index()
    snap = vault.orchestrator.snapshot()
    vectors = snap.reader("vectors")
    flat = vectors.vectors
    ids, rows = flat.ids(), np.concatenate([np.asarray(s.rows) for s in flat.segments])
    index = faiss.deserialize_index(np.frombuffer(ann.build(ann.DEFAULT_KIND, rows), np.uint8))
    entry = Entry("bench", len(ids), (), ("", ""), (ann.DEFAULT_KIND, ""))
    readers = {
        "flat": flat,
        f"{ann.DEFAULT_KIND} (store/ann.py)": SegmentedVectors(
            flat.dim, [Segment(entry, ids=ids, rows=rows, ann_index=index)]
        ),
        "flat, float16-rounded": SegmentedVectors.from_arrays(
            ids, rows.astype(np.float16).astype(np.float32)
        ),
    }
    judged = load_qrels(qrels)
    texts = load_queries(claims)
    qids = [q for q in texts if q in judged]
    out, tops = [], {}
    for name, reader in readers.items():
        vectors.vectors = reader
        cells = []
        for mode in ("semantic", "hybrid"):
            run = {
                q: [
                    doc_of.get(h.path, h.path) for h in vault.search(texts[q], top_k=100, mode=mode)
                ]
                for q in qids
            }
            tops[name, mode] = {q: r[:10] for q, r in run.items()}
            same = np.mean([tops[name, mode][q] == tops["flat", mode][q] for q in qids])
            ndcg = evaluate(run, {q: judged[q] for q in qids})["ndcg@10"]
            cells += [f"{ndcg:.4f}", f"{same:.3f}"]
        out.append(f"| {name} | {len(qids)} | " + " | ".join(cells) + " |")
        print(out[-1], flush=True)
    vectors.vectors = flat
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path)
    parser.add_argument("--queries", type=int, default=0, help="a SciFact subset: judged claims")
    parser.add_argument("--docs", type=int, default=0, help="a SciFact subset: documents")
    parser.add_argument("--corpora", default=",".join(CORPORA), help="of " + ",".join(CORPORA))
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-ndcg", action="store_true")
    parser.add_argument("--skip-recall", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    corpus, claims, qrels = _scifact(args.work, args.queries, args.docs)
    corpora = _corpora(args.work, corpus, args.corpora.split(","))
    if not args.skip_recall:
        print("| set | rows | index | recall@10 | bytes/vector | build s | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|---|---|")
        if "scifact" in corpora:
            _measure("SciFact chunks", _distinct(corpora["scifact"]), _claims(args.work, qrels))
        for name in ("dendron-site", "vaultofknowledge"):
            if name in corpora:
                _measure(f"{name} chunks", *_split(corpora[name], 1))
        if not args.skip_large:
            model = Embedder.shared(load_config(None).embedding).cache_key
            large = np.concatenate([_cached_vectors(model), *corpora.values()])
            _measure("user cache + chunks", *_split(large, 2))
    print(f"load average after recall: {os.getloadavg()}", flush=True)
    if not args.skip_ndcg:
        print(
            "| vectors read as | claims | semantic nDCG@10 | same top-10 | hybrid nDCG@10 "
            "| same top-10 |\n|---|---|---|---|---|---|"
        )
        _ndcg(args.work, corpus, claims, qrels)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
