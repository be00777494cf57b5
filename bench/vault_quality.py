"""Judged vault queries: nDCG@10 and MRR@10 per vault and per query kind for keyword,
semantic and hybrid search, against plain baselines computed in the same run.

Run: `make bench-vault-quality` (or `.venv/bin/python bench/vault_quality.py [--config X]`).
Every query goes through the public API (``Vault.search``), top 10 notes. The first
run embeds each vault (minutes); the catalogs are kept in bench/.cache/ after that.

For tuning (k-fold) import ``judged_vault`` and ``run_queries``::

    with judged_vault("dendron-site", work_dir, config) as vault:
        results = run_queries(vault, load_judged("dendron-site"), "hybrid")
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, mean, percentile, prepared_vault, require, write_section
from judged_set import KINDS, VAULTS, JudgedQuery, load_judged
from plain_baselines import (
    CHUNK_WORDS,
    PlainBM25,
    PlainChunkVectors,
    bundled_minilm,
    read_notes,
    rrf,
)
from vaultsearch import Vault
from vaultsearch.app.evaluation import mrr_at_k, ndcg_at_k
from vaultsearch.config import Config, load_config

MODES = ("keyword", "semantic", "hybrid")
TOP_K = 10


@dataclass(frozen=True)
class QueryResult:
    """One query run by one system: the notes it returned and how they grade."""

    query: JudgedQuery
    system: str
    ranked: tuple[str, ...]
    top_score: float | None
    ndcg: float
    mrr: float


def score(query: JudgedQuery, system: str, ranked: Sequence[tuple[str, float]]) -> QueryResult:
    paths = tuple(dict.fromkeys(path for path, _ in ranked))[:TOP_K]
    return QueryResult(
        query=query,
        system=system,
        ranked=paths,
        top_score=ranked[0][1] if ranked else None,
        ndcg=ndcg_at_k(paths, query.judgments, k=TOP_K),
        mrr=mrr_at_k(paths, query.judgments, k=TOP_K),
    )


def run_queries(
    vault: Vault, queries: Sequence[JudgedQuery], mode: str = "hybrid"
) -> list[QueryResult]:
    """Every query through ``Vault.search`` (top 10 notes), graded against its judgments.

    ``no_answer`` queries are run too: their ``top_score`` is what confidence
    calibration needs, and their nDCG/MRR is 0 by definition (leave them out of means).
    """
    results = []
    for query in queries:
        hits = vault.search(query.query, top_k=TOP_K, mode=mode)
        results.append(score(query, f"vaultsearch {mode}", [(h.path, h.score) for h in hits]))
    return results


@contextlib.contextmanager
def judged_vault(name: str, work: Path, config: Config | None = None) -> Iterator[Vault]:
    """An indexed private copy of a shared vault (``prepared_vault``: cached catalog)."""
    source = require(SHARED / "vaults" / name)
    vault = prepared_vault(f"judged-{name}", source, work / name, config=config)
    try:
        yield vault
    finally:
        vault.close()


def run_baselines(
    source: Path, queries: Sequence[JudgedQuery], encode: Callable[[list[str]], np.ndarray]
) -> list[QueryResult]:
    """The three plain baselines (``plain_baselines``) on the same queries, top 10 notes."""
    notes = read_notes(source)
    bm25 = PlainBM25(notes)
    cache = CACHE / f"judged-{source.name}" / "plain-minilm.npz"
    vectors = PlainChunkVectors(notes, encode, cache)
    results = []
    for query in queries:
        lexical, semantic = bm25.search(query.query), vectors.search(query.query)
        results.append(score(query, "plain BM25", lexical))
        results.append(score(query, "plain MiniLM chunks", semantic))
        results.append(score(query, "plain RRF", rrf(lexical, semantic)))
    return results


def _figures(results: Sequence[QueryResult]) -> tuple[str, str]:
    answered = [r for r in results if r.query.answered]
    if not answered:
        return "–", "–"
    return f"{mean([r.ndcg for r in answered]):.3f}", f"{mean([r.mrr for r in answered]):.3f}"


def _table(results: Sequence[QueryResult], systems: Sequence[str]) -> str:
    kinds = [k for k in KINDS if k != "no_answer" and any(r.query.kind == k for r in results)]
    head = "| system | all | " + " | ".join(kinds) + " |"
    rule = "| --- | ---: | " + " | ".join("---:" for _ in kinds) + " |"
    rows = [head, rule]
    for system in systems:
        mine = [r for r in results if r.system == system]
        cells = ["/".join(_figures(mine))]
        cells += ["/".join(_figures([r for r in mine if r.query.kind == k])) for k in kinds]
        rows.append(f"| {system} | " + " | ".join(cells) + " |")
    counts = ", ".join(
        f"{k} {sum(1 for r in results if r.query.kind == k and r.system == systems[0])}"
        for k in [*kinds, "no_answer"]
    )
    return "\n".join(rows) + f"\n\nQueries per kind: {counts}."


def _separation(results: Sequence[QueryResult], systems: Sequence[str]) -> str:
    """Top-hit score of answered vs no_answer queries; AUC = P(answered > no_answer)."""
    rows = [
        "| system | answered top score p10 / p50 / p90 | no_answer top score p10 / p50 / p90 | AUC |",
        "| --- | --- | --- | ---: |",
    ]
    for system in systems:
        mine = [r for r in results if r.system == system]
        yes = [r.top_score or 0.0 for r in mine if r.query.answered]
        no = [r.top_score or 0.0 for r in mine if not r.query.answered]
        if not yes or not no:
            continue
        pairs = [(a > b) + 0.5 * (a == b) for a in yes for b in no]
        rows.append(
            f"| {system} | "
            + " / ".join(f"{percentile(yes, p):.4g}" for p in (10, 50, 90))
            + " | "
            + " / ".join(f"{percentile(no, p):.4g}" for p in (10, 50, 90))
            + f" | {sum(pairs) / len(pairs):.3f} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", help="a config.toml to evaluate instead of the defaults")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument(
        "--before",
        metavar="LABEL",
        help="write a separate, frozen section (e.g. 'main at 49d85aa') that later runs keep",
    )
    args = parser.parse_args()
    config = load_config(args.config)
    systems = [f"vaultsearch {mode}" for mode in MODES]
    if not args.no_baselines:
        systems += ["plain BM25", "plain MiniLM chunks", "plain RRF"]
    encode = None if args.no_baselines else bundled_minilm()
    sections = []
    work = Path(tempfile.mkdtemp(prefix="vs-bench-judged-"))
    try:
        for name in VAULTS:
            queries = load_judged(name)
            with judged_vault(name, work, config) as vault:
                status = vault.status()
                results = [r for mode in MODES for r in run_queries(vault, queries, mode)]
            if encode is not None:
                results += run_baselines(SHARED / "vaults" / name, queries, encode)
            sections.append(
                f"### {name} ({status['notes']} notes, {status['chunks']} chunks, "
                f"{len(queries)} queries)\n\nnDCG@10 / MRR@10, mean over answered queries.\n\n"
                f"{_table(results, systems)}\n\n"
                f"Top-hit score, answered vs `no_answer` queries (for confidence calibration):\n\n"
                f"{_separation(results, systems)}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    body = (
        "Hand-judged queries of the project's own over the two shared vaults (how they were "
        "written and graded: `bench/judged/METHOD.md`). Each query runs through "
        "`Vault.search`, top 10 notes; the plain baselines are built in the same run "
        "without vaultsearch code (`bench/plain_baselines.py`: Tantivy English-stemmed "
        "BM25 over title + body, "
        f"MiniLM over {CHUNK_WORDS}-word paragraph chunks max-pooled per note, "
        f"RRF k=60 of the two). Configuration: {config.source}.\n\n" + "\n\n".join(sections)
    )
    if args.before:
        write_section(
            "vault-quality-before",
            f"Judged vault queries, before ({args.before})",
            body,
            command=f"bench/vault_quality.py --before '{args.before}'",
        )
    else:
        write_section("vault-quality", "Judged vault queries", body)


if __name__ == "__main__":
    main()
