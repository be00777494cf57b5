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
- with ``--latency`` only: p50/p95 of a hybrid query on both stores in one run, with the
  load average (Milvus Lite is in-process, not a cluster: report it as what it is).

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
from vaultsearch.beir import prepare_vault
from vaultsearch.config import load_config
from vaultsearch.evaluation import load_qrels, load_queries, ndcg_at_k, recall_at_k
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
        for q in ids:
            ranked = [doc_of.get(h.path, h.path) for h in run(texts[q])]
            ndcg.append(ndcg_at_k(ranked, judged[q], 10))
            recall.append(recall_at_k(ranked, judged[q], 100))
        out[name] = {"ndcg@10": round(mean(ndcg), 4), "recall@100": round(mean(recall), 4)}
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


def vaultofknowledge(latency: bool) -> dict[str, Any]:
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
        if latency:
            out["latency_ms"] = _latency(vault, reader, queries)
        reader.close()
        vault.close()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _latency(vault: Any, reader: MilvusReader, queries: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"load_average_before": os.getloadavg()}
    for name, run in (("local", vault.search), ("milvus lite", reader.search)):
        run(queries[0], top_k=10, mode="hybrid")
        times = []
        for q in queries:
            t = time.perf_counter()
            run(q, top_k=10, mode="hybrid")
            times.append((time.perf_counter() - t) * 1000)
        result[name] = {
            "p50": round(percentile(times, 50), 1),
            "p95": round(percentile(times, 95), 1),
        }
    result["load_average_after"] = os.getloadavg()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, help="only the first N judged SciFact queries")
    parser.add_argument("--docs", type=int, help="corpus: the judged documents + N others")
    parser.add_argument("--latency", action="store_true", help="also time queries (idle machine)")
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
        report["vaultofknowledge"] = vaultofknowledge(args.latency)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
