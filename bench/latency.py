"""Warm query latency on an index of at least 50,000 chunks, and whether the two
retrievals really overlap on the thread pool.

The index is SciFact written several times into separate folders. Copies share their
embedded text, so the embedding cache (seeded from the quality bench's catalog when
present) makes building it cost parsing and indexing, not model time; FAISS and
Tantivy still hold every chunk, which is what query latency depends on.

Run: `make bench-latency` (or `.venv/bin/python bench/latency.py [--chunks 50000]`).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, percentile, require, write_section
from vaultsearch import Vault
from vaultsearch.app.evaluation import load_corpus, load_queries, write_corpus_as_vault
from vaultsearch.config import config_from_dict


def build(target_chunks: int) -> Vault:
    data = require(SHARED / "scifact")
    corpus = load_corpus(data / "corpus.jsonl")
    work = CACHE / "latency"
    vault_dir, index_dir = work / "vault", work / "index"
    copies_file = work / "copies.json"
    copies = json.loads(copies_file.read_text())["copies"] if copies_file.is_file() else 0
    vault = Vault.open(vault_dir if vault_dir.is_dir() else _mkdir(vault_dir), index_dir=index_dir)
    seed = CACHE / "scifact-eval" / "index" / "catalog.sqlite"
    while True:
        if copies and vault.layout.exists() and vault.status()["chunks"] >= target_chunks:
            if vault.check().status != "current":  # built by older code: bring it up to date
                t = time.perf_counter()
                s = vault.index()
                print(
                    f"updated: {s.sentences_embedded} sentences embedded, {time.perf_counter() - t:.0f} s"
                )
            return vault
        write_corpus_as_vault(corpus, vault_dir / f"copy{copies:02d}")
        copies += 1
        copies_file.write_text(json.dumps({"copies": copies}))
        if seed.is_file() and not vault.layout.exists():
            _seed_embeddings(seed, vault)
        t = time.perf_counter()
        s = vault.index()
        print(
            f"copy {copies}: {s.chunks_written} chunks, {s.chunks_embedded} embedded, {time.perf_counter() - t:.0f} s",
            flush=True,
        )


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _seed_embeddings(seed: Path, vault: Vault) -> None:
    from vaultsearch.store.catalog import Catalog

    # where an index from before generations kept it: the first build reuses its vectors
    Catalog(vault.layout.legacy_catalog).close()  # creates the schema
    db = sqlite3.connect(vault.layout.legacy_catalog)
    db.execute("ATTACH DATABASE ? AS seed", (str(seed),))
    db.execute("INSERT OR IGNORE INTO embeddings SELECT * FROM seed.embeddings")
    db.commit()
    db.close()


WORKER = """
import json, sys, time
from vaultsearch import Vault
vault = Vault.open(sys.argv[1], index_dir=sys.argv[2])
for line in sys.stdin:
    t = time.perf_counter()
    vault.search(json.loads(line), top_k=10)
    print(1000 * (time.perf_counter() - t), flush=True)
