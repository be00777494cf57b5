"""The approximate vector index against flat where it is used: past ``ann_threshold``.

bench/ann.py scores nDCG on SciFact alone (about 5k notes), where a vault searches
flat, so it had to swap the reader by hand. Here the vault is big enough for the
writer itself to build the approximate index: the SciFact train corpus as notes (as
``vaultsearch eval`` writes it) plus vaultofknowledge copied K times under unique
folders (``copy00/`` ...) as distractors, which are simply non-relevant to every
claim. It is indexed twice with sentence vectors off, ``[index] vector_index = flat``
and ``hnsw``, in a scratch folder outside the repository; with the embedding cache
warm nothing is embedded (the ``embedded`` count says so).

Reported: chunk rows and the rows under an approximate index, nDCG@10 and Recall@100
of the SciFact train claims per mode through the real ``Vault`` for both, the share of
claims whose top-10 documents are the same, and recall@10 of the hnsw vector search
path against the flat one for the same claims (chunk ids, embedded as a search embeds
a query). Quality only: no timings.

Run: ``PYTHONPATH=src nice -n 5 .venv/bin/python bench/ann_scale.py WORK [--copies 5]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, require
from vaultsearch import Vault
from vaultsearch.app.evaluation import (
    evaluate,
    load_corpus,
    load_qrels,
    load_queries,
    write_corpus_as_vault,
)
from vaultsearch.store.atomic import atomic_write_json

KINDS = ("flat", "hnsw")
MODES = ("semantic", "hybrid")


def build_vault(work: Path, copies: int) -> tuple[Path, dict[str, str]]:
    """SciFact notes at the root (their names are the doc ids' note names), distractor
    copies in folders; written once and kept in WORK."""
    data = require(SHARED / "scifact")
    source = require(SHARED / "vaults" / "vaultofknowledge")
    vault = work / "vault"
    mapping = work / "doc_ids.json"
    if mapping.is_file():
        doc_of = json.loads(mapping.read_text(encoding="utf-8"))
    else:
        doc_of = write_corpus_as_vault(load_corpus(data / "corpus.jsonl"), vault)
        atomic_write_json(mapping, doc_of)
    for i in range(copies):
        if not (vault / f"copy{i:02d}").is_dir():
            shutil.copytree(source, vault / f"copy{i:02d}")
    return vault.resolve(), doc_of


def open_and_index(vault: Path, work: Path, kind: str) -> tuple[Vault, dict[str, Any]]:
    v = Vault.open(
        vault,
        index_dir=work / f"index-{kind}",
        flags=("embedding.sentences=false", f"index.vector_index={kind}"),
    )
    summary = v.index()
    segments = v.orchestrator.snapshot().reader("vectors").vectors.segments
    info = {
        "embedded": summary.chunks_embedded + summary.sentences_embedded,
        "rows": sum(s.entry.live for s in segments),
        "segments": [(s.entry.rows, s.entry.ann[0] if s.entry.ann else "flat") for s in segments],
        "approximate_rows": sum(s.entry.rows for s in segments if s.entry.ann is not None),
        "threshold": v.config.index.ann_threshold,
    }
    print(json.dumps({kind: info}), flush=True)
    return v, info


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path, help="a scratch folder outside the repository")
    parser.add_argument("--copies", type=int, default=5, help="vaultofknowledge copies")
    parser.add_argument("--limit", type=int, default=0, help="only the first N judged claims")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    vault, doc_of = build_vault(work, args.copies)
    vaults, infos = {}, {}
    for kind in KINDS:
        vaults[kind], infos[kind] = open_and_index(vault, work, kind)
    if not infos["hnsw"]["approximate_rows"]:
        sys.exit(
            f"no segment passed ann_threshold {infos['hnsw']['threshold']}: "
            f"{infos['hnsw']['segments']}; pass more --copies"
        )
    judged = load_qrels(SHARED / "scifact" / "qrels" / "train.tsv")
    texts = load_queries(SHARED / "scifact" / "queries.jsonl")
    qids = [q for q in texts if q in judged]
    qids = qids[: args.limit] if args.limit else qids
    truth = {q: judged[q] for q in qids}

    rows: dict[tuple[str, str], dict[str, float]] = {}
    tops: dict[tuple[str, str], dict[str, list[str]]] = {}
    for kind, v in vaults.items():
        for mode in MODES:
            run = {
                q: [doc_of.get(h.path, h.path) for h in v.search(texts[q], top_k=100, mode=mode)]
                for q in qids
            }
            tops[kind, mode] = {q: r[:10] for q, r in run.items()}
            rows[kind, mode] = evaluate(run, truth)

    flat_vectors = vaults["flat"].orchestrator.snapshot().reader("vectors").vectors
    hnsw_vectors = vaults["hnsw"].orchestrator.snapshot().reader("vectors").vectors
    embedder = vaults["hnsw"].embedder
    overlaps = []
    for q in qids:
        query = np.asarray(embedder.embed_query(texts[q]), dtype=np.float32)
        exact = {i for i, _ in flat_vectors.search(query, 10)}
        found = {i for i, _ in hnsw_vectors.search(query, 10)}
        overlaps.append(len(exact & found) / max(len(exact), 1))
    vector_recall = float(np.mean(overlaps))

    info = infos["hnsw"]
    print(
        f"\nrows {info['rows']:,} (ann_threshold {info['threshold']:,}); segments of the "
        f"hnsw index: {info['segments']}; embedded: flat {infos['flat']['embedded']}, "
        f"hnsw {info['embedded']}; {len(qids)} judged SciFact train claims; "
        f"{args.copies} vaultofknowledge copies\n"
    )
    print("| mode | vectors | nDCG@10 | Recall@100 | same top-10 as flat |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        for kind in KINDS:
            same = np.mean([tops[kind, mode][q] == tops["flat", mode][q] for q in qids])
            r = rows[kind, mode]
            print(f"| {mode} | {kind} | {r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {same:.3f} |")
        delta = rows["hnsw", mode]["ndcg@10"] - rows["flat", mode]["ndcg@10"]
        print(f"| {mode} | hnsw - flat | {delta:+.4f} | | |")
    print(f"\nvector search recall@10, hnsw path against flat: {vector_recall:.4f}")
    for v in vaults.values():
        v.close()


if __name__ == "__main__":
    main()
