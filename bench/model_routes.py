"""The ``openai`` embedding backend against the bundled one, the same model behind both:
SciFact train nDCG@10 and Recall@100 in semantic and hybrid mode (they must agree to
0.002), and indexing throughput through the endpoint against in-process, in one run.

The endpoint is tests/model_server.py: a real HTTP server on 127.0.0.1 answering
``/v1/embeddings`` with the bundled ONNX model, so any difference is the route (JSON
floats, batching over HTTP, the client's normalisation), not the model.

Both indexes are built from scratch with the per-user embedding cache off, bundled
first, then through the endpoint. ``--docs N`` indexes a subset: every document judged
relevant for the evaluated queries, then the corpus in its order up to N documents
(0 = all 5,183); ``--queries N`` evaluates the first N judged queries.

``--vectors-from-cache`` is for a machine too loaded to embed the corpus twice: the
bundled build reads the per-user embedding cache (embedding what it lacks, which fills
it), and the test server answers every text the cache holds with that cached vector,
computing the others (the queries) with the model. The bundled backend embeds one text
per ONNX run, so a vector does not depend on its batch and a cached one is the one the
model would compute; the endpoint build keeps the cache off, so every text still goes
through the client, HTTP, JSON and the backend's normalisation. Indexing speed is then
not compared (bench/route_throughput.py measures it).

Run: `.venv/bin/python bench/model_routes.py [--docs N] [--queries N] [--batch-size 16]`
(the defaults: every document and every judged query).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # tests.model_server
from tests.model_server import ModelServer

from _report import CACHE, SHARED, require, write_section
from vaultsearch import Vault
from vaultsearch.app.beir import run_eval
from vaultsearch.app.evaluation import load_corpus, load_qrels, write_corpus_as_vault
from vaultsearch.config import Config, EmbeddingConfig, config_from_dict
from vaultsearch.embedding import Embedder, text_hash
from vaultsearch.store.embedcache import CACHE_ENV, EmbeddingCache, default_cache_dir

MODES = ("semantic", "hybrid")


def subset(
    corpus: dict[str, tuple[str, str]], judged: set[str], n: int
) -> dict[str, tuple[str, str]]:
    """Every judged document, then the corpus in its order up to ``n`` (0: all)."""
    if n <= 0 or n >= len(corpus):
        return corpus
    keep = [d for d in corpus if d in judged]
    keep += [d for d in corpus if d not in judged][: max(0, n - len(keep))]
    return {d: corpus[d] for d in keep}


class CachedModel:
    """The bundled model as the test server sees it: cached vectors first, the model for
    the rest (see ``--vectors-from-cache``)."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.embedder, self.cache, self.served = embedder, cache, 0
        self.sample: list[tuple[str, np.ndarray]] = []

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        hashes = [text_hash(t) for t in texts]
        found = self.cache.get(self.embedder.cache_key, hashes)
        self.served += sum(h in found for h in hashes)
        if len(self.sample) < 32:
            self.sample += [
                (t, np.frombuffer(found[h], dtype=np.float32))
                for t, h in zip(texts, hashes, strict=True)
                if h in found
            ][: 32 - len(self.sample)]
        missing = [t for t, h in zip(texts, hashes, strict=True) if h not in found]
        computed = iter(self.embedder.embed_texts(missing) if missing else [])
        return np.vstack(
            [
                np.frombuffer(found[h], dtype=np.float32) if h in found else next(computed)
                for h in hashes
            ]
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_texts([text])[0]

    def drift(self) -> tuple[int, float]:
        """The largest difference between a served cached vector and the model's own
        vector for that text now, over the first texts served."""
        texts = [t for t, _ in self.sample]
        fresh = self.embedder.embed_texts(texts) if texts else np.zeros((0, 1))
        cached = np.vstack([v for _, v in self.sample]) if texts else np.zeros((0, 1))
        return len(texts), float(np.abs(fresh - cached).max()) if texts else float("nan")


def build(name: str, vault_dir: Path, work: Path, config: Config) -> tuple[Vault, dict[str, float]]:
    index_dir = work / f"index-{name}"
    shutil.rmtree(index_dir, ignore_errors=True)
    vault = Vault(vault_dir.resolve(), index_dir.resolve(), config)
    t0, c0 = time.perf_counter(), time.process_time()
    summary = vault.index()
    seconds = time.perf_counter() - t0
    texts = summary.chunks_embedded + summary.sentences_embedded
    return vault, {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - c0,
        "chunks": summary.chunks_embedded,
        "texts": texts,
        "chunks_per_s": summary.chunks_embedded / seconds,
        "texts_per_s": texts / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=0, help="corpus subset size; 0 = all")
    parser.add_argument(
        "--queries", type=int, default=0, help="the first N judged queries only; 0 = all 809"
    )
    parser.add_argument("--batch-size", type=int, default=16, help="texts per /v1/embeddings call")
    parser.add_argument(
        "--no-sentences",
        action="store_true",
        help="chunk vectors only (embedding.sentences = false on both routes): the whole corpus "
        "in a fraction of the time; the routes are compared on the same vectors either way",
    )
    parser.add_argument(
        "--vectors-from-cache",
        action="store_true",
        help="the bundled build reads the per-user embedding cache and the test server "
        "answers from it (see the docstring); no speed comparison",
    )
    args = parser.parse_args()
    sentences = {"sentences": not args.no_sentences}
    data = require(SHARED / "scifact")
    user_cache = EmbeddingCache(default_cache_dir(), EmbeddingConfig().cache_size_mb * 2**20)
    os.environ[CACHE_ENV] = "off"  # both routes embed every text in this run
    judged_qrels = load_qrels(data / "qrels" / "train.tsv")
    if args.queries:
        judged_qrels = dict(list(judged_qrels.items())[: args.queries])
    judged = {d for docs in judged_qrels.values() for d in docs}
    corpus = subset(load_corpus(data / "corpus.jsonl"), judged, args.docs)
    work = CACHE / "model-routes" / f"docs-{len(corpus)}-queries-{len(judged_qrels)}"
    if args.no_sentences:
        work = work.with_name(work.name + "-no-sentences")
    if args.vectors_from_cache:
        work = work.with_name(work.name + "-from-cache")
    vault_dir, mapping = work / "vault", work / "doc_ids.json"
    if not mapping.is_file():
        shutil.rmtree(work, ignore_errors=True)
        mapping.parent.mkdir(parents=True)
        mapping.write_text(json.dumps(write_corpus_as_vault(corpus, vault_dir)))
    doc_of = json.loads(mapping.read_text())

    qrels = work / "qrels.tsv"  # the judged queries evaluated, in run_eval's format
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{g}\n" for q, docs in judged_qrels.items() for d, g in docs.items())
    )
    bundled_embedder = Embedder.shared(EmbeddingConfig())
    served = CachedModel(bundled_embedder, user_cache) if args.vectors_from_cache else None
    server = ModelServer(embedder=cast(Embedder, served or bundled_embedder)).start()
    endpoint_config = config_from_dict(
        {
            "embedding": {
                "backend": "openai",
                "url": server.url,
                "model": "all-MiniLM-L6-v2-served",
                "batch_size": args.batch_size,
                **sentences,
            }
        },
        source="openai backend at the test server",
    )
    bundled_embedder.embed_query("warm up")  # both routes start with the model loaded
    try:
        routes = {}
        bundled_config = config_from_dict({"embedding": sentences}, source="bundled model")
        for name, config in (("bundled", bundled_config), ("endpoint", endpoint_config)):
            if args.vectors_from_cache and name == "bundled":
                os.environ.pop(CACHE_ENV)
            vault, speed = build(name, vault_dir, work, config)
            os.environ[CACHE_ENV] = "off"
            print(name, "indexed", speed, flush=True)
            quality = run_eval(
                data / "corpus.jsonl",
                data / "queries.jsonl",
                qrels,
                modes=MODES,
                config=config,
                vault=vault,
                doc_of=doc_of,
            )
            routes[name] = (speed, quality)
            vault.close()
            print(name, speed, {m: q["ndcg@10"] for m, q in quality.items()}, flush=True)
    finally:
        server.stop()
        user_cache.close()

    if args.vectors_from_cache:
        assert served is not None
        from_cache(args, routes, len(corpus), server.texts_embedded, served)
        return
    rows = []
    for name, (speed, quality) in routes.items():
        label = (
            "bundled (ONNX Runtime in process)"
            if name == "bundled"
            else (f"openai backend → test server (batch {args.batch_size})")
        )
        rows.append(
            f"| {label} | {quality['semantic']['ndcg@10']:.4f} | {quality['hybrid']['ndcg@10']:.4f} "
            f"| {quality['semantic']['recall@100']:.4f} | {quality['hybrid']['recall@100']:.4f} "
            f"| {speed['seconds']:.0f} | {speed['chunks']} | {speed['texts']} | {speed['texts_per_s']:.0f} "
            f"| {speed['chunks_per_s']:.1f} |"
        )
    b, e = routes["bundled"], routes["endpoint"]
    diffs = ", ".join(f"{m} {e[1][m]['ndcg@10'] - b[1][m]['ndcg@10']:+.4f}" for m in MODES)
    queries = b[1]["hybrid"].get("queries", len(judged_qrels))
    body = f"""
Data: BEIR SciFact training split, {queries} judged queries, {len(corpus)} documents written as
notes ({"the whole corpus" if len(corpus) == 5183 else "a subset: every document judged relevant for these queries, then the corpus in its order"}).
{"Sentence vectors off on both routes (`--no-sentences`): chunk vectors only. " if args.no_sentences else ""}Both indexes built from scratch in this run with the embedding cache off, bundled first;
the endpoint is `tests/model_server.py` on 127.0.0.1 serving the same bundled model, so
the model is the same and only the route differs.

| route | semantic nDCG@10 | hybrid nDCG@10 | semantic Recall@100 | hybrid Recall@100 | index s | chunks | texts (chunks + sentences) | texts/s | chunks/s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{chr(10).join(rows)}

nDCG@10, endpoint minus bundled: {diffs}. Indexing through the endpoint ran at
{e[0]["texts_per_s"] / b[0]["texts_per_s"]:.2f}x the bundled backend's texts per second (the
server embeds on the same CPU cores as the indexer, over HTTP and JSON). The machine is
shared and loaded (see the load average): the ratio is of one run, not a stable figure.
"""
    write_section(
        "model-routes",
        "Model routes: the openai backend against the bundled model",
        body,
        command=f"python bench/model_routes.py --docs {args.docs} --queries {args.queries} "
        f"--batch-size {args.batch_size}{' --no-sentences' if args.no_sentences else ''}",
    )


