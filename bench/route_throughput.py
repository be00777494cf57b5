"""Indexing throughput of the ``openai`` backend against the bundled one, interleaved.

bench/model_routes.py builds each route once, one after the other; on a machine that
other jobs share, the load moves between the two builds and the ratio with it. Here
the same SciFact subset is indexed from scratch several times per route, the order
alternating each round (bundled first, then last), so a drift in load falls on both
routes, and the spread of the per-round ratios shows how much one ratio is worth.
Texts per CPU-second are reported beside the wall rate: the test server runs in this
process, so its embedding and JSON work are counted with the client's, and that figure
moves less with other jobs than seconds do.

Run: `.venv/bin/python bench/route_throughput.py [--docs 400] [--rounds 3]
[--batch-sizes 16,64]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # tests.model_server
from tests.model_server import ModelServer

from _report import CACHE, SHARED, require, write_section
from model_routes import build, subset
from vaultsearch.app.evaluation import load_corpus, write_corpus_as_vault
from vaultsearch.config import Config, EmbeddingConfig, config_from_dict
from vaultsearch.embedding import Embedder
from vaultsearch.store.embedcache import CACHE_ENV


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=400, help="the first N corpus documents")
    parser.add_argument("--rounds", type=int, default=3, help="builds per route")
    parser.add_argument(
        "--batch-sizes", default="16,64", help="texts per /v1/embeddings call, one route each"
    )
    parser.add_argument(
        "--no-sentences",
        action="store_true",
        help="chunk vectors only (embedding.sentences = false on every route)",
    )
    args = parser.parse_args()
    sentences = {"sentences": not args.no_sentences}
    data = require(SHARED / "scifact")
    os.environ[CACHE_ENV] = "off"  # every build embeds every text
    corpus = subset(load_corpus(data / "corpus.jsonl"), set(), args.docs)
    work = CACHE / "route-throughput" / f"docs-{len(corpus)}"
    vault_dir = work / "vault"
    if not (work / "written").is_file():
        shutil.rmtree(work, ignore_errors=True)
        write_corpus_as_vault(corpus, vault_dir)
        (work / "written").write_text("")

    bundled_embedder = Embedder.shared(EmbeddingConfig())
    bundled_embedder.embed_query("warm up")
    server = ModelServer(embedder=bundled_embedder).start()
    routes: dict[str, Config] = {
        "bundled": config_from_dict({"embedding": sentences}, source="bundled model")
    }
    for size in (int(s) for s in args.batch_sizes.split(",")):
        routes[f"endpoint, batch {size}"] = config_from_dict(
            {
                "embedding": {
                    "backend": "openai",
                    "url": server.url,
                    "model": "all-MiniLM-L6-v2-served",
                    "batch_size": size,
                    **sentences,
                }
            },
            source="openai backend at the test server",
        )
    runs: list[dict[str, object]] = []
    try:
        for r in range(args.rounds):
            order = list(routes) if r % 2 == 0 else list(reversed(routes))
            for name in order:
                before = load()
                vault, speed = build("run", vault_dir, work, routes[name])
                vault.close()
                run = {"round": r + 1, "route": name, "load": f"{before} → {load()}", **speed}
                run["texts_per_cpu_s"] = speed["texts"] / speed["cpu_seconds"]
                runs.append(run)
                print(json.dumps(run), flush=True)
    finally:
        server.stop()
    shutil.rmtree(work / "index-run", ignore_errors=True)

    texts = {run["texts"] for run in runs}
    assert len(texts) == 1, f"the routes embedded different texts: {texts}"
    rows = [
        f"| {run['round']} | {run['route']} | {run['seconds']:.1f} | {run['texts_per_s']:.0f} "
        f"| {run['chunks_per_s']:.1f} | {run['texts_per_cpu_s']:.0f} | {run['load']} |"
        for run in runs
    ]

    def per_round(route: str, key: str) -> list[float]:
        base = {run["round"]: run[key] for run in runs if run["route"] == "bundled"}
        return [
            float(run[key]) / float(base[run["round"]])  # type: ignore[arg-type]
            for run in runs
            if run["route"] == route
        ]

    summary = []
    for route in list(routes)[1:]:
        wall, cpu = per_round(route, "texts_per_s"), per_round(route, "texts_per_cpu_s")
        summary.append(
            f"| {route} | {statistics.median(wall):.2f} ({min(wall):.2f}–{max(wall):.2f}) "
            f"| {statistics.median(cpu):.2f} ({min(cpu):.2f}–{max(cpu):.2f}) |"
        )
    first = runs[0]
    body = f"""
Data: the first {len(corpus)} documents of BEIR SciFact (train corpus) written as notes:
{first["chunks"]} chunks and {int(first["texts"]) - int(first["chunks"])} sentences, {first["texts"]} texts
embedded per build{" (`--no-sentences`: chunk vectors only)" if args.no_sentences else ""}. Each route indexed them from scratch {args.rounds} times with the
embedding cache off, the order of the routes reversed every round; the endpoint is
`tests/model_server.py` in the same process, serving the bundled model, so one process's
CPU time covers client, HTTP, JSON and model. Load average (1 min) before → after each build.

| round | route | index s | texts/s | chunks/s | texts per CPU-second | load |
| --- | --- | ---: | ---: | ---: | ---: | --- |
{chr(10).join(rows)}

Endpoint over bundled, per round, median (lowest–highest):

| route | texts/s ratio | texts per CPU-second ratio |
| --- | --- | --- |
{chr(10).join(summary)}
"""
    write_section(
        "route-throughput",
        "Model routes: indexing throughput, interleaved",
        body,
        command=f"python bench/route_throughput.py --docs {args.docs} --rounds {args.rounds} "
        f"--batch-sizes {args.batch_sizes}{' --no-sentences' if args.no_sentences else ''}",
    )


if __name__ == "__main__":
    main()
