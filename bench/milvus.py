"""The local store against the Milvus store (Milvus Lite), same embedder, same run.

Run: ``.venv/bin/python bench/milvus.py [--queries N] [--latency] [--set KEY=VALUE]``
(needs ``vaultsearch[milvus]`` and ../shared/data; ``--set`` applies to both stores, e.g.
``embedding.sentences=false``). Prints JSON:

- SciFact train: nDCG@10 and Recall@100 for keyword, semantic and hybrid on both stores
  (the first N judged queries, all 809 by default; ``--docs K`` cuts the corpus to their
  judged documents and K others), and Milvus's own ``hybrid_search``
  (RRF over dense + BM25) beside vaultsearch's fusion of the Milvus branches;
- vaultofknowledge: ``push`` of its index (seconds, chunks embedded) and the top-10 note
  overlap between the stores on the 50 first judged queries per mode;
- with ``--latency`` only (a timing run: an idle machine, once): vaultofknowledge copied
  ``--copies`` times under unique folders as ``bench/scale.py`` does (5 copies: about 46k
  chunks), indexed locally (the embeddings come from the per-user cache after the first
  copy) and pushed to a Milvus Lite file, then p50/p95 of warm keyword, semantic and
  hybrid queries on both stores in the same process, the stores alternating query by
  query, with the load average before and after. Milvus Lite is Milvus in one local
  process, not a cluster: report it as what it is. Only the latency section:
  ``bench/milvus.py --skip-scifact --skip-vault --latency``.

The local indexes are built under bench/.cache/milvus (the embeddings come from the
per-user cache after the first run); the Milvus Lite stores beside them are rebuilt by
each run's push.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, mean, percentile, prepared_vault, require
from judged_set import load_judged
from vaultsearch.app.beir import prepare_vault
from vaultsearch.app.evaluation import load_qrels, load_queries, ndcg_at_k, recall_at_k
from vaultsearch.config import load_config
from vaultsearch.search.milvus_reader import MilvusReader
from vaultsearch.store.milvus.target import MilvusTarget

MODES = ("keyword", "semantic", "hybrid")
WORK = CACHE / "milvus"


def scifact(limit: int | None, docs: int | None, flags: tuple[str, ...] = ()) -> dict[str, Any]:
    """``docs``: the corpus cut to the documents judged for the queries run plus the
    first ``docs`` others (a smaller index to embed; both stores search the same one)."""
    data = require(SHARED / "scifact")
    config = load_config(None, None, flags)
    judged = load_qrels(data / "qrels" / "train.tsv")
    texts = load_queries(data / "queries.jsonl")
    ids = [q for q in texts if q in judged][:limit]
    corpus, work = data / "corpus.jsonl", WORK / ("scifact" + _suffix(flags))
    if docs is not None:
        corpus, work = _subset(corpus, {d for q in ids for d in judged[q]}, docs, ids)
    vault, doc_of = prepare_vault(corpus, work, config)
    vault.index()
    store = WORK / "scifact-store.db"
    shutil.rmtree(store, ignore_errors=True)
    pushed = vault.push(str(store), full=True)
    reader = MilvusReader(MilvusTarget.build(str(store)), config, vault.embedder)
    out: dict[str, Any] = {
        "queries": len(ids),
        "documents": len(doc_of),
        "chunks": pushed.chunks,
        "sentences": pushed.sentences,
        "embedded": pushed.embedded,
        "settings": list(flags),
        "sentence_branch": config.embedding.sentences,
        "fusion": {
            "local": f"vaultsearch {config.search.fusion} ({config.search.normalisation})",
            "milvus": f"vaultsearch {config.search.fusion} of the Milvus branches",
            "milvus hybrid (Milvus RRF)": f"Milvus hybrid_search RRFRanker(k={config.search.rrf_k})",
        },
    }
    runs: dict[str, Any] = {}
    for mode in MODES:
        runs[f"local {mode}"] = lambda q, m=mode: vault.search(q, top_k=100, mode=m)
        runs[f"milvus {mode}"] = lambda q, m=mode: reader.search(q, top_k=100, mode=m)
    runs["milvus hybrid (Milvus RRF)"] = lambda q: reader.search(
        q, top_k=100, mode="hybrid", fusion="milvus-rrf"
    )
    for name, run in runs.items():
        ndcg, recall = [], []
        started = time.perf_counter()
        for i, q in enumerate(ids, 1):
            ranked = [doc_of.get(h.path, h.path) for h in run(texts[q])]
            ndcg.append(ndcg_at_k(ranked, judged[q], 10))
            recall.append(recall_at_k(ranked, judged[q], 100))
            if i % 100 == 0:  # a long run's progress, for whoever watches its log
                print(f"{time.strftime('%H:%M:%S')} {name}: {i}/{len(ids)} "
                      f"nDCG@10 so far {mean(ndcg):.4f}", file=sys.stderr, flush=True)  # fmt: skip
        out[name] = {"ndcg@10": round(mean(ndcg), 4), "recall@100": round(mean(recall), 4)}
        out[name]["seconds"] = round(time.perf_counter() - started, 1)
        print(f"{time.strftime('%H:%M:%S')} {name}: {out[name]}", file=sys.stderr, flush=True)
    reader.close()
    vault.close()
    return out


def _suffix(flags: tuple[str, ...]) -> str:
    """A work folder per setting that shapes the index, so runs do not rebuild each other's."""
    return "".join("-" + f.replace("=", "-").replace(".", "-") for f in sorted(flags))