def from_cache(
    args: argparse.Namespace,
    routes: dict[str, tuple[dict[str, float], dict[str, dict[str, float]]]],
    docs: int,
    texts: int,
    model: CachedModel,
) -> None:
    """The section of a ``--vectors-from-cache`` run: quality only."""
    rows = [
        f"| {name} | {q['semantic']['ndcg@10']:.4f} | {q['hybrid']['ndcg@10']:.4f} "
        f"| {q['semantic']['recall@100']:.4f} | {q['hybrid']['recall@100']:.4f} |"
        for name, (_, q) in routes.items()
    ]
    b, e = routes["bundled"][1], routes["endpoint"][1]
    sampled, drift = model.drift()
    diffs = ", ".join(
        f"{m} nDCG@10 {e[m]['ndcg@10'] - b[m]['ndcg@10']:+.4f}, "
        f"Recall@100 {e[m]['recall@100'] - b[m]['recall@100']:+.4f}"
        for m in MODES
    )
    body = f"""
Data: BEIR SciFact training split, {b["hybrid"].get("queries")} judged queries, {docs} documents
written as notes. {"Sentence vectors off on both routes (`--no-sentences`): chunk vectors only. " if args.no_sentences else ""}Both indexes built from scratch in this run. The machine was too loaded
to embed the corpus twice before the deadline, so the vectors were made once: the
bundled build read the per-user embedding cache (embedding what it lacked), and
`tests/model_server.py` answered the endpoint's `/v1/embeddings` calls ({texts} texts in
batches of {args.batch_size}, the endpoint build with the cache off) with the cached vector of
the bundled model for {model.served} of them and with the model itself for the rest (the
queries, the probe). The bundled backend runs one text per ONNX run, so a vector does not
depend on its batch: the cached vector is the one the model computes (the first {sampled} served, embedded again
by the model after the run: largest difference of a coordinate {drift:.1e}). What is compared is
the route: client batching, HTTP, JSON floats, the backend's normalisation, the
fingerprint, and the queries embedded through the endpoint.

| route | semantic nDCG@10 | hybrid nDCG@10 | semantic Recall@100 | hybrid Recall@100 |
| --- | ---: | ---: | ---: | ---: |
{chr(10).join(rows)}

Endpoint minus bundled: {diffs}. Indexing speed is not compared in this run (see
"Model routes: indexing throughput, interleaved").
"""
    write_section(
        "model-routes",
        "Model routes: the openai backend against the bundled model",
        body,
        command=f"python bench/model_routes.py --docs {args.docs} --queries {args.queries} "
        f"--batch-size {args.batch_size}{' --no-sentences' if args.no_sentences else ''}"
        " --vectors-from-cache",
    )


if __name__ == "__main__":
    main()
