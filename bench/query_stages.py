"""Where a warm hybrid search spends its CPU, stage by stage, on a kept index (the
folder ``scale.py --keep`` leaves), and two versions of the code timed turn about.

On a shared machine a search's wall time is mostly waiting for a core, so the stages
are measured in CPU time of the thread that runs them (``time.thread_time``: the query
pool's thread apart from the caller's), by wrapping the orchestrator's steps, the
readers' searches and the fusion; nothing in the search changes. The queries are
``scale.py``'s: the titles of 50 notes drawn by ``random.Random(7)``.

``--against SRC`` times this checkout and another (``SRC``, its ``src`` folder) in two
long-lived processes, batches of ``--batch`` queries in turn, the order flipped each
round, so the machine's load falls on both alike: p50/p95 wall and CPU per query each.

Run: ``nice -n 15 .venv/bin/python bench/query_stages.py VAULT INDEX [--passes 2]
[--against OTHER/src]``; prints Markdown, writes nothing.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import percentile

ROOT = Path(__file__).resolve().parent.parent


def scale_queries(vault: Any) -> list[str]:
    """``scale.py``'s 50 queries."""
    notes = sorted(vault.orchestrator.snapshot().notes.values(), key=lambda m: m.path)
    rng = random.Random(7)
    queries = [m.title for m in rng.sample(notes, min(len(notes), 200))]
    return [q for q in queries if q.strip()][:50]


def _stages() -> tuple[dict[tuple[str, str], float], collections.Counter[tuple[str, str]]]:
    """Wrap the steps of a search; returns the CPU seconds and calls per (thread, step),
    and in the calls the ids each scorer was handed (``ids: ...``: what grows with the
    query's hits)."""
    import vaultsearch.search.orchestrator as orch
    import vaultsearch.search.snapshot as snapshot
    import vaultsearch.store.ann as ann
    import vaultsearch.store.derived.keywords as keywords
    import vaultsearch.store.derived.sentences as sentences
    import vaultsearch.store.derived.vectors as vectors
    import vaultsearch.store.vectors as flat

    cpu: dict[tuple[str, str], float] = collections.defaultdict(float)
    calls: collections.Counter[tuple[str, str]] = collections.Counter()

    def wrap(owner: Any, attr: str, name: str) -> None:
        inner = getattr(owner, attr)

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                pool = threading.current_thread().name.startswith("vaultsearch-query")
                key = ("pool" if pool else "main", name)
                cpu[key] += time.thread_time() - start
                calls[key] += 1
                if name.endswith(": score"):
                    ids = [a for a in args[2:] if isinstance(a, (list, np.ndarray))]
                    calls[(key[0], f"ids: {name}")] += sum(len(a) for a in ids)

        setattr(owner, attr, timed)

    for attr in ("_search", "retrieve", "rank", "_hits"):
        wrap(orch.QueryOrchestrator, attr, attr.lstrip("_"))
    for attr in ("_one_edit_typos", "_typo_fixes", "_score_found", "fuse", "complete"):
        if hasattr(orch, attr):  # an older checkout's orchestrator called ``fuse``
            wrap(orch, attr, attr.lstrip("_"))
    if hasattr(orch, "Fusion"):
        wrap(orch.Fusion, "__init__", "fuse")
        wrap(orch.Fusion, "ranked", "fuse")
    wrap(orch._Scored, "completion", "completion")
    wrap(orch._Scored, "rescore", "rescore")
    wrap(snapshot.Snapshot, "chunk_rows", "chunk rows (catalog)")
    wrap(vectors.VectorReader, "search", "vectors: search")
    wrap(vectors.VectorReader, "score", "vectors: score")
    if hasattr(vectors.VectorReader, "scores"):  # the completion's arrays
        wrap(vectors.VectorReader, "scores", "vectors: score")
    wrap(sentences.SentenceVectors, "search", "sentences: score")
    wrap(keywords.GuardedReader, "search", "keywords: search")
    wrap(ann, "candidates", "vectors: approximate candidates")
    wrap(flat, "_flat_top", "vectors: flat kernel")
    return cpu, calls