def _subset(corpus: Path, judged: set[str], others: int, ids: list[str]) -> tuple[Path, Path]:
    work = WORK / f"scifact-{len(ids)}q-{others}d"
    work.mkdir(parents=True, exist_ok=True)
    path = work / "corpus.jsonl"
    if not path.is_file():
        kept, extra = [], 0
        for line in corpus.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)["_id"]
            if doc in judged or extra < others:
                extra += doc not in judged
                kept.append(line)
        path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path, work


def vaultofknowledge() -> dict[str, Any]:
    source = require(SHARED / "vaults" / "vaultofknowledge")
    work = Path(tempfile.mkdtemp(prefix="vs-milvus-"))
    try:
        vault = prepared_vault("vaultofknowledge", source, work)
        store = WORK / "vaultofknowledge-store.db"
        shutil.rmtree(store, ignore_errors=True)
        store.parent.mkdir(parents=True, exist_ok=True)
        pushed = vault.push(str(store), full=True)
        reader = MilvusReader(MilvusTarget.build(str(store)), vault.config, vault.embedder)
        queries = [q.query for q in load_judged("vaultofknowledge")][:50]
        out: dict[str, Any] = {
            "push_seconds": pushed.seconds,
            "chunks": pushed.chunks,
            "sentences": pushed.sentences,
            "chunks_embedded": pushed.embedded,
            "load_average": os.getloadavg(),
            "queries": len(queries),
        }
        for mode in MODES:
            shares = []
            for q in queries:
                local = {h.path for h in vault.search(q, top_k=10, mode=mode)}
                remote = {h.path for h in reader.search(q, top_k=10, mode=mode)}
                shares.append(len(local & remote) / max(len(local), 1))
            out[f"top10 overlap {mode}"] = round(mean(shares), 4)
        reader.close()
        vault.close()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def latency(copies: int, count: int, source: Path, flags: tuple[str, ...]) -> dict[str, Any]:
    """Warm query latency per mode, local store against Milvus Lite, at ``copies`` of the
    vault; both stores answer the same queries in the same process."""
    from vaultsearch import Vault

    queries = [q.query for q in load_judged("vaultofknowledge")][:count]
    work = Path(tempfile.mkdtemp(prefix="vs-milvus-latency-"))
    try:
        for i in range(copies):
            shutil.copytree(source, work / "vault" / f"copy{i:02d}")
        vault = Vault.open(work / "vault", index_dir=work / "index", flags=flags)
        started = time.perf_counter()
        built = vault.index()
        build_s = time.perf_counter() - started
        pushed = vault.push(str(work / "store.db"), full=True)
        reader = MilvusReader(
            MilvusTarget.build(str(work / "store.db")), vault.config, vault.embedder
        )
        out: dict[str, Any] = {
            "copies": copies,
            "chunks": pushed.chunks,
            "sentences": pushed.sentences,
            "build_seconds": round(build_s, 1),
            "chunks_embedded_by_build": built.to_dict()["chunks_embedded"],
            "push_seconds": pushed.seconds,
            "push_embedded": pushed.embedded,
            "queries": len(queries),
            "settings": list(flags),
            "load_average_before": os.getloadavg(),
        }
        stores = {"local": vault.search, "milvus lite": reader.search}
        for mode in MODES:
            times: dict[str, list[float]] = {name: [] for name in stores}
            for run in stores.values():
                run(queries[0], top_k=10, mode=mode)  # warm: model, caches, collections
            for i, q in enumerate(queries):
                order = list(stores) if i % 2 == 0 else list(stores)[::-1]
                for name in order:
                    t = time.perf_counter()
                    stores[name](q, top_k=10, mode=mode)
                    times[name].append((time.perf_counter() - t) * 1000)
            out[f"{mode}_ms"] = {
                name: {"p50": round(percentile(t, 50), 1), "p95": round(percentile(t, 95), 1)}
                for name, t in times.items()
            }
        out["load_average_after"] = os.getloadavg()
        reader.close()
        vault.close()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, help="only the first N judged SciFact queries")
    parser.add_argument("--docs", type=int, help="corpus: the judged documents + N others")
    parser.add_argument("--latency", action="store_true", help="also time queries (idle machine)")
    parser.add_argument("--copies", type=int, default=5, help="--latency: copies of the vault")
    parser.add_argument("--latency-queries", type=int, default=50, help="--latency: queries")
    parser.add_argument(
        "--latency-source", type=Path, help="--latency: the vault copied (default vaultofknowledge)"
    )
    parser.add_argument("--skip-scifact", action="store_true")
    parser.add_argument("--skip-vault", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    if not args.skip_scifact:
        report["scifact"] = scifact(args.queries, args.docs, tuple(args.set))
        print(json.dumps(report, indent=2), flush=True)
    if not args.skip_vault:
        report["vaultofknowledge"] = vaultofknowledge()
    if args.latency:
        source = args.latency_source or require(SHARED / "vaults" / "vaultofknowledge")
        report["latency"] = latency(args.copies, args.latency_queries, source, tuple(args.set))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
