"""``vaultsearch eval``: score the real pipeline on BEIR-format data.

The corpus is written as a vault of notes and indexed like any vault, so the figure
measures what a user gets, parsing and chunking included.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultsearch.app.evaluation import (
    evaluate,
    load_corpus,
    load_qrels,
    load_queries,
    write_corpus_as_vault,
)
from vaultsearch.app.vault import Vault
from vaultsearch.config import Config, load_config
from vaultsearch.errors import VaultsearchError
from vaultsearch.store.atomic import atomic_write_json


def default_work_dir(corpus: Path) -> Path:
    st = corpus.stat()
    key = hashlib.sha256(f"{corpus.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "vaultsearch" / "eval" / key[:16]


def prepare_vault(
    corpus_path: Path, work_dir: Path, config: Config
) -> tuple[Vault, dict[str, str]]:
    """Write the corpus as notes once, then index (incrementally on later runs)."""
    vault_dir = work_dir / "vault"
    mapping_file = work_dir / "doc_ids.json"
    if mapping_file.is_file():
        doc_of = json.loads(mapping_file.read_text(encoding="utf-8"))
    else:
        doc_of = write_corpus_as_vault(load_corpus(corpus_path), vault_dir)
        atomic_write_json(mapping_file, doc_of)
    vault = Vault(vault_dir.resolve(), (work_dir / "index").resolve(), config)
    return vault, doc_of


def run_eval(
    corpus: Path,
    queries: Path,
    qrels: Path,
    modes: Sequence[str] = ("hybrid",),
    work_dir: Path | None = None,
    config: str | os.PathLike[str] | Config | None = None,
    limit: int | None = None,
    vault: Vault | None = None,
    doc_of: dict[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    cfg = load_config(config)
    try:
        if vault is None or doc_of is None:
            vault, doc_of = prepare_vault(corpus, work_dir or default_work_dir(corpus), cfg)
            vault.index()
        judged = load_qrels(qrels)
        texts = load_queries(queries)
    except (ValueError, FileNotFoundError) as exc:
        raise VaultsearchError(
            f"The evaluation data cannot be read: {exc}",
            fix="pass BEIR files: corpus.jsonl, queries.jsonl and a qrels .tsv",
        ) from None
    ids = [q for q in texts if q in judged][:limit]
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        run: dict[str, list[str]] = {}
        vault.search(texts[ids[0]], top_k=100, mode=mode)  # warm: model load, snapshot open
        latencies = []
        for qid in ids:
            t0 = time.perf_counter()
            hits = vault.search(texts[qid], top_k=100, mode=mode)
            latencies.append(1000 * (time.perf_counter() - t0))
            run[qid] = [doc_of.get(h.path, h.path) for h in hits]
        scores = evaluate(run, {q: judged[q] for q in ids})
        latencies.sort()
        results[mode] = {
            **scores,
            "ms_per_query": sum(latencies) / max(len(latencies), 1),
            "p50_ms": latencies[len(latencies) // 2] if latencies else 0.0,
            "p95_ms": latencies[int(len(latencies) * 0.95)] if latencies else 0.0,
        }
    return results