def stages(vault_dir: Path, index_dir: Path, passes: int, per_query: bool = False) -> None:
    cpu, calls = _stages()
    from vaultsearch import Vault

    with Vault.open(vault_dir, index_dir=index_dir) as vault:
        embedder = vault.orchestrator.embedder
        query = embedder.embed_query

        def embed(text: str) -> Any:
            start = time.thread_time()
            try:
                return query(text)
            finally:
                cpu[("main", "embed query")] += time.thread_time() - start
                calls[("main", "embed query")] += 1

        embedder.embed_query = embed  # type: ignore[method-assign]
        queries = scale_queries(vault)
        for q in queries:
            vault.search(q, top_k=10, mode="hybrid")
        cpu.clear()
        calls.clear()
        start = time.process_time()
        each: dict[str, list[dict[str, float]]] = {q: [] for q in queries}
        for _ in range(passes):
            for q in queries:
                before_cpu, before_calls = dict(cpu), collections.Counter(calls)
                t, c = time.perf_counter(), time.process_time()
                vault.search(q, top_k=10, mode="hybrid")
                row = {
                    "wall": (time.perf_counter() - t) * 1000,
                    "process": (time.process_time() - c) * 1000,
                }
                row.update(
                    {f"{k[0]}: {k[1]}": (v - before_cpu.get(k, 0.0)) * 1000 for k, v in cpu.items()}
                )
                row.update(
                    {
                        f"{k[0]}: {k[1]}": float(v - before_calls[k])
                        for k, v in calls.items()
                        if k[1].startswith("ids: ")
                    }
                )
                each[q].append(row)
        n = passes * len(queries)
        process = (time.process_time() - start) * 1000 / n
    print(f"{n} warm hybrid searches, process CPU {process:.1f} ms a query; load {_load()}\n")
    if per_query:
        _per_query(each)
    print("| thread | step | CPU ms a query | calls a query |\n|---|---|---:|---:|")
    for key in sorted(cpu, key=lambda k: (k[0], -cpu[k])):
        print(f"| {key[0]} | {key[1]} | {cpu[key] * 1000 / n:.2f} | {calls[key] / n:.1f} |")


def _per_query(each: dict[str, list[dict[str, float]]]) -> None:
    """Each query's least wall and its stages' CPU in that pass (the least is the one
    least disturbed by the machine's load), slowest first; the ten largest columns."""
    rows = {q: min(passes, key=lambda r: r["wall"]) for q, passes in each.items()}
    keys = sorted(
        {k for r in rows.values() for k in r if k not in ("wall", "process")},
        key=lambda k: -sum(r.get(k, 0.0) for r in rows.values()),
    )
    keys = [
        "wall",
        "process",
        *[k for k in keys if "ids: " not in k][:10],
        *[k for k in keys if "ids: " in k],
    ]
    print("| query | words | " + " | ".join(keys) + " |")
    print("|---|---:|" + "---:|" * len(keys))
    for q, r in sorted(rows.items(), key=lambda x: -x[1]["wall"]):
        cells = " | ".join(f"{r.get(k, 0.0):.1f}" for k in keys)
        print(f"| {q[:40]} | {len(q.split())} | {cells} |")


CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from query_stages import scale_queries
from vaultsearch import Vault
with Vault.open(Path(sys.argv[1]), index_dir=Path(sys.argv[2])) as v:
    queries = scale_queries(v)
    for q in queries:
        v.search(q, top_k=10, mode="hybrid")
    print(json.dumps(len(queries)), flush=True)
    for line in sys.stdin:
        lo, hi = json.loads(line)
        walls, cpu = [], time.process_time()
        for q in queries[lo:hi]:
            t = time.perf_counter()
            v.search(q, top_k=10, mode="hybrid")
            walls.append((time.perf_counter() - t) * 1000)
        print(json.dumps([walls, (time.process_time() - cpu) * 1000]), flush=True)
"""


def against(vault_dir: Path, index_dir: Path, other: Path, passes: int, batch: int) -> None:
    sources = {"this checkout": ROOT / "src", str(other): other}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", CHILD, str(vault_dir), str(index_dir), str(ROOT / "bench")],
            env=dict(os.environ, PYTHONPATH=str(src)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name, src in sources.items()
    }
    counts = {json.loads(_line(p)) for p in procs.values()}
    n = counts.pop()
    walls: dict[str, list[float]] = {name: [] for name in procs}
    cpu = dict.fromkeys(procs, 0.0)
    loads = []
    names = list(procs)
    for turn, lo in enumerate(lo for _ in range(passes) for lo in range(0, n, batch)):
        for name in names if turn % 2 == 0 else names[::-1]:
            proc = procs[name]
            assert proc.stdin is not None
            proc.stdin.write(json.dumps([lo, lo + batch]) + "\n")
            proc.stdin.flush()
            got, spent = json.loads(_line(proc))
            walls[name] += got
            cpu[name] += spent
        loads.append(os.getloadavg()[0])
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    print(f"Load (1 min) during the run: {min(loads):.1f}–{max(loads):.1f}\n")
    print("| code | searches | p50 ms | p95 ms | CPU ms a query |\n|---|---:|---:|---:|---:|")
    for name, got in walls.items():
        print(
            f"| {name} | {len(got)} | {percentile(got, 50):.1f} | {percentile(got, 95):.1f} "
            f"| {cpu[name] / len(got):.1f} |"
        )


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"a timing process ended early (exit {proc.wait()})")
    return line


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vault", type=Path)
    parser.add_argument("index", type=Path)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another checkout's src folder")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--per-query", action="store_true", help="each query's stages")
    args = parser.parse_args()
    run: Callable[[], None] = (
        (lambda: against(args.vault, args.index, args.against, args.passes, args.batch))
        if args.against
        else (lambda: stages(args.vault, args.index, args.passes, args.per_query))
    )
    run()


if __name__ == "__main__":
    main()