"""


class Revision:
    """An earlier commit's code in a process of its own, searching the same index when
    asked: the before and after of a change timed query by query in one run. It must read
    this index's format (commits from the same generation layout do)."""

    def __init__(self, rev: str, vault: Vault, folder: Path) -> None:
        root = Path(__file__).resolve().parent.parent
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", f"{rev}^{{commit}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.name = f"{rev} ({sha})" if not sha.startswith(rev) else sha
        code = folder / sha
        if not (code / "src").is_dir():
            code.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(
                ["git", "-C", str(root), "archive", sha, "src"], capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(code / "src"), "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(vault.root), str(vault.index_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=code,
        )

    def search(self, query: str) -> float:
        """The revision's own timing of one warm search, in ms."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(query) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} could not search this index (see its error above)")
        return float(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="REV",
        help="also time this git revision's hybrid search on the same index, query by query "
        "in turn (repeatable)",
    )
    args = parser.parse_args()
    vault = build(args.chunks)
    status = vault.status()
    texts = list(load_queries(SHARED / "scifact" / "queries.jsonl").values())[: args.queries]
    orch = vault.orchestrator
    vault.search(texts[0])  # model load and snapshot open are not part of warm latency

    # the same index read without the sentence branch: its cost as a ratio in this run
    unsentenced = Vault.open(
        vault.root,
        index_dir=vault.index_dir,
        config=config_from_dict({"search": {"sentence_weight": 0.0}}),
    )
    unsentenced.search(texts[0])
    earlier = [Revision(rev, vault, CACHE / "latency" / "revisions") for rev in args.against]
    results: dict[str, list[float]] = {}
    overlaps: list[float] = []
    branch_sum: list[float] = []
    after_ms: list[float] = []

    def timed(searcher: Vault, q: str, mode: str) -> float:
        t = time.perf_counter()
        searcher.search(q, top_k=10, mode=mode)
        return 1000 * (time.perf_counter() - t)

    for mode in ("keyword", "semantic"):
        for q in texts[:20]:
            vault.search(q, mode=mode)
        results[mode] = [timed(vault, q, mode) for q in texts]
    # hybrid with and without the sentence branch (and each earlier revision), query by
    # query in turn, each query in a rotated order: all see the same machine state, and
    # none always runs first, on caches the others evicted
    for q in texts[:20]:
        vault.search(q)
        unsentenced.search(q)
        for r in earlier:
            r.search(q)
    hyb: list[float] = []
    bare: list[float] = []
    before: dict[str, list[float]] = {r.name: [] for r in earlier}

    def with_sentences(q: str) -> None:
        hyb.append(timed(vault, q, "hybrid"))
        tm = orch.last_timings
        sem = tm["semantic_end"] - tm["semantic_start"]
        kw = tm["keyword_end"] - tm["keyword_start"]
        inter = min(tm["semantic_end"], tm["keyword_end"]) - max(
            tm["semantic_start"], tm["keyword_start"]
        )
        overlaps.append(max(inter, 0.0) / max(min(sem, kw), 1e-9))
        branch_sum.append(1000 * (sem + kw))
        after_ms.append(1000 * tm["after_branches"])

    runs: list[Callable[[str], None]] = [
        with_sentences,
        lambda q: bare.append(timed(unsentenced, q, "hybrid")),
        *[lambda q, r=r: before[r.name].append(r.search(q)) for r in earlier],
    ]
    for i, q in enumerate(texts):
        for run in runs[i % len(runs) :] + runs[: i % len(runs)]:
            run(q)
    results["hybrid"], results["hybrid without the sentence branch"] = hyb, bare
    for name, times in before.items():
        results[f"hybrid, the code at {name}"] = times
    unsentenced.close()
    for r in earlier:
        r.close()

    rows = "\n".join(
        f"| {mode} | {percentile(v, 50):.1f} | {percentile(v, 95):.1f} | {max(v):.1f} |"
        for mode, v in results.items()
    )
    ratios = "".join(
        f"\n- against the code at {name}: p95 {percentile(hyb, 95) / percentile(v, 95):.2f}x, "
        f"p50 {percentile(hyb, 50) / percentile(v, 50):.2f}x"
        for name, v in before.items()
    )
    body = f"""
Index: {status["notes"]} notes, {status["chunks"]} chunks ({status["vectors"]} vectors, {status["keyword_docs"]}
keyword documents), SciFact written into several folders. {len(texts)} SciFact claims as queries, top 10,
warm (model loaded, index open), query embedding included. The hybrid rows ran query by query
in turn (earlier revisions in processes of their own on the same index, `--against REV`).

| mode | p50 ms | p95 ms | max ms |
| --- | ---: | ---: | ---: |
{rows}

Target: hybrid p95 under 50 ms — {"met" if percentile(hyb, 95) < 50 else "missed"} ({percentile(hyb, 95):.1f} ms).

Hybrid as a ratio in this run:
- against the sentence branch turned off ({status.get("sentences", 0)} sentence vectors in the index): p95 {percentile(hyb, 95) / percentile(bare, 95):.2f}x, p50 {percentile(hyb, 50) / percentile(bare, 50):.2f}x{ratios}

Parallel retrieval: in hybrid queries the keyword branch ran {100 * sum(overlaps) / len(overlaps):.0f}% of its
time (mean) alongside the semantic branch (embedding + FAISS); the two branches took p50
{percentile(branch_sum, 50):.1f} ms added up, the hybrid query p50 {percentile(hyb, 50):.1f} ms wall time with fusion,
grouping and snippets included, against {percentile(results["semantic"], 50):.1f} ms for the semantic branch alone.
The keyword side also scores what it found with the query vector while FAISS runs; after
the branches meet, the sentences of the semantic chunks and the completion take p50
{percentile(after_ms, 50):.1f} ms.
"""
    write_section("latency", "Query latency at 50,000+ chunks", body)


if __name__ == "__main__":
    main()
