"""Retrieval quality on BEIR SciFact (training split): keyword, semantic, hybrid, and
the LlamaIndex baseline, all in one run so the latency ratios share a machine state.

Run: `make bench-quality` (or `.venv/bin/python bench/quality.py [--no-baseline]`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, require, write_section
from vaultsearch.app.beir import prepare_vault, run_eval
from vaultsearch.config import load_config

MODES = ("keyword", "semantic", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--config", help="a config.toml to evaluate instead of the defaults")
    args = parser.parse_args()
    data = require(SHARED / "scifact")
    corpus, queries, qrels = (
        data / "corpus.jsonl",
        data / "queries.jsonl",
        data / "qrels" / "train.tsv",
    )
    config = load_config(args.config)
    vault, doc_of = prepare_vault(corpus, CACHE / "scifact-eval", config)
    summary = vault.index()
    status = vault.status()
    ours = run_eval(corpus, queries, qrels, modes=MODES, config=config, vault=vault, doc_of=doc_of)

    rows = [
        f"| vaultsearch {mode} | {r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
        for mode, r in ours.items()
    ]
    baseline_note = "Baseline not run (--no-baseline)."
    if not args.no_baseline:
        from baseline_llamaindex import run_baseline
        from vaultsearch.app.evaluation import load_corpus, load_qrels, load_queries

        b = run_baseline(load_corpus(corpus), load_queries(queries), load_qrels(qrels))
        rows.append(
            f"| LlamaIndex baseline (VectorStoreIndex + BM25Retriever, QueryFusionRetriever RRF) "
            f"| {b['ndcg@10']:.4f} | {b['recall@100']:.4f} | {b['p50_ms']:.1f} | {b['p95_ms']:.1f} |"
        )
        h = ours["hybrid"]
        baseline_note = (
            f"Hybrid vs baseline: nDCG@10 {h['ndcg@10'] / b['ndcg@10']:.3f}x, "
            f"p50 latency {b['p50_ms'] / h['p50_ms']:.1f}x faster. "
            f"Baseline build: {b['build_seconds']:.0f} s."
        )
    body = f"""
Data: BEIR SciFact training split, {ours["hybrid"]["queries"]} judged queries, {status["notes"]}
documents written as notes ({status["chunks"]} chunks). Configuration: {config.source}.
Latency per query includes the query embedding (semantic, hybrid), top 100 notes.

| system | nDCG@10 | Recall@100 | p50 ms | p95 ms |
| --- | ---: | ---: | ---: | ---: |
{chr(10).join(rows)}

{baseline_note}
Index build for this corpus: {summary.seconds:.0f} s this run ({summary.chunks_embedded} chunks embedded;
0 when the cached catalog in bench/.cache is current).
"""
    write_section("quality", "Retrieval quality (SciFact, training split)", body)


if __name__ == "__main__":
    main()
